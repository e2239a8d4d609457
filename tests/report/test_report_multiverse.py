"""The report's section "How far the analysis moves the headline": one table per group from the
group record's ``multiverse`` — every cell a row, only the varied factors as columns, the
reference cell marked, the summary's line above it — and the infra policy's accuracies shown
there and not restated in the attribution section or on the card."""

from __future__ import annotations

import html
import re
from types import SimpleNamespace

import pandas as pd
import pytest
from conftest import MINI, attribution_trials

from evalnoise.analysis import analyze_frame
from evalnoise.consistency import reliability_fields
from evalnoise.consistency_text import multiverse_line
from evalnoise.formatting import pct
from evalnoise.report import ReportInputs, build_report
from evalnoise.report.multiverse_section import (
    FACTOR_HEADERS,
    REFERENCE_MARK,
    multiverse_rows,
    multiverse_section,
)

STEM = "openai-gpt-5.4-mini-2026-03-17__1x"


def rows(html_table: str) -> list[list[str]]:
    """The text of every cell, row by row."""
    out = []
    for tr in re.findall(r"<tr[^>]*>(.*?)</tr>", html_table, re.S):
        cells = re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", tr, re.S)
        out.append([html.unescape(re.sub(r"<[^>]+>", "", c)).strip() for c in cells])
    return out


def between(text: str, start: str, end: str) -> str:
    i = text.index(start)
    return text[i : text.index(end, i)]


def group_table(index: str, stem: str) -> str:
    """A group's part of the section: from its heading to the end of its table or note."""
    start = index.index(f'<h3 id="multiverse-{stem}">')
    end = min(i for i in (index.find("<h3 ", start + 1), index.find("</section>", start)) if i > 0)
    return index[start:end]


@pytest.fixture(scope="module")
def mini_run(example_inputs, synthetic_attribution, tmp_path_factory):
    """A report of one group, MINI @ 1x of the synthetic attribution run (infra outcomes and
    retries: the infra policy varies), its record and multiverse as the pipeline writes them
    (the counted trials under "as incorrect", the attempts for the multiverse), beside the
    attribution tables of the same trials."""
    trials = attribution_trials()
    attempts = trials[(trials["agent"] == MINI) & (trials["resource_profile"] == "1x")]
    first = attempts[attempts["attempt"].fillna(1) == 1]
    counted = pd.DataFrame(
        {
            "group": f"{MINI}@1x",
            "task": first["task_id"],
            "trial": first["trial"],
            "score": first["score"].where(first["status"] == "ok", 0.0),
        }
    )
    record = analyze_frame(counted)[0] | {"agent": MINI, "resource_profile": "1x"}
    record["multiverse"] = reliability_fields(counted, attempts)["multiverse"]
    out = tmp_path_factory.mktemp("multiverse")
    build_report(
        out,
        ReportInputs.of(
            groups=[record],
            card_context=example_inputs["card_context"],
            attribution=synthetic_attribution,
        ),
    )
    return out, record, (out / "index.html").read_text(encoding="utf-8")


def test_every_cell_is_a_row_with_only_the_varied_factors(mini_run) -> None:
    _, record, index = mini_run
    m = record["multiverse"]
    assert m["factors"] == ["estimand", "infra_policy", "cluster_se"]  # what this run varies
    table = rows(group_table(index, STEM))
    assert table[0] == [
        "estimand",
        "infra policy",
        "cluster SE",
        "accuracy",
        "95% CI",
        "trials counted",
        "tasks",
        "",
    ]
    assert FACTOR_HEADERS["judge"] not in table[0]
    assert FACTOR_HEADERS["verdict_after_failure"] not in table[0]
    body = table[1:]
    assert len(body) == len(m["cells"]) == m["n_cells"] == 12
    for row, cell in zip(body, m["cells"], strict=True):
        assert row[:3] == [cell[f].replace("_", " ") for f in m["factors"]]
        assert row[3] == pct(cell["mean"])
        assert row[4] == f"[{pct(cell['ci_low'])}, {pct(cell['ci_high'])}]"
        assert row[5:7] == [str(cell["n_trials"]), str(cell["n_tasks"])]
    # every combination of the varied levels once
    combos = {tuple(r[:3]) for r in body}
    assert len(combos) == 2 * 3 * 2
    # the reference cell, and only it, is marked; its accuracy is the headline
    marked = [r for r in body if r[-1] == REFERENCE_MARK]
    assert len(marked) == 1 and marked[0][:3] == ["task means", "as incorrect", "cr1"]
    assert marked[0][3] == pct(m["headline"]) == pct(record["mean"])
    assert index.count('<tr class="reference">') == 1


