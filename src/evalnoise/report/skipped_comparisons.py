"""The comparisons a report leaves out: a paired difference involving a group that is not a
measurement of the agent would read a failure as a score, so such a pair is moved from the
comparisons to the skipped ones (:func:`drop_invalid_pairs`), and every skipped pair is listed
under the comparisons chart with its reason (:func:`skipped_comparisons_html`).
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from evalnoise.report.inputs import frame_or_none

__all__ = ["drop_invalid_pairs", "skipped_comparisons_html"]


def skipped_comparisons_html(skipped: Sequence[Mapping[str, Any]]) -> str:
    """The list of skipped pairs (``kind, within, a, b, reason``); empty text for none."""
    if not skipped:
        return ""
    cols = ("kind", "within", "a", "b", "reason")
    head = "".join(f"<th>{c}</th>" for c in cols)
    rows = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(r.get(c) or '—'))}</td>" for c in cols) + "</tr>"
        for r in skipped
    )
    return (
        f'<h3 id="skipped-comparisons">Comparisons left out ({len(skipped)})</h3>\n'
        "<p>These pairs were not compared: a difference involving a group that is not a "
        "measurement of the agent would read a failure as a score.</p>\n"
        f'<table class="skipped"><tr>{head}</tr>{rows}</table>'
    )


def drop_invalid_pairs(
    comparisons: pd.DataFrame, invalid: set[str]
) -> tuple[pd.DataFrame | None, list[dict[str, Any]]]:
    """Comparisons without an invalid group, and the removed ones as skipped records."""
    a, b = comparisons["a"].astype(str), comparisons["b"].astype(str)
    bad = a.isin(invalid) | b.isin(invalid)
    moved = []
    for _, row in comparisons[bad].iterrows():
        which = [str(row[c]) for c in ("a", "b") if str(row[c]) in invalid]
        moved.append(
            {
                "kind": row.get("kind"),
                "within": row.get("within"),
                "a": str(row["a"]),
                "b": str(row["b"]),
                "reason": " and ".join(which) + f" {'is' if len(which) == 1 else 'are'} "
                "not a measurement of the agent",
            }
        )
    return frame_or_none(comparisons[~bad]), moved
