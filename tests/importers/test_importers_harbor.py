"""Harbor job folders → TRIALS, on real Harbor 0.25 job excerpts (tests/data/harbor/jobs,
README.md there) and on copies of them changed the ways Harbor's TrialResult model allows."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from evalnoise.errors import InputError
from evalnoise.importers import harbor_jobs as hb
from evalnoise.importers import import_trials, read_metadata
from evalnoise.schema import STATUSES, TRIALS

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def jobs(data_dir: Path) -> Path:
    return data_dir / "harbor" / "jobs"


@pytest.fixture
def job_copy(jobs: Path, tmp_path: Path) -> Path:
    """A writable copy of the oracle job."""
    return Path(shutil.copytree(jobs / "oracle", tmp_path / "oracle"))


def _trial_files(job: Path) -> list[Path]:
    return sorted(job.glob("*/result.json"))


def _edit(path: Path, change) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def _ts(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _rows(result) -> dict[str, dict]:
    return {r["trial_name"]: r for r in result.table.to_pylist()}


# --- the real job excerpts ------------------------------------------------------------------


def test_excerpts_import_with_the_trials_schema_and_extra_columns(jobs: Path) -> None:
    result = import_trials("harbor", [jobs])
    t = result.table
    assert t.schema.names[: len(TRIALS)] == TRIALS.names
    assert t.schema.remove_metadata().field("score") == TRIALS.field("score")
    assert set(t.schema.names[len(TRIALS) :]) == set(hb.EXTRA_TYPES)
    assert t.num_rows == 9
    meta = result.metadata
    assert meta["format"] == "harbor"
    assert meta["counts"]["reward"] == "reward"
    assert meta["counts"]["exception_types"] == {
        "AgentTimeoutError": 2,
        "RewardFileNotFoundError": 3,
    }
    assert [j["trials_read"] for j in meta["counts"]["jobs"]] == [3, 6]
    assert meta["rule"] == hb.RULES["rule"]


def test_every_trial_matches_its_result_json(jobs: Path) -> None:
    """Each row against the raw file, field by field, by the documented mapping."""
    rows = _rows(import_trials("harbor", [jobs]))
    files = _trial_files(jobs / "oracle") + _trial_files(jobs / "nop")
    assert len(rows) == len(files)
    for path in files:
        raw = json.loads(path.read_text())
        row = rows[raw["trial_name"]]
        assert row["task_id"] == raw["task_name"]
        assert row["agent"] == raw["agent_info"]["name"]  # no model named: the agent alone
        assert row["job"] == path.parent.parent.name
        rewards = (raw["verifier_result"] or {}).get("rewards")
        exc = raw["exception_info"]
        if rewards:
            assert row["score"] == rewards["reward"]
            assert json.loads(row["rewards"]) == rewards
        else:
            assert row["score"] is None and row["rewards"] is None
        if exc is None:
            assert row["status"] == "ok" and row["error"] is None
            assert row["verified_after"] is None
        else:
            assert row["error"] == exc["exception_type"]
            mapped = hb.STATUS_OF_EXCEPTION[exc["exception_type"]]
            if rewards and mapped in ("timeout", "agent_error"):
                # the verifier's verdict after the agent failed decides; the failure a flag
                assert (row["status"], row["verified_after"]) == ("ok", mapped)
            else:
                assert (row["status"], row["verified_after"]) == (mapped, None)
            assert row["exception_message"] == exc["exception_message"]
        start, end = _ts(raw["started_at"]), _ts(raw["finished_at"])
        assert row["started_at"] == start and row["ended_at"] == end
        assert row["duration_s"] == pytest.approx((end - start).total_seconds())
        for phase in hb.PHASES:
            timing = raw[phase]
            expected = (_ts(timing["finished_at"]) - _ts(timing["started_at"])).total_seconds()
            assert row[f"{phase}_s"] == pytest.approx(expected)
        # the oracle and nop report no usage: null, not 0
        assert row["prompt_tokens"] is None and row["cost_usd"] is None


def test_outcomes_of_the_three_fixture_tasks(jobs: Path) -> None:
    """What the fixture tasks were built to produce, as evalnoise reads it."""
    by = {
        (r["agent"], r["task_id"], r["trial"]): r
        for r in import_trials("harbor", [jobs]).table.to_pylist()
    }
    for trial in (0, 1):
        greet = by[("oracle", "evalnoise/greet", trial)]
        assert (greet["status"], greet["score"]) == ("ok", 1.0)
        # the oracle's solve.sh sleeps past the agent's 5 s: a timeout, and the verifier
        # still found its work — its verdict scores the trial (as Harbor's mean does), the
        # timeout stays a flag
        late = by[("oracle", "evalnoise/agent-timeout", trial)]
        assert (late["status"], late["score"], late["error"], late["verified_after"]) == (
            "ok",
            1.0,
            "AgentTimeoutError",
            "timeout",
        )
        assert late["error_phase"] == "agent_execution"
        broken = by[("oracle", "evalnoise/no-reward", trial)]
        assert broken["status"] == hb.VERIFIER_ERROR == "verifier_error"
        assert broken["score"] is None  # never a 0
        assert broken["error"] == "RewardFileNotFoundError" and broken["error_phase"] == "verifier"
    assert by[("nop", "evalnoise/greet", 0)]["score"] == 0.0
    assert by[("nop", "evalnoise/agent-timeout", 0)]["status"] == "ok"
    assert by[("nop", "evalnoise/no-reward", 0)]["score"] is None


def test_trials_are_numbered_by_start_time(jobs: Path) -> None:
    table = import_trials("harbor", [jobs / "oracle"]).table.to_pylist()
    for task in {r["task_id"] for r in table}:
        mine = sorted((r for r in table if r["task_id"] == task), key=lambda r: r["trial"])
        assert [r["trial"] for r in mine] == [0, 1]
        assert mine[0]["started_at"] < mine[1]["started_at"]


def test_the_same_import_from_a_trial_folder_a_file_and_a_parent(jobs: Path) -> None:
    trial = _trial_files(jobs / "oracle")[0]
    a = import_trials("harbor", [trial.parent]).table
    b = import_trials("harbor", [trial]).table
    assert a.num_rows == b.num_rows == 1
    assert a.drop(["job"]).equals(b.drop(["job"]))
    whole = import_trials("harbor", [jobs]).table
    parts = import_trials("harbor", [jobs / "nop", jobs / "oracle"]).table
    assert whole.equals(parts)


def test_named_reward_option(jobs: Path) -> None:
    greet = sorted(jobs.glob("*/greet__*/result.json"))
    assert len(greet) == 3
    rows = import_trials("harbor", greet, reward="file_exists").table.to_pylist()
    expected = {
        json.loads(p.read_text())["trial_name"]: json.loads(p.read_text())["verifier_result"][
            "rewards"
        ]["file_exists"]
        for p in greet
    }
    assert {r["trial_name"]: r["score"] for r in rows} == expected
    # a trial with rewards but not the one asked for is an error, not a silent null
    with pytest.raises(
        InputError, match=r"no reward named 'file_exists' \(this trial has: reward\)"
    ):
        import_trials("harbor", [jobs], reward="file_exists")


def test_agent_option_and_agent_with_model(job_copy: Path) -> None:
    rows = import_trials("harbor", [job_copy], agent="mine").table.to_pylist()
    assert {r["agent"] for r in rows} == {"mine"}
    for path in _trial_files(job_copy):
        _edit(
            path,
            lambda d: d["agent_info"].update(
                name="terminus-2", model_info={"name": "claude-x", "provider": "anthropic"}
            ),
        )
    rows = import_trials("harbor", [job_copy]).table.to_pylist()
    assert {r["agent"] for r in rows} == {"terminus-2__claude-x"}
    assert {r["model"] for r in rows} == {"anthropic/claude-x"}


# --- the exception table --------------------------------------------------------------------


def test_the_table_uses_only_trial_statuses_and_verifier_errors_share_one_switch() -> None:
    assert set(hb.STATUS_OF_EXCEPTION.values()) <= set(STATUSES)
    assert set(hb.STATUS_OF_PHASE.values()) <= set(STATUSES)
    verifier = [s for s, why, _ in hb._GROUPS if "verifier timed out" in why]
    assert verifier == [hb.VERIFIER_ERROR]
    for name in (
        "VerifierTimeoutError",
        "RewardFileNotFoundError",
        "RewardFileEmptyError",
        "VerifierOutputParseError",
    ):
        assert hb.STATUS_OF_EXCEPTION[name] is hb.VERIFIER_ERROR
    assert hb.STATUS_OF_PHASE["verifier"] is hb.VERIFIER_ERROR
    names = [n for _, _, group in hb._GROUPS for n in group]
    assert len(names) == len(set(names)), "a name in two groups"


def test_every_exception_harbor_defines_is_mapped_consistently_with_its_policy() -> None:
    """Against the installed Harbor: every exception class in its source and every name in
    its error policy has a status here, and the status agrees with Harbor's cause."""
    from harbor_tools import harbor_exception_types, harbor_missing
    from model_stack import require

    require(harbor_missing() is None, str(harbor_missing()))
    types = harbor_exception_types()
    assert len(types) > 80  # Harbor 0.25: 71 classes + 15 names only its policy lists
    unmapped = sorted(set(types) - set(hb.STATUS_OF_EXCEPTION))
    assert not unmapped, f"Harbor exception types with no status: {unmapped}"
    allowed = {
        "verifier_failed": {hb.VERIFIER_ERROR},
        "sandbox_failed": {"infra_error", "oom_killed"},
        "harbor_failed": {"infra_error"},
        "cancelled": {"infra_error"},
        "agent_exhausted_budget": {"timeout", "agent_error"},
        "agent_refused_task": {"agent_error"},
        "unclassified": {"agent_error"},
        "model_provider_failed": {"infra_error", "agent_error"},
        # defined by Harbor, not in its policy table: Harbor calls them unclassified
        None: {"infra_error", "agent_error"},
    }
    for name, info in types.items():
        assert hb.STATUS_OF_EXCEPTION[name] in allowed[info["cause"]], (name, info)
    assert hb.STATUS_OF_EXCEPTION["AgentTimeoutError"] == "timeout"


