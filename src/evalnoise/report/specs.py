"""The report's charts as Vega-Lite specs built as plain dicts: no altair at report time.

Each ``*_spec`` function returns exactly the dict that ``chart_spec`` (altair's
``to_dict(validate=True)``) returns for the chart of the same name in
:mod:`evalnoise.report.charts` — the same keys in the same order, the same inline datasets
under the same names — so the report's HTML and PNG files are byte for byte what the altair
charts give; ``tests/report/test_report_specs.py`` compares the two builders on the report's
inputs. Building the objects of altair's schema, deep-copying and validating them was ~1.7 s
of a report of 100,000 trials (and importing altair ~0.5 s); these dicts take milliseconds.

The tables each chart draws (ranks, tidy rows, labels, the order of groups) are prepared
here, once, by the ``*_frame`` functions, which :mod:`evalnoise.report.charts` uses too.
Inline data follow altair's rules (``altair.utils.sanitize_pandas_dataframe``: NaN and ±inf
become null, NumPy scalars Python ones) and are named ``data-`` + the first 32 hex digits
of the SHA-256 of their JSON with sorted keys, as altair names them.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from evalnoise.report.health import NOT_A_MEASUREMENT

#: The Vega-Lite schema the specs declare: altair 6.3's (``alt.SCHEMA_URL``). A test checks
#: that the installed altair emits this one.
SCHEMA_URL = "https://vega.github.io/schema/vega-lite/v6.4.1.json"
#: The Vega-Lite version of the schema, as vl-convert names it (``v6_4``).
VL_VERSION = "v" + "_".join(SCHEMA_URL.rsplit("/v", 1)[1].removesuffix(".json").split(".")[:2])

#: Altair's default top-level config.
_CONFIG = {"view": {"continuousWidth": 300, "continuousHeight": 300}}

#: Legend values of :func:`resource_sensitivity_spec`: why a task is singled out.
SINGLED_OUT = ("q ≤ alpha and need between the limits", "q ≤ alpha", "need between the limits")
#: Legend values of the ``valid`` column in :func:`infra_spec`.
MEASUREMENT_STATUS = ("measurement", NOT_A_MEASUREMENT.lower())
#: Estimator label → (mean, 5th percentile, 95th percentile, full-data value) columns.
ESTIMATORS = {
    "ICC(1,1) ANOVA": ("icc_mean", "icc_p05", "icc_p95", "full_icc"),
    "plug-in (paper eq. 6–7)": ("plugin_mean", "plugin_p05", "plugin_p95", "full_plugin"),
}
#: Questions a panel of the per-question chart draws at most: past it, every k-th rank.
PER_TASK_POINTS = 1000

WIDTH = 520
ESTIMATOR_COLORS = ("#1f77b4", "#d62728")

_TYPES = {"Q": "quantitative", "N": "nominal", "O": "ordinal", "T": "temporal"}


# --- inline data, as altair writes it ------------------------------------------------------


def values(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """The rows of ``frame`` as altair inlines them (``sanitize_pandas_dataframe`` then
    ``to_dict(orient="records")``): missing values and ±inf are ``None``, numbers Python's."""
    df = frame.copy()
    for name, dtype in df.dtypes.items():
        kind = str(dtype)
        if kind in ("category", "string", "str", "boolean") or kind in _NULLABLE:
            col = df[name].astype(object)
            df[name] = col.where(col.notnull(), None)
        elif kind == "bool" or np.issubdtype(dtype, np.integer):
            df[name] = df[name].astype(object)
        elif np.issubdtype(dtype, np.floating):
            col = df[name]
            df[name] = col.astype(object).where(~(col.isnull() | np.isinf(col)), None)
        elif kind == "object":
            col = df[name].map(lambda v: v.tolist() if isinstance(v, np.ndarray) else v)
            df[name] = col.where(col.notnull(), None)
        else:  # datetimes, timedeltas: no chart of the report draws one
            raise TypeError(f"chart data: column {name!r} of type {kind} is not supported")
    return df.to_dict(orient="records")


_NULLABLE = {"Int8", "Int16", "Int32", "Int64", "UInt8", "UInt16", "UInt32", "UInt64"}
_NULLABLE |= {"Float32", "Float64"}


