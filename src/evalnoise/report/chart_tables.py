"""The tables the report's charts draw, prepared once for :mod:`evalnoise.report.specs`.

Each ``*_frame`` function checks that its input has the columns its chart documents (a
``ValueError`` names the missing ones) and returns the rows the chart draws — ranks, tidy
rows, labels, why a task is singled out — with the orders the chart keeps (groups, pairs,
profiles, agents). Sort orders and tie-breaks are fixed so a chart is a pure function of its
table. No drawing here: the specs turn these rows into Vega-Lite.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from evalnoise.column_names import CONVERGENCE_CHART_COLUMNS
from evalnoise.report.health import NOT_A_MEASUREMENT

#: Legend values of the resource-sensitivity chart: why a task is singled out.
SINGLED_OUT = ("q ≤ alpha and need between the limits", "q ≤ alpha", "need between the limits")
#: Legend values of the ``valid`` column in the infra chart.
MEASUREMENT_STATUS = ("measurement", NOT_A_MEASUREMENT.lower())
#: Estimator label → (mean, 5th percentile, 95th percentile, full-data value) columns.
ESTIMATORS = {
    "ICC(1,1) ANOVA": ("icc_mean", "icc_p05", "icc_p95", "full_icc"),
    "plug-in (paper eq. 6–7)": ("plugin_mean", "plugin_p05", "plugin_p95", "full_plugin"),
}
#: Questions a panel of the per-question chart draws at most: past it, every k-th rank.
PER_TASK_POINTS = 1000
#: Columns the per-question chart requires (:func:`evalnoise.analysis.per_task_table`).
PER_TASK_COLUMNS = ("group", "task", "n", "mean", "ci_low", "ci_high")
#: Columns of the tidy convergence table the convergence chart requires.
TIDY_CONVERGENCE_COLUMNS = ("group", "trials", "estimator", "mean", "low", "high")
BUDGET_COLUMNS = ("n_tasks", "trials", "se")
DSTUDY_COLUMNS = ("group", "budget", "se", "tasks", "trials")
#: Columns of the pass^k table the pass^k chart requires (:func:`passk_table`).
PASSK_COLUMNS = ("group", "k", "pass_hat", "ci_low", "ci_high")
INFRA_COLUMNS = (
    "resource_profile",
    "agent",
    "accuracy",
    "ci_low",
    "ci_high",
    "infra_error_rate",
    "infra_ci_low",
    "infra_ci_high",
)
COMPARISON_COLUMNS = ("a", "b", "diff", "ci_low", "ci_high")
RESOURCE_SENSITIVITY_COLUMNS = (
    "agent",
    "profile_a",
    "profile_b",
    "task_id",
    "accuracy_a",
    "accuracy_b",
    "pvalue_adjusted",
    "significant",
)


def in_order(values_: Iterable[object]) -> list[str]:
    """Distinct values as strings, in first-appearance order (the caller's order)."""
    return list(dict.fromkeys(str(v) for v in values_))


def require(frame: pd.DataFrame, columns: Iterable[str], what: str) -> None:
    """Raise ``TypeError``/``ValueError`` unless ``frame`` is a non-empty DataFrame with
    ``columns``; the message names the missing ones."""
    if not isinstance(frame, pd.DataFrame):
        raise TypeError(f"{what}: expected a pandas DataFrame, got {type(frame).__name__}")
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(
            f"{what}: missing columns {missing} (have {list(map(str, frame.columns))})"
        )
    if frame.empty:
        raise ValueError(f"{what}: the table has no rows")


# --- per-question accuracy (paper Fig. 1) ----------------------------------------------------


@dataclass(frozen=True)
class PerTaskFrame:
    """What the per-question chart draws: ``rows`` (group, task, n, mean, ci_low, ci_high,
    rank), its ``title`` and the groups in panel order."""

    rows: pd.DataFrame
    title: str
    groups: list[str]


def per_task_frame(per_task: pd.DataFrame, *, confidence: float = 0.95) -> PerTaskFrame:
    """Rank each group's questions by accuracy (ties by task id); past
    :data:`PER_TASK_POINTS` questions keep ranks 1, 1 + k, 1 + 2k, … and n, with
    k = ⌈n / PER_TASK_POINTS⌉ (the title says so)."""
    require(per_task, PER_TASK_COLUMNS, "per_task_chart")
    df = per_task[list(PER_TASK_COLUMNS)].copy()
    df["group"] = df["group"].astype(str)
    df["task"] = df["task"].astype(str)
    df = df.sort_values(["group", "mean", "task"], ascending=[True, False, True])
    df["rank"] = df.groupby("group", sort=False).cumcount() + 1
    size = df.groupby("group", sort=False)["rank"].transform("size")
    step = np.ceil(size / PER_TASK_POINTS).astype("int64")
    df = df[((df["rank"] - 1) % step == 0) | (df["rank"] == size)].reset_index(drop=True)
    title = f"Per-question accuracy with {confidence:.0%} confidence intervals"
    if int(step.max()) > 1:
        title += (
            f" (a group of more than {PER_TASK_POINTS:,} questions: every k-th rank, "
            f"k = ⌈questions / {PER_TASK_POINTS:,}⌉)"
        )
    return PerTaskFrame(df, title, sorted(df["group"].unique()))


# --- ICC convergence (paper Fig. 2, 4, 5) ----------------------------------------------------


def tidy_convergence(convergence: pd.DataFrame) -> pd.DataFrame:
    """The wide convergence table as one row per (group, trials, estimator).

    Input columns: :data:`CONVERGENCE_CHART_COLUMNS`, optionally ``full_icc`` and
    ``full_plugin`` (other columns are ignored). Output columns: ``group, trials, estimator,
    mean, low, high, reference`` (reference: the estimate on all trials, NaN when not given);
    estimators are the keys of :data:`ESTIMATORS`. Rows whose mean is NaN (undefined ICC)
    are dropped.
    """
    require(convergence, CONVERGENCE_CHART_COLUMNS, "tidy_convergence")
    parts = []
    for label, (mean, low, high, full) in ESTIMATORS.items():
        part = convergence[["group", "trials", mean, low, high]].rename(
            columns={mean: "mean", low: "low", high: "high"}
        )
        part.insert(2, "estimator", label)
        part["reference"] = (
            pd.to_numeric(convergence[full], errors="coerce")
            if full in convergence.columns
            else np.nan
        )
        parts.append(part)
    out = pd.concat(parts, ignore_index=True)
    out["group"] = out["group"].astype(str)
    out["trials"] = out["trials"].astype("int64")
    for col in ("mean", "low", "high", "reference"):
        out[col] = pd.to_numeric(out[col], errors="coerce").astype(float)
    out = out[np.isfinite(out["mean"])]
    order = {label: i for i, label in enumerate(ESTIMATORS)}
    out = out.assign(_o=out["estimator"].map(order))
    out = out.sort_values(["group", "_o", "trials"]).drop(columns="_o")
    return out.reset_index(drop=True)


@dataclass(frozen=True)
class ConvergenceFrame:
    """What the convergence chart draws: the tidy ``rows``, the estimators in input order,
    the groups sorted, the trial counts on the axis, whether that axis is logarithmic, the
    ICC axis' lower end and whether any row has a value on all trials (``reference``)."""

    rows: pd.DataFrame
    estimators: list[str]
    groups: list[str]
    trials: list[int]
    log_x: bool
    y_low: float
    has_reference: bool


def convergence_frame(tidy: pd.DataFrame) -> ConvergenceFrame:
    """The rows of a tidy convergence table (:func:`tidy_convergence`) the chart draws. The
    trials axis is logarithmic (base 2) when the grid spans a factor of 8 or more; the ICC
    axis reaches down to the lowest band edge when it is negative (ICC(1,1) can be)."""
    require(tidy, TIDY_CONVERGENCE_COLUMNS, "convergence_chart")
    cols = [*TIDY_CONVERGENCE_COLUMNS, "reference"]
    df = tidy[[c for c in cols if c in tidy.columns]].reset_index(drop=True)
    t = df["trials"].astype(float)
    return ConvergenceFrame(
        rows=df,
        estimators=in_order(df["estimator"]),
        groups=sorted(df["group"].unique()),
        trials=sorted(int(v) for v in df["trials"].unique()),
        log_x=bool(t.min() > 0 and t.max() / t.min() >= 8),
        y_low=min(0.0, float(df["low"].min())),
        has_reference="reference" in df.columns and bool(df["reference"].notna().any()),
    )


# --- budget allocation (paper eq. 9–10, Fig. 3) ----------------------------------------------


def recommended_allocation(budget: pd.DataFrame) -> pd.Series:
    """Boolean mask of the recommended row(s): a ``recommended`` column if given, else the
    smallest SE per group (ties: more tasks)."""
    if "recommended" in budget.columns:
        return budget["recommended"].fillna(False).astype(bool)
    keys = budget["group"].astype(str) if "group" in budget.columns else pd.Series("", budget.index)
    mask = pd.Series(False, index=budget.index)
    for _, part in budget.groupby(keys, sort=True):
        best = part.sort_values(["se", "n_tasks"], ascending=[True, False]).index[0]
        mask[best] = True
    return mask


def budget_frame(budget: pd.DataFrame) -> pd.DataFrame:
    """The budget rows the chart draws: ``[group,] n_tasks, trials, se, recommended, label``
    sorted by group and tasks."""
    require(budget, BUDGET_COLUMNS, "budget_chart")
    cols = [c for c in ("group", "n_tasks", "trials", "se") if c in budget.columns]
    df = budget[cols].copy()
    df["recommended"] = recommended_allocation(budget).to_numpy()
    if "group" in df.columns:
        df["group"] = df["group"].astype(str)
    df = df.sort_values([c for c in ("group", "n_tasks") if c in df.columns])
    df = df.reset_index(drop=True)
    df["label"] = [
        f"{n} tasks × {t} trial{'s' if t != 1 else ''}"
        for n, t in zip(df["n_tasks"], df["trials"], strict=True)
    ]
    return df


def budget_log_x(frame: pd.DataFrame) -> bool:
    """The tasks axis is logarithmic when it spans a factor of 20 or more."""
    n = frame["n_tasks"].astype(float)
    return bool(n.min() > 0 and n.max() / n.min() >= 20)


# --- D study ---------------------------------------------------------------------------------


def dstudy_frame(curve: pd.DataFrame) -> pd.DataFrame:
    """The D-study rows the chart draws, with ``label`` = "tasks × trials"."""
    require(curve, DSTUDY_COLUMNS, "dstudy_chart")
    df = curve.copy()
    df["group"] = df["group"].astype(str)
    df["label"] = [f"{int(n)} × {int(t)}" for n, t in zip(df["tasks"], df["trials"], strict=True)]
    return df


# --- pass^k against k ------------------------------------------------------------------------


def passk_table(records: Iterable[Mapping[str, Any]]) -> tuple[pd.DataFrame, dict[str, str]]:
    """The pass^k chart's rows from the groups' statistics records: one row per group and
    k = 1 … T with the record's ``pass_k`` (:func:`evalnoise.consistency.reliability_fields`:
    ``k``, ``pass_hat`` and its task-clustered interval ``pass_hat_ci_low``,
    ``pass_hat_ci_high``), groups in the records' order; and the groups left out, each with
    why: withheld (not a measurement of the agent: its pass^k is no number about the agent)
    or no pass^k recorded. A missing estimate stays a missing value, never 0."""
    rows: list[dict[str, Any]] = []
    left_out: dict[str, str] = {}
    for record in records:
        group = str(record["group"])
        passk = record.get("pass_k")
        if record.get("withheld"):
            left_out[group] = "withheld: not a measurement of the agent"
            continue
        if not passk or not passk.get("k"):
            left_out[group] = "no pass^k recorded (no counted trial)"
            continue
        for k, hat, low, high in zip(
            passk["k"],
            passk["pass_hat"],
            passk["pass_hat_ci_low"],
            passk["pass_hat_ci_high"],
            strict=True,
        ):
            rows.append(
                {
                    "group": group,
                    "k": int(k),
                    "pass_hat": np.nan if hat is None else float(hat),
                    "ci_low": np.nan if low is None else float(low),
                    "ci_high": np.nan if high is None else float(high),
                }
            )
    return pd.DataFrame(rows, columns=list(PASSK_COLUMNS)), left_out


@dataclass(frozen=True)
class PassKFrame:
    """The pass^k chart's rows (groups in input order, k ascending within a group), its
    groups in that order and every k drawn."""

    rows: pd.DataFrame
    groups: list[str]
    ks: list[int]


def passk_frame(table: pd.DataFrame) -> PassKFrame:
    """The rows the pass^k chart draws (:data:`PASSK_COLUMNS`)."""
    require(table, PASSK_COLUMNS, "passk_chart")
    df = table[list(PASSK_COLUMNS)].copy()
    df["group"] = df["group"].astype(str)
    df["k"] = df["k"].astype("int64")
    groups = in_order(df["group"])
    df["_g"] = df["group"].map({g: i for i, g in enumerate(groups)})
    df = df.sort_values(["_g", "k"], kind="mergesort").drop(columns="_g").reset_index(drop=True)
    return PassKFrame(df, groups, sorted({int(k) for k in df["k"]}))


# --- accuracy and infra errors per resource profile ------------------------------------------


def is_false(value: object) -> bool:
    """A ``valid`` cell that says "not valid" (False, "false", 0); missing is not false."""
    if isinstance(value, str):
        return value.strip().lower() in ("false", "0", "no")
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return False
    try:
        return not bool(value)
    except (TypeError, ValueError):
        return False


@dataclass(frozen=True)
class InfraFrame:
    """The infra chart's rows (:data:`INFRA_COLUMNS` [+ ``measurement``]), whether they have
    a health column, the resource profiles in input order and the agents sorted."""

    rows: pd.DataFrame
    has_valid: bool
    profiles: list[str]
    agents: list[str]


def infra_frame(infra: pd.DataFrame) -> InfraFrame:
    """The rows the infra chart draws; a row whose ``valid`` is false gets
    ``measurement`` = "not a measurement of the agent"."""
    require(infra, INFRA_COLUMNS, "infra_chart")
    df = infra[list(INFRA_COLUMNS)].copy()
    has_valid = "valid" in infra.columns
    if has_valid:
        invalid = [is_false(v) for v in infra["valid"]]
        df["measurement"] = [MEASUREMENT_STATUS[int(bad)] for bad in invalid]
    df["resource_profile"] = df["resource_profile"].astype(str)
    df["agent"] = df["agent"].astype(str)
    df = df.reset_index(drop=True)
    return InfraFrame(df, has_valid, in_order(df["resource_profile"]), sorted(df["agent"].unique()))


# --- paired comparisons ----------------------------------------------------------------------


@dataclass(frozen=True)
class ComparisonsFrame:
    """The comparisons chart's rows ([kind,] a, b, diff, ci_low, ci_high [, p], pair
    [, significance]), the pairs in input order, the significance classes and the panels."""

    rows: pd.DataFrame
    pairs: list[str]
    significance: tuple[str, str] | None
    #: the ``kind`` column's values in input order (one panel each), or None without one
    kinds: list[str] | None
    #: the most pairs of a panel
    most_rows: int


def comparisons_frame(
    comparisons: pd.DataFrame, *, p_column: str | None = "pvalue_holm", alpha: float = 0.05
) -> ComparisonsFrame:
    """The rows the comparisons chart draws; with ``p_column``, each pair's significance at
    ``alpha`` ("p not available" when its p is missing)."""
    require(comparisons, COMPARISON_COLUMNS, "comparisons_chart")
    cols = ["kind", "a", "b", "diff", "ci_low", "ci_high"]
    df = comparisons[[c for c in cols if c in comparisons.columns]].copy()
    has_p = p_column is not None and p_column in comparisons.columns
    if has_p:
        df["p"] = pd.to_numeric(comparisons[p_column], errors="coerce").to_numpy()
    df["pair"] = [f"{a} − {b}" for a, b in zip(df["a"], df["b"], strict=True)]
    df = df.reset_index(drop=True)
    pairs = in_order(df["pair"])
    significance = None
    if has_p:
        significance = (f"Holm p < {alpha:g}", f"Holm p ≥ {alpha:g}")
        df["significance"] = np.where(df["p"] < alpha, *significance)
        df.loc[df["p"].isna(), "significance"] = "p not available"
    if "kind" not in df.columns:
        return ComparisonsFrame(df, pairs, significance, None, len(pairs))
    df["kind"] = df["kind"].astype(str)
    most = int(df.groupby("kind").size().max())
    return ComparisonsFrame(df, pairs, significance, in_order(df["kind"]), most)


# --- resource-sensitive tasks ----------------------------------------------------------------


def flag(value: object) -> bool:
    """A boolean cell that says "yes" (True, "true", 1); missing is no."""
    return not is_false(value) and not (
        value is None or value is pd.NA or (isinstance(value, float) and np.isnan(value))
    )


@dataclass(frozen=True)
class ResourceFrame:
    """The resource chart's long rows (one per task and profile: ``role`` a or b), the tasks
    and comparisons in input order, the profiles, and the most tasks of a comparison."""

    rows: pd.DataFrame
    tasks: list[str]
    comparisons: list[str]
    profiles: list[str]
    most_rows: int


def resource_frame(resource: pd.DataFrame) -> ResourceFrame:
    """The rows the resource-sensitivity chart draws: each task's two accuracies as two
    rows, with why it is singled out (``significant``, ``between_limits``)."""
    require(resource, RESOURCE_SENSITIVITY_COLUMNS, "resource_sensitivity_chart")
    df = resource.reset_index(drop=True).copy()
    for col in ("agent", "profile_a", "profile_b", "task_id"):
        df[col] = df[col].astype(str)
    df["comparison"] = [
        f"{a}: {pa} vs {pb}"
        for a, pa, pb in zip(df["agent"], df["profile_a"], df["profile_b"], strict=True)
    ]
    sig = [flag(v) for v in df["significant"]]
    between = (
        [flag(v) for v in df["between_limits"]]
        if "between_limits" in df.columns
        else [False] * len(df)
    )
    labels = {(True, True): SINGLED_OUT[0], (True, False): SINGLED_OUT[1]}
    labels[(False, True)] = SINGLED_OUT[2]
    df["singled_out"] = [labels.get(k, "—") for k in zip(sig, between, strict=True)]
    df["singled"] = [s or b for s, b in zip(sig, between, strict=True)]
    df["n_pairs"] = df["n_pairs"] if "n_pairs" in df.columns else np.nan
    df["pvalue"] = (
        pd.to_numeric(df["pvalue"], errors="coerce") if "pvalue" in df.columns else np.nan
    )
    df["pvalue_adjusted"] = pd.to_numeric(df["pvalue_adjusted"], errors="coerce")
    wide = df[
        [
            "comparison",
            "task_id",
            "accuracy_a",
            "accuracy_b",
            "profile_a",
            "profile_b",
            "n_pairs",
            "pvalue",
            "pvalue_adjusted",
            "singled_out",
            "singled",
        ]
    ]
    long = pd.concat(
        [
            wide.assign(role="a", profile=wide["profile_a"], accuracy=wide["accuracy_a"]),
            wide.assign(role="b", profile=wide["profile_b"], accuracy=wide["accuracy_b"]),
        ],
        ignore_index=True,
    )
    return ResourceFrame(
        long,
        in_order(df["task_id"]),
        in_order(df["comparison"]),
        in_order([*df["profile_a"], *df["profile_b"]]),
        int(df.groupby("comparison").size().max()),
    )