@pytest.mark.parametrize(
    ("phase", "status"),
    [
        ("environment_setup", "infra_error"),
        ("agent_setup", "infra_error"),
        ("agent_execution", "agent_error"),
        ("verifier", hb.VERIFIER_ERROR),
    ],
)
def test_an_unknown_exception_takes_the_status_of_its_phase(
    job_copy: Path, phase: str, status: str
) -> None:
    path = next(p for p in _trial_files(job_copy) if "greet" in p.parent.name)

    def change(d: dict) -> None:
        finished = d[phase]["finished_at"]  # Harbor records just after the phase's clock stops
        d["exception_info"] = {
            "exception_type": "RuntimeError",
            "exception_message": "Docker compose command failed",
            "exception_traceback": "",
            "occurred_at": finished,
        }

    _edit(path, change)
    result = import_trials("harbor", [path])
    row = result.table.to_pylist()[0]
    assert (row["error"], row["error_phase"]) == ("RuntimeError", phase)
    if status == "agent_error":
        # the verifier ran after the agent's failure and left its verdict: it decides
        assert (row["status"], row["verified_after"]) == ("ok", "agent_error")
    else:
        assert (row["status"], row["verified_after"]) == (status, None)
    assert row["score"] == 1.0  # the verifier's reward stays; the status flags the trial
    assert result.metadata["counts"]["unclassified_exception_types"] == {"RuntimeError": 1}