def dataset_name(rows: list[dict[str, Any]]) -> str:
    """Altair's name of an inline dataset: ``data-`` + SHA-256 of its sorted JSON, 32 hex."""
    text = json.dumps(rows, sort_keys=True, default=str)
    return "data-" + hashlib.sha256(text.encode()).hexdigest()[:32]


def _top(body: dict[str, Any], rows: list[dict[str, Any]], *, data_at: int) -> dict[str, Any]:
    """``body`` with the data reference inserted as its ``data_at``-th key, the config first,
    then ``$schema`` and the dataset, as altair orders a top-level chart."""
    name = dataset_name(rows)
    items = list(body.items())
    items.insert(data_at, ("data", {"name": name}))
    return {
        "config": _CONFIG,
        **dict(items),
        "$schema": SCHEMA_URL,
        "datasets": {name: rows},
    }


# --- encodings, as altair writes them ------------------------------------------------------


def _field(shorthand: str, **props: Any) -> dict[str, Any]:
    """A field definition: ``"name:Q"`` with properties, keys in altair's (sorted) order."""
    name, _, kind = shorthand.rpartition(":")
    out = {**props, "field": name, "type": _TYPES[kind]}
    return {k: out[k] for k in sorted(out)}


def _second(shorthand: str) -> dict[str, Any]:
    """A secondary channel (``x2``, ``y2``): the field alone."""
    return {"field": shorthand.rpartition(":")[0]}


def _tip(shorthand: str, title: str | None = None, fmt: str | None = None) -> dict[str, Any]:
    props: dict[str, Any] = {}
    if title is not None:
        props["title"] = title
    if fmt is not None:
        props["format"] = fmt
    return _field(shorthand, **props)


def _sorted(mapping: Mapping[str, Any]) -> dict[str, Any]:
    return {k: mapping[k] for k in sorted(mapping)}


def _mark(kind: str, **props: Any) -> dict[str, Any]:
    return {"type": kind, **_sorted(props)}


def _layer(mark: dict, encoding: Mapping[str, Any], filter_: str | None = None) -> dict:
    out: dict[str, Any] = {"mark": mark, "encoding": _sorted(encoding)}
    if filter_ is not None:
        out["transform"] = [{"filter": filter_}]
    return out


def _in_order(values_: Iterable[object]) -> list[str]:
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
    require(per_task, ("group", "task", "n", "mean", "ci_low", "ci_high"), "per_task_chart")
    df = per_task[["group", "task", "n", "mean", "ci_low", "ci_high"]].copy()
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


def per_task_spec(per_task: pd.DataFrame, *, confidence: float = 0.95) -> dict[str, Any]:
    """The spec of :func:`evalnoise.report.charts.per_task_chart`: one panel per group,
    each question's accuracy (point) and its Wilson interval (rule) against its rank."""
    frame = per_task_frame(per_task, confidence=confidence)
    level = f"{confidence:.0%}"
    tooltip = [
        _tip("task:N"),
        _tip("n:Q", "trials"),
        _tip("mean:Q", "accuracy", ".1%"),
        _tip("ci_low:Q", f"{level} CI low", ".1%"),
        _tip("ci_high:Q", f"{level} CI high", ".1%"),
    ]
    x = _field("rank:Q", title="question (sorted by accuracy)", axis={"tickMinStep": 1})
    rules = _layer(
        _mark("rule", color="#9ecae1", strokeWidth=2),
        {
            "tooltip": tooltip,
            "x": x,
            "y": _field(
                "ci_low:Q",
                title=f"accuracy ({level} Wilson CI)",
                scale={"domain": [0, 1]},
                axis={"format": "%"},
            ),
            "y2": _second("ci_high:Q"),
        },
    )
    points = _layer(
        _mark("point", filled=True, color="#08519c", size=28),
        {"tooltip": tooltip, "x": x, "y": _field("mean:Q")},
    )
    body = {
        "facet": {"row": _field("group:N", title=None, sort=frame.groups)},
        "spec": {"layer": [rules, points], "height": 170, "width": WIDTH},
        "title": frame.title,
    }
    return _top(body, values(frame.rows), data_at=0)


# --- ICC convergence (paper Fig. 2, 4, 5) ----------------------------------------------------


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


