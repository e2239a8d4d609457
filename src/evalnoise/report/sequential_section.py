"""The report's "Adaptive evaluation" section: why each agent stopped, when, how precisely.

Rendered from ``results/sequential/summary.json``
(:func:`evalnoise.pipeline.sequential.summary_record`) and the round table
(``rounds.csv``, :data:`evalnoise.pipeline.sequential.ROUND_COLUMNS`). Pure: strings in,
HTML out. Nothing is shown for a fixed design.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["STATUS_TEXT", "sequential_section"]

#: How each way of stopping reads in the report.
STATUS_TEXT = {
    "target_met": "target met",
    "limit_reached": "limit reached",
    "budget_spent": "budget spent",
    "round_limit": "round limit",
    "no_data": "no trial counted",
    "not_compared": "first round only (not compared)",
    "continue": "continuing",
}
#: Stops that are not a precision reached: shown as a warning.
_WARN = {"no_data", "round_limit", "budget_spent", "limit_reached"}


def _num(value: Any, spec: str) -> str:
    return "—" if value is None else format(float(value), spec)


def _interval(u: Mapping[str, Any], percent: bool) -> str:
    if u.get("estimate") is None:
        return "—"
    if percent:
        return (
            f"{100 * u['estimate']:.1f} % [{100 * u['ci_low']:.1f} %, {100 * u['ci_high']:.1f} %]"
        )
    return f"{u['estimate']:.3f} [{u['ci_low']:.3f}, {u['ci_high']:.3f}]"


def sequential_section(
    sequential: Mapping[str, Any] | None, sequential_rounds: Sequence[Mapping[str, Any]] = ()
) -> str:
    """The section's HTML, or "" when the run was not adaptive.

    One row per unit (a group, or the compared pair): how it stopped and after which round,
    tasks and trials against the fixed design (``max_tasks × max_trials_per_task`` per
    group), the final estimate with its interval (anytime-valid for the accuracy and
    difference targets: it keeps its coverage at the stop, however many rounds were looked
    at), and the achieved precision against the goal; below it, every round's decision.
    """
    if not sequential or not sequential.get("enabled"):
        return ""
    target = sequential["target"]
    measure = "SE(ICC)" if target == "icc" else "half-width"
    percent = target != "icc"
    what = {
        "accuracy": "accuracy, anytime-valid interval",
        "difference": "difference A − B, anytime-valid interval",
        "icc": "ICC(1,1), F-based interval",
    }[target]
    rows = []
    for u in sequential["units"]:
        groups = sequential["groups"]
        trials = sum(groups[g]["trials"] for g in u["groups"])
        fixed = sum(groups[g]["fixed_design_trials"] for g in u["groups"])
        tasks = groups[u["groups"][0]]["tasks"]
        status = u["status"]
        cls = ' class="warn"' if status in _WARN else ""
        rows.append(
            f"<tr{cls}><td>{html.escape(u['unit'])}</td>"
            f"<td>{html.escape(STATUS_TEXT.get(status, status))}</td>"
            f"<td>{u['round']}</td><td>{tasks}</td><td>{trials} of {fixed}</td>"
            f"<td>{html.escape(_interval(u, percent))}</td>"
            f"<td>{_num(u.get('achieved'), '.3f')} (goal {sequential['goal']:g})</td></tr>"
        )
        rows.append(
            f'<tr class="reason"><td></td><td colspan="6">{html.escape(u["reason"])}</td></tr>'
        )
    decisions = "".join(
        f"<li>round {int(r['round'])}, {html.escape(str(r['unit']))}: "
        f"{html.escape(str(r['reason']))}</li>"
        for r in sequential_rounds
    )
    head = (
        "<tr><th>agent @ resource profile</th><th>stopped</th><th>after round</th>"
        f"<th>tasks</th><th>trials (fixed design)</th><th>{html.escape(what)}</th>"
        f"<th>{measure}</th></tr>"
    )
    settings = sequential.get("settings") or {}
    return (
        '<section id="sequential">\n<h2>Adaptive evaluation</h2>\n'
        f"<p>This run was adaptive: trials ran in rounds, and after each round every agent "
        f"(or compared pair) either stopped or was given more tasks or trials, until its "
        f"{html.escape(measure)} was at most {sequential['goal']:g}, a limit "
        f"({settings.get('max_tasks', '—')} tasks, {settings.get('max_trials_per_task', '—')}"
        f" trials per task) was reached or its budget was spent. "
        + (
            "The intervals are anytime-valid confidence sequences (Waudby-Smith &amp; Ramdas "
            "2024): the one reported at the stop keeps its stated coverage however many rounds "
            "were looked at, unlike a fixed-sample interval rechecked after every round. The "
            "summary and the cards show the fixed-sample interval of the same trials: after "
            "an adaptive stop, only the interval here keeps its stated coverage.</p>\n"
            if target != "icc"
            else "The icc target is a precision rule on Bonett's fixed-sample SE, not an "
            "anytime-valid interval.</p>\n"
        )
        + f'<table class="sequential">{head}{"".join(rows)}</table>\n'
        + (
            f"<details><summary>Every round's decision</summary><ol>{decisions}</ol></details>\n"
            if decisions
            else ""
        )
        + "</section>"
    )
