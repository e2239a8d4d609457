"""The report's charts built with altair: the independent reference of the specs' test.

These are the altair builders the report used before its charts became plain Vega-Lite dicts
(``src/evalnoise/report/charts.py`` at bded920, with their own data preparation: ranks, tidy
rows, labels, sort orders). ``src`` defines each chart once, in ``evalnoise.report.specs``;
``tests/report/test_report_specs.py`` compares every spec's JSON text (keys' order, ints
against floats, inline dataset names included) with ``chart_spec`` of the chart of the same
name here. A change to a chart is made in ``specs`` and here, and the test says whether the
two still agree.

Input columns of each chart:

=====================  =====================================================================
chart                  input columns
=====================  =====================================================================
per_task_chart         group, task, n, mean, ci_low, ci_high
                       (:func:`evalnoise.analysis.per_task_table`)
convergence_chart      tidy: group, trials, estimator, mean, low, high
                       (:func:`tidy_convergence` of the stats convergence table)
budget_chart           n_tasks, trials, se [, group] [, recommended]
passk_chart            group, k, pass_hat, ci_low, ci_high
infra_chart            resource_profile, agent, accuracy, ci_low, ci_high, infra_error_rate,
                       infra_ci_low, infra_ci_high [, valid]
comparisons_chart      a, b, diff, ci_low, ci_high [, pvalue_holm] [, kind]
resource_sensitivity_  agent, profile_a, profile_b, task_id, accuracy_a, accuracy_b,
chart                  pvalue_adjusted, significant [, between_limits] [, n_pairs] [, pvalue]
                       (:func:`evalnoise.attribution.resource_sensitivity` per agent and pair)
=====================  =====================================================================
"""

from __future__ import annotations

from collections.abc import Iterable

import altair as alt
import numpy as np
import pandas as pd

from evalnoise.report.health import NOT_A_MEASUREMENT

#: Columns of the convergence table (:func:`evalnoise.analysis.convergence_records`, as the
#: pipeline writes it: :data:`evalnoise.pipeline.stages.CONVERGENCE_TABLE_COLUMNS`) that
#: :func:`tidy_convergence` requires; ``full_icc``, ``full_plugin`` are optional.
CONVERGENCE_CHART_COLUMNS = (
    "group",
    "trials",
    "icc_mean",
    "icc_p05",
    "icc_p95",
    "plugin_mean",
    "plugin_p05",
    "plugin_p95",
)
#: Estimator label → (mean, 5th percentile, 95th percentile, full-data value) columns.
ESTIMATORS = {
    "ICC(1,1) ANOVA": ("icc_mean", "icc_p05", "icc_p95", "full_icc"),
    "plug-in (paper eq. 6–7)": ("plugin_mean", "plugin_p05", "plugin_p95", "full_plugin"),
}
BUDGET_COLUMNS = ("n_tasks", "trials", "se")
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
#: Legend values of :func:`resource_sensitivity_chart`: why a task is singled out.
SINGLED_OUT = ("q ≤ alpha and need between the limits", "q ≤ alpha", "need between the limits")

#: Legend values of the ``valid`` column in :func:`infra_chart`.
MEASUREMENT_STATUS = ("measurement", NOT_A_MEASUREMENT.lower())

_WIDTH = 520
_ESTIMATOR_COLORS = ("#1f77b4", "#d62728")


def _require(frame: pd.DataFrame, columns: Iterable[str], what: str) -> None:
    if not isinstance(frame, pd.DataFrame):
        raise TypeError(f"{what}: expected a pandas DataFrame, got {type(frame).__name__}")
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(
            f"{what}: missing columns {missing} (have {list(map(str, frame.columns))})"
        )
    if frame.empty:
        raise ValueError(f"{what}: the table has no rows")


def _in_order(values: Iterable[object]) -> list[str]:
    """Distinct values as strings, in first-appearance order (the caller's order)."""
    return list(dict.fromkeys(str(v) for v in values))


#: Questions a panel of the per-question chart draws at most: past it, every k-th rank.
PER_TASK_POINTS = 1000


