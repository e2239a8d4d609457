"""Failures that belong to a task, not to a trial: named once, where people look.

A task whose image does not build makes every one of its trials ``infra_error`` with the
same error (the reason, then the build log's tail: :meth:`evalnoise.runner.task_images.
TaskImage.failure_text`); a missing image, an unset variable of the task's env or a task
folder that changed do the same. Counted as outcomes they read "2 infra_error" and name
nothing. :func:`task_failures` finds them in a trial table — every final attempt of a task
``infra_error`` with one and the same error — and returns one :class:`TaskFailure` per task:
the task, the phase (``build`` for an image that did not build), how many trials, the
reason and the last lines of the build log. It also returns one record per task whose
trials were flagged ``environment_tampered`` (:mod:`evalnoise.runner.verifier_integrity`),
naming what the agent changed. :func:`failure_lines` words them, one line per task, for the
console, the check rule's message, ``summary.txt`` and the report.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

import pandas as pd

from evalnoise.outcomes import final_attempts
from evalnoise.schema import TRIAL_KEY

__all__ = ["FAILURE_COLUMNS", "LOG_MARKER", "TaskFailure", "failure_lines", "task_failures"]

#: the trial columns :func:`task_failures` reads (those a table has)
FAILURE_COLUMNS = (
    *TRIAL_KEY,
    "attempt",
    "status",
    "error",
    "phase",
    "environment_tampered",
)
#: what separates a failed build's reason from its log's tail in a trial's ``error``
LOG_MARKER = "--- build log (tail) ---"
#: lines of the build log kept in a record
TAIL_LINES = 3
_LINE_CHARS = 200


@dataclass(frozen=True)
class TaskFailure:
    """A failure shared by every trial of a task (``kind`` ``build`` or ``infra_error``),
    or the trials of a task flagged ``environment_tampered`` (``kind`` of that name).

    ``trials`` of the task's ``of`` final attempts have it; ``reason`` is the error's first
    part (for a build: why it failed; for tampering: what the agent changed, distinct
    findings joined); ``log_tail`` the build log's last non-empty lines (else empty)."""

    task_id: str
    kind: str
    trials: int
    of: int
    reason: str
    log_tail: tuple[str, ...] = ()

    def line(self) -> str:
        """``task t: image build failed in all 4 trials: <reason> | <log line> | ...``"""
        if self.kind == "environment_tampered":
            head = f"task {self.task_id}: the agent changed what the verifier executes in "
            head += f"{self.trials} of {self.of} trials: {self.reason}"
            return head
        what = "image build failed" if self.kind == "build" else "infra_error"
        text = f"task {self.task_id}: {what} in all {self.trials} trials: {self.reason}"
        if self.log_tail:
            text += " | log: " + " | ".join(self.log_tail)
        return text

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["log_tail"] = list(self.log_tail)
        return out


def _split(error: str, tail_lines: int) -> tuple[str, tuple[str, ...]]:
    reason, _, log = error.partition(LOG_MARKER)
    lines = [ln.strip()[:_LINE_CHARS] for ln in log.splitlines() if ln.strip()]
    return " ".join(reason.split())[:500], tuple(lines[-tail_lines:]) if tail_lines else ()


def task_failures(trials: pd.DataFrame, *, tail_lines: int = TAIL_LINES) -> list[TaskFailure]:
    """The task-level failures of a trial table (module docstring), sorted by task and kind.

    Needs ``task_id`` and ``status``; uses ``error``, ``phase`` and
    ``environment_tampered`` when present, and only the final attempt of every trial
    (:func:`evalnoise.outcomes.final_attempts`). A task some of whose trials did not end
    ``infra_error``, or ended it with different errors, has no shared failure: its trials
    are counted as outcomes, as any other.
    """
    if not len(trials) or "task_id" not in trials.columns:
        return []
    last = final_attempts(trials)
    columns = ["task_id", "status"] + [
        c for c in ("error", "phase", "environment_tampered") if c in last.columns
    ]
    frame = last[columns].copy()
    frame["task_id"] = frame["task_id"].astype(str)
    out: list[TaskFailure] = []
    for task_id, rows in frame.groupby("task_id", sort=True):
        n = len(rows)
        errors = rows["error"] if "error" in rows else pd.Series([None] * n)
        if (rows["status"] == "infra_error").all() and errors.notna().all():
            distinct = set(errors.astype(str))
            if len(distinct) == 1:
                phases = set(rows["phase"].dropna().astype(str)) if "phase" in rows else set()
                reason, log = _split(distinct.pop(), tail_lines)
                kind = "build" if phases == {"build"} else "infra_error"
                out.append(TaskFailure(str(task_id), kind, n, n, reason, log))
        if "environment_tampered" in rows:
            flagged = rows["environment_tampered"].dropna().astype(str)
            if len(flagged):
                findings = dict.fromkeys(f for text in flagged for f in text.split("; "))
                out.append(
                    TaskFailure(
                        str(task_id), "environment_tampered", len(flagged), n, "; ".join(findings)
                    )
                )
    return out


def failure_lines(records: Iterable[TaskFailure | Mapping[str, Any]]) -> list[str]:
    """One line per record (:meth:`TaskFailure.line`); records may be the dicts a
    ``groups.json`` holds."""
    out = []
    for record in records:
        if isinstance(record, Mapping):
            record = TaskFailure(
                **{**record, "log_tail": tuple(record.get("log_tail") or ())}  # type: ignore[arg-type]
            )
        out.append(record.line())
    return out
