"""docs/architecture.md names only things that exist: every ``src/…``, ``tests/…``,
``rules/…`` and ``scripts/…`` path, and every ``path::name`` (a function, class or constant
of a Python file; a rule of a Snakemake file)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"
#: a repository path (ends in a word character, so a sentence's full stop is not part of
#: it), optionally followed by ``::name``
REFERENCE = re.compile(r"(?<![\w/.-])((?:src|tests|rules|scripts)/[\w./-]*\w/?)(?:::(\w+))?")


def _references() -> list[tuple[str, str | None]]:
    found = REFERENCE.findall(DOC.read_text(encoding="utf-8"))
    return [(path, name or None) for path, name in sorted(set(found))]


def _defines(path: Path, name: str) -> bool:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".smk":
        pattern = rf"^rule {re.escape(name)}:"
    else:
        pattern = rf"^\s*(?:def|class) {re.escape(name)}\b|^{re.escape(name)}\s*[:=]"
    return re.search(pattern, text, re.MULTILINE) is not None


def test_the_doc_names_paths():
    refs = _references()
    assert len(refs) > 50
    assert {p for p, _ in refs} >= {"rules/analysis.smk", "src/evalnoise/stats/accuracy.py"}


@pytest.mark.parametrize(("path", "name"), _references(), ids=lambda v: v or "")
def test_every_path_and_name_exists(path: str, name: str | None):
    target = ROOT / path
    assert target.exists(), f"docs/architecture.md names {path}, which does not exist"
    if name is not None:
        assert target.is_file() and _defines(target, name), (
            f"docs/architecture.md names {path}::{name}, which {path} does not define"
        )


def test_the_reference_pattern():
    text = "see `src/a/b.py::f`, rules/x.smk. And tests/t.py; not xsrc/y.py or docs/src/z.py"
    assert REFERENCE.findall(text) == [
        ("src/a/b.py", "f"),
        ("rules/x.smk", ""),
        ("tests/t.py", ""),
    ]