def per_task_chart(per_task: pd.DataFrame, *, confidence: float = 0.95) -> alt.FacetChart:
    """Per-question accuracy with CIs, questions sorted by accuracy (paper Fig. 1).

    One panel per group. x is the question's rank by accuracy within its group (ties broken
    by task id); the task id, trials and interval are in the tooltip. A group of n >
    :data:`PER_TASK_POINTS` questions draws the ranks 1, 1 + k, 1 + 2k, … and n, with
    k = ⌈n / PER_TASK_POINTS⌉: the sorted curve keeps its shape, the page stays small (5,000
    questions a group would be 5,000 points with intervals, which no reader tells apart),
    and the title says so.
    """
    _require(per_task, ("group", "task", "n", "mean", "ci_low", "ci_high"), "per_task_chart")
    df = per_task[["group", "task", "n", "mean", "ci_low", "ci_high"]].copy()
    df["group"] = df["group"].astype(str)
    df["task"] = df["task"].astype(str)
    df = df.sort_values(["group", "mean", "task"], ascending=[True, False, True])
    df["rank"] = df.groupby("group", sort=False).cumcount() + 1
    size = df.groupby("group", sort=False)["rank"].transform("size")
    step = np.ceil(size / PER_TASK_POINTS).astype("int64")
    df = df[((df["rank"] - 1) % step == 0) | (df["rank"] == size)].reset_index(drop=True)
    level = f"{confidence:.0%}"
    title = f"Per-question accuracy with {level} confidence intervals"
    if int(step.max()) > 1:
        title += (
            f" (a group of more than {PER_TASK_POINTS:,} questions: every k-th rank, "
            f"k = ⌈questions / {PER_TASK_POINTS:,}⌉)"
        )
    tooltip = [
        alt.Tooltip("task:N"),
        alt.Tooltip("n:Q", title="trials"),
        alt.Tooltip("mean:Q", title="accuracy", format=".1%"),
        alt.Tooltip("ci_low:Q", title=f"{level} CI low", format=".1%"),
        alt.Tooltip("ci_high:Q", title=f"{level} CI high", format=".1%"),
    ]
    x = alt.X("rank:Q", title="question (sorted by accuracy)", axis=alt.Axis(tickMinStep=1))
    base = alt.Chart().encode(x=x, tooltip=tooltip)
    rules = base.mark_rule(color="#9ecae1", strokeWidth=2).encode(
        y=alt.Y(
            "ci_low:Q",
            title=f"accuracy ({level} Wilson CI)",
            scale=alt.Scale(domain=[0, 1]),
            axis=alt.Axis(format="%"),
        ),
        y2="ci_high:Q",
    )
    points = base.mark_point(filled=True, color="#08519c", size=28).encode(y="mean:Q")
    return (
        alt.layer(rules, points, data=df)
        .properties(width=_WIDTH, height=170)
        .facet(row=alt.Row("group:N", title=None, sort=sorted(df["group"].unique())))
        .properties(title=title)
    )


def tidy_convergence(convergence: pd.DataFrame) -> pd.DataFrame:
    """The wide convergence table as one row per (group, trials, estimator).

    Input columns: :data:`CONVERGENCE_CHART_COLUMNS`, optionally ``full_icc`` and
    ``full_plugin`` (other columns are ignored). Output columns: ``group, trials, estimator,
    mean, low, high, reference`` (reference: the estimate on all trials, NaN when not given);
    estimators are the keys of :data:`ESTIMATORS`. Rows whose mean is NaN (undefined ICC)
    are dropped.
    """
    _require(convergence, CONVERGENCE_CHART_COLUMNS, "tidy_convergence")
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


