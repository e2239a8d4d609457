"""Whole-table analyses: per-group statistics, convergence and all-pairs comparisons.

These functions take a validated long frame with columns ``group, task, trial, score`` (see
:func:`evalnoise.trial_table.validate_trials`) and return plain records ready for JSON: numbers
only. They are what the CLI prints and what the pipeline's scripts write; the words around
them (the paper's reporting line, the readings' labels) are :mod:`evalnoise.group_text`'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import fields
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd

from evalnoise.group_records import ESTIMATE_FIELDS, GroupRecord, Reading
from evalnoise.stats import accuracy, compare, holm, icc_convergence, icc_oneway
from evalnoise.stats.accuracy import AccuracyResult
from evalnoise.stats.icc import ICCResult
from evalnoise.stats.proportion import wilson_interval

_RECORD_FIELDS = frozenset(f.name for f in fields(GroupRecord))
#: ICC fields that would read as the accuracy's beside it: they take the prefix ``icc_``.
ICC_PREFIXED = ("ci_low", "ci_high", "se")


def _icc_key(name: str) -> str:
    return f"icc_{name}" if name in ICC_PREFIXED else name


#: What a group record (:class:`evalnoise.group_records.GroupRecord`) takes from each
#: result, by the result's own field names: every field of the accuracy
#: (:class:`~evalnoise.stats.AccuracyResult`) the record declares, then every field of the
#: ICC (:class:`~evalnoise.stats.ICCResult`, whose ``statistic``/``df1``/``df2``/``pvalue``
#: are its F test of ICC = 0) the record declares under its name (``icc_`` before
#: :data:`ICC_PREFIXED`). A number a result gains reaches every artifact by gaining its
#: field in the record; the warnings of both are merged.
ACCURACY_FIELDS = tuple(
    f.name for f in fields(AccuracyResult) if f.name in _RECORD_FIELDS and f.name != "warnings"
)
ICC_FIELDS = tuple(
    f.name
    for f in fields(ICCResult)
    if _icc_key(f.name) in _RECORD_FIELDS and _icc_key(f.name) not in (*ACCURACY_FIELDS, "warnings")
)


def group_record(group: str, acc: AccuracyResult, icc: ICCResult) -> dict[str, Any]:
    """One group's numbers, with exactly the keys ``evalnoise analyze --json`` promises: the
    :data:`ACCURACY_FIELDS` and :data:`ICC_FIELDS` (the ICC's ``between_query_se`` among
    them, paper eq. 11) of the two results' ``to_dict()`` (NaN as None), under their own
    names but for :data:`ICC_PREFIXED` (``icc_ci_low``, ``icc_se``…): the typed
    :class:`evalnoise.group_records.GroupRecord`, serialised.

    ``mean`` is the mean of the task means (each task weighs 1), ``mean_pooled`` the mean
    over all trials (paper eq. 2; equal for a balanced design); ``ci_method`` says whether
    ``ci_low``/``ci_high`` are the clustered interval or the Wilson fallback used when every
    task mean is equal (see :func:`evalnoise.stats.accuracy`).
    """
    a, i = acc.to_dict(), icc.to_dict()
    return GroupRecord(
        group=group,
        **{k: a[k] for k in ACCURACY_FIELDS},
        **{_icc_key(k): i[k] for k in ICC_FIELDS},
        warnings=tuple(dict.fromkeys([*acc.warnings, *icc.warnings])),
    ).to_dict()


#: The numbers of a group record (:func:`group_stats`): None in an undefined record. The
#: record's keys (:func:`group_record`) but its counts and the ICC's verbal interpretation.
ESTIMATE_KEYS = ESTIMATE_FIELDS


def group_stats(
    scores: np.ndarray,
    tasks: np.ndarray,
    group: str,
    *,
    confidence: float = 0.95,
    cluster_se: str = "cr1",
    quantile: str = "normal",
) -> dict[str, Any]:
    """One group's record: accuracy (eq. 2–4, the task-clustered CI; :func:`accuracy`),
    ICC(1,1) with its variance components (:func:`icc_oneway`) and the between-query SE
    (paper eq. 6). The one implementation behind ``evalnoise analyze`` and the pipeline."""
    acc = accuracy(scores, tasks, confidence=confidence, cluster_se=cluster_se, quantile=quantile)
    icc = icc_oneway(scores, tasks, confidence=confidence)
    return group_record(group, acc, icc)


def undefined_group_record(group: str, reason: str) -> dict[str, Any]:
    """A group record with no estimate (nothing counted toward accuracy): every
    :data:`ESTIMATE_KEYS` value None, interpretation "undefined", ``reason`` the warning."""
    return GroupRecord(
        group=group, n_tasks=0, n_obs=0, interpretation="undefined", warnings=(reason,)
    ).to_dict()


#: The labelled readings of a group with failures (:func:`failure_readings`), in print order.
#: ``verified_as_failures`` is there only when a trial was verified after an agent failure.
READINGS = ("answered", "failures_as_incorrect", "verified_as_failures")


def failure_readings(
    trials: pd.DataFrame,
    *,
    confidence: float = 0.95,
    cluster_se: str = "cr1",
    quantile: str = "normal",
) -> dict[str, Reading]:
    """Two labelled readings of one group's accuracy, which no headline ever stands for.

    ``answered``: μ̂ (mean of task means, task-clustered CI; :func:`accuracy`) over the trials
    that ended ``ok`` with a score. ``failures_as_incorrect``: every trial that ended in a
    failure (crashed, no answer, timeout, oom_killed, infra_error) counted as 0 beside the
    answered ones; trials waiting for a grader's verdict (``unscored``, ``verifier_error``)
    are left out of both, and so are agents that never ran (``agent_setup_error``: its own
    undecided outcome). When a trial was verified after an agent failure
    (``verified_after``, :mod:`evalnoise.verified_after`; scored by its verdict in the first
    two), a third: ``verified_as_failures``, the stricter reading — as
    ``failures_as_incorrect``, but those trials counted as the failures they were (0).
    ``trials`` holds the group's final attempts (``task_id``, ``status``, ``score``,
    ``exit_code``, ``verified_after`` when known). Each reading is a
    :class:`evalnoise.group_records.Reading`: ``mean``, ``ci_low``, ``ci_high``, ``n_trials``,
    ``n_tasks`` (None estimates when no trial is in it).
    """
    from evalnoise.outcomes import UNDECIDED, final_attempts, outcome_of
    from evalnoise.verified_after import verified_mask

    last = final_attempts(trials)
    outcome = outcome_of(last).astype(str)
    score = pd.to_numeric(last["score"], errors="coerce").to_numpy(dtype=float)
    tasks = last["task_id"].astype(str).to_numpy()
    answered = outcome == "ok"
    # a trial waiting for its grader (unscored, verifier_error) is no failure of the agent
    failed = ~answered & ~np.isin(outcome, UNDECIDED)
    readings = [
        ("answered", answered, score),
        ("failures_as_incorrect", answered | failed, np.where(failed, 0.0, score)),
    ]
    verified = verified_mask(last) & answered
    if verified.any():
        strict = failed | verified
        readings.append(("verified_as_failures", answered | failed, np.where(strict, 0.0, score)))
    out = {}
    for name, keep, values in readings:
        if not keep.any():
            out[name] = Reading(mean=None, ci_low=None, ci_high=None, n_trials=0, n_tasks=0)
            continue
        acc = accuracy(
            values[keep],
            tasks[keep],
            confidence=confidence,
            cluster_se=cluster_se,
            quantile=quantile,
        )
        out[name] = Reading(
            mean=acc.mean,
            ci_low=acc.ci_low,
            ci_high=acc.ci_high,
            n_trials=int(keep.sum()),
            n_tasks=acc.n_tasks,
        )
    return out


def analyze_frame(
    frame: pd.DataFrame,
    *,
    confidence: float = 0.95,
    cluster_se: str = "cr1",
    quantile: str = "normal",
) -> list[dict[str, Any]]:
    """Accuracy (eq. 2–4 and the clustered CI) and ICC(1,1) per group, sorted by group."""
    return [
        group_stats(
            part["score"].to_numpy(),
            part["task"].to_numpy(),
            str(group),
            confidence=confidence,
            cluster_se=cluster_se,
            quantile=quantile,
        )
        for group, part in frame.groupby("group", sort=True)
    ]


def convergence_records(
    frame: pd.DataFrame, *, n_subsamples: int = 200, seed: int = 0, tolerance: float = 0.02
) -> list[dict[str, Any]]:
    """ICC convergence over trials per group: one record per (group, trial count)."""
    rows = []
    for group, part in frame.groupby("group", sort=True):
        res = icc_convergence(
            part["score"].to_numpy(),
            part["task"].to_numpy(),
            n_subsamples=n_subsamples,
            seed=seed,
            tolerance=tolerance,
        )
        for i, t in enumerate(res.trials):
            rows.append(
                {
                    "group": str(group),
                    "trials": int(t),
                    "icc_mean": float(res.icc_mean[i]),
                    "icc_p05": float(res.icc_low[i]),
                    "icc_p95": float(res.icc_high[i]),
                    "plugin_mean": float(res.icc_plugin_mean[i]),
                    "plugin_p05": float(res.icc_plugin_low[i]),
                    "plugin_p95": float(res.icc_plugin_high[i]),
                    "full_icc": res.full_icc,
                    "full_plugin": res.full_icc_plugin,
                    "converged_at": res.converged_at,
                }
            )
    return rows


def compare_all_pairs(
    frame: pd.DataFrame, *, confidence: float = 0.95, n_resamples: int = 10_000, seed: int = 0
) -> list[dict[str, Any]]:
    """Every pair of groups (sorted names, diff = a − b), each p also Holm-adjusted.

    Each record is :meth:`evalnoise.stats.ComparisonResult.to_dict` (NaN as None; ``mcnemar``
    None when McNemar does not apply) plus ``pvalue_holm`` and ``mcnemar.pvalue_holm``, the
    paired t's and McNemar's p-values Holm-adjusted within their own family (all pairs;
    None when undefined).
    """
    parts = {str(g): p for g, p in frame.groupby("group", sort=True)}
    records = []
    for a, b in combinations(sorted(parts), 2):
        pa, pb = parts[a], parts[b]
        res = compare(
            pa["task"].to_numpy(),
            pa["trial"].to_numpy(),
            pa["score"].to_numpy(),
            pb["task"].to_numpy(),
            pb["trial"].to_numpy(),
            pb["score"].to_numpy(),
            names=(a, b),
            confidence=confidence,
            n_resamples=n_resamples,
            seed=seed,
        )
        records.append(res.to_dict())
    if records:
        holm_comparisons(records)
    return records


def holm_comparisons(records: list[dict[str, Any]], *, undefined: float | None = None) -> None:
    """Holm-adjust the comparison records' paired-t ``pvalue`` into ``pvalue_holm`` and
    McNemar's ``pvalue`` into ``mcnemar.pvalue_holm``, each family over all ``records``
    (:func:`holm_into`); an undefined adjusted p is ``undefined`` (None, as ``to_dict()``
    writes NaN), and a record without McNemar keeps ``mcnemar`` None."""
    holm_into(records, lambda r: r["pvalue"], "pvalue_holm", undefined=undefined)
    holm_into(
        records,
        lambda r: (r["mcnemar"] or {}).get("pvalue"),
        "pvalue_holm",
        nested="mcnemar",
        undefined=undefined,
    )


def holm_into(
    records: list[dict[str, Any]],
    get,
    key: str,
    nested: str | None = None,
    *,
    undefined: float | None = float("nan"),
) -> None:
    """Holm-adjust the p-values ``get(r)`` over ``records`` as one family and store each in
    ``r[key]`` (``r[nested][key]`` with ``nested``): :func:`evalnoise.stats.holm`,
    p̃_(j) = min(1, max_{i ≤ j} (m − i + 1) p_(i)) over the m defined p-values. A p-value
    that is None or not finite is not in the family; its adjusted value is ``undefined``. A
    record whose ``r[nested]`` is None (the test did not apply) is left as it is."""
    p = np.array([np.nan if get(r) is None else get(r) for r in records], dtype=float)
    p[~np.isfinite(p)] = np.nan
    adjusted = holm(p) if len(p) else p
    for r, v in zip(records, adjusted, strict=True):
        target = r[nested] if nested else r
        if target is not None:
            target[key] = float(v) if np.isfinite(v) else undefined


#: The starts of the ICC warnings that say trials of a task did not vary (stats.icc_oneway).
ZERO_WITHIN_WARNINGS = ("within-task variance is zero", "every score is equal")


def fixed_seed_warnings(warnings: Sequence[str], seed: str) -> tuple[str, ...]:
    """A group's ``warnings``, each that says its trials did not vary explained by the seed
    when its table says they shared one.

    ``seed`` describes the seed (e.g. ``"seed 42"``). A model that honours a fixed seed
    (and temperature 0) answers a task the same way on every trial, so zero within-task
    variance is the seed's doing, not a sign of a noise-free agent.
    """
    note = (
        f"; every trial of a task ran with the same {seed} (the table's seed column): a "
        "model that honours its seed answers the same way each time, so these trials "
        "repeat one measurement and cannot show trial-to-trial noise; rerun with a "
        "different seed per trial (or none) to measure it"
    )
    return tuple(w + note if w.startswith(ZERO_WITHIN_WARNINGS) else w for w in warnings)


#: Columns of :func:`per_task_table` (what :func:`evalnoise.report.charts.per_task_chart`
#: draws).
PER_TASK_COLUMNS = ("group", "task", "n", "mean", "ci_low", "ci_high")


def per_task_table(frame: pd.DataFrame, *, confidence: float = 0.95) -> pd.DataFrame:
    """Per-task accuracy with a Wilson interval over that task's trials (paper Fig. 1).

    Parameters
    ----------
    frame : long frame with columns ``group, task, trial, score`` (score in [0, 1]).
    confidence : level of the interval.

    Returns
    -------
    DataFrame with columns :data:`PER_TASK_COLUMNS`: one row per (group, task); ``n`` is the
    task's number of trials, ``mean`` its mean score, ``ci_low``/``ci_high`` the Wilson
    interval (see :func:`evalnoise.stats.proportion.wilson_interval`). Sorted by group, then
    mean descending, then task, so the order is deterministic.
    """
    missing = [c for c in ("group", "task", "score") if c not in frame.columns]
    if missing:
        raise ValueError(f"per_task_table: missing columns {missing}")
    if frame.empty:
        raise ValueError("per_task_table: the frame has no rows")
    agg = (
        frame.groupby(["group", "task"], sort=True)["score"]
        .agg(n="size", mean="mean")
        .reset_index()
    )
    low, high = wilson_interval(agg["mean"].to_numpy(), agg["n"].to_numpy(), confidence)
    agg["ci_low"] = low
    agg["ci_high"] = high
    agg["group"] = agg["group"].astype(str)
    agg["task"] = agg["task"].astype(str)
    agg["n"] = agg["n"].astype("int64")
    agg = agg.sort_values(["group", "mean", "task"], ascending=[True, False, True])
    return agg.reset_index(drop=True)[list(PER_TASK_COLUMNS)]
