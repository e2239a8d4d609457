"""What a script or rule file of the workflow reaches in the package, read statically.

The package modules a script needs are found by following its imports of ``evalnoise``
modules (``ast``), transitively, including the function-local imports this code base uses a
lot. A module is reached when it is imported at module level by reached code (with every
package ``__init__`` on its dotted path), or imported inside a function or class that reached
code refers to: ``run_trials`` reaches :func:`evalnoise.pipeline.shards.run_trials_shard` but
not ``score_shard``, so editing a scorer does not rerun paid-for trials. The rule is
conservative — any reference counts as a call, a module used as a value counts as all of it,
a class as all of its methods — so it can over-approximate, but misses no ``import``
statement in code that can run. Annotations are skipped (never called).

Imports by computed name are not seen, with one exception read as data: a lazy package's
table (``_MODULES = {public name: submodule}`` in its ``__init__``, served by
:func:`evalnoise._lazy.load`), so a use of ``evalnoise.runner.run_shard`` reaches
``runner/shard.py`` and no other submodule of the runner. Keep it so: no other
``importlib`` in the package.

:mod:`evalnoise.pipeline.dependencies` declares which scripts each stage and each kind of
rule runs; this module only walks.
"""

from __future__ import annotations

import ast
import functools
import re
import textwrap
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = ["LAZY_TABLE", "PACKAGE", "ImportGraph", "graph", "reached_files"]

PACKAGE = "evalnoise"
#: The name of a lazy package's table in its ``__init__`` (evalnoise._lazy)
LAZY_TABLE = "_MODULES"
_LOADER = (f"{PACKAGE}._lazy", "load")

_ALL = "*"  # every top-level name of a module (the module object itself is used)


@dataclass(frozen=True)
class _Source:
    """One parsed file: a package module, a script, or the import lines of a rule file."""

    name: str  # dotted module name (a pseudo name for scripts and rule files)
    is_package: bool
    tree: ast.Module
    #: top-level functions and classes by name
    defs: Mapping[str, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef]
    #: top-level import bindings: name → (module, None) for a module, (module, attr) for a name
    bindings: Mapping[str, tuple[str, str | None]]
    #: a lazy package's table (:data:`LAZY_TABLE`): public name → submodule
    lazy: Mapping[str, str]


def _module_path(name: str, src: Path) -> Path | None:
    """The file of package module ``name`` under ``src``, or None if there is none."""
    if name != PACKAGE and not name.startswith(PACKAGE + "."):
        return None
    base = src.joinpath(*name.split("."))
    if (base / "__init__.py").is_file():
        return base / "__init__.py"
    if base.with_suffix(".py").is_file():
        return base.with_suffix(".py")
    return None


def _parents(name: str) -> Iterator[str]:
    parts = name.split(".")
    for i in range(1, len(parts)):
        yield ".".join(parts[:i])


def _absolute(node: ast.ImportFrom, source: _Source) -> str:
    """The module a ``from … import`` names, relative imports resolved."""
    if not node.level:
        return node.module or ""
    parts = source.name.split(".")
    if not source.is_package:
        parts = parts[:-1]
    parts = parts[: len(parts) - (node.level - 1)]
    return ".".join([*parts, *([node.module] if node.module else [])])


@functools.lru_cache(maxsize=1024)
def _parse(path: Path, name: str, is_package: bool, stamp: tuple[int, int], text: str | None):
    del stamp  # part of the cache key only: an edited file is parsed again
    tree = ast.parse(text if text is not None else path.read_text(encoding="utf-8"), str(path))
    defs = {
        node.name: node
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
    }
    source = _Source(name, is_package, tree, defs, {}, {})
    bindings: dict[str, tuple[str, str | None]] = {}
    for node in _module_level(tree.body):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    bindings[alias.asname] = (alias.name, None)
                else:
                    top = alias.name.split(".")[0]
                    bindings[top] = (top, None)
        elif isinstance(node, ast.ImportFrom):
            module = _absolute(node, source)
            for alias in node.names:
                if alias.name != "*":
                    bindings[alias.asname or alias.name] = (module, alias.name)
    return _Source(name, is_package, tree, defs, bindings, _lazy_table(tree) if is_package else {})