def convergence_chart(
    tidy: pd.DataFrame, *, band_label: str = "5th–95th percentile"
) -> alt.FacetChart:
    """ICC over trials per task: mean over subsamples and a band, per estimator (Fig. 2, 4, 5).

    Parameters
    ----------
    tidy : columns ``group, trials, estimator, mean, low, high`` and optionally
        ``reference`` (the estimate on all trials, drawn dashed) — :func:`tidy_convergence`.
    band_label : what ``low``/``high`` are, for the legend and title.

    The trials axis is logarithmic (base 2) when the grid spans a factor of 8 or more.
    """
    _require(tidy, ("group", "trials", "estimator", "mean", "low", "high"), "convergence_chart")
    cols = ["group", "trials", "estimator", "mean", "low", "high", "reference"]
    df = tidy[[c for c in cols if c in tidy.columns]].reset_index(drop=True)
    estimators = _in_order(df["estimator"])
    color = alt.Color(
        "estimator:N",
        title="estimator",
        scale=alt.Scale(
            domain=estimators,
            range=[_ESTIMATOR_COLORS[i % len(_ESTIMATOR_COLORS)] for i in range(len(estimators))],
        ),
        legend=alt.Legend(orient="bottom"),
    )
    t = df["trials"].astype(float)
    log_x = t.min() > 0 and t.max() / t.min() >= 8
    x = alt.X(
        "trials:Q",
        title="trials per task",
        scale=alt.Scale(type="log", base=2) if log_x else alt.Scale(zero=False),
        axis=alt.Axis(values=sorted(int(v) for v in df["trials"].unique())),
    )
    y_scale = alt.Scale(domain=[min(0.0, float(df["low"].min())), 1.0], clamp=True)
    # Layers carry no data of their own: the facet hands each panel its rows.
    base = alt.Chart().encode(x=x, color=color)
    band = base.mark_area(opacity=0.18).encode(
        y=alt.Y("low:Q", title="ICC", scale=y_scale), y2="high:Q"
    )
    line = base.mark_line(point=True).encode(
        y="mean:Q",
        tooltip=[
            alt.Tooltip("estimator:N"),
            alt.Tooltip("trials:Q"),
            alt.Tooltip("mean:Q", format=".3f"),
            alt.Tooltip("low:Q", title=f"{band_label} low", format=".3f"),
            alt.Tooltip("high:Q", title=f"{band_label} high", format=".3f"),
        ],
    )
    layers: list[alt.Chart] = [band, line]
    if "reference" in df.columns and df["reference"].notna().any():
        layers.append(
            alt.Chart()
            .mark_rule(strokeDash=[4, 4])
            .encode(
                y="reference:Q",
                color=color,
                tooltip=[
                    alt.Tooltip("estimator:N"),
                    alt.Tooltip("reference:Q", title="all trials", format=".3f"),
                ],
            )
        )
    groups = sorted(df["group"].unique())
    return (
        alt.layer(*layers, data=df)
        .properties(width=300, height=220)
        .facet(facet=alt.Facet("group:N", title=None, sort=groups), columns=2)
        .properties(
            title=f"ICC convergence over trials (mean over subsamples, band: {band_label}; "
            "dashed: all trials)"
        )
    )


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


def budget_chart(budget: pd.DataFrame, *, title: str | None = None) -> alt.LayerChart:
    """SE of accuracy against the number of tasks for a fixed budget (paper Fig. 3).

    Input columns: ``n_tasks, trials, se`` and optionally ``group`` (one line each) and
    ``recommended`` (bool; default: the smallest SE per group, ties to more tasks). The
    recommended allocation is marked with a diamond and labelled ``n × T``.
    """
    _require(budget, BUDGET_COLUMNS, "budget_chart")
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
    n = df["n_tasks"].astype(float)
    log_x = n.min() > 0 and n.max() / n.min() >= 20
    x = alt.X(
        "n_tasks:Q",
        title="tasks (n); trials per task T = budget / n",
        scale=alt.Scale(type="log", nice=False) if log_x else alt.Scale(zero=False),
    )
    y = alt.Y("se:Q", title="SE of accuracy", scale=alt.Scale(zero=True))
    tooltip = [
        alt.Tooltip("n_tasks:Q", title="tasks"),
        alt.Tooltip("trials:Q", title="trials per task"),
        alt.Tooltip("se:Q", title="SE", format=".4f"),
    ]
    enc: dict[str, object] = {"x": x, "y": y, "tooltip": tooltip}
    if "group" in df.columns:
        enc["color"] = alt.Color("group:N", title=None, sort=sorted(df["group"].unique()))
    base = alt.Chart(df).encode(**enc)
    line = base.mark_line(point=alt.OverlayMarkDef(size=20))
    best = base.transform_filter("datum.recommended").mark_point(
        shape="diamond", size=180, filled=True, color="black"
    )
    label = (
        alt.Chart(df)
        .transform_filter("datum.recommended")
        .mark_text(align="right", dx=-10, dy=-12, fontWeight="bold")
        .encode(x=x, y=y, text="label:N")
    )
    if title is None:
        title = (
            "Budget allocation: SE of accuracy for a fixed number of runs (diamond: recommended)"
        )
    return alt.layer(line, best, label).properties(width=_WIDTH, height=300, title=title)


