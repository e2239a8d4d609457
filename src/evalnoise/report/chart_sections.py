"""The page's chart sections, in page order: per-question accuracy (paper Fig. 1), ICC
convergence (Fig. 2, 4, 5), budget allocation (eq. 9–10, Fig. 3), the D study, pass^k against
k, accuracy and infrastructure errors per resource profile, and the paired comparisons.

Each section is a :class:`ChartSection`: its chart's spec (None when no group has data for
it), the notes naming the groups it leaves out (an undefined statistic is named, never dropped in
silence) and any HTML below the chart. :func:`chart_section_html` renders one for the page.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from evalnoise.report import specs
from evalnoise.report.chart_tables import in_order, tidy_convergence
from evalnoise.report.skipped_comparisons import skipped_comparisons_html

__all__ = [
    "CHART_STEMS",
    "ChartSection",
    "chart_links",
    "chart_section_html",
    "chart_sections",
    "relabel",
]


@dataclass(frozen=True)
class ChartSection:
    """One section of the page: a chart's Vega-Lite spec (:mod:`evalnoise.report.specs`;
    None when no group has data for it), notes about the groups it leaves out, and extra
    HTML below it."""

    stem: str
    title: str
    description: str
    spec: dict[str, Any] | None
    notes: tuple[str, ...] = ()
    extra_html: str = ""


#: File stems of every chart the report can contain, in page order.
CHART_STEMS = (
    "per_task_accuracy",
    "icc_convergence",
    "budget_allocation",
    "dstudy",
    "pass_hat_k",
    "infra_by_resource_profile",
    "comparisons",
    "resource_sensitivity",
)


def _names(groups: Sequence[str], titles: Mapping[str, str]) -> str:
    return ", ".join(titles.get(g, g) for g in groups)


def _missing(have: pd.Series, groups: Sequence[str]) -> list[str]:
    present = set(have.astype(str))
    return [g for g in groups if g not in present]


def relabel(frame: pd.DataFrame, labels: Mapping[str, str]) -> pd.DataFrame:
    """``frame`` with its ``group`` column as strings, invalid groups relabelled."""
    if "group" not in frame.columns:
        return frame
    out = frame.copy()
    out["group"] = out["group"].astype(str).map(lambda g: labels.get(g, g))
    return out


def chart_sections(
    *,
    per_task: pd.DataFrame | None,
    convergence: pd.DataFrame | None,
    budget: pd.DataFrame | None,
    infra: pd.DataFrame | None,
    comparisons: pd.DataFrame | None,
    skipped_comparisons: Sequence[Mapping[str, Any]],
    dstudy: pd.DataFrame | None = None,
    pass_k: pd.DataFrame | None = None,
    pass_k_left_out: Mapping[str, str] | None = None,
    groups: Sequence[str],
    titles: Mapping[str, str],
    labels: Mapping[str, str],
    confidence: float,
) -> list[ChartSection]:
    """The page's chart sections; the tables as :class:`~evalnoise.report.inputs.ReportInputs`
    names them (``comparisons`` without the pairs of an invalid group, which are among
    ``skipped_comparisons``). ``groups``: every group name (record order); ``titles``:
    group → "agent @ profile"; ``labels``: group → chart label (invalid groups marked);
    ``pass_k``, ``pass_k_left_out``: :func:`~evalnoise.report.chart_tables.passk_table` of
    the groups' records (the section is drawn when some group has pass^k or is left out)."""
    level = f"{confidence:.0%}"
    out = []
    if per_task is not None:
        notes = []
        absent = _missing(per_task["group"], groups)
        if absent:
            notes.append(f"No per-question rows for {_names(absent, titles)}.")
        out.append(
            ChartSection(
                "per_task_accuracy",
                "Per-question accuracy",
                f"Each question's accuracy over its trials with a {level} Wilson interval, "
                "questions sorted by accuracy (paper Fig. 1). Wide intervals are trial-to-trial "
                "inconsistency that a single run hides.",
                specs.per_task_spec(relabel(per_task, labels), confidence=confidence),
                tuple(notes),
            )
        )
    if convergence is not None:
        tidy = tidy_convergence(convergence)
        named = list(dict.fromkeys([*groups, *in_order(convergence["group"])]))
        undefined = _missing(tidy["group"], named)
        notes = []
        if undefined:
            notes.append(
                f"ICC convergence undefined for {_names(undefined, titles)}: no subsample of "
                "trials gave a finite ICC (e.g. every trial scored the same, as when an agent "
                "answers every trial correctly or every trial fails), so there is no curve."
            )
        out.append(
            ChartSection(
                "icc_convergence",
                "ICC convergence over trials",
                "ICC recomputed on random subsamples of T trials per task: mean and "
                "5th–95th percentile band, for the ANOVA ICC(1,1) and the paper's plug-in "
                "estimator; dashed lines are the values on all trials (paper Fig. 2, 4, 5).",
                specs.convergence_spec(relabel(tidy, labels)) if len(tidy) else None,
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
            ChartSection(
                "budget_allocation",
                "Budget allocation",
                "Standard error of accuracy for each split of a fixed budget of runs into "
                "tasks × trials (paper eq. 9–10, Fig. 3); the diamond marks the recommended "
                "allocation.",
                specs.budget_spec(relabel(budget, labels)),
                tuple(notes),
            )
        )
    if dstudy is not None:
        out.append(
            ChartSection(
                "dstudy",
                "D study: the least SE a budget buys",
                "From each group's one model of the noise (section \u201cWhere the noise comes "
                "from\u201d): the total-error SE of the best split of a budget into tasks × "
                "trials per task, the time blocks and hosts as they ran, at ¼ to 8 × what "
                "the run cost (container-seconds); the label gives the split.",
                specs.dstudy_spec(dstudy),
            )
        )
    if (pass_k is not None and len(pass_k)) or pass_k_left_out:
        out.append(_passk_section(pass_k, pass_k_left_out or {}, titles, confidence))
    if infra is not None:
        out.append(
            ChartSection(
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
                specs.infra_spec(infra, confidence=confidence),
            )
        )
    if comparisons is not None or skipped_comparisons:
        out.append(_comparisons_section(comparisons, skipped_comparisons, confidence))
    return out


def _passk_section(
    pass_k: pd.DataFrame | None,
    left_out: Mapping[str, str],
    titles: Mapping[str, str],
    confidence: float,
) -> ChartSection:
    """pass^k against k, one line per group (:func:`~evalnoise.report.specs.passk_spec`);
    the groups left out named under it."""
    level = f"{confidence:.0%}"
    notes = [f"Left out: {titles.get(g, g)} ({why})." for g, why in left_out.items()]
    drawn = pass_k is not None and len(pass_k)
    return ChartSection(
        "pass_hat_k",
        "pass^k: how fast reliability decays",
        "pass^k is the chance that k trials of a task all succeed, for k = 1 to the "
        "trials per task (the unbiased per-task estimate C(c, k) / C(n, k), averaged "
        f"over tasks; band: the task-clustered {level} CI). pass^1 is the accuracy; a "
        "steep fall means the agent's successes do not repeat.",
        specs.passk_spec(pass_k, confidence=confidence) if drawn else None,
        tuple(notes),
    )


def _comparisons_section(
    comparisons: pd.DataFrame | None,
    skipped: Sequence[Mapping[str, Any]],
    confidence: float,
) -> ChartSection:
    """The paired comparisons' chart, with the pairs that could not be compared."""
    level = f"{confidence:.0%}"
    return ChartSection(
        "comparisons",
        "Paired comparisons",
        f"Paired differences in accuracy (a − b) on common tasks with {level} CIs; "
        "coloured by Holm-adjusted significance. An interval crossing zero is no "
        "evidence of a difference.",
        None if comparisons is None else specs.comparisons_spec(comparisons, confidence=confidence),
        () if comparisons is not None else ("No comparison could be made.",),
        skipped_comparisons_html(skipped),
    )


def chart_links(stem: str, png: bool) -> str:
    """The links under a chart: its standalone page, and its PNG where one is written."""
    links = f'<a href="{stem}.html">standalone chart</a>'
    if png:
        links += f' · <a href="{stem}.png">PNG</a>'
    return f'<p class="links">{links}</p>'


def chart_section_html(section: ChartSection, div: str | None, png: bool = True) -> str:
    """The ``<section>`` of one chart; ``div`` is the id of the element its chart is embedded
    in (None: the section has no chart, only its description and notes); ``png``: whether
    the chart's PNG is written beside it (linked)."""
    body = [f'<section id="{section.stem}">', f"<h2>{html.escape(section.title)}</h2>"]
    body.append(f"<p>{html.escape(section.description)}</p>")
    if div is not None:
        body += [
            f'<div id="{div}" class="chart" data-chart="{section.stem}"></div>',
            chart_links(section.stem, png),
        ]
    body += [f'<p class="notes">{html.escape(note)}</p>' for note in section.notes]
    if section.extra_html:
        body.append(section.extra_html)
    body.append("</section>")
    return "\n".join(body)
