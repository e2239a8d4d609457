"""Harbor jobs as real runs leave them: agent failures the verifier still decided, jobs
stopped before all their trials were written, folders that are no trials, and exception
times in local time (Harbor 0.6–0.25). Each job is made from the committed real Harbor 0.25
excerpt (tests/data/harbor/jobs/nop) in Harbor's published job format: ``JOB/config.json``
(JobConfig), ``JOB/result.json`` (JobResult) and one ``<task>__<id>/`` folder per trial with
its ``config.json`` (TrialConfig) and ``result.json`` (TrialResult)."""

from __future__ import annotations

import json
import shutil
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from evalnoise.cli import main
from evalnoise.importers import harbor_jobs as hb
from evalnoise.importers import import_trials, read_metadata


def _ts(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _z(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _shift(record: dict, by: timedelta) -> None:
    """Move every UTC time of a TrialResult by ``by`` (a later trial of the same job)."""
    for key in ("started_at", "finished_at"):
        record[key] = _z(_ts(record[key]) + by)
    for phase in hb.PHASES:
        if record.get(phase):
            record[phase] = {k: _z(_ts(v) + by) for k, v in record[phase].items()}


def make_job(
    jobs: Path,
    root: Path,
    name: str,
    trials: list[tuple[str | None, float | None]],
    *,
    declared: int | None = None,
) -> Path:
    """A Harbor job ``root/name`` of the nop agent on ``greet``: one trial per
    ``(exception type or None, reward or None)``, started a minute apart, each exception
    recorded just after the agent phase ended (where Harbor records an agent's failure, before
    it runs the verifier). ``declared``: the JobResult's ``n_total_trials`` (default: all)."""
    source = jobs / "nop"
    template = source / "greet__adpKems"
    job = root / name
    job.mkdir(parents=True)
    shutil.copy(source / "config.json", job / "config.json")
    result = json.loads((source / "result.json").read_text())
    result["n_total_trials"] = len(trials) if declared is None else declared
    result["stats"] = {"n_completed_trials": len(trials), "evals": {}}
    (job / "result.json").write_text(json.dumps(result, indent=4))
    for i, (exception, reward) in enumerate(trials):
        trial_name = f"greet__T{i:06d}"
        folder = job / trial_name
        folder.mkdir()
        config = json.loads((template / "config.json").read_text())
        config["trial_name"] = trial_name
        (folder / "config.json").write_text(json.dumps(config, indent=4))
        record = json.loads((template / "result.json").read_text())
        record.update(id=str(uuid.UUID(int=i + 1)), trial_name=trial_name)
        _shift(record, timedelta(minutes=i))
        record["verifier_result"] = None if reward is None else {"rewards": {"reward": reward}}
        if exception is not None:
            occurred = _ts(record["agent_execution"]["finished_at"]) + timedelta(milliseconds=5)
            record["exception_info"] = {
                "exception_type": exception,
                "exception_message": "Agent command exited with code 1",
                "exception_traceback": "",
                "occurred_at": _z(occurred),
            }
        (folder / "result.json").write_text(json.dumps(record, indent=4))
    return job


@pytest.fixture
def jobs(data_dir: Path) -> Path:
    return data_dir / "harbor" / "jobs"


NONZERO = "NonZeroAgentExitCodeError"


def test_a_resolved_trial_is_resolved(jobs: Path, tmp_path: Path, capsys) -> None:
    """One task, 5 trials, 4 of them NonZeroAgentExitCodeError, one of which the verifier
    passed: Harbor's mean is 1/5 = 0.200, and so is the headline; the stricter reading
    (verdicts after an agent failure as incorrect) is 0.000 beside it."""
    job = make_job(
        jobs,
        tmp_path,
        "nonzero",
        [(NONZERO, 1.0), (NONZERO, 0.0), (NONZERO, 0.0), (NONZERO, 0.0), (None, 0.0)],
    )
    result = import_trials("harbor", [job])
    rows = result.table.to_pylist()
    assert [r["status"] for r in rows] == ["ok"] * 5
    assert [r["verified_after"] for r in rows] == ["agent_error"] * 4 + [None]
    assert [r["error"] for r in rows] == [NONZERO] * 4 + [None]
    assert result.metadata["counts"]["verified_after"] == {"agent_error": 4}
    out = tmp_path / "nonzero.parquet"
    assert main(["import", "harbor", str(job), "-o", str(out)]) == 0
    capsys.readouterr()
    assert main(["analyze", str(out), "--json", "--no-attribution"]) == 0
    (group,) = json.loads(capsys.readouterr().out)["groups"]
    assert group["mean"] == pytest.approx(0.2)
    assert group["health"]["valid"] is True
    assert group["outcomes"]["ok"] == 5 and group["outcomes"]["verified_after"] == 4
    assert group["readings"]["failures_as_incorrect"]["mean"] == pytest.approx(0.2)
    assert group["readings"]["verified_as_failures"]["mean"] == pytest.approx(0.0)
    # the stricter rule: today's reading, 4 of 5 agent errors, no headline
    assert main(["analyze", str(out), "--json", "--no-attribution", "--after-agent-failure",
                 "failure"]) == 0  # fmt: skip
    (strict,) = json.loads(capsys.readouterr().out)["groups"]
    assert strict["mean"] is None and strict["withheld"]
    assert strict["outcomes"]["no_answer"] == 4
    assert strict["readings"]["failures_as_incorrect"]["mean"] == pytest.approx(0.2)
    # the text says both, and the flag
    assert main(["analyze", str(out), "--no-attribution"]) == 0
    text = capsys.readouterr().out
    assert "20.0% ±" in text
    assert "flagged: 4 verified after an agent failure" in text
    assert "verdicts after agent failures as incorrect 0.0%" in text


def test_trials_without_a_verdict_are_never_a_zero(jobs: Path, tmp_path: Path, capsys) -> None:
    """3 of 15 trials whose verifier wrote no reward (verifier_error, no score): the headline
    is over the 12 trials with a verdict, the same as its failures-as-incorrect reading."""
    trials = [(None, 1.0)] * 6 + [(None, 0.0)] * 3 + [(NONZERO, None)] * 3
    trials += [("RewardFileNotFoundError", None)] * 3
    job = make_job(jobs, tmp_path, "noreward", trials)
    out = tmp_path / "noreward.parquet"
    assert main(["import", "harbor", str(job), "-o", str(out)]) == 0
    capsys.readouterr()
    assert main(["analyze", str(out), "--json", "--no-attribution"]) == 0
    (group,) = json.loads(capsys.readouterr().out)["groups"]
    assert group["outcomes"]["verifier_error"] == 3
    assert group["n_obs"] == 12  # never the 15 with three zeros
    assert group["mean"] == pytest.approx(6 / 12)
    assert group["readings"]["failures_as_incorrect"]["mean"] == pytest.approx(6 / 12)
    assert group["readings"]["failures_as_incorrect"]["n_trials"] == 12
    assert group["readings"]["answered"]["mean"] == pytest.approx(6 / 9)


def test_an_incomplete_job_is_said_at_import_and_analysis(
    jobs: Path, tmp_path: Path, capsys
) -> None:
    """A job killed before all its trials were written: 21 declared, 4 found (one more
    started: its folder has only config.json)."""
    job = make_job(jobs, tmp_path, "killed", [(None, 1.0)] * 4, declared=21)
    running = job / "greet__Running"
    running.mkdir()
    (running / "config.json").write_text(json.dumps({"trial_name": "greet__Running", "task": {}}))
    result = import_trials("harbor", [job])
    (line,) = result.metadata["warnings"]
    assert line == (
        f"incomplete Harbor job {job}: 21 trials declared, 4 found (1 started but never "
        "finished, 16 never started): the job was stopped before all its trials were written"
    )
    out = tmp_path / "killed.parquet"
    assert main(["import", "harbor", str(job), "-o", str(out)]) == 0
    assert f"warning: {line}" in capsys.readouterr().out.splitlines()
    assert read_metadata(out)["warnings"] == [line]
    assert main(["analyze", str(out), "--no-attribution"]) == 0
    assert f"warning: {line}" in capsys.readouterr().out.splitlines()
    assert main(["analyze", str(out), "--json", "--no-attribution"]) == 0
    assert json.loads(capsys.readouterr().out)["import_warnings"] == [line]
    # a complete job says nothing
    whole = make_job(jobs, tmp_path, "whole", [(None, 1.0)] * 2)
    assert "warnings" not in import_trials("harbor", [whole]).metadata


def test_a_folder_that_is_no_trial_is_named(jobs: Path, tmp_path: Path, capsys) -> None:
    tree = tmp_path / "tree"
    job = make_job(jobs, tree, "job", [(None, 1.0)] * 2)
    (job / "notes" / "drafts").mkdir(parents=True)
    (job / "notes" / "drafts" / "x.txt").write_text("not a trial")
    (tree / "plots").mkdir()
    result = import_trials("harbor", [tree])
    assert result.table.num_rows == 2
    assert result.metadata["counts"]["not_trials"] == [str(job / "notes"), str(tree / "plots")]
    assert result.metadata["warnings"] == [
        "not Harbor trials (no trial or job result.json), skipped: "
        f"{job / 'notes'}, {tree / 'plots'}"
    ]
    out = tmp_path / "tree.parquet"
    assert main(["import", "harbor", str(tree), "-o", str(out)]) == 0
    assert capsys.readouterr().out.count("warning: not Harbor trials") == 1


@pytest.mark.parametrize("hours", [-5, 0, 5.5, 9])
def test_local_occurred_at_of_harbor_0_6_to_0_25(jobs: Path, tmp_path: Path, hours) -> None:
    """Harbor 0.6–0.25 wrote ``occurred_at`` with ``datetime.now()`` (local, no zone) beside
    phase times in UTC. An agent's timeout is recorded after its phase and before the
    verifier runs: the phase is the agent's, whatever the machine's zone — not the last phase
    that started (the verifier)."""
    job = make_job(jobs, tmp_path, "local", [("AgentTimeoutError", 1.0), ("RuntimeError", 0.0)])
    for path in sorted(job.glob("*/result.json")):
        record = json.loads(path.read_text())
        occurred = _ts(record["exception_info"]["occurred_at"]) + timedelta(hours=hours)
        record["exception_info"]["occurred_at"] = occurred.replace(tzinfo=None).isoformat()
        path.write_text(json.dumps(record))
    rows = import_trials("harbor", [job]).table.to_pylist()
    assert [r["error_phase"] for r in rows] == ["agent_execution", "agent_execution"]
    assert [(r["status"], r["verified_after"]) for r in rows] == [
        ("ok", "timeout"),
        ("ok", "agent_error"),  # an unknown exception of the agent's phase: the agent's
    ]


def test_local_occurred_at_of_a_long_trial_is_placed_by_the_phase_ends() -> None:
    """A trial longer than 15 minutes leaves several offsets inside its span: the one that
    puts the stamp just after a phase's end wins."""
    start = datetime(2026, 1, 1, 10, 0, tzinfo=UTC)
    agent_end = start + timedelta(minutes=50, seconds=7)
    verifier_end = start + timedelta(minutes=58, seconds=41)
    local = agent_end + timedelta(hours=-3, milliseconds=4)  # UTC−3, just after the agent
    offset = hb._local_offset(
        local,
        [start + timedelta(minutes=1), agent_end, verifier_end],
        (start, start + timedelta(hours=1)),
    )
    assert offset == timedelta(hours=-3)
    # nothing near a phase's end and no span: not told (the caller falls back)
    assert hb._local_offset(local, [start], (None, None)) is None