def test_old_harbor_local_occurred_at_beside_utc_phase_times(job_copy: Path) -> None:
    """Harbor 0.9 and before wrote occurred_at as naive local time (datetime.now()) and the phase
    times in UTC: on a machine 5 h behind UTC the naive stamp lies before every phase. The
    phase is then the last one that started (the exception ended the trial there)."""
    path = _greet(job_copy)

    def change(d: dict) -> None:
        local = _ts(d["agent_execution"]["finished_at"]) - timedelta(hours=5)
        d["verifier"] = None
        d["verifier_result"] = None
        d["exception_info"] = {
            "exception_type": "KeyError",
            "exception_message": "'choices'",
            "exception_traceback": "",
            "occurred_at": local.replace(tzinfo=None).isoformat(),
        }

    _edit(path, change)
    row = import_trials("harbor", [path]).table.to_pylist()[0]
    assert (row["status"], row["error_phase"], row["score"]) == (
        "agent_error",
        "agent_execution",
        None,
    )


def test_all_naive_timestamps_compare_with_each_other(job_copy: Path) -> None:
    """Harbor 0.1.2 wrote every time naive: they are comparable among themselves."""
    path = _greet(job_copy)

    def naive(text: str) -> str:
        return _ts(text).replace(tzinfo=None).isoformat()

    def change(d: dict) -> None:
        for key in ("started_at", "finished_at"):
            d[key] = naive(d[key])
        for phase in hb.PHASES:
            d[phase] = {k: naive(v) for k, v in d[phase].items()}
        d["exception_info"] = {
            "exception_type": "OSError",
            "exception_message": "disk full",
            "exception_traceback": "",
            "occurred_at": d["environment_setup"]["finished_at"],
        }

    _edit(path, change)
    row = import_trials("harbor", [path]).table.to_pylist()[0]
    assert (row["status"], row["error_phase"]) == ("infra_error", "environment_setup")


