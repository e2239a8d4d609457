"""The multiverse of one group's analysis: the headline accuracy under every combination of
the analysis choices the run leaves open, the range, and which choice moves it most.

A run's headline is one analysis among several defensible ones (Steegen et al. 2016,
"Increasing transparency through a multiverse analysis"; METR's eval-analysis-public shows
one for its time horizons). The choices evalnoise itself makes, each a *factor* here:

- ``estimand``: ``task_means`` (the mean of the task means, every task weighing 1: the
  headline) or ``pooled`` (the mean over trials, paper eq. 2);
- ``infra_policy``: ``as_incorrect``, ``exclude`` and, when some trial was retried, ``retry``
  (:func:`counted_under_policies`; :func:`policy_cells` is this factor's single analyses, and
  the attribution's policy sensitivity,
  :func:`evalnoise.attribution.policy_sensitivity.policy_sensitivity`, is read from it: the
  policy sensitivity is this factor's column);
- ``verdict_after_failure``, when the table flags trials whose agent failed (timed out,
  exited non-zero) but whose verifier left a valid verdict: ``verifier_decides`` (the
  benchmarks' rule) or ``agent_failure_scores_0`` (the stricter reading);
- ``judge``, when more than one scorer scored the trials (the reference scorer and the
  judge stage's judges, :func:`with_scorers`): each scorer's score column;
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

from evalnoise.outcomes import attempt_order
from evalnoise.runner.infra_policies import InfraPolicy, PolicyResult, apply_infra_policy
from evalnoise.schema import TRIAL_KEY
from evalnoise.stats._results import DictResult
from evalnoise.stats._task_intervals import pooled_mean_interval
from evalnoise.stats.accuracy import AccuracyResult, accuracy

__all__ = [
    "FACTORS",
    "POLICIES",
    "MultiverseResult",
    "PolicyCell",
    "counted_under_policies",
    "multiverse",
    "multiverse_for_group",
    "policy_cells",
    "with_scorers",
]

#: the infra policies compared, in print order; the first is the reference
POLICIES = ("as_incorrect", "exclude", "retry")

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


def counted_under_policies(
    trials: pd.DataFrame, *, on_exhausted: str = "as_incorrect"
) -> dict[str, tuple[PolicyResult, str] | str]:
    """Each of :data:`POLICIES` applied to one group's attempts: the policy's result
    (:func:`evalnoise.runner.infra_policies.apply_infra_policy`: the counted and excluded
    rows) with a note on what it counts, or why the policy is not applicable:
    ``as_incorrect`` and ``exclude`` on the first attempt of every trial, ``retry`` on the
    last (only when some trial was retried)."""
    key = [c for c in TRIAL_KEY if c in trials.columns]
    for needed in ("task_id", "trial"):
        if needed not in key:
            raise ValueError(f"the table has no {needed!r} column")
    frame = trials if "attempt" in trials.columns else trials.assign(attempt=1)
    rows = attempt_order(frame, key)
    if not rows.in_order:
        frame = frame.iloc[rows.order]
    first = frame if rows.first.all() else frame[rows.first]
    retried = bool((~rows.first).any())
    without = " (retries ignored: what the run would have scored without them)" if retried else ""
    exhausted = "scores 0" if on_exhausted == "as_incorrect" else "is left out"
    out: dict[str, tuple[PolicyResult, str] | str] = {
        "as_incorrect": (
            apply_infra_policy(first, InfraPolicy("as_incorrect"), key=tuple(key)),
            f"first attempt of every trial; an infra outcome scores 0{without}",
        ),
        "exclude": (
            apply_infra_policy(first, InfraPolicy("exclude"), key=tuple(key)),
            f"first attempt of every trial; infra outcomes are left out{without}",
        ),
    }
    if retried:
        policy = InfraPolicy("retry", max(rows.most_attempts, 1), on_exhausted)
        out["retry"] = (
            apply_infra_policy(frame, policy, key=tuple(key)),
            f"last attempt of every trial; an infra outcome on the last attempt {exhausted}",
        )
    else:
        out["retry"] = "not applicable: no trial has more than one attempt"
    return out


@dataclass(frozen=True)
class PolicyCell:
    """The single analysis under one infra policy: the policy's rows
    (:class:`~evalnoise.runner.infra_policies.PolicyResult`), what it counts (``note``), the
    counted, scored trials' ``scores`` and ``tasks``, how many counted trials had no score
    (``n_unscored``), and ``accuracy``, :func:`evalnoise.stats.accuracy` of those trials
    (the mean of task means with its task-clustered interval), None when none was scored."""

    applied: PolicyResult
    note: str
    scores: np.ndarray
    tasks: np.ndarray
    n_unscored: int
    accuracy: AccuracyResult | None


def policy_cells(
    trials: pd.DataFrame,
    *,
    on_exhausted: str = "as_incorrect",
    confidence: float = 0.95,
    cluster_se: str = "cr1",
    quantile: str = "normal",
) -> dict[str, PolicyCell | str]:
    """The multiverse's infra-policy factor for one scoring of one group: per policy of
    :data:`POLICIES` (:func:`counted_under_policies`), its :class:`PolicyCell` — the rows
    it counts, their ``score`` (NaN = unscored, left out) and the accuracy μ̂ = mean over
    tasks of the task means with its task-clustered CI (paper eq. 2–4,
    :func:`evalnoise.stats.accuracy`) — or why it is not applicable."""
    out: dict[str, PolicyCell | str] = {}
    for policy, plan in counted_under_policies(trials, on_exhausted=on_exhausted).items():
        if isinstance(plan, str):
            out[policy] = plan
            continue
        applied, note = plan
        y = pd.to_numeric(applied.counted["score"], errors="coerce").to_numpy(dtype=float)
        scored = ~np.isnan(y)
        tasks = applied.counted["task_id"].astype(str).to_numpy()[scored]
        acc = None
        if scored.any():
            acc = accuracy(
                y[scored], tasks, confidence=confidence, cluster_se=cluster_se, quantile=quantile
            )
        out[policy] = PolicyCell(applied, note, y[scored], tasks, int((~scored).sum()), acc)
    return out


def with_scorers(
    attempts: pd.DataFrame, scorers: Mapping[str, pd.DataFrame]
) -> tuple[pd.DataFrame, dict[str, str]]:
    """``attempts`` with one score column per scorer (``score@NAME``), for the ``judge``
    factor: each scorer's table (the reference scorer's shards, each judge's shards) holds
    the same attempts, keyed by ``task_id``, ``trial``, ``attempt`` and the variant labels
    the tables share; an attempt a scorer has no row for is unscored by it (NaN), never 0.
    Returns the table and the ``judges`` mapping of :func:`multiverse` (name → column)."""
    key = [c for c in (*TRIAL_KEY, "attempt") if c in attempts.columns]
    key = [k for k in key if all(k in t.columns for t in scorers.values())]
    base = attempts.reset_index(drop=True)
    columns: dict[str, str] = {}
    for name, table in scorers.items():
        column = f"score@{name}"
        if table[key].duplicated().any():
            raise ValueError(f"scorer {name!r}: an attempt has two rows (key {key})")
        scores = table[[*key, "score"]].rename(columns={"score": column})
        scores = scores.astype({k: base[k].dtype for k in key}, errors="ignore")
        base = base.merge(scores, on=key, how="left", validate="one_to_one")
        columns[name] = column
    return base, columns


def _declared(
    factor: str, level: str, levels: Mapping[str, tuple[str, ...]], on_exhausted: str
) -> str:
    """The level that gives the declared one's numbers when the declared one is no choice
    here: ``exclude`` without an infra outcome counts as ``as_incorrect`` does; ``retry``
    without a retried trial counts the first attempts, as its ``on_exhausted`` policy does;
    ``agent_failure_scores_0`` without a flagged trial reads as ``verifier_decides``."""
    have = levels.get(factor, ())
    if level in have:
        return level
    if factor == "infra_policy" and level == "retry" and on_exhausted in have:
        return on_exhausted
    if factor == "infra_policy" and level in ("exclude", "retry"):
        return "as_incorrect"
    if factor == "verdict_after_failure" and level == "agent_failure_scores_0":
        return "verifier_decides"
    raise ValueError(f"reference {factor} {level!r} is not one of {have}")


def multiverse(
    trials: pd.DataFrame,
    *,
    judges: Mapping[str, str] | None = None,
    failure_flag: str = FAILURE_FLAG,
    reference: Mapping[str, str] | None = None,
    on_exhausted: str = "as_incorrect",
    confidence: float = 0.95,
    quantile: str = "normal",
) -> MultiverseResult:
    """Every cell of the multiverse of one group (module docstring).

    Parameters
    ----------
    trials : one group's attempts: ``task_id``, ``trial``, ``status``, the score columns,
        ``attempt`` when trials were retried, and ``failure_flag`` when the run flags trials
        whose agent failed but whose verifier left a verdict.
    judges : scorer name → its score column (default ``{"score": "score"}``: one scorer);
        :func:`with_scorers` gives the reference scorer's and every judge's.
    failure_flag : the flag's column; the factor is left out when the column is absent or
        never true.
    reference : the run's own levels (default: ``task_means``, ``as_incorrect``,
        ``verifier_decides``, the first judge, ``cr1``); a declared level that is no choice
        in these trials stands for the level that gives its numbers (``exclude`` without an
        infra outcome is ``as_incorrect``, ``retry`` without a retry its ``on_exhausted``,
        ``agent_failure_scores_0`` without a flagged trial ``verifier_decides``).
    on_exhausted : how ``retry`` counts a trial whose last attempt is still an infra outcome.
    confidence, quantile : the intervals' level and quantile (:func:`evalnoise.stats.accuracy`).
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
            # the policies applied once; the two SEs are two intervals of the same trials
            cells = policy_cells(
                table,
                on_exhausted=on_exhausted,
                confidence=confidence,
                cluster_se="cr1",
                quantile=quantile,
            )
            for policy, cell in cells.items():
                nothing_left_out = not isinstance(cell, str) and cell.applied.excluded.empty
                if policy == "exclude" and nothing_left_out:
                    cell = "not a choice: no trial has an infra outcome to leave out"
                if isinstance(cell, str):
                    if f"{policy}: {cell}" not in notes:
                        notes.append(f"{policy}: {cell}")
                    continue
                if policy not in policies_seen:
                    policies_seen.append(policy)
                for se in ("cr1", "miller"):
                    base = {
                        "infra_policy": policy,
                        "verdict_after_failure": verdict,
                        "judge": judge,
                        "cluster_se": se,
                        "n_trials": int(cell.scores.size),
                        "n_tasks": int(np.unique(cell.tasks).size),
                    }
                    rows.extend(_estimand_rows(cell, base, se, confidence, quantile))
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
    ref = {f: _declared(f, level, levels, on_exhausted) for f, level in ref.items()}
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


def _estimand_rows(
    cell: Any, base: Mapping[str, Any], se: str, confidence: float, quantile: str
) -> list[dict[str, Any]]:
    """The two estimands' cells of one policy cell under one SE: the mean of task means
    (:func:`evalnoise.stats.accuracy`) and the pooled mean with its clustered interval
    (:func:`evalnoise.stats._task_intervals.pooled_mean_interval`); NaN when nothing was
    scored."""
    if cell.accuracy is None:
        nan = {"mean": np.nan, "ci_low": np.nan, "ci_high": np.nan}
        return [{"estimand": e, **base, **nan} for e in ("task_means", "pooled")]
    acc = cell.accuracy
    if se != "cr1":
        acc = accuracy(
            cell.scores, cell.tasks, confidence=confidence, cluster_se=se, quantile=quantile
        )
    mean, _, lo, hi = pooled_mean_interval(cell.scores, cell.tasks, confidence, cluster_se=se)
    return [
        {"estimand": "task_means", **base, "mean": acc.mean, "ci_low": acc.ci_low,
         "ci_high": acc.ci_high},
        {"estimand": "pooled", **base, "mean": mean, "ci_low": lo, "ci_high": hi},
    ]  # fmt: skip


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
