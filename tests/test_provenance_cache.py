"""code_version's derived module sets are kept on disk (.snakemake/evalnoise/) keyed by the
bytes of every file the derivation reads: a warm cache gives exactly the digests a cold
derivation gives, and any edit makes the cache unused, never stale."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from evalnoise import provenance
from evalnoise.pipeline import dependencies, import_graph

ROOT = dependencies.ROOT


def _copy_checkout(tmp_path: Path) -> Path:
    """What the derivation reads (package, scripts, workflow files), copied."""
    root = tmp_path / "checkout"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for rel in ("src/evalnoise", "scripts", "rules"):
        shutil.copytree(ROOT / rel, root / rel, ignore=ignore)
    shutil.copy2(ROOT / "Snakefile", root / "Snakefile")
    return root


def _new_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """Forget what this process derived (as a new Snakemake process starts)."""
    monkeypatch.setattr(provenance, "_DERIVED", {})
    monkeypatch.setattr(import_graph, "_GRAPHS", {})


@pytest.fixture
def checkout(tmp_path, monkeypatch) -> Path:
    root = _copy_checkout(tmp_path)
    monkeypatch.setattr(dependencies, "ROOT", root)
    _new_process(monkeypatch)
    return root


def _areas(root: Path) -> list[str]:
    return sorted(area for area, scripts in dependencies.areas(root).items() if scripts)


def test_a_warm_cache_gives_the_cold_digests(checkout, monkeypatch):
    cache = checkout / provenance.CACHE
    assert not cache.exists()
    cold = {area: provenance.code_version(area) for area in _areas(checkout)}
    stored = json.loads(cache.read_text(encoding="utf-8"))
    assert stored["key"] == provenance._inputs_digest(checkout)
    assert stored["areas"] == dependencies.all_area_modules(checkout)

    _new_process(monkeypatch)

    def no_derivation(*args, **kwargs):
        raise AssertionError("derived although the cache holds this state")

    with monkeypatch.context() as patch:
        patch.setattr(dependencies, "area_modules", no_derivation)
        patch.setattr(dependencies, "all_area_modules", no_derivation)
        warm = {area: provenance.code_version(area) for area in _areas(checkout)}
    assert warm == cold


def test_any_edit_makes_the_cache_unused(checkout, monkeypatch):
    before = {area: provenance.code_version(area) for area in _areas(checkout)}
    key = provenance._inputs_digest(checkout)
    # an edit that changes what `analysis` reaches (a new module, imported where it runs)
    (checkout / "src/evalnoise/brand_new.py").write_text("VALUE = 1\n", encoding="utf-8")
    stages = checkout / "src/evalnoise/pipeline/stages.py"
    stages.write_text(
        stages.read_text(encoding="utf-8")
        + "\n\ndef _uses_new():\n    from evalnoise.brand_new import VALUE\n\n    return VALUE\n"
        + "\n\nCALLED = _uses_new()\n",
        encoding="utf-8",
    )
    _new_process(monkeypatch)
    assert provenance._inputs_digest(checkout) != key
    assert "src/evalnoise/brand_new.py" in provenance.area_files("analysis")
    assert provenance.code_version("analysis") != before["analysis"]
    stored = json.loads((checkout / provenance.CACHE).read_text(encoding="utf-8"))
    assert stored["key"] == provenance._inputs_digest(checkout)
    assert "src/evalnoise/brand_new.py" in stored["areas"]["analysis"]
    # a rule file and a script count as well
    for rel in ("rules/analysis.smk", "scripts/analyze_group.py"):
        key = provenance._inputs_digest(checkout)
        with open(checkout / rel, "a", encoding="utf-8") as handle:
            handle.write("# an edit\n")
        assert provenance._inputs_digest(checkout) != key


def test_a_cache_of_another_state_is_not_read(checkout, monkeypatch):
    cache = checkout / provenance.CACHE
    cache.parent.mkdir(parents=True)
    forged = {"key": "0" * 64, "areas": {area: [] for area in _areas(checkout)}}
    cache.write_text(json.dumps(forged), encoding="utf-8")
    files = provenance.area_files("runner")
    assert files == dependencies.area_modules("runner", checkout)
    assert files  # not the forged empty set
    assert json.loads(cache.read_text(encoding="utf-8"))["key"] != forged["key"]


def test_a_cache_for_this_state_is_what_is_read(checkout, monkeypatch):
    """The key is all that decides (so the key must cover every input: the tests above)."""
    provenance.area_files("runner")
    cache = checkout / provenance.CACHE
    stored = json.loads(cache.read_text(encoding="utf-8"))
    stored["areas"]["runner"] = ["src/evalnoise/__init__.py"]
    cache.write_text(json.dumps(stored), encoding="utf-8")
    _new_process(monkeypatch)
    assert provenance.area_files("runner") == ["src/evalnoise/__init__.py"]


def test_an_unreadable_or_unwritable_cache_only_costs_time(checkout, monkeypatch):
    cache = checkout / provenance.CACHE
    cache.parent.mkdir(parents=True)
    cache.write_text("{not json", encoding="utf-8")
    assert provenance.area_files("runner") == dependencies.area_modules("runner", checkout)
    _new_process(monkeypatch)
    shutil.rmtree(checkout / ".snakemake")
    (checkout / ".snakemake").write_text("a file where the directory would be\n")
    assert provenance.area_files("runner") == dependencies.area_modules("runner", checkout)


def test_errors_are_the_derivations(checkout, monkeypatch):
    provenance.code_version("runner")  # a warm cache
    _new_process(monkeypatch)
    with pytest.raises(KeyError, match="unknown area 'nope'"):
        provenance.code_version("nope")
    (checkout / "scripts/run_trials.py").unlink()
    _new_process(monkeypatch)
    with pytest.raises(FileNotFoundError, match=r"scripts/run_trials\.py"):
        provenance.code_version("runner")
    assert provenance.code_version("analysis")  # the other areas still derive
