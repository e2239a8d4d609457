"""A fair trial order (issue 15): the trial block is the time block.

Snakemake starts ready jobs of higher priority first. ``run_trials`` (and its ``score`` and
``judge`` jobs) get :func:`evalnoise.pipeline.settings.block_priority`, highest for the
earliest block; an agent's image and canary get :func:`~evalnoise.pipeline.settings.
setup_priority`, above every block (else one agent's later blocks would run while another
agent's canary still waits). Within a shard the runner runs its trials in a seeded order
(tests/runner/test_runner_order.py).

The slow test runs the real Snakefile with the local backend and the tiny agent (no
engine): 2 agents × 2 resource profiles × 2 trial blocks, on one core, and checks from the
trials' own ``started_at`` that every group ran its whole first block before any group
started its second.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pandas as pd
import pytest
from pipeline_helpers import make_workspace, run_tool

from evalnoise.pipeline.settings import block_priority, setup_priority, shard_priority

#: The real interpreter (a pyenv shim would add a shell script's start to every trial).
PYTHON = os.path.realpath(sys.executable)


# -- the priorities ------------------------------------------------------------------------


def test_earlier_blocks_get_higher_priorities():
    blocks = ["0000-0003", "0004-0007", "0008-0011"]
    priorities = [block_priority(b, blocks) for b in blocks]
    # whole numbers one apart (the ILP scheduler weighs a step of 1 above any core-load
    # gain) and >= 1 (it never picks a job of negative priority; other rules have 0)
    assert priorities == [3, 2, 1]
    assert block_priority("0000-0003", reversed(blocks)) == 3  # the plan's order is no input
    assert setup_priority(blocks) > max(priorities)


def test_within_a_block_full_chunks_go_first_and_blocks_still_rank_first():
    blocks, chunks = ["0000-0001", "0002-0003"], ["0000-0005", "0006-0011", "0012-0014"]
    first = [shard_priority("0000-0001", c, blocks, chunks) for c in chunks]
    second = [shard_priority("0002-0003", c, blocks, chunks) for c in chunks]
    assert first == [5, 5, 4] and second == [3, 3, 2]  # longest first (LPT), steps of 1
    assert min(first) > max(second)  # every shard of a block before any of the next
    assert setup_priority(blocks) > max(first)
    assert shard_priority("0000-0001", "0000-0002", blocks, ["0000-0002"]) == 5  # one chunk


def test_a_block_outside_the_plan_ranks_by_its_first_trial():
    blocks = ["0000-0003", "0004-0007"]
    assert block_priority("0008-0011", blocks) == 1  # e.g. a shard of an older, larger run
    assert block_priority("0004-0005", blocks) == 1  # a partial last block
    assert block_priority("0002-0003", ["0000-0001", "0002-0003", "0004-0005"]) == 2
    assert setup_priority(blocks) > block_priority("0000-0001", blocks)
    with pytest.raises(ValueError):
        block_priority("first", blocks)


# -- a real run ----------------------------------------------------------------------------

AGENTS = ("a1", "a2")
PROFILES = ("p1", "p2")


def _config(workspace: Path) -> dict:
    agent_py = str(workspace / "agents" / "tiny" / "agent.py")
    return {
        "backend": "local",
        "canary": True,
        "benchmark": {"n": 2},
        "agents": {
            name: {"command": [PYTHON, "-I", "-S", agent_py], "env": {"TINY_SKILL": name}}
            for name in AGENTS
        },
        "resource_profiles": {
            name: {"memory_limit_factor": 3.0, "cpu_limit_factor": 3.0} for name in PROFILES
        },
        "trials": {"count": 4, "block_size": 2},
        "task_chunk_size": 2,
    }


def _jobs(log: str) -> list[tuple[str, str, int]]:
    """(rule, wildcards, priority) of every job, in the order Snakemake started them."""
    found = re.findall(
        r"rule (\w+):\n(?:    .*\n)*?    wildcards: (.*)\n    priority: (\d+)\n", log
    )
    return [(rule, wildcards, int(priority)) for rule, wildcards, priority in found]


@pytest.mark.slow
def test_every_group_runs_its_first_round_before_any_group_its_second(tmp_path):
    workspace = make_workspace(tmp_path / "ws", _config(tmp_path / "ws"))
    # one core: one job and (run_trials' threads scaled down) one trial at a time, so the
    # order is exact; on more cores the priorities still hold, jobs of one block overlap
    out = run_tool(workspace, "snakemake", "all_trials", "--cores", "1", timeout=300)

    jobs = _jobs(out.stdout + out.stderr)
    rules = [rule for rule, _, _ in jobs]
    assert rules.count("run_trials") == 8 and rules.count("canary") == 2
    # every image and canary before the first shard; every first-block shard before any
    # second-block shard
    first_shard = rules.index("run_trials")
    assert {"build_image", "canary"} >= set(rules[:first_shard]) - {"sample_tasks"}
    assert "canary" not in rules[first_shard:] and "build_image" not in rules[first_shard:]
    blocks = [re.search(r"block=(\S+),", w).group(1) for r, w, _ in jobs if r == "run_trials"]
    assert blocks == ["0000-0001"] * 4 + ["0002-0003"] * 4
    priority = {(r, re.search(r"block=(\S+),", w).group(1)): p for r, w, p in jobs if "block" in w}
    # one chunk of 2 tasks: the longest, in each block (settings.shard_priority)
    assert priority[("run_trials", "0000-0001")] == 5 and priority[("run_trials", "0002-0003")] == 3
    setup = setup_priority(["0000-0001", "0002-0003"])
    assert {p for r, _, p in jobs if r in ("build_image", "canary")} == {setup}

    trials = pd.concat(
        pd.read_parquet(p)
        for p in sorted((workspace / "results" / "trials").glob("*/*/t*/*.parquet"))
    )
    assert len(trials) == len(AGENTS) * len(PROFILES) * 2 * 4
    spans = trials.groupby(["time_block", "agent", "resource_profile"])["started_at"].agg(
        ["min", "max", "size"]
    )
    assert set(spans.index.get_level_values("time_block")) == {0, 2}
    for block in (0, 2):  # every group has its trials in every time block
        assert len(spans.loc[block]) == len(AGENTS) * len(PROFILES)
        assert (spans.loc[block]["size"] == 4).all()
    assert spans.loc[0]["max"].max() < spans.loc[2]["min"].min()
    # each shard ran its trials one by one in its seeded order
    for _, shard in trials.groupby(["agent", "resource_profile", "time_block"]):
        assert sorted(shard["run_order"]) == [0, 1, 2, 3]
        assert shard.sort_values("run_order")["started_at"].is_monotonic_increasing
