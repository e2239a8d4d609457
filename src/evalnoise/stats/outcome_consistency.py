"""Outcome consistency: how decided each task's outcome is across repeated trials.

For a task with n trials and mean score p̂ (the success rate for binary scores), the outcome
consistency the Holistic Agent Leaderboard (HAL) reports per task is

    C_out = (2p̂ − 1)²,

1 when every trial agrees (all right or all wrong), 0 when the task is a coin flip. For binary
scores (2p − 1)² = 1 − 4p(1 − p): one minus four times the task's Bernoulli variance, so mean
C_out is the within-task variance on an absolute scale. The ICC is that variance relative to
the between-task variance: a benchmark whose every task succeeds 90 % of the time has mean
C_out 0.64 and an ICC near 0 (the tasks do not differ), an agent that flips a coin on every
task has C_out 0 and ICC 0, a deterministic agent C_out 1 and (when tasks differ) ICC 1.

The plug-in (2p̂ − 1)² overstates consistency with few trials: E[(2p̂ − 1)²] =
(2p − 1)² + 4σ²/n, σ² the variance of one trial's score. Subtracting the unbiased 4s²/n
(s² with n − 1 in the denominator; for binary scores 4p̂(1 − p̂)/(n − 1)) gives the unbiased
per-task value, reported beside the plug-in (which is what HAL reports).

The mean over tasks carries the task-clustered interval of
:mod:`evalnoise.stats._task_intervals` (tasks independent; CR1 SE; truncated to [0, 1]),
which HAL does not report.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from evalnoise.stats._checks import check_probability, finite_scores
from evalnoise.stats._results import DictResult
from evalnoise.stats._task_intervals import task_mean_interval
from evalnoise.stats._tasks import task_sums

__all__ = ["OutcomeConsistencyResult", "outcome_consistency"]


@dataclass(frozen=True)
class OutcomeConsistencyResult(DictResult):
    """Outcome consistency per task and its mean over tasks.

    Attributes
    ----------
    statistic : mean over tasks of C_out = (2p̂ − 1)² (the plug-in, as HAL reports it).
    se, ci_low, ci_high : its task-clustered SE and interval (NaN with one task).
    mean_unbiased : mean over tasks of the unbiased per-task value (module docstring); NaN
        when a task has a single trial.
    tasks : task labels, in order of first appearance.
    n_trials : trials per task.
    task_means : p̂ per task.
    c_out : C_out per task.
    c_out_unbiased : (2p̂ − 1)² − 4s²/n per task (NaN for a task with one trial).
    n_tasks : number of tasks.
    confidence : the interval's level.
    """

    statistic: float
    se: float
    ci_low: float
    ci_high: float
    mean_unbiased: float
    tasks: np.ndarray
    n_trials: np.ndarray
    task_means: np.ndarray
    c_out: np.ndarray
    c_out_unbiased: np.ndarray
    n_tasks: int
    confidence: float


def outcome_consistency(
    scores: Any, tasks: Any, *, confidence: float = 0.95
) -> OutcomeConsistencyResult:
    """C_out = (2p̂_i − 1)² per task i (p̂_i its mean score in [0, 1]), its mean over tasks
    with a task-clustered interval, and the unbiased per-task value
    (2p̂_i − 1)² − 4 s_i²/n_i, s_i² = (Q_i − n_i p̂_i²)/(n_i − 1) (module docstring).

    Parameters
    ----------
    scores : one score in [0, 1] per trial.
    tasks : the task of each trial.
    confidence : level of the interval.
    """
    conf = check_probability(confidence)
    y = finite_scores(scores, "scores", unit=True)
    if y.size == 0:
        raise ValueError("scores must be a non-empty 1-D array")
    ts = task_sums(y, np.asarray(tasks))
    n = ts.count
    p = ts.means
    c_out = (2.0 * p - 1.0) ** 2
    with np.errstate(divide="ignore", invalid="ignore"):
        s2 = np.maximum(ts.total_sq - n * p * p, 0.0) / (n - 1.0)
        unbiased = np.where(n > 1, c_out - 4.0 * s2 / n, np.nan)
    mean, se, lo, hi = task_mean_interval(c_out, conf)
    return OutcomeConsistencyResult(
        statistic=float(mean),
        se=float(se),
        ci_low=float(lo),
        ci_high=float(hi),
        mean_unbiased=float(unbiased.mean()),
        tasks=ts.labels,
        n_trials=n.astype(np.int64),
        task_means=p,
        c_out=c_out,
        c_out_unbiased=unbiased,
        n_tasks=ts.n_tasks,
        confidence=conf,
    )
