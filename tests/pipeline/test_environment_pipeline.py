"""Environment tasks (the Harbor format) through the whole pipeline, on the real engine.

A workspace runs three example tasks of ``examples/harbor-tasks`` — two that any roomy
container passes and ``sort-numbers``, whose reference solution needs more memory than the
task declares — plus Harbor's ``no-reward`` fixture, whose verifier writes no reward. The
oracle runs under 1x and 3x, the null agent (``nop``) under 3x:

- the oracle scores 1 on every task it can finish at 3x; at 1x ``sort-numbers``'s solution
  is OOM-killed while the container lives on: the task's own event, so the verifier's
  verdict (0: nothing sorted) decides and the kill is the flag ``oom_in_agent``; the
  resource-sensitivity table names the task;
- the null agent scores 0;
- ``no-reward``'s trials are ``verifier_error``: no score (never a 0), counted and flagged
  in every output, the group incomplete, the run failing its check; a plain rerun runs
  exactly those trials again (a new attempt each).
"""

from __future__ import annotations

import json
import shutil

import pandas as pd
import pytest
from pipeline_helpers import ROOT, journals, make_workspace, run_tool

pytestmark = [pytest.mark.docker, pytest.mark.slow]

TASKS = ("csv-to-jsonl", "edit-ini-config", "sort-numbers")
PROFILES = {"1x": {}, "3x": {"memory_limit_factor": 3.0, "cpu_limit_factor": 3.0}}


@pytest.fixture
def engine(docker_engine):
    return docker_engine


def _workspace(tmp_path):
    config = {
        # no-reward says nothing of its network (Harbor: public): run it without one
        "benchmark": {
            "source": "harbor",
            "path": "tasks",
            "n": None,
            "name": "subset",
            "network": "offline",
        },
        "agents": {
            "oracle": {"program": "oracle", "resource_profiles": ["1x", "3x"]},
            "nop": {"program": "nop", "resource_profiles": ["3x"]},
        },
        "resource_profiles": PROFILES,
        "trials": {"count": 2, "block_size": 2},
        "task_chunk_size": 4,
        "scorer": {"name": "reward"},
        "health": {"expected_failures": ["oracle@1x"]},
        "analysis": {"convergence": {"subsamples": 20}, "bootstrap": {"resamples": 200}},
    }
    ws = make_workspace(tmp_path / "ws", config)
    for name in TASKS:
        shutil.copytree(ROOT / "examples" / "harbor-tasks" / name, ws / "tasks" / name)
    shutil.copytree(
        ROOT / "tests" / "data" / "harbor" / "tasks" / "no-reward", ws / "tasks" / "no-reward"
    )
    return ws


def test_environment_tasks_end_to_end(tmp_path, engine):
    ws = _workspace(tmp_path)
    result = run_tool(ws, "snakemake", "--cores", "2", check=False, timeout=1800)
    out = result.stdout + result.stderr
    # the verifier_error trials make the run fail its check, after the report showed them
    assert result.returncode != 0, out[-3000:]
    assert "verifier_error" in out and (ws / "results" / "report" / "index.html").exists()

    metrics = json.loads((ws / "results" / "metrics.json").read_text())
    groups = metrics["groups"]
    tasks = pd.read_parquet(ws / "results" / "tasks.parquet")
    assert set(tasks["kind"]) == {"environment"} and len(tasks) == 4
    no_reward = tasks.loc[tasks["task_dir"].str.endswith("no-reward"), "task_id"].item()

    oracle3 = groups["oracle@3x"]
    assert oracle3["accuracy"] == 1.0  # every task with a verdict, solved
    assert oracle3["outcomes"]["verifier_error"] == 2 and oracle3["outcomes"]["ok"] == 6
    assert oracle3["measurement"] is True and oracle3["valid"] is False
    assert any("verifier_error" in r for r in oracle3["incomplete"])

    oracle1 = groups["oracle@1x"]
    assert oracle1["outcomes"]["oom_killed"] == 0
    assert oracle1["outcomes"]["oom_in_agent"] == 2  # sort-numbers, both trials
    assert oracle1["expected_failures"] is True
    assert oracle1["accuracy"] == pytest.approx(2 / 3)  # the verifier's verdict: not sorted
    assert groups["nop@3x"]["accuracy"] == 0.0

    scores = pd.concat(pd.read_parquet(p) for p in (ws / "results" / "scores").rglob("*.parquet"))
    unverified = scores[scores["status"] == "verifier_error"]
    assert set(unverified["task_id"]) == {no_reward}
    assert unverified["score"].isna().all() and unverified["reward"].isna().all()
    ok = scores[scores["status"] == "ok"]
    assert ok["score"].eq(ok["reward"]).all() and ok["phase"].isna().all()
    oom = scores[scores["oom_in_agent"].fillna(False).astype(bool)]
    assert len(oom) == 2 and oom["resource_profile"].eq("1x").all()
    assert oom["status"].eq("ok").all() and oom["score"].eq(0.0).all()
    assert not (scores["status"] == "oom_killed").any()

    summary = (ws / "results" / "analysis" / "summary.txt").read_text()
    assert "verifier_error" in summary
    assert "flagged: 2 OOM kill in the agent phase" in summary
    resource = json.loads((ws / "results" / "analysis" / "attribution.json").read_text())
    (pair,) = resource["_resource"]
    sort_numbers = tasks.loc[tasks["task_dir"].str.endswith("sort-numbers"), "task_id"].item()
    assert sort_numbers in pair["between_limits"]

    # a plain rerun runs exactly the verifier_error trials again, a new attempt each
    before = {k: len(v) for k, v in journals(ws).items()}
    again = run_tool(ws, "snakemake", "--cores", "2", check=False, timeout=1800)
    after = journals(ws)
    rerun = [r for k, rows in after.items() for r in rows[before.get(k, 0) :]]
    assert {(r["task_id"], r["attempt"]) for r in rerun} == {(no_reward, 2)}
    assert len(rerun) == 6  # 2 trials × (oracle@1x, oracle@3x, nop@3x)
    assert again.returncode != 0  # the verifier still writes no reward
