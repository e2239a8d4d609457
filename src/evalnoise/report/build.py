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

The section "How far the analysis moves the headline" shows each group's multiverse (the
headline under every combination of the analysis choices, the infra policy among them). The
section "Where the noise comes from" shows the attribution stage's results (whether the infra
policy moves the result, resource-sensitive tasks, flaky tasks with the checks that ran, the
infrastructure share of variance); a missing or invalid attribution artifact is named there,
and the rest of the report is built as usual.

Every file is written atomically and is a pure function of the inputs (no timestamps except
the manifest's own ``started_at``/``ended_at`` shown in the run summary), so DVC hashes only
change when the results do. Nothing in any page loads from the network.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from evalnoise import __version__
from evalnoise.atomic import write_text
from evalnoise.attribution.all_analyses import group_label
from evalnoise.formatting import jsonable
from evalnoise.report import specs
from evalnoise.report._render import PngRenderer, embed_script, page_head, write_chart
from evalnoise.report.attribution_section import (
    ALPHA,
    RESOURCE_CHART,
    attribution_section,
    resource_chart_frame,
)
from evalnoise.report.cards import CardContext
from evalnoise.report.cards_markdown import card_markdown
from evalnoise.report.cards_section import cards_section
from evalnoise.report.chart_sections import (
    CHART_STEMS,
    ChartSection,
    chart_section_html,
    chart_sections,
)
from evalnoise.report.chart_tables import passk_table
from evalnoise.report.group_cards import GroupCard, group_cards, group_names, infra_validity
from evalnoise.report.inputs import ReportInputs
from evalnoise.report.multiverse_section import (
    MULTIVERSE_TITLE,
    multiverse_anchor,
    multiverse_section,
)
from evalnoise.report.noise import dstudy_frame
from evalnoise.report.outcomes_section import outcomes_section, top_banner
from evalnoise.report.run_section import run_section
from evalnoise.report.sequential_section import sequential_section
from evalnoise.report.skipped_comparisons import drop_invalid_pairs
from evalnoise.report.summary_section import summary_section
from evalnoise.report.trajectory_section import trajectory_rows, trajectory_section

__all__ = ["CHART_STEMS", "build_report"]

#: The page's stylesheet (inline: the page loads nothing from the network).
_STYLE = """
body { font-family: system-ui, sans-serif; margin: 0 auto; max-width: 1200px; padding: 1em 2em;
       color: #222; }
h1 { margin-bottom: 0.2em; }
section { margin: 2em 0; }
table { border-collapse: collapse; margin: 0.5em 0; }
/* a wide table scrolls inside its section, never the page */
section { overflow-x: auto; }
#outcomes th { white-space: normal; font-size: 0.85em; }
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
table.multiverse tr.reference td { background: #e8f0fe; font-weight: bold; }
p.none { font-weight: bold; }
"""


def _index_html(
    *,
    card_context: CardContext,
    rendered: Sequence[tuple[ChartSection, dict[str, Any] | None]],
    cards: Sequence[tuple[str, Mapping[str, Any]]],
    manifest: Mapping[str, Any] | None,
    attribution: tuple[str, dict[str, Any] | None],
    sequential: str = "",
    png: bool = True,
) -> str:
    title = f"evalnoise report: {card_context.benchmark}" + (
        f" ({card_context.benchmark_version})" if card_context.benchmark_version else ""
    )
    chart_html = []
    scripts = []
    for i, (ch, spec) in enumerate(rendered):
        div = None if spec is None else f"vis-{i}"
        chart_html.append(chart_section_html(ch, div, png))
        if spec is not None:
            scripts.append(embed_script(div, spec))
    section, spec = attribution
    chart_html.append(section)
    universe = multiverse_section(cards, card_context.confidence)
    if spec is not None:
        scripts.append(embed_script("vis-attribution", spec))
    nav = " · ".join(
        ['<a href="#outcomes">Outcomes</a>']
        + (['<a href="#trajectories">Trajectories</a>'] if trajectory_rows(cards) else [])
        + ([f'<a href="#multiverse">{MULTIVERSE_TITLE}</a>'] if universe else [])
        + (['<a href="#sequential">Adaptive evaluation</a>'] if sequential else [])
        + [f'<a href="#{ch.stem}">{html.escape(ch.title)}</a>' for ch, _ in rendered]
        + ['<a href="#attribution">Where the noise comes from</a>']
        + ['<a href="#cards">Evaluation Cards</a>', '<a href="#run">Run</a>']
    )
    policy = html.escape(card_context.infra_policy)
    backend = html.escape(card_context.backend or "not recorded")
    trajectories = trajectory_section(cards, card_context.confidence)
    return f"""{page_head(title, _STYLE)}
{top_banner(cards)}
<p>Accuracy ± {card_context.confidence:.0%} CI | ICC | between-query SE, per agent and resource
profile (Mustahsan et al., eq. 11). Infra policy: <strong>{policy}
</strong>; backend: <strong>{backend}</strong>.</p>
<nav>{nav}</nav>
{summary_section(cards, card_context.confidence)}
{outcomes_section(cards)}
{trajectories}
{universe}
{sequential}
{chr(10).join(chart_html)}
{cards_section(cards)}
{run_section(card_context, manifest)}
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


def build_report(out_dir: str | Path, inputs: ReportInputs, *, png: bool = True) -> list[Path]:
    """Write the report of ``inputs`` (:class:`~evalnoise.report.inputs.ReportInputs`, whose
    fields say what each part is built from) into ``out_dir``; return every file written,
    sorted. ``png=False`` (the config's ``report.png``) writes each chart's page without its
    PNG copy, and the page links none.

    One card per group (:func:`~evalnoise.report.group_cards.group_cards`), then the page's
    sections in order: the banner of invalid groups, the summary, the outcomes, the
    trajectories, how far the analysis moves the headline
    (:mod:`~evalnoise.report.multiverse_section`: one table per group), the adaptive
    evaluation (:mod:`~evalnoise.report.sequential_section`), the charts
    (:mod:`~evalnoise.report.chart_sections`), where the noise comes from
    (:mod:`~evalnoise.report.attribution_section`), the cards and the run. A comparison
    whose ``a`` or ``b`` is an invalid group is moved to the skipped ones; the infra table
    gains a ``valid`` column from the groups' health when it has none.
    """
    out_dir = Path(out_dir)
    # the PNG workers start their engines now, while the cards and charts are built; the
    # block ends when every PNG is written
    with PngRenderer() if png else nullcontext() as renderer:

        def chart(spec: dict[str, Any], stem: str, title: str) -> list[Path]:
            return write_chart(spec, out_dir, stem, title, png=renderer, picture=png)

        conf = inputs.card_context.confidence
        att = inputs.attribution
        by_group = group_cards(inputs)
        cards = [(c.stem, c.card) for c in by_group]
        names = group_names(by_group)
        comparisons = inputs.comparisons
        skipped = [dict(r) for r in inputs.skipped_comparisons]
        if comparisons is not None and names.invalid:
            comparisons, moved = drop_invalid_pairs(comparisons, set(names.invalid))
            skipped += moved

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
        curves = None if att is None else dstudy_frame(att.summary, names.attribution_titles)
        pass_k, pass_k_left_out = passk_table(c.record for c in by_group)
        for ch in chart_sections(
            per_task=inputs.per_task,
            convergence=inputs.convergence,
            budget=inputs.budget,
            dstudy=curves if curves is not None and len(curves) else None,
            pass_k=pass_k,
            pass_k_left_out=pass_k_left_out,
            infra=infra_validity(inputs.infra, by_group),
            comparisons=comparisons,
            skipped_comparisons=skipped,
            groups=names.groups,
            titles=names.titles,
            labels=names.labels,
            confidence=conf,
        ):
            if ch.spec is not None:
                written += chart(ch.spec, ch.stem, ch.title)
            rendered.append((ch, ch.spec))

        resource_rows = resource_chart_frame(att, set(names.attribution_invalid))
        resource_spec = None
        if resource_rows is not None:
            resource_spec = specs.resource_sensitivity_spec(resource_rows, alpha=ALPHA)
            written += chart(resource_spec, RESOURCE_CHART, "Resource-sensitive tasks")
    section = attribution_section(
        att,
        titles=names.attribution_titles,
        invalid=set(names.attribution_invalid),
        confidence=conf,
        chart_div=None if resource_spec is None else "vis-attribution",
        multiverse_anchors=_multiverse_anchors(by_group),
        png=png,
    )

    index = out_dir / "index.html"
    write_text(
        index,
        _index_html(
            card_context=inputs.card_context,
            rendered=rendered,
            cards=cards,
            manifest=inputs.manifest,
            attribution=(section, resource_spec),
            sequential=sequential_section(inputs.sequential, inputs.sequential_rounds),
            png=png,
        ),
    )
    written.append(index)
    _remove_stale(out_dir, set(written))
    return sorted(written)


def _multiverse_anchors(by_group: Sequence[GroupCard]) -> dict[str, str]:
    """The id of each group's multiverse table, under the record's group name and the
    attribution stage's ``agent@profile`` label (the names its summary may use); only the
    groups whose card carries a multiverse."""
    out: dict[str, str] = {}
    for c in by_group:
        if (c.card.get("metrics") or {}).get("multiverse"):
            for label in (group_label(c.key[0], c.key[1]), c.group):
                out.setdefault(label, multiverse_anchor(c.stem))
    return out


def _dumps_sorted(value: Any) -> str:
    return json.dumps(jsonable(value), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
