"""build_report: the files, their links, determinism, and that nothing points off the machine."""

from __future__ import annotations

import json
import re
import shutil
from html.parser import HTMLParser

import pytest

from evalnoise.group_text import reporting_line
from evalnoise.report import CHART_STEMS, ReportInputs, build_report

EXTERNAL = re.compile(r"""\b(?:src|href)\s*=\s*["']?\s*(?:[a-z][a-z0-9+.-]*:)?//""", re.I)


class _Links(HTMLParser):
    """src/href attributes of the page's elements (script bodies are not markup)."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[tuple[str, str]] = []  # (tag, url)
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name in ("src", "href") and value is not None:
                self.links.append((tag, value))
            if name == "id" and value:
                self.ids.add(value)


def _links(text: str) -> _Links:
    parser = _Links()
    parser.feed(text)
    return parser


def test_files(built_report) -> None:
    out, files = built_report
    names = sorted(p.relative_to(out).as_posix() for p in files)
    expected = sorted(
        [f"{stem}.{ext}" for stem in CHART_STEMS for ext in ("html", "png")]
        + [
            "index.html",
            "cards.json",
            "cards/openai-gpt-5-nano-2025-08-07__1x.md",
            "cards/openai-gpt-5-nano-2025-08-07__1x.json",
            "cards/openai-gpt-5.4-mini-2026-03-17__1x.md",
            "cards/openai-gpt-5.4-mini-2026-03-17__1x.json",
        ]
    )
    assert names == expected
    assert sorted(p for p in out.rglob("*") if p.is_file()) == files  # nothing else


def test_pages_load_nothing_from_outside(built_report) -> None:
    _, files = built_report
    for page in (p for p in files if p.suffix == ".html"):
        text = page.read_text(encoding="utf-8")
        # no src/href to another host anywhere in the text, the inlined JavaScript included
        assert not EXTERNAL.search(text), page.name
        links = _links(text).links
        assert not [u for tag, u in links if tag == "script"], page.name
        assert not [
            u
            for _, u in links
            if re.match(r"^([a-z][a-z0-9+.-]*:|//)", u, re.I) and not u.startswith("data:")
        ], page.name
        assert "Content-Security-Policy" in text


def test_index_links_resolve(built_report) -> None:
    out, _ = built_report
    index = (out / "index.html").read_text(encoding="utf-8")
    parsed = _links(index)
    urls = [u for _, u in parsed.links]
    targets = {u for u in urls if not u.startswith(("#", "data:"))}
    assert {f"{stem}.html" for stem in CHART_STEMS} <= targets
    assert {f"{stem}.png" for stem in CHART_STEMS} <= targets
    for target in targets:
        assert (out / target).is_file(), target
    anchors = {u[1:] for u in urls if u.startswith("#")}
    assert len(anchors) >= len(CHART_STEMS) + 2
    assert anchors <= parsed.ids
    assert index.count('class="chart"') == len(CHART_STEMS)


def test_cards_and_index_carry_the_reporting_lines(built_report, example_inputs) -> None:
    out, _ = built_report
    cards = json.loads((out / "cards.json").read_text(encoding="utf-8"))["cards"]
    index = (out / "index.html").read_text(encoding="utf-8")
    assert len(cards) == 2
    for rec in example_inputs["groups"]:
        line = reporting_line(rec, 0.95)
        card = next(c for c in cards if c["agent"]["name"] == rec["group"])
        assert card["reporting_line"] == line
        assert card["resource_profile"]["name"] == "1x"
        # the synthetic infra row for (agent, 1x) reached the card
        assert card["infrastructure"]["infra_error_rate"] in (0.058, 0.04)
        assert card["trials"]["per_task_min"] == card["trials"]["per_task_max"] == 5
        assert line in index
        md = (out / "cards" / f"{_slug(rec['group'])}__1x.md").read_text(encoding="utf-8")
        assert line in md
    assert "as incorrect" in index and "docker" in index


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.")


def test_identical_inputs_give_identical_files(built_report, example_inputs, tmp_path) -> None:
    out, files = built_report
    again = build_report(tmp_path / "again", ReportInputs.of(**example_inputs))
    assert [p.relative_to(tmp_path / "again") for p in again] == [p.relative_to(out) for p in files]
    for a, b in zip(files, again, strict=True):
        assert a.read_bytes() == b.read_bytes(), a.name


def test_stale_outputs_are_removed(built_report, example_inputs, tmp_path) -> None:
    out, _ = built_report
    target = tmp_path / "report"
    shutil.copytree(out, target)
    (target / "notes.txt").write_text("mine", encoding="utf-8")
    only = {k: example_inputs[k] for k in ("groups", "card_context")}
    # records without pass^k (a table analysed before it existed): no chart at all
    only["groups"] = [{**g, "pass_k": None} for g in only["groups"]]
    files = build_report(target, ReportInputs.of(**only))
    names = sorted(p.relative_to(target).as_posix() for p in files)
    assert names == sorted(
        ["index.html", "cards.json"]
        + [f"cards/{_slug(g['group'])}__1x.{e}" for g in only["groups"] for e in ("md", "json")]
    )
    left = sorted(p.relative_to(target).as_posix() for p in target.rglob("*") if p.is_file())
    assert left == sorted([*names, "notes.txt"])  # files it does not own are kept
    index = (target / "index.html").read_text(encoding="utf-8")
    assert 'class="chart"' not in index


def test_manifest_summary_in_index(example_inputs, tmp_path) -> None:
    manifest = {
        "config_sha256": "ab" * 32,
        "git": {"commit": "c0ffee", "dirty": True},
        "run_seed": 11,
        "seed_rule": "rule",
        "started_at": "2026-01-01T00:00:00Z",
        "ended_at": "2026-01-01T01:00:00Z",
        "packages": {"evalnoise": "0.1.0", "numpy": "2.0"},
        "artifacts": [{"path": "results/a", "sha256": "0" * 64, "size": 1}],
    }
    only = {k: example_inputs[k] for k in ("groups", "card_context")}
    # records without pass^k (a table analysed before it existed): no chart at all
    only["groups"] = [{**g, "pass_k": None} for g in only["groups"]]
    build_report(tmp_path, ReportInputs.of(manifest=manifest, **only))
    index = (tmp_path / "index.html").read_text(encoding="utf-8")
    for text in ("ab" * 32, "c0ffee (uncommitted changes)", "2026-01-01T01:00:00Z", "numpy 2.0"):
        assert text in index


def test_two_records_for_one_card_are_refused(example_inputs, tmp_path) -> None:
    groups = [dict(g, agent="same") for g in example_inputs["groups"]]
    with pytest.raises(ValueError, match="two group records"):
        build_report(
            tmp_path, ReportInputs.of(groups=groups, card_context=example_inputs["card_context"])
        )


def test_per_level_records_reach_their_card(example_inputs, tmp_path) -> None:
    rec = example_inputs["groups"][0]
    levels = [dict(rec, level="hard"), dict(rec, level="easy")]
    build_report(
        tmp_path,
        ReportInputs.of(
            groups=example_inputs["groups"],
            card_context=example_inputs["card_context"],
            levels=levels,
        ),
    )
    card = json.loads(
        (tmp_path / "cards" / f"{_slug(rec['group'])}__1x.json").read_text(encoding="utf-8")
    )
    assert [r["level"] for r in card["task_complexity"]["per_level"]] == ["easy", "hard"]
    index = (tmp_path / "index.html").read_text(encoding="utf-8")
    acc = f"{100 * rec['mean']:.1f}% [{100 * rec['ci_low']:.1f}%, {100 * rec['ci_high']:.1f}%]"
    assert f"<tr><td>easy</td><td>{rec['n_tasks']}</td><td>{acc}</td>" in index
    with pytest.raises(ValueError, match="unknown agent/profile"):
        build_report(
            tmp_path,
            ReportInputs.of(
                groups=example_inputs["groups"],
                card_context=example_inputs["card_context"],
                levels=[dict(rec, level="x", agent="nobody")],
            ),
        )


def test_inputs_without_outcomes_show_them_as_unknown(built_report) -> None:
    """Group records older than outcome accounting: no banner, no struck numbers, and the
    outcome counts read "not recorded" rather than zeros."""
    out, _ = built_report
    index = (out / "index.html").read_text(encoding="utf-8")
    assert 'id="invalid-groups"' not in index and 'class="banner' not in index
    assert "<s " not in index and 'id="expected-failures"' not in index
    start = index.index('<section id="outcomes">')
    outcomes = index[start : index.index("</section>", start)]
    assert outcomes.count(">not recorded</td>") == 2
    assert outcomes.count("not assessed (outcomes not recorded)") == 2
    for card in json.loads((out / "cards.json").read_text(encoding="utf-8"))["cards"]:
        assert card["valid"] is None and card["outcomes"] is None


def test_a_report_without_pngs_is_the_report_less_its_pngs(built_report, example_inputs, tmp_path):
    """``report.png: false``: the same files but the PNGs, the same pages but for the links
    to them; the charts themselves are there."""
    out, files = built_report
    bare = tmp_path / "bare"
    written = build_report(bare, ReportInputs.of(**example_inputs), png=False)
    assert sorted(p for p in bare.rglob("*") if p.is_file()) == written
    assert [p.relative_to(bare) for p in written] == [
        p.relative_to(out) for p in files if p.suffix != ".png"
    ]
    index, full = (bare / "index.html").read_text(), (out / "index.html").read_text()
    assert not re.search(r'href="[^"]*\.png"', index)
    assert index.count('class="chart"') == len(CHART_STEMS)
    assert index == re.sub(r' · <a href="[a-z_]+\.png">PNG</a>', "", full)
    for stem in CHART_STEMS:
        assert (bare / f"{stem}.html").read_bytes() == (out / f"{stem}.html").read_bytes()
