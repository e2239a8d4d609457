"""The report's "one model of the noise" part: per group, every variance component with its
interval and share, the total-error SE beside the task-clustered SE, and the D study.

Reads each group's ``noise`` record of the attribution summary
(:func:`evalnoise.facets.noise_record`, computed by the attribution stage on the G-study
engine, :mod:`evalnoise.stats.gstudy`). A component whose interval reaches 0 (a time or
host component: whose permutation test does not reject) is "not detected": it has no share
(an interval that includes 0 is no evidence of one). Pure
functions of the summary: HTML text, and the D study's curve as a frame for its chart
(:func:`evalnoise.report.charts.dstudy_chart`).
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from evalnoise.design_text import choice_text
from evalnoise.formatting import finite_or_none as _num
from evalnoise.formatting import fmt, pct

__all__ = ["DSTUDY_COLUMNS", "dstudy_frame", "noise_html"]

#: Columns of :func:`dstudy_frame`.
DSTUDY_COLUMNS = ("group", "budget_multiple", "budget", "se", "tasks", "trials")


def _noise(entry: Any) -> Mapping[str, Any] | None:
    if not isinstance(entry, Mapping):
        return None
    noise = entry.get("noise")
    return noise if isinstance(noise, Mapping) and noise.get("gstudy") else None


def dstudy_frame(summary: Mapping[str, Any], titles: Mapping[str, str]) -> pd.DataFrame:
    """The D study's curve of every group (the least SE each budget buys), one row per
    (group, budget); ``group`` is the group's title. Empty when no group has one."""
    rows = []
    for label, entry in summary.items():
        noise = _noise(entry)
        if noise is None:
            continue
        for point in noise["dstudy"].get("curve") or ():
            rows.append({"group": titles.get(label, label), **point})
    return pd.DataFrame(rows, columns=list(DSTUDY_COLUMNS))


def _component_row(c: Mapping[str, Any]) -> str:
    detected = bool(c.get("detected"))
    share = pct(_num(c.get("share"))) if detected else "not detected"
    cls = "" if detected else ' class="na"'
    flags = []
    if not detected and c.get("testable") is False:
        flags.append("not testable at this design")
    if c.get("truncated"):
        flags.append("truncated at 0")
    return (
        f"<tr><td>{html.escape(str(c['component']))}</td>"
        f'<td class="n">{fmt(_num(c.get("sigma2")), ".4g")}</td>'
        f'<td class="n">[{fmt(_num(c.get("ci_low")), ".3g")}, '
        f"{fmt(_num(c.get('ci_high')), '.3g')}]</td>"
        f"<td{cls}>{html.escape(share)}</td>"
        f"<td>{html.escape(', '.join(flags))}</td></tr>"
    )


def _group_html(title: str, noise: Mapping[str, Any], struck: bool) -> str:
    g, d = noise["gstudy"], noise["dstudy"]
    te = d["total_error"]
    ratio = _num(te.get("se_ratio"))
    head = (
        f"total-error SE {fmt(_num(te.get('se')), '.3f')} "
        f"({pct(_num(te.get('ci_low')))} – {pct(_num(te.get('ci_high')))}, "
        f"{fmt(_num(te.get('df')), '.3g')} df) beside the task-clustered SE "
        f"{fmt(_num(te.get('se_clustered')), '.3f')}"
        + (f" (× {ratio:.2f})" if ratio is not None else "")
    )
    rows = "".join(_component_row(c) for c in g.get("components") or ())
    parts = [
        f"<h4>{html.escape(title)}</h4>",
        f'<p class="{"nm" if struck else "te"}">{html.escape(head)}</p>',
        '<table class="noise"><tr><th>component</th><th>σ²</th>'
        f"<th>{html.escape(str(g.get('ci_method')))} interval</th><th>share</th>"
        f"<th></th></tr>{rows}</table>",
    ]
    doubled = [p for p in d.get("projections") or () if p.get("change") != "as ran"]
    if doubled:
        items = ", ".join(
            f"{html.escape(str(p['change']))}: SE {fmt(_num(p.get('se')), '.3f')}" for p in doubled
        )
        parts.append(f"<p>D study — the SE with one facet doubled: {items}.</p>")
    cheapest = d.get("cheapest")
    if cheapest:
        line = choice_text(cheapest, as_ran=True, cost_unit="trials")
        parts.append(f"<p>{html.escape(line[0].upper() + line[1:])}.</p>")
    return "\n".join(parts)


def noise_html(
    summary: Mapping[str, Any],
    labels: Sequence[str],
    titles: Mapping[str, str],
    invalid: set,
) -> str:
    """The part's HTML: one table per group with a noise record (a group that is not a
    measurement of the agent is shown greyed), and which groups have none and why."""
    blocks, missing = [], []
    for label in labels:
        entry = summary.get(label)
        noise = _noise(entry)
        title = titles.get(label, label)
        if noise is None:
            why = None
            if isinstance(entry, Mapping):
                why = entry.get("noise_not_computed") or entry.get("not_computed")
            missing.append(f"{title} ({why or 'every score equal: no variance to split'})")
            continue
        blocks.append(_group_html(title, noise, label in invalid))
    out = [
        '<h3 id="noise">Every source of noise, one model</h3>',
        "<p>One variance model of each group's scores (generalizability theory: Cronbach et "
        "al. 1972; Brennan 2001): every facet the run varied — task, time block, host, and "
        "the trials within them — is a random facet with its own variance component and "
        "interval. The total-error SE counts every component that moves the benchmark "
        "score; the task-clustered SE counts only those that differ between tasks. A "
        "component whose interval reaches 0 — a time or host component: whose permutation "
        "test within tasks does not reject — is not detected and has no share. The D study "
        "projects the SE of other designs; the chart shows the least SE each budget buys "
        "(in trials, as the budget stage counts them).</p>",
        *blocks,
    ]
    if missing:
        out.append('<p class="notes">No model for: ' + html.escape("; ".join(missing)) + ".</p>")
    return "\n".join(out)