def dstudy_chart(curve: pd.DataFrame) -> alt.LayerChart:
    """The D study: the least total-error SE each budget buys, one line per group.

    Input columns (:func:`evalnoise.report.noise.dstudy_frame`): ``group``,
    ``budget_multiple``, ``budget``, ``se``, ``tasks``, ``trials``; the point at 1 × is the
    budget that ran (its design may differ: the best split of the same budget)."""
    _require(curve, ("group", "budget", "se", "tasks", "trials"), "dstudy_chart")
    df = curve.copy()
    df["group"] = df["group"].astype(str)
    df["label"] = [f"{int(n)} × {int(t)}" for n, t in zip(df["tasks"], df["trials"], strict=True)]
    x = alt.X(
        "budget:Q",
        title="budget (trials)",
        scale=alt.Scale(type="log"),
        axis=alt.Axis(format="~s"),
    )
    y = alt.Y("se:Q", title="total-error SE of accuracy", scale=alt.Scale(zero=True))
    tooltip = [
        alt.Tooltip("group:N"),
        alt.Tooltip("budget_multiple:Q", title="× the run's cost"),
        alt.Tooltip("tasks:Q"),
        alt.Tooltip("trials:Q", title="trials per task"),
        alt.Tooltip("se:Q", title="SE", format=".4f"),
    ]
    color = alt.Color("group:N", title=None, sort=sorted(df["group"].unique()))
    base = alt.Chart(df).encode(x=x, y=y, color=color, tooltip=tooltip)
    line = base.mark_line(point=alt.OverlayMarkDef(size=30))
    text = base.mark_text(align="left", dx=6, dy=-8, fontSize=10).encode(text="label:N")
    return alt.layer(line, text).properties(
        width=_WIDTH,
        height=300,
        title="D study: least total-error SE per budget (label: tasks × trials per task)",
    )


def passk_chart(table: pd.DataFrame, *, confidence: float = 0.95) -> alt.LayerChart:
    """pass^k against k, one line per group (groups in input order), the interval as a band."""
    _require(table, ("group", "k", "pass_hat", "ci_low", "ci_high"), "passk_chart")
    df = table[["group", "k", "pass_hat", "ci_low", "ci_high"]].copy()
    df["group"] = df["group"].astype(str)
    df["k"] = df["k"].astype("int64")
    groups = _in_order(df["group"])
    order = {g: i for i, g in enumerate(groups)}
    df = df.iloc[
        sorted(range(len(df)), key=lambda i: (order[df["group"].iloc[i]], df["k"].iloc[i]))
    ].reset_index(drop=True)
    ks = sorted(set(df["k"].tolist()))
    color = alt.Color("group:N", title=None, sort=groups, legend=alt.Legend(orient="bottom"))
    x = alt.X(
        "k:Q",
        title="k (trials of a task that must all succeed)",
        scale=alt.Scale(zero=False),
        axis=alt.Axis(values=ks, format="d"),
    )
    base = alt.Chart(df)
    band = base.mark_area(opacity=0.15).encode(
        x=x,
        y=alt.Y("ci_low:Q", title="pass^k", scale=alt.Scale(domain=[0.0, 1.0])),
        y2="ci_high:Q",
        color=color,
    )
    line = base.mark_line(point=True).encode(
        x=x,
        y="pass_hat:Q",
        color=color,
        tooltip=[
            alt.Tooltip("group:N"),
            alt.Tooltip("k:Q"),
            alt.Tooltip("pass_hat:Q", title="pass^k", format=".3f"),
            alt.Tooltip("ci_low:Q", title="CI low", format=".3f"),
            alt.Tooltip("ci_high:Q", title="CI high", format=".3f"),
        ],
    )
    level = f"{confidence:.0%}"
    return alt.layer(band, line).properties(
        width=_WIDTH,
        height=300,
        title=f"pass^k: the chance that k trials of a task all succeed (band: {level} CI)",
    )


