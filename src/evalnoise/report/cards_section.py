"""The page's "Evaluation Cards" section: every card as HTML (its banner or note, reporting
line, fields in the order of Table 4, outcomes, per-level rows and limitations), with links to
its Markdown and JSON files. An invalid group's statistics are struck through and labelled
(:func:`evalnoise.report._markup.struck_through`); what the card says is
:func:`evalnoise.report.cards.evaluation_card`'s, in the words of
:func:`evalnoise.report.card_text.card_fields`; the section only draws it.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

from evalnoise.formatting import fmt, pct
from evalnoise.outcomes import flags_text
from evalnoise.report._markup import struck_through
from evalnoise.report.card_text import card_banner, card_fields, card_note, card_title
from evalnoise.report.health import crash_signals_text
from evalnoise.report.outcomes_section import outcome_cells, outcome_header

__all__ = ["card_html", "cards_section"]


def _banner_html(card: Mapping[str, Any]) -> str:
    """The red banner of an invalid card or the neutral note of an expected-failure card."""
    banner, note = card_banner(card), card_note(card)
    if banner is not None:
        head, _, reasons = banner.partition(": ")
        return (
            f'<div class="banner invalid card-banner" role="alert"><strong>'
            f"{html.escape(head)}:</strong> {html.escape(reasons)}</div>"
        )
    if note is not None:
        return f'<div class="note expected" role="note">{html.escape(note)}</div>'
    return ""


def _card_outcomes_html(card: Mapping[str, Any]) -> str:
    outcomes = card.get("outcomes")
    if outcomes is None:
        return (
            '<h4>Outcomes</h4><p class="outcomes-unknown">Outcome counts not recorded (the '
            "input predates outcome accounting).</p>"
        )
    parts = [
        f"<h4>Outcomes of {outcomes.get('trials') or '?'} trials</h4>",
        f'<table class="outcomes">{outcome_header()}<tr>{outcome_cells(outcomes)}</tr></table>',
    ]
    if flags_text(outcomes):
        parts.append(f'<p class="flags">Flagged: {html.escape(flags_text(outcomes))}</p>')
    signals = (card.get("health") or {}).get("crash_signals") or {}
    if signals:
        text = crash_signals_text(signals)
        parts.append(f'<p class="signals">Crash signals: {html.escape(text)}</p>')
    return "\n".join(parts)


def card_html(card: Mapping[str, Any], stem: str) -> str:
    """One card as an ``<article>`` with the id ``card-<stem>`` (``stem``: its files' name)."""
    conf = f"{card['metrics']['confidence']:.0%}"
    invalid = card.get("valid") is False
    rows = "\n".join(
        f"<tr><th>{html.escape(k)}</th>"
        + (
            f'<td class="not-measurement">{struck_through(v)}</td>'
            if struck
            else f"<td>{html.escape(v)}</td>"
        )
        + "</tr>"
        for k, v, struck in card_fields(card)
    )
    line = card["reporting_line"]
    # a withheld headline's line says why there is no number: nothing to strike through
    struck_line = invalid and not card["metrics"].get("accuracy_withheld")
    parts = [
        f'<article class="card{" invalid" if invalid else ""}" id="card-{html.escape(stem)}"'
        f' data-valid="{_valid_attr(card.get("valid"))}">',
        f"<h3>{html.escape(card_title(card))}</h3>",
        _banner_html(card),
        (
            f'<p class="line not-measurement">{struck_through(line, code=True)}</p>'
            if struck_line
            else f'<pre class="line">{html.escape(line)}</pre>'
        ),
        f'<table class="kv">\n{rows}\n</table>',
        _card_outcomes_html(card),
    ]
    per_level = card["task_complexity"]["per_level"]
    if per_level:
        head = (
            f"<tr><th>level</th><th>tasks</th><th>accuracy ({conf} CI)</th>"
            f"<th>ICC ({conf} CI)</th><th>between-query SE</th></tr>"
        )
        level_rows = []
        for r in per_level:
            acc = f"{pct(r['accuracy'])} [{pct(r['ci_low'])}, {pct(r['ci_high'])}]"
            struck = invalid or r.get("valid") is False
            acc_td = (
                f'<td class="not-measurement">{struck_through(acc)}</td>'
                if struck
                else f"<td>{acc}</td>"
            )
            level_rows.append(
                f"<tr><td>{html.escape(r['level'])}</td><td>{r['n_tasks']}</td>{acc_td}"
                f"<td>{fmt(r['icc'])} [{fmt(r['icc_ci_low'])}, {fmt(r['icc_ci_high'])}]</td>"
                f"<td>{fmt(r['between_query_se'])}</td></tr>"
            )
        parts.append("<h4>Per task complexity level</h4>")
        parts.append(f'<table class="levels">{head}{"".join(level_rows)}</table>')
    items = card["limitations"] or ["none detected"]
    parts.append("<h4>Limitations</h4><ul>")
    parts += [f"<li>{html.escape(item)}</li>" for item in items]
    parts.append("</ul>")
    parts.append(
        f'<p class="links"><a href="cards/{html.escape(stem)}.md">Markdown</a> · '
        f'<a href="cards/{html.escape(stem)}.json">JSON</a></p>'
    )
    parts.append("</article>")
    return "\n".join(p for p in parts if p)


def _valid_attr(valid: bool | None) -> str:
    return "unknown" if valid is None else str(bool(valid)).lower()


def cards_section(cards: Sequence[tuple[str, Mapping[str, Any]]]) -> str:
    """The ``<section id="cards">`` of every (file stem, card), in the given order."""
    return f"""<section id="cards">
<h2>Evaluation Cards</h2>
<p>All cards: <a href="cards.json">cards.json</a></p>
{chr(10).join(card_html(card, stem) for stem, card in cards)}
</section>"""