def test_an_exception_before_any_phase_is_infra(job_copy: Path) -> None:
    path = _trial_files(job_copy)[0]

    def change(d: dict) -> None:
        for phase in hb.PHASES:
            d[phase] = None
        d["verifier_result"] = None
        d["exception_info"] = {
            "exception_type": "ValueError",
            "exception_message": "bad task",
            "exception_traceback": "",
            "occurred_at": d["started_at"],
        }

    _edit(path, change)
    row = import_trials("harbor", [path]).table.to_pylist()[0]
    assert (row["status"], row["error_phase"], row["score"]) == ("infra_error", None, None)


def test_multi_step_trial_first_exception_and_summed_usage(job_copy: Path) -> None:
    path = _greet(job_copy)

    def change(d: dict) -> None:
        d["agent_result"] = None
        step = {
            "step_name": "s",
            "verifier_result": None,
            "agent_execution": d["agent_execution"],
            "verifier": d["verifier"],
        }
        d["step_results"] = [
            {
                **step,
                "agent_result": {
                    "n_input_tokens": 100,
                    "n_cache_tokens": 40,
                    "n_output_tokens": 7,
                    "cost_usd": 0.25,
                },
                "exception_info": None,
            },
            {
                **step,
                "agent_result": {"n_input_tokens": 50, "n_output_tokens": 3, "cost_usd": None},
                "exception_info": {
                    "exception_type": "ContextWindowExceededError",
                    "exception_message": "too long",
                    "exception_traceback": "",
                    "occurred_at": d["agent_execution"]["finished_at"],
                },
            },
        ]

    _edit(path, change)
    row = import_trials("harbor", [path]).table.to_pylist()[0]
    assert (row["prompt_tokens"], row["cache_tokens"], row["completion_tokens"]) == (150, 40, 10)
    assert row["cost_usd"] == 0.25
    assert row["error"] == "ContextWindowExceededError"
    # the trial's verifier left its rewards after the step's agent failed: they decide
    assert (row["status"], row["verified_after"]) == ("ok", "agent_error")


# --- how the folders are found --------------------------------------------------------------


def test_unfinished_trials_are_counted_not_imported(job_copy: Path) -> None:
    running = job_copy / "greet__Running"
    running.mkdir()
    (running / "config.json").write_text(json.dumps({"trial_name": "greet__Running", "task": {}}))
    result = import_trials("harbor", [job_copy])
    assert result.table.num_rows == 6
    assert result.metadata["counts"]["unfinished_trials"] == 1
    for path in _trial_files(job_copy):
        path.unlink()
    with pytest.raises(InputError, match="only unfinished trials"):
        import_trials("harbor", [job_copy])


def test_trial_results_embedded_in_the_job_result_when_no_trial_folder(
    job_copy: Path, tmp_path: Path
) -> None:
    records = [json.loads(p.read_text()) for p in _trial_files(job_copy)]
    only = tmp_path / "only-job-result"
    only.mkdir()
    job = json.loads((job_copy / "result.json").read_text())
    job["trial_results"] = records
    (only / "result.json").write_text(json.dumps(job))
    embedded = import_trials("harbor", [only]).table
    folders = import_trials("harbor", [job_copy]).table
    assert embedded.drop(["job"]).equals(folders.drop(["job"]))


def test_a_copied_trial_folder_is_refused(job_copy: Path) -> None:
    trial = _trial_files(job_copy)[0].parent
    shutil.copytree(trial, job_copy / "copy-of-trial")
    with pytest.raises(InputError, match=r"the same trial \(id .*\) is also in"):
        import_trials("harbor", [job_copy])


def test_the_same_folder_twice_is_refused(jobs: Path) -> None:
    with pytest.raises(InputError, match="given twice"):
        import_trials("harbor", [jobs / "oracle", jobs])


# --- bad input: one line naming the file and the field --------------------------------------