def infra_chart(infra: pd.DataFrame, *, confidence: float = 0.95) -> alt.HConcatChart:
    """Accuracy and infrastructure error rate per resource profile, with CIs.

    Input columns: :data:`INFRA_COLUMNS` and optionally ``valid`` (the group's health: a row
    whose ``valid`` is false is not a measurement of the agent and is drawn as a cross with
    a dashed interval; missing values count as measurements). Resource profiles keep the
    input order (e.g. 1x, 3x, uncapped); agents are side by side within a profile.
    """
    _require(infra, INFRA_COLUMNS, "infra_chart")
    df = infra[list(INFRA_COLUMNS)].copy()
    has_valid = "valid" in infra.columns
    if has_valid:
        invalid = [_is_false(v) for v in infra["valid"]]
        df["measurement"] = [MEASUREMENT_STATUS[int(bad)] for bad in invalid]
    df["resource_profile"] = df["resource_profile"].astype(str)
    df["agent"] = df["agent"].astype(str)
    df = df.reset_index(drop=True)
    profiles = _in_order(df["resource_profile"])
    agents = sorted(df["agent"].unique())
    level = f"{confidence:.0%}"

    def panel(value: str, low: str, high: str, title: str) -> alt.LayerChart:
        x = alt.X(
            "resource_profile:N",
            title="resource profile",
            sort=profiles,
            axis=alt.Axis(labelAngle=0),
        )
        enc = {
            "x": x,
            "xOffset": alt.XOffset("agent:N", sort=agents),
            "color": alt.Color("agent:N", sort=agents, legend=alt.Legend(orient="bottom")),
        }
        tooltip = [
            alt.Tooltip("agent:N"),
            alt.Tooltip("resource_profile:N"),
            alt.Tooltip(f"{value}:Q", format=".1%"),
            alt.Tooltip(f"{low}:Q", title=f"{level} CI low", format=".1%"),
            alt.Tooltip(f"{high}:Q", title=f"{level} CI high", format=".1%"),
        ]
        rule_enc: dict[str, object] = {}
        point_enc: dict[str, object] = {}
        if has_valid:
            tooltip.append(alt.Tooltip("measurement:N"))
            # one legend for both: the shape and the dash of the same field merge
            rule_enc["strokeDash"] = alt.StrokeDash(
                "measurement:N",
                title=None,
                scale=alt.Scale(domain=list(MEASUREMENT_STATUS), range=[[1, 0], [4, 3]]),
                legend=alt.Legend(orient="bottom"),
            )
            point_enc["shape"] = alt.Shape(
                "measurement:N",
                title=None,
                scale=alt.Scale(domain=list(MEASUREMENT_STATUS), range=["circle", "cross"]),
                legend=alt.Legend(orient="bottom"),
            )
        base = alt.Chart(df).encode(**enc)
        rule = base.mark_rule(strokeWidth=2).encode(
            y=alt.Y(f"{low}:Q", title=f"{title} ({level} CI)", axis=alt.Axis(format="%")),
            y2=f"{high}:Q",
            **rule_enc,
        )
        point = base.mark_point(filled=True, size=70).encode(
            y=f"{value}:Q", tooltip=tooltip, **point_enc
        )
        return alt.layer(rule, point).properties(width=260, height=260, title=title)

    return alt.hconcat(
        panel("accuracy", "ci_low", "ci_high", "accuracy"),
        panel("infra_error_rate", "infra_ci_low", "infra_ci_high", "infra error rate"),
    ).properties(title="Accuracy and infrastructure errors per resource profile")


def _is_false(value: object) -> bool:
    """A ``valid`` cell that says "not valid" (False, "false", 0); missing is not false."""
    if isinstance(value, str):
        return value.strip().lower() in ("false", "0", "no")
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return False
    try:
        return not bool(value)
    except (TypeError, ValueError):
        return False


