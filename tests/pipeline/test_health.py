"""No failure reads as a score: a real crash, with and without the canary, and degenerate groups.

The crashing agent is the tiny agent with ``TINY_CRASH=segv``: it kills itself with SIGSEGV
inside its real container (exit status 139 from the container's init), as a native library
built for another CPU does. Beside it runs a healthy agent.

- canary on (the default): the run stops before any trial of the crashing agent, with one
  message naming the agent, the profile, the signal, the last lines of stderr and what to
  check;
- canary off: every trial crashes; the group is flagged everywhere (summary, metrics.json,
  groups.json, card, report), left out of the comparisons, and the run exits non-zero with
  the list, while the healthy agent is reported normally;
- always-right, always-wrong and single-task runs never crash a stage, and their intervals
  are never ``[0, 0]``.
"""

from __future__ import annotations

import json

import pytest
from pipeline_helpers import journals, make_workspace, run_tool

pytestmark = [pytest.mark.docker, pytest.mark.slow]

PROFILES = {
    "1x": {},
    "3x": {"memory_limit_factor": 3.0, "cpu_limit_factor": 3.0},
}
FAST = {"analysis": {"convergence": {"subsamples": 20}, "bootstrap": {"resamples": 200}}}


def tiny(**env):
    return {"build": "agents/tiny", "env": {"TINY_SKILL": "a", **env}}


def crash_config(canary: bool) -> dict:
    return {
        "benchmark": {"n": 2},
        "agents": {"healthy": tiny(), "crasher": tiny(TINY_CRASH="segv")},
        "resource_profiles": PROFILES,
        "trials": {"count": 2, "block_size": 2},
        "task_chunk_size": 2,
        "canary": canary,
        "health": {"expected_failures": []},
        **FAST,
    }


@pytest.fixture
def engine(docker_engine):
    return docker_engine


def _read(workspace, path):
    return (workspace / path).read_text(encoding="utf-8")


def test_canary_stops_a_crashing_agent_before_its_sweep(tmp_path, engine):
    ws = make_workspace(tmp_path / "ws", crash_config(canary=True))
    result = run_tool(ws, "snakemake", "--cores", "2", check=False, timeout=900)
    out = result.stdout + result.stderr
    assert result.returncode != 0
    assert "canary failed: agent 'crasher' under resource profile '3x'" in out, out[-3000:]
    assert "exit code 139 (SIGSEGV)" in out
    assert "tiny: about to crash" in out  # the last lines of the agent's output
    assert "what to check:" in out
    # no trial of the crashing agent ran; its group has no shard at all
    rows = [r for rows in journals(ws).values() for r in rows]
    assert not [r for r in rows if r["agent"] == "crasher"]
    assert not (ws / "results" / "trials" / "crasher" / "canary.json").exists()
    # a verdict is not retried (issue 21.3): the profile's retries: 2 ran it once, not 3 ×
    assert out.count("Error in rule canary") == 1
    assert "Trying to restart job" not in out


