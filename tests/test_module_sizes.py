"""Small modules, short functions: no module of ``src/evalnoise/`` over 700 lines, no function
over 120 lines, its docstring not counted.

Measured with :mod:`ast`: a module's length is its number of lines; a function's is from its
``def`` (decorators not counted) to its last line, less the lines of its docstring. A module or
function over the limit is split along its jobs, not in halves. The exceptions below are files
other work is splitting at the same time, each with who splits it; an exception that is no
longer needed fails too, so the list only shrinks.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "evalnoise"

MAX_MODULE_LINES = 700
MAX_FUNCTION_LINES = 120

#: modules over the limit while someone splits them: path → who
MODULE_EXCEPTIONS: dict[str, str] = {}

#: functions over the limit while someone splits them: "path::qualified name" → who
FUNCTION_EXCEPTIONS: dict[str, str] = {}


def _docstring_lines(node: ast.AST) -> int:
    body = getattr(node, "body", [])
    if (
        body
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and isinstance(body[0].value.value, str)
    ):
        return body[0].end_lineno - body[0].lineno + 1
    return 0


def function_lengths(path: Path) -> dict[str, int]:
    """Every function and method of ``path`` by qualified name (``Class.method``,
    ``outer.inner``): its lines from ``def`` to its end, less its docstring's."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: dict[str, int] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                name = f"{prefix}{child.name}"
                found[name] = child.end_lineno - child.lineno + 1 - _docstring_lines(child)
                visit(child, f"{name}.")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)

    visit(tree, "")
    return found


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def test_no_module_over_the_limit():
    lengths = {_rel(p): len(p.read_text(encoding="utf-8").splitlines()) for p in _modules()}
    over = {path: n for path, n in lengths.items() if n > MAX_MODULE_LINES}
    new = {path: n for path, n in over.items() if path not in MODULE_EXCEPTIONS}
    assert not new, f"modules over {MAX_MODULE_LINES} lines (split each along its jobs):\n" + (
        "\n".join(f"  {path}: {n}" for path, n in sorted(new.items(), key=lambda x: -x[1]))
    )
    stale = sorted(set(MODULE_EXCEPTIONS) - set(over))
    assert not stale, f"no longer over the limit, remove from MODULE_EXCEPTIONS: {stale}"


def test_no_function_over_the_limit():
    over = {}
    for path in _modules():
        for name, n in function_lengths(path).items():
            if n > MAX_FUNCTION_LINES:
                over[f"{_rel(path)}::{name}"] = n
    new = {key: n for key, n in over.items() if key not in FUNCTION_EXCEPTIONS}
    assert not new, (
        f"functions over {MAX_FUNCTION_LINES} lines, docstring not counted (split each along "
        "its steps):\n"
        + "\n".join(f"  {key}: {n}" for key, n in sorted(new.items(), key=lambda x: -x[1]))
    )
    stale = sorted(set(FUNCTION_EXCEPTIONS) - set(over))
    assert not stale, f"no longer over the limit, remove from FUNCTION_EXCEPTIONS: {stale}"


def test_the_measure(tmp_path):
    path = tmp_path / "m.py"
    body = "\n".join(f"    x{i} = {i}" for i in range(3))
    path.write_text(
        "class C:\n"
        "    def f(self):\n"
        '        """Two lines\n        of docstring."""\n'
        "        def inner():\n"
        "            return 1\n"
        "        return inner\n"
        "\n"
        "def g():\n" + body + "\n"
    )
    assert function_lengths(path) == {"C.f": 4, "C.f.inner": 2, "g": 4}
