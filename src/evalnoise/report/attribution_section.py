"""The page's section "Where the noise comes from": how much of the result is the
infrastructure's, from the attribution stage's results (:mod:`evalnoise.attribution`).

Its parts, each from the attribution summary and tables: infra policy sensitivity (whether
the way of counting an infrastructure outcome moves the group's accuracy beyond its CI's
half-width; the accuracy under each policy is the infra policy column of the group's
multiverse table, :mod:`evalnoise.report.multiverse_section`, not restated here), the
resource-sensitive tasks (exact McNemar per task, Benjamini–Hochberg q across tasks, and the
tasks whose memory need lies between two profiles' kill lines), the flaky tasks with the
checks that ran, the infrastructure share of variance ((σ²_time_block + σ²_host +
σ²_task:time_block) / total, from the G study) and the one model of the noise
(:func:`evalnoise.report.noise.noise_html`). A missing or invalid artifact is named at the
top of the section and its part says so; a group whose record cannot be read is named
instead of shown; the rest of the report is built as usual.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from evalnoise.attribution.all_analyses import (
    AttributionTables,
    NotRun,
    group_label,
)
from evalnoise.attribution.flaky import CHECK_DESCRIPTIONS
from evalnoise.attribution.text import infra_components_text, resource_finding
from evalnoise.design_text import facet_count
from evalnoise.formatting import finite_or_none as _num
from evalnoise.formatting import fmt, pct
from evalnoise.report._markup import struck_through, value_cell
from evalnoise.report.chart_sections import chart_links
from evalnoise.report.health import NOT_A_MEASUREMENT_LABEL, NOT_A_MEASUREMENT_SUFFIX
from evalnoise.report.multiverse_section import MULTIVERSE_TITLE
from evalnoise.report.noise import noise_html
from evalnoise.report.policy_sensitivity_view import points_text, policy_sensitivity_of

__all__ = [
    "ALPHA",
    "ATTRIBUTION_NOT_GIVEN",
    "RESOURCE_CHART",
    "RESOURCE_ROWS_MAX",
    "attribution_section",
    "card_attribution",
    "resource_chart_frame",
]

#: What the section says when no attribution results were given.
ATTRIBUTION_NOT_GIVEN = (
    "Not computed for this report: no attribution results were given (the pipeline's "
    "attribution stage writes results/analysis/attribution.json, resource_sensitivity.parquet "
    "and flaky_tasks.csv)."
)
#: At most this many tasks per resource comparison are listed (sorted by adjusted p).
RESOURCE_ROWS_MAX = 60
#: The level of the tests the section marks (q ≤ ALPHA).
ALPHA = 0.05
#: The chart of the "Where the noise comes from" section.
RESOURCE_CHART = "resource_sensitivity"


def card_attribution(
    attribution: AttributionTables | None, group: str, key: tuple[str, str | None]
) -> Mapping[str, Any] | None:
    """A card's entry of the attribution summary: by the record's group name, else by
    ``agent@profile``; None when no attribution was given (no line on the card)."""
    if attribution is None:
        return None
    for label in (group, group_label(key[0], key[1])):
        if label in attribution.summary:
            entry = attribution.summary[label]
            if isinstance(entry, Mapping):
                return entry
            return {"not_computed": "invalid attribution record (not an object)"}
    why = "no attribution record for this group"
    if attribution.problems:
        why += " (" + "; ".join(attribution.problems) + ")"
    return {"not_computed": why}


def _group_title(label: str, titles: Mapping[str, str]) -> str:
    """A group's display name: its card's title, else "agent @ profile" from its label."""
    if label in titles:
        return titles[label]
    agent, at, profile = label.rpartition("@")
    return f"{agent} @ {profile}" if at and agent else label


def _p_text(value: Any) -> str:
    f = _num(value)
    return "—" if f is None else f"{f:.2g}" if f < 0.001 else f"{f:.3f}"


def _truthy(value: Any) -> bool:
    """A boolean cell of a read-back table: True, "True", 1; missing is False."""
    if isinstance(value, str):
        return value.strip().lower() in ("true", "1", "yes")
    f = _num(value)
    return bool(f) if f is not None else False


def _check_names(value: Any) -> list[str]:
    """The ``checks`` cell of the flagged-task table: a list, or its text in a CSV."""
    if isinstance(value, (list, tuple, np.ndarray)):
        return [str(v) for v in value]
    text = "" if value is None or (isinstance(value, float) and np.isnan(value)) else str(value)
    return re.findall(r"[A-Za-z_]+", text)


def _policy_html(
    summary: Mapping[str, Any],
    labels: Sequence[str],
    titles: Mapping[str, str],
    invalid: set,
    anchors: Mapping[str, str],
) -> str:
    head = "".join(
        f"<th>{html.escape(h)}</th>"
        for h in (
            "agent @ resource profile",
            "declared",
            "largest shift",
            "CI half-width",
            "choice moves the result",
            "accuracy under each policy",
        )
    )
    rows = []
    for label in labels:
        title = html.escape(_group_title(label, titles))
        ps = policy_sensitivity_of(summary[label])
        if ps.get("not_computed"):
            rows.append(
                f'<tr><td>{title}</td><td colspan="5" class="notes">'
                f"not computed: {html.escape(str(ps['not_computed']))}</td></tr>"
            )
            continue
        struck = label in invalid
        cells = [
            f"<td>{title}</td>",
            f"<td>{html.escape(str(ps['declared_policy'] or '—').replace('_', ' '))}</td>",
            value_cell(points_text(ps["max_shift"]), struck),
            value_cell(points_text(ps["half_width"]), struck),
        ]
        verdict = (
            '<td class="moved"><strong>YES</strong></td>' if ps["moves_result"] else "<td>no</td>"
        )
        cells.append(value_cell("YES" if ps["moves_result"] else "no", True) if struck else verdict)
        anchor = anchors.get(label)
        cells.append(
            f'<td><a href="#{html.escape(anchor)}">the infra policy column of its multiverse '
            "table</a></td>"
            if anchor
            else '<td class="na">not shown: the report has no multiverse for this group</td>'
        )
        cls = ' class="moves"' if ps["moves_result"] and not struck else ""
        rows.append(f"<tr{cls}>{''.join(cells)}</tr>")
    return (
        '<h3 id="policy-sensitivity">Infra policy sensitivity</h3>\n'
        "<p>Whether the way an infrastructure outcome (timeout, OOM kill, container error) is "
        "counted — as a wrong answer, left out, or retried — moves a group's accuracy: the "
        "choice moves the result when the largest difference between two policies exceeds the "
        "half-width of the CI under “as incorrect”. The accuracy under each policy, from the "
        "same trials, is the infra policy column of the group's table in "
        f'<a href="#multiverse">{html.escape(MULTIVERSE_TITLE)}</a>.</p>\n'
        f'<table class="attribution policy"><tr>{head}</tr>{"".join(rows)}</table>'
    )


def _resource_rows(frame: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """The rows of one comparison worth listing — tested (a discordant pair) or singled
    out — at most :data:`RESOURCE_ROWS_MAX`, and how many tested rows are left out."""
    tested = frame["tested"].map(_truthy)
    singled = frame["significant"].map(_truthy)
    if "between_limits" in frame.columns:
        singled = singled | frame["between_limits"].map(_truthy)
    keep = frame[(tested | singled).to_numpy()]
    return keep.head(RESOURCE_ROWS_MAX), max(0, len(keep) - RESOURCE_ROWS_MAX)


def _resource_html(
    att: AttributionTables,
    titles: Mapping[str, str],
    invalid: set,
    chart_div: str | None,
    not_run: Sequence[NotRun],
    png: bool,
) -> str:
    parts = [
        '<h3 id="resource-sensitivity">Resource-sensitive tasks</h3>',
        "<p>Per task, one agent's trials under two resource profiles, paired by (task, trial) — "
        "a trial's seed does not depend on the profile, so a pair differs only by the profile — "
        "with the exact McNemar test per task and Benjamini–Hochberg across tasks (q). Singled "
        f"out: q ≤ {ALPHA:g}, or the task's memory need lies between the two hard memory "
        "limits (it fits under one profile's kill line and not under the other's).</p>",
    ]
    keys = ("agent", "profile_a", "profile_b", "n_tasks")
    entries = [
        r
        for r in att.summary.get("_resource") or ()
        if isinstance(r, Mapping) and all(r.get(k) is not None for k in keys)
    ]
    skipped = [n for n in not_run if n.check == "resource_sensitivity"]
    unreadable = len(att.summary.get("_resource") or ()) - len(entries)
    if unreadable:
        parts.append(
            f'<p class="notes">{unreadable} unreadable resource comparison record(s), not '
            "shown.</p>"
        )
    if not entries:
        why = "; ".join(f"{n.scope}: {n.reason}" for n in skipped) or (
            "no agent ran under two resource profiles"
        )
        parts.append(f'<p class="notes">Not computed: {html.escape(why)}.</p>')
        return "\n".join(parts)
    items = []
    for r in entries:
        text = f"{r.get('agent')}: {r.get('profile_a')} vs {r.get('profile_b')} — " + (
            resource_finding(r)
        )
        items.append(f"<li>{html.escape(text)}</li>")
    items += [
        f'<li class="notes">{html.escape(f"{n.scope}: not compared — {n.reason}")}</li>'
        for n in skipped
    ]
    parts.append(f'<ul class="resource">{"".join(items)}</ul>')
    if att.resource.empty:
        parts.append(
            '<p class="notes">The per-task table (resource_sensitivity.parquet) is not '
            "available: see the note at the top of this section.</p>"
        )
        return "\n".join(parts)
    if chart_div is not None:
        parts.append(
            f'<div id="{chart_div}" class="chart" data-chart="{RESOURCE_CHART}"></div>\n'
            + chart_links(RESOURCE_CHART, png)
        )
    head = "".join(
        f"<th>{h}</th>"
        for h in (
            "agent: profiles (a vs b)",
            "task",
            "paired trials",
            "accuracy under a",
            "accuracy under b",
            "infra outcomes a / b",
            "exact McNemar p",
            "q (BH)",
            "singled out",
        )
    )
    rows, notes = [], []
    for (agent, a, b), frame in att.resource.groupby(
        ["agent", "profile_a", "profile_b"], sort=False
    ):
        shown, more = _resource_rows(frame)
        struck = bool({f"{agent}@{a}", f"{agent}@{b}"} & invalid)
        name = html.escape(f"{agent}: {a} vs {b}")
        untested = int((~frame["tested"].map(_truthy)).sum())
        if untested:
            notes.append(
                f"{agent}: {a} vs {b}: {untested} task(s) with no discordant pair (the same "
                "outcome under both profiles in every pair, p = 1) are not listed."
            )
        if more:
            notes.append(f"{agent}: {a} vs {b}: {more} more tested task(s) with larger q.")
        if shown.empty:
            rows.append(
                f'<tr><td>{name}</td><td colspan="8" class="notes">no task changed outcome '
                "between the profiles</td></tr>"
            )
        for r in shown.to_dict(orient="records"):
            sig = _truthy(r.get("significant"))
            between = _truthy(r.get("between_limits"))
            flag = " and ".join([f"q ≤ {ALPHA:g}"] * sig + ["need between the limits"] * between)
            infra = f"{r.get('infra_a', '—')} / {r.get('infra_b', '—')}"
            cls = ' class="singled"' if (sig or between) and not struck else ""
            rows.append(
                f"<tr{cls}><td>{name}</td><td>{html.escape(str(r['task_id']))}</td>"
                f'<td class="n">{r.get("n_pairs", "—")}</td>'
                + value_cell(pct(_num(r["accuracy_a"])), struck)
                + value_cell(pct(_num(r["accuracy_b"])), struck)
                + f'<td class="n">{html.escape(infra)}</td>'
                f'<td class="n">{_p_text(r.get("pvalue"))}</td>'
                f'<td class="n">{_p_text(r.get("pvalue_adjusted"))}</td>'
                f"<td>{'<strong>' + html.escape(flag) + '</strong>' if flag else 'no'}</td></tr>"
            )
    parts.append(f'<table class="attribution resource"><tr>{head}</tr>{"".join(rows)}</table>')
    parts += [f'<p class="notes">{html.escape(n)}</p>' for n in notes]
    return "\n".join(parts)


def resource_chart_frame(
    attribution: AttributionTables | None, invalid: set
) -> pd.DataFrame | None:
    """The rows the resource chart draws: each comparison's listed tasks (or, when none
    changed outcome, its first tasks), comparisons with an invalid group marked."""
    if attribution is None or attribution.resource.empty:
        return None
    parts = []
    for (agent, a, b), frame in attribution.resource.groupby(
        ["agent", "profile_a", "profile_b"], sort=False
    ):
        shown, _ = _resource_rows(frame)
        part = (shown if len(shown) else frame.head(20)).copy()
        if {f"{agent}@{a}", f"{agent}@{b}"} & invalid:
            part["agent"] = f"{agent}{NOT_A_MEASUREMENT_SUFFIX}"
        parts.append(part)
    return pd.concat(parts, ignore_index=True)


def _flaky_html(
    att: AttributionTables, labels: Sequence[str], titles: Mapping[str, str], invalid: set
) -> str:
    parts = [
        '<h3 id="flaky-tasks">Flaky tasks</h3>',
        "<p>Tasks whose outcomes vary for reasons other than the agent, each check an exact "
        f"test per task with Benjamini–Hochberg across tasks (q ≤ {ALPHA:g}). Every group "
        "lists the checks that ran — an empty list still says what was looked for — and the "
        "flagged tasks with their evidence, strongest first.</p>",
    ]
    flaky = att.flaky
    for label in labels:
        g = att.summary[label]
        title = _group_title(label, titles)
        mark = f" — {NOT_A_MEASUREMENT_LABEL}" if label in invalid else ""
        parts.append(f"<h4>{html.escape(title + mark)}</h4>")
        if "not_computed" in g:
            parts.append(
                f'<p class="notes">Not computed: {html.escape(str(g["not_computed"]))}</p>'
            )
            continue
        checks = g.get("flaky_checks")
        if checks is None:  # an older summary: only the names of the checks that ran
            checks = [
                {"name": n, "ran": True, "reason": "", "n_flagged": None}
                for n in g.get("flaky_checks_run") or ()
            ]
        rows = []
        for c in checks:
            what = CHECK_DESCRIPTIONS.get(c["name"], "")
            status = "ran" if c["ran"] else f"not run: {c.get('reason') or 'no reason recorded'}"
            n = c.get("n_flagged")
            rows.append(
                f"<tr><td><code>{html.escape(c['name'])}</code></td><td>{html.escape(what)}</td>"
                f"<td>{html.escape(status)}</td>"
                f'<td class="n">{"—" if n is None or not c["ran"] else n}</td></tr>'
            )
        parts.append(
            '<table class="attribution checks"><tr><th>check</th><th>what it tests</th>'
            f"<th>status</th><th>tasks flagged</th></tr>{''.join(rows)}</table>"
        )
        mine = (
            flaky[flaky["group"].astype(str) == label]
            if not flaky.empty and "group" in flaky.columns
            else flaky.iloc[0:0]
        )
        expected = g.get("flaky_flagged")
        if mine.empty and expected:
            parts.append(
                f'<p class="notes">{expected} task(s) flagged, but the flagged-task table '
                "(flaky_tasks.csv) is not available: see the note at the top of this section.</p>"
            )
            continue
        if mine.empty:
            ran = ", ".join(c["name"] for c in checks if c["ran"])
            what = f" by the checks that ran ({ran})." if ran else ": no check could run."
            parts.append(f'<p class="none">No task flagged{html.escape(what)}</p>')
            continue
        body = "".join(
            f'<tr><td class="n">{r.get("rank", "")}</td><td>{html.escape(str(r["task_id"]))}'
            f"</td><td>{html.escape(', '.join(_check_names(r.get('checks'))))}</td>"
            f"<td>{html.escape(str(r.get('reason', '')))}</td>"
            f'<td class="n">{_p_text(r.get("pvalue_adjusted"))}</td></tr>'
            for r in mine.to_dict(orient="records")
        )
        parts.append(
            '<table class="attribution flaky"><tr><th>rank</th><th>task</th><th>flagged by</th>'
            f"<th>reason and evidence</th><th>q of the strongest</th></tr>{body}</table>"
        )
    return "\n".join(parts)


def _share_text(g: Mapping[str, Any]) -> str:
    """One line, starting with "infrastructure share of variance" and holding every number
    that depends on when trials ran (so a reader — and a test masking them — finds them in
    one place): the share, its CI, the components, time blocks, hosts and drift."""
    if "not_computed" in g:
        return f"infrastructure share of variance: not computed ({g['not_computed']})"
    if g.get("time_effects_not_computed"):
        return f"infrastructure share of variance: not computed ({g['time_effects_not_computed']})"
    if g.get("infra_share") is None:
        return "infrastructure share of variance: undefined (every score equal: no variance)"
    comps = g.get("components") or {}
    hosts = int(g.get("hosts") or 0)
    decisions = infra_components_text(g)
    if g.get("infra_share_detected") is False:
        share = "not detected" + (
            " (its interval reaches 0)" if decisions is None else f" ({decisions})"
        )
    else:
        share = pct(_num(g.get("infra_share")))
    parts = [
        f"infrastructure share of variance {share} "
        f"[{pct(_num(g.get('infra_share_ci_low')))}, {pct(_num(g.get('infra_share_ci_high')))}]"
        + (f": {decisions}" if decisions and g.get("infra_share_detected") is not False else ""),
        f" ({' + '.join(g.get('infra_components') or ()) or 'no infrastructure component'}"
        f"; {facet_count('time_block', int(g.get('time_blocks') or 0))}"
        # a table with no host column has no host count to give
        + (f", {facet_count('host', hosts)}" if hosts else ""),
    ]
    if comps:
        parts.append("; σ² " + ", ".join(f"{k} {fmt(_num(v), '.3g')}" for k, v in comps.items()))
    parts.append(
        f"); drift {fmt(_num(g.get('drift_slope')), '+.3f')} over the run, "
        f"p = {fmt(_num(g.get('drift_pvalue')), '.2g')}"
    )
    return "".join(parts)


def _share_html(
    summary: Mapping[str, Any],
    labels: Sequence[str],
    titles: Mapping[str, str],
    invalid: set,
    confidence: float,
) -> str:
    items = []
    for label in labels:
        text = html.escape(_share_text(summary[label]))
        line = struck_through(_share_text(summary[label])) if label in invalid else text
        items.append(
            f"<li><strong>{html.escape(_group_title(label, titles))}</strong>: {line}</li>"
        )
    return (
        '<h3 id="infra-share">Infrastructure share of variance</h3>\n'
        "<p>The share of the score variance that depends on when (time block) or where (host) a "
        "trial ran, task-specific time effects included: (σ²_time_block + σ²_host + "
        "σ²_task:time_block) / total, from the G study (evalnoise.stats.gstudy: REML or "
        f"ANOVA) with a {confidence:.0%} modified-large-sample interval for its size. Whether "
        "it is there is decided by a permutation test: time-block and host labels shuffled "
        "within tasks, the components tested as one family (Westfall–Young), exact at "
        f"{1 - confidence:.0%} on any task mix; the share is detected when the family is, "
        "and then each component's line says whether it is; drift is the within-task change "
        "in success from the run's first trial to its last (task-clustered t test).</p>\n"
        f'<ul class="infra-share">{"".join(items)}</ul>'
    )


def attribution_section(
    attribution: AttributionTables | None,
    *,
    titles: Mapping[str, str],
    invalid: set,
    confidence: float,
    chart_div: str | None,
    multiverse_anchors: Mapping[str, str] | None = None,
    png: bool = True,
) -> str:
    """The "Where the noise comes from" section (the chart, if any, goes in ``chart_div``;
    ``multiverse_anchors``: a group's label → the id of its multiverse table, where its
    accuracy under each infra policy is shown; ``png``: whether the chart's PNG is written).
    A missing or invalid artifact is named at the top and its part says so; a group whose
    record cannot be read is named instead of shown."""
    out = [
        '<section id="attribution">',
        "<h2>Where the noise comes from</h2>",
        "<p>How much of the result is the infrastructure's: whether the infra policy moves the "
        "accuracy, which tasks' outcomes depend on the resource profile, which tasks are flaky, "
        "and how much of the score variance depends on when or where trials ran.</p>",
    ]
    if attribution is None:
        out.append(
            f'<div class="note warn" id="attribution-missing" role="note">'
            f"{html.escape(ATTRIBUTION_NOT_GIVEN)}</div>"
        )
        out.append("</section>")
        return "\n".join(out)
    if attribution.problems:
        items = "".join(f"<li>{html.escape(p)}</li>" for p in attribution.problems)
        out.append(
            '<div class="note warn" id="attribution-problems" role="note"><p><strong>'
            "Attribution results missing or invalid</strong> — what they hold is not shown "
            f"below:</p><ul>{items}</ul></div>"
        )
    labels, broken = [], []
    for label in attribution.groups:
        entry = attribution.summary[label]
        if isinstance(entry, Mapping) and (
            "not_computed" in entry or isinstance(entry.get("policy"), list)
        ):
            labels.append(label)
        else:
            broken.append(label)
    if broken:
        out.append(
            '<p class="notes">Unreadable attribution record(s), not shown: '
            f"{html.escape(', '.join(broken))}.</p>"
        )
    not_run = attribution.not_run
    table_wide = [n for n in not_run if n.scope == "*"]
    if table_wide:
        items = "".join(
            f"<li><code>{html.escape(n.check)}</code>: {html.escape(n.reason)}</li>"
            for n in table_wide
        )
        out.append(f'<div class="notes"><p>For the whole table:</p><ul>{items}</ul></div>')
    if not labels and not attribution.summary.get("_resource"):
        if not attribution.problems:
            out.append('<p class="notes">No group was analysed.</p>')
        out.append("</section>")
        return "\n".join(out)
    parts = [
        (
            "infra policy sensitivity",
            lambda: _policy_html(
                attribution.summary, labels, titles, invalid, multiverse_anchors or {}
            ),
        ),
        (
            "resource-sensitive tasks",
            lambda: _resource_html(attribution, titles, invalid, chart_div, not_run, png),
        ),
        ("flaky tasks", lambda: _flaky_html(attribution, labels, titles, invalid)),
        (
            "infrastructure share of variance",
            lambda: _share_html(attribution.summary, labels, titles, invalid, confidence),
        ),
        ("noise model", lambda: noise_html(attribution.summary, labels, titles, invalid)),
    ]
    for name, render in parts:
        if not labels and name != "resource-sensitive tasks":
            continue
        try:
            out.append(render())
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            # an artifact that parses but does not hold what the stage writes: say so
            out.append(
                f'<p class="notes">The {name} could not be shown: the attribution results are '
                f"invalid ({html.escape(type(exc).__name__)}: {html.escape(str(exc))}).</p>"
            )
    out.append("</section>")
    return "\n".join(out)
