"""`evalnoise analyze` counts every outcome and flags a group whose failures are no score."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from outcome_tables import WITHOUT_VERDICT

from evalnoise.cli import main
from evalnoise.outcomes import OUTCOMES
from evalnoise.report.health import OUTCOME_HEADERS


def _table(tmp_path):
    rows = []
    for task in ("t1", "t2", "t3"):
        for trial in range(4):
            # a healthy agent: right on t1 and t2, wrong on t3
            rows.append(("healthy", task, trial, "ok", 0, float(task != "t3")))
            # a crashing agent: SIGSEGV (139) on every trial but one, which is unscored
            if (task, trial) == ("t1", 0):
                rows.append(("crasher", task, trial, "ok", 0, None))
            else:
                rows.append(("crasher", task, trial, "agent_error", 139, None))
    rows.append(("healthy", "t4", 0, "timeout", None, None))
    frame = pd.DataFrame(
        rows, columns=["agent", "task_id", "trial", "status", "exit_code", "score"]
    )
    path = tmp_path / "trials.csv"
    frame.to_csv(path, index=False)
    return path


def test_outcomes_and_health_in_json(tmp_path, capsys):
    path = _table(tmp_path)
    assert main(["analyze", str(path), "--group", "agent", "--score", "score", "--json"]) == 0
    groups = {g["group"]: g for g in json.loads(capsys.readouterr().out)["groups"]}
    crasher, healthy = groups["crasher"], groups["healthy"]
    assert crasher["outcomes"]["crashed"] == 11 and crasher["outcomes"]["unscored"] == 1
    assert crasher["outcomes"]["trials"] == 12
    assert crasher["health"]["valid"] is False
    assert any("SIGSEGV" in r or "crashed" in r for r in crasher["health"]["reasons"])
    # not a measurement: no headline number, the reason in its place (issue 21.1)
    assert crasher["mean"] is None and crasher["ci_low"] is None and crasher["icc"] is None
    assert crasher["withheld"].startswith("not a measurement of the agent")
    # the reading that counts crashes as wrong exists only under its own label, beside the
    # reading over the trials that answered (none here: the one ok trial is unscored)
    assert crasher["readings"]["failures_as_incorrect"]["mean"] == 0.0
    assert crasher["readings"]["failures_as_incorrect"]["n_trials"] == 11
    assert crasher["readings"]["answered"]["n_trials"] == 0
    assert crasher["readings"]["answered"]["mean"] is None
    assert healthy["outcomes"] == {
        **dict.fromkeys(OUTCOMES, 0),
        "ok": 12,
        "timeout": 1,
        "trials": 13,
        "attempts": 13,
    }
    assert healthy["health"]["valid"] is True
    # a valid group keeps its headline (the timeout counts as incorrect, as_incorrect) and
    # says both readings: 8 of 12 answered right; with the timeout as 0, t4 adds a 0 task
    assert healthy["mean"] == 0.5
    assert healthy["readings"]["answered"]["mean"] == 2 / 3
    assert healthy["readings"]["failures_as_incorrect"]["mean"] == 0.5


def test_text_output_flags_the_group(tmp_path, capsys):
    path = _table(tmp_path)
    assert main(["analyze", str(path), "--group", "agent", "--score", "score"]) == 0
    out = capsys.readouterr().out
    assert "crasher: no accuracy: not a measurement of the agent" in out
    assert "NOT A MEASUREMENT OF THE AGENT" in out
    assert "readings: over the trials that answered —" in out
    assert "failures as incorrect 0.0%" in out
    counts = {**dict.fromkeys(OUTCOMES, 0), "crashed": 11, "unscored": 1}
    words = ", ".join(f"{counts[name]} {OUTCOME_HEADERS[name]}" for name in OUTCOMES)
    assert f"12 trials: {words}" in out


def test_tables_without_status_are_analysed_as_before(tmp_path, capsys):
    frame = pd.DataFrame(
        {"task_id": ["a", "a", "b", "b"], "trial": [0, 1, 0, 1], "correct": [1, 0, 1, 1]}
    )
    path = tmp_path / "plain.csv"
    frame.to_csv(path, index=False)
    assert main(["analyze", str(path), "--json"]) == 0
    (record,) = json.loads(capsys.readouterr().out)["groups"]
    assert "outcomes" not in record and record["mean"] == 0.75


def test_trials_without_a_verdict_are_no_zero_in_the_headline(tmp_path, capsys):
    """An imported Harbor job (issue 36, :data:`outcome_tables.WITHOUT_VERDICT`): 15 trials,
    3 of them ``verifier_error`` with a null score. The headline is over the 12 decided
    trials (9 answered, 3 agent failures as 0), never the 15 with the 3 undecided ones
    averaged in as 0."""
    path = tmp_path / "harbor.csv"
    WITHOUT_VERDICT.assign(exit_code=WITHOUT_VERDICT["status"].map({"agent_error": 1})).to_csv(
        path, index=False
    )
    assert main(["analyze", str(path), "--score", "score", "--json"]) == 0
    (record,) = json.loads(capsys.readouterr().out)["groups"]
    assert record["outcomes"]["verifier_error"] == 3 and record["outcomes"]["trials"] == 15
    assert record["n_obs"] == 12
    # 7 of 9 answered right, the 3 agent failures as 0: 7 / 12 (balanced: 4 per task)
    assert record["mean"] == pytest.approx(7 / 12)
    assert record["readings"]["failures_as_incorrect"]["mean"] == pytest.approx(7 / 12)
    assert record["readings"]["failures_as_incorrect"]["n_trials"] == 12
    assert record["readings"]["answered"]["mean"] == pytest.approx(7 / 9)
    assert record["readings"]["answered"]["n_trials"] == 9
    assert main(["analyze", str(path), "--score", "score"]) == 0
    out = capsys.readouterr().out
    assert "58.3%" in out and "46.7%" not in out  # 7/15 would be the silent zeros' number
