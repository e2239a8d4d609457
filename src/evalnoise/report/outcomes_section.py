"""What became of every trial, at the top of the page: the red banner naming every group that
failed its health check (and the neutral note naming every group whose failures were declared
as the experiment), and the "Outcomes" section, one row of outcome counts per group
(:data:`evalnoise.report.health.OUTCOMES`). The outcome cells are shared with the cards.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

from evalnoise.formatting import pct
from evalnoise.infra_failures import failure_lines
from evalnoise.outcomes import flags_text
from evalnoise.report.card_text import card_note, card_title
from evalnoise.report.health import (
    NOT_A_MEASUREMENT,
    OUTCOME_HEADERS,
    OUTCOME_LABELS,
    OUTCOME_LEGEND,
    OUTCOMES,
    status_text,
)

__all__ = [
    "outcome_cells",
    "outcome_header",
    "outcomes_section",
    "task_failures_list",
    "top_banner",
]


def outcome_header(extra: Sequence[str] = ()) -> str:
    """The header row of an outcome table: the ``extra`` columns, then one per outcome
    (its label as the tooltip), trials and attempts."""
    cells = [f"<th>{html.escape(c)}</th>" for c in extra]
    cells += [
        f'<th title="{html.escape(OUTCOME_LABELS[k])}">{html.escape(OUTCOME_HEADERS[k])}</th>'
        for k in OUTCOMES
    ]
    cells += ["<th>trials</th>", "<th>attempts</th>"]
    return "<tr>" + "".join(cells) + "</tr>"


def outcome_cells(outcomes: Mapping[str, Any] | None) -> str:
    """The cells of one outcome row; a count of a failure outcome is marked; no counts:
    one cell "not recorded"."""
    if outcomes is None:
        return f'<td colspan="{len(OUTCOMES) + 2}">not recorded</td>'
    cells = []
    for k in (*OUTCOMES, "trials", "attempts"):
        v = outcomes.get(k)
        cls = "n bad" if k not in ("ok", "trials", "attempts") and v else "n"
        cells.append(f'<td class="{cls}">{"?" if v is None else v}</td>')
    return "".join(cells)


def top_banner(cards: Sequence[tuple[str, Mapping[str, Any]]]) -> str:
    """The red banner listing every invalid group and the neutral note listing every
    expected-failure group, for the top of the page."""
    out = []
    invalid = [(stem, card) for stem, card in cards if card.get("valid") is False]
    if invalid:
        items = "".join(
            f'<li><a href="#card-{html.escape(stem)}">{html.escape(card_title(card))}</a>: '
            f"{html.escape('; '.join(card['health']['reasons']) or 'failed its health check')}"
            "</li>"
            for stem, card in invalid
        )
        crashed = any(
            card["health"].get("crash_signals") or (card.get("outcomes") or {}).get("crashed")
            for _, card in invalid
        )
        hint = (
            "<p>A crash (a fault signal such as SIGSEGV or SIGILL) usually means a runtime that "
            'does not work on this machine: compare the <a href="#machine">Machine</a> section '
            "with the runtime's declared CPU baseline.</p>"
            if crashed
            else ""
        )
        if len(invalid) == 1:
            lead = "1 group failed the health check. Its numbers describe failures"
        else:
            lead = f"{len(invalid)} groups failed the health check. Their numbers describe failures"
        out.append(
            '<div class="banner invalid" id="invalid-groups" role="alert">\n'
            f"<p><strong>{NOT_A_MEASUREMENT}</strong> — {lead}, not the agent: they are struck "
            f"through below and left out of comparisons.</p>\n<ul>{items}</ul>\n{hint}</div>"
        )
    expected = [(stem, card) for stem, card in cards if card_note(card) is not None]
    if expected:
        items = "".join(
            f'<li><a href="#card-{html.escape(stem)}">{html.escape(card_title(card))}</a>: '
            f"{html.escape('; '.join(card['health']['reasons']) or 'no failures')}</li>"
            for stem, card in expected
        )
        out.append(
            '<div class="note expected" id="expected-failures" role="note">\n'
            "<p>Failures declared as the experiment (health.expected_failures): these groups "
            f"are measurements of what the failures do.</p>\n<ul>{items}</ul></div>"
        )
    return "\n".join(out)


def outcomes_section(cards: Sequence[tuple[str, Mapping[str, Any]]]) -> str:
    """The ``<section id="outcomes">``: per (file stem, card), its status and outcomes."""
    rows = []
    for stem, card in cards:
        health = card.get("health") or {"valid": None}
        status = status_text(health)
        rate = health.get("failure_rate")
        if rate is not None:
            status += f" ({pct(rate)} failed)"
        if flags_text(card.get("outcomes")):
            status += f"; flagged: {flags_text(card.get('outcomes'))}"
        cls = ' class="invalid"' if card.get("valid") is False else ""
        rows.append(
            f'<tr{cls}><td><a href="#card-{html.escape(stem)}">'
            f"{html.escape(card_title(card))}</a></td><td>{html.escape(status)}</td>"
            f"{outcome_cells(card.get('outcomes'))}</tr>"
        )
    return (
        '<section id="outcomes">\n<h2>Outcomes</h2>\n'
        "<p>What became of every trial (its final attempt), per agent and resource profile. "
        f"{html.escape(OUTCOME_LEGEND)}</p>\n"
        f'<table class="outcomes">{outcome_header(["agent @ resource profile", "status"])}'
        f"{''.join(rows)}</table>\n{task_failures_list(cards)}</section>"
    )


def task_failures_list(cards: Sequence[tuple[str, Mapping[str, Any]]]) -> str:
    """Failures of whole tasks (:mod:`evalnoise.infra_failures`), one item per group and
    task; empty when there are none."""
    items = [
        f"<li>{html.escape(card_title(card))}: {html.escape(line)}</li>"
        for _, card in cards
        for line in failure_lines(card.get("task_failures") or [])
    ]
    if not items:
        return ""
    return (
        '<p>Failures of whole tasks:</p>\n<ul class="task-failures">' + "".join(items) + "</ul>\n"
    )
