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

_BUILD = ("CHART_STEMS", "build_report")
_CARDS = ("CardContext", "evaluation_card")
_CARD_MARKDOWN = ("card_markdown",)
_LIMITATIONS = ("limitations",)
_INPUTS = ("ReportInputs",)
_CHARTS = (
    "budget_chart",
    "comparisons_chart",
    "convergence_chart",
    "infra_chart",
    "per_task_chart",
    "tidy_convergence",
)


def __getattr__(name: str) -> Any:
    # Plain import statements, not importlib: evalnoise.pipeline.dependencies follows them
    # statically to derive what the pipeline's stages depend on.
    if name in _BUILD or name in _CHARTS:
        from evalnoise._extras import require

        require("report", f"evalnoise.report.{name}")
        if name in _BUILD:
            from evalnoise.report import build as module
        else:
            from evalnoise.report import charts as module
    elif name in _CARDS:
        from evalnoise.report import cards as module
    elif name in _CARD_MARKDOWN:
        from evalnoise.report import cards_markdown as module
    elif name in _LIMITATIONS:
        from evalnoise.report import card_limitations as module
    elif name in _INPUTS:
        from evalnoise.report import inputs as module
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return _lazy.bind(globals(), module, name)


def __dir__() -> list[str]:
    return _lazy.names(globals(), __all__)
