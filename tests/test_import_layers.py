"""The package's imports run only downward, and never in a circle.

The layers of ``src/evalnoise/`` are declared once, here: :data:`LAYERS`, lowest first. A
*unit* is a top-level module or subpackage of evalnoise (``stats`` is ``src/evalnoise/stats/``
with everything in it, ``errors`` is ``src/evalnoise/errors.py``, and ``evalnoise`` is the
package's own ``__init__.py``). Every ``import`` and ``from … import`` statement of the
package is read with :mod:`ast` — at module level and inside functions, classes and ``if``
blocks alike: an import deferred into a function is an import all the same, and deferring
one must not hide a cycle. Then:

- every unit stands on exactly one layer, and every name on a layer is a unit, so a new
  module or package fails here until it is placed;
- an import from one unit to another goes to the same layer or a lower one, never higher;
- no units import each other around a circle (units of one layer may import each other,
  in one direction);
- no modules import each other around a circle either, inside a unit too (a module is a
  file: ``stats/stopping.py`` is ``evalnoise.stats.stopping``), counting imports in
  functions and under ``if TYPE_CHECKING:`` — a circle hidden in a function or a type hint
  is still two modules that cannot be read, or changed, one without the other.

A failure names each offending import as ``file:line: from-unit (layer) → to-unit (layer)``.
``docs/architecture.md`` shows the same layers in its section "Import layers"; the last
test holds that table equal to :data:`LAYERS`.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "evalnoise"
DOC = ROOT / "docs" / "architecture.md"

#: a declaration of layers, lowest first, each (name, units)
Layers = tuple[tuple[str, frozenset[str]], ...]

#: The layers, lowest first. A unit may import its own files, any unit of a lower layer and,
#: without a cycle, a unit of its own layer.
LAYERS: Layers = (
    (
        "foundations",
        frozenset(
            {
                "evalnoise",
                "errors",
                "formatting",
                "column_names",
                "outcome_table",
                "group_records",
                "schema",
                "atomic",
                "user_cache",
                "_checkout",
                "_extras",
                "_lazy",
                "trial_table",
            }
        ),
    ),
    ("statistics", frozenset({"stats"})),
    (
        "trial data",
        frozenset(
            {
                "outcomes",
                "verified_after",
                "infra_failures",
                "harbor_exceptions",
                "facets",
                "tasks",
                "importers",
            }
        ),
    ),
    ("execution", frozenset({"runner", "models", "machine"})),
    (
        "analysis",
        frozenset(
            {
                "scorers",
                "analysis",
                "consistency",
                "multiverse",
                "costs",
                "attribution",
                "manifest",
                "archive",
                "design_text",
                "results_check",
            }
        ),
    ),
    ("report", frozenset({"report", "group_text", "stopping_text", "consistency_text"})),
    ("pipeline", frozenset({"pipeline", "provenance"})),
    ("command line", frozenset({"cli", "__main__"})),
)


@dataclass(frozen=True)
class Import:
    """One import statement of one unit that names another unit."""

    path: Path  # the importing file
    line: int
    source: str  # the importing unit
    target: str  # the imported unit
    module: str  # the module the statement imports from (relative imports resolved)

    def where(self, root: Path) -> str:
        return f"{self.path.relative_to(root).as_posix()}:{self.line}"


def units(package: Path) -> set[str]:
    """The units of ``package``: its top-level modules and subpackages, and itself."""
    found = {package.name}
    for child in package.iterdir():
        if child.is_file() and child.suffix == ".py" and child.name != "__init__.py":
            found.add(child.stem)
        elif child.is_dir() and (child / "__init__.py").is_file():
            found.add(child.name)
    return found


def unit_of(package: Path, path: Path) -> str:
    """The unit a file of ``package`` belongs to."""
    parts = path.relative_to(package).parts
    if parts == ("__init__.py",):
        return package.name
    return parts[0].removesuffix(".py")


def _dotted(package: Path, path: Path) -> list[str]:
    """The dotted name of the package a file's relative imports start from."""
    parts = [package.name, *path.relative_to(package).with_suffix("").parts]
    return parts[:-1]  # a module's package; for __init__ the package itself


