"""Prompt and sampling variants through the real pipeline: crossed, recorded, grown exactly.

The real Snakefile, the local backend and the tiny agent (tests/pipeline/tiny_agent, made
sensitive to the prompt's wording with ``TINY_PROMPT_WEIGHT``): 2 agents × 1 resource
profile × 4 tasks × 2 trials, chunks of 2 tasks. In one workspace, one step after the other:

0. no variants: today's run (4 shards, 16 trials);
1. ``variants.prompt`` with the neutral ``{question}`` and one paraphrase: only the
   paraphrase's 16 trials run; the neutral level's trials are the run's own (same journals,
   same seeds, not run again — their shards are rewritten once, with their labels);
2. a third template: exactly its 16 trials and its 4 shards run, every other trial and
   score shard is untouched (bytes and mtime);
3. a sampling facet for agent ``a`` only (``TINY_SKILL: [a, a2]``, ``a`` its own setting):
   only the ``a2`` combinations' 24 trials run; ``b``'s shards are untouched.

Then: every row carries its levels, every task saw every variant equally often, the seeds
follow :func:`evalnoise.runner.seeds.trial_seed` (the neutral level's are a run's without
variants), the pipeline's own analysis ran on the variant data (``all_analysis``, with the
paired comparison of the two agents), and ``evalnoise analyze --facets`` on the score
shards finds the prompt facet's components.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pandas as pd
import pytest
from pipeline_helpers import (
    job_counts,
    journals,
    make_workspace,
    run_tool,
    shard_files,
    write_config,
)

from evalnoise.pipeline.collect import read_scores
from evalnoise.runner.seeds import trial_seed

pytestmark = pytest.mark.slow

PYTHON = os.path.realpath(sys.executable)
TEMPLATES = ["{question}", "Answer precisely. {question}", "Q: {question}\nA:"]


def config(workspace: Path, *, prompts=None, sampling_a=None) -> dict:
    agent_py = str(workspace / "agents" / "tiny" / "agent.py")

    def agent(name):
        out = {
            "command": [PYTHON, "-I", "-S", agent_py],
            "env": {"TINY_SKILL": name, "TINY_PROMPT_WEIGHT": 0.7},
        }
        if name == "a" and sampling_a is not None:
            out["sampling"] = sampling_a
        return out

    return {
        "backend": "local",
        "canary": False,
        "benchmark": {"n": 4, "levels": [1, 2]},
        "agents": {name: agent(name) for name in ("a", "b")},
        "resource_profiles": {"p1": {"memory_limit_factor": 3.0, "cpu_limit_factor": 3.0}},
        "trials": {"count": 2, "block_size": 2},
        "task_chunk_size": 2,
        "variants": {"prompt": prompts, "sampling": {}},
        "analysis": {
            "per_level": False,
            "convergence": {"subsamples": 20},
            "bootstrap": {"resamples": 200},
        },
    }


def journal_rows(workspace: Path) -> dict[tuple, dict]:
    """(journal file, task, trial, attempt) → journal row."""
    out = {}
    for path, rows in journals(workspace).items():
        for row in rows:
            key = (Path(path).name, row["agent"], row["task_id"], row["trial"], row["attempt"])
            assert key not in out, f"{key} journaled twice"
            out[key] = row
    return out


def grow(workspace: Path, target: str = "all_scores", **kwargs) -> tuple[dict, dict]:
    """Write the config, run ``target``: Snakemake's job counts and the journal rows."""
    write_config(workspace, config(workspace, **kwargs))
    out = run_tool(workspace, "snakemake", target, "--cores", "2", timeout=900)
    return job_counts(out.stdout + out.stderr), journal_rows(workspace)


def assert_kept(before: dict, after: dict, new: int) -> dict:
    """Every journaled trial is still there, not run again; ``new`` more; the new rows."""
    assert set(before) <= set(after), "a journaled trial went missing"
    for key, row in before.items():
        assert after[key]["started_at"] == row["started_at"], f"{key} ran again"
    added = {k: v for k, v in after.items() if k not in before}
    assert len(added) == new
    return added


def scores(workspace: Path) -> pd.DataFrame:
    paths = sorted((workspace / "results" / "scores").glob("*/*/t*/c*.parquet"))
    return read_scores(paths)


