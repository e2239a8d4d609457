"""Sequential mode end to end: rounds decided by the Snakemake checkpoint, on the real Snakefile.

The local backend and the tiny stdlib agent (tests/pipeline/tiny_agent): ``steady`` is
always wrong (``TINY_RATE=0``: no variance at all, like a weak agent near 0 %; "always right"
would not do, since the tiny agent can only guess the word problems), ``erratic`` is right
with a per-task rate spread over [0, 1] (a hash of its name and the task), so its task
means vary a lot. Target: the accuracy's anytime-valid interval no wider than ±0.2; first round
6 tasks × 2 trials; at most 24 tasks (the pool) of 3 trials; a task costs as much to set up as a
trial. The steady agent meets the target; the erratic one runs out of tasks first.

Checked: each unit stops for its own reason, the steady agent after fewer tasks and rounds
than the erratic one; the journals hold exactly the trials of each group's final design
(nothing run twice, nothing beyond it); the statistics read exactly those trials; the final
interval in the round record is the one the stop was decided on; a second run has nothing
to do; and a config error in the sequential block stops the DAG before any job.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pandas as pd
import pytest
from pipeline_helpers import journals, make_workspace, run_tool

pytestmark = pytest.mark.slow

PYTHON = os.path.realpath(sys.executable)


def config(workspace: Path) -> dict:
    agent_py = str(workspace / "agents" / "tiny" / "agent.py")

    def agent(**env):
        return {"command": [PYTHON, "-I", "-S", agent_py], "env": env}

    return {
        "backend": "local",
        "canary": False,
        "benchmark": {"n": 24},
        "agents": {
            "erratic": agent(TINY_SKILL="erratic"),
            "steady": agent(TINY_SKILL="steady", TINY_RATE="0"),
        },
        "resource_profiles": {"3x": {"memory_limit_factor": 3.0, "cpu_limit_factor": 3.0}},
        "trials": {"count": 3, "block_size": 3},
        "task_chunk_size": 4,
        "sequential": {
            "enabled": True,
            "target": "accuracy",
            "half_width": 0.2,
            "first_round": {"tasks": 6, "trials": 2},
            "cost_per_task": 1.0,
            "cost_per_trial": 1.0,
        },
        "analysis": {
            "per_level": False,
            "convergence": {"subsamples": 20},
            "bootstrap": {"resamples": 200},
        },
    }


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    ws = tmp_path_factory.mktemp("sequential") / "ws"
    make_workspace(ws, {})
    from pipeline_helpers import write_config

    write_config(ws, config(ws))
    first = run_tool(ws, "snakemake", "--cores", "2", "all_analysis", timeout=900)
    return ws, first


def records(ws: Path) -> list[dict]:
    paths = sorted((ws / "results" / "sequential").glob("round-*.json"))
    return [json.loads(p.read_text()) for p in paths]


def test_each_agent_stops_and_the_steady_one_first(run):
    ws, _ = run
    summary = json.loads((ws / "results" / "sequential" / "summary.json").read_text())
    units = {u["unit"]: u for u in summary["units"]}
    assert set(units) == {"erratic@3x", "steady@3x"}
    steady, erratic = units["steady@3x"], units["erratic@3x"]
    assert steady["status"] == "target_met"
    assert steady["achieved"] <= 0.2
    assert erratic["status"] in ("target_met", "limit_reached", "budget_spent")
    groups = summary["groups"]
    assert groups["steady@3x"]["tasks"] < groups["erratic@3x"]["tasks"]
    assert steady["round"] < erratic["round"]
    assert steady["n_tasks"] == groups["steady@3x"]["tasks"]
    # the interval stopped on holds the estimate and is no wider than the target when met
    for u in units.values():
        assert u["ci_low"] <= u["estimate"] <= u["ci_high"]
        if u["status"] == "target_met":
            assert (u["ci_high"] - u["ci_low"]) / 2 <= 0.2 + 1e-9
    table = pd.read_csv(ws / "results" / "sequential" / "rounds.csv")
    assert table.groupby("unit")["round"].max().to_dict() == {
        "erratic@3x": erratic["round"],
        "steady@3x": steady["round"],
    }
    assert (table.loc[table["status"] == "continue", "next_new_tasks"] > 0).all()
    # the checkpoint's records hold statuses and numbers; the words are the summary's
    assert table["reason"].notna().all()
    assert not any("reason" in u for rec in records(ws) for u in rec["units"])


def test_the_journals_hold_exactly_the_final_design(run):
    ws, _ = run
    last = records(ws)[-1]
    assert last["done"]
    tasks = pd.read_parquet(ws / "results" / "tasks.parquet")["task_id"].tolist()
    ran: dict[str, list[tuple]] = {}
    for rows in journals(ws).values():
        for row in rows:
            label = f"{row['agent']}@{row['resource_profile']}"
            ran.setdefault(label, []).append((row["task_id"], row["trial"]))
    for label, rects in last["design"].items():
        want = sorted(
            (tasks[row], trial)
            for _, r0, r1, t0, t1 in rects
            for row in range(r0, r1 + 1)
            for trial in range(t0, t1 + 1)
        )
        assert sorted(ran[label]) == want, label  # no trial twice, none outside the design


def test_the_statistics_read_the_final_design(run):
    ws, _ = run
    summary = json.loads((ws / "results" / "sequential" / "summary.json").read_text())
    for label, group in summary["groups"].items():
        agent, profile = label.split("@")
        stats = json.loads(
            (ws / "results" / "analysis" / "groups" / agent / f"{profile}.json").read_text()
        )
        assert stats["overall"]["n_tasks"] == group["tasks"]
        assert stats["overall"]["n_obs"] == group["trials"]


def test_the_summary_says_why_each_agent_stopped(run):
    ws, _ = run
    text = (ws / "results" / "analysis" / "summary.txt").read_text()
    assert "Adaptive evaluation: target accuracy half-width <= 0.2" in text
    summary = json.loads((ws / "results" / "sequential" / "summary.json").read_text())
    for u in summary["units"]:
        assert f"{u['unit']}: {u['status']} after round {u['round']}" in text
        assert u["reason"] in text
    metrics = json.loads((ws / "results" / "metrics.json").read_text())
    assert metrics["sequential"]["steady@3x"]["status"] == "target_met"


def test_a_second_run_has_nothing_to_do(run):
    ws, _ = run
    again = run_tool(ws, "snakemake", "--cores", "2", "all_analysis", "-n")
    assert "Nothing to be done" in again.stdout + again.stderr


def test_a_bad_sequential_block_fails_before_any_job(tmp_path):
    ws = make_workspace(tmp_path / "ws", {})
    from pipeline_helpers import write_config

    bad = config(ws)
    bad["sequential"] = {**bad["sequential"], "first_round": {"tasks": 4, "trials": 5}}
    write_config(ws, bad)
    done = run_tool(ws, "snakemake", "--cores", "1", "-n", check=False)
    assert done.returncode != 0
    text = done.stdout + done.stderr
    assert "sequential.first_round.trials" in text
    assert not (ws / "results").exists()
