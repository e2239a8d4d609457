"""Score a table of trials: TRIALS rows (+ their tasks) → SCORES rows.

Rules, in order, for each trial:

1. An infrastructure outcome (``timeout``, ``oom_killed``, ``infra_error``) is not scored:
   ``correct`` and ``score`` are null, ``judge_status='skipped_infra'``. How such trials
   count toward accuracy is the analysis's declared infra policy, not the scorer's.
2. A crash (``agent_error`` with a fault-signal exit, :func:`evalnoise.outcomes.crash_signal`)
   gave no answer: ``correct`` and ``score`` are null, ``judge_status='skipped_crash'``; the
   analysis's infra policy decides how it counts, and a group with one has no headline.
   Any other ``agent_error`` is the agent's failure: ``correct=False``, ``score=0``.
3. An ``ok`` trial is scored by the chosen scorer against the task's ``answer`` (an empty
   prediction is incorrect; the judge is not asked about it).

Scorers: ``exact``, ``numeric``, ``gaia``, ``fuzzy`` (deterministic; ``judge_status`` null),
``judge`` (an :class:`~evalnoise.scorers.judge.LLMJudge`; ``judge_status`` ``ok`` /
``judge_error`` / ``no_prediction``), ``recorded`` — imported trials that carry their own
``score``: correct when ``score >= 0.5`` — and ``reward``, the environment tasks' scorer: the
verifier's reward (partial credit in [0, 1]) is the score, correct when ``>= 0.5``. A
``verifier_error`` trial (the verifier left no valid reward) is never scored: null, with
``judge_status='verifier_error'``; nor is an ``agent_setup_error`` trial (the agent could not
be set up in the task's container: it never ran), ``judge_status='agent_setup_error'``.

``score`` is 1.0 / 0.0 for a verdict (null without one) — for ``fuzzy`` too: its similarity
ratio is in the explanation — except ``recorded``, which keeps the recorded score.

The judge's cost columns (``judge_calls``, ``judge_cached``, ``judge_prompt_tokens``,
``judge_completion_tokens``; see :class:`~evalnoise.scorers.judge.JudgeResult`) are filled
for the ``judge`` scorer only: a trial it did not send to the judge (an infra outcome, an
agent error, an empty answer) cost 0 calls and 0 tokens, a measured zero. The other scorers
ask no judge; their rows leave the columns null.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pandas as pd
import pyarrow as pa

from evalnoise.errors import InputError
from evalnoise.outcomes import crash_signal_name
from evalnoise.schema import INFRA_STATUSES, SCORES, TRIALS, conform
from evalnoise.scorers.deterministic import DETERMINISTIC_SCORERS
from evalnoise.scorers.judge import LLMJudge
from evalnoise.scorers.verdicts import (
    AGENT_SETUP_ERROR,
    SKIPPED_CRASH,
    SKIPPED_INFRA,
    VERIFIER_ERROR,
)

__all__ = ["SCORER_NAMES", "SKIPPED_CRASH", "VERIFIER_ERROR", "score_trials"]

SCORER_NAMES = (*DETERMINISTIC_SCORERS, "judge", "recorded", "reward")

#: the judge's cost of one trial, in this order (:data:`evalnoise.schema.SCORES`)
_COST_COLUMNS = ("judge_calls", "judge_cached", "judge_prompt_tokens", "judge_completion_tokens")
_OUT_COLUMNS = (
    "scorer",
    "correct",
    "score",
    "judge_status",
    "judge_explanation",
    "judge_votes",
    *_COST_COLUMNS,
)
_NO_CALL = (0, 0, 0, 0)
_NOT_A_JUDGE = (None, None, None, None)


def _as_frame(table: pd.DataFrame | pa.Table) -> pd.DataFrame:
    return table.to_pandas() if isinstance(table, pa.Table) else table


def _none(value: Any) -> Any:
    return None if value is None or (not isinstance(value, str) and pd.isna(value)) else value


def _scored_by_status(
    status: str, row: dict[str, Any]
) -> tuple[bool | None, float | None, str | None, str] | None:
    """(correct, score, judge status, explanation) of a trial its status decides without
    looking at the answer, else None: an infrastructure outcome, a crash, an agent that never
    ran and a failed verifier are not scored (never a 0); an agent error is incorrect."""
    if status in INFRA_STATUSES:
        return None, None, SKIPPED_INFRA, f"infrastructure outcome {status!r}: not scored"
    if status == "agent_error" and (signal := crash_signal_name(row.get("exit_code"))):
        return None, None, SKIPPED_CRASH, f"agent_error: crashed ({signal}); no answer, not scored"
    if status == "agent_error":
        return False, 0.0, None, "agent_error: scored incorrect"
    if status == "verifier_error":
        # the grader failed, not the agent: no score until a rerun (never a 0)
        why = _none(row.get("error")) or "no valid reward"
        return None, None, VERIFIER_ERROR, f"verifier_error: {why}"
    if status == AGENT_SETUP_ERROR:
        # the agent never ran (its setup failed): neither its skill nor the task's
        why = _none(row.get("error")) or "setup failed"
        return None, None, AGENT_SETUP_ERROR, f"agent_setup_error: {why}"
    return None


def score_trials(
    trials: pd.DataFrame | pa.Table,
    tasks: pd.DataFrame | pa.Table,
    scorer: str,
    *,
    judge: LLMJudge | None = None,
    options: Mapping[str, Any] | None = None,
    name: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> pa.Table:
    """Score every trial; return a SCORES table (one row per trial, same order).

    ``tasks`` supplies each trial's ``question`` and ``answer`` by ``task_id``. ``options``
    are the deterministic scorer's keyword options (``{"rel_tol": 1e-4}``,
    ``{"threshold": 0.85}``). ``name`` is written to the ``scorer`` column (default: the
    scorer; for the judge, ``judge:<model>``). ``progress(done, total)`` is called after each
    trial.
    """
    if scorer not in SCORER_NAMES:
        raise ValueError(f"unknown scorer {scorer!r}; choose from {', '.join(SCORER_NAMES)}")
    if scorer == "judge" and judge is None:
        raise ValueError("scorer 'judge' needs an LLMJudge (judge=...)")
    options = dict(options or {})
    frame = _as_frame(trials)
    task_frame = _as_frame(tasks)
    known = task_frame.set_index("task_id")[["question", "answer"]].to_dict("index")
    label = name or (f"judge:{judge.model}" if scorer == "judge" and judge else scorer)

    out: dict[str, list[Any]] = {key: [] for key in _OUT_COLUMNS}
    total = len(frame)
    records = frame.to_dict("records")
    for done, row in enumerate(records, start=1):
        task = known.get(row["task_id"])
        if task is None:
            raise InputError(
                f"task {row['task_id']!r} of this trial is not in the tasks table",
                row=done,
                column="task_id",
            )
        status = row["status"]
        prediction = _none(row.get("prediction"))
        correct: bool | None
        score: float | None
        judge_status: str | None = None
        votes: list[bool] | None = None
        # the judge scorer's cost of a trial it does not ask about is a measured zero
        cost = _NO_CALL if scorer == "judge" else _NOT_A_JUDGE
        by_status = _scored_by_status(status, row)
        if by_status is not None:
            correct, score, judge_status, explanation = by_status
        elif scorer == "reward":
            reward = _none(row.get("reward"))
            if reward is None or not 0.0 <= float(reward) <= 1.0:
                raise InputError(
                    "scorer 'reward' needs the verifier's reward in [0, 1] on every ok trial "
                    f"(got {reward!r}); is this an environment task?",
                    row=done,
                    column="reward",
                )
            score = float(reward)
            correct, explanation = score >= 0.5, f"the verifier's reward {score:g}"
        elif scorer == "recorded":
            recorded = _none(row.get("score"))
            if recorded is None:
                raise InputError(
                    "scorer 'recorded' needs a score on every trial", row=done, column="score"
                )
            correct, score = float(recorded) >= 0.5, float(recorded)
            explanation = "recorded score"
        elif scorer == "judge":
            assert judge is not None
            result = judge.judge(task["question"], prediction, task["answer"], status=status)
            correct, judge_status, explanation = result.correct, result.status, result.explanation
            score = result.score
            if result.status == "ok" and result.votes:
                votes = [bool(v) for v in result.votes]
            cost = (
                result.calls,
                result.cached,
                result.prompt_tokens,
                result.completion_tokens,
            )
        elif prediction is None or not str(prediction).strip():
            correct, score, explanation = False, 0.0, "empty prediction"
            judge_status = None
        else:
            try:
                match = DETERMINISTIC_SCORERS[scorer](str(prediction), task["answer"], **options)
            except ValueError as exc:
                raise InputError(f"task {row['task_id']!r}: {exc}", column="answer") from exc
            correct, score, explanation = match.correct, float(match.correct), match.explanation
        out["scorer"].append(label)
        out["correct"].append(correct)
        out["score"].append(score)
        out["judge_status"].append(judge_status)
        out["judge_explanation"].append(explanation)
        out["judge_votes"].append(votes)
        for key, value in zip(_COST_COLUMNS, cost, strict=True):
            out[key].append(value)
        if progress is not None:
            progress(done, total)

    base = frame[[c for c in frame.columns if TRIALS.get_field_index(c) >= 0]].copy()
    base = base.drop(columns=["score"], errors="ignore")
    table = pa.Table.from_pandas(base.reset_index(drop=True), preserve_index=False)
    table = conform(table, pa.schema([f for f in TRIALS if f.name in table.column_names]))
    for key in _OUT_COLUMNS:
        table = table.append_column(
            SCORES.field(key), pa.array(out[key], type=SCORES.field(key).type)
        )
    return conform(table, SCORES)
