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
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from evalnoise import __version__
from evalnoise.atomic import write_text
from evalnoise.attribution.tables import AttributionTables, group_label
from evalnoise.formatting import jsonable
from evalnoise.report import charts
from evalnoise.report._inputs import frame_or_none
from evalnoise.report._render import chart_spec, embed_script, page_head, write_chart
from evalnoise.report.attribution_section import (
    ALPHA,
    RESOURCE_CHART,
    attribution_section,
    attribution_tables,
    card_attribution,
    resource_chart_frame,
)
from evalnoise.report.cards import (
    CardContext,
    card_key,
    card_markdown,
    card_title,
    evaluation_card,
)
from evalnoise.report.cards_section import cards_section
from evalnoise.report.chart_sections import (
    CHART_STEMS,
    ChartSection,
    chart_section_html,
    chart_sections,
)
from evalnoise.report.health import NOT_A_MEASUREMENT_SUFFIX, health_of, machine_of
from evalnoise.report.noise import dstudy_frame
from evalnoise.report.outcomes_section import outcomes_section, top_banner
from evalnoise.report.run_section import run_section
from evalnoise.report.sequential import sequential_section
from evalnoise.report.skipped_comparisons import drop_invalid_pairs
from evalnoise.report.summary_section import summary_section

__all__ = ["CHART_STEMS", "build_report"]

#: The page's stylesheet (inline: the page loads nothing from the network).
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


def _index_html(
    *,
    context: CardContext,
    rendered: Sequence[tuple[ChartSection, dict[str, Any] | None]],
    cards: Sequence[tuple[str, Mapping[str, Any]]],
    manifest: Mapping[str, Any] | None,
    attribution: tuple[str, dict[str, Any] | None],
    sequential: str = "",
) -> str:
    title = f"evalnoise report: {context.benchmark}" + (
        f" ({context.benchmark_version})" if context.benchmark_version else ""
    )
    chart_html = []
    scripts = []
    for i, (ch, spec) in enumerate(rendered):
        div = None if spec is None else f"vis-{i}"
        chart_html.append(chart_section_html(ch, div))
        if spec is not None:
            scripts.append(embed_script(div, spec))
    section, spec = attribution
    chart_html.append(section)
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
{top_banner(cards)}
<p>Accuracy ± {context.confidence:.0%} CI | ICC | between-query SE, per agent and resource
profile (Mustahsan et al., eq. 11). Infra policy: <strong>{html.escape(context.infra_policy)}
</strong>; backend: <strong>{html.escape(context.backend or "not recorded")}</strong>.</p>
<nav>{nav}</nav>
{summary_section(cards, context.confidence)}
{outcomes_section(cards)}
{sequential}
{chr(10).join(chart_html)}
{cards_section(cards)}
{run_section(context, manifest)}
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
        (:data:`~.charts.CONVERGENCE_CHART_COLUMNS`; a ``converged_at`` column, if present,
        feeds the cards' limitations).
    comparisons : records (:func:`evalnoise.analysis.compare_all_pairs`) or a frame with
        ``a, b, diff, ci_low, ci_high`` [``pvalue_holm``, ``kind``]; or the whole
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
    convergence = frame_or_none(convergence)
    comparisons = frame_or_none(comparisons)
    budget = frame_or_none(budget)
    if budget is not None and "se" in budget.columns:
        se = pd.to_numeric(budget["se"], errors="coerce")
        budget = frame_or_none(budget[np.isfinite(se.to_numpy(dtype=float))])
    infra = frame_or_none(infra)
    if per_task is not None and per_task.empty:
        per_task = None
    att = attribution_tables(attribution)

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
            attribution=card_attribution(att, group, key),
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
        comparisons, moved = drop_invalid_pairs(comparisons, invalid)
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
    for ch in chart_sections(
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

    resource_rows = resource_chart_frame(att, att_invalid)
    resource_spec = None
    if resource_rows is not None:
        resource_spec = chart_spec(charts.resource_sensitivity_chart(resource_rows, alpha=ALPHA))
        written += write_chart(resource_spec, out_dir, RESOURCE_CHART, "Resource-sensitive tasks")
    section = attribution_section(
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


def _dumps_sorted(value: Any) -> str:
    return json.dumps(jsonable(value), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
