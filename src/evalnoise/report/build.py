"""Build the report directory: charts (offline HTML + PNG), Evaluation Cards, ``index.html``.

Layout of ``out_dir`` (the directory is owned by the report: files of charts or cards that
this build does not produce are removed, so the directory always matches its inputs)::

    index.html                       every chart, card and the run summary in one page
    per_task_accuracy.{html,png}     paper Fig. 1        (if per_task is given)
    icc_convergence.{html,png}       paper Fig. 2, 4, 5  (if convergence is given)
    budget_allocation.{html,png}     paper Fig. 3        (if budget is given)
    infra_by_resource_profile.{html,png}                 (if infra is given)
    comparisons.{html,png}           paired differences  (if comparisons are given)
    cards.json                       every Evaluation Card
    cards/<agent>__<profile>.{md,json}

Failures never read as scores. Every group's outcome counts (ok, crashed, no answer,
timeout, oom_killed, infra_error, unscored, of N trials) are in ``index.html`` and on its
card. A group whose ``health`` says it is not a measurement of the agent (e.g. every trial
crashed with SIGSEGV) is listed in a red banner at the top of ``index.html`` and its card
opens with one; its statistics are struck through wherever they appear, its chart labels say
"not a measurement", and comparisons involving it are listed as skipped with the reason.
Groups whose failures were declared as the experiment get a neutral note instead. A group
whose statistics are undefined (no convergence rows, no budget rows, every trial correct or
every trial wrong) is named in a note under the chart it is missing from; it never stops the
build.

Every file is written atomically and is a pure function of the inputs (no timestamps except
the manifest's own ``started_at``/``ended_at`` shown in the run summary), so DVC hashes only
change when the results do. Nothing in any page loads from the network.
"""

from __future__ import annotations

import hashlib
import html
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import altair as alt
import numpy as np
import pandas as pd

from evalnoise import __version__
from evalnoise.atomic import write_text
from evalnoise.formatting import fmt, jsonable, pct
from evalnoise.report import charts
from evalnoise.report._render import CSP, chart_spec, embed_script, vega_bundle, write_chart
from evalnoise.report.cards import (
    NOT_A_MEASUREMENT_LABEL,
    OUTCOME_LEGEND,
    CardContext,
    card_banner,
    card_fields,
    card_key,
    card_markdown,
    card_note,
    card_title,
    evaluation_card,
    judge_text,
)
from evalnoise.report.health import (
    NOT_A_MEASUREMENT,
    OUTCOME_HEADERS,
    OUTCOME_LABELS,
    OUTCOMES,
    health_of,
    machine_of,
    status_text,
)

__all__ = ["CHART_STEMS", "build_report"]


@dataclass(frozen=True)
class _Chart:
    """One section of the page: a chart (None when no group has data for it), notes about
    the groups it leaves out, and extra HTML below it."""

    stem: str
    title: str
    description: str
    chart: alt.TopLevelMixin | None
    notes: tuple[str, ...] = ()
    extra_html: str = ""


#: How an invalid group is labelled in charts.
NOT_A_MEASUREMENT_SUFFIX = " — NOT A MEASUREMENT"


#: File stems of every chart the report can contain, in page order.
CHART_STEMS = (
    "per_task_accuracy",
    "icc_convergence",
    "budget_allocation",
    "infra_by_resource_profile",
    "comparisons",
)


def _frame(value: pd.DataFrame | Sequence[Mapping[str, Any]] | None) -> pd.DataFrame | None:
    if value is None:
        return None
    frame = value if isinstance(value, pd.DataFrame) else pd.DataFrame.from_records(list(value))
    return None if frame.empty else frame


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.") or "x"


