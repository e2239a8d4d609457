"""Failures never read as scores: outcome counts, the "not a measurement" banner, skipped
comparisons, the machine section, and degenerate groups that must not stop the report."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from evalnoise.outcomes import OUTCOMES, outcome_line
from evalnoise.report import ReportInputs, _render, build_report, evaluation_card
from evalnoise.report.card_text import card_rows
from evalnoise.report.cards_markdown import card_markdown
from evalnoise.report.charts import infra_chart
from evalnoise.report.health import (
    NOT_A_MEASUREMENT_SUFFIX,
    OUTCOME_HEADERS,
    banner_text,
    expected_text,
    health_of,
    machine_of,
    outcomes_of,
    status_text,
)


class _RenderOnce:
    """vl_convert with ``vegalite_to_png`` remembered by its exact arguments (the spec as
    sorted JSON, scale, Vega-Lite version): the variants these tests build differ from the
    failure report in one chart or two, and the PNG rendering of the others was half of each
    build's time. Every PNG is vl_convert's own rendering of that spec; that rendering is
    deterministic is checked by test_failure_report_is_deterministic, which renders anew."""

    def __init__(self, module) -> None:
        self._module = module
        self._done: dict[tuple[str, object, object], bytes] = {}

    def __getattr__(self, name: str):
        return getattr(self._module, name)

    def vegalite_to_png(self, spec, scale=1, vl_version=None):
        key = (json.dumps(spec, sort_keys=True), scale, vl_version)
        if key not in self._done:
            self._done[key] = self._module.vegalite_to_png(spec, scale=scale, vl_version=vl_version)
        return self._done[key]


@pytest.fixture(scope="module", autouse=True)
def _png_once():
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_render, "vlc", _RenderOnce(_render.vlc))
        yield


# the groups of the ``failure_inputs`` fixture (conftest.py)
HEALTHY, CRASHY, ORACLE = "healthy-agent", "crashy-agent", "oracle-agent"
CRASHED_GROUP = f"{CRASHY}@3x"


def _record(inputs: dict, group: str) -> dict:
    return next(r for r in inputs["groups"] if r["group"] == group)


def _read(out: Path, name: str) -> str:
    return (out / name).read_text(encoding="utf-8")


def _section(index: str, section_id: str) -> str:
    start = index.index(f'<section id="{section_id}">')
    return index[start : index.index("</section>", start)]


def _article(index: str, stem: str) -> str:
    start = index.index('<article class="card')
    start = index.index(f'id="card-{stem}"', start)
    start = index.rindex("<article", 0, start)
    return index[start : index.index("</article>", start)]


# --- the helpers ---------------------------------------------------------------------------


def test_missing_outcomes_and_health_are_unknown() -> None:
    old = {"group": "g", "mean": 0.5}
    assert outcomes_of(old) is None
    health = health_of(old)
    assert health["valid"] is None and health["reasons"] == [] and not health["expected"]
    assert banner_text(health) is None and expected_text(health) is None
    assert status_text(health).startswith("not assessed")
    assert outcome_line(None) == "not recorded"


def test_partial_outcomes_and_text_flags() -> None:
    rec = {
        "outcomes": {"ok": 3, "crashed": 1, "no_answer": 0, "timeout": 0, "oom_killed": 0},
        "health": {"valid": "false", "expected": "False", "reasons": ["r"], "failure_rate": 0.25},
        "crash_signals": {"SIGILL": 1, "SIGSEGV": 0},
    }
    out = outcomes_of(rec)
    assert out["ok"] == 3 and out["infra_error"] is None and out["trials"] is None
    health = health_of(rec)
    assert health["valid"] is False and health["expected"] is False
    assert health["crash_signals"] == {"SIGILL": 1}  # zero counts dropped
    assert banner_text(health) == "Not a measurement of the agent: r"
    assert "? infra_error" in outcome_line(out) and outcome_line(out).startswith("? trials:")


def test_machine_of() -> None:
    assert machine_of(None) is None and machine_of({"host": {}}) is None
    m = machine_of({"machine": {"host": "h", "cpu_model": "", "llama_cpp": None}})
    assert m == {"host": "h", "cpu_model": None, "cgroup_version": None, "llama_cpp": None}


# --- cards ---------------------------------------------------------------------------------


def test_invalid_card_in_json_and_markdown(failure_inputs) -> None:
    rec = _record(failure_inputs, CRASHED_GROUP)
    card = evaluation_card(rec, failure_inputs["card_context"])
    json.dumps(card, allow_nan=False)
    assert card["valid"] is False
    assert card["health"]["reasons"][0] == "96 of 96 trials crashed (SIGSEGV)"
    assert card["health"]["crash_signals"] == {"SIGSEGV": 96}
    assert card["outcomes"]["crashed"] == 96 and card["outcomes"]["ok"] == 0
    assert card["outcomes"]["trials"] == 96
    assert card["limitations"][0].startswith("not a measurement of the agent: 96 of 96")
    md = card_markdown(card)
    lines = md.splitlines()
    # the banner is the first thing under the title
    assert lines[0] == "# Evaluation Card: crashy-agent @ 3x" and lines[1] == ""
    assert lines[2].startswith("> **Not a measurement of the agent:** 96 of 96 trials crashed")
    # the 0 % is struck, never a bare score
    assert f"```\n{card['reporting_line']}\n```" not in md
    assert f"~~`{card['reporting_line']}`~~ — **not a measurement of the agent**" in md
    assert "| Accuracy | ~~0.0% (95% CI" in md
    assert re.search(r"\| Accuracy \| 0\.0%", md) is None
    # the columns are the outcome table's, in its order
    assert "| " + " | ".join(OUTCOME_HEADERS[o] for o in OUTCOMES) + " |" in md
    assert _md_row({"crashed": 96}, 96, 96) in md
    assert "Crash signals: SIGSEGV × 96" in md
    rows = dict(card_rows(card))
    assert rows["Accuracy"].endswith("— not a measurement of the agent")
    assert rows["Health"].startswith("NOT A MEASUREMENT of the agent — 100.0%")


def test_healthy_card_has_no_banner(failure_inputs) -> None:
    card = evaluation_card(_record(failure_inputs, f"{HEALTHY}@3x"), failure_inputs["card_context"])
    assert card["valid"] is True and card["health"]["reasons"] == []
    md = card_markdown(card)
    assert "Not a measurement" not in md and "~~" not in md
    assert f"```\n{card['reporting_line']}\n```" in md
    assert _md_row({"ok": 94, "no_answer": 1, "timeout": 1}, 96, 97) in md
    assert dict(card_rows(card))["Health"].startswith("measurement — 2.1%")


def test_expected_failures_get_a_neutral_note(failure_inputs) -> None:
    card = evaluation_card(_record(failure_inputs, f"{HEALTHY}@1x"), failure_inputs["card_context"])
    assert card["valid"] is True and card["health"]["expected"] is True
    assert card["health"]["reasons"]  # what happened is still said
    md = card_markdown(card)
    assert "> **Note:** Failures declared as the experiment (health.expected_failures): 60" in md
    assert "Not a measurement" not in md and "~~" not in md
    assert card["limitations"][0].startswith(
        "failures declared as the experiment (health.expected_failures)"
    )


def test_old_records_show_outcomes_as_not_recorded(example_inputs) -> None:
    rec = example_inputs["groups"][0]
    card = evaluation_card(rec, example_inputs["card_context"])
    assert card["valid"] is None and card["outcomes"] is None and card["machine"] is None
    md = card_markdown(card)
    assert "Outcome counts not recorded" in md and "Not a measurement" not in md
    assert dict(card_rows(card))["Health"] == "not assessed (outcomes not recorded)"


def test_invalid_level_is_marked_on_a_valid_card(failure_inputs) -> None:
    rec = _record(failure_inputs, f"{HEALTHY}@3x")
    bad = {**rec, "level": "3", "health": {"valid": False, "reasons": ["all timed out"]}}
    card = evaluation_card(rec, failure_inputs["card_context"], levels=[bad])
    assert card["task_complexity"]["per_level"][0]["valid"] is False
    assert "level 3: not a measurement of the agent: all timed out" in card["limitations"]
    assert "~~50.0% [" in card_markdown(card)


# --- index.html ----------------------------------------------------------------------------


def test_index_banner_lists_every_invalid_group(failure_report) -> None:
    out, _ = failure_report
    index = _read(out, "index.html")
    body = index[index.index("<body>") :]
    banner_at = body.index('<div class="banner invalid" id="invalid-groups"')
    # at the top: right under the title, before the navigation and the summary
    assert body.index("</h1>") < banner_at < body.index("<nav>")
    banner = body[banner_at : body.index("</div>", banner_at)]
    assert "Not a measurement of the agent" in banner
    assert '<a href="#card-crashy-agent__3x">crashy-agent @ 3x</a>: 96 of 96 trials crashed' in (
        banner
    )
    assert "SIGSEGV" in banner and 'href="#machine"' in banner
    assert HEALTHY not in banner and ORACLE not in banner
    note_at = body.index('<div class="note expected" id="expected-failures"')
    note = body[note_at : body.index("</div>", note_at)]
    assert "health.expected_failures" in note and "healthy-agent @ 1x" in note
    assert "banner" not in note and CRASHY not in note


def test_index_cards_banner_and_marked_accuracy(failure_report, failure_inputs) -> None:
    out, _ = failure_report
    index = _read(out, "index.html")
    crashed = _article(index, "crashy-agent__3x")
    assert 'class="card invalid"' in crashed and 'data-valid="false"' in crashed
    # the banner comes straight after the title
    after_title = crashed[crashed.index("</h3>") + len("</h3>") :].lstrip()
    assert after_title.startswith('<div class="banner invalid card-banner" role="alert">')
    assert "<strong>Not a measurement of the agent:</strong> 96 of 96 trials crashed" in crashed
    assert '<td class="not-measurement"><s class="nm">0.0% (95% CI' in crashed
    assert "not a measurement of the agent</span>" in crashed
    assert '<pre class="line">' not in crashed
    for stem in ("healthy-agent__3x", "oracle-agent__3x", "healthy-agent__1x"):
        card = _article(index, stem)
        assert "banner" not in card and "<s " not in card and 'data-valid="true"' in card
    assert '<div class="note expected" role="note">' in _article(index, "healthy-agent__1x")
    # the summary strikes the crashed group's reporting line
    summary = _section(index, "summary")
    line = evaluation_card(_record(failure_inputs, CRASHED_GROUP), failure_inputs["card_context"])[
        "reporting_line"
    ]
    assert f'<s class="nm"><code>{line}</code></s>' in summary.replace("&#x27;", "'")
    assert summary.count('<tr class="invalid">') == 1


def test_index_outcome_table(failure_report) -> None:
    out, _ = failure_report
    section = _section(_read(out, "index.html"), "outcomes")
    head = re.findall(r"<th[^>]*>([^<]*)</th>", section)
    assert head == [
        "agent @ resource profile",
        "status",
        *(OUTCOME_HEADERS[o] for o in OUTCOMES),
        "trials",
        "attempts",
    ]
    rows = re.findall(r"<tr( class=\"invalid\")?><td><a [^>]*>([^<]*)</a></td>(.*?)</tr>", section)
    got = {
        name: (bool(inv), re.findall(r"<td[^>]*>([^<]*)</td>", rest)) for inv, name, rest in rows
    }
    assert got["crashy-agent @ 3x"] == (
        True,
        ["NOT A MEASUREMENT of the agent (100.0% failed)", *_cells({"crashed": 96}, 96, 96)],
    )
    assert got["healthy-agent @ 3x"] == (
        False,
        ["measurement (2.1% failed)", *_cells({"ok": 94, "no_answer": 1, "timeout": 1}, 96, 97)],
    )
    assert got["oracle-agent @ 3x"][1][1:] == _cells({"ok": 96}, 96, 96)
    assert got["healthy-agent @ 1x"][1][0].startswith("failures declared as the experiment")


def test_cards_json_and_files_carry_health(failure_report) -> None:
    out, _ = failure_report
    cards = {
        c["agent"]["name"] + "@" + c["resource_profile"]["name"]: c
        for c in json.loads(_read(out, "cards.json"))["cards"]
    }
    assert cards[CRASHED_GROUP]["valid"] is False
    assert [c["valid"] for k, c in sorted(cards.items()) if k != CRASHED_GROUP] == [True] * 3
    on_disk = json.loads(_read(out, "cards/crashy-agent__3x.json"))
    assert on_disk["valid"] is False and on_disk["health"]["reasons"]
    md = _read(out, "cards/crashy-agent__3x.md")
    assert md.splitlines()[2].startswith("> **Not a measurement of the agent:**")
    assert "Not a measurement" not in _read(out, "cards/healthy-agent__3x.md")


def test_skipped_comparisons_are_listed_with_the_reason(failure_report) -> None:
    out, _ = failure_report
    section = _section(_read(out, "index.html"), "comparisons")
    assert 'class="chart"' in section  # the valid pair is still drawn
    assert "Comparisons left out (1)" in section
    assert (
        "<tr><td>agents</td><td>3x</td><td>crashy-agent@3x</td><td>healthy-agent@3x</td>"
        "<td>crashy-agent@3x is not a measurement of the agent</td></tr>"
    ) in section
    spec = _read(out, "comparisons.html")
    assert CRASHY not in spec


def test_comparisons_with_an_invalid_group_are_moved_to_skipped(failure_inputs, tmp_path) -> None:
    """Comparisons from an older pipeline that still pair an invalid group are not drawn."""
    inputs = dict(failure_inputs)
    pairs = list(inputs["comparisons"]["comparisons"])
    bad = {**pairs[0], "a": CRASHED_GROUP, "b": f"{HEALTHY}@3x", "kind": "agents"}
    inputs["comparisons"] = pd.DataFrame([*pairs, bad])
    build_report(tmp_path, ReportInputs.of(**inputs))
    section = _section(_read(tmp_path, "index.html"), "comparisons")
    assert "Comparisons left out (1)" in section
    assert "crashy-agent@3x is not a measurement of the agent" in section
    assert CRASHY not in _read(tmp_path, "comparisons.html")


def test_only_skipped_comparisons(failure_inputs, tmp_path) -> None:
    inputs = dict(failure_inputs, comparisons=None)
    skipped = failure_inputs["comparisons"]["skipped"]
    files = build_report(tmp_path, ReportInputs.of(skipped_comparisons=skipped, **inputs))
    assert not any(p.name.startswith("comparisons.") for p in files)
    section = _section(_read(tmp_path, "index.html"), "comparisons")
    assert 'class="chart"' not in section and "No comparison could be made." in section
    assert "crashy-agent@3x is not a measurement of the agent" in section


def test_machine_section(failure_report, failure_inputs) -> None:
    out, _ = failure_report
    index = _read(out, "index.html")
    run = _section(index, "run")
    machine = run[run.index('<h3 id="machine">') :]
    for text in (
        "<th>CPU model</th><td>Intel(R) Xeon(R) Platinum 8480+</td>",
        "<th>cgroup version</th><td>v2</td>",
        "<th>llama.cpp runtime</th><td>llama-cpp-python 0.3.36 (wheel 0.3.36-0123456789ab)</td>",
        "<th>llama.cpp declared CPU baseline</th><td>x86-64-v3 (SSE4.2, AVX, AVX2",
        "<th>llama.cpp CPU features</th><td>CPU : SSE3 = 1 | SSSE3 = 1 | AVX = 1",
    ):
        assert text in machine, text
    card = json.loads(_read(out, "cards/healthy-agent__3x.json"))
    assert card["machine"] == failure_inputs["manifest"]["machine"]
    md = _read(out, "cards/healthy-agent__3x.md")
    assert "| Machine | host bench-01; CPU Intel(R) Xeon(R) Platinum 8480+; cgroup v2; " in md
    assert "CPU features: CPU : SSE3 = 1 \\| SSSE3" in md  # pipes escaped in the table
    assert "<th>Machine</th><td>host bench-01; CPU Intel(R) Xeon(R)" in _article(
        index, "healthy-agent__3x"
    )


@pytest.mark.parametrize(
    "manifest,expected",
    [
        (None, "<th>machine</th><td>not recorded</td>"),
        ({"run_seed": 1}, "<th>machine</th><td>not recorded</td>"),
        (
            {"machine": {"host": "h", "cpu_model": "c", "cgroup_version": "v1", "llama_cpp": None}},
            "<th>llama.cpp runtime</th><td>none recorded</td>",
        ),
    ],
)
def test_machine_section_without_a_record(failure_inputs, tmp_path, manifest, expected) -> None:
    inputs = {k: failure_inputs[k] for k in ("groups", "card_context")}
    build_report(tmp_path, ReportInputs.of(manifest=manifest, **inputs))
    index = _read(tmp_path, "index.html")
    assert expected in index
    if manifest is None or "machine" not in manifest:
        assert "<th>Machine</th>" not in index  # no machine row on the cards


# --- charts --------------------------------------------------------------------------------


def test_invalid_groups_are_labelled_in_charts(failure_report) -> None:
    out, _ = failure_report
    per_task = _read(out, "per_task_accuracy.html")
    assert CRASHED_GROUP + NOT_A_MEASUREMENT_SUFFIX in per_task
    assert f"{HEALTHY}@3x{NOT_A_MEASUREMENT_SUFFIX}" not in per_task
    infra = _read(out, "infra_by_resource_profile.html")
    assert "not a measurement of the agent" in infra


def test_infra_chart_marks_invalid_rows(failure_inputs) -> None:
    spec = infra_chart(failure_inputs["infra"]).to_dict()
    text = json.dumps(spec)
    assert '"shape"' in text and '"strokeDash"' in text
    data = next(iter(spec["datasets"].values()))
    status = {(r["agent"], r["resource_profile"]): r["measurement"] for r in data}
    assert status[(CRASHY, "3x")] == "not a measurement of the agent"
    assert status[(HEALTHY, "3x")] == status[(HEALTHY, "1x")] == "measurement"
    # without the column nothing changes
    plain = infra_chart(failure_inputs["infra"].drop(columns="valid")).to_dict()
    assert '"shape"' not in json.dumps(plain)


# --- degenerate groups never stop the report ---------------------------------------------


def test_all_correct_and_all_wrong_groups(failure_report, failure_inputs) -> None:
    out, _ = failure_report
    index = _read(out, "index.html")
    conv = _section(index, "icc_convergence")
    assert 'class="chart"' in conv
    assert "ICC convergence undefined for crashy-agent @ 3x, oracle-agent @ 3x" in conv
    budget = _section(index, "budget_allocation")
    assert "Budget allocation undefined for crashy-agent @ 3x, oracle-agent @ 3x" in budget
    oracle = json.loads(_read(out, "cards/oracle-agent__3x.json"))
    assert oracle["metrics"]["accuracy"] == 1.0 and oracle["metrics"]["icc"] is None
    # undefined is not "did not settle"
    assert not any("had not settled" in x for x in oracle["limitations"])
    assert any("ICC undefined" in x for x in oracle["limitations"])


def test_group_without_convergence_rows(failure_inputs, tmp_path) -> None:
    inputs = dict(failure_inputs)
    conv = inputs["convergence"]
    inputs["convergence"] = conv[conv["group"] != f"{HEALTHY}@1x"]
    build_report(tmp_path, ReportInputs.of(**inputs))
    section = _section(_read(tmp_path, "index.html"), "icc_convergence")
    assert "ICC convergence undefined for crashy-agent @ 3x, healthy-agent @ 1x, oracle" in section
    assert 'class="chart"' in section


def test_no_group_has_a_finite_icc(failure_inputs, tmp_path) -> None:
    """Every convergence row NaN (e.g. every agent answered every trial correctly): the
    chart is left out with a note, not an error."""
    inputs = dict(failure_inputs)
    conv = inputs["convergence"]
    inputs["convergence"] = conv[conv["group"].isin([CRASHED_GROUP, f"{ORACLE}@3x"])]
    files = build_report(tmp_path, ReportInputs.of(**inputs))
    assert not any(p.name.startswith("icc_convergence.") for p in files)
    section = _section(_read(tmp_path, "index.html"), "icc_convergence")
    assert 'class="chart"' not in section and "standalone chart" not in section
    assert "ICC convergence undefined for" in section
    for name in ("healthy-agent @ 1x", "healthy-agent @ 3x", "crashy-agent @ 3x"):
        assert name in section


def test_group_without_budget_or_per_task_rows(failure_inputs, tmp_path) -> None:
    inputs = dict(failure_inputs)
    inputs["budget"] = inputs["budget"][inputs["budget"]["group"] == f"{HEALTHY}@3x"]
    inputs["per_task"] = inputs["per_task"][inputs["per_task"]["group"] != f"{HEALTHY}@1x"]
    build_report(tmp_path, ReportInputs.of(**inputs))
    index = _read(tmp_path, "index.html")
    assert "Budget allocation undefined for crashy-agent @ 3x, healthy-agent @ 1x, oracle" in (
        _section(index, "budget_allocation")
    )
    assert "No per-question rows for healthy-agent @ 1x." in _section(index, "per_task_accuracy")
    card = json.loads(_read(tmp_path, "cards/healthy-agent__1x.json"))
    assert card["trials"]["per_task_min"] is None  # mean stands in


def test_budget_rows_with_undefined_se_are_dropped(failure_inputs, tmp_path) -> None:
    inputs = dict(failure_inputs)
    bad = pd.DataFrame({"group": [CRASHED_GROUP] * 2, "n_tasks": [1, 2], "trials": [8, 4]})
    bad["se"] = float("nan")
    inputs["budget"] = pd.concat([inputs["budget"], bad], ignore_index=True)
    build_report(tmp_path, ReportInputs.of(**inputs))
    assert CRASHY not in _read(tmp_path, "budget_allocation.html")


def test_only_degenerate_groups(failure_inputs, tmp_path) -> None:
    """A run whose every group is all-correct or all-crashed: no convergence, no budget,
    no comparisons; the report still builds with the banner and the notes."""
    keep = {CRASHED_GROUP, f"{ORACLE}@3x"}
    groups = [g for g in failure_inputs["groups"] if g["group"] in keep]
    conv = failure_inputs["convergence"]
    per_task = failure_inputs["per_task"]
    files = build_report(
        tmp_path,
        ReportInputs.of(
            groups=groups,
            card_context=failure_inputs["card_context"],
            per_task=per_task[per_task["group"].isin(keep)],
            convergence=conv[conv["group"].isin(keep)],
            budget=pd.DataFrame(columns=["group", "n_tasks", "trials", "se"]),
            comparisons={"comparisons": [], "skipped": failure_inputs["comparisons"]["skipped"]},
            manifest=failure_inputs["manifest"],
        ),
    )
    names = {p.name for p in files}
    assert "per_task_accuracy.html" in names and "icc_convergence.html" not in names
    index = _read(tmp_path, "index.html")
    assert 'id="invalid-groups"' in index and "Comparisons left out (1)" in index


def test_failure_report_is_deterministic(
    failure_report, failure_inputs, tmp_path, monkeypatch
) -> None:
    out, files = failure_report
    monkeypatch.setattr(_render, "vlc", _render.vlc._module)  # every PNG rendered again
    again = build_report(tmp_path, ReportInputs.of(**failure_inputs))
    assert [p.relative_to(tmp_path) for p in again] == [p.relative_to(out) for p in files]
    for a, b in zip(files, again, strict=True):
        assert a.read_bytes() == b.read_bytes(), a.name


def test_failure_report_anchors_resolve(failure_report) -> None:
    out, _ = failure_report
    index = _read(out, "index.html")
    ids = set(re.findall(r'\bid="([^"]+)"', index))
    anchors = set(re.findall(r'href="#([^"]+)"', index))
    assert {"machine", "outcomes", "card-crashy-agent__3x"} <= anchors
    assert anchors <= ids


def test_invalid_group_without_statistics(failure_inputs, tmp_path) -> None:
    """A crashed group of which no trial counted (e.g. infra policy "exclude") may come
    without statistics: its card says so instead of refusing to build."""
    stats = ("mean", "ci_low", "ci_high", "se_clustered", "icc", "icc_ci_low", "icc_ci_high")
    rec = {k: v for k, v in _record(failure_inputs, CRASHED_GROUP).items() if k not in stats}
    rec.update(n_tasks=0, n_obs=0, interpretation="undefined")
    groups = [rec, _record(failure_inputs, f"{HEALTHY}@3x")]
    build_report(
        tmp_path, ReportInputs.of(groups=groups, card_context=failure_inputs["card_context"])
    )
    card = json.loads(_read(tmp_path, "cards/crashy-agent__3x.json"))
    assert card["valid"] is False and card["metrics"]["accuracy"] is None
    assert card["reporting_line"].startswith("— ± —")
    md = _read(tmp_path, "cards/crashy-agent__3x.md")
    assert "| Accuracy | ~~— (95% CI [—, —]" in md
    # a valid record without statistics is still refused
    with pytest.raises(ValueError, match="lacks keys"):
        evaluation_card({**rec, "health": {"valid": True}}, failure_inputs["card_context"])


def _cells(counts: dict[str, int], trials: int, attempts: int) -> list[str]:
    """An outcome row's cells in the outcome table's order: every outcome, zeros included."""
    return [str(counts.get(o, 0)) for o in OUTCOMES] + [str(trials), str(attempts)]


def _md_row(counts: dict[str, int], trials: int, attempts: int) -> str:
    return "| " + " | ".join(_cells(counts, trials, attempts)) + " |"