def test_without_canary_a_crashed_group_is_flagged_everywhere(tmp_path, engine):
    ws = make_workspace(tmp_path / "ws", crash_config(canary=False))
    result = run_tool(ws, "snakemake", "--cores", "2", check=False, timeout=900)
    out = result.stdout + result.stderr
    # the run ends non-zero, listing the group, after the report shows it
    assert result.returncode != 0
    assert "NOT A MEASUREMENT OF THE AGENT" in out
    assert (ws / "results" / "report" / "index.html").exists()

    metrics = json.loads(_read(ws, "results/metrics.json"))
    assert metrics["valid"] is False
    for profile in PROFILES:
        bad = metrics["groups"][f"crasher@{profile}"]
        assert bad["valid"] is False
        assert bad["outcomes"]["crashed"] == bad["outcomes"]["trials"] == 4
        assert bad["outcomes"]["ok"] == 0
        good = metrics["groups"][f"healthy@{profile}"]
        assert good["valid"] is True
        assert good["outcomes"]["ok"] == 4 and good["outcomes"]["crashed"] == 0
    # no comparison uses the crashed groups; they are listed as skipped
    assert all("crasher" not in name for name in metrics["comparisons"])
    assert "resource_profiles:healthy:healthy@1x-vs-healthy@3x" in metrics["comparisons"]
    skipped = json.loads(_read(ws, "results/analysis/comparisons.json"))["skipped"]
    assert {(s["a"], s["b"]) for s in skipped} >= {("crasher@1x", "healthy@1x")}

    summary = _read(ws, "results/analysis/summary.txt")
    assert "crasher@1x: " in summary and "[NOT A MEASUREMENT OF THE AGENT]" in summary
    assert "4 crashed" in summary
    assert "crashed (SIGSEGV)" in summary or "4 of 4 trials crashed (SIGSEGV)" in summary

    groups = json.loads(_read(ws, "results/analysis/groups.json"))["groups"]
    by_name = {g["group"]: g for g in groups}
    assert by_name["crasher@3x"]["crash_signals"] == {"SIGSEGV": 4}
    assert by_name["crasher@3x"]["health"]["valid"] is False

    html = _read(ws, "results/report/index.html")
    assert "Not a measurement of the agent" in html or "NOT A MEASUREMENT" in html
    cards = list((ws / "results" / "report").rglob("*crasher*3x*.json"))
    assert cards, "no card of crasher@3x"
    assert json.loads(cards[0].read_text())["valid"] is False

    # the check's verdict ran once, not once per retry of the profile (issue 21.3)
    assert out.count("Error in rule check") == 1

    # a rerun changes nothing and fails the same way (the check is the last rule)
    again = run_tool(ws, "snakemake", "--cores", "2", check=False, timeout=600)
    assert again.returncode != 0
    assert "NOT A MEASUREMENT OF THE AGENT" in again.stdout + again.stderr


def test_degenerate_groups_never_crash_a_stage(tmp_path, engine):
    config = {
        # level 1 is plain arithmetic, which the tiny agent computes exactly
        "benchmark": {"n": 3, "levels": [1]},
        "agents": {"right": tiny(TINY_RATE="1"), "wrong": tiny(TINY_RATE="0")},
        "resource_profiles": {"1x": {}},
        "trials": {"count": 2, "block_size": 2},
        "task_chunk_size": 3,
        **FAST,
    }
    ws = make_workspace(tmp_path / "ws", config)
    run_tool(ws, "snakemake", "--cores", "2", timeout=900)
    metrics = json.loads(_read(ws, "results/metrics.json"))
    assert metrics["valid"] is True
    right, wrong = metrics["groups"]["right@1x"], metrics["groups"]["wrong@1x"]
    assert right["accuracy"] == 1.0 and wrong["accuracy"] == 0.0
    # never [0, 0] or [1, 1]: a Wilson interval on the effective number of tasks
    assert wrong["ci_low"] == 0.0 and wrong["ci_high"] > 0.1
    assert right["ci_high"] == 1.0 and right["ci_low"] < 0.9
    assert (ws / "results" / "report" / "index.html").exists()


def test_a_single_task_run_is_reported(tmp_path, engine):
    config = {
        "benchmark": {"n": 1, "stratify_by_level": False},
        "agents": {"solo": tiny()},
        "resource_profiles": {"1x": {}},
        "trials": {"count": 3, "block_size": 3},
        "task_chunk_size": 1,
        **FAST,
    }
    ws = make_workspace(tmp_path / "ws", config)
    run_tool(ws, "snakemake", "--cores", "2", timeout=900)
    metrics = json.loads(_read(ws, "results/metrics.json"))
    solo = metrics["groups"]["solo@1x"]
    assert solo["n_tasks"] == 1 and solo["n_trials"] == 3
    assert solo["icc"] is None  # undefined with one task, never a crash
    assert (ws / "results" / "report" / "index.html").exists()
    # report.png: false (the tests' workspaces): the chart pages without PNG copies
    assert list((ws / "results" / "report").glob("*.html")) != []
    assert list((ws / "results" / "report").glob("*.png")) == []


