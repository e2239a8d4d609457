"""One name, one module; private names stay in their module.

- No two modules of ``src/evalnoise/`` share a basename (``__init__.py`` aside): a module's
  name says what it is, so ``tasks/harbor.py`` and ``importers/harbor.py`` cannot both be
  "harbor" — one is a Harbor task, the other a Harbor job's results.
- A name that starts with one underscore is private to the module that defines it: no module
  of ``src/``, ``scripts/``, ``agents/`` or ``benchmarks/`` imports one from another module
  (``from evalnoise.x import _name``), and none of ``src/``, ``scripts/`` or ``agents/``
  reaches one through an imported module (``x._name``). What two modules share is public, with
  a docstring. A private *module* (``evalnoise/stats/_checks.py``) may be imported within
  evalnoise: it is private to the package, and ``docs/architecture.md`` lists it under
  "Internal modules"; its names follow the same rule.

Tests may import the private names of the code they test (a unit test of a helper is a test
of its module); the rule is for the code that ships and runs.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "evalnoise"


def _python_files(*folders: str) -> list[Path]:
    found: list[Path] = []
    for folder in folders:
        found += [
            p
            for p in sorted((ROOT / folder).rglob("*.py"))
            if "results" not in p.relative_to(ROOT).parts and "__pycache__" not in p.parts
        ]
    return found


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _module_of(path: Path) -> str | None:
    """The dotted name of a module of ``src/``, else None."""
    try:
        rel = path.relative_to(ROOT / "src")
    except ValueError:
        return None
    parts = list(rel.with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve(path: Path, node: ast.ImportFrom) -> str:
    """The absolute module a ``from … import`` names (relative imports resolved)."""
    if not node.level:
        return node.module or ""
    own = _module_of(path) or ""
    base = own.split(".")
    if path.name != "__init__.py":
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _is_submodule(module: str, name: str) -> bool:
    folder = ROOT / "src" / Path(*module.split("."))
    return (folder / f"{name}.py").is_file() or (folder / name / "__init__.py").is_file()


def _shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else path.name


def private_imports(paths: list[Path], *, attributes: bool) -> list[str]:
    """Each place a module takes another module's private name: ``file:line: what``."""
    found = []
    for path in paths:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        own = _module_of(path)
        aliases: dict[str, str] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                module = _resolve(path, node)
                for alias in node.names:
                    if module.startswith("evalnoise") and _is_submodule(module, alias.name):
                        aliases[alias.asname or alias.name] = f"{module}.{alias.name}"
                    elif _is_private(alias.name) and module != own:
                        found.append(
                            f"{_shown(path)}:{node.lineno}: from {module} import {alias.name}"
                        )
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith("evalnoise") and alias.asname:
                        aliases[alias.asname] = alias.name
        if not attributes:
            continue
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and _is_private(node.attr)
                and isinstance(node.value, ast.Name)
                and node.value.id in aliases
                and aliases[node.value.id] != own
                and not _is_submodule(aliases[node.value.id], node.attr)
            ):
                found.append(f"{_shown(path)}:{node.lineno}: {aliases[node.value.id]}.{node.attr}")
    return found


def test_no_two_modules_share_a_basename():
    by_name: dict[str, list[str]] = defaultdict(list)
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name != "__init__.py" and "__pycache__" not in path.parts:
            by_name[path.name].append(str(path.relative_to(ROOT)))
    shared = {name: paths for name, paths in by_name.items() if len(paths) > 1}
    assert not shared, "modules sharing a basename (rename each to say what it is):\n" + "\n".join(
        f"  {name}: {', '.join(paths)}" for name, paths in sorted(shared.items())
    )


def test_no_private_name_is_imported_from_another_module():
    found = private_imports(_python_files("src", "scripts", "agents"), attributes=True)
    found += private_imports(_python_files("benchmarks"), attributes=False)
    assert not found, (
        "private names used outside their module (make them public with a docstring, or "
        "move them where they belong):\n" + "\n".join(f"  {f}" for f in found)
    )


def test_the_checks_catch_what_they_look_for(tmp_path):
    # the private-import check fails on both forms, and leaves a module's own names and
    # private modules alone
    bad = tmp_path / "probe.py"
    bad.write_text(
        "from evalnoise.trial_table import _TRUE\n"
        "import evalnoise.stats.planning as planning\n"
        "from evalnoise.stats import _checks\n"
        "x = planning._COST_RTOL\n"
        "y = _checks.check_finite_number\n"
    )
    assert private_imports([bad], attributes=True) == [
        "probe.py:1: from evalnoise.trial_table import _TRUE",
        "probe.py:4: evalnoise.stats.planning._COST_RTOL",
    ]
