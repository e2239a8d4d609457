"""Terminal-Bench ``results.json`` (terminal_bench's ``BenchmarkResults``).

Layout of a leaderboard submission (laude-institute/terminal-bench-leaderboard): a folder
``<YYYYMMDD>_<agent>_<model>`` holding either one run folder per run, each with a
``results.json`` of one trial per task (``<task>.1-of-1[.<run>]``); or several
``<prefix>_results.json`` files side by side, one per run; or a single ``results.json`` with
every attempt (``<task>.<i>-of-<n>``, n > 1).

Mapping, per trial record:

- ``score`` = 1 if ``is_resolved`` is true, else 0 (null counts as unresolved, as the
  leaderboard does).
- ``status`` from ``failure_mode``: see :data:`STATUS_OF_FAILURE_MODE`; the source's own
  ``failure_mode`` is kept in ``error`` when it is not ``unset``/``none``. A trial whose
  agent failed (``agent_timeout`` or an agent error) but whose tests then ran and gave a
  verdict (``is_resolved`` true or false) is decided by it, as the leaderboard counts it: a
  resolved trial is resolved. Its status is ``ok`` and the agent's failure is kept in
  ``verified_after`` (:mod:`evalnoise.verified_after`).
- ``started_at``/``ended_at``/``duration_s`` from ``trial_started_at``/``trial_ended_at``
  when present (the single-file submissions carry none).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from evalnoise.errors import InputError
from evalnoise.importers._trial_records import (
    Trial,
    Where,
    expand_paths,
    load_json,
    parse_timestamp,
    path_key,
    require,
)
from evalnoise.schema import VERIFIED_AFTER

FORMAT = "terminal-bench"
OPTIONS = ("agent",)
PATTERNS = ("results.json", "*_results.json")

#: terminal_bench.agents.failure_mode.FailureMode values → TRIALS status. Timeouts of the
#: agent or of the tests are ``timeout``; a failed agent install is the infrastructure's;
#: the rest (the harness could not parse the test output, the agent crashed or overflowed
#: its context) are the agent's.
STATUS_OF_FAILURE_MODE = {
    "unset": "ok",
    "none": "ok",
    "agent_timeout": "timeout",
    "test_timeout": "timeout",
    "agent_installation_failed": "infra_error",
    "parse_error": "agent_error",
    "unknown_agent_error": "agent_error",
    "fatal_llm_parse_error": "agent_error",
    "context_length_exceeded": "agent_error",
    "output_length_exceeded": "agent_error",
    "unknown": "agent_error",
}

RULES = {
    "rule": (
        "within (agent, task_id), trials are numbered from 0 in the order of (the results "
        "file's path relative to the submission folder, in natural sort order — digit runs "
        "compared as numbers — then the attempt number <i> of the trial name "
        "<task>.<i>-of-<n>)"
    ),
    "agent_rule": (
        "the --agent option if given; else the submission folder: the parent of a run folder "
        "for a results.json whose trials are all <i>-of-1 (one run), else the folder holding "
        "the results file (a single file with all attempts, or <prefix>_results.json files "
        "side by side)"
    ),
    "score_rule": "1 if is_resolved is true, else 0 (null counts as unresolved, as the "
    "leaderboard does)",
    "status_rule": "failure_mode: unset/none → ok; agent_timeout/test_timeout → timeout; "
    "agent_installation_failed → infra_error; parse_error, unknown_agent_error, "
    "fatal_llm_parse_error, context_length_exceeded, output_length_exceeded, unknown → "
    "agent_error; the source value is kept in `error`. An agent timeout or agent error "
    "whose tests gave a verdict (is_resolved true or false) → ok, the failure kept in "
    "`verified_after` (the leaderboard counts such a trial by its verdict)",
}

_ATTEMPT = re.compile(r"^(?P<i>\d+)-of-(?P<n>\d+)(?:\.(?P<run>.+))?$")


def _parse_trial_name(name: str, task_id: str, where: Where) -> tuple[int, int]:
    prefix = task_id + "."
    if not name.startswith(prefix):
        raise where.error(
            f"trial_name {name!r} does not start with the task_id {task_id!r}", "trial_name"
        )
    m = _ATTEMPT.match(name[len(prefix) :])
    if not m:
        raise where.error(f"trial_name {name!r} is not <task>.<i>-of-<n>[.<run>]", "trial_name")
    i, n = int(m["i"]), int(m["n"])
    if not 1 <= i <= n:
        raise where.error(f"trial_name {name!r}: attempt {i} is not in 1..{n}", "trial_name")
    return i, n


def _read_file(path: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    data = load_json(path)
    where = Where(str(path))
    if not isinstance(data, dict):
        raise where.error(f"expected a BenchmarkResults JSON object, got {type(data).__name__}")
    results = require(data, "results", where, list, "a list of trial results")
    return results, data


def _submission_of(path: Path, attempts: list[int]) -> Path:
    """The submission folder of one results file (see RULES['agent_rule'])."""
    path = path.resolve()
    if path.name == "results.json" and attempts and max(attempts) == 1:
        return path.parent.parent
    return path.parent


def read(paths: list[str | Path], *, agent: str | None = None) -> tuple[list[Trial], dict]:
    files = expand_paths(paths, PATTERNS, "Terminal-Bench results.json files")
    trials: list[Trial] = []
    submissions: dict[str, str] = {}
    per_file: list[dict[str, Any]] = []
    parsed: list[tuple[Path, list[tuple[Trial, int]], Path]] = []
    for path in files:
        results, data = _read_file(path)
        file_trials: list[tuple[Trial, int]] = []
        ns: list[int] = []
        for k, rec in enumerate(results):
            where = Where(str(path), k + 1, f"results[{k}]")
            task_id = require(rec, "task_id", where, str, "a task id string")
            name = require(rec, "trial_name", where, str, "a trial name string")
            i, n = _parse_trial_name(name, task_id, where)
            ns.append(n)
            if "is_resolved" not in rec:
                raise where.error("field is missing", "is_resolved")
            resolved = rec["is_resolved"]
            if resolved is not None and not isinstance(resolved, bool):
                raise where.error(f"expected true, false or null, got {resolved!r}", "is_resolved")
            mode = require(rec, "failure_mode", where, str, "a failure mode string")
            if mode not in STATUS_OF_FAILURE_MODE:
                raise where.error(
                    f"unknown failure_mode {mode!r} (known: {', '.join(STATUS_OF_FAILURE_MODE)})",
                    "failure_mode",
                )
            status = STATUS_OF_FAILURE_MODE[mode]
            verified_after = None
            if resolved is not None and mode != "test_timeout" and status in VERIFIED_AFTER:
                # the tests ran after the agent failed and gave their verdict
                status, verified_after = "ok", status
            started = parse_timestamp(rec.get("trial_started_at"), where, "trial_started_at")
            ended = parse_timestamp(rec.get("trial_ended_at"), where, "trial_ended_at")
            duration = (ended - started).total_seconds() if started and ended else None
            t = Trial(
                agent="",
                task_id=task_id,
                order=(),
                where=where,
                status=status,
                score=1.0 if resolved is True else 0.0,
                error=None if mode in ("unset", "none") else mode,
                started_at=started,
                ended_at=ended,
                duration_s=duration,
                extra={"verified_after": verified_after},
            )
            file_trials.append((t, i))
        submission = _submission_of(path, ns)
        parsed.append((path, file_trials, submission))
        per_file.append(
            {
                "path": str(path),
                "trials": len(results),
                "accuracy": data.get("accuracy"),
                "n_resolved": data.get("n_resolved"),
            }
        )

    distinct = sorted({str(s) for _, _, s in parsed})
    if agent is not None and len(distinct) > 1:
        raise InputError(
            f"--agent names one agent, but the files belong to {len(distinct)} submission "
            f"folders ({', '.join(distinct)}); import them separately or drop --agent"
        )
    for path, file_trials, submission in parsed:
        name = agent if agent is not None else submission.name
        submissions[str(path)] = name
        run_key = path_key(path.resolve().relative_to(submission))
        for t, i in file_trials:
            t.agent = name
            t.order = (run_key, i)
            trials.append(t)
    extra = {"files": len(files), "per_file": per_file, "agent_of_file": submissions}
    return trials, {"rules": RULES, "counts": extra, "sources": [str(f) for f in files]}
