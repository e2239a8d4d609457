"""Growth is exact: a bigger evaluation runs exactly its new trials, nothing else.

The real Snakefile, the local backend (a subprocess per trial: the tiny stdlib agent of
tests/pipeline/tiny_agent, no engine), 1 agent × 1 resource profile × 3 tasks × 2 trials,
chunks of 2 tasks (so the last chunk is partial and *grows* when a task is added), then,
one after the other, in the same workspace:

1. ``trials.count`` 2 → 4 (a new block);
2. a fourth task (the partial chunk ``0002-0002`` becomes ``0002-0003``: its journal, keyed
   by the shard's first row, is resumed);
3. a second agent;
4. a second resource profile.

After each step: the journals hold exactly the old rows — the same ``started_at``, so
none ran again — plus one row per new (agent, profile, task, trial); every trial shard and
score shard that existed before and is still in the plan is untouched (same bytes, same
mtime: no job rewrote it), and Snakemake ran exactly one ``run_trials`` and one ``score`` job
per new or grown shard, one ``analyze_group`` (statistics, convergence, budget) only for each
group whose scores changed, and one ``compare`` per new pair.

Before the fix in ``rules/trials.smk`` (the tasks table ``ancient``, each shard's own rows
as a param: :func:`evalnoise.pipeline.shard_plan.task_rows_digest`), step 2 reran *every*
shard's job: the trials were resumed from the journals, but every trial shard was
rewritten and rescored and every statistic recomputed.

The canary is off and the statistics are cut down (convergence subsamples, bootstrap
resamples) so the four growths and the first run take well under a minute here; the
report, manifest and health check are left out (targets ``all_analysis``): they read the
analysis and add nothing about growth.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from pipeline_helpers import (
    job_counts,
    journals,
    make_workspace,
    run_tool,
    shard_files,
    write_config,
)

pytestmark = pytest.mark.slow

#: The real interpreter (a pyenv shim would add a shell script's start to every trial).
PYTHON = os.path.realpath(sys.executable)


def tiny_config(workspace: Path, *, n: int, count: int, agents, profiles) -> dict:
    agent_py = str(workspace / "agents" / "tiny" / "agent.py")
    return {
        "backend": "local",
        "canary": False,
        "benchmark": {"n": n},
        "agents": {
            name: {"command": [PYTHON, "-I", "-S", agent_py], "env": {"TINY_SKILL": name}}
            for name in agents
        },
        "resource_profiles": {
            name: {"memory_limit_factor": 3.0, "cpu_limit_factor": 3.0} for name in profiles
        },
        "trials": {"count": count, "block_size": 2},
        "task_chunk_size": 2,
        "analysis": {
            "per_level": False,
            "convergence": {"subsamples": 20},
            "bootstrap": {"resamples": 200},
        },
    }


def trial_rows(workspace: Path) -> dict[tuple, dict]:
    """(agent, profile, task, trial, attempt) → journal row; fails on a duplicate."""
    out: dict[tuple, dict] = {}
    for rows in journals(workspace).values():
        for row in rows:
            key = (
                row["agent"],
                row["resource_profile"],
                row["task_id"],
                row["trial"],
                row["attempt"],
            )
            assert key not in out, f"trial {key} journaled twice"
            out[key] = row
    return out


def group_files(workspace: Path) -> dict[str, int]:
    """Every output of the groups' analyze_group jobs (statistics, convergence, budget)."""
    analysis = workspace / "results" / "analysis"
    return {
        str(p.relative_to(workspace)): p.stat().st_mtime_ns
        for pattern in ("groups/*/*.json", "convergence/*/*.csv", "budget/*/*.csv")
        for p in sorted(analysis.glob(pattern))
    }


def grow(workspace: Path, **config) -> tuple[dict[str, int], dict[tuple, dict]]:
    """Write the config, run the analysis targets; Snakemake's job counts and the rows."""
    write_config(workspace, tiny_config(workspace, **config))
    out = run_tool(workspace, "snakemake", "all_analysis", "--cores", "2", timeout=300)
    return job_counts(out.stdout + out.stderr), trial_rows(workspace)


