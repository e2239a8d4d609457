"""An Evaluation Card as Markdown, the file ``cards/<stem>.md`` of the report.

The card's words are :mod:`evalnoise.report.card_text`'s; this module lays them out: the
title, the banner of an invalid card (or the note of an expected-failure card), the
reporting line (Mustahsan et al. eq. 11), the Table 4 fields, the outcome counts with their
legend, the per-level rows and the limitations. A statistic of a group that is not a
measurement of the agent is struck through (``~~…~~``) and labelled, never shown plain.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evalnoise.formatting import fmt, pct
from evalnoise.outcomes import flags_text
from evalnoise.report.card_text import card_banner, card_fields, card_note, card_title
from evalnoise.report.health import (
    NOT_A_MEASUREMENT_LABEL,
    OUTCOME_HEADERS,
    OUTCOME_LEGEND,
    OUTCOMES,
    crash_signals_text,
)

__all__ = ["card_markdown"]


def _cell(value: Any) -> str:
    """A Markdown table cell: pipes escaped, newlines flattened."""
    return str(value).replace("|", "\\|").replace("\n", " ")


def _md_outcomes(card: Mapping[str, Any]) -> list[str]:
    outcomes = card.get("outcomes")
    lines = ["", "## Outcomes", ""]
    if outcomes is None:
        return [*lines, "Outcome counts not recorded (the input predates outcome accounting)."]
    header = [OUTCOME_HEADERS[k] for k in OUTCOMES] + ["trials", "attempts"]
    values = [outcomes.get(k) for k in (*OUTCOMES, "trials", "attempts")]
    lines += [
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
        "| " + " | ".join("?" if v is None else str(v) for v in values) + " |",
        "",
        OUTCOME_LEGEND,
    ]
    if flags_text(outcomes):
        lines += ["", "Flagged: " + flags_text(outcomes)]
    signals = (card.get("health") or {}).get("crash_signals") or {}
    if signals:
        lines += ["", "Crash signals: " + crash_signals_text(signals)]
    return lines


def card_markdown(card: Mapping[str, Any]) -> str:
    """The card as Markdown: [banner,] reporting line, the Table 4 fields, outcomes,
    per-level rows, limitations.

    An invalid card opens with a "Not a measurement of the agent" block quote and strikes
    its reporting line and statistics through; an expected-failure card opens with a
    neutral note.
    """
    lines = [f"# Evaluation Card: {card_title(card)}", ""]
    banner, note = card_banner(card), card_note(card)
    if banner is not None:
        head, _, reasons = banner.partition(": ")
        lines += [f"> **{head}:** {reasons}", ""]
    elif note is not None:
        lines += [f"> **Note:** {note}", ""]
    if card.get("valid") is False and not card["metrics"].get("accuracy_withheld"):
        lines += [
            f"~~`{card['reporting_line']}`~~ — **{NOT_A_MEASUREMENT_LABEL}**",
            "",
        ]
    else:
        lines += ["```", card["reporting_line"], "```", ""]
    lines += ["| Field | Value |", "|---|---|"]
    for k, v, struck in card_fields(card):
        value = f"~~{_cell(v)}~~ — **{NOT_A_MEASUREMENT_LABEL}**" if struck else _cell(v)
        lines.append(f"| {_cell(k)} | {value} |")
    lines += _md_outcomes(card)
    per_level = card["task_complexity"]["per_level"]
    if per_level:
        conf = f"{card['metrics']['confidence']:.0%}"
        lines += [
            "",
            "## Per task complexity level",
            "",
            f"| Level | Tasks | Accuracy ({conf} CI) | ICC ({conf} CI) | SE(ICC) "
            "| Between-query SE |",
            "|---|---|---|---|---|---|",
        ]
        for row in per_level:
            acc = f"{pct(row['accuracy'])} [{pct(row['ci_low'])}, {pct(row['ci_high'])}]"
            if row.get("valid") is False or card.get("valid") is False:
                acc = f"~~{acc}~~ {NOT_A_MEASUREMENT_LABEL}"
            lines.append(
                f"| {_cell(row['level'])} | {row['n_tasks']} | {acc} | {fmt(row['icc'])} "
                f"[{fmt(row['icc_ci_low'])}, {fmt(row['icc_ci_high'])}] | "
                f"{fmt(row['icc_se'])} | {fmt(row['between_query_se'])} |"
            )
    lines += ["", "## Limitations", ""]
    lines += [f"- {item}" for item in card["limitations"]] or ["- none detected"]
    return "\n".join(lines) + "\n"
