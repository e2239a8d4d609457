"""The page's "Summary" section, the report's first screen: per agent @ resource profile
what a reader came for — the reporting line (accuracy ± CI | ICC | between-query SE,
Mustahsan et al. eq. 11), beside it — never instead of it — the labelled readings, what the
infrastructure did (its error rate under the declared policy, the tasks that failed whole)
and, with prices configured, what the group's trials cost. The judges' detail (each judge
against the reference, the judges as a facet) is the group's card's, further down.

An invalid group's line is struck through and labelled; a withheld headline says why there
is no number, so it is shown as it is.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

from evalnoise.formatting import pct
from evalnoise.infra_failures import failure_lines
from evalnoise.report._markup import struck_through
from evalnoise.report.card_costs import cost_text
from evalnoise.report.card_text import card_fields, card_title

__all__ = ["summary_rows", "summary_section"]


def summary_rows(card: Mapping[str, Any], stem: str, level: str) -> list[str]:
    """The table rows of one card (``stem``: its anchor), ``level`` the confidence as text."""
    rows = []
    link = f'<a href="#card-{html.escape(stem)}">{html.escape(card_title(card))}</a>'
    if card.get("valid") is False and card["metrics"].get("accuracy_withheld"):
        line = html.escape(card["reporting_line"])
        rows.append(f'<tr class="invalid"><td>{link}</td><td><code>{line}</code></td></tr>')
    elif card.get("valid") is False:
        line = struck_through(card["reporting_line"], code=True)
        rows.append(f'<tr class="invalid"><td>{link}</td><td>{line}</td></tr>')
    else:
        line = html.escape(card["reporting_line"])
        rows.append(f"<tr><td>{link}</td><td><code>{line}</code></td></tr>")
    readings = {k: v for k, v, _ in card_fields(card)}.get("Readings")
    if readings:
        # labelled readings beside (never instead of) the headline
        text = html.escape("readings: " + readings)
        rows.append(f'<tr class="readings"><td></td><td>{text}</td></tr>')
    infra = card.get("infrastructure") or {}
    if infra.get("infra_error_rate") is not None:
        # what the infrastructure did, under the policy that decides how it counts
        text = (
            f"infrastructure: {pct(infra['infra_error_rate'])} of attempts ended in an infra "
            f"outcome (policy: {infra.get('infra_policy')})"
        )
        rows.append(f'<tr class="infra"><td></td><td>{html.escape(text)}</td></tr>')
    for line in failure_lines(card.get("task_failures") or []):
        rows.append(f'<tr class="infra"><td></td><td>{html.escape(line)}</td></tr>')
    if (card.get("costs") or {}).get("prices"):
        # with prices configured, what the group's trials cost (the card has the drivers)
        cost = html.escape("cost: " + cost_text(card["costs"]))
        rows.append(f'<tr class="cost"><td></td><td>{cost}</td></tr>')
    return rows


def summary_section(cards: Sequence[tuple[str, Mapping[str, Any]]], confidence: float) -> str:
    """The ``<section id="summary">`` of every (file stem, card), in the given order."""
    rows = [row for stem, card in cards for row in summary_rows(card, stem, f"{confidence:.0%}")]
    body = "\n".join(rows)
    return f"""<section id="summary">
<h2>Summary</h2>
<table class="summary">
<tr><th>agent @ resource profile</th><th>reporting line</th></tr>
{body}
</table>
</section>"""