def test_the_line_above_is_the_summarys_and_the_notes_below(mini_run) -> None:
    _, record, index = mini_run
    part = group_table(index, STEM)
    line = multiverse_line(SimpleNamespace(**record["multiverse"]))
    assert f'<p class="line">{html.escape(line)}</p>' in part
    assert "the analysis choices move the headline by" in line and "moves it most" in line
    for note in record["multiverse"]["notes"]:
        assert f"<li>{html.escape(note)}</li>" in part
    assert '<a href="#multiverse">How far the analysis moves the headline</a>' in index


def test_the_policy_accuracies_are_the_tables_column_and_not_restated(
    mini_run, synthetic_attribution
) -> None:
    out, _, index = mini_run
    table = rows(group_table(index, STEM))[1:]
    policies = synthetic_attribution.summary[f"{MINI}@1x"]["policy"]
    assert [p["policy"] for p in policies] == ["as_incorrect", "exclude", "retry"]
    attribution = between(index, '<section id="attribution">', "</section>")
    policy_part = between(attribution, '<h3 id="policy-sensitivity">', '<h3 id="resource')
    md = (out / "cards" / f"{STEM}.md").read_text(encoding="utf-8")
    card_line = next(x for x in md.splitlines() if x.startswith("| Infra policy sensitivity |"))
    for p in policies:
        accuracy = pct(p["mean"])
        # the attribution's number under this policy is the multiverse's cell under it
        row = next(
            r for r in table if r[:3] == ["task means", p["policy"].replace("_", " "), "cr1"]
        )
        assert row[3] == accuracy and row[4] == f"[{pct(p['ci_low'])}, {pct(p['ci_high'])}]"
        # and nowhere else: not in the attribution section's part, not on the card's row
        assert accuracy not in policy_part and accuracy not in card_line
    assert f'href="#multiverse-{STEM}"' in policy_part
    assert "the choice moves the result: YES" in card_line and "multiverse table" in card_line


def test_a_withheld_group_says_why_in_one_line() -> None:
    m = {
        "factors": ["estimand", "cluster_se"],
        "reference": {"estimand": "task_means", "cluster_se": "cr1"},
        "cells": [
            {"estimand": e, "cluster_se": s, "mean": 0.5, "ci_low": 0.4, "ci_high": 0.6,
             "n_trials": 8, "n_tasks": 4}
            for e in ("task_means", "pooled") for s in ("cr1", "miller")
        ],
        "headline": 0.5, "low": 0.5, "high": 0.5, "spread": 0.0, "n_cells": 4,
        "influence": {"estimand": 0.0, "cluster_se": 0.0}, "most_influential": None,
        "notes": [],
    }  # fmt: skip
    ok = {"agent": {"name": "ok-agent"}, "resource_profile": {"name": "3x"}, "metrics": {}}
    ok["metrics"]["multiverse"] = m
    crashed = {
        "agent": {"name": "crashy-agent"},
        "resource_profile": {"name": "3x"},
        "valid": False,
        "metrics": {"accuracy_withheld": "96 of 96 trials crashed", "multiverse": None},
    }
    text = multiverse_section([("ok", ok), ("crashy", crashed)], 0.95)
    part = group_table(text, "crashy")
    assert "<table" not in part
    assert re.findall(r"<p[^>]*>(.*?)</p>", part) == ["No multiverse: 96 of 96 trials crashed."]
    ok_rows = rows(group_table(text, "ok"))
    assert ok_rows[0][:2] == ["estimand", "cluster SE"] and len(ok_rows) == 5
    assert "no choice moves it" in group_table(text, "ok")
    _, body = multiverse_rows(m, 0.95)
    assert [is_ref for _, is_ref in body] == [True, False, False, False]
    # no card with a multiverse: no section (and no link to it)
    assert multiverse_section([("crashy", crashed)], 0.95) == ""


def test_the_example_report_has_one_table_per_card(built_report, example_inputs) -> None:
    out, _ = built_report
    index = (out / "index.html").read_text(encoding="utf-8")
    section = between(index, '<section id="multiverse">', "</section>")
    assert section.count('<table class="multiverse">') == len(example_inputs["groups"])
    for part in section.split('<h3 id="multiverse-')[1:]:
        body = rows(part)[1:]
        assert len(body) == 4  # estimand × cluster SE: every trial of the example ran
        assert sum(r[-1] == REFERENCE_MARK for r in body) == 1
