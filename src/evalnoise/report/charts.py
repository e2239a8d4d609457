"""The report's charts as altair charts, for notebooks and other front ends.

Each chart is defined once, as a Vega-Lite spec, in :mod:`evalnoise.report.specs` (what
every chart draws, its input columns and its errors are documented there); the functions
here load that spec into altair's top-level chart class (``FacetChart``, ``LayerChart`` or
``HConcatChart``), so ``chart.to_dict()`` gives the report's spec back, key for key. The
tables the charts draw are prepared by :mod:`evalnoise.report.chart_tables`, whose column
lists and helpers are re-exported here.

=====================  =====================================================================
chart                  spec (:mod:`evalnoise.report.specs`)
=====================  =====================================================================
per_task_chart         per_task_spec
convergence_chart      convergence_spec
budget_chart           budget_spec
dstudy_chart           dstudy_spec
passk_chart            passk_spec
infra_chart            infra_spec
comparisons_chart      comparisons_spec
resource_sensitivity_  resource_sensitivity_spec
chart
=====================  =====================================================================
"""

from __future__ import annotations

from typing import Any

import altair as alt
import pandas as pd

from evalnoise.report import specs
from evalnoise.report.chart_tables import (
    BUDGET_COLUMNS,
    COMPARISON_COLUMNS,
    CONVERGENCE_CHART_COLUMNS,
    ESTIMATORS,
    INFRA_COLUMNS,
    MEASUREMENT_STATUS,
    PASSK_COLUMNS,
    PER_TASK_POINTS,
    RESOURCE_SENSITIVITY_COLUMNS,
    SINGLED_OUT,
    recommended_allocation,
    tidy_convergence,
)

__all__ = [
    "BUDGET_COLUMNS",
    "COMPARISON_COLUMNS",
    "CONVERGENCE_CHART_COLUMNS",
    "ESTIMATORS",
    "INFRA_COLUMNS",
    "MEASUREMENT_STATUS",
    "PASSK_COLUMNS",
    "PER_TASK_POINTS",
    "RESOURCE_SENSITIVITY_COLUMNS",
    "SINGLED_OUT",
    "budget_chart",
    "comparisons_chart",
    "convergence_chart",
    "dstudy_chart",
    "infra_chart",
    "passk_chart",
    "per_task_chart",
    "recommended_allocation",
    "resource_sensitivity_chart",
    "tidy_convergence",
]

#: A top-level spec's composition key → the altair class of such a chart.
_TOP_LEVEL = {"facet": alt.FacetChart, "hconcat": alt.HConcatChart, "layer": alt.LayerChart}


def _as_chart(spec: dict[str, Any]) -> alt.TopLevelMixin:
    """The altair chart of a top-level Vega-Lite ``spec`` of :mod:`evalnoise.report.specs`:
    the class its composition key names, built by ``from_dict`` (validated against the
    schema), whose ``to_dict()`` is ``spec`` again, key for key."""
    # The rows go in inline: altair names them back into ``datasets`` (the same name, it is
    # their hash) and puts them after ``$schema``, where the spec has them; a ``datasets``
    # key handed to from_dict would come out second to last.
    body = {k: v for k, v in spec.items() if k not in ("$schema", "datasets")}
    body["data"] = {"values": spec["datasets"][spec["data"]["name"]]}
    for key, cls in _TOP_LEVEL.items():
        if key in spec:
            return cls.from_dict(body)
    raise ValueError(f"not a top-level facet, hconcat or layer spec: keys {sorted(spec)}")


def per_task_chart(per_task: pd.DataFrame, *, confidence: float = 0.95) -> alt.FacetChart:
    """Per-question accuracy with CIs, questions sorted by accuracy (paper Fig. 1):
    :func:`evalnoise.report.specs.per_task_spec` as an altair chart."""
    return _as_chart(specs.per_task_spec(per_task, confidence=confidence))


def convergence_chart(
    tidy: pd.DataFrame, *, band_label: str = "5th–95th percentile"
) -> alt.FacetChart:
    """ICC over trials per task, mean over subsamples and a band (paper Fig. 2, 4, 5):
    :func:`evalnoise.report.specs.convergence_spec` as an altair chart."""
    return _as_chart(specs.convergence_spec(tidy, band_label=band_label))


def budget_chart(budget: pd.DataFrame, *, title: str | None = None) -> alt.LayerChart:
    """SE of accuracy against the number of tasks for a fixed budget (paper eq. 9–10,
    Fig. 3): :func:`evalnoise.report.specs.budget_spec` as an altair chart."""
    return _as_chart(specs.budget_spec(budget, title=title))


def dstudy_chart(curve: pd.DataFrame) -> alt.LayerChart:
    """The D study, the least total-error SE each budget buys:
    :func:`evalnoise.report.specs.dstudy_spec` as an altair chart."""
    return _as_chart(specs.dstudy_spec(curve))


def passk_chart(table: pd.DataFrame, *, confidence: float = 0.95) -> alt.LayerChart:
    """pass^k against k, one line per group with its interval as a band:
    :func:`evalnoise.report.specs.passk_spec` as an altair chart."""
    return _as_chart(specs.passk_spec(table, confidence=confidence))


def infra_chart(infra: pd.DataFrame, *, confidence: float = 0.95) -> alt.HConcatChart:
    """Accuracy and infrastructure error rate per resource profile, with CIs:
    :func:`evalnoise.report.specs.infra_spec` as an altair chart."""
    return _as_chart(specs.infra_spec(infra, confidence=confidence))


def comparisons_chart(
    comparisons: pd.DataFrame,
    *,
    p_column: str | None = "pvalue_holm",
    alpha: float = 0.05,
    confidence: float = 0.95,
) -> alt.TopLevelMixin:
    """Paired differences a − b with CIs, one row per pair, zero marked (a ``FacetChart``
    when the table has a ``kind`` column, else a ``LayerChart``):
    :func:`evalnoise.report.specs.comparisons_spec` as an altair chart."""
    spec = specs.comparisons_spec(
        comparisons, p_column=p_column, alpha=alpha, confidence=confidence
    )
    return _as_chart(spec)


def resource_sensitivity_chart(
    resource: pd.DataFrame, *, alpha: float = 0.05, adjust: str = "BH"
) -> alt.TopLevelMixin:
    """Per task, one agent's accuracy under two resource profiles, joined by a line (a
    ``FacetChart`` of one panel per comparison, a ``LayerChart`` for one comparison):
    :func:`evalnoise.report.specs.resource_sensitivity_spec` as an altair chart."""
    return _as_chart(specs.resource_sensitivity_spec(resource, alpha=alpha, adjust=adjust))