def _card_stems(keys: Sequence[tuple[str, str | None]]) -> dict[tuple[str, str | None], str]:
    """File stem per card; distinct names that slug alike get a short hash suffix."""
    base = {k: _slug(k[0]) + (f"__{_slug(k[1])}" if k[1] else "") for k in keys}
    seen: dict[str, int] = {}
    for stem in base.values():
        seen[stem] = seen.get(stem, 0) + 1
    out = {}
    for k, stem in base.items():
        if seen[stem] > 1:
            digest = hashlib.sha256(f"{k[0]}\0{k[1] or ''}".encode()).hexdigest()[:8]
            stem = f"{stem}-{digest}"
        out[k] = stem
    return out


def _relabel(frame: pd.DataFrame, labels: Mapping[str, str]) -> pd.DataFrame:
    """``frame`` with its ``group`` column as strings, invalid groups relabelled."""
    if "group" not in frame.columns:
        return frame
    out = frame.copy()
    out["group"] = out["group"].astype(str).map(lambda g: labels.get(g, g))
    return out


def _names(groups: Sequence[str], titles: Mapping[str, str]) -> str:
    return ", ".join(titles.get(g, g) for g in groups)


def _missing(have: pd.Series, groups: Sequence[str]) -> list[str]:
    present = set(have.astype(str))
    return [g for g in groups if g not in present]


def _charts(
    *,
    per_task: pd.DataFrame | None,
    convergence: pd.DataFrame | None,
    budget: pd.DataFrame | None,
    infra: pd.DataFrame | None,
    comparisons: pd.DataFrame | None,
    skipped: Sequence[Mapping[str, Any]],
    groups: Sequence[str],
    titles: Mapping[str, str],
    labels: Mapping[str, str],
    confidence: float,
) -> list[_Chart]:
    """The page's chart sections. ``groups``: every group name (record order); ``titles``:
    group → "agent @ profile"; ``labels``: group → chart label (invalid groups marked)."""
    level = f"{confidence:.0%}"
    out = []
    if per_task is not None:
        notes = []
        absent = _missing(per_task["group"], groups)
        if absent:
            notes.append(f"No per-question rows for {_names(absent, titles)}.")
        out.append(
            _Chart(
                "per_task_accuracy",
                "Per-question accuracy",
                f"Each question's accuracy over its trials with a {level} Wilson interval, "
                "questions sorted by accuracy (paper Fig. 1). Wide intervals are trial-to-trial "
                "inconsistency that a single run hides.",
                charts.per_task_chart(_relabel(per_task, labels), confidence=confidence),
                tuple(notes),
            )
        )
    if convergence is not None:
        tidy = charts.tidy_convergence(convergence)
        named = list(dict.fromkeys([*groups, *_in_order(convergence["group"])]))
        undefined = _missing(tidy["group"], named)
        notes = []
        if undefined:
            notes.append(
                f"ICC convergence undefined for {_names(undefined, titles)}: no subsample of "
                "trials gave a finite ICC (e.g. every trial scored the same, as when an agent "
                "answers every trial correctly or every trial fails), so there is no curve."
            )
        out.append(
            _Chart(
                "icc_convergence",
                "ICC convergence over trials",
                "ICC recomputed on random subsamples of T trials per task: mean and "
                "5th–95th percentile band, for the ANOVA ICC(1,1) and the paper's plug-in "
                "estimator; dashed lines are the values on all trials (paper Fig. 2, 4, 5).",
                charts.convergence_chart(_relabel(tidy, labels)) if len(tidy) else None,
                tuple(notes),
            )
        )
    if budget is not None:
        notes = []
        if "group" in budget.columns:
            absent = _missing(budget["group"], groups)
            if absent:
                notes.append(
                    f"Budget allocation undefined for {_names(absent, titles)}: its variance "
                    "components are undefined (e.g. every trial scored the same)."
                )
        out.append(
            _Chart(
                "budget_allocation",
                "Budget allocation",
                "Standard error of accuracy for each split of a fixed budget of runs into "
                "tasks × trials (paper eq. 9–10, Fig. 3); the diamond marks the recommended "
                "allocation.",
                charts.budget_chart(_relabel(budget, labels)),
                tuple(notes),
            )
        )
    if infra is not None:
        out.append(
            _Chart(
                "infra_by_resource_profile",
                "Accuracy and infrastructure errors per resource profile",
                f"Accuracy and the share of trials lost to infrastructure (timeouts, OOM kills, "
                f"container errors) under each resource profile, with {level} CIs."
                + (
                    " Crosses and dashed intervals are groups that are not a measurement of "
                    "the agent."
                    if "valid" in infra.columns
                    else ""
                ),
                charts.infra_chart(infra, confidence=confidence),
            )
        )
    if comparisons is not None or skipped:
        out.append(
            _Chart(
                "comparisons",
                "Paired comparisons",
                f"Paired differences in accuracy (a − b) on common tasks with {level} CIs; "
                "coloured by Holm-adjusted significance. An interval crossing zero is no "
                "evidence of a difference.",
                None
                if comparisons is None
                else charts.comparisons_chart(comparisons, confidence=confidence),
                () if comparisons is not None else ("No comparison could be made.",),
                _skipped_html(skipped),
            )
        )
    return out