def _imported_names(
    package: Path, path: Path, node: ast.Import | ast.ImportFrom
) -> list[tuple[str, str]]:
    """``(name, module)`` for each name one statement imports: ``from a import b`` gives
    ``("a.b", "a")`` (``a.b`` is the submodule ``b`` or a name defined in ``a``: the unit is
    the same either way, but for ``from evalnoise import b``); ``import a.b`` gives
    ``("a.b", "a.b")``. Relative imports are resolved."""
    if isinstance(node, ast.Import):
        return [(alias.name, alias.name) for alias in node.names]
    if node.level:
        base = _dotted(package, path)
        base = base[: len(base) - (node.level - 1)]
        module = ".".join([*base, *([node.module] if node.module else [])])
    else:
        module = node.module or ""
    return [(f"{module}.{alias.name}", module) for alias in node.names]


def _target_unit(package: Path, name: str, known: set[str]) -> str | None:
    """The unit ``name`` lies in, None outside the package. ``evalnoise.x`` is the unit
    ``x`` when the package has one so named; otherwise (``from evalnoise import
    __version__``) it is a name of the package's own ``__init__``."""
    parts = name.split(".")
    if parts[0] != package.name:
        return None
    if len(parts) > 1 and parts[1] in known and parts[1] != package.name:
        return parts[1]
    return package.name


def imports(package: Path) -> list[Import]:
    """Every import from one unit of ``package`` to another, function-local ones included."""
    known = units(package)
    found = []
    for path in sorted(package.rglob("*.py")):
        source = unit_of(package, path)
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            targets: dict[str, str] = {}  # one entry per unit a statement imports
            for name, module in _imported_names(package, path, node):
                target = _target_unit(package, name, known)
                if target is not None and target != source:
                    targets.setdefault(target, name if module == package.name else module)
            found += [Import(path, node.lineno, source, t, m) for t, m in targets.items()]
    return found