def comparisons_chart(
    comparisons: pd.DataFrame,
    *,
    p_column: str | None = "pvalue_holm",
    alpha: float = 0.05,
    confidence: float = 0.95,
) -> alt.TopLevelMixin:
    """Paired differences a − b with CIs, one row per pair; zero marked.

    Input columns: ``a, b, diff, ci_low, ci_high`` (the records of
    :func:`evalnoise.analysis.compare_all_pairs` fit as they are), optionally ``p_column``
    (a Holm-adjusted p-value matching the CI — by default ``pvalue_holm``, the paired
    test's — that colours the pairs significant at ``alpha``) and ``kind`` (e.g. "agents",
    "resource profiles": one panel each). Rows keep the input order.
    """
    _require(comparisons, COMPARISON_COLUMNS, "comparisons_chart")
    cols = ["kind", "a", "b", "diff", "ci_low", "ci_high"]
    df = comparisons[[c for c in cols if c in comparisons.columns]].copy()
    has_p = p_column is not None and p_column in comparisons.columns
    if has_p:
        df["p"] = pd.to_numeric(comparisons[p_column], errors="coerce").to_numpy()
    df["pair"] = [f"{a} − {b}" for a, b in zip(df["a"], df["b"], strict=True)]
    df = df.reset_index(drop=True)
    pairs = _in_order(df["pair"])
    level = f"{confidence:.0%}"
    tooltip = [
        alt.Tooltip("pair:N", title="a − b"),
        alt.Tooltip("diff:Q", format="+.1%"),
        alt.Tooltip("ci_low:Q", title=f"{level} CI low", format="+.1%"),
        alt.Tooltip("ci_high:Q", title=f"{level} CI high", format="+.1%"),
    ]
    enc: dict[str, object] = {
        "y": alt.Y("pair:N", title=None, sort=pairs, axis=alt.Axis(labelLimit=360)),
    }
    if has_p:
        significant, not_significant = f"Holm p < {alpha:g}", f"Holm p ≥ {alpha:g}"
        df["significance"] = np.where(df["p"] < alpha, significant, not_significant)
        df.loc[df["p"].isna(), "significance"] = "p not available"
        domain = [significant, not_significant, "p not available"]
        enc["color"] = alt.Color(
            "significance:N",
            title=None,
            scale=alt.Scale(domain=domain, range=["#d62728", "#7f7f7f", "#bcbd22"]),
            legend=alt.Legend(orient="bottom"),
        )
        tooltip.append(alt.Tooltip("p:Q", title=f"Holm p ({p_column})", format=".3g"))
    base = alt.Chart().encode(**enc)
    x = alt.X(
        "ci_low:Q",
        title=f"difference in accuracy, a − b ({level} CI)",
        axis=alt.Axis(format="+%"),
    )
    rule = base.mark_rule(strokeWidth=2).encode(x=x, x2="ci_high:Q")
    point = base.mark_point(filled=True, size=70).encode(x="diff:Q", tooltip=tooltip)
    # A datum-encoded rule has no data of its own, so it also works inside a facet.
    zero = alt.Chart().mark_rule(strokeDash=[4, 4], color="black").encode(x=alt.datum(0))
    title = "Paired differences (a − b)"
    if "kind" in df.columns:
        df["kind"] = df["kind"].astype(str)
        kinds = _in_order(df["kind"])
        rows = int(df.groupby("kind").size().max())
        return (
            alt.layer(rule, zero, point, data=df)
            .properties(width=_WIDTH, height=max(60, 28 * rows))
            .facet(row=alt.Row("kind:N", title=None, sort=kinds))
            .resolve_scale(y="independent")
            .properties(title=title)
        )
    return alt.layer(rule, zero, point, data=df).properties(
        width=_WIDTH, height=max(60, 28 * len(pairs)), title=title
    )


def _flag(value: object) -> bool:
    """A boolean cell that says "yes" (True, "true", 1); missing is no."""
    return not _is_false(value) and not (
        value is None or value is pd.NA or (isinstance(value, float) and np.isnan(value))
    )