def _in_order(values: Any) -> list[str]:
    return list(dict.fromkeys(str(v) for v in values))


def _skipped_html(skipped: Sequence[Mapping[str, Any]]) -> str:
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


def _manifest_rows(manifest: Mapping[str, Any] | None) -> list[tuple[str, str]]:
    if manifest is None:
        return [("manifest", "not given")]
    git = manifest.get("git") or {}
    commit = git.get("commit")
    commit_text = "not a git checkout" if commit is None else str(commit)
    if git.get("dirty"):
        commit_text += " (uncommitted changes)"
    packages = manifest.get("packages") or {}
    host = manifest.get("host") or {}
    rows = [
        ("config sha256", str(manifest.get("config_sha256", "not recorded"))),
        ("git commit", commit_text),
        ("run seed", str(manifest.get("run_seed"))),
        ("seed rule", str(manifest.get("seed_rule") or "not recorded")),
        ("backend", str(manifest.get("backend") or "not recorded")),
        ("started (UTC)", str(manifest.get("started_at") or "not recorded")),
        ("ended (UTC)", str(manifest.get("ended_at") or "not recorded")),
        ("host", str(host.get("hostname") or "not recorded")),
        ("evalnoise", str(packages.get("evalnoise") or "not recorded")),
        (
            "packages",
            ", ".join(f"{k} {v}" for k, v in sorted(packages.items()) if v and k != "evalnoise")
            or "not recorded",
        ),
        ("images", str(len(manifest.get("images") or {}))),
        ("model files", str(len(manifest.get("model_files") or {}))),
        ("judge template sha256", str(manifest.get("judge_template_sha256") or "none")),
        ("artifacts hashed", str(len(manifest.get("artifacts") or []))),
    ]
    execution = manifest.get("execution")
    if execution:
        jobs = execution.get("trial_jobs") or []
        slurm = sorted({str(j["slurm_job_id"]) for j in jobs if j.get("slurm_job_id")}, key=int)
        rows.append(("executor", ", ".join(execution.get("executors") or []) or "not recorded"))
        rows.append(
            (
                "trial jobs",
                f"{len(jobs)}" + (f"; Slurm job ids {', '.join(slurm)}" if slurm else ""),
            )
        )
    return rows


