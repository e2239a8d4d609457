"""Reliability beyond the mean for one group: pass^k and pass@k, outcome consistency,
trajectory consistency — each from the group's trial frame.

Each ``*_for_group`` function takes one group's long frame (columns ``group, task, trial,
score`` as :func:`evalnoise.trial_table.validate_trials` and
:func:`evalnoise.pipeline.collect.group_data` give them) and returns the statistic's result
dataclass from :mod:`evalnoise.stats`; the words are :mod:`evalnoise.consistency_text`'s.
"""

from __future__ import annotations

import pandas as pd

from evalnoise.stats.consistency import OutcomeConsistencyResult, outcome_consistency
from evalnoise.stats.passk import PassKResult, pass_k
from evalnoise.stats.trajectory import TrajectoryConsistencyResult, trajectory_consistency

__all__ = [
    "ACTION_COLUMNS",
    "outcome_consistency_for_group",
    "passk_for_group",
    "trajectories_of",
    "trajectory_consistency_for_group",
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
    (:func:`evalnoise.stats.consistency.outcome_consistency`)."""
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