def _lazy_table(tree: ast.Module) -> dict[str, str]:
    """The package's ``_MODULES = {"name": "submodule", ...}``, or {} (a literal dict of
    strings; anything else is no table)."""
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and [getattr(t, "id", None) for t in node.targets] == [LAZY_TABLE]
            and isinstance(node.value, ast.Dict)
        ):
            try:
                table = ast.literal_eval(node.value)
            except ValueError:
                return {}
            if all(isinstance(k, str) and isinstance(v, str) for k, v in table.items()):
                return table
    return {}


def _type_checking_only(node: ast.stmt) -> bool:
    """``if TYPE_CHECKING:`` (or ``typing.TYPE_CHECKING``): its body never runs."""
    if not isinstance(node, ast.If):
        return False
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _module_level(body: Iterable[ast.stmt]) -> Iterator[ast.stmt]:
    """Statements run at import time outside any function or class (if/try blocks opened;
    an ``if TYPE_CHECKING:`` body is for the type checker only and never runs)."""
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        if _type_checking_only(node):
            yield from _module_level(node.orelse)
            continue
        yield node
        for field in ("body", "orelse", "finalbody"):
            yield from _module_level(getattr(node, field, ()) or ())
        for handler in getattr(node, "handlers", ()) or ():
            yield from _module_level(handler.body)


def _load(path: Path, name: str, is_package: bool, text: str | None = None) -> _Source:
    stat = path.stat()
    return _parse(path, name, is_package, (stat.st_mtime_ns, stat.st_size), text)


_SMK_IMPORT = re.compile(r"^[ \t]*(?:from[ \t]+[\w.]+[ \t]+import\b|import[ \t]+[\w.])")


def _smk_imports(path: Path) -> str:
    """The Python import statements of a Snakemake file (which is not Python), as Python."""
    lines = path.read_text(encoding="utf-8").splitlines()
    statements, i = [], 0
    while i < len(lines):
        line = lines[i]
        if _SMK_IMPORT.match(line):
            chunk = [line]
            if "(" in line:
                while ")" not in chunk[-1] and i + 1 < len(lines):
                    i += 1
                    chunk.append(lines[i])
            while chunk[-1].rstrip().endswith("\\") and i + 1 < len(lines):
                i += 1
                chunk.append(lines[i])
            statement = textwrap.dedent("\n".join(chunk))
            try:
                ast.parse(statement)
            except SyntaxError:
                pass  # prose that starts like an import (a docstring line)
            else:
                statements.append(statement)
        i += 1
    return "\n".join(statements) + "\n"


#: A node of the import graph: (module, None) = the module is imported (its top-level code
#: runs), (module, name) = that function/class/binding of it is used, (module, ``*``) = all
#: of the module is.
_Node = tuple[str, str | None]