def _machine_rows(manifest: Mapping[str, Any] | None) -> list[tuple[str, str]]:
    """The machine the trials ran on: host, CPU model, cgroup version, llama.cpp runtime."""
    machine = machine_of(manifest)
    if machine is None:
        return [("machine", "not recorded")]
    rows = [
        ("host", machine["host"] or "not recorded"),
        ("CPU model", machine["cpu_model"] or "not recorded"),
        ("cgroup version", machine["cgroup_version"] or "not recorded"),
    ]
    llama = machine["llama_cpp"]
    if llama is None:
        rows.append(("llama.cpp runtime", "none recorded"))
        return rows
    runtime = f"llama-cpp-python {llama['version'] or '(version not recorded)'}"
    if llama["wheel_key"]:
        runtime += f" (wheel {llama['wheel_key']})"
    rows += [
        ("llama.cpp runtime", runtime),
        ("llama.cpp declared CPU baseline", llama["cpu_baseline"] or "not recorded"),
        ("llama.cpp CPU features", llama["system_info"] or "not recorded"),
    ]
    return rows


def _table(rows: Sequence[tuple[str, str]], cls: str = "kv") -> str:
    body = "\n".join(
        f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>" for k, v in rows
    )
    return f'<table class="{cls}">\n{body}\n</table>'


def _struck(text: str, *, code: bool = False) -> str:
    """Escaped ``text`` struck through and greyed, followed by the red "not a measurement"."""
    inner = f"<code>{html.escape(text)}</code>" if code else html.escape(text)
    return f'<s class="nm">{inner}</s> <span class="nm-label">{NOT_A_MEASUREMENT_LABEL}</span>'


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


def _outcome_header(extra: Sequence[str] = ()) -> str:
    cells = [f"<th>{html.escape(c)}</th>" for c in extra]
    cells += [
        f'<th title="{html.escape(OUTCOME_LABELS[k])}">{html.escape(OUTCOME_HEADERS[k])}</th>'
        for k in OUTCOMES
    ]
    cells += ["<th>trials</th>", "<th>attempts</th>"]
    return "<tr>" + "".join(cells) + "</tr>"


def _outcome_cells(outcomes: Mapping[str, Any] | None) -> str:
    if outcomes is None:
        return f'<td colspan="{len(OUTCOMES) + 2}">not recorded</td>'
    cells = []
    for k in (*OUTCOMES, "trials", "attempts"):
        v = outcomes.get(k)
        cls = "n bad" if k not in ("ok", "trials", "attempts") and v else "n"
        cells.append(f'<td class="{cls}">{"?" if v is None else v}</td>')
    return "".join(cells)


def _card_outcomes_html(card: Mapping[str, Any]) -> str:
    outcomes = card.get("outcomes")
    if outcomes is None:
        return (
            '<h4>Outcomes</h4><p class="outcomes-unknown">Outcome counts not recorded (the '
            "input predates outcome accounting).</p>"
        )
    parts = [
        f"<h4>Outcomes of {outcomes.get('trials') or '?'} trials</h4>",
        f'<table class="outcomes">{_outcome_header()}<tr>{_outcome_cells(outcomes)}</tr></table>',
    ]
    signals = (card.get("health") or {}).get("crash_signals") or {}
    if signals:
        text = ", ".join(f"{k} × {v}" for k, v in signals.items())
        parts.append(f'<p class="signals">Crash signals: {html.escape(text)}</p>')
    return "\n".join(parts)