def assert_grew_exactly(before_rows, after_rows, expected_new: int) -> None:
    assert set(before_rows) <= set(after_rows), "a journaled trial went missing"
    for key, row in before_rows.items():
        # the same started_at: the trial was reused, not run again
        assert after_rows[key]["started_at"] == row["started_at"], f"{key} ran again"
    assert len(after_rows) - len(before_rows) == expected_new


def assert_untouched(before_files, after_files) -> None:
    """Shards still in the plan have the same bytes and mtime (no job rewrote them)."""
    for name, (mtime, data) in before_files.items():
        if name in after_files:
            assert after_files[name] == (mtime, data), f"{name} was rewritten"


def test_growth_runs_exactly_the_new_trials(tmp_path):
    ws = tmp_path / "ws"
    base = {"n": 3, "count": 2, "agents": ["a"], "profiles": ["p1"]}
    make_workspace(ws, tiny_config(ws, **base))
    counts, rows = grow(ws, **base)
    assert counts["run_trials"] == 2 and counts["score"] == 2  # chunks 0000-0001, 0002-0002
    assert len(rows) == 3 * 2

    # 1. trials.count 2 → 4: one new block, 2 new trials per task
    files, groups = shard_files(ws), group_files(ws)
    step = {**base, "count": 4}
    counts, after = grow(ws, **step)
    assert_grew_exactly(rows, after, 3 * 2)
    assert counts["run_trials"] == 2 and counts["score"] == 2  # block 0002-0003 × 2 chunks
    assert counts["analyze_group"] == 1
    assert_untouched(files, shard_files(ws))
    rows = after

    # 2. a fourth task: the partial chunk grows (new name, same journal); 4 new trials
    files = shard_files(ws)
    step = {**step, "n": 4}
    counts, after = grow(ws, **step)
    assert_grew_exactly(rows, after, 1 * 4)
    # only the two grown shards (c0002-0002 → c0002-0003, one per block) run and score
    assert counts["run_trials"] == 2 and counts["score"] == 2
    assert_untouched(files, shard_files(ws))
    rows = after

    # 3. a second agent: its 16 trials only; a's analysis is not recomputed
    files, groups = shard_files(ws), group_files(ws)
    step = {**step, "agents": ["a", "b"]}
    counts, after = grow(ws, **step)
    assert_grew_exactly(rows, after, 4 * 4)
    assert {k[0] for k in set(after) - set(rows)} == {"b"}
    assert counts["run_trials"] == 4 and counts["score"] == 4
    assert counts["analyze_group"] == 1  # b@p1 only
    # one new pair (a vs b under p1); the run-wide jobs once each
    assert counts["compare"] == 1 and counts["attribution"] == 1 and counts["summarize"] == 1
    assert_untouched(files, shard_files(ws))
    assert {k: v for k, v in group_files(ws).items() if k in groups} == groups
    rows = after

    # 4. a second resource profile: both agents' trials under it, nothing under p1 again
    files, groups = shard_files(ws), group_files(ws)
    step = {**step, "profiles": ["p1", "p2"]}
    counts, after = grow(ws, **step)
    assert_grew_exactly(rows, after, 2 * 4 * 4)
    assert {k[1] for k in set(after) - set(rows)} == {"p2"}
    assert counts["run_trials"] == 8 and counts["score"] == 8
    assert counts["analyze_group"] == 2  # a@p2, b@p2
    assert counts["compare"] == 3  # a vs b under p2; p1 vs p2 for a and for b
    assert_untouched(files, shard_files(ws))
    assert {k: v for k, v in group_files(ws).items() if k in groups} == groups

    # and a rerun does nothing
    out = run_tool(ws, "snakemake", "all_analysis", "--cores", "2", "-n")
    assert "Nothing to be done" in out.stdout + out.stderr
