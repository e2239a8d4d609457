"""One line each, in words, for the results of :mod:`evalnoise.consistency`: pass^k and
pass@k, outcome consistency (with how it differs from the ICC), trajectory consistency, and
the multiverse of analysis choices. For ``summary.txt``, the cards and ``evalnoise analyze``.
"""

from __future__ import annotations

import math
from types import SimpleNamespace
from typing import Any

from evalnoise.formatting import fmt, pct

__all__ = [
    "C_OUT_VERSUS_ICC",
    "TRAJECTORIES_NOT_RECORDED",
    "multiverse_line",
    "outcome_consistency_line",
    "passk_line",
    "reliability_lines",
    "trajectory_line",
]

#: The sentence beside C_out and the ICC, on how they differ.
C_OUT_VERSUS_ICC = (
    "C_out measures how decided each task's outcome is on an absolute scale (1 − 4 × its "
    "trial-to-trial variance for pass/fail); the ICC compares that variance with how much "
    "tasks differ, so tasks that all succeed 90 % of the time give C_out 0.64 and an ICC "
    "near 0"
)


def _ci(lo: Any, hi: Any, digits: int = 1) -> str:
    return f"[{pct(lo, digits)}, {pct(hi, digits)}]"


def passk_line(res: Any) -> str:
    """pass^k for every k with its interval, and pass@k at the largest k: how fast reliability
    decays with repeats. ``res`` is a :class:`evalnoise.stats.PassKResult`."""
    ks = list(res.k)
    hats = ", ".join(
        f"^{k} {pct(res.pass_hat[i])} {_ci(res.pass_hat_ci_low[i], res.pass_hat_ci_high[i])}"
        for i, k in enumerate(ks)
    )
    last = len(ks) - 1
    return (
        f"pass{hats}; pass@{ks[last]} {pct(res.pass_at[last])} "
        f"{_ci(res.pass_at_ci_low[last], res.pass_at_ci_high[last])} "
        f"(unbiased per task, mean of {len(res.tasks)} tasks, {res.confidence:.0%} task-clustered)"
    )


def outcome_consistency_line(res: Any, icc: float | None = None) -> str:
    """Mean C_out with its interval (and the unbiased mean), and the ICC beside it with the
    sentence on how they differ. ``res`` is an
    :class:`evalnoise.stats.outcome_consistency.OutcomeConsistencyResult`."""
    unbiased = res.mean_unbiased
    finite = unbiased is not None and math.isfinite(unbiased)
    extra = f", unbiased {fmt(unbiased, '.2f')}" if finite else ""
    beside = "" if icc is None else f"; ICC {fmt(icc, '.2f')}: {C_OUT_VERSUS_ICC}"
    return (
        f"outcome consistency C_out {fmt(res.statistic, '.2f')} "
        f"[{fmt(res.ci_low, '.2f')}, {fmt(res.ci_high, '.2f')}] over {res.n_tasks} tasks"
        f"{extra}{beside}"
    )


#: What a group whose trials recorded no action sequence says in place of the numbers.
TRAJECTORIES_NOT_RECORDED = (
    "trajectories: not recorded (no counted trial of this group recorded its actions: the "
    "agent reports none, or the table holds none)"
)


def trajectory_line(res: Any) -> str:
    """Distinct paths, edit distance, first divergence and the accuracy of consistent against
    inconsistent tasks, each with its interval. ``res`` is a
    :class:`evalnoise.stats.trajectory.TrajectoryConsistencyResult`, or a record's
    ``trajectory_consistency`` (:func:`evalnoise.consistency.trajectory_fields`) as attributes."""
    t = getattr(res, "trials_per_task", None)
    if t is None:
        t = int(max(res.n_trials)) if len(res.n_trials) else 0
    diverging = res.share_diverging_by_step_2
    diverged = diverging is not None and math.isfinite(diverging)
    divergence = (
        f"first divergence at step {fmt(res.mean_first_divergence, '.1f')} "
        f"[{fmt(res.first_divergence_ci_low, '.1f')}, {fmt(res.first_divergence_ci_high, '.1f')}]"
        f" ({pct(diverging, 0)} of diverging tasks by step 2)"
        if diverged
        else "no task diverges"
    )
    n_tasks = getattr(res, "n_tasks", None)
    if n_tasks is None:
        n_tasks = len(res.tasks)
    consistent = (
        f"{pct(res.accuracy_consistent)} "
        f"{_ci(res.accuracy_consistent_ci_low, res.accuracy_consistent_ci_high)} on "
        f"{res.n_consistent} consistent tasks"
    )
    others = (
        f"{pct(res.accuracy_inconsistent)} "
        f"{_ci(res.accuracy_inconsistent_ci_low, res.accuracy_inconsistent_ci_high)} on "
        f"{res.n_inconsistent} others"
    )
    if not res.n_consistent:
        accuracy = f"no task consistent (accuracy {others.replace(' others', ' tasks')})"
    elif not res.n_inconsistent:
        accuracy = f"every task consistent (accuracy {consistent.replace(' consistent', '')})"
    else:
        accuracy = f"accuracy {consistent} against {others}"
    return (
        f"trajectories over {n_tasks} tasks: {fmt(res.mean_distinct, '.1f')} distinct paths per "
        f"{t} trials [{fmt(res.distinct_ci_low, '.1f')}, {fmt(res.distinct_ci_high, '.1f')}], "
        f"edit distance {fmt(res.mean_edit_distance, '.2f')} "
        f"[{fmt(res.edit_distance_ci_low, '.2f')}, {fmt(res.edit_distance_ci_high, '.2f')}], "
        f"{divergence}; {accuracy}"
    )


def multiverse_line(res: Any) -> str:
    """The range of the headline over the analysis choices and the choice that moves it
    most. ``res`` is a :class:`evalnoise.multiverse.MultiverseResult`."""
    most = res.most_influential
    which = (
        f"{most} moves it most ({_points(res.influence[most])})"
        if most is not None
        else f"no choice moves it ({', '.join(res.factors) or 'none'} varied)"
    )
    return (
        f"the analysis choices move the headline by {_points(res.spread)} (range "
        f"[{pct(res.low)}, {pct(res.high)}] over {res.n_cells} analyses); {which}"
    )


def _points(value: Any) -> str:
    """A difference of two accuracies in percentage points, one decimal."""
    return "—" if value is None or not math.isfinite(value) else f"{100 * value:.1f} points"


def reliability_lines(record: Any) -> list[str]:
    """The lines of a group record's reliability fields
    (:class:`evalnoise.group_records.GroupRecord`: ``pass_k``, ``outcome_consistency``,
    ``multiverse``, ``trajectory_consistency``, as
    :func:`evalnoise.consistency.reliability_fields` writes them), each with its label; none
    for a record without them (withheld, or nothing counted)."""
    lines = []
    if record.pass_k:
        m = record.pass_k
        lines.append(passk_line(SimpleNamespace(**m, tasks=range(int(m["n_tasks"])))))
    if record.outcome_consistency:
        lines.append(
            outcome_consistency_line(SimpleNamespace(**record.outcome_consistency), record.icc)
        )
    if record.multiverse:
        lines.append("multiverse: " + multiverse_line(SimpleNamespace(**record.multiverse)))
    trajectories = getattr(record, "trajectory_consistency", None)
    if trajectories:
        lines.append(
            trajectory_line(SimpleNamespace(**trajectories))
            if trajectories.get("recorded")
            else TRAJECTORIES_NOT_RECORDED
        )
    return lines
