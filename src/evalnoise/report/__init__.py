"""The report: offline charts, Evaluation Cards and ``index.html`` for one evaluation run.

``build_report`` writes everything from one :class:`~evalnoise.report.inputs.ReportInputs`
(``ReportInputs.read`` loads the pipeline's files, ``ReportInputs.of`` takes records or
frames); the chart functions and the cards are public on their own for notebooks and other
front ends.

The names below are loaded on first access (PEP 562 ``__getattr__``), so importing a light
submodule (``evalnoise.report.cards``) does not import altair and
vl-convert, which only the charts and ``build_report`` need (the ``report`` extra). The
statistics the report shows live in :mod:`evalnoise.stats` and :mod:`evalnoise.analysis`
(the per-task table: :func:`evalnoise.analysis.per_task_table`); the report only draws.
"""

from __future__ import annotations

from typing import Any

from evalnoise import _lazy

__all__ = [
    "CHART_STEMS",
    "CardContext",
    "ReportInputs",
    "budget_chart",
    "build_report",
    "card_markdown",
    "comparisons_chart",
    "convergence_chart",
    "evaluation_card",
    "infra_chart",
    "limitations",
    "per_task_chart",
    "tidy_convergence",
]

_MODULES = {
    "CHART_STEMS": "build",
    "build_report": "build",
    "CardContext": "cards",
    "evaluation_card": "cards",
    "card_markdown": "cards_markdown",
    "limitations": "card_limitations",
    "ReportInputs": "inputs",
    "budget_chart": "charts",
    "comparisons_chart": "charts",
    "convergence_chart": "charts",
    "infra_chart": "charts",
    "per_task_chart": "charts",
    "tidy_convergence": "charts",
}
#: the submodules that draw (matplotlib): the `report` extra
_EXTRAS = {"build": "report", "charts": "report"}


def __getattr__(name: str) -> Any:
    return _lazy.load(globals(), _MODULES, name, _EXTRAS)


def __dir__() -> list[str]:
    return _lazy.names(globals(), __all__)