def resource_sensitivity_chart(
    resource: pd.DataFrame, *, alpha: float = 0.05, adjust: str = "BH"
) -> alt.TopLevelMixin:
    """Per task, one agent's accuracy under two resource profiles, joined by a line.

    Input: the per-task table of :func:`evalnoise.attribution.resource_sensitivity` with the
    comparison's ``agent``, ``profile_a`` and ``profile_b`` (the attribution stage's
    ``resource_sensitivity.parquet``); columns :data:`RESOURCE_SENSITIVITY_COLUMNS`,
    optionally ``between_limits``, ``n_pairs`` and ``p``. One panel per agent and profile
    pair; tasks keep the input order (the stage sorts them by adjusted p). The dot of each
    profile is coloured by profile; a task singled out — ``significant`` (adjusted p ≤
    ``alpha``) or whose memory need lies between the two hard limits — is drawn with a
    thick red line and named in the tooltip.
    """
    _require(resource, RESOURCE_SENSITIVITY_COLUMNS, "resource_sensitivity_chart")
    df = resource.reset_index(drop=True).copy()
    for col in ("agent", "profile_a", "profile_b", "task_id"):
        df[col] = df[col].astype(str)
    df["comparison"] = [
        f"{a}: {pa} vs {pb}"
        for a, pa, pb in zip(df["agent"], df["profile_a"], df["profile_b"], strict=True)
    ]
    sig = [_flag(v) for v in df["significant"]]
    between = (
        [_flag(v) for v in df["between_limits"]]
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
    order = _in_order(df["task_id"])
    comparisons = _in_order(df["comparison"])
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
    profiles = _in_order([*df["profile_a"], *df["profile_b"]])
    tooltip = [
        alt.Tooltip("task_id:N", title="task"),
        alt.Tooltip("profile_a:N", title="profile a"),
        alt.Tooltip("accuracy_a:Q", title="accuracy under a", format=".0%"),
        alt.Tooltip("profile_b:N", title="profile b"),
        alt.Tooltip("accuracy_b:Q", title="accuracy under b", format=".0%"),
        alt.Tooltip("n_pairs:Q", title="paired trials"),
        alt.Tooltip("pvalue:Q", title="exact McNemar p", format=".3g"),
        alt.Tooltip("pvalue_adjusted:Q", title=f"{adjust} q", format=".3g"),
        alt.Tooltip("singled_out:N", title="singled out"),
    ]
    y = alt.Y("task_id:N", title=None, sort=order, axis=alt.Axis(labelLimit=260))
    x_scale = alt.Scale(domain=[0, 1])
    # One data set for both layers (a facet hands each panel its rows): the line is drawn
    # once per task, from its profile-a row.
    line = (
        alt.Chart()
        .transform_filter("datum.role == 'a'")
        .mark_rule()
        .encode(
            y=y,
            x=alt.X(
                "accuracy_a:Q",
                title="accuracy over the paired trials",
                scale=x_scale,
                axis=alt.Axis(format="%"),
            ),
            x2="accuracy_b:Q",
            color=alt.condition("datum.singled", alt.value("#d62728"), alt.value("#9e9e9e")),
            strokeWidth=alt.condition("datum.singled", alt.value(3), alt.value(1.5)),
            tooltip=tooltip,
        )
    )
    dots = (
        alt.Chart()
        .mark_point(filled=True, size=60)
        .encode(
            y=y,
            x=alt.X("accuracy:Q", scale=x_scale),
            color=alt.Color(
                "profile:N",
                title="resource profile",
                sort=profiles,
                legend=alt.Legend(orient="bottom"),
            ),
            tooltip=[alt.Tooltip("profile:N", title="profile"), *tooltip],
        )
    )
    rows = int(df.groupby("comparison").size().max())
    title = (
        f"Per-task accuracy under two resource profiles (red: {adjust} q ≤ {alpha:g} or memory "
        "need between the two hard limits)"
    )
    if len(comparisons) == 1:
        return alt.layer(line, dots, data=long).properties(
            width=_WIDTH, height=max(60, 18 * rows), title=f"{comparisons[0]} — {title}"
        )
    return (
        alt.layer(line, dots, data=long)
        .properties(width=_WIDTH, height=max(60, 18 * rows))
        .facet(row=alt.Row("comparison:N", title=None, sort=comparisons))
        .resolve_scale(y="independent")
        .properties(title=title)
    )
