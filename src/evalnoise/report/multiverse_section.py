"""The page's section "How far the analysis moves the headline": one table per group, the
headline accuracy under every combination of the analysis choices that apply to the group's
run (the group record's ``multiverse``, :func:`evalnoise.multiverse.multiverse`; its
``cells``). The columns are the factors that vary in that group (estimand, infra policy,
verdict after an agent failure, judge, cluster SE: a factor with one level is no choice
there), then the accuracy with its interval; the run's own analysis — the headline — is
marked. Above each table the range, the spread and the choice that moves it most, in the
summary's words (:func:`evalnoise.consistency_text.multiverse_line`); under it what could not
be varied. The infra policy's accuracies are its column here and nowhere else on the page.
A group with no multiverse (not a measurement of the agent, or nothing counted) says why.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from types import SimpleNamespace
from typing import Any

from evalnoise.consistency_text import multiverse_line
from evalnoise.formatting import pct
from evalnoise.report._markup import value_cell
from evalnoise.report.card_text import card_title

__all__ = [
    "FACTOR_HEADERS",
    "MULTIVERSE_TITLE",
    "REFERENCE_MARK",
    "multiverse_anchor",
    "multiverse_rows",
    "multiverse_section",
]

#: The section's heading (and its link in the page's navigation).
MULTIVERSE_TITLE = "How far the analysis moves the headline"
#: Each factor's column heading.
FACTOR_HEADERS = {
    "estimand": "estimand",
    "infra_policy": "infra policy",
    "verdict_after_failure": "verdict after agent failure",
    "judge": "judge",
    "cluster_se": "cluster SE",
}
#: What the reference cell's last column says.
REFERENCE_MARK = "◆ the headline (the run's own analysis)"


def multiverse_anchor(stem: str) -> str:
    """The id of a group's table (``stem``: its card's stem)."""
    return f"multiverse-{stem}"


def _level(factor: str, level: Any) -> str:
    # a judge's name is the user's: kept as written; the project's own levels read as words
    return str(level) if factor == "judge" else str(level).replace("_", " ")


def multiverse_rows(
    m: Mapping[str, Any], confidence: float
) -> tuple[list[str], list[tuple[list[str], bool]]]:
    """The headers and rows of one group's table from its record's ``multiverse``: per cell
    (in the record's order) the levels of the varied factors, the accuracy, its interval,
    the trials and tasks counted, and the mark of the reference cell; each row with whether
    it is the reference (every factor at ``reference``'s level)."""
    factors = list(m["factors"])
    headers = [
        *(FACTOR_HEADERS.get(f, f) for f in factors),
        "accuracy",
        f"{confidence:.0%} CI",
        "trials counted",
        "tasks",
        "",
    ]
    reference = m["reference"]
    rows = []
    for cell in m["cells"]:
        is_ref = all(cell.get(f) == level for f, level in reference.items())
        ci = (
            "—"
            if cell.get("ci_low") is None
            else f"[{pct(cell.get('ci_low'))}, {pct(cell.get('ci_high'))}]"
        )
        rows.append(
            (
                [
                    *(_level(f, cell[f]) for f in factors),
                    pct(cell.get("mean")),
                    ci,
                    str(cell.get("n_trials", "—")),
                    str(cell.get("n_tasks", "—")),
                    REFERENCE_MARK if is_ref else "",
                ],
                is_ref,
            )
        )
    return headers, rows


def _group_html(stem: str, card: Mapping[str, Any], confidence: float) -> str:
    title = html.escape(card_title(card))
    metrics = card.get("metrics") or {}
    anchor = multiverse_anchor(stem)
    m = metrics.get("multiverse")
    if not m:
        why = metrics.get("accuracy_withheld") or "the group's record holds no multiverse"
        return (
            f'<h3 id="{anchor}">{title}</h3>\n'
            f'<p class="notes">No multiverse: {html.escape(str(why))}.</p>'
        )
    struck = card.get("valid") is False
    headers, rows = multiverse_rows(m, confidence)
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    n_levels = len(m["factors"])
    body = []
    for cells, is_ref in rows:
        tds = [f"<td>{html.escape(c)}</td>" for c in cells[:n_levels]]
        tds += [value_cell(c, struck) for c in cells[n_levels : n_levels + 2]]
        tds += [f'<td class="n">{html.escape(c)}</td>' for c in cells[n_levels + 2 : -1]]
        tds.append(f"<td><strong>{html.escape(cells[-1])}</strong></td>" if is_ref else "<td></td>")
        cls = ' class="reference"' if is_ref else ""
        body.append(f"<tr{cls}>{''.join(tds)}</tr>")
    notes = "".join(f"<li>{html.escape(str(n))}</li>" for n in m.get("notes") or ())
    return (
        f'<h3 id="{anchor}">{title}</h3>\n'
        f'<p class="line">{html.escape(multiverse_line(SimpleNamespace(**m)))}</p>\n'
        f'<table class="multiverse"><tr>{head}</tr>\n{chr(10).join(body)}\n</table>'
        + (f'\n<ul class="notes">{notes}</ul>' if notes else "")
    )


def multiverse_section(cards: Sequence[tuple[str, Mapping[str, Any]]], confidence: float) -> str:
    """The section as HTML, one table per card (``(stem, card)`` in the cards' order); empty
    when no card carries a multiverse (the groups' records predate it, or every group is
    withheld)."""
    if not any((card.get("metrics") or {}).get("multiverse") for _, card in cards):
        return ""
    parts = "\n".join(_group_html(stem, card, confidence) for stem, card in cards)
    return f"""<section id="multiverse">
<h2>{html.escape(MULTIVERSE_TITLE)}</h2>
<p>Each group's headline accuracy under every combination of the analysis choices that
apply to its run, each cell the single analysis it names over the same trials: the estimand
(the mean of the task means, every task weighing 1, or the mean over trials), the infra
policy (an infrastructure outcome scored as incorrect, left out, or retried), the verdict
after an agent failure (the verifier's verdict, or 0), the judge, and the cluster-robust SE
of the {confidence:.0%} interval (CR1 or Miller). Only the choices that vary in a group are
columns; ◆ marks the run's own analysis, the headline. A choice's influence is the largest
range of the accuracy across its levels with every other choice held fixed.</p>
{parts}
</section>"""