def module_name(package: Path, path: Path) -> str:
    """The dotted name of a file of ``package`` (a package's ``__init__`` is the package)."""
    parts = [package.name, *path.relative_to(package).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def module_imports(package: Path) -> list[Import]:
    """Every import from one module of ``package`` to another, as :class:`Import` with
    modules for units. ``from a.b import c`` reaches the module ``a.b.c`` when there is one,
    else ``a.b``; ``import a.b`` reaches ``a.b``. The parent packages Python initialises on
    the way are not edges: a package's ``__init__`` that gathers its modules would otherwise
    close a circle with every module importing a sibling by its full name."""
    modules = {module_name(package, path): path for path in package.rglob("*.py")}
    found = []
    for source, path in sorted(modules.items()):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            targets: dict[str, str] = {}
            for name, module in _imported_names(package, path, node):
                target = name if name in modules else module if module in modules else None
                if target is not None and target != source:
                    targets.setdefault(target, module)
            found += [Import(path, node.lineno, source, t, m) for t, m in targets.items()]
    return found


def layer_of(layers: Layers) -> dict[str, tuple[int, str]]:
    """Each unit's (position, layer name); position 0 is the lowest layer."""
    return {unit: (i, name) for i, (name, members) in enumerate(layers) for unit in members}


def placement_problems(package: Path, layers: Layers) -> list[str]:
    """Units on no layer or on several, and names on a layer that are no unit."""
    known = units(package)
    problems = []
    for unit in sorted(known):
        on = [name for name, members in layers if unit in members]
        if not on:
            problems.append(f"{unit}: on no layer (place it in LAYERS)")
        elif len(on) > 1:
            problems.append(f"{unit}: on several layers ({', '.join(on)})")
    for name, members in layers:
        for unit in sorted(members - known):
            problems.append(f"{unit}: on layer {name!r} but no such module or package")
    return problems


def upward(package: Path, layers: Layers, found: list[Import]) -> list[str]:
    """Each import into a higher layer, as ``file:line: from (layer) → to (layer)``."""
    layer = layer_of(layers)
    out = []
    for imp in found:
        if imp.source not in layer or imp.target not in layer:
            continue  # placement_problems names it
        (low, low_name), (high, high_name) = layer[imp.source], layer[imp.target]
        if high > low:
            out.append(
                f"{imp.where(package.parent.parent)}: {imp.source} ({low_name}) → "
                f"{imp.target} ({high_name}): import of {imp.module}"
            )
    return out


def cycles(package: Path, found: list[Import]) -> list[str]:
    """Every circle of units (a strongly connected component of two or more), with the
    imports that close it, as ``file:line: from → to``."""
    graph: dict[str, set[str]] = {}
    for imp in found:
        graph.setdefault(imp.source, set()).add(imp.target)
        graph.setdefault(imp.target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    components: list[set[str]] = []

    def visit(node: str) -> None:  # Tarjan's algorithm; the graph has a few dozen nodes
        index[node] = low[node] = len(index)
        stack.append(node)
        for succ in sorted(graph[node]):
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                component.add(member)
                if member == node:
                    break
            components.append(component)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    out = []
    for component in components:
        if len(component) < 2:
            continue
        ties = [
            f"{imp.where(package.parent.parent)}: {imp.source} → {imp.target} ({imp.module})"
            for imp in found
            if imp.source in component and imp.target in component
        ]
        out.append(f"circle {' ↔ '.join(sorted(component))}: " + "; ".join(ties))
    return out


# -- the package ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def package_imports() -> list[Import]:
    return imports(PACKAGE)


def test_the_reader_sees_the_package(package_imports):
    found = package_imports
    assert len(found) > 200
    assert {"stats", "runner", "cli", "evalnoise"} <= units(PACKAGE)
    pairs = {(imp.source, imp.target) for imp in found}
    assert ("pipeline", "runner") in pairs
    # cli reaches the runner only inside functions (cli/run_shard.py, cli/image.py)
    assert ("cli", "runner") in pairs
    # imports inside a unit, relative ones too (attribution/flaky.py: from ._trial_frame import
    # ...), are not edges
    assert not any(imp.source == imp.target for imp in found)


def test_every_unit_is_on_one_layer():
    problems = placement_problems(PACKAGE, LAYERS)
    assert not problems, "tests/test_import_layers.py::LAYERS: " + "; ".join(problems)


def test_no_import_runs_upward(package_imports):
    bad = upward(PACKAGE, LAYERS, package_imports)
    assert not bad, "imports that run up a layer:\n" + "\n".join(bad)


def test_no_cycle_between_units(package_imports):
    bad = cycles(PACKAGE, package_imports)
    assert not bad, "\n".join(bad)


def test_no_cycle_between_modules():
    found = module_imports(PACKAGE)
    # the reader sees edges inside a unit, function-local and type-checking ones included
    pairs = {(imp.source, imp.target) for imp in found}
    assert ("evalnoise.stats.stopping", "evalnoise.stats._target_decisions") in pairs
    assert ("evalnoise.pipeline.sequential", "evalnoise.stats.stopping") in pairs  # in a function
    bad = cycles(PACKAGE, found)
    assert not bad, "\n".join(bad)


# -- the checks themselves, on a small package that breaks each rule ----------------------------

FAKE_LAYERS: Layers = (
    ("low", frozenset({"evalnoise", "base", "peer_a", "peer_b"})),
    ("high", frozenset({"top", "gone"})),
)


def _fake_package(root: Path) -> Path:
    package = root / "src" / "evalnoise"
    files = {
        "__init__.py": "",
        "base.py": "def helper():\n    from evalnoise.top import run  # up, hidden in a function\n",
        "peer_a.py": "import evalnoise.peer_b\n",
        "peer_b/__init__.py": "from . import inner\n",
        "peer_b/inner.py": "from ..peer_a import x  # relative, closes the circle\n",
        "top.py": "from evalnoise import __version__, base\nimport numpy\n",
        "new.py": "",
    }
    for name, text in files.items():
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).write_text(text, encoding="utf-8")
    return package


def test_the_checks_name_what_breaks_a_rule(tmp_path):
    package = _fake_package(tmp_path)
    found = imports(package)
    assert sorted((i.source, i.target, i.line) for i in found) == [
        ("base", "top", 2),
        ("peer_a", "peer_b", 1),
        ("peer_b", "peer_a", 1),
        ("top", "base", 1),
        ("top", "evalnoise", 1),
    ]
    assert placement_problems(package, FAKE_LAYERS) == [
        "new: on no layer (place it in LAYERS)",
        "gone: on layer 'high' but no such module or package",
    ]
    assert upward(package, FAKE_LAYERS, found) == [
        "src/evalnoise/base.py:2: base (low) → top (high): import of evalnoise.top"
    ]
    assert cycles(package, found) == [
        "circle base ↔ top: src/evalnoise/base.py:2: base → top (evalnoise.top); "
        "src/evalnoise/top.py:1: top → base (evalnoise.base)",
        "circle peer_a ↔ peer_b: src/evalnoise/peer_a.py:1: peer_a → peer_b "
        "(evalnoise.peer_b); src/evalnoise/peer_b/inner.py:1: peer_b → peer_a "
        "(evalnoise.peer_a)",
    ]


def test_a_circle_of_modules_inside_a_unit_is_named(tmp_path):
    """Inside one unit, through a function-local import and a type-checking one."""
    package = tmp_path / "src" / "evalnoise"
    files = {
        "__init__.py": "",
        "stats/__init__.py": "from .rule import Rule\n",
        "stats/rule.py": "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n"
        "    from evalnoise.stats.decide import plan\n",
        "stats/decide.py": "def plan():\n    from . import rule\n",
    }
    for name, text in files.items():
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).write_text(text, encoding="utf-8")
    assert cycles(package, imports(package)) == []  # one unit: no circle of units
    assert cycles(package, module_imports(package)) == [
        "circle evalnoise.stats.decide ↔ evalnoise.stats.rule: "
        "src/evalnoise/stats/decide.py:2: evalnoise.stats.decide → evalnoise.stats.rule "
        "(evalnoise.stats); src/evalnoise/stats/rule.py:4: evalnoise.stats.rule → "
        "evalnoise.stats.decide (evalnoise.stats.decide)"
    ]