class ImportGraph:
    """The package's import graph over :data:`_Node` s, its edges derived on first need.

    A node's successors depend only on its module's source (and on which package modules
    exist), never on where the walk started, so one graph serves every walk: each area's
    (or stage's) set is the closure of its entry points' successors, and a module's code is
    scanned once per process, not once per area. :func:`graph` keeps one graph per state
    of the package's files."""

    def __init__(self, src: Path) -> None:
        self.src = src
        self.sources: dict[str, _Source] = {}
        self.known: dict[str, bool] = {}
        #: node → its successors, for every node expanded so far
        self.edges: dict[_Node, frozenset[_Node]] = {}
        self._found: set[_Node] = set()  # the successors of the node being expanded

    # -- sources

    def source(self, name: str) -> _Source | None:
        if name not in self.sources:
            path = _module_path(name, self.src)
            if path is None:
                return None
            self.sources[name] = _load(path, name, path.name == "__init__.py")
        return self.sources[name]

    def is_module(self, name: str) -> bool:
        if name not in self.known:
            self.known[name] = _module_path(name, self.src) is not None
        return self.known[name]

    # -- edges and walks

    def add(self, module: str, symbol: str | None) -> None:
        """``(module, symbol)`` is a successor of what is being expanded (if a package
        module: other imports lead nowhere the package's files are)."""
        if self.is_module(module):
            self._found.add((module, symbol))

    def successors(self, node: _Node) -> frozenset[_Node]:
        """What ``node`` needs: for an import, its parent packages and what importing it
        runs; for a name, its module's import and what the name's code reaches."""
        found = self.edges.get(node)
        if found is None:
            module, symbol = node
            source = self.source(module)
            assert source is not None
            self._found = set()
            if symbol is None:
                for parent in _parents(module):
                    self.add(parent, None)
                self.import_time(source)
            else:
                self.add(module, None)
                self.use(source, symbol)
            found = self.edges[node] = frozenset(self._found)
        return found

    def entry(self, source: _Source, every_binding: bool) -> frozenset[_Node]:
        """Where a script or rule file leads: all of a script runs (its functions too); of a
        rule file only the imports are seen, so every name they bind counts as used
        (``every_binding``)."""
        self._found = set()
        self.import_time(source)
        for name in source.defs:
            self.use(source, name)
        if every_binding:
            for name in source.bindings:
                self.use(source, name)
        return frozenset(self._found)

    def closure(self, start: Iterable[_Node]) -> set[_Node]:
        """Every node reachable from ``start`` (``start`` included)."""
        done: set[_Node] = set()
        todo = list(start)
        while todo:
            node = todo.pop()
            if node not in done:
                done.add(node)
                todo.extend(self.successors(node) - done)
        return done

    # -- what runs

    def import_time(self, source: _Source) -> None:
        """What importing ``source`` runs: top-level code, class bodies, decorators and
        defaults; not function bodies."""
        for node in source.tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                self.definition_header(node, source)
            elif _type_checking_only(node):  # imports for annotations only: never run
                for stmt in node.orelse:
                    self.scan(stmt, source, top_level=True)
            else:
                self.scan(node, source, top_level=True)

    def definition_header(self, node: ast.AST, source: _Source) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for expr in [*node.decorator_list, *node.args.defaults, *node.args.kw_defaults]:
                if expr is not None:
                    self.scan(expr, source, top_level=True)
        elif isinstance(node, ast.ClassDef):
            for expr in [*node.decorator_list, *node.bases, *node.keywords]:
                self.scan(expr, source, top_level=True)
            for stmt in node.body:
                if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                    self.definition_header(stmt, source)
                else:  # an import in a class body binds a class attribute: taken as used
                    self.scan(stmt, source, top_level=False)

    def use(self, source: _Source, symbol: str) -> None:
        """``source.symbol`` is used: a function or class runs (all of its code), an imported
        name leads on to where it is defined."""
        if symbol == _ALL:
            for name in [*source.defs, *source.bindings, *source.lazy]:
                self.use(source, name)
            return
        if symbol in source.defs:
            self.scan(source.defs[symbol], source, top_level=False)
        elif symbol in source.bindings:
            self.target(*source.bindings[symbol])
        elif symbol in source.lazy:  # loaded on first access from the submodule its table names
            self.add(*_LOADER)
            self.target(f"{source.name}.{source.lazy[symbol]}", symbol)
        elif source.is_package and self.is_module(f"{source.name}.{symbol}"):
            self.add(f"{source.name}.{symbol}", _ALL)
        elif not self.assigned(source, symbol):
            self.add(source.name, _ALL)  # defined some other way (star import, __getattr__)

    @staticmethod
    def assigned(source: _Source, symbol: str) -> bool:
        for node in _module_level(source.tree.body):
            for target in ast.walk(node):
                if isinstance(target, ast.Name) and target.id == symbol:
                    return True
        return False

    def target(self, module: str, attr: str | None) -> None:
        """An imported binding is used: a module as a whole, or one name of a module."""
        if attr is None:
            self.add(module, _ALL)
        elif self.is_module(f"{module}.{attr}"):
            self.add(f"{module}.{attr}", _ALL)
        else:
            self.add(module, attr)

    def scan(self, node: ast.AST, source: _Source, top_level: bool) -> None:
        """Imports and references in code that runs. At top level, ``from m import x`` only
        imports ``m`` (``x`` counts when code that runs refers to it); in a function it is
        taken as used. Annotations are skipped."""
        stack = [(node, top_level)]
        while stack:
            current, top = stack.pop()
            if isinstance(current, ast.Import):
                for alias in current.names:
                    self.add(alias.name, None if top else _ALL)
            elif isinstance(current, ast.ImportFrom):
                self.import_from(current, source, top)
            elif isinstance(current, ast.Attribute) and self.attribute(current, source):
                continue  # a name of a module, resolved as a whole
            elif isinstance(current, ast.Name) and isinstance(current.ctx, ast.Load):
                self.name(current.id, source)
            # code in a function runs when it is called; a class's, taken as a whole
            inner = top and not isinstance(
                current, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef
            )
            for field, value in ast.iter_fields(current):
                if field in ("annotation", "returns", "type_comment", "type_params"):
                    continue
                for child in value if isinstance(value, list) else [value]:
                    if isinstance(child, ast.AST):
                        stack.append((child, inner))

    def import_from(self, node: ast.ImportFrom, source: _Source, top_level: bool) -> None:
        module = _absolute(node, source)
        self.add(module, None)
        for alias in node.names:
            if alias.name == "*":
                self.add(module, _ALL)
            elif self.is_module(f"{module}.{alias.name}"):
                self.add(f"{module}.{alias.name}", None if top_level else _ALL)
            elif not top_level:
                self.add(module, alias.name)

    def name(self, name: str, source: _Source) -> None:
        if name in ("globals", "vars", "__import__"):  # reach names dynamically
            if self.is_module(source.name):
                self.add(source.name, _ALL)
            else:
                for binding in source.bindings:
                    self.use(source, binding)
        elif name in source.defs:
            self.add(source.name, name)  # (a script's functions all count already)
        elif name in source.bindings:
            self.target(*source.bindings[name])

    def attribute(self, node: ast.Attribute, source: _Source) -> bool:
        """``a.b.c`` where ``a`` is bound to a package module: the name ``c`` of module
        ``a.b`` is used (or all of a module). False if ``a`` is no module binding."""
        parts = []
        value: ast.AST = node
        while isinstance(value, ast.Attribute):
            parts.append(value.attr)
            value = value.value
        if not isinstance(value, ast.Name) or value.id not in source.bindings:
            return False
        module, attr = source.bindings[value.id]
        if attr is not None:
            if not self.is_module(f"{module}.{attr}"):
                return False  # a function or class, not a module
            module = f"{module}.{attr}"
        if not self.is_module(module):
            return False
        dotted = [*module.split("."), *reversed(parts)]
        for cut in range(len(dotted), 0, -1):
            prefix = ".".join(dotted[:cut])
            if self.is_module(prefix):
                self.add(prefix, dotted[cut] if cut < len(dotted) else _ALL)
                return True
        return False


