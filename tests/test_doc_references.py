"""Every file a doc, docstring or comment names exists in the repo.

A reference to a file the checkout does not have (a design note kept elsewhere, a module that was
renamed, a benchmark record never committed) sends a reader nowhere. This scans the prose of the
package, the rules, the scripts, the tools, the docs and the configs for two kinds of reference:

- a repo path with an extension (``src/evalnoise/x.py``, ``docs/pipeline.md``,
  ``benchmarks/results/environment.md``), looked up from the repo root or from the citing
  file's folder;
- an upper-case Markdown name (``DESIGN.md``, ``config/README.md``'s ``README.md``), looked up
  from the citing file's folder and from the repo root.

Paths inside a Harbor task folder (``tests/test.sh``, ``solution/solve.sh``) name a task's files,
not the repo's, and are allowed as such. ``tests/`` itself is not scanned: its fixtures name
made-up paths on purpose.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ("src", "scripts", "rules", "tools", "docs", "config", "profiles", "benchmarks", "agents")
SUFFIXES = {".py", ".md", ".smk", ".sh", ".toml", ".yaml", ".yml", ".txt"}
SKIP_PARTS = {".venv", ".git", "results", ".snakemake", ".dvc", "__pycache__", "data"}
PREFIXES = (
    "src/",
    "docs/",
    "tools/",
    "scripts/",
    "rules/",
    "tests/",
    "benchmarks/",
    "agents/",
    "examples/",
    "config/",
    "images/",
    "profiles/",
)
EXTENSIONS = ("py", "md", "sh", "smk", "yaml", "yml", "toml", "json", "txt", "csv", "parquet")
#: a Harbor task's own files: named in docs about the task format, relative to a task folder
TASK_RELATIVE = {"tests/test.sh", "tests/Dockerfile", "tests/test_outputs.py"}

_PREFIX = "|".join(map(re.escape, PREFIXES))
_EXT = "|".join(EXTENSIONS)
PATH_REF = re.compile(rf"(?<![\w./~-])((?:{_PREFIX})[\w./-]*\.(?:{_EXT}))(?![\w/])")
MD_NAME = re.compile(r"(?<![\w./-])([A-Z][A-Z_]*\.md)\b")


def _scanned_files() -> list[Path]:
    files = [ROOT / "README.md", ROOT / "Snakefile", ROOT / "pyproject.toml"]
    for top in SCANNED:
        for path in sorted((ROOT / top).rglob("*")):
            rel = path.relative_to(ROOT).parts
            # pip's build metadata (``*.egg-info``) lists the files of the last install, not
            # the repo's
            generated = any(part.endswith(".egg-info") for part in rel)
            if (
                path.is_file()
                and path.suffix in SUFFIXES
                and not SKIP_PARTS & set(rel)
                and not generated
            ):
                files.append(path)
    return files


def broken_references(files: list[Path]) -> list[str]:
    """``"file: ref"`` for every reference in ``files`` to a file the repo does not have."""
    broken = []
    for path in files:
        text = path.read_text(encoding="utf-8", errors="replace")
        rel = path.relative_to(ROOT)
        for match in PATH_REF.finditer(text):
            ref = match.group(1)
            if ref in TASK_RELATIVE:
                continue
            if not ((ROOT / ref).exists() or (path.parent / ref).exists()):
                broken.append(f"{rel}: {ref}")
        for match in MD_NAME.finditer(text):
            ref = match.group(1)
            if not ((path.parent / ref).exists() or (ROOT / ref).exists()):
                broken.append(f"{rel}: {ref}")
    return sorted(set(broken))


def test_every_referenced_file_exists():
    broken = broken_references(_scanned_files())
    assert not broken, "references to files the repo does not have:\n" + "\n".join(broken)


@pytest.mark.parametrize(
    "text, found",
    [
        ("see DESIGN.md, 'Resources'", True),
        ("the map: docs/architecture.md", False),
        ("measured in benchmarks/results/no-such-record.md", True),
        ("a task's tests/test.sh writes the reward", False),
        ("results/analysis/summary.txt is an output", False),
    ],
)
def test_the_scan_finds_a_missing_file(tmp_path, monkeypatch, text, found):
    """The scan itself can fail: a made-up reference is found, a real one is not."""
    cited = ROOT / "docs" / "_doc_reference_probe.md"
    monkeypatch.setattr(Path, "read_text", lambda self, **_: text if self == cited else "")
    assert bool(broken_references([cited])) is found