def test_a_fixed_package_passes(tmp_path):
    package = _fake_package(tmp_path)
    (package / "base.py").write_text("def helper():\n    pass\n", encoding="utf-8")
    (package / "peer_b" / "inner.py").write_text("", encoding="utf-8")
    (package / "new.py").unlink()
    layers = (FAKE_LAYERS[0], ("high", frozenset({"top"})))
    found = imports(package)
    assert placement_problems(package, layers) == []
    assert upward(package, layers, found) == []
    assert cycles(package, found) == []


# -- the page ------------------------------------------------------------------------------------

#: the section of docs/architecture.md that shows the layers, up to the next section
LAYER_SECTION = re.compile(r"^## Import layers\n(.*?)(?=^## |\Z)", re.MULTILINE | re.DOTALL)
#: one row of its table: ``| 1. name | `unit`, `unit` | … |``
LAYER_ROW = re.compile(r"^\| (\d+)\. ([^|]+?) \| ([^|]+) \|", re.MULTILINE)


def doc_layers(text: str) -> list[tuple[str, frozenset[str]]]:
    """The layers as the page's table lists them, lowest first."""
    section = LAYER_SECTION.search(text)
    if section is None:
        return []
    rows = sorted((int(n), name.strip(), cells) for n, name, cells in LAYER_ROW.findall(section[1]))
    return [(name, frozenset(re.findall(r"`([\w.]+)`", cells))) for _, name, cells in rows]


def test_the_doc_shows_these_layers():
    shown = doc_layers(DOC.read_text(encoding="utf-8"))
    assert shown == list(LAYERS), (
        'docs/architecture.md, section "Import layers", differs from '
        "tests/test_import_layers.py::LAYERS"
    )


@pytest.mark.parametrize("text", ["no such section\n", "## Import layers\n\nno table\n"])
def test_a_page_without_the_table_shows_no_layers(text):
    assert doc_layers(text) == []
