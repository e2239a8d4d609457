"""Policy sensitivity: does the declared infra policy move the headline accuracy?

An infrastructure outcome (``timeout``, ``oom_killed``, ``infra_error``) is not an answer, so *how
it counts* is a choice (config/README.md, "Scoring and the infra policy";
:mod:`evalnoise.runner.infra_policies`): as a wrong answer (the paper's choice), left out, or
retried. The infrastructure-noise article finds infra error rates of 0.5–6% per configuration — the
same order as the gaps between leaderboard entries — so the choice can matter. This module
recomputes the accuracy of one group's trials under every policy the data allow and says whether the
choice moves the result by more than its own confidence interval.

The accuracy under each policy is the multiverse's infra-policy factor
(:func:`evalnoise.multiverse.policy_cells`, one computation for both): this module reads that
column and judges its spread against the reference interval.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from evalnoise.multiverse import POLICIES, counted_under_policies, policy_cells
from evalnoise.stats.accuracy import AccuracyResult

from ._json import records
from ._trial_frame import one_group, require_columns, score_values

__all__ = ["POLICIES", "PolicySensitivityResult", "counted_under_policies", "policy_sensitivity"]


@dataclass(frozen=True)
class PolicySensitivityResult:
    """Accuracy of one group's trials under each infra policy (see :func:`policy_sensitivity`).

    Per-policy arrays are aligned with ``policy``; a policy the data cannot evaluate
    (``retry`` without retried trials) has ``applicable`` False, NaN numbers and a note.

    Attributes
    ----------
    policy : the policy names, :data:`POLICIES`.
    applicable : whether the data allow the policy.
    mean : μ̂, the mean over tasks of the task mean scores (:func:`evalnoise.stats.accuracy`).
    ci_low, ci_high : its task-clustered confidence interval.
    n_counted : trials counted for accuracy (scored rows).
    n_excluded : trials the policy leaves out (infra outcomes under ``exclude``).
    n_unscored : counted trials without a score (e.g. judge errors), left out of the mean.
    n_tasks : tasks with at least one counted, scored trial.
    shift : mean − the reference's mean.
    note : what the row means, or why it is not applicable.
    accuracy : the full :class:`AccuracyResult` per applicable policy.
    reference : the policy whose CI sets the yardstick, ``"as_incorrect"``.
    half_width : (ci_high − ci_low) / 2 of the reference.
    max_shift : the largest difference between the means of two applicable policies.
    moves_result : ``max_shift > half_width``: the choice of policy moves the accuracy by
        more than the reference CI's half-width.
    confidence : the CI level.
    warnings : reasons for NaN fields, gathered from every policy's accuracy.
    """

    policy: tuple[str, ...]
    applicable: np.ndarray
    mean: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    n_counted: np.ndarray
    n_excluded: np.ndarray
    n_unscored: np.ndarray
    n_tasks: np.ndarray
    shift: np.ndarray
    note: tuple[str, ...]
    accuracy: Mapping[str, AccuracyResult]
    reference: str
    half_width: float
    max_shift: float
    moves_result: bool
    confidence: float
    warnings: tuple[str, ...] = field(default=())

    def to_frame(self) -> pd.DataFrame:
        """One row per policy."""
        return pd.DataFrame(
            {
                "policy": list(self.policy),
                "applicable": self.applicable,
                "mean": self.mean,
                "ci_low": self.ci_low,
                "ci_high": self.ci_high,
                "n_counted": self.n_counted,
                "n_excluded": self.n_excluded,
                "n_unscored": self.n_unscored,
                "n_tasks": self.n_tasks,
                "shift": self.shift,
                "note": list(self.note),
            }
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready record: the summary and one entry per policy."""
        return {
            "reference": self.reference,
            "half_width": float(self.half_width),
            "max_shift": float(self.max_shift),
            "moves_result": bool(self.moves_result),
            "confidence": float(self.confidence),
            "policies": records(self.to_frame()),
            "warnings": list(self.warnings),
        }