def _pseudo_name(path: Path, root: Path) -> str:
    rel = path.resolve().relative_to(root.resolve()) if path.is_absolute() else path
    return "<" + rel.as_posix() + ">"


#: src directory → (the state of its package's files, the graph derived from them)
_GRAPHS: dict[Path, tuple[tuple[tuple[str, int, int], ...], ImportGraph]] = {}
_GRAPHS_KEPT = 4


def graph(src: Path) -> ImportGraph:
    """The import graph of the package under ``src``, shared by every walk in this process
    while no package file changes: a new, edited or removed module (path, mtime or size)
    starts a new graph (unchanged files are not parsed again: :func:`_parse` is cached)."""
    stamp = []
    for path in (src / PACKAGE).rglob("*.py"):
        try:
            stat = path.stat()
        except FileNotFoundError:
            continue
        stamp.append((path.as_posix(), stat.st_mtime_ns, stat.st_size))
    state = tuple(sorted(stamp))
    kept = _GRAPHS.pop(src, None)
    if kept is None or kept[0] != state:
        kept = (state, ImportGraph(src))
    _GRAPHS[src] = kept  # the most recently used last
    while len(_GRAPHS) > _GRAPHS_KEPT:  # tests walk many copies of a checkout
        del _GRAPHS[next(iter(_GRAPHS))]
    return kept[1]


def reached_files(paths: Iterable[str | Path], root: Path) -> list[str]:
    """The package files (relative to the checkout ``root``, sorted) that the scripts or
    Snakemake files ``paths`` (relative to ``root``) need, following imports as described
    above: all of a script runs; of a rule file, which is not Python, its import statements."""
    walk = graph(root / "src")
    start: set[_Node] = set()
    for rel in paths:
        path = root / rel
        if not path.is_file():
            raise FileNotFoundError(f"{rel}: no such file under {root}")
        name = _pseudo_name(Path(rel), root)
        if path.suffix == ".py":
            start |= walk.entry(_load(path, name, False), every_binding=False)
        else:
            start |= walk.entry(_load(path, name, False, _smk_imports(path)), every_binding=True)
    names = {module for module, symbol in walk.closure(start) if symbol is None}
    files = {_module_path(name, walk.src) for name in names}
    return sorted(p.relative_to(root).as_posix() for p in files if p is not None)