def convergence_spec(
    tidy: pd.DataFrame, *, band_label: str = "5th–95th percentile"
) -> dict[str, Any]:
    """The spec of :func:`evalnoise.report.charts.convergence_chart`: per group, each
    estimator's mean over subsamples (line) and band, and its value on all trials (dashed)."""
    require(tidy, ("group", "trials", "estimator", "mean", "low", "high"), "convergence_chart")
    cols = ["group", "trials", "estimator", "mean", "low", "high", "reference"]
    df = tidy[[c for c in cols if c in tidy.columns]].reset_index(drop=True)
    estimators = _in_order(df["estimator"])
    color = _field(
        "estimator:N",
        title="estimator",
        scale={
            "domain": estimators,
            "range": [ESTIMATOR_COLORS[i % len(ESTIMATOR_COLORS)] for i in range(len(estimators))],
        },
        legend={"orient": "bottom"},
    )
    t = df["trials"].astype(float)
    log_x = t.min() > 0 and t.max() / t.min() >= 8
    x = _field(
        "trials:Q",
        title="trials per task",
        scale={"base": 2, "type": "log"} if log_x else {"zero": False},
        axis={"values": sorted(int(v) for v in df["trials"].unique())},
    )
    y_scale = {"clamp": True, "domain": [min(0.0, float(df["low"].min())), 1.0]}
    band = _layer(
        _mark("area", opacity=0.18),
        {
            "color": color,
            "x": x,
            "y": _field("low:Q", title="ICC", scale=y_scale),
            "y2": _second("high:Q"),
        },
    )
    line = _layer(
        _mark("line", point=True),
        {
            "color": color,
            "x": x,
            "y": _field("mean:Q"),
            "tooltip": [
                _tip("estimator:N"),
                _tip("trials:Q"),
                _tip("mean:Q", fmt=".3f"),
                _tip("low:Q", f"{band_label} low", ".3f"),
                _tip("high:Q", f"{band_label} high", ".3f"),
            ],
        },
    )
    layers = [band, line]
    if "reference" in df.columns and df["reference"].notna().any():
        layers.append(
            _layer(
                _mark("rule", strokeDash=[4, 4]),
                {
                    "y": _field("reference:Q"),
                    "color": color,
                    "tooltip": [
                        _tip("estimator:N"),
                        _tip("reference:Q", "all trials", ".3f"),
                    ],
                },
            )
        )
    body = {
        "facet": _field("group:N", title=None, sort=sorted(df["group"].unique())),
        "spec": {"layer": layers, "height": 220, "width": 300},
        "columns": 2,
        "title": f"ICC convergence over trials (mean over subsamples, band: {band_label}; "
        "dashed: all trials)",
    }
    return _top(body, values(df), data_at=0)


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
    require(budget, ("n_tasks", "trials", "se"), "budget_chart")
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


BUDGET_TITLE = "Budget allocation: SE of accuracy for a fixed number of runs (diamond: recommended)"


def budget_log_x(frame: pd.DataFrame) -> bool:
    """The tasks axis is logarithmic when it spans a factor of 20 or more."""
    n = frame["n_tasks"].astype(float)
    return bool(n.min() > 0 and n.max() / n.min() >= 20)


def budget_spec(budget: pd.DataFrame, *, title: str | None = None) -> dict[str, Any]:
    """The spec of :func:`evalnoise.report.charts.budget_chart`: SE against tasks for a
    fixed budget, one line per group, the recommended split marked and labelled."""
    df = budget_frame(budget)
    x = _field(
        "n_tasks:Q",
        title="tasks (n); trials per task T = budget / n",
        scale={"nice": False, "type": "log"} if budget_log_x(df) else {"zero": False},
    )
    y = _field("se:Q", title="SE of accuracy", scale={"zero": True})
    enc: dict[str, Any] = {
        "x": x,
        "y": y,
        "tooltip": [
            _tip("n_tasks:Q", "tasks"),
            _tip("trials:Q", "trials per task"),
            _tip("se:Q", "SE", ".4f"),
        ],
    }
    if "group" in df.columns:
        enc["color"] = _field("group:N", title=None, sort=sorted(df["group"].unique()))
    line = _layer(_mark("line", point={"size": 20}), enc)
    best = _layer(
        _mark("point", shape="diamond", size=180, filled=True, color="black"),
        enc,
        "datum.recommended",
    )
    label = _layer(
        _mark("text", align="right", dx=-10, dy=-12, fontWeight="bold"),
        {"x": x, "y": y, "text": _field("label:N")},
        "datum.recommended",
    )
    body = {
        "layer": [line, best, label],
        "height": 300,
        "title": BUDGET_TITLE if title is None else title,
        "width": WIDTH,
    }
    return _top(body, values(df), data_at=1)