def policy_sensitivity(
    trials: pd.DataFrame,
    *,
    on_exhausted: str = "as_incorrect",
    confidence: float = 0.95,
    cluster_se: str = "cr1",
    quantile: str = "normal",
) -> PolicySensitivityResult:
    """Accuracy and its CI under each infra policy, from the same trials of one group.

    Parameters
    ----------
    trials : one group's (one agent, one resource profile) trial or score table, every
        attempt a row: ``task_id``, ``trial``, ``status``, ``score`` and/or ``correct``, and
        ``attempt`` when trials were retried (missing = every row is attempt 1).
    on_exhausted : how the ``retry`` row counts a trial whose last attempt is still an infra
        outcome: ``"as_incorrect"`` (the runner's default) or ``"exclude"``.
    confidence, cluster_se, quantile : passed to :func:`evalnoise.stats.accuracy`.

    Returns
    -------
    PolicySensitivityResult

    Notes
    -----
    Each policy is :func:`evalnoise.runner.infra_policies.apply_infra_policy` applied to the same
    rows, then :func:`evalnoise.stats.accuracy` on the counted, scored trials (headline
    μ̂ = mean over tasks of the task means, each task weighing 1; clustered CI):

    * ``as_incorrect`` — the first attempt of every trial; an infra outcome scores 0. When
      the table holds retries this is what the run would have scored without them.
    * ``exclude`` — the first attempt of every trial; infra outcomes are left out (a task
      whose every trial was an infra outcome drops out of the mean).
    * ``retry`` — the last attempt of every trial counts; that *is* the retry policy's
      result. Not applicable when no trial has more than one attempt.

    With h = (ci_high − ci_low)/2 of ``as_incorrect`` (the paper's choice, so the
    reference) and Δ = max − min of the applicable policies' means, the choice of policy
    *moves the result* when Δ > h: it shifts the accuracy by more than the sampling
    uncertainty the report already prints. (h is the half-width of the printed interval, so
    it stays defined when the interval is the Wilson fallback or truncated to [0, 1].)

    Two orderings hold by construction: ``exclude`` ≥ ``as_incorrect`` (excluding a zero
    can only raise a task's mean, and dropping an all-zero task can only raise the mean of
    task means), and ``retry`` ≥ ``as_incorrect`` with ``on_exhausted="as_incorrect"`` (a
    retried trial's last attempt scores at least the first attempt's 0).
    """
    require_columns(trials, "status")
    if "score" not in trials.columns and "correct" not in trials.columns:
        raise ValueError("the table has neither a 'score' nor a 'correct' column")
    one_group(trials)
    # the multiverse's infra-policy column of this scoring (score, else correct)
    cells = policy_cells(
        trials.assign(score=score_values(trials)),
        on_exhausted=on_exhausted,
        confidence=confidence,
        cluster_se=cluster_se,
        quantile=quantile,
    )

    k = len(POLICIES)
    nan_arr = np.full(k, np.nan)
    mean, lo, hi = nan_arr.copy(), nan_arr.copy(), nan_arr.copy()
    n_counted, n_excluded, n_unscored, n_tasks = (np.zeros(k, dtype=np.int64) for _ in range(4))
    applicable = np.zeros(k, dtype=bool)
    notes: list[str] = []
    results: dict[str, AccuracyResult] = {}
    warnings: list[str] = []
    for i, name in enumerate(POLICIES):
        cell = cells[name]
        if isinstance(cell, str):
            notes.append(cell)
            continue
        notes.append(cell.note)
        n_unscored[i] = cell.n_unscored
        n_excluded[i] = len(cell.applied.excluded)
        if cell.accuracy is None:
            continue  # nothing scored under this policy: NaN numbers, as accuracy gives
        acc = cell.accuracy
        results[name] = acc
        applicable[i] = True
        mean[i], lo[i], hi[i] = acc.mean, acc.ci_low, acc.ci_high
        n_counted[i] = int(cell.scores.size)
        n_tasks[i] = acc.n_tasks
        warnings.extend(f"{name}: {w}" for w in acc.warnings)

    ref = 0
    half = float((hi[ref] - lo[ref]) / 2.0)
    shift = mean - mean[ref]
    finite = mean[applicable & np.isfinite(mean)]
    max_shift = float(finite.max() - finite.min()) if finite.size else float("nan")
    moves = bool(np.isfinite(half) and np.isfinite(max_shift) and max_shift > half)
    return PolicySensitivityResult(
        policy=POLICIES,
        applicable=applicable,
        mean=mean,
        ci_low=lo,
        ci_high=hi,
        n_counted=n_counted,
        n_excluded=n_excluded,
        n_unscored=n_unscored,
        n_tasks=n_tasks,
        shift=shift,
        note=tuple(notes),
        accuracy=results,
        reference=POLICIES[ref],
        half_width=half,
        max_shift=max_shift,
        moves_result=moves,
        confidence=float(confidence),
        warnings=tuple(dict.fromkeys(warnings)),
    )
