"""docs/architecture.md is the map of the code, checked both ways.

Everything the page names exists: every ``src/…``, ``tests/…``, ``rules/…`` and ``scripts/…``
path, and every ``path::name`` (a function, class or constant of a Python file; a rule or
checkpoint of a Snakemake file, ``Snakefile::all`` included).

Everything that exists is on the page: every Python module under ``src/evalnoise/`` (named by
its path, alone or as ``path::name``) and every rule and checkpoint of ``Snakefile`` and
``rules/*.smk`` (named as ``rules/x.smk::rule``, ``Snakefile::all``), either in its place in
the map or in the page's own section "Internal modules" (private helpers, each with why). The
list lives on the page, not here, so the page stays the single map. A package's
``__init__.py`` counts as named when the page names the package's directory
(``src/evalnoise/stats/``) or the file itself: the page describes a package by its directory,
and the ``__init__`` is what presents the package. A rule is a line ``rule NAME:`` or
``checkpoint NAME:`` with nothing after the colon but a comment, at any indentation (so a rule
inside an ``if`` block is seen, and prose such as "checkpoint signal: …" is not); ``use rule``
is not a definition and is not collected.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"
#: a repository path (ends in a word character, so a sentence's full stop is not part of
#: it) or the Snakefile, optionally followed by ``::name``
REFERENCE = re.compile(
    r"(?<![\w/.-])((?:src|tests|rules|scripts)/[\w./-]*\w/?|Snakefile\b)(?:::(\w+))?"
)
#: a rule or checkpoint definition of a Snakemake file
RULE = re.compile(r"^[ \t]*(?:rule|checkpoint)[ \t]+(\w+)[ \t]*:[ \t]*(?:#.*)?$", re.MULTILINE)
#: the page's section of private modules, up to the next section
INTERNAL_SECTION = re.compile(r"^## Internal modules\n(.*?)(?=^## |\Z)", re.MULTILINE | re.DOTALL)
#: one entry of that section: ``- `src/…/x.py`: why it is internal``
INTERNAL_ENTRY = re.compile(r"^- `(src/evalnoise/[\w/]+\.py)`\s*[:—-]\s*(\S.*)$")


def _references(text: str | None = None) -> list[tuple[str, str | None]]:
    found = REFERENCE.findall(DOC.read_text(encoding="utf-8") if text is None else text)
    return [(path, name or None) for path, name in sorted(set(found))]


def _is_workflow_file(path: Path) -> bool:
    return path.suffix == ".smk" or path.name == "Snakefile"


def _defines(path: Path, name: str) -> bool:
    text = path.read_text(encoding="utf-8")
    if _is_workflow_file(path):
        return name in RULE.findall(text)
    pattern = rf"^\s*(?:def|class) {re.escape(name)}\b|^{re.escape(name)}\s*[:=]"
    return re.search(pattern, text, re.MULTILINE) is not None


# -- the other way: what exists, and what the page names of it -------------------------------


def modules(root: Path) -> list[str]:
    """Every Python module under ``root/src/evalnoise``, as a repository path."""
    package = root / "src" / "evalnoise"
    return sorted(p.relative_to(root).as_posix() for p in package.rglob("*.py"))


def workflow_rules(root: Path) -> list[str]:
    """Every rule and checkpoint of ``root/Snakefile`` and ``root/rules/*.smk``, as
    ``file::rule``."""
    files = [root / "Snakefile", *sorted((root / "rules").glob("*.smk"))]
    return [
        f"{f.relative_to(root).as_posix()}::{name}"
        for f in files
        if f.is_file()
        for name in RULE.findall(f.read_text(encoding="utf-8"))
    ]


def named(text: str) -> set[str]:
    """What the page names: each referenced path, and each ``path::name``."""
    out = set()
    for path, name in REFERENCE.findall(text):
        out.add(path)
        if name:
            out.add(f"{path}::{name}")
    return out


def _is_named(item: str, names: set[str]) -> bool:
    if item in names:
        return True
    if item.endswith("/__init__.py"):
        package = item.removesuffix("__init__.py")
        return package in names or package.rstrip("/") in names
    return False


def internal_entries(text: str) -> list[tuple[str, str]]:
    """The section "Internal modules" as (path, why) pairs; a bullet that is not one path
    and a why comes back with an empty path, so the check can name it."""
    section = INTERNAL_SECTION.search(text)
    if section is None:
        return []
    entries = []
    for line in section.group(1).splitlines():
        if not line.startswith("- "):
            continue
        match = INTERNAL_ENTRY.match(line)
        entries.append((match.group(1), match.group(2)) if match else ("", line))
    return entries


def unmapped(root: Path, text: str) -> list[str]:
    """The modules and rules under ``root`` that ``text`` names neither in the map nor on
    its internal list (which is part of the text)."""
    names = named(text) | {path for path, _ in internal_entries(text) if path}
    return [item for item in [*modules(root), *workflow_rules(root)] if not _is_named(item, names)]


def internal_problems(text: str) -> list[str]:
    """What is wrong with the internal list: no section, an entry that is not one module
    path and a why, or a module that is not private (its name does not start with ``_``)."""
    entries = internal_entries(text)
    if not entries:
        return ['no section "## Internal modules" with entries "- `src/evalnoise/…/_x.py`: why"']
    problems = []
    for path, why in entries:
        if not path:
            problems.append(f"not an entry '- `path`: why': {why}")
        elif not Path(path).name.startswith("_") or Path(path).name.startswith("__"):
            problems.append(f"{path} is not a private module (its name does not start with _)")
    return problems


# -- tests ------------------------------------------------------------------------------------


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
    text = (
        "see `src/a/b.py::f`, rules/x.smk. And tests/t.py; not xsrc/y.py or docs/src/z.py; "
        "Snakefile::all, not Snakefiles"
    )
    assert REFERENCE.findall(text) == [
        ("src/a/b.py", "f"),
        ("rules/x.smk", ""),
        ("tests/t.py", ""),
        ("Snakefile", "all"),
    ]


def test_the_collectors_see_the_repository():
    found = modules(ROOT)
    assert len(found) > 100
    assert {"src/evalnoise/__init__.py", "src/evalnoise/stats/_gmoments.py"} <= set(found)
    rules = workflow_rules(ROOT)
    assert {
        "Snakefile::all",
        "rules/sequential.smk::sequential_round",
        "rules/targets.smk::all_trials",
    } <= set(rules)
    # rules/common.smk's docstring "checkpoint signal: ..." is prose, not a rule
    assert "rules/common.smk::signal" not in rules


def test_every_module_and_rule_is_on_the_page():
    missing = unmapped(ROOT, DOC.read_text(encoding="utf-8"))
    assert not missing, (
        'docs/architecture.md names neither in the map nor under "Internal modules": '
        + ", ".join(missing)
    )


def test_the_internal_list_holds_private_modules_with_why():
    assert internal_problems(DOC.read_text(encoding="utf-8")) == []


def _fake_tree(root: Path) -> None:
    files = {
        "src/evalnoise/__init__.py": '"""The package."""\n',
        "src/evalnoise/a.py": "def f():\n    pass\n",
        "src/evalnoise/pkg/__init__.py": "",
        "src/evalnoise/pkg/b.py": "",
        "src/evalnoise/pkg/_c.py": "",
        "Snakefile": 'include: "rules/x.smk"\n\n\nrule all:\n    input:\n        "y",\n',
        "rules/x.smk": (
            'rule r:  # the first\n    output:\n        "y",\n\n\n'
            'checkpoint c:\n    output:\n        "z",\n\n\n'
            'if X:\n\n    rule inner:\n        output:\n            "w",\n\n\n'
            "def f():\n"
            '    """Until it exists this raises the checkpoint signal: not a rule."""\n'
        ),
        "rules/notes.txt": "rule ignored:\n",
    }
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text, encoding="utf-8")


FAKE_DOC = """The package `src/evalnoise/` and `src/evalnoise/a.py::f`;
`src/evalnoise/pkg/b.py` runs in `rules/x.smk::r` from `Snakefile::all`; `c` and inner are
named without their file.

## Internal modules

- `src/evalnoise/pkg/_c.py`: a private helper of b.

## Next
"""


def test_the_collector_finds_what_the_page_misses(tmp_path):
    _fake_tree(tmp_path)
    assert modules(tmp_path) == [
        "src/evalnoise/__init__.py",
        "src/evalnoise/a.py",
        "src/evalnoise/pkg/__init__.py",
        "src/evalnoise/pkg/_c.py",
        "src/evalnoise/pkg/b.py",
    ]
    assert workflow_rules(tmp_path) == [
        "Snakefile::all",
        "rules/x.smk::r",
        "rules/x.smk::c",
        "rules/x.smk::inner",
    ]
    # the package pkg is not named (its __init__ is not covered), nor are the rules c and
    # inner (a bare rule name is not a reference)
    assert unmapped(tmp_path, FAKE_DOC) == [
        "src/evalnoise/pkg/__init__.py",
        "rules/x.smk::c",
        "rules/x.smk::inner",
    ]
    complete = FAKE_DOC.replace(
        "named without their file.",
        "named as `rules/x.smk::c`, `rules/x.smk::inner`; `src/evalnoise/pkg/`.",
    )
    assert unmapped(tmp_path, complete) == []
    # a module on neither the map nor the internal list makes it fail, by name
    no_internal = complete.replace("- `src/evalnoise/pkg/_c.py`: a private helper of b.\n", "")
    assert unmapped(tmp_path, no_internal) == ["src/evalnoise/pkg/_c.py"]
    # ... and so does a new module no one put on the page
    (tmp_path / "src/evalnoise/pkg/d.py").write_text("", encoding="utf-8")
    assert unmapped(tmp_path, complete) == ["src/evalnoise/pkg/d.py"]


def test_the_internal_list_check():
    assert internal_problems(FAKE_DOC) == []
    assert internal_problems("# A page\n\nno such section\n") != []
    public = FAKE_DOC.replace("pkg/_c.py", "pkg/b.py")
    assert internal_problems(public) == [
        "src/evalnoise/pkg/b.py is not a private module (its name does not start with _)"
    ]
    no_why = FAKE_DOC.replace(": a private helper of b.", "")
    assert len(internal_problems(no_why)) == 1
