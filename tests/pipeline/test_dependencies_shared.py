"""The areas' module sets come from one import graph shared by every area
(evalnoise.pipeline.import_graph.graph): each module is parsed and scanned once per process,
and every area's set is exactly what walking that area alone, from nothing, gives."""

from __future__ import annotations

import pytest

from evalnoise.pipeline import dependencies, import_graph
from evalnoise.pipeline.dependencies import ROOT, all_area_modules, area_modules, areas

AREAS = sorted(area for area, scripts in areas().items() if scripts)


def _alone(area: str, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The area derived as before the graph was shared: a walk of its own, from nothing."""
    monkeypatch.setattr(import_graph, "_GRAPHS", {})
    return area_modules(area)


def test_the_shared_walk_gives_every_area_its_own_walks_set(monkeypatch):
    alone = {area: _alone(area, monkeypatch) for area in AREAS}
    monkeypatch.setattr(import_graph, "_GRAPHS", {})
    shared = all_area_modules()
    assert shared == alone
    assert set(shared) == set(AREAS)
    assert all(shared[area] for area in AREAS)
    # the order the areas are walked in does not matter either
    monkeypatch.setattr(import_graph, "_GRAPHS", {})
    assert {area: area_modules(area) for area in reversed(AREAS)} == alone


def test_the_graph_is_walked_once_for_all_areas(monkeypatch):
    monkeypatch.setattr(import_graph, "_GRAPHS", {})
    all_area_modules()
    graph = import_graph.graph(ROOT / "src")
    expanded, parsed = dict(graph.edges), dict(graph.sources)
    for area in AREAS:
        area_modules(area)
    assert import_graph.graph(ROOT / "src") is graph
    assert graph.edges == expanded  # every node the areas reach was expanded already
    assert graph.sources == parsed
    # each area alone expands part of the graph; together they would expand more, not less
    sizes = []
    for area in AREAS:
        monkeypatch.setattr(import_graph, "_GRAPHS", {})
        area_modules(area)
        sizes.append(len(import_graph.graph(ROOT / "src").edges))
    assert max(sizes) <= len(expanded) < sum(sizes)


def test_an_edited_module_starts_a_new_graph(tmp_path, monkeypatch):
    package = tmp_path / "src" / "evalnoise"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "a.py").write_text("VALUE = 1\n", encoding="utf-8")
    (package / "b.py").write_text("", encoding="utf-8")
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "s.py").write_text("from evalnoise import a\n", encoding="utf-8")
    monkeypatch.setattr(import_graph, "_GRAPHS", {})
    assert dependencies.imported_modules(["scripts/s.py"], tmp_path) == [
        "src/evalnoise/__init__.py",
        "src/evalnoise/a.py",
    ]
    first = import_graph.graph(tmp_path / "src")
    (package / "a.py").write_text("from evalnoise import b\n\nVALUE = b\n", encoding="utf-8")
    assert dependencies.imported_modules(["scripts/s.py"], tmp_path) == [
        "src/evalnoise/__init__.py",
        "src/evalnoise/a.py",
        "src/evalnoise/b.py",
    ]
    assert import_graph.graph(tmp_path / "src") is not first
