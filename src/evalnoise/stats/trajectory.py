"""Trajectory consistency: do repeated trials of a task take the same path?

A trial's trajectory is its sequence of actions (the commands the runner executed, the tool
calls an agent reported), each action an opaque label compared for equality. Per task, over
its n trials:

- ``n_distinct``: distinct sequences among the trials (1: every trial took the same path);
- ``edit_distance``: the mean over the C(n, 2) pairs of trials of the normalised Levenshtein
  distance d(a, b) / max(|a|, |b|) ∈ [0, 1] (0 for two empty sequences), d the least number of
  insertions, deletions and substitutions of single actions turning a into b (Levenshtein
  1966; the Wagner–Fischer recurrence);
- ``first_divergence``: the 1-based step at which the trials first do not all take the same
  action (a trial that has ended counts as taking no action), NaN when every trial took the
  same path. Reports that most divergence happens in the first steps (arXiv 2605.28840)
  are checked by its distribution.

Per group, each is averaged over tasks with the task-clustered interval
(:mod:`evalnoise.stats._task_intervals`), and the tasks are split into consistent ones (at most
``consistent_max_distinct`` distinct sequences) and the rest, each with the accuracy of its
tasks (mean of task means, task-clustered interval) — the relation reported for ReAct agents
(consistent tasks 80–92 % against 25–60 %, arXiv 2602.11619) measured on the user's agent.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd

from evalnoise.stats._checks import check_positive_int, check_probability, finite_scores
from evalnoise.stats._results import DictResult
from evalnoise.stats._task_intervals import task_mean_interval

__all__ = [
    "TrajectoryConsistencyResult",
    "first_divergence",
    "levenshtein",
    "normalised_edit_distance",
    "trajectory_consistency",
]


def levenshtein(a: Sequence[Any], b: Sequence[Any]) -> int:
    """The Levenshtein distance between two sequences of actions: the least number of
    single-action insertions, deletions and substitutions turning ``a`` into ``b``, by the
    Wagner–Fischer recurrence D[i, j] = min(D[i−1, j] + 1, D[i, j−1] + 1,
    D[i−1, j−1] + [a_i ≠ b_j]), one row at a time (the row's insertion chain is a running
    minimum)."""
    if len(a) < len(b):
        a, b = b, a
    if not b:
        return len(a)
    codes = {x: i for i, x in enumerate(dict.fromkeys([*a, *b]))}
    bb = np.array([codes[x] for x in b])
    prev = np.arange(len(b) + 1)
    steps = np.arange(len(b) + 1)
    for i, x in enumerate(a, start=1):
        sub = prev[:-1] + (bb != codes[x])
        row = np.empty_like(prev)
        row[0] = i
        row[1:] = np.minimum(prev[1:] + 1, sub)
        # insertions along the row: D[i, j] = min_k (row[k] + j − k)
        row = np.minimum.accumulate(row - steps) + steps
        prev = row
    return int(prev[-1])


def normalised_edit_distance(a: Sequence[Any], b: Sequence[Any]) -> float:
    """:func:`levenshtein` divided by the longer length, in [0, 1]; 0 for two empty sequences."""
    longer = max(len(a), len(b))
    return 0.0 if longer == 0 else levenshtein(a, b) / longer


def first_divergence(sequences: Sequence[Sequence[Any]]) -> float:
    """The 1-based step at which the sequences first do not all agree (a sequence that has
    ended takes no action there), NaN when they are all equal or fewer than two."""
    seqs = [tuple(s) for s in sequences]
    if len(seqs) < 2 or len(set(seqs)) == 1:
        return float("nan")
    end = object()
    for step in range(max(map(len, seqs))):
        if len({s[step] if step < len(s) else end for s in seqs}) > 1:
            return float(step + 1)
    return float("nan")  # unreachable: distinct sequences differ at some step


@dataclass(frozen=True)
class TrajectoryConsistencyResult(DictResult):
    """Trajectory consistency per task and over the tasks of one group.

    Attributes
    ----------
    tasks : task labels, in order of first appearance.
    n_trials : trials with a trajectory per task.
    n_distinct : distinct sequences per task.
    edit_distance : mean normalised edit distance over the task's pairs of trials (NaN with
        one trial).
    first_divergence : the step of first divergence per task (NaN when all agree).
    task_means : each task's mean score.
    mean_distinct, distinct_ci_low, distinct_ci_high : mean of ``n_distinct`` over tasks and
        its task-clustered interval (on [1, the most trials of a task]).
    mean_edit_distance, edit_distance_ci_low, edit_distance_ci_high : the same for
        ``edit_distance`` (tasks with two or more trials).
    mean_first_divergence, first_divergence_ci_low, first_divergence_ci_high : mean step of
        first divergence over the tasks that diverge, and its task-clustered interval (on
        [1, the longest sequence + 1]).
    share_diverging_by_step_2 : of the tasks that diverge, the share that do so at step 1 or 2.
    consistent_max_distinct : a task is consistent with at most this many distinct sequences.
    n_consistent, n_inconsistent : tasks on each side.
    accuracy_consistent, accuracy_consistent_ci_low, accuracy_consistent_ci_high : mean of
        task means over the consistent tasks with its task-clustered interval (NaN when none).
    accuracy_inconsistent, accuracy_inconsistent_ci_low, accuracy_inconsistent_ci_high : the
        same over the other tasks.
    confidence : the intervals' level.
    """

    tasks: np.ndarray
    n_trials: np.ndarray
    n_distinct: np.ndarray
    edit_distance: np.ndarray
    first_divergence: np.ndarray
    task_means: np.ndarray
    mean_distinct: float
    distinct_ci_low: float
    distinct_ci_high: float
    mean_edit_distance: float
    edit_distance_ci_low: float
    edit_distance_ci_high: float
    mean_first_divergence: float
    first_divergence_ci_low: float
    first_divergence_ci_high: float
    share_diverging_by_step_2: float
    consistent_max_distinct: int
    n_consistent: int
    n_inconsistent: int
    accuracy_consistent: float
    accuracy_consistent_ci_low: float
    accuracy_consistent_ci_high: float
    accuracy_inconsistent: float
    accuracy_inconsistent_ci_low: float
    accuracy_inconsistent_ci_high: float
    confidence: float


def _mean_ci(
    values: np.ndarray, conf: float, high: float = 1.0, low: float = 0.0
) -> tuple[float, float, float]:
    v = values[np.isfinite(values)]
    if v.size == 0:
        return float("nan"), float("nan"), float("nan")
    mean, _, lo, hi = task_mean_interval(v, conf, low=low, high=high)
    return float(mean), float(lo), float(hi)


def trajectory_consistency(
    sequences: Sequence[Sequence[Any]],
    tasks: Any,
    scores: Any,
    *,
    consistent_max_distinct: int = 1,
    confidence: float = 0.95,
) -> TrajectoryConsistencyResult:
    """Per task: distinct sequences, mean pairwise normalised edit distance
    (:func:`normalised_edit_distance`), step of first divergence (:func:`first_divergence`);
    per group: their means over tasks with task-clustered intervals (the step of first
    divergence over the tasks that diverge), and the accuracy of the
    consistent and the inconsistent tasks (module docstring).

    Parameters
    ----------
    sequences : one action sequence per trial (any sequence of hashable actions).
    tasks : the task of each trial.
    scores : each trial's score in [0, 1].
    consistent_max_distinct : a task with at most this many distinct sequences is consistent.
    confidence : level of the intervals.
    """
    conf = check_probability(confidence)
    limit = check_positive_int(consistent_max_distinct, "consistent_max_distinct")
    y = finite_scores(scores, "scores", unit=True)
    seqs = [tuple(s) for s in sequences]
    labels = np.asarray(tasks)
    if not (len(seqs) == y.size == labels.size) or y.size == 0:
        raise ValueError("sequences, tasks and scores must be non-empty and of one length")
    codes, names = pd.factorize(labels, sort=False)
    g = names.size
    n_trials = np.bincount(codes, minlength=g)
    distinct = np.zeros(g, dtype=np.int64)
    edit = np.full(g, np.nan)
    diverge = np.full(g, np.nan)
    means = np.bincount(codes, weights=y, minlength=g) / n_trials
    for i in range(g):
        mine = [seqs[j] for j in np.flatnonzero(codes == i)]
        distinct[i] = len(set(mine))
        if len(mine) > 1:
            edit[i] = float(
                np.mean([normalised_edit_distance(a, b) for a, b in combinations(mine, 2)])
            )
        diverge[i] = first_divergence(mine)
    hi_distinct = float(n_trials.max())
    m_distinct, lo_distinct, up_distinct = _mean_ci(
        distinct.astype(float), conf, hi_distinct, low=1.0
    )
    m_edit, lo_edit, up_edit = _mean_ci(edit, conf)
    split = np.isfinite(diverge)
    longest = max((len(s) for s in seqs), default=0)
    m_div, lo_div, up_div = _mean_ci(diverge, conf, high=float(longest + 1), low=1.0)
    consistent = distinct <= limit
    acc_c = _mean_ci(np.where(consistent, means, np.nan), conf)
    acc_i = _mean_ci(np.where(~consistent, means, np.nan), conf)
    return TrajectoryConsistencyResult(
        tasks=np.asarray(names),
        n_trials=n_trials,
        n_distinct=distinct,
        edit_distance=edit,
        first_divergence=diverge,
        task_means=means,
        mean_distinct=m_distinct,
        distinct_ci_low=lo_distinct,
        distinct_ci_high=up_distinct,
        mean_edit_distance=m_edit,
        edit_distance_ci_low=lo_edit,
        edit_distance_ci_high=up_edit,
        mean_first_divergence=m_div,
        first_divergence_ci_low=lo_div,
        first_divergence_ci_high=up_div,
        share_diverging_by_step_2=float((diverge[split] <= 2).mean())
        if split.any()
        else float("nan"),
        consistent_max_distinct=limit,
        n_consistent=int(consistent.sum()),
        n_inconsistent=int((~consistent).sum()),
        accuracy_consistent=acc_c[0],
        accuracy_consistent_ci_low=acc_c[1],
        accuracy_consistent_ci_high=acc_c[2],
        accuracy_inconsistent=acc_i[0],
        accuracy_inconsistent_ci_low=acc_i[1],
        accuracy_inconsistent_ci_high=acc_i[2],
        confidence=conf,
    )
