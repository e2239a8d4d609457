"""The HTML every section shares for a statistic of a group that is not a measurement of the
agent: the value struck through and greyed, followed by the red label, never shown plain."""

from __future__ import annotations

import html

from evalnoise.report.health import NOT_A_MEASUREMENT_LABEL

__all__ = ["struck_through", "value_cell"]


def struck_through(text: str, *, code: bool = False) -> str:
    """Escaped ``text`` struck through and greyed, followed by the red "not a measurement"."""
    inner = f"<code>{html.escape(text)}</code>" if code else html.escape(text)
    return f'<s class="nm">{inner}</s> <span class="nm-label">{NOT_A_MEASUREMENT_LABEL}</span>'


def value_cell(text: str, struck: bool) -> str:
    """A table cell of plain ``text``; struck through and labelled for an invalid group."""
    if struck:
        return f'<td class="not-measurement">{struck_through(text)}</td>'
    return f"<td>{html.escape(text)}</td>"
