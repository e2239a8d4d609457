"""Build the report directory: charts (offline HTML + PNG), Evaluation Cards, ``index.html``.

Layout of ``out_dir`` (the directory is owned by the report: files of charts or cards that
this build does not produce are removed, so the directory always matches its inputs)::

    index.html                       every chart, card and the run summary in one page
    per_task_accuracy.{html,png}     paper Fig. 1        (if per_task is given)
    icc_convergence.{html,png}       paper Fig. 2, 4, 5  (if convergence is given)
    budget_allocation.{html,png}     paper Fig. 3        (if budget is given)
    infra_by_resource_profile.{html,png}                 (if infra is given)
    comparisons.{html,png}           paired differences  (if comparisons are given)
    resource_sensitivity.{html,png}  resource-sensitive tasks (if attribution has them)
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

The section "Where the noise comes from" shows the attribution stage's results (policy
sensitivity, resource-sensitive tasks, flaky tasks with the checks that ran, the
infrastructure share of variance); a missing or invalid attribution artifact is named there,
and the rest of the report is built as usual.

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
from evalnoise.attribution.flaky import CHECK_DESCRIPTIONS
from evalnoise.attribution.policy import POLICIES
from evalnoise.attribution.tables import (
    FLAKY_COLUMNS,
    RESOURCE_COLUMNS,
    AttributionTables,
    NotRun,
    group_label,
)
from evalnoise.attribution.text import resource_finding
from evalnoise.formatting import fmt, jsonable, pct
from evalnoise.report import charts
from evalnoise.report._render import chart_spec, embed_script, page_head, write_chart
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
    cost_text,
    evaluation_card,
    judge_text,
    judges_rows,
    policy_sensitivity_of,
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
from evalnoise.report.noise import dstudy_frame, noise_html
from evalnoise.report.sequential import sequential_section

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
    "dstudy",
    "infra_by_resource_profile",
    "comparisons",
    "resource_sensitivity",
)
#: The chart of the "Where the noise comes from" section.
RESOURCE_CHART = "resource_sensitivity"


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
    dstudy: pd.DataFrame | None = None,
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
    if dstudy is not None:
        out.append(
            _Chart(
                "dstudy",
                "D study: the least SE a budget buys",
                "From each group's one model of the noise (section \u201cWhere the noise comes "
                "from\u201d): the total-error SE of the best split of a budget into tasks × "
                "trials per task, the time blocks and hosts as they ran, at ¼ to 8 × what "
                "the run cost (container-seconds); the label gives the split.",
                charts.dstudy_chart(dstudy),
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
    # a withheld headline's line says why there is no number: nothing to strike through
    struck_line = invalid and not card["metrics"].get("accuracy_withheld")
    parts = [
        f'<article class="card{" invalid" if invalid else ""}" id="card-{html.escape(stem)}"'
        f' data-valid="{_valid_attr(card.get("valid"))}">',
        f"<h3>{html.escape(card_title(card))}</h3>",
        _banner_html(card),
        (
            f'<p class="line not-measurement">{_struck(line, code=True)}</p>'
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


# --- where the noise comes from -------------------------------------------------------------

#: What the section says when no attribution results were given.
ATTRIBUTION_NOT_GIVEN = (
    "Not computed for this report: no attribution results were given (the pipeline's "
    "attribution stage writes results/analysis/attribution.json, resource_sensitivity.parquet "
    "and flaky_tasks.csv)."
)
#: At most this many tasks per resource comparison are listed (sorted by adjusted p).
RESOURCE_ROWS_MAX = 60
_ALPHA = 0.05


def _attribution_of(value: Any) -> AttributionTables | None:
    """The attribution input as :class:`AttributionTables`: the tables themselves
    (:func:`~evalnoise.attribution.attribution_for_trials`, or the stage's files read with
    :func:`~evalnoise.attribution.read_attribution`), or a mapping with ``summary``,
    ``resource``, ``flaky`` [, ``problems``]. A table lacking the columns the section reads
    is dropped and named in ``problems``."""
    if value is None:
        return None
    if isinstance(value, AttributionTables):
        summary, problems = value.summary, list(value.problems)
        parts = {"resource": value.resource, "flaky": value.flaky}
    elif isinstance(value, Mapping):
        summary, problems = value.get("summary"), [str(p) for p in value.get("problems") or ()]
        parts = {"resource": value.get("resource"), "flaky": value.get("flaky")}
    else:
        raise TypeError(
            "attribution: expected AttributionTables or a mapping with summary, resource and "
            f"flaky, got {type(value).__name__}"
        )
    if not isinstance(summary, Mapping):
        problems.append("attribution summary: missing or not an object")
        summary = {}
    tables = {}
    for name, required in (("resource", RESOURCE_COLUMNS), ("flaky", FLAKY_COLUMNS)):
        frame = _frame(parts[name])
        missing = [] if frame is None else [c for c in required if c not in frame.columns]
        if missing:
            problems.append(f"{name} table: invalid (lacks column(s) {', '.join(missing)})")
            frame = None
        tables[name] = pd.DataFrame() if frame is None else frame
    return AttributionTables(summary=summary, problems=tuple(problems), **tables)


def _group_title(label: str, titles: Mapping[str, str]) -> str:
    """A group's display name: its card's title, else "agent @ profile" from its label."""
    if label in titles:
        return titles[label]
    agent, at, profile = label.rpartition("@")
    return f"{agent} @ {profile}" if at and agent else label


def _num(value: Any) -> float | None:
    """A finite float, else None (None, NaN, pd.NA, text)."""
    try:
        f = float(value)
    except (TypeError, ValueError):
        return None
    return f if np.isfinite(f) else None


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


def _cell(text: str, struck: bool) -> str:
    """A table cell of plain ``text``; struck through and labelled for an invalid group."""
    if struck:
        return f'<td class="not-measurement">{_struck(text)}</td>'
    return f"<td>{html.escape(text)}</td>"


def _policy_html(
    summary: Mapping[str, Any], labels: Sequence[str], titles: Mapping[str, str], invalid: set
) -> str:
    head = "".join(
        f"<th>{html.escape(h)}</th>"
        for h in (
            "agent @ resource profile",
            "declared",
            *(p.replace("_", " ") for p in POLICIES),
            "largest shift",
            "CI half-width",
            "choice moves the result",
        )
    )
    rows = []
    for label in labels:
        title = html.escape(_group_title(label, titles))
        ps = policy_sensitivity_of(summary[label])
        if ps.get("not_computed"):
            rows.append(
                f'<tr><td>{title}</td><td colspan="{len(POLICIES) + 4}" class="notes">'
                f"not computed: {html.escape(str(ps['not_computed']))}</td></tr>"
            )
            continue
        struck = label in invalid
        cells = [
            f"<td>{title}</td>",
            f"<td>{html.escape(str(ps['declared_policy'] or '—').replace('_', ' '))}</td>",
        ]
        by_name = {r["policy"]: r for r in ps["policies"]}
        for name in POLICIES:
            r = by_name.get(name)
            if r is None or not r["applicable"]:
                note = html.escape(str((r or {}).get("note") or "not applicable"))
                cells.append(f'<td class="na" title="{note}">n/a — {note}</td>')
                continue
            text = f"{pct(r['accuracy'])} [{pct(r['ci_low'])}, {pct(r['ci_high'])}]"
            counted = f"{r['n_counted']} trials counted, {r['n_excluded']} left out"
            if struck:
                cells.append(_cell(text, True))
            elif r["moved"]:
                cells.append(
                    f'<td class="moved" title="{html.escape(counted)}">{html.escape(text)} '
                    "<strong>▲ beyond the CI half-width</strong></td>"
                )
            else:
                cells.append(f'<td title="{html.escape(counted)}">{html.escape(text)}</td>')
        cells.append(_cell(_points(ps["max_shift"]), struck))
        cells.append(_cell(_points(ps["half_width"]), struck))
        verdict = (
            '<td class="moved"><strong>YES</strong></td>' if ps["moves_result"] else "<td>no</td>"
        )
        cells.append(_cell("YES" if ps["moves_result"] else "no", True) if struck else verdict)
        cls = ' class="moves"' if ps["moves_result"] and not struck else ""
        rows.append(f"<tr{cls}>{''.join(cells)}</tr>")
    return (
        '<h3 id="policy-sensitivity">Infra policy sensitivity</h3>\n'
        "<p>Each group's accuracy with its CI, from the same trials, under each way of counting "
        "an infrastructure outcome (timeout, OOM kill, container error): as a wrong answer, left "
        "out, or retried (the last attempt counts; needs retried trials). ▲ marks a policy whose "
        "accuracy differs from “as incorrect” by more than that CI's half-width; the choice "
        "moves the result when the largest difference between two policies does.</p>\n"
        f'<table class="attribution policy"><tr>{head}</tr>{"".join(rows)}</table>'
    )


def _points(value: Any) -> str:
    f = _num(value)
    return "—" if f is None else f"{100 * f:.1f} pts"


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
) -> str:
    parts = [
        '<h3 id="resource-sensitivity">Resource-sensitive tasks</h3>',
        "<p>Per task, one agent's trials under two resource profiles, paired by (task, trial) — "
        "a trial's seed does not depend on the profile, so a pair differs only by the profile — "
        "with the exact McNemar test per task and Benjamini–Hochberg across tasks (q). Singled "
        f"out: q ≤ {_ALPHA:g}, or the task's memory need lies between the two hard memory "
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
            f'<p class="links"><a href="{RESOURCE_CHART}.html">standalone chart</a> · '
            f'<a href="{RESOURCE_CHART}.png">PNG</a></p>'
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
            flag = " and ".join([f"q ≤ {_ALPHA:g}"] * sig + ["need between the limits"] * between)
            infra = f"{r.get('infra_a', '—')} / {r.get('infra_b', '—')}"
            cls = ' class="singled"' if (sig or between) and not struck else ""
            rows.append(
                f"<tr{cls}><td>{name}</td><td>{html.escape(str(r['task_id']))}</td>"
                f'<td class="n">{r.get("n_pairs", "—")}</td>'
                + _cell(pct(_num(r["accuracy_a"])), struck)
                + _cell(pct(_num(r["accuracy_b"])), struck)
                + f'<td class="n">{html.escape(infra)}</td>'
                f'<td class="n">{_p_text(r.get("p"))}</td>'
                f'<td class="n">{_p_text(r.get("p_adjusted"))}</td>'
                f"<td>{'<strong>' + html.escape(flag) + '</strong>' if flag else 'no'}</td></tr>"
            )
    parts.append(f'<table class="attribution resource"><tr>{head}</tr>{"".join(rows)}</table>')
    parts += [f'<p class="notes">{html.escape(n)}</p>' for n in notes]
    return "\n".join(parts)


def _resource_chart_frame(att: AttributionTables | None, invalid: set) -> pd.DataFrame | None:
    """The rows the resource chart draws: each comparison's listed tasks (or, when none
    changed outcome, its first tasks), comparisons with an invalid group marked."""
    if att is None or att.resource.empty:
        return None
    parts = []
    for (agent, a, b), frame in att.resource.groupby(
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
        f"test per task with Benjamini–Hochberg across tasks (q ≤ {_ALPHA:g}). Every group "
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
            f'<td class="n">{_p_text(r.get("p_adjusted"))}</td></tr>'
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
    share = (
        "not detected (its interval reaches 0)"
        if g.get("infra_share_detected") is False
        else pct(_num(g.get("infra_share")))
    )
    parts = [
        f"infrastructure share of variance {share} "
        f"[{pct(_num(g.get('infra_share_ci_low')))}, {pct(_num(g.get('infra_share_ci_high')))}]",
        f" ({' + '.join(g.get('infra_components') or ()) or 'no infrastructure component'}"
        f"; {g.get('time_blocks') or 0} time blocks, {hosts} host{'s' if hosts != 1 else ''}",
    ]
    if comps:
        parts.append("; σ² " + ", ".join(f"{k} {fmt(_num(v), '.3g')}" for k, v in comps.items()))
    parts.append(
        f"); drift {fmt(_num(g.get('drift_slope')), '+.3f')} over the run, "
        f"p = {fmt(_num(g.get('drift_p')), '.2g')}"
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
        line = _struck(_share_text(summary[label])) if label in invalid else text
        items.append(
            f"<li><strong>{html.escape(_group_title(label, titles))}</strong>: {line}</li>"
        )
    return (
        '<h3 id="infra-share">Infrastructure share of variance</h3>\n'
        "<p>The share of the score variance that depends on when (time block) or where (host) a "
        "trial ran, task-specific time effects included: (σ²_time_block + σ²_host + "
        "σ²_task:time_block) / total, from the G study (evalnoise.stats.gstudy: REML or "
        f"ANOVA) with a {confidence:.0%} modified-large-sample interval; a share whose interval "
        "reaches 0 is not detected; drift is the within-task change in success from the run's "
        "first trial to its last (task-clustered t test).</p>\n"
        f'<ul class="infra-share">{"".join(items)}</ul>'
    )


def _attribution_section(
    att: AttributionTables | None,
    *,
    titles: Mapping[str, str],
    invalid: set,
    confidence: float,
    chart_div: str | None,
) -> str:
    """The "Where the noise comes from" section (the chart, if any, goes in ``chart_div``).
    A missing or invalid artifact is named at the top and its part says so; a group whose
    record cannot be read is named instead of shown."""
    out = [
        '<section id="attribution">',
        "<h2>Where the noise comes from</h2>",
        "<p>How much of the result is the infrastructure's: whether the infra policy moves the "
        "accuracy, which tasks' outcomes depend on the resource profile, which tasks are flaky, "
        "and how much of the score variance depends on when or where trials ran.</p>",
    ]
    if att is None:
        out.append(
            f'<div class="note warn" id="attribution-missing" role="note">'
            f"{html.escape(ATTRIBUTION_NOT_GIVEN)}</div>"
        )
        out.append("</section>")
        return "\n".join(out)
    if att.problems:
        items = "".join(f"<li>{html.escape(p)}</li>" for p in att.problems)
        out.append(
            '<div class="note warn" id="attribution-problems" role="note"><p><strong>'
            "Attribution results missing or invalid</strong> — what they hold is not shown "
            f"below:</p><ul>{items}</ul></div>"
        )
    labels, broken = [], []
    for label in att.groups:
        entry = att.summary[label]
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
    not_run = att.not_run
    table_wide = [n for n in not_run if n.scope == "*"]
    if table_wide:
        items = "".join(
            f"<li><code>{html.escape(n.check)}</code>: {html.escape(n.reason)}</li>"
            for n in table_wide
        )
        out.append(f'<div class="notes"><p>For the whole table:</p><ul>{items}</ul></div>')
    if not labels and not att.summary.get("_resource"):
        if not att.problems:
            out.append('<p class="notes">No group was analysed.</p>')
        out.append("</section>")
        return "\n".join(out)
    parts = [
        ("infra policy sensitivity", lambda: _policy_html(att.summary, labels, titles, invalid)),
        (
            "resource-sensitive tasks",
            lambda: _resource_html(att, titles, invalid, chart_div, not_run),
        ),
        ("flaky tasks", lambda: _flaky_html(att, labels, titles, invalid)),
        (
            "infrastructure share of variance",
            lambda: _share_html(att.summary, labels, titles, invalid, confidence),
        ),
        ("noise model", lambda: noise_html(att.summary, labels, titles, invalid)),
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
table.sequential tr.warn td { background: #fff4e5; }
table.sequential tr.reason td { color: #555; font-size: 0.9em; padding-top: 0; }
td.bad { color: #b71c1c; font-weight: bold; }
.notes { color: #555; font-style: italic; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
.note.warn { background: #fff8e1; border: 1px solid #c9a227; border-radius: 6px;
             padding: 0.6em 1.2em; margin: 1em 0; }
td.moved, tr.singled td { background: #fff3e0; }
td.moved strong { color: #b71c1c; }
td.na { color: #777; }
p.none { font-weight: bold; }
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
    attribution: tuple[str, dict[str, Any] | None],
    sequential: str = "",
) -> str:
    title = f"evalnoise report: {context.benchmark}" + (
        f" ({context.benchmark_version})" if context.benchmark_version else ""
    )
    summary = []
    for stem, card in cards:
        link = f'<a href="#card-{html.escape(stem)}">{html.escape(card_title(card))}</a>'
        if card.get("valid") is False and card["metrics"].get("accuracy_withheld"):
            line = html.escape(card["reporting_line"])
            summary.append(f'<tr class="invalid"><td>{link}</td><td><code>{line}</code></td></tr>')
        elif card.get("valid") is False:
            line = _struck(card["reporting_line"], code=True)
            summary.append(f'<tr class="invalid"><td>{link}</td><td>{line}</td></tr>')
        else:
            line = html.escape(card["reporting_line"])
            summary.append(f"<tr><td>{link}</td><td><code>{line}</code></td></tr>")
        readings = {k: v for k, v, _ in card_fields(card)}.get("Readings")
        if readings:
            # labelled readings beside (never instead of) the headline
            text = html.escape("readings: " + readings)
            summary.append(f'<tr class="readings"><td></td><td>{text}</td></tr>')
        if card.get("judge"):
            # accuracy by the LLM judge beside the reference, its kappa and variance share
            judge = html.escape(judge_text(card["judge"], f"{context.confidence:.0%}"))
            summary.append(f'<tr class="judge"><td></td><td>{judge}</td></tr>')
            for label, text in judges_rows(card["judge"], f"{context.confidence:.0%}"):
                line = html.escape(f"{label}: {text}")
                summary.append(f'<tr class="judge"><td></td><td>{line}</td></tr>')
        if (card.get("costs") or {}).get("prices"):
            # with prices configured, what the group's trials cost (the card has the drivers)
            cost = html.escape("cost: " + cost_text(card["costs"]))
            summary.append(f'<tr class="cost"><td></td><td>{cost}</td></tr>')
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
    section, spec = attribution
    chart_sections.append(section)
    if spec is not None:
        scripts.append(embed_script("vis-attribution", spec))
    nav = " · ".join(
        ['<a href="#outcomes">Outcomes</a>']
        + (['<a href="#sequential">Adaptive evaluation</a>'] if sequential else [])
        + [f'<a href="#{ch.stem}">{html.escape(ch.title)}</a>' for ch, _ in rendered]
        + ['<a href="#attribution">Where the noise comes from</a>']
        + ['<a href="#cards">Evaluation Cards</a>', '<a href="#run">Run</a>']
    )
    return f"""{page_head(title, _STYLE)}
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
{sequential}
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
    attribution: AttributionTables | Mapping[str, Any] | None = None,
    sequential: Mapping[str, Any] | None = None,
    sequential_rounds: Sequence[Mapping[str, Any]] = (),
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
    per_task : ``group, task, n, mean, ci_low, ci_high``
        (:func:`evalnoise.analysis.per_task_table`).
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
    attribution : where the noise comes from (:class:`~evalnoise.attribution.AttributionTables`
        from :func:`~evalnoise.attribution.attribution_for_trials`, or the attribution
        stage's files read back with :func:`~evalnoise.attribution.read_attribution`; or a
        mapping with ``summary``, ``resource``, ``flaky`` [, ``problems``]): the section
        "Where the noise comes from" (policy sensitivity, resource-sensitive tasks with a
        chart, flaky tasks with the checks that ran, the infrastructure share of variance)
        and a policy-sensitivity line on every card. Missing or invalid parts are named in
        the section; None says the section was not computed.
    sequential : an adaptive run's summary (``results/sequential/summary.json``,
        :func:`evalnoise.pipeline.sequential.summary_record`), with ``sequential_rounds``
        its round table: the section "Adaptive evaluation" says why each agent stopped,
        after which round and with what precision (:mod:`evalnoise.report.sequential`).
        None, or a fixed design: no section.
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
    att = _attribution_of(attribution)

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
            attribution=_group_attribution(att, group, key),
        )
        cards.append((stems[key], card))

    # --- what the charts say about invalid groups -----------------------------------------
    names = [str(by_key[k]["group"]) for k in keys]
    titles = {
        str(by_key[k]["group"]): card_title(card) for k, (_, card) in zip(keys, cards, strict=True)
    }
    invalid = {str(rec["group"]) for rec in groups if health_of(rec)["valid"] is False}
    labels = {g: g + NOT_A_MEASUREMENT_SUFFIX for g in invalid}
    # the attribution stage names a group agent@profile; records may name it otherwise
    att_titles = dict(titles)
    att_invalid = set(invalid)
    for k, (_, card) in zip(keys, cards, strict=True):
        label = group_label(k[0], k[1])
        att_titles.setdefault(label, card_title(card))
        if str(by_key[k]["group"]) in invalid:
            att_invalid.add(label)
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
    curves = None if att is None else dstudy_frame(att.summary, att_titles)
    for ch in _charts(
        per_task=per_task,
        convergence=convergence,
        budget=budget,
        dstudy=curves if curves is not None and len(curves) else None,
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

    resource_rows = _resource_chart_frame(att, att_invalid)
    resource_spec = None
    if resource_rows is not None:
        resource_spec = chart_spec(charts.resource_sensitivity_chart(resource_rows, alpha=_ALPHA))
        written += write_chart(resource_spec, out_dir, RESOURCE_CHART, "Resource-sensitive tasks")
    section = _attribution_section(
        att,
        titles=att_titles,
        invalid=att_invalid,
        confidence=conf,
        chart_div=None if resource_spec is None else "vis-attribution",
    )

    index = out_dir / "index.html"
    write_text(
        index,
        _index_html(
            context=card_context,
            rendered=rendered,
            cards=cards,
            manifest=manifest,
            attribution=(section, resource_spec),
            sequential=sequential_section(sequential, sequential_rounds),
        ),
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


def _group_attribution(
    att: AttributionTables | None, group: str, key: tuple[str, str | None]
) -> Mapping[str, Any] | None:
    """A card's entry of the attribution summary: by the record's group name, else by
    ``agent@profile``; None when no attribution was given (no line on the card)."""
    if att is None:
        return None
    for label in (group, group_label(key[0], key[1])):
        if label in att.summary:
            entry = att.summary[label]
            if isinstance(entry, Mapping):
                return entry
            return {"not_computed": "invalid attribution record (not an object)"}
    why = "no attribution record for this group"
    if att.problems:
        why += " (" + "; ".join(att.problems) + ")"
    return {"not_computed": why}


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