def _card_html(card: Mapping[str, Any], stem: str) -> str:
    conf = f"{card['metrics']['confidence']:.0%}"
    invalid = card.get("valid") is False
    rows = "\n".join(
        f"<tr><th>{html.escape(k)}</th>"
        + (
            f'<td class="not-measurement">{_struck(v)}</td>'
            if struck
            else f"<td>{html.escape(v)}</td>"
        )
        + "</tr>"
        for k, v, struck in card_fields(card)
    )
    line = card["reporting_line"]
    parts = [
        f'<article class="card{" invalid" if invalid else ""}" id="card-{html.escape(stem)}"'
        f' data-valid="{_valid_attr(card.get("valid"))}">',
        f"<h3>{html.escape(card_title(card))}</h3>",
        _banner_html(card),
        (
            f'<p class="line not-measurement">{_struck(line, code=True)}</p>'
            if invalid
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
                f'<td class="not-measurement">{_struck(acc)}</td>' if struck else f"<td>{acc}</td>"
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


_STYLE = """
body { font-family: system-ui, sans-serif; margin: 0 auto; max-width: 1200px; padding: 1em 2em;
       color: #222; }
h1 { margin-bottom: 0.2em; }
section { margin: 2em 0; }
table { border-collapse: collapse; margin: 0.5em 0; }
th, td { border: 1px solid #ddd; padding: 0.3em 0.6em; text-align: left; vertical-align: top; }
table.kv th { background: #f5f5f5; white-space: nowrap; }
pre.line { background: #f5f5f5; padding: 0.6em; white-space: pre-wrap; }
p.line { background: #f5f5f5; padding: 0.6em; }
.card { border: 1px solid #bbb; border-radius: 6px; padding: 0.5em 1.2em; margin: 1em 0; }
.card.invalid { border: 3px solid #b71c1c; }
.chart { min-height: 120px; }
.links { font-size: 0.9em; }
.banner.invalid { background-color: rgb(183, 28, 28); color: #fff; border-radius: 6px;
                  padding: 0.7em 1.2em; margin: 1em 0; font-size: 1.05em; }
.banner.invalid a { color: #fff; }
.banner.invalid ul { margin: 0.4em 0; }
.note.expected { background: #eef2f7; border: 1px solid #9aa8b8; border-radius: 6px;
                 padding: 0.6em 1.2em; margin: 1em 0; }
s.nm { color: #888; }
.nm-label { color: #b71c1c; font-weight: bold; white-space: nowrap; }
tr.invalid td { background: #fdecea; }
td.bad { color: #b71c1c; font-weight: bold; }
.notes { color: #555; font-style: italic; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
"""


def _top_banner(cards: Sequence[tuple[str, Mapping[str, Any]]]) -> str:
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


def _outcomes_section(cards: Sequence[tuple[str, Mapping[str, Any]]]) -> str:
    rows = []
    for stem, card in cards:
        health = card.get("health") or {"valid": None}
        status = status_text(health)
        rate = health.get("failure_rate")
        if rate is not None:
            status += f" ({pct(rate)} failed)"
        cls = ' class="invalid"' if card.get("valid") is False else ""
        rows.append(
            f'<tr{cls}><td><a href="#card-{html.escape(stem)}">'
            f"{html.escape(card_title(card))}</a></td><td>{html.escape(status)}</td>"
            f"{_outcome_cells(card.get('outcomes'))}</tr>"
        )
    return (
        '<section id="outcomes">\n<h2>Outcomes</h2>\n'
        "<p>What became of every trial (its final attempt), per agent and resource profile. "
        f"{html.escape(OUTCOME_LEGEND)}</p>\n"
        f'<table class="outcomes">{_outcome_header(["agent @ resource profile", "status"])}'
        f"{''.join(rows)}</table>\n</section>"
    )


def _index_html(
    *,
    context: CardContext,
    rendered: Sequence[tuple[_Chart, dict[str, Any] | None]],
    cards: Sequence[tuple[str, Mapping[str, Any]]],
    manifest: Mapping[str, Any] | None,
) -> str:
    title = f"evalnoise report: {context.benchmark}" + (
        f" ({context.benchmark_version})" if context.benchmark_version else ""
    )
    summary = []
    for stem, card in cards:
        link = f'<a href="#card-{html.escape(stem)}">{html.escape(card_title(card))}</a>'
        if card.get("valid") is False:
            line = _struck(card["reporting_line"], code=True)
            summary.append(f'<tr class="invalid"><td>{link}</td><td>{line}</td></tr>')
        else:
            line = html.escape(card["reporting_line"])
            summary.append(f"<tr><td>{link}</td><td><code>{line}</code></td></tr>")
        if card.get("judge"):
            # accuracy by the LLM judge beside the reference, its kappa and variance share
            judge = html.escape(judge_text(card["judge"], f"{context.confidence:.0%}"))
            summary.append(f'<tr class="judge"><td></td><td>{judge}</td></tr>')
    summary_rows = "\n".join(summary)
    run_rows = [
        ("infra policy", context.infra_policy),
        ("backend", context.backend or "not recorded"),
        ("confidence level", f"{context.confidence:.0%}"),
        ("ICC", "ICC(1,1), one-way random effects"),
    ]
    chart_sections = []
    scripts = []
    for i, (ch, spec) in enumerate(rendered):
        body = [f'<section id="{ch.stem}">', f"<h2>{html.escape(ch.title)}</h2>"]
        body.append(f"<p>{html.escape(ch.description)}</p>")
        if spec is not None:
            div = f"vis-{i}"
            body += [
                f'<div id="{div}" class="chart" data-chart="{ch.stem}"></div>',
                f'<p class="links"><a href="{ch.stem}.html">standalone chart</a> · '
                f'<a href="{ch.stem}.png">PNG</a></p>',
            ]
            scripts.append(embed_script(div, spec))
        body += [f'<p class="notes">{html.escape(note)}</p>' for note in ch.notes]
        if ch.extra_html:
            body.append(ch.extra_html)
        body.append("</section>")
        chart_sections.append("\n".join(body))
    nav = " · ".join(
        ['<a href="#outcomes">Outcomes</a>']
        + [f'<a href="#{ch.stem}">{html.escape(ch.title)}</a>' for ch, _ in rendered]
        + ['<a href="#cards">Evaluation Cards</a>', '<a href="#run">Run</a>']
    )
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{CSP}">
<link rel="icon" href="data:,">
<title>{html.escape(title)}</title>
<style>{_STYLE}</style>
<script>
{vega_bundle()}
</script>
</head>
<body>
<h1>{html.escape(title)}</h1>
{_top_banner(cards)}
<p>Accuracy ± {context.confidence:.0%} CI | ICC | between-query SE, per agent and resource
profile (Mustahsan et al., eq. 11). Infra policy: <strong>{html.escape(context.infra_policy)}
</strong>; backend: <strong>{html.escape(context.backend or "not recorded")}</strong>.</p>
<nav>{nav}</nav>
<section id="summary">
<h2>Summary</h2>
<table class="summary">
<tr><th>agent @ resource profile</th><th>reporting line</th></tr>
{summary_rows}
</table>
</section>
{_outcomes_section(cards)}
{chr(10).join(chart_sections)}
<section id="cards">
<h2>Evaluation Cards</h2>
<p>All cards: <a href="cards.json">cards.json</a></p>
{chr(10).join(_card_html(card, stem) for stem, card in cards)}
</section>
<section id="run">
<h2>Run</h2>
{_table(run_rows)}
<h3>Manifest</h3>
{_table(_manifest_rows(manifest))}
<h3 id="machine">Machine</h3>
{_table(_machine_rows(manifest))}
</section>
<footer><p>Generated by evalnoise {html.escape(__version__)}. This page loads nothing from
the network.</p></footer>
<script>
{chr(10).join(scripts)}
</script>
</body>
</html>
"""


def _remove_stale(out_dir: Path, written: set[Path]) -> None:
    """Delete chart and card files of earlier builds that this build did not write."""
    candidates = [out_dir / f"{stem}.{ext}" for stem in CHART_STEMS for ext in ("html", "png")]
    cards_dir = out_dir / "cards"
    if cards_dir.is_dir():
        candidates += [p for p in cards_dir.iterdir() if p.suffix in (".md", ".json")]
    for path in candidates:
        if path not in written and path.is_file():
            path.unlink()


def build_report(
    out_dir: str | Path,
    *,
    groups: Sequence[Mapping[str, Any]],
    card_context: CardContext,
    per_task: pd.DataFrame | None = None,
    convergence: pd.DataFrame | Sequence[Mapping[str, Any]] | None = None,
    comparisons: pd.DataFrame | Sequence[Mapping[str, Any]] | Mapping[str, Any] | None = None,
    budget: pd.DataFrame | Sequence[Mapping[str, Any]] | None = None,
    infra: pd.DataFrame | Sequence[Mapping[str, Any]] | None = None,
    levels: Sequence[Mapping[str, Any]] = (),
    manifest: Mapping[str, Any] | None = None,
    skipped_comparisons: Sequence[Mapping[str, Any]] = (),
) -> list[Path]:
    """Write the report into ``out_dir``; return every file written, sorted.

    Parameters
    ----------
    groups : one statistics record per agent × resource profile
        (:func:`evalnoise.analysis.group_record`); ``agent`` and ``resource_profile`` keys
        name the card, else ``group`` is the agent (see :func:`~.cards.card_key`). Their
        ``outcomes``, ``health`` and ``crash_signals`` (``groups.json``) say what became of
        the trials and whether the numbers measure the agent; records without them are shown
        with outcomes "not recorded".
    card_context : run-level facts for the Evaluation Cards.
    per_task : ``group, task, n, mean, ci_low, ci_high`` (:func:`~.tables.per_task_table`).
    convergence : the stats convergence table with a ``group`` column
        (:data:`~.charts.CONVERGENCE_COLUMNS`; a ``converged_at`` column, if present, feeds
        the cards' limitations).
    comparisons : records (:func:`evalnoise.analysis.compare_all_pairs`) or a frame with
        ``a, b, diff, ci_low, ci_high`` [``p_paired_holm``, ``kind``]; or the whole
        ``comparisons.json`` (``{"comparisons": [...], "skipped": [...]}``). A comparison
        whose ``a`` or ``b`` is an invalid group is moved to the skipped ones.
    budget : ``n_tasks, trials, se`` [``group``, ``recommended``].
    infra : :data:`~.charts.INFRA_COLUMNS`, one row per agent × resource profile.
    levels : per-level statistics records (group record keys plus ``level``).
    manifest : the run manifest (:func:`evalnoise.manifest.build_manifest`), summarised;
        its ``machine`` section (host, CPU model, cgroup version, llama.cpp runtime) is shown
        in the Run section and on every card.
    skipped_comparisons : comparisons the pipeline left out, each ``kind, within, a, b,
        reason``; listed with the comparisons.
    """
    out_dir = Path(out_dir)
    if not groups:
        raise ValueError("build_report: no group records")
    conf = card_context.confidence
    skipped = [dict(r) for r in skipped_comparisons]
    if isinstance(comparisons, Mapping):
        skipped += [dict(r) for r in comparisons.get("skipped") or ()]
        comparisons = comparisons.get("comparisons")
    convergence = _frame(convergence)
    comparisons = _frame(comparisons)
    budget = _frame(budget)
    if budget is not None and "se" in budget.columns:
        se = pd.to_numeric(budget["se"], errors="coerce")
        budget = _frame(budget[np.isfinite(se.to_numpy(dtype=float))])
    infra = _frame(infra)
    if per_task is not None and per_task.empty:
        per_task = None

    # --- cards ---------------------------------------------------------------------------
    by_key: dict[tuple[str, str | None], Mapping[str, Any]] = {}
    for rec in groups:
        key = card_key(rec, card_context)
        if key in by_key:
            raise ValueError(f"two group records for agent {key[0]!r}, profile {key[1]!r}")
        by_key[key] = rec
    level_recs: dict[tuple[str, str | None], list[Mapping[str, Any]]] = {}
    for rec in levels:
        key = card_key(rec, card_context)
        if key not in by_key:
            raise ValueError(f"per-level record for unknown agent/profile {key}")
        level_recs.setdefault(key, []).append(rec)
    infra_rows: dict[tuple[str, str | None], Mapping[str, Any]] = {}
    if infra is not None:
        for row in infra.to_dict(orient="records"):
            infra_rows[(str(row["agent"]), str(row["resource_profile"]))] = row
    keys = sorted(by_key, key=lambda k: (k[0], k[1] or ""))
    stems = _card_stems(keys)
    machine = machine_of(manifest)
    cards: list[tuple[str, dict[str, Any]]] = []
    for key in keys:
        rec = by_key[key]
        group = str(rec["group"])
        counts: list[int] = []
        if per_task is not None:
            counts = per_task.loc[per_task["group"].astype(str) == group, "n"].astype(int).tolist()
        card = evaluation_card(
            rec,
            card_context,
            levels=level_recs.get(key, ()),
            trials_per_task=counts,
            infra=infra_rows.get(key),
            converged=_converged(convergence, group),
            machine=machine,
        )
        cards.append((stems[key], card))

    # --- what the charts say about invalid groups -----------------------------------------
    names = [str(by_key[k]["group"]) for k in keys]
    titles = {
        str(by_key[k]["group"]): card_title(card) for k, (_, card) in zip(keys, cards, strict=True)
    }
    invalid = {str(rec["group"]) for rec in groups if health_of(rec)["valid"] is False}
    labels = {g: g + NOT_A_MEASUREMENT_SUFFIX for g in invalid}
    if comparisons is not None and invalid:
        comparisons, moved = _drop_invalid_pairs(comparisons, invalid)
        skipped += moved
    if infra is not None and "valid" not in infra.columns:
        known = {k: health_of(by_key[k])["valid"] for k in keys}
        if any(v is not None for v in known.values()):
            infra = infra.assign(
                valid=[
                    known.get((str(a), str(p)))
                    for a, p in zip(infra["agent"], infra["resource_profile"], strict=True)
                ]
            )

    written: list[Path] = []
    for stem, card in cards:
        md, js = out_dir / "cards" / f"{stem}.md", out_dir / "cards" / f"{stem}.json"
        write_text(md, card_markdown(card))
        write_text(js, _dumps_sorted(card))
        written += [md, js]
    all_cards = out_dir / "cards.json"
    write_text(all_cards, _dumps_sorted({"cards": [card for _, card in cards]}))
    written.append(all_cards)

    # --- charts --------------------------------------------------------------------------
    rendered = []
    for ch in _charts(
        per_task=per_task,
        convergence=convergence,
        budget=budget,
        infra=infra,
        comparisons=comparisons,
        skipped=skipped,
        groups=names,
        titles=titles,
        labels=labels,
        confidence=conf,
    ):
        spec = None
        if ch.chart is not None:
            spec = chart_spec(ch.chart)
            written += write_chart(spec, out_dir, ch.stem, ch.title)
        rendered.append((ch, spec))

    index = out_dir / "index.html"
    write_text(
        index, _index_html(context=card_context, rendered=rendered, cards=cards, manifest=manifest)
    )
    written.append(index)
    _remove_stale(out_dir, set(written))
    return sorted(written)


def _converged(convergence: pd.DataFrame | None, group: str) -> bool | None:
    """Whether the group's mean ICC settled (``converged_at`` set); None when the table has
    no ``converged_at``, no rows for the group, or no finite ICC for it (undefined)."""
    if convergence is None or "converged_at" not in convergence.columns:
        return None
    part = convergence.loc[convergence["group"].astype(str) == group]
    if not len(part):
        return None
    if (
        "icc_mean" in part.columns
        and not pd.to_numeric(part["icc_mean"], errors="coerce").notna().any()
    ):
        return None
    return bool(pd.notna(part["converged_at"].iloc[0]))


def _drop_invalid_pairs(
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
    return _frame(comparisons[~bad]), moved


def _dumps_sorted(value: Any) -> str:
    return json.dumps(jsonable(value), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
