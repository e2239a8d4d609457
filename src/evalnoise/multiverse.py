"""The multiverse of one group's analysis: the headline accuracy under every combination of
the analysis choices the run leaves open, the range, and which choice moves it most.

A run's headline is one analysis among several defensible ones (Steegen et al. 2016,
"Increasing transparency through a multiverse analysis"; METR's eval-analysis-public shows
one for its time horizons). The choices evalnoise itself makes, each a *factor* here:

- ``estimand``: ``task_means`` (the mean of the task means, every task weighing 1: the
  headline) or ``pooled`` (the mean over trials, paper eq. 2);
- ``infra_policy``: ``as_incorrect``, ``exclude`` and, when some trial was retried, ``retry``
  (:func:`evalnoise.attribution.policy_sensitivity.counted_under_policies`: the policy
  sensitivity is this factor's column);
- ``verdict_after_failure``, when the table flags trials whose agent failed (timed out,
  exited non-zero) but whose verifier left a valid verdict: ``verifier_decides`` (the
  benchmarks' rule) or ``agent_failure_scores_0`` (the stricter reading);
- ``judge``, when more than one judge scored the trials: each judge's score column;
- ``cluster_se``: ``cr1`` or ``miller`` — the interval only, never the mean.

Every cell is the single analysis it names: the accuracy of
:func:`evalnoise.stats.accuracy` (``task_means``) or the pooled mean with its task-clustered
interval (``pooled``) over the trials the policy counts. A factor's *influence* is the largest
range of the headline across its levels with every other factor held fixed; the factor with
the largest influence moves the headline most.

References
----------
Steegen, S., Tuerlinckx, F., Gelman, A. & Vanpaemel, W. (2016). Increasing transparency
through a multiverse analysis. *Perspectives on Psychological Science* 11(5), 702–712.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from evalnoise.attribution.policy_sensitivity import POLICIES, counted_under_policies
from evalnoise.stats._results import DictResult
from evalnoise.stats._task_intervals import pooled_mean_interval
from evalnoise.stats.accuracy import accuracy

__all__ = ["FACTORS", "MultiverseResult", "multiverse", "multiverse_for_group"]

#: The factors, in the order the table's columns take.
FACTORS = ("estimand", "infra_policy", "verdict_after_failure", "judge", "cluster_se")
#: The default flag column: true where the agent failed but the verifier left a verdict.
FAILURE_FLAG = "agent_failed"


@dataclass(frozen=True)
class MultiverseResult(DictResult):
    """The headline under every combination of the applicable analysis choices.

    Attributes
    ----------
    levels : every factor's applicable levels (a factor with one level is no choice here).
    factors : the factors with two or more levels.
    cells : one record per combination: each factor's level, ``mean``, ``ci_low``,
        ``ci_high``, ``n_trials``, ``n_tasks``.
    reference : the levels of the run's own analysis; ``headline`` its mean.
    headline : the reference cell's mean.
    low, high : the smallest and largest mean over the cells; ``spread`` = high − low.
    spread : how far the analysis choices move the headline.
    influence : per factor, the largest range of the mean across its levels with the other
        factors fixed.
    interval_influence : the same for the interval's width.
    most_influential : the factor with the largest influence (None when no choice moves the
        headline).
    n_cells : number of cells.
    confidence : the intervals' level.
    notes : what could not be varied, and why.
    """

    levels: dict[str, tuple[str, ...]]
    factors: tuple[str, ...]
    cells: tuple[dict[str, Any], ...]
    reference: dict[str, str]
    headline: float
    low: float
    high: float
    spread: float
    influence: dict[str, float]
    interval_influence: dict[str, float]
    most_influential: str | None
    n_cells: int
    confidence: float
    notes: tuple[str, ...]

    def to_frame(self) -> pd.DataFrame:
        """The cells as a table: one row per combination."""
        return pd.DataFrame(list(self.cells))


def _truthy(values: pd.Series) -> np.ndarray:
    return values.astype("boolean").fillna(False).to_numpy(dtype=bool)


def _influence(cells: pd.DataFrame, factor: str, value: str) -> float:
    others = [f for f in FACTORS if f != factor]
    ranges = cells.groupby(others, sort=False)[value].agg(lambda v: v.max() - v.min())
    return float(ranges.max())


def multiverse(
    trials: pd.DataFrame,
    *,
    judges: Mapping[str, str] | None = None,
    failure_flag: str = FAILURE_FLAG,
    reference: Mapping[str, str] | None = None,
    on_exhausted: str = "as_incorrect",
    confidence: float = 0.95,
) -> MultiverseResult:
    """Every cell of the multiverse of one group (module docstring).

    Parameters
    ----------
    trials : one group's attempts: ``task_id``, ``trial``, ``status``, the score columns,
        ``attempt`` when trials were retried, and ``failure_flag`` when the run flags trials
        whose agent failed but whose verifier left a verdict.
    judges : judge name → its score column (default ``{"score": "score"}``: one judge).
    failure_flag : the flag's column; the factor is left out when the column is absent or
        never true.
    reference : the run's own levels (default: ``task_means``, ``as_incorrect``,
        ``verifier_decides``, the first judge, ``cr1``).
    on_exhausted : how ``retry`` counts a trial whose last attempt is still an infra outcome.
    confidence : the intervals' level.
    """
    judges = dict(judges or {"score": "score"})
    missing = [c for c in ("task_id", "trial", "status", *judges.values()) if c not in trials]
    if missing:
        raise ValueError(f"the group's trials lack the columns {missing}")
    notes: list[str] = []
    flagged = (
        _truthy(trials[failure_flag])
        if failure_flag in trials.columns
        else np.zeros(len(trials), bool)
    )
    verdicts = ["verifier_decides"]
    if flagged.any():
        verdicts.append("agent_failure_scores_0")
    else:
        notes.append(
            f"verdict after failure: no trial is flagged ({failure_flag!r}), one reading only"
        )
    rows: list[dict[str, Any]] = []
    policies_seen: list[str] = []
    for judge, column in judges.items():
        for verdict in verdicts:
            table = trials.copy()
            score = pd.to_numeric(table[column], errors="coerce").astype(float)
            if verdict == "agent_failure_scores_0":
                score = score.mask(flagged & score.notna().to_numpy(), 0.0)
            table["score"] = score
            for policy, plan in counted_under_policies(table, on_exhausted=on_exhausted).items():
                if policy == "exclude" and not isinstance(plan, str) and plan[0].excluded.empty:
                    plan = "not a choice: no trial has an infra outcome to leave out"
                if isinstance(plan, str):
                    if f"{policy}: {plan}" not in notes:
                        notes.append(f"{policy}: {plan}")
                    continue
                if policy not in policies_seen:
                    policies_seen.append(policy)
                counted = plan[0].counted
                y = pd.to_numeric(counted["score"], errors="coerce").to_numpy(dtype=float)
                scored = ~np.isnan(y)
                y, tasks = y[scored], counted["task_id"].astype(str).to_numpy()[scored]
                for se in ("cr1", "miller"):
                    base = {
                        "infra_policy": policy,
                        "verdict_after_failure": verdict,
                        "judge": judge,
                        "cluster_se": se,
                        "n_trials": int(y.size),
                        "n_tasks": int(np.unique(tasks).size),
                    }
                    if y.size == 0:
                        for estimand in ("task_means", "pooled"):
                            rows.append({"estimand": estimand, **base, "mean": np.nan,
                                         "ci_low": np.nan, "ci_high": np.nan})  # fmt: skip
                        continue
                    acc = accuracy(y, tasks, confidence=confidence, cluster_se=se)
                    rows.append(
                        {
                            "estimand": "task_means",
                            **base,
                            "mean": acc.mean,
                            "ci_low": acc.ci_low,
                            "ci_high": acc.ci_high,
                        }
                    )
                    mean, _, lo, hi = pooled_mean_interval(y, tasks, confidence, cluster_se=se)
                    rows.append(
                        {"estimand": "pooled", **base, "mean": mean, "ci_low": lo, "ci_high": hi}
                    )
    cells = pd.DataFrame(rows)[[*FACTORS, "mean", "ci_low", "ci_high", "n_trials", "n_tasks"]]
    levels = {
        "estimand": ("task_means", "pooled"),
        "infra_policy": tuple(p for p in POLICIES if p in policies_seen),
        "verdict_after_failure": tuple(verdicts),
        "judge": tuple(judges),
        "cluster_se": ("cr1", "miller"),
    }
    ref = {
        "estimand": "task_means",
        "infra_policy": "as_incorrect",
        "verdict_after_failure": "verifier_decides",
        "judge": next(iter(judges)),
        "cluster_se": "cr1",
        **dict(reference or {}),
    }
    for factor, level in ref.items():
        if level not in levels.get(factor, ()):
            raise ValueError(f"reference {factor} {level!r} is not one of {levels[factor]}")
    at_ref = np.logical_and.reduce([cells[f] == ref[f] for f in FACTORS])
    headline = float(cells.loc[at_ref, "mean"].iloc[0])
    cells = cells.assign(width=cells["ci_high"] - cells["ci_low"])
    varied = tuple(f for f in FACTORS if len(levels[f]) > 1)
    influence = {f: _influence(cells, f, "mean") for f in varied}
    widths = {f: _influence(cells, f, "width") for f in varied}
    finite = cells["mean"].dropna()
    low = float(finite.min()) if len(finite) else float("nan")
    high = float(finite.max()) if len(finite) else float("nan")
    most = max(influence, key=lambda f: (influence[f], -FACTORS.index(f))) if influence else None
    if most is not None and not influence[most] > 0:
        most = None  # no choice moves the headline
    return MultiverseResult(
        levels=levels,
        factors=varied,
        cells=tuple(cells.drop(columns="width").to_dict("records")),
        reference=ref,
        headline=headline,
        low=low,
        high=high,
        spread=high - low,
        influence=influence,
        interval_influence=widths,
        most_influential=most,
        n_cells=len(cells),
        confidence=float(confidence),
        notes=tuple(notes),
    )


def multiverse_for_group(frame: pd.DataFrame, **options: Any) -> MultiverseResult:
    """:func:`multiverse` of one group's frame: its attempts (``task_id``, ``trial``,
    ``status``, ``score``, as :class:`evalnoise.pipeline.collect.GroupData` keeps them), or
    the counted frame of :func:`evalnoise.trial_table.validate_trials` (``task, trial,
    score``), which carries no outcome: every trial is then ``ok`` and only the estimand and
    the SE vary."""
    if "task_id" not in frame.columns and "task" in frame.columns:
        frame = frame.rename(columns={"task": "task_id"})
    if "status" not in frame.columns:
        frame = frame.assign(status="ok")
    return multiverse(frame, **options)