# --- D study ---------------------------------------------------------------------------------


def dstudy_frame(curve: pd.DataFrame) -> pd.DataFrame:
    """The D-study rows the chart draws, with ``label`` = "tasks × trials"."""
    require(curve, ("group", "budget", "se", "tasks", "trials"), "dstudy_chart")
    df = curve.copy()
    df["group"] = df["group"].astype(str)
    df["label"] = [f"{int(n)} × {int(t)}" for n, t in zip(df["tasks"], df["trials"], strict=True)]
    return df


DSTUDY_TITLE = "D study: least total-error SE per budget (label: tasks × trials per task)"


def dstudy_spec(curve: pd.DataFrame) -> dict[str, Any]:
    """The spec of :func:`evalnoise.report.charts.dstudy_chart`: the least total-error SE
    each budget buys, one line per group, each point labelled with its split."""
    df = dstudy_frame(curve)
    enc = {
        "x": _field(
            "budget:Q", title="budget (trials)", scale={"type": "log"}, axis={"format": "~s"}
        ),
        "y": _field("se:Q", title="total-error SE of accuracy", scale={"zero": True}),
        "color": _field("group:N", title=None, sort=sorted(df["group"].unique())),
        "tooltip": [
            _tip("group:N"),
            _tip("budget_multiple:Q", "× the run's cost"),
            _tip("tasks:Q"),
            _tip("trials:Q", "trials per task"),
            _tip("se:Q", "SE", ".4f"),
        ],
    }
    line = _layer(_mark("line", point={"size": 30}), enc)
    text = _layer(
        _mark("text", align="left", dx=6, dy=-8, fontSize=10),
        {**enc, "text": _field("label:N")},
    )
    body = {"layer": [line, text], "height": 300, "title": DSTUDY_TITLE, "width": WIDTH}
    return _top(body, values(df), data_at=1)


