"""Reliability beyond the mean for one group: pass^k and pass@k, outcome consistency,
trajectory consistency — each from the group's trial frame.

Each ``*_for_group`` function takes one group's long frame (columns ``group, task, trial,
score`` as :func:`evalnoise.trial_table.validate_trials` and
:func:`evalnoise.pipeline.collect.group_data` give them) and returns the statistic's result
dataclass from :mod:`evalnoise.stats`; the words are :mod:`evalnoise.consistency_text`'s.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from evalnoise.stats.outcome_consistency import OutcomeConsistencyResult, outcome_consistency
from evalnoise.stats.passk import PassKResult, pass_k
from evalnoise.stats.trajectory import TrajectoryConsistencyResult, trajectory_consistency

__all__ = [
    "ACTION_COLUMNS",
    "TRAJECTORY_FIELDS",
    "outcome_consistency_for_group",
    "passk_for_group",
    "reliability_fields",
    "trajectories_of",
    "trajectory_consistency_for_group",
    "trajectory_fields",
]

#: The columns of an actions table: one row per action of a trial, ``step`` its 0-based
#: place in the trial's sequence; a trial that recorded an empty trajectory has one row with
#: a null ``action`` (a trial with no row recorded none at all).
ACTION_COLUMNS = ("task", "trial", "step", "action")


def _check(frame: pd.DataFrame) -> None:
    missing = [c for c in ("task", "trial", "score") if c not in frame.columns]
    if missing:
        raise ValueError(f"the group's frame lacks the columns {missing}")
    if frame.empty:
        raise ValueError("the group's frame has no trials")


def passk_for_group(
    frame: pd.DataFrame, *, k_max: int | None = None, confidence: float = 0.95
) -> PassKResult:
    """pass^k and pass@k for k = 1 … (the fewest trials of any task), unbiased per task,
    averaged over tasks, with task-clustered intervals (:func:`evalnoise.stats.pass_k`; a
    trial succeeds at a score within 1e-6 of 1, tau-bench's rule)."""
    _check(frame)
    return pass_k(
        frame["score"].to_numpy(dtype=float),
        frame["task"].to_numpy(),
        k_max=k_max,
        confidence=confidence,
    )


def outcome_consistency_for_group(
    frame: pd.DataFrame, *, confidence: float = 0.95
) -> OutcomeConsistencyResult:
    """C_out = (2p̂ − 1)² per task and its mean with a task-clustered interval
    (:func:`evalnoise.stats.outcome_consistency.outcome_consistency`)."""
    _check(frame)
    return outcome_consistency(
        frame["score"].to_numpy(dtype=float), frame["task"].to_numpy(), confidence=confidence
    )


def trajectories_of(frame: pd.DataFrame, actions: pd.DataFrame) -> pd.DataFrame:
    """The group's trials that have a recorded trajectory, each with its action sequence:
    columns ``task, trial, score, sequence`` (a tuple of actions in ``step`` order; a null
    action marks an empty trajectory and is no action). A trial with no row in ``actions``
    recorded no trajectory and is left out; its score is not touched."""
    missing = [c for c in ACTION_COLUMNS if c not in actions.columns]
    if missing:
        raise ValueError(f"the actions table lacks the columns {missing}")
    acts = actions.assign(task=actions["task"].astype(str), trial=actions["trial"].astype(str))
    sequences = (
        acts.sort_values(["task", "trial", "step"], kind="mergesort")
        .groupby(["task", "trial"], sort=False)["action"]
        .agg(lambda a: tuple(a.dropna()))
        .rename("sequence")
        .reset_index()
    )
    trials = frame.assign(task=frame["task"].astype(str), trial=frame["trial"].astype(str))
    return trials[["task", "trial", "score"]].merge(sequences, on=["task", "trial"], how="inner")


def trajectory_consistency_for_group(
    frame: pd.DataFrame,
    actions: pd.DataFrame,
    *,
    consistent_max_distinct: int = 1,
    confidence: float = 0.95,
) -> TrajectoryConsistencyResult:
    """Distinct sequences, mean normalised edit distance and step of first divergence per
    task, their means with intervals, and the accuracy of consistent against inconsistent
    tasks (:func:`evalnoise.stats.trajectory.trajectory_consistency`), over the group's trials
    that recorded a trajectory (``actions``: :data:`ACTION_COLUMNS`)."""
    _check(frame)
    joined = trajectories_of(frame, actions)
    if joined.empty:
        raise ValueError("no trial of the group has a recorded trajectory")
    return trajectory_consistency(
        joined["sequence"].tolist(),
        joined["task"].to_numpy(),
        joined["score"].to_numpy(dtype=float),
        consistent_max_distinct=consistent_max_distinct,
        confidence=confidence,
    )


#: The numbers of :class:`evalnoise.stats.trajectory.TrajectoryConsistencyResult` a group's
#: record keeps (``trajectory_consistency``), besides ``recorded``, ``n_tasks``, ``n_trials``
#: and ``trials_per_task``.
TRAJECTORY_FIELDS = (
    "mean_distinct",
    "distinct_ci_low",
    "distinct_ci_high",
    "mean_edit_distance",
    "edit_distance_ci_low",
    "edit_distance_ci_high",
    "mean_first_divergence",
    "first_divergence_ci_low",
    "first_divergence_ci_high",
    "share_diverging_by_step_2",
    "consistent_max_distinct",
    "n_consistent",
    "n_inconsistent",
    "accuracy_consistent",
    "accuracy_consistent_ci_low",
    "accuracy_consistent_ci_high",
    "accuracy_inconsistent",
    "accuracy_inconsistent_ci_low",
    "accuracy_inconsistent_ci_high",
    "confidence",
)


def trajectory_fields(
    frame: pd.DataFrame, actions: pd.DataFrame | None, *, confidence: float = 0.95
) -> dict[str, Any]:
    """The record field ``trajectory_consistency`` of a group: with ``recorded`` true,
    :func:`trajectory_consistency_for_group`'s numbers (:data:`TRAJECTORY_FIELDS`), the tasks
    and trials they are over and the most trials of a task; ``{"recorded": false}`` with
    zero tasks and trials when no counted trial recorded a trajectory (``actions`` None: the
    run records none, as for an imported table; or no row of the group's counted trials).
    Never an estimate from nothing."""
    joined = None if actions is None or frame.empty else trajectories_of(frame, actions)
    if joined is None or joined.empty:
        return {"recorded": False, "n_tasks": 0, "n_trials": 0}
    res = trajectory_consistency(
        joined["sequence"].tolist(),
        joined["task"].to_numpy(),
        joined["score"].to_numpy(dtype=float),
        confidence=confidence,
    )
    return {
        "recorded": True,
        "n_tasks": len(res.tasks),
        "n_trials": int(res.n_trials.sum()),
        "trials_per_task": int(res.n_trials.max()),
        **{name: _plain(getattr(res, name)) for name in TRAJECTORY_FIELDS},
    }


def _plain(values: Any) -> Any:
    """A result's array or number as JSON holds it: lists, and None for NaN."""
    if isinstance(values, np.ndarray):
        return [_plain(v) for v in values.tolist()]
    if isinstance(values, float) and not np.isfinite(values):
        return None
    return values


def reliability_fields(
    frame: pd.DataFrame,
    attempts: pd.DataFrame | None = None,
    *,
    confidence: float = 0.95,
    actions: pd.DataFrame | None = None,
    scorers: Mapping[str, pd.DataFrame] | None = None,
    reference: Mapping[str, str] | None = None,
    on_exhausted: str = "as_incorrect",
) -> dict[str, dict[str, Any]]:
    """The record fields of a group's reliability beyond its mean (the keys of
    :class:`evalnoise.group_records.GroupRecord`): ``pass_k`` (:func:`passk_for_group`: k,
    pass^k and pass@k with their task-clustered intervals), ``outcome_consistency``
    (:func:`outcome_consistency_for_group`: mean C_out = (2p̂ − 1)² with its interval, the
    unbiased mean) and, with the group's ``attempts`` (their ``status`` and
    ``verified_after``), ``multiverse`` (:func:`evalnoise.multiverse.multiverse_for_group`:
    the headline under every combination of the analysis choices that apply — its
    ``cells`` —, the range, each choice's influence). ``scorers`` (name → that scorer's
    rows of the same attempts: the reference scorer's and each judge's,
    :func:`evalnoise.multiverse.with_scorers`) make the scorer the ``judge`` factor;
    ``reference`` names the run's own levels (the declared infra policy, the verdict rule,
    the scorer the headline uses; default the project's defaults: mean of task means,
    failures as incorrect, the verifier's verdict, CR1), and ``trajectory_consistency``
    (:func:`trajectory_fields`, over ``actions``, the counted trials' actions as
    :data:`ACTION_COLUMNS`; "not recorded" when there are none). An empty frame gives no
    field: nothing was counted, so nothing is estimated."""
    from evalnoise.multiverse import multiverse_for_group, with_scorers

    if frame.empty:
        return {}
    passk = passk_for_group(frame, confidence=confidence)
    cout = outcome_consistency_for_group(frame, confidence=confidence)
    out: dict[str, dict[str, Any]] = {
        "pass_k": {
            name: _plain(getattr(passk, name))
            for name in (
                "k",
                "pass_hat",
                "pass_hat_ci_low",
                "pass_hat_ci_high",
                "pass_at",
                "pass_at_ci_low",
                "pass_at_ci_high",
                "confidence",
            )
        }
        | {"n_tasks": len(passk.tasks)},
        "outcome_consistency": {
            name: _plain(getattr(cout, name))
            for name in ("statistic", "ci_low", "ci_high", "mean_unbiased", "n_tasks")
        },
        "trajectory_consistency": trajectory_fields(frame, actions, confidence=confidence),
    }
    if attempts is not None and not attempts.empty:
        trials, judges = attempts, None
        if "verified_after" in trials.columns:
            # the multiverse's verdict-after-failure factor reads a true/false flag
            trials = trials.assign(agent_failed=trials["verified_after"].notna())
        if scorers:
            trials, judges = with_scorers(trials, scorers)
        universe = multiverse_for_group(
            trials,
            judges=judges,
            reference=reference,
            on_exhausted=on_exhausted,
            confidence=confidence,
        )
        out["multiverse"] = {
            "headline": _plain(universe.headline),
            "low": _plain(universe.low),
            "high": _plain(universe.high),
            "spread": _plain(universe.spread),
            "n_cells": int(universe.n_cells),
            "factors": list(universe.factors),
            "influence": {k: _plain(v) for k, v in universe.influence.items()},
            "most_influential": universe.most_influential,
            "levels": {k: list(v) for k, v in universe.levels.items()},
            "reference": dict(universe.reference),
            "cells": [{k: _plain(v) for k, v in cell.items()} for cell in universe.cells],
            "notes": list(universe.notes),
        }
    return out
