"""METR runs (METR/eval-analysis-public ``data/external/all_runs.jsonl``): one run per line.

- the agent is ``alias``; the ``human`` baseline runs are dropped unless ``include_humans``.
- ``score`` = ``score_binarized`` (0/1, METR's own success threshold per task — what its
  time-horizon analysis uses), or the raw ``score`` in [0, 1] with ``score="raw"``.
- ``status`` from ``fatal_error_from``, Vivaria's ErrorSource: null → ``ok``;
  ``usageLimits`` (the run used up its own token/time/action budget) and ``agent`` →
  ``agent_error``; ``server``, ``task``, ``serverOrTask`` and ``user`` (killed by a person)
  → ``infra_error``. METR scores runs that hit their usage limits, and so do we: the score
  is kept whatever the status. In ``all_runs.jsonl`` the only value is ``usageLimits``.
- ``started_at``/``ended_at`` from ``started_at``/``completed_at`` (ms since the epoch);
  the human baselines store ``started_at = 0`` and ``completed_at`` = the duration, so they
  get no timestamps, only ``duration_s``.
"""

from __future__ import annotations

import json
from pathlib import Path

from evalnoise.errors import InputError
from evalnoise.importers._trial_records import (
    Trial,
    Where,
    check_score,
    expand_paths,
    from_epoch_ms,
    natural_key,
    require,
)
from evalnoise.trial_table import read_text_utf8

FORMAT = "metr"
OPTIONS = ("include_humans", "score")
PATTERNS = ("*.jsonl",)
HUMAN = "human"

#: Vivaria's ``ErrorSource`` → TRIALS status.
STATUS_OF_ERROR_SOURCE = {
    "usageLimits": "agent_error",
    "agent": "agent_error",
    "server": "infra_error",
    "task": "infra_error",
    "serverOrTask": "infra_error",
    "user": "infra_error",
}

SCORE_COLUMNS = {"binarized": "score_binarized", "raw": "score"}


def _rules(score: str, include_humans: bool) -> dict[str, str]:
    return {
        "rule": (
            "within (agent, task_id), runs are numbered from 0 in the order of (started_at, "
            "then run_id in natural sort order — digit runs compared as numbers)"
        ),
        "agent_rule": "alias; the human baseline runs (alias 'human') are "
        + ("kept" if include_humans else "dropped"),
        "score_rule": f"score = {SCORE_COLUMNS[score]}"
        + (" (METR's per-task success threshold)" if score == "binarized" else ""),
        "status_rule": "fatal_error_from: null → ok; usageLimits, agent → agent_error; "
        "server, task, serverOrTask, user → infra_error; the score is kept in every case",
    }


def read(
    paths: list[str | Path], *, include_humans: bool = False, score: str = "binarized"
) -> tuple[list[Trial], dict]:
    if score not in SCORE_COLUMNS:
        raise InputError(f"score must be one of {', '.join(SCORE_COLUMNS)}, got {score!r}")
    score_column = SCORE_COLUMNS[score]
    files = expand_paths(paths, PATTERNS, "METR runs .jsonl files")
    trials: list[Trial] = []
    dropped_humans = 0
    error_sources: dict[str, int] = {}
    for path in files:
        try:
            text = read_text_utf8(path)  # a bad byte is named by its line and offset
        except OSError as exc:
            raise InputError(f"cannot be read: {exc.strerror or exc}", path=str(path)) from exc
        for lineno, line in enumerate(text.split("\n"), start=1):
            if not line.strip():
                continue
            where = Where(str(path), lineno)  # row = the line number
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as exc:
                raise where.error(f"not valid JSON: {exc.msg}") from exc
            alias = require(rec, "alias", where, str, "an agent alias string")
            if alias == HUMAN and not include_humans:
                dropped_humans += 1
                continue
            task = require(rec, "task_id", where, str, "a task id string")
            run_id = require(rec, "run_id", where, (str, int), "a run id")
            value = require(rec, score_column, where, (int, float), "a number in [0, 1]")
            y = check_score(value, where, score_column)
            if score == "binarized" and y not in (0.0, 1.0):
                raise where.error(f"expected 0 or 1, got {value!r}", score_column)
            started = require(rec, "started_at", where, int, "milliseconds since the epoch")
            completed = require(rec, "completed_at", where, int, "milliseconds since the epoch")
            if completed < started:
                raise where.error(
                    f"completed_at {completed} is before started_at {started}", "completed_at"
                )
            source = rec.get("fatal_error_from")
            if source is None:
                status = "ok"
            elif source in STATUS_OF_ERROR_SOURCE:
                status = STATUS_OF_ERROR_SOURCE[source]
                error_sources[source] = error_sources.get(source, 0) + 1
            else:
                raise where.error(
                    f"unknown fatal_error_from {source!r} (known: "
                    f"{', '.join(STATUS_OF_ERROR_SOURCE)})",
                    "fatal_error_from",
                )
            real_clock = started > 0
            trials.append(
                Trial(
                    agent=alias,
                    task_id=task,
                    order=(started, natural_key(str(run_id))),
                    where=where,
                    status=status,
                    score=y,
                    error=source,
                    started_at=from_epoch_ms(started) if real_clock else None,
                    ended_at=from_epoch_ms(completed) if real_clock else None,
                    duration_s=(completed - started) / 1000.0,
                )
            )
    extra = {
        "files": len(files),
        "dropped_human_runs": dropped_humans,
        "fatal_error_from": dict(sorted(error_sources.items())),
    }
    return trials, {
        "rules": _rules(score, include_humans),
        "counts": extra,
        "sources": [str(f) for f in files],
    }
