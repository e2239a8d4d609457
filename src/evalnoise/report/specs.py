"""The report's charts: pure functions from a table to a Vega-Lite spec, as plain dicts.

This module is the one definition of every chart of the report; :mod:`evalnoise.report.charts`
loads these specs into altair chart objects for notebooks. Each function checks its input's
columns (:mod:`evalnoise.report.chart_tables` prepares the rows it draws and raises
``ValueError`` naming the missing ones). Colours, sort orders and tie-breaks are fixed so a
chart is a pure function of its table.

The specs are written as altair's ``to_dict`` writes a chart (:mod:`evalnoise.report.vegalite`:
the same keys in the same order, the same inline datasets under the same names), and
``tests/report/test_report_specs.py`` compares each with an independent altair build of the same
chart. Plain dicts skip building, deep-copying and validating altair's schema objects, most of a
large report's chart time (``benchmarks/results/analysis-imported-100000-a2-analysis4-idle.md``).

=========================  =================================================================
spec                       input columns
=========================  =================================================================
per_task_spec              group, task, n, mean, ci_low, ci_high
                           (:func:`evalnoise.analysis.per_task_table`)
convergence_spec           tidy: group, trials, estimator, mean, low, high [, reference]
                           (:func:`~evalnoise.report.chart_tables.tidy_convergence` of the
                           stats convergence table)
budget_spec                n_tasks, trials, se [, group] [, recommended]
dstudy_spec                group, budget_multiple, budget, se, tasks, trials
passk_spec                 group, k, pass_hat, ci_low, ci_high
                           (:func:`~evalnoise.report.chart_tables.passk_table` of the
                           groups' records)
infra_spec                 resource_profile, agent, accuracy, ci_low, ci_high,
                           infra_error_rate, infra_ci_low, infra_ci_high [, valid]
comparisons_spec           a, b, diff, ci_low, ci_high [, pvalue_holm] [, kind]
resource_sensitivity_spec  agent, profile_a, profile_b, task_id, accuracy_a, accuracy_b,
                           pvalue_adjusted, significant [, between_limits] [, n_pairs]
                           [, pvalue] (:func:`evalnoise.attribution.resource_sensitivity`
                           per agent and pair)
=========================  =================================================================
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from evalnoise.report.chart_tables import (
    MEASUREMENT_STATUS,
    budget_frame,
    budget_log_x,
    comparisons_frame,
    convergence_frame,
    dstudy_frame,
    infra_frame,
    passk_frame,
    per_task_frame,
    resource_frame,
)
from evalnoise.report.vegalite import (
    condition,
    field,
    layer,
    mark,
    second,
    tip,
    top,
    values,
)

WIDTH = 520
ESTIMATOR_COLORS = ("#1f77b4", "#d62728")
BUDGET_TITLE = "Budget allocation: SE of accuracy for a fixed number of runs (diamond: recommended)"
DSTUDY_TITLE = "D study: least total-error SE per budget (label: tasks × trials per task)"
INFRA_TITLE = "Accuracy and infrastructure errors per resource profile"
COMPARISONS_TITLE = "Paired differences (a − b)"
PASSK_TITLE = "pass^k: the chance that k trials of a task all succeed (band: {level} CI)"


# --- per-question accuracy (paper Fig. 1) ----------------------------------------------------


def per_task_spec(per_task: pd.DataFrame, *, confidence: float = 0.95) -> dict[str, Any]:
    """Per-question accuracy with CIs, questions sorted by accuracy (paper Fig. 1).

    One panel per group. x is the question's rank by accuracy within its group (ties broken
    by task id); the task id, trials and interval are in the tooltip. A group of n >
    :data:`~evalnoise.report.chart_tables.PER_TASK_POINTS` questions draws the ranks 1,
    1 + k, 1 + 2k, … and n, with k = ⌈n / PER_TASK_POINTS⌉: the sorted curve keeps its
    shape, the page stays small (5,000 questions a group would be 5,000 points with
    intervals, which no reader tells apart), and the title says so.
    """
    frame = per_task_frame(per_task, confidence=confidence)
    level = f"{confidence:.0%}"
    tooltip = [
        tip("task:N"),
        tip("n:Q", "trials"),
        tip("mean:Q", "accuracy", ".1%"),
        tip("ci_low:Q", f"{level} CI low", ".1%"),
        tip("ci_high:Q", f"{level} CI high", ".1%"),
    ]
    x = field("rank:Q", title="question (sorted by accuracy)", axis={"tickMinStep": 1})
    rules = layer(
        mark("rule", color="#9ecae1", strokeWidth=2),
        {
            "tooltip": tooltip,
            "x": x,
            "y": field(
                "ci_low:Q",
                title=f"accuracy ({level} Wilson CI)",
                scale={"domain": [0, 1]},
                axis={"format": "%"},
            ),
            "y2": second("ci_high:Q"),
        },
    )
    points = layer(
        mark("point", filled=True, color="#08519c", size=28),
        {"tooltip": tooltip, "x": x, "y": field("mean:Q")},
    )
    body = {
        "facet": {"row": field("group:N", title=None, sort=frame.groups)},
        "spec": {"layer": [rules, points], "height": 170, "width": WIDTH},
        "title": frame.title,
    }
    return top(body, values(frame.rows), data_at=0)


# --- ICC convergence (paper Fig. 2, 4, 5) ----------------------------------------------------


def convergence_spec(
    tidy: pd.DataFrame, *, band_label: str = "5th–95th percentile"
) -> dict[str, Any]:
    """ICC over trials per task: mean over subsamples and a band, per estimator (Fig. 2, 4, 5).

    Parameters
    ----------
    tidy : columns ``group, trials, estimator, mean, low, high`` and optionally
        ``reference`` (the estimate on all trials, drawn dashed) —
        :func:`~evalnoise.report.chart_tables.tidy_convergence`.
    band_label : what ``low``/``high`` are, for the legend and title.

    One panel per group, two panels a row. The trials axis is logarithmic (base 2) when the
    grid spans a factor of 8 or more.
    """
    frame = convergence_frame(tidy)
    estimators = frame.estimators
    color = field(
        "estimator:N",
        title="estimator",
        scale={
            "domain": estimators,
            "range": [ESTIMATOR_COLORS[i % len(ESTIMATOR_COLORS)] for i in range(len(estimators))],
        },
        legend={"orient": "bottom"},
    )
    x = field(
        "trials:Q",
        title="trials per task",
        scale={"base": 2, "type": "log"} if frame.log_x else {"zero": False},
        axis={"values": frame.trials},
    )
    y_scale = {"clamp": True, "domain": [frame.y_low, 1.0]}
    # The layers carry no data of their own: the facet hands each panel its rows.
    band = layer(
        mark("area", opacity=0.18),
        {
            "color": color,
            "x": x,
            "y": field("low:Q", title="ICC", scale=y_scale),
            "y2": second("high:Q"),
        },
    )
    line = layer(
        mark("line", point=True),
        {
            "color": color,
            "x": x,
            "y": field("mean:Q"),
            "tooltip": [
                tip("estimator:N"),
                tip("trials:Q"),
                tip("mean:Q", fmt=".3f"),
                tip("low:Q", f"{band_label} low", ".3f"),
                tip("high:Q", f"{band_label} high", ".3f"),
            ],
        },
    )
    layers = [band, line]
    if frame.has_reference:
        layers.append(
            layer(
                mark("rule", strokeDash=[4, 4]),
                {
                    "y": field("reference:Q"),
                    "color": color,
                    "tooltip": [tip("estimator:N"), tip("reference:Q", "all trials", ".3f")],
                },
            )
        )
    body = {
        "facet": field("group:N", title=None, sort=frame.groups),
        "spec": {"layer": layers, "height": 220, "width": 300},
        "columns": 2,
        "title": f"ICC convergence over trials (mean over subsamples, band: {band_label}; "
        "dashed: all trials)",
    }
    return top(body, values(frame.rows), data_at=0)


# --- budget allocation (paper eq. 9–10, Fig. 3) ----------------------------------------------


def budget_spec(budget: pd.DataFrame, *, title: str | None = None) -> dict[str, Any]:
    """SE of accuracy against the number of tasks for a fixed budget (paper Fig. 3).

    Input columns: ``n_tasks, trials, se`` and optionally ``group`` (one line each) and
    ``recommended`` (bool; default: the smallest SE per group, ties to more tasks,
    :func:`~evalnoise.report.chart_tables.recommended_allocation`). The recommended
    allocation is marked with a diamond and labelled ``n × T``; the tasks axis is
    logarithmic when it spans a factor of 20 or more.
    """
    df = budget_frame(budget)
    x = field(
        "n_tasks:Q",
        title="tasks (n); trials per task T = budget / n",
        scale={"nice": False, "type": "log"} if budget_log_x(df) else {"zero": False},
    )
    y = field("se:Q", title="SE of accuracy", scale={"zero": True})
    enc: dict[str, Any] = {
        "x": x,
        "y": y,
        "tooltip": [
            tip("n_tasks:Q", "tasks"),
            tip("trials:Q", "trials per task"),
            tip("se:Q", "SE", ".4f"),
        ],
    }
    if "group" in df.columns:
        enc["color"] = field("group:N", title=None, sort=sorted(df["group"].unique()))
    line = layer(mark("line", point={"size": 20}), enc)
    best = layer(
        mark("point", shape="diamond", size=180, filled=True, color="black"),
        enc,
        "datum.recommended",
    )
    label = layer(
        mark("text", align="right", dx=-10, dy=-12, fontWeight="bold"),
        {"x": x, "y": y, "text": field("label:N")},
        "datum.recommended",
    )
    body = {
        "layer": [line, best, label],
        "height": 300,
        "title": BUDGET_TITLE if title is None else title,
        "width": WIDTH,
    }
    return top(body, values(df), data_at=1)


# --- D study ---------------------------------------------------------------------------------


def dstudy_spec(curve: pd.DataFrame) -> dict[str, Any]:
    """The D study: the least total-error SE each budget buys, one line per group.

    Input columns (:func:`evalnoise.report.noise.dstudy_frame`): ``group``,
    ``budget_multiple``, ``budget``, ``se``, ``tasks``, ``trials``; the point at 1 × is the
    budget that ran (its design may differ: the best split of the same budget). Each point is
    labelled with its split, tasks × trials per task; the budget axis is logarithmic.
    """
    df = dstudy_frame(curve)
    enc = {
        "x": field(
            "budget:Q", title="budget (trials)", scale={"type": "log"}, axis={"format": "~s"}
        ),
        "y": field("se:Q", title="total-error SE of accuracy", scale={"zero": True}),
        "color": field("group:N", title=None, sort=sorted(df["group"].unique())),
        "tooltip": [
            tip("group:N"),
            tip("budget_multiple:Q", "× the run's cost"),
            tip("tasks:Q"),
            tip("trials:Q", "trials per task"),
            tip("se:Q", "SE", ".4f"),
        ],
    }
    line = layer(mark("line", point={"size": 30}), enc)
    text = layer(
        mark("text", align="left", dx=6, dy=-8, fontSize=10),
        {**enc, "text": field("label:N")},
    )
    body = {"layer": [line, text], "height": 300, "title": DSTUDY_TITLE, "width": WIDTH}
    return top(body, values(df), data_at=1)


# --- pass^k against k ------------------------------------------------------------------------


def passk_spec(table: pd.DataFrame, *, confidence: float = 0.95) -> dict[str, Any]:
    """pass^k against k = 1 … T, one line per group, its task-clustered interval as a band:
    how fast the chance that k trials of a task all succeed decays (tau-bench's reliability
    curve; pass^k = mean over tasks of C(c_i, k) / C(n_i, k),
    :func:`evalnoise.stats.passk.pass_hat_k`).

    Input columns (:func:`~evalnoise.report.chart_tables.passk_table`): ``group, k,
    pass_hat, ci_low, ci_high``. Groups keep the input order; the y axis is [0, 1]; a
    missing interval leaves a gap in the band.
    """
    frame = passk_frame(table)
    color = field("group:N", legend={"orient": "bottom"}, sort=frame.groups, title=None)
    x = field(
        "k:Q",
        axis={"format": "d", "values": frame.ks},
        scale={"zero": False},
        title="k (trials of a task that must all succeed)",
    )
    band = layer(
        mark("area", opacity=0.15),
        {
            "color": color,
            "x": x,
            "y": field("ci_low:Q", scale={"domain": [0.0, 1.0]}, title="pass^k"),
            "y2": second("ci_high:Q"),
        },
    )
    line = layer(
        mark("line", point=True),
        {
            "color": color,
            "x": x,
            "y": field("pass_hat:Q"),
            "tooltip": [
                tip("group:N"),
                tip("k:Q"),
                tip("pass_hat:Q", "pass^k", ".3f"),
                tip("ci_low:Q", "CI low", ".3f"),
                tip("ci_high:Q", "CI high", ".3f"),
            ],
        },
    )
    body = {
        "layer": [band, line],
        "height": 300,
        "title": PASSK_TITLE.format(level=f"{confidence:.0%}"),
        "width": WIDTH,
    }
    return top(body, values(frame.rows), data_at=1)


# --- accuracy and infra errors per resource profile ------------------------------------------


def infra_spec(infra: pd.DataFrame, *, confidence: float = 0.95) -> dict[str, Any]:
    """Accuracy and infrastructure error rate per resource profile, with CIs.

    Input columns: :data:`~evalnoise.report.chart_tables.INFRA_COLUMNS` and optionally
    ``valid`` (the group's health: a row whose ``valid`` is false is not a measurement of the
    agent and is drawn as a cross with a dashed interval; missing values count as
    measurements). Resource profiles keep the input order (e.g. 1x, 3x, uncapped); agents
    are side by side within a profile. Two panels: accuracy, infra error rate.
    """
    frame = infra_frame(infra)
    level = f"{confidence:.0%}"

    def panel(value: str, low: str, high: str, title: str) -> dict[str, Any]:
        enc = {
            "x": field(
                "resource_profile:N",
                title="resource profile",
                sort=frame.profiles,
                axis={"labelAngle": 0},
            ),
            "xOffset": field("agent:N", sort=frame.agents),
            "color": field("agent:N", sort=frame.agents, legend={"orient": "bottom"}),
        }
        tooltip = [
            tip("agent:N"),
            tip("resource_profile:N"),
            tip(f"{value}:Q", fmt=".1%"),
            tip(f"{low}:Q", f"{level} CI low", ".1%"),
            tip(f"{high}:Q", f"{level} CI high", ".1%"),
        ]
        rule_enc: dict[str, Any] = {}
        point_enc: dict[str, Any] = {}
        if frame.has_valid:
            tooltip.append(tip("measurement:N"))
            # one legend for both: the shape and the dash of the same field merge
            rule_enc["strokeDash"] = field(
                "measurement:N",
                title=None,
                scale={"domain": list(MEASUREMENT_STATUS), "range": [[1, 0], [4, 3]]},
                legend={"orient": "bottom"},
            )
            point_enc["shape"] = field(
                "measurement:N",
                title=None,
                scale={"domain": list(MEASUREMENT_STATUS), "range": ["circle", "cross"]},
                legend={"orient": "bottom"},
            )
        rule = layer(
            mark("rule", strokeWidth=2),
            {
                **enc,
                "y": field(f"{low}:Q", title=f"{title} ({level} CI)", axis={"format": "%"}),
                "y2": second(f"{high}:Q"),
                **rule_enc,
            },
        )
        point = layer(
            mark("point", filled=True, size=70),
            {**enc, "y": field(f"{value}:Q"), "tooltip": tooltip, **point_enc},
        )
        return {"layer": [rule, point], "height": 260, "title": title, "width": 260}

    body = {
        "hconcat": [
            panel("accuracy", "ci_low", "ci_high", "accuracy"),
            panel("infra_error_rate", "infra_ci_low", "infra_ci_high", "infra error rate"),
        ],
        "title": INFRA_TITLE,
    }
    return top(body, values(frame.rows), data_at=1)


# --- paired comparisons ----------------------------------------------------------------------


def comparisons_spec(
    comparisons: pd.DataFrame,
    *,
    p_column: str | None = "pvalue_holm",
    alpha: float = 0.05,
    confidence: float = 0.95,
) -> dict[str, Any]:
    """Paired differences a − b with CIs, one row per pair; zero marked.

    Input columns: ``a, b, diff, ci_low, ci_high`` (the records of
    :func:`evalnoise.analysis.compare_all_pairs` fit as they are), optionally ``p_column``
    (a Holm-adjusted p-value matching the CI — by default ``pvalue_holm``, the paired
    test's — that colours the pairs significant at ``alpha``) and ``kind`` (e.g. "agents",
    "resource profiles": one panel each). Rows keep the input order.
    """
    frame = comparisons_frame(comparisons, p_column=p_column, alpha=alpha)
    level = f"{confidence:.0%}"
    tooltip = [
        tip("pair:N", "a − b"),
        tip("diff:Q", fmt="+.1%"),
        tip("ci_low:Q", f"{level} CI low", "+.1%"),
        tip("ci_high:Q", f"{level} CI high", "+.1%"),
    ]
    enc: dict[str, Any] = {
        "y": field("pair:N", title=None, sort=frame.pairs, axis={"labelLimit": 360}),
    }
    if frame.significance is not None:
        domain = [*frame.significance, "p not available"]
        enc["color"] = field(
            "significance:N",
            title=None,
            scale={"domain": domain, "range": ["#d62728", "#7f7f7f", "#bcbd22"]},
            legend={"orient": "bottom"},
        )
        tooltip.append(tip("p:Q", f"Holm p ({p_column})", ".3g"))
    x = field(
        "ci_low:Q",
        title=f"difference in accuracy, a − b ({level} CI)",
        axis={"format": "+%"},
    )
    rule = layer(mark("rule", strokeWidth=2), {**enc, "x": x, "x2": second("ci_high:Q")})
    point = layer(
        mark("point", filled=True, size=70), {**enc, "x": field("diff:Q"), "tooltip": tooltip}
    )
    # A datum-encoded rule has no data of its own, so it also works inside a facet.
    zero = layer(mark("rule", strokeDash=[4, 4], color="black"), {"x": {"datum": 0}})
    layers = [rule, zero, point]
    height = max(60, 28 * frame.most_rows)
    if frame.kinds is not None:
        body = {
            "facet": {"row": field("kind:N", title=None, sort=frame.kinds)},
            "spec": {"layer": layers, "height": height, "width": WIDTH},
            "resolve": {"scale": {"y": "independent"}},
            "title": COMPARISONS_TITLE,
        }
        return top(body, values(frame.rows), data_at=0)
    body = {"layer": layers, "height": height, "title": COMPARISONS_TITLE, "width": WIDTH}
    return top(body, values(frame.rows), data_at=1)


# --- resource-sensitive tasks ----------------------------------------------------------------


def resource_title(alpha: float, adjust: str) -> str:
    """The resource chart's title (after the comparison's name when there is one)."""
    return (
        f"Per-task accuracy under two resource profiles (red: {adjust} q ≤ {alpha:g} or memory "
        "need between the two hard limits)"
    )


def resource_sensitivity_spec(
    resource: pd.DataFrame, *, alpha: float = 0.05, adjust: str = "BH"
) -> dict[str, Any]:
    """Per task, one agent's accuracy under two resource profiles, joined by a line.

    Input: the per-task table of :func:`evalnoise.attribution.resource_sensitivity` with the
    comparison's ``agent``, ``profile_a`` and ``profile_b`` (the attribution stage's
    ``resource_sensitivity.parquet``); columns
    :data:`~evalnoise.report.chart_tables.RESOURCE_SENSITIVITY_COLUMNS`, optionally
    ``between_limits``, ``n_pairs`` and ``pvalue``. One panel per agent and profile pair;
    tasks keep the input order (the stage sorts them by adjusted p). The dot of each profile
    is coloured by profile; a task singled out — ``significant`` (adjusted p ≤ ``alpha``) or
    whose memory need lies between the two hard limits — is drawn with a thick red line and
    named in the tooltip.
    """
    frame = resource_frame(resource)
    tooltip = [
        tip("task_id:N", "task"),
        tip("profile_a:N", "profile a"),
        tip("accuracy_a:Q", "accuracy under a", ".0%"),
        tip("profile_b:N", "profile b"),
        tip("accuracy_b:Q", "accuracy under b", ".0%"),
        tip("n_pairs:Q", "paired trials"),
        tip("pvalue:Q", "exact McNemar p", ".3g"),
        tip("pvalue_adjusted:Q", f"{adjust} q", ".3g"),
        tip("singled_out:N", "singled out"),
    ]
    y = field("task_id:N", title=None, sort=frame.tasks, axis={"labelLimit": 260})
    x_scale = {"domain": [0, 1]}
    # One data set for both layers (a facet hands each panel its rows): the line is drawn
    # once per task, from its profile-a row.
    line = layer(
        mark("rule"),
        {
            "y": y,
            "x": field(
                "accuracy_a:Q",
                title="accuracy over the paired trials",
                scale=x_scale,
                axis={"format": "%"},
            ),
            "x2": second("accuracy_b:Q"),
            "color": condition("datum.singled", "#d62728", "#9e9e9e"),
            "strokeWidth": condition("datum.singled", 3, 1.5),
            "tooltip": tooltip,
        },
        "datum.role == 'a'",
    )
    dots = layer(
        mark("point", filled=True, size=60),
        {
            "y": y,
            "x": field("accuracy:Q", scale=x_scale),
            "color": field(
                "profile:N",
                title="resource profile",
                sort=frame.profiles,
                legend={"orient": "bottom"},
            ),
            "tooltip": [tip("profile:N", "profile"), *tooltip],
        },
    )
    height = max(60, 18 * frame.most_rows)
    title = resource_title(alpha, adjust)
    rows = values(frame.rows)
    if len(frame.comparisons) == 1:
        body = {
            "layer": [line, dots],
            "height": height,
            "title": f"{frame.comparisons[0]} — {title}",
            "width": WIDTH,
        }
        return top(body, rows, data_at=1)
    body = {
        "facet": {"row": field("comparison:N", title=None, sort=frame.comparisons)},
        "spec": {"layer": [line, dots], "height": height, "width": WIDTH},
        "resolve": {"scale": {"y": "independent"}},
        "title": title,
    }
    return top(body, rows, data_at=0)