def test_an_agent_that_crashes_on_half_its_trials_has_no_headline(tmp_path, engine):
    """Issue 21.1: the agent passes its canary (trial 0) and crashes with SIGSEGV on every
    odd trial, answering right otherwise. No output reads the crashes as wrong answers
    without saying so: the headline (accuracy, CI, ICC) is null with the reason beside it,
    and the reading that counts crashes as 0 appears only under its own label, next to
    the reading over the trials that answered."""
    config = {
        "benchmark": {"n": 4, "levels": [1]},
        "agents": {"halfcrash": tiny(TINY_RATE="1", TINY_CRASH="segv-odd")},
        "resource_profiles": {"3x": PROFILES["3x"]},
        "trials": {"count": 4, "block_size": 4},
        "task_chunk_size": 4,
        "health": {"expected_failures": []},
        **FAST,
    }
    ws = make_workspace(tmp_path / "ws", config)
    result = run_tool(ws, "snakemake", "--cores", "2", check=False, timeout=900)
    out = result.stdout + result.stderr
    assert result.returncode != 0 and "NOT A MEASUREMENT OF THE AGENT" in out

    # the score shards hold no 0 for a crash: it is unscored
    import pandas as pd

    scores = pd.concat(pd.read_parquet(p) for p in (ws / "results" / "scores").rglob("*.parquet"))
    crashed = scores[scores["exit_code"] == 139]
    assert len(crashed) == 8 and crashed["score"].isna().all()
    assert (crashed["judge_status"] == "skipped_crash").all()

    metrics = json.loads(_read(ws, "results/metrics.json"))
    group = metrics["groups"]["halfcrash@3x"]
    assert group["valid"] is False
    assert group["accuracy"] is None and group["ci_low"] is None and group["ci_high"] is None
    assert group["icc"] is None
    assert group["withheld"].startswith("not a measurement of the agent")
    assert "8 of 16 trials crashed (SIGSEGV)" in group["withheld"]
    assert group["outcomes"]["crashed"] == 8 and group["outcomes"]["ok"] == 8
    assert group["readings"]["answered"] == {
        "accuracy": 1.0,
        "ci_low": group["readings"]["answered"]["ci_low"],
        "ci_high": 1.0,
        "n_trials": 8,
    }
    assert group["readings"]["failures_as_incorrect"]["accuracy"] == 0.5
    assert group["readings"]["failures_as_incorrect"]["n_trials"] == 16

    stats = json.loads(_read(ws, "results/analysis/groups/halfcrash/3x.json"))
    assert stats["overall"]["mean"] is None and stats["overall"]["icc"] is None
    conv = _read(ws, "results/analysis/convergence/halfcrash/3x.csv").strip().splitlines()
    assert len(conv) == 1  # header only: the ICC is withheld

    summary = _read(ws, "results/analysis/summary.txt")
    line = next(x for x in summary.splitlines() if x.startswith("halfcrash@3x: "))
    assert "no accuracy: not a measurement of the agent" in line and "%" not in line
    assert (
        "readings: over the trials that answered 100.0% [" in summary
        and "failures as incorrect 50.0% [" in summary
    )
    # the infra-policy line's readings are labelled and differ: crashes 0 vs left out
    attribution = json.loads(_read(ws, "results/analysis/attribution.json"))
    policies = {p["policy"]: p for p in attribution["halfcrash@3x"]["policy"]}
    assert policies["as_incorrect"]["mean"] == 0.5 and policies["exclude"]["mean"] == 1.0

    cards = list((ws / "results" / "report").rglob("*halfcrash*3x*.json"))
    card = json.loads(cards[0].read_text())
    assert card["metrics"]["accuracy"] is None
    assert card["metrics"]["accuracy_withheld"].startswith("not a measurement")
    assert card["metrics"]["readings"]["failures_as_incorrect"]["mean"] == 0.5
    html = _read(ws, "results/report/index.html")
    assert "no accuracy: not a measurement of the agent" in html
    assert "failures as incorrect 50.0%" in html
