"""The page's "Trajectories" section: per group, how consistent the paths of its repeated
trials are — distinct action sequences per task, their mean normalised edit distance, the
step at which the trials first diverge, and the accuracy of the tasks whose trials all took
one path against the others (each a mean over tasks with its task-clustered interval; the
group record's ``trajectory_consistency``, :func:`evalnoise.consistency.trajectory_fields`).
A group whose trials recorded no actions says "not recorded"; a group that is not a
measurement of the agent has no row (its card says why).
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

from evalnoise.formatting import fmt, pct
from evalnoise.report.card_text import card_title

__all__ = ["trajectory_rows", "trajectory_section"]

_HEADERS = (
    "group",
    "tasks",
    "trials per task",
    "distinct paths per task",
    "edit distance",
    "first divergence (step)",
    "consistent tasks: accuracy",
    "other tasks: accuracy",
)


def _mean_ci(t: Mapping[str, Any], mean: str, low: str, high: str, spec: str | None) -> str:
    show = (lambda v: pct(v)) if spec is None else (lambda v: fmt(v, spec))
    if t.get(mean) is None:
        return "—"
    return f"{show(t[mean])} [{show(t.get(low))}, {show(t.get(high))}]"


def _accuracy(t: Mapping[str, Any], side: str, count: str) -> str:
    if not t[count]:
        return "no task"
    cell = _mean_ci(t, side, f"{side}_ci_low", f"{side}_ci_high", None)
    return f"{cell} ({t[count]} tasks)"


def trajectory_rows(cards: Sequence[tuple[str, Mapping[str, Any]]]) -> list[list[str]]:
    """One row of cell texts per card that carries ``trajectory_consistency`` (in the cards'
    order): the group, then the numbers, or "not recorded" across the rest."""
    rows = []
    for _, card in cards:
        t = (card.get("metrics") or {}).get("trajectory_consistency")
        if not t:
            continue
        if not t.get("recorded"):
            rows.append([card_title(card), "not recorded", *[""] * (len(_HEADERS) - 2)])
            continue
        rows.append(
            [
                card_title(card),
                str(t["n_tasks"]),
                str(t["trials_per_task"]),
                _mean_ci(t, "mean_distinct", "distinct_ci_low", "distinct_ci_high", ".1f"),
                _mean_ci(
                    t, "mean_edit_distance", "edit_distance_ci_low", "edit_distance_ci_high", ".2f"
                ),
                _mean_ci(
                    t,
                    "mean_first_divergence",
                    "first_divergence_ci_low",
                    "first_divergence_ci_high",
                    ".1f",
                )
                if t.get("mean_first_divergence") is not None
                else "no task diverges",
                _accuracy(t, "accuracy_consistent", "n_consistent"),
                _accuracy(t, "accuracy_inconsistent", "n_inconsistent"),
            ]
        )
    return rows


def trajectory_section(cards: Sequence[tuple[str, Mapping[str, Any]]], confidence: float) -> str:
    """The section as HTML; empty when no card carries trajectories (every group withheld)."""
    rows = trajectory_rows(cards)
    if not rows:
        return ""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in _HEADERS)
    body = "\n".join(
        "<tr>" + "".join(f"<td>{html.escape(cell)}</td>" for cell in row) + "</tr>" for row in rows
    )
    return f"""<section id="trajectories">
<h2>Trajectories</h2>
<p>How each group's repeated trials of a task got there: distinct action sequences per task
(1: every trial took the same path), their mean normalised edit distance (0: identical,
1: nothing in common), the step at which the trials first diverge (tasks that diverge), and
the accuracy of the tasks whose trials all took one path against the others; each a mean over
tasks with its {confidence:.0%} task-clustered interval. The actions are the commands the
runner executed for an agent of the exec protocol, or the tool calls a QA agent reported,
normalised (whitespace, the trial's own paths).</p>
<table>
<tr>{head}</tr>
{body}
</table>
</section>"""