# --- accuracy and infra errors per resource profile ------------------------------------------

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
INFRA_TITLE = "Accuracy and infrastructure errors per resource profile"


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
    """The rows :func:`infra_spec` draws; a row whose ``valid`` is false gets
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
    return InfraFrame(
        df, has_valid, _in_order(df["resource_profile"]), sorted(df["agent"].unique())
    )


def infra_spec(infra: pd.DataFrame, *, confidence: float = 0.95) -> dict[str, Any]:
    """The spec of :func:`evalnoise.report.charts.infra_chart`: accuracy and infra error
    rate per resource profile with CIs, agents side by side, invalid groups as crosses with
    dashed intervals."""
    frame = infra_frame(infra)
    level = f"{confidence:.0%}"

    def panel(value: str, low: str, high: str, title: str) -> dict[str, Any]:
        enc = {
            "x": _field(
                "resource_profile:N",
                title="resource profile",
                sort=frame.profiles,
                axis={"labelAngle": 0},
            ),
            "xOffset": _field("agent:N", sort=frame.agents),
            "color": _field("agent:N", sort=frame.agents, legend={"orient": "bottom"}),
        }
        tooltip = [
            _tip("agent:N"),
            _tip("resource_profile:N"),
            _tip(f"{value}:Q", fmt=".1%"),
            _tip(f"{low}:Q", f"{level} CI low", ".1%"),
            _tip(f"{high}:Q", f"{level} CI high", ".1%"),
        ]
        rule_enc: dict[str, Any] = {}
        point_enc: dict[str, Any] = {}
        if frame.has_valid:
            tooltip.append(_tip("measurement:N"))
            rule_enc["strokeDash"] = _field(
                "measurement:N",
                title=None,
                scale={"domain": list(MEASUREMENT_STATUS), "range": [[1, 0], [4, 3]]},
                legend={"orient": "bottom"},
            )
            point_enc["shape"] = _field(
                "measurement:N",
                title=None,
                scale={"domain": list(MEASUREMENT_STATUS), "range": ["circle", "cross"]},
                legend={"orient": "bottom"},
            )
        rule = _layer(
            _mark("rule", strokeWidth=2),
            {
                **enc,
                "y": _field(f"{low}:Q", title=f"{title} ({level} CI)", axis={"format": "%"}),
                "y2": _second(f"{high}:Q"),
                **rule_enc,
            },
        )
        point = _layer(
            _mark("point", filled=True, size=70),
            {**enc, "y": _field(f"{value}:Q"), "tooltip": tooltip, **point_enc},
        )
        return {"layer": [rule, point], "height": 260, "title": title, "width": 260}

    body = {
        "hconcat": [
            panel("accuracy", "ci_low", "ci_high", "accuracy"),
            panel("infra_error_rate", "infra_ci_low", "infra_ci_high", "infra error rate"),
        ],
        "title": INFRA_TITLE,
    }
    return _top(body, values(frame.rows), data_at=1)


# --- paired comparisons ----------------------------------------------------------------------


@dataclass(frozen=True)
class ComparisonsFrame:
    """The comparisons chart's rows ([kind,] a, b, diff, ci_low, ci_high [, p], pair
    [, significance]), the pairs in input order and the significance classes."""

    rows: pd.DataFrame
    pairs: list[str]
    significance: tuple[str, str] | None


def comparisons_frame(
    comparisons: pd.DataFrame, *, p_column: str | None = "pvalue_holm", alpha: float = 0.05
) -> ComparisonsFrame:
    """The rows the comparisons chart draws; with ``p_column``, each pair's significance at
    ``alpha`` ("p not available" when its p is missing)."""
    require(comparisons, ("a", "b", "diff", "ci_low", "ci_high"), "comparisons_chart")
    cols = ["kind", "a", "b", "diff", "ci_low", "ci_high"]
    df = comparisons[[c for c in cols if c in comparisons.columns]].copy()
    has_p = p_column is not None and p_column in comparisons.columns
    if has_p:
        df["p"] = pd.to_numeric(comparisons[p_column], errors="coerce").to_numpy()
    df["pair"] = [f"{a} − {b}" for a, b in zip(df["a"], df["b"], strict=True)]
    df = df.reset_index(drop=True)
    pairs = _in_order(df["pair"])
    significance = None
    if has_p:
        significance = (f"Holm p < {alpha:g}", f"Holm p ≥ {alpha:g}")
        df["significance"] = np.where(df["p"] < alpha, *significance)
        df.loc[df["p"].isna(), "significance"] = "p not available"
    if "kind" in df.columns:
        df["kind"] = df["kind"].astype(str)
    return ComparisonsFrame(df, pairs, significance)


COMPARISONS_TITLE = "Paired differences (a − b)"


def comparisons_spec(
    comparisons: pd.DataFrame,
    *,
    p_column: str | None = "pvalue_holm",
    alpha: float = 0.05,
    confidence: float = 0.95,
) -> dict[str, Any]:
    """The spec of :func:`evalnoise.report.charts.comparisons_chart`: each pair's paired
    difference a − b with its CI, zero marked, coloured by Holm significance; one panel per
    ``kind`` when the table has one."""
    frame = comparisons_frame(comparisons, p_column=p_column, alpha=alpha)
    df = frame.rows
    level = f"{confidence:.0%}"
    tooltip = [
        _tip("pair:N", "a − b"),
        _tip("diff:Q", fmt="+.1%"),
        _tip("ci_low:Q", f"{level} CI low", "+.1%"),
        _tip("ci_high:Q", f"{level} CI high", "+.1%"),
    ]
    enc: dict[str, Any] = {
        "y": _field("pair:N", title=None, sort=frame.pairs, axis={"labelLimit": 360}),
    }
    if frame.significance is not None:
        domain = [*frame.significance, "p not available"]
        enc["color"] = _field(
            "significance:N",
            title=None,
            scale={"domain": domain, "range": ["#d62728", "#7f7f7f", "#bcbd22"]},
            legend={"orient": "bottom"},
        )
        tooltip.append(_tip("p:Q", f"Holm p ({p_column})", ".3g"))
    x = _field(
        "ci_low:Q",
        title=f"difference in accuracy, a − b ({level} CI)",
        axis={"format": "+%"},
    )
    rule = _layer(_mark("rule", strokeWidth=2), {**enc, "x": x, "x2": _second("ci_high:Q")})
    point = _layer(
        _mark("point", filled=True, size=70), {**enc, "x": _field("diff:Q"), "tooltip": tooltip}
    )
    zero = _layer(_mark("rule", strokeDash=[4, 4], color="black"), {"x": {"datum": 0}})
    layers = [rule, zero, point]
    if "kind" in df.columns:
        rows = int(df.groupby("kind").size().max())
        body = {
            "facet": {"row": _field("kind:N", title=None, sort=_in_order(df["kind"]))},
            "spec": {"layer": layers, "height": max(60, 28 * rows), "width": WIDTH},
            "resolve": {"scale": {"y": "independent"}},
            "title": COMPARISONS_TITLE,
        }
        return _top(body, values(df), data_at=0)
    body = {
        "layer": layers,
        "height": max(60, 28 * len(frame.pairs)),
        "title": COMPARISONS_TITLE,
        "width": WIDTH,
    }
    return _top(body, values(df), data_at=1)


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
    """The rows :func:`resource_sensitivity_spec` draws: each task's two accuracies as two
    rows, with why it is singled out (``significant``, ``between_limits``)."""
    require(
        resource,
        (
            "agent",
            "profile_a",
            "profile_b",
            "task_id",
            "accuracy_a",
            "accuracy_b",
            "pvalue_adjusted",
            "significant",
        ),
        "resource_sensitivity_chart",
    )
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
        _in_order(df["task_id"]),
        _in_order(df["comparison"]),
        _in_order([*df["profile_a"], *df["profile_b"]]),
        int(df.groupby("comparison").size().max()),
    )


def _when_singled(yes: object, no: object) -> dict[str, Any]:
    """``alt.condition("datum.singled", alt.value(yes), alt.value(no))``."""
    return {"condition": {"test": "datum.singled", "value": yes}, "value": no}


def resource_title(alpha: float, adjust: str) -> str:
    """The resource chart's title (after the comparison's name when there is one)."""
    return (
        f"Per-task accuracy under two resource profiles (red: {adjust} q ≤ {alpha:g} or memory "
        "need between the two hard limits)"
    )


def resource_sensitivity_spec(
    resource: pd.DataFrame, *, alpha: float = 0.05, adjust: str = "BH"
) -> dict[str, Any]:
    """The spec of :func:`evalnoise.report.charts.resource_sensitivity_chart`: per task, one
    agent's accuracy under two resource profiles joined by a line, singled-out tasks red;
    one panel per agent and profile pair."""
    frame = resource_frame(resource)
    tooltip = [
        _tip("task_id:N", "task"),
        _tip("profile_a:N", "profile a"),
        _tip("accuracy_a:Q", "accuracy under a", ".0%"),
        _tip("profile_b:N", "profile b"),
        _tip("accuracy_b:Q", "accuracy under b", ".0%"),
        _tip("n_pairs:Q", "paired trials"),
        _tip("pvalue:Q", "exact McNemar p", ".3g"),
        _tip("pvalue_adjusted:Q", f"{adjust} q", ".3g"),
        _tip("singled_out:N", "singled out"),
    ]
    y = _field("task_id:N", title=None, sort=frame.tasks, axis={"labelLimit": 260})
    x_scale = {"domain": [0, 1]}
    line = _layer(
        _mark("rule"),
        {
            "y": y,
            "x": _field(
                "accuracy_a:Q",
                title="accuracy over the paired trials",
                scale=x_scale,
                axis={"format": "%"},
            ),
            "x2": _second("accuracy_b:Q"),
            "color": _when_singled("#d62728", "#9e9e9e"),
            "strokeWidth": _when_singled(3, 1.5),
            "tooltip": tooltip,
        },
        "datum.role == 'a'",
    )
    dots = _layer(
        _mark("point", filled=True, size=60),
        {
            "y": y,
            "x": _field("accuracy:Q", scale=x_scale),
            "color": _field(
                "profile:N",
                title="resource profile",
                sort=frame.profiles,
                legend={"orient": "bottom"},
            ),
            "tooltip": [_tip("profile:N", "profile"), *tooltip],
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
        return _top(body, rows, data_at=1)
    body = {
        "facet": {"row": _field("comparison:N", title=None, sort=frame.comparisons)},
        "spec": {"layer": [line, dots], "height": height, "width": WIDTH},
        "resolve": {"scale": {"y": "independent"}},
        "title": title,
    }
    return _top(body, rows, data_at=0)