def _greet(job: Path) -> Path:
    return next(p for p in _trial_files(job) if "greet" in p.parent.name)


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        (lambda d: d.pop("task_name"), None, "neither a Harbor trial result"),
        (lambda d: d.update(task_name=""), "task_name", "expected a non-empty string"),
        (lambda d: d.update(agent_info=None), "agent_info", "field is missing"),
        (lambda d: d["agent_info"].pop("name"), "agent_info.name", "field is missing"),
        (lambda d: d.update(started_at="yesterday"), "started_at", "not an ISO-8601"),
        (
            lambda d: d["verifier_result"].update(rewards=[1]),
            "verifier_result.rewards",
            "expected an object of named numbers",
        ),
        (
            lambda d: d["verifier_result"]["rewards"].update(reward="1"),
            "verifier_result.rewards",
            "is not a number",
        ),
        (
            lambda d: d["verifier_result"]["rewards"].update(reward=1.5),
            "verifier_result.rewards.reward",
            "outside [0, 1]",
        ),
        (
            lambda d: d.update(exception_info={"exception_message": "x"}),
            "exception_info.exception_type",
            "field is missing",
        ),
        (
            lambda d: d["agent_result"].update(n_input_tokens=-3),
            "agent_result.n_input_tokens",
            "non-negative integer",
        ),
        (
            lambda d: d.update(finished_at="2000-01-01T00:00:00Z"),
            "finished_at",
            "before started_at",
        ),
    ],
)
def test_bad_fields_name_file_and_field(job_copy: Path, change, field, message) -> None:
    path = _greet(job_copy)
    _edit(path, change)
    with pytest.raises(InputError) as err:
        import_trials("harbor", [job_copy])
    text = str(err.value)
    assert "\n" not in text
    assert str(path) in text and message in text
    if field is not None:
        assert f"column {field!r}" in text


def test_not_json_and_a_stranger_result(job_copy: Path, tmp_path: Path) -> None:
    path = _greet(job_copy)
    path.write_text("{ not json")
    with pytest.raises(InputError, match=r"result.json: not valid JSON"):
        import_trials("harbor", [job_copy])
    other = tmp_path / "other"
    other.mkdir()
    (other / "result.json").write_text(json.dumps({"accuracy": 1}))
    with pytest.raises(InputError, match="neither a Harbor trial result"):
        import_trials("harbor", [other])
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(InputError, match=r"no Harbor trial result\.json found"):
        import_trials("harbor", [empty])


def test_rewards_without_a_common_name_need_the_option(job_copy: Path) -> None:
    files = _trial_files(job_copy)
    _edit(files[0], lambda d: d.update(verifier_result={"rewards": {"a": 1.0, "b": 0.0}}))
    _edit(files[1], lambda d: d.update(verifier_result={"rewards": {"a": 0.5}}))
    with pytest.raises(InputError, match="choose the one that scores with --reward"):
        import_trials("harbor", [job_copy])
    rows = import_trials("harbor", [files[0], files[1]], reward="a").table.to_pylist()
    assert sorted(r["score"] for r in rows) == [0.5, 1.0]
    # one name used by every trial with rewards: it scores without the option
    _edit(files[0], lambda d: d.update(verifier_result={"rewards": {"a": 1.0}}))
    rows = import_trials("harbor", [files[0], files[1]]).table.to_pylist()
    assert sorted(r["score"] for r in rows) == [0.5, 1.0]


# --- the command line -----------------------------------------------------------------------


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env_path = str(REPO / "src")
    return subprocess.run(
        [sys.executable, "-m", "evalnoise", "import", "harbor", *args],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": env_path, "PATH": "/usr/bin:/bin"},
        timeout=120,
    )


def test_cli_writes_parquet_with_roles_and_refuses_bad_input(
    jobs: Path, job_copy: Path, tmp_path: Path
) -> None:
    out = tmp_path / "h.parquet"
    proc = _cli(str(jobs), "-o", str(out), "--reward", "reward")
    assert proc.returncode == 0, proc.stderr
    assert "wrote 9 trials (2 agents, 3 tasks)" in proc.stdout
    meta = read_metadata(out)
    assert meta["format"] == "harbor" and meta["columns"]["task"] == "task_id"
    assert meta["options"] == {"reward": "reward"}
    assert pq.read_table(out).num_rows == 9
    _edit(_greet(job_copy), lambda d: d.pop("trial_name"))
    bad_out = tmp_path / "bad.parquet"
    proc = _cli(str(job_copy), "-o", str(bad_out))
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "result.json" in lines[0], proc.stderr
    assert not bad_out.exists()