def test_variants_are_crossed_recorded_and_grow_exactly(tmp_path):
    ws = tmp_path / "ws"
    make_workspace(ws, config(ws))

    # 0. no variants: today's shards, seeds and rows
    counts, rows = grow(ws)
    assert counts["run_trials"] == 4 and len(rows) == 2 * 4 * 2
    assert all(".v" not in name for name in shard_files(ws))
    for row in rows.values():
        assert row["seed"] == trial_seed(0, row["agent"], row["task_id"], row["trial"])
        assert row["prompt_variant"] is None and row["sampling"] is None

    # 1. the neutral template and one paraphrase: only the paraphrase's trials run
    counts, after = grow(ws, prompts=TEMPLATES[:2])
    added = assert_kept(rows, after, 2 * 4 * 2)
    assert {r["prompt_variant"] for r in added.values()} == {"p1"}
    assert all(".v" in key[0] for key in added)  # journals of their own
    # the paraphrase's shards (2 agents × 2 chunks), and the neutral ones relabelled (resumed
    # from their journals: no trial ran, as assert_kept says)
    assert counts["run_trials"] == 8 and counts["score"] == 8
    assert set(scores(ws)["prompt_variant"]) == {"p0", "p1"}
    rows = after

    # 2. a third template: exactly its 16 trials and 4 shards; nothing else is touched
    files = shard_files(ws)
    counts, after = grow(ws, prompts=TEMPLATES)
    added = assert_kept(rows, after, 2 * 4 * 2)
    assert {r["prompt_variant"] for r in added.values()} == {"p2"}
    assert counts["run_trials"] == 4 and counts["score"] == 4
    now = shard_files(ws)
    assert len(now) == len(files) + 2 * (2 * 2)
    assert all(now[name] == files[name] for name in files), "an existing shard was rewritten"
    rows = after

    # 3. a sampling facet for agent a (its own TINY_SKILL and one more value), and the
    # statistics of the whole run
    files = shard_files(ws)
    counts, after = grow(
        ws, "all_analysis", prompts=TEMPLATES, sampling_a={"TINY_SKILL": ["a", "a2"]}
    )
    added = assert_kept(rows, after, 3 * 4 * 2)
    assert {(r["agent"], r["sampling"]) for r in added.values()} == {("a", "TINY_SKILL=a2")}
    # a's new shards (3 prompts × 2 chunks), a's old ones relabelled; b's untouched
    assert counts["run_trials"] == 6 + 6 and counts["score"] == 6 + 6
    now = shard_files(ws)
    of_b = [n for n in files if n.startswith(("trials/b/", "scores/b/"))]
    assert len(of_b) == 2 * (3 * 2)
    assert all(now[n] == files[n] for n in of_b), "agent b's shards were rewritten"

    # every row records its levels, and every task saw every variant equally often
    table = scores(ws)
    assert len(table) == 4 * 2 * (3 * 2 + 3)
    assert table["prompt_variant"].notna().all()
    a, b = table[table["agent"] == "a"], table[table["agent"] == "b"]
    assert set(a["sampling"]) == {"TINY_SKILL=a", "TINY_SKILL=a2"}
    assert b["sampling"].isna().all()
    cells = a.groupby(["task_id", "prompt_variant", "sampling"]).size()
    assert len(cells) == 4 * 3 * 2 and (cells == 2).all()
    cells = b.groupby(["task_id", "prompt_variant"]).size()
    assert len(cells) == 4 * 3 and (cells == 2).all()

    # seeds: the neutral variant's are a run's without variants; every variant has its own
    neutral = (table["prompt_variant"] == "p0") & table["sampling"].isin([None, "TINY_SKILL=a"])
    for row in table[neutral].itertuples():
        assert row.seed == trial_seed(0, row.agent, row.task_id, row.trial)
    assert table.groupby(["agent", "task_id", "trial"])["seed"].nunique().to_dict() == {
        key: 6 if key[0] == "a" else 3
        for key in table.groupby(["agent", "task_id", "trial"]).groups
    }

    # the pipeline's statistics ran on the variant rows: the infra policies' accuracy (the
    # attribution stage) is the analysis' own, every (variant, trial) a trial of its task
    groups = {
        g: json.loads((ws / "results" / "analysis" / "groups" / g / "p1.json").read_text())
        for g in ("a", "b")
    }
    attribution = json.loads((ws / "results" / "analysis" / "attribution.json").read_text())
    for g, stats in groups.items():
        assert stats["overall"]["n_obs"] == len(table[table["agent"] == g])
        policy = {p["policy"]: p for p in attribution[f"{g}@p1"]["policy"]}
        assert policy["as_incorrect"]["mean"] == pytest.approx(stats["overall"]["mean"])
    pair = json.loads(
        (ws / "results" / "analysis" / "pairs" / "agents" / "p1" / "a" / "b.json").read_text()
    )
    assert not pair["skipped"] and pair["n_tasks"] == 4
    # the pipeline's own model of the noise has the prompt facet; a's sampling level a2 ran
    # after everything else (step 3), so its facet is confounded with the last time blocks:
    # dropped with a warning, never guessed
    noise_b = attribution["b@p1"]["noise"]["gstudy"]
    assert noise_b["sizes"]["prompt_variant"] == 3
    noise_a = attribution["a@p1"]["noise"]["gstudy"]
    assert noise_a["sizes"]["prompt_variant"] == 3
    assert any("'sampling' is not estimable" in w for w in noise_a["warnings"])

    # the G study of the score shards (`evalnoise analyze --facets`): the prompt and sampling
    # facets are components of their own, and the prompt's (the tiny agent reads the
    # wording) is variance the task-clustered SE misses
    path = tmp_path / "a.parquet"
    a.to_parquet(path)
    out = run_tool(
        ws, "evalnoise", "analyze", str(path), "--facets", "prompt_variant,sampling",
        "--score", "score", "--json",
    )  # fmt: skip
    record = json.loads(out.stdout)
    gstudy = record["gstudy"]["all"]
    assert gstudy["sizes"] == {"task_id": 4.0, "prompt_variant": 3.0, "sampling": 2.0}
    components = {c["component"]: c for c in gstudy["components"]}
    assert {"task_id", "prompt_variant", "sampling", "task_id×prompt_variant"} <= set(components)
    assert components["prompt_variant"]["sigma2"] > 0
    total = record["dstudy"]["all"]["total_error"]
    assert total["se"] > total["se_clustered"] and total["variance_missed"] > 0
