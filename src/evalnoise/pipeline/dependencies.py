"""What each pipeline stage and each kind of rule depends on, declared once.

Two things must know which files a result depends on: DVC (the ``deps`` of each stage in
``dvc.yaml``) and Snakemake, which cannot see inside an imported package and so gets
``params: code_version=code_version("<area>")`` (:mod:`evalnoise.provenance`). Both come
from here.

An *area* is a kind of rule: the name its rules pass to ``code_version``. Its entry points
are the scripts (``script:``, or ``run: in_process(...)``) of the rules that carry it, read
from the rule files themselves (:func:`workflow_rules`), so a new rule needs no second list.
Declared by hand are only what cannot be read off the code: which rules each DVC stage runs
and which artifacts it reads (:data:`STAGES`), the non-Python files an area's code
reads (:data:`AREA_FILES`), and the package files a module runs by path (:data:`RUN_BY_PATH`).

The package modules are derived: the scripts' imports of ``evalnoise`` modules are followed
statically (``ast``), transitively, including the function-local imports this code base uses
a lot. A module is a dependency when it is imported at module level by a dependency (with
every package ``__init__`` on its dotted path), or imported inside a function or class that
code of a dependency refers to: ``run_trials`` reaches
:func:`evalnoise.pipeline.shards.run_trials_shard` but not ``score_shard``, so editing a
scorer does not rerun paid-for trials. The rule is conservative — any reference counts as a
call, a module used as a value counts as all of it, a class as all of its methods — so it
can over-approximate, but misses no ``import`` statement in code that can run. Annotations
are skipped (never called); imports by computed name (``importlib``) are not seen — this
code base has none, keep it so.

A stage also depends on the workflow itself (:data:`WORKFLOW`: the Snakefile, shared rule
files and the config schema, whose defaults Snakemake fills in), on the files of its rules,
and on the package modules those files import while Snakemake builds the DAG (the plan,
settings, …).

``python -m evalnoise.pipeline.dependencies --write dvc.yaml`` rewrites the ``deps`` of every
stage from this declaration (nothing else in the file changes); ``--check dvc.yaml`` exits 1
naming every missing or extra dependency and every rule the declaration cannot place (no
``code_version``, no stage). Without an option it prints every area's and stage's files.

Everything here reads the repository's own workflow and sources, so it needs a checkout
(:data:`ROOT`, found by :func:`evalnoise._checkout.checkout_root`: ``$EVALNOISE_CHECKOUT``,
the source tree evalnoise runs from, or the working directory); an installed wheel alone
raises an error saying so.
"""

from __future__ import annotations

import argparse
import ast
import functools
import re
import sys
import textwrap
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from evalnoise._checkout import checkout_root

__all__ = [
    "AREA_FILES",
    "PACKAGE",
    "ROOT",  # noqa: F822 (provided by the module's __getattr__, found on first use)
    "RUN_BY_PATH",
    "STAGES",
    "WORKFLOW",
    "Rule",
    "Stage",
    "all_area_modules",
    "area_modules",
    "areas",
    "check",
    "imported_modules",
    "main",
    "rule_problems",
    "stage_deps",
    "workflow_files",
    "workflow_rules",
    "write",
]

PACKAGE = "evalnoise"

# ROOT, the checkout whose workflow and sources are read: found on first use (module
# ``__getattr__`` below), never at import, so importing this module works outside a checkout.
# Functions take ``root=`` (tests use a copy); ``None`` means ROOT.


def __getattr__(name: str) -> Path:
    # ROOT is looked up anew on each access: it depends on the environment (EVALNOISE_CHECKOUT,
    # the working directory). Assigning it (as tests do with monkeypatch) pins it.
    if name == "ROOT":
        return checkout_root("deriving the pipeline's dependencies")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass(frozen=True)
class Stage:
    """A ``dvc.yaml`` stage (``cmd: snakemake <target>``)."""

    #: Artifacts of earlier stages the stage's rules read.
    data: tuple[str, ...]
    #: Names of the rules whose jobs the stage's target runs.
    rules: tuple[str, ...]


#: What every stage's ``snakemake`` run parses: the Snakefile, the shared rule files and the
#: config schema (its defaults are filled into the config).
WORKFLOW: tuple[str, ...] = (
    "Snakefile",
    "rules/common.smk",
    "rules/targets.smk",
    "config/schemas/config.schema.yaml",
)

#: DVC stage → its rules and the artifacts of earlier stages they read. Every rule that runs
#: a script belongs to exactly one stage (``--check`` says when one does not).
STAGES: dict[str, Stage] = {
    # with `trials_from` set, import_trials stands in for sampling, running and scoring
    "trials": Stage(
        data=(),
        # sequential mode: the rounds' checkpoints decide which trials run (they read the
        # scores of the rounds so far, which this stage's run makes as well)
        rules=(
            "sample_tasks",
            "build_image",
            "canary",
            "run_trials",
            "import_trials",
            "sequential_round",
            "sequential_summary",
        ),
    ),
    "scores": Stage(data=("results/tasks.parquet", "results/trials"), rules=("score",)),
    "judge": Stage(data=("results/tasks.parquet", "results/trials"), rules=("judge",)),
    "analysis": Stage(
        # results/trials: the trials' actions beside the shards (trajectory consistency)
        data=("results/tasks.parquet", "results/trials", "results/scores", "results/judged"),
        rules=("analyze_group", "compare", "attribution", "summarize", "compare_runs"),
    ),
    # the manifest hashes every artifact: tasks, image infos and shards, the analysis outputs
    "report": Stage(
        data=(
            "results/tasks.parquet",
            "results/trials",
            "results/scores",
            "results/judged",
            "results/analysis",
            "results/metrics.json",
        ),
        rules=("record_config", "manifest", "report", "check"),
    ),
}

#: Area → files or directories outside the package that its code reads (agent sources and
#: the base image, read by the image builders through paths, not imports).
AREA_FILES: dict[str, tuple[str, ...]] = {"images": ("agents", "images/base")}
#: package modules that run another package file as a program, by its path (which no import
#: shows): a dependency on the module is one on that file too. The model server program
#: decides how prompts are evaluated, and so the replies of the served agents and judges.
RUN_BY_PATH: dict[str, tuple[str, ...]] = {
    "src/evalnoise/models/server.py": ("src/evalnoise/models/serve.py",),
}


@dataclass(frozen=True)
class Rule:
    """A rule as its file declares it."""

    name: str
    #: the file defining it, relative to the checkout
    file: str
    #: its script (``script:`` or ``run: in_process(...)``), relative to the checkout, or None
    script: str | None
    #: the areas of its ``code_version(...)`` params
    areas: tuple[str, ...]


_RULE = re.compile(r"^([ \t]*)(?:rule|checkpoint)[ \t]+(\w+)[ \t]*:", re.MULTILINE)
#: a rule's script: ``script: "path"``, or a light rule's ``run: in_process("path", ...)``
#: (the script run inside Snakemake's process, evalnoise.pipeline.jobs.run_script)
_SCRIPT = re.compile(
    r"^[ \t]+(?:script:|run:\s*in_process\()[ \t]*(?:#.*)?\n?\s*[\"']([^\"']+)[\"']",
    re.MULTILINE,
)
_CODE_VERSION = re.compile(r"\bcode_version\(\s*[\"'](\w+)[\"']\s*\)")


def _root(root: Path | None) -> Path:
    if root is not None:
        return Path(root)
    pinned = globals().get("ROOT")  # assigned over the lookup (a test's copy of the checkout)
    if pinned is not None:
        return Path(pinned)
    return checkout_root("deriving the pipeline's dependencies")


def workflow_files(root: Path | None = None) -> list[Path]:
    """The files rules are read from: the Snakefile and ``rules/*.smk``."""
    root = _root(root)
    return [root / "Snakefile", *sorted((root / "rules").glob("*.smk"))]


def workflow_rules(root: Path | None = None) -> dict[str, Rule]:
    """Every rule of the Snakefile and ``rules/*.smk``: file, script and code_version areas.
    A rule's block ends at the next line indented no more than its ``rule`` line."""
    root = _root(root)
    if not (root / "Snakefile").is_file():
        raise FileNotFoundError(
            f"no Snakefile in {root}: the dependencies are read from the checkout's rule "
            "files, so evalnoise must be imported from a checkout (pip install -e .)"
        )
    out = {}
    for path in workflow_files(root):
        text = path.read_text(encoding="utf-8")
        for match in _RULE.finditer(text):
            body = text[match.end() :]
            indent = len(match.group(1).expandtabs())
            end = next(
                (
                    m
                    for m in re.finditer(r"^([ \t]*)[^\s#]", body, re.MULTILINE)
                    if m.start() > 0 and len(m.group(1).expandtabs()) <= indent
                ),
                None,
            )
            block = body[: end.start()] if end else body
            script = _SCRIPT.search(block)
            rel = None
            if script is not None:
                target = (path.parent / script.group(1)).resolve()
                rel = target.relative_to(root.resolve()).as_posix()
            areas_ = tuple(dict.fromkeys(_CODE_VERSION.findall(block)))
            out[match.group(2)] = Rule(
                match.group(2), path.relative_to(root).as_posix(), rel, areas_
            )
    return out


def areas(root: Path | None = None) -> dict[str, tuple[str, ...]]:
    """Area → the scripts of the rules that carry ``code_version(area)`` (sorted)."""
    out: dict[str, set[str]] = {}
    for rule in workflow_rules(root).values():
        for area in rule.areas:
            out.setdefault(area, set())
            if rule.script:
                out[area].add(rule.script)
    return {area: tuple(sorted(scripts)) for area, scripts in sorted(out.items())}


# -- the import graph ---------------------------------------------------------------------------

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
    source = _Source(name, is_package, tree, defs, {})
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
    return _Source(name, is_package, tree, defs, bindings)


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


class _Graph:
    """The package's import graph over :data:`_Node` s, its edges derived on first need.

    A node's successors depend only on its module's source (and on which package modules
    exist), never on where the walk started, so one graph serves every walk: each area's
    (or stage's) set is the closure of its entry points' successors, and a module's code is
    scanned once per process, not once per area. :func:`_graph` keeps one graph per state
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
            for name in source.defs:
                self.use(source, name)
            for name in source.bindings:
                self.use(source, name)
            return
        if symbol in source.defs:
            self.scan(source.defs[symbol], source, top_level=False)
        elif symbol in source.bindings:
            self.target(*source.bindings[symbol])
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
_GRAPHS: dict[Path, tuple[tuple[tuple[str, int, int], ...], _Graph]] = {}
_GRAPHS_KEPT = 4


def _graph(src: Path) -> _Graph:
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
        kept = (state, _Graph(src))
    _GRAPHS[src] = kept  # the most recently used last
    while len(_GRAPHS) > _GRAPHS_KEPT:  # tests walk many copies of a checkout
        del _GRAPHS[next(iter(_GRAPHS))]
    return kept[1]


def imported_modules(paths: Iterable[str | Path], root: Path | None = None) -> list[str]:
    """The package files (relative to the checkout, sorted) that the scripts or Snakemake
    files ``paths`` (relative to the checkout) need, following imports as described above."""
    root = _root(root)
    graph = _graph(root / "src")
    start: set[_Node] = set()
    for rel in paths:
        path = root / rel
        if not path.is_file():
            raise FileNotFoundError(f"{rel}: no such file under {root}")
        name = _pseudo_name(Path(rel), root)
        if path.suffix == ".py":
            start |= graph.entry(_load(path, name, False), every_binding=False)
        else:
            start |= graph.entry(_load(path, name, False, _smk_imports(path)), every_binding=True)
    names = {module for module, symbol in graph.closure(start) if symbol is None}
    files = {_module_path(name, graph.src) for name in names}
    found = {p.relative_to(root).as_posix() for p in files if p is not None}
    return sorted(found.union(*(RUN_BY_PATH.get(f, ()) for f in found)))


def area_modules(area: str, root: Path | None = None) -> list[str]:
    """The package files of one area (``code_version(area)`` hashes exactly these)."""
    scripts = areas(root)
    if not scripts.get(area):
        known = ", ".join(a for a, s in scripts.items() if s)
        raise KeyError(f"unknown area {area!r} (no rule with a script carries it); known: {known}")
    return imported_modules(scripts[area], root)


def all_area_modules(root: Path | None = None) -> dict[str, list[str]]:
    """Every area's package files (what :func:`area_modules` gives each area that has
    scripts), from one walk of the import graph shared by all areas: a module reached by
    several areas is parsed and scanned once."""
    root = _root(root)
    return {
        area: imported_modules(scripts, root) for area, scripts in areas(root).items() if scripts
    }


def stage_deps(root: Path | None = None) -> dict[str, list[str]]:
    """Each stage's ``dvc.yaml`` deps: data, workflow files, its rules' files and scripts,
    the files its areas' code reads, then the package modules (of its rules' areas, of its
    rules' scripts and of what the workflow files import). Rules that do not exist are left
    out (and reported by :func:`rule_problems`)."""
    rules = workflow_rules(root)
    out = {}
    for name, stage in STAGES.items():
        mine = [rules[r] for r in stage.rules if r in rules]
        files = [*WORKFLOW, *(rule.file for rule in mine)]
        scripts = [rule.script for rule in mine if rule.script]
        areas_ = list(dict.fromkeys(area for rule in mine for area in rule.areas))
        modules = set(imported_modules([f for f in files if not f.endswith(".yaml")], root))
        modules.update(imported_modules(scripts, root))  # also of a rule with no code_version
        for area in areas_:
            modules.update(area_modules(area, root))
        extra = [f for area in areas_ for f in AREA_FILES.get(area, ())]
        out[name] = list(dict.fromkeys([*stage.data, *files, *scripts, *extra, *sorted(modules)]))
    return out


def rule_problems(root: Path | None = None) -> list[str]:
    """What the declaration cannot place: a rule with a script but no ``code_version``, one
    in no stage (or in two), a stage naming a rule no file defines."""
    rules = workflow_rules(root)
    problems = []
    owners: dict[str, list[str]] = {}
    for stage, declared in STAGES.items():
        for name in declared.rules:
            owners.setdefault(name, []).append(stage)
            if name not in rules:
                problems.append(f"STAGES[{stage!r}] names rule {name}, which no rule file defines")
    for rule in rules.values():
        where = f"{rule.file}: rule {rule.name}"
        if rule.script and not rule.areas:
            problems.append(f"{where} runs {rule.script} but has no code_version param")
        if rule.areas and not rule.script:
            problems.append(
                f"{where} carries code_version({rule.areas[0]!r}) but runs no script: "
                "the modules it needs cannot be derived"
            )
        if rule.script and rule.name not in owners:
            problems.append(f"{where} belongs to no stage in STAGES")
        elif len(owners.get(rule.name, ())) > 1:
            problems.append(f"{where} belongs to stages {', '.join(owners[rule.name])}")
    return problems


# -- dvc.yaml -------------------------------------------------------------------------------------


def _dvc_deps(path: Path) -> dict[str, list[str]]:
    from evalnoise.pipeline.settings import read_yaml

    stages = (read_yaml(path) or {}).get("stages") or {}
    return {name: [str(dep) for dep in stage.get("deps") or []] for name, stage in stages.items()}


def check(dvc_yaml: str | Path, root: Path | None = None) -> list[str]:
    """Everything in ``dvc_yaml``'s deps that differs from the declaration, and every rule
    problem (:func:`rule_problems`); empty when all agree."""
    declared = stage_deps(root)
    actual = _dvc_deps(Path(dvc_yaml))
    problems = []
    for stage, deps in declared.items():
        if stage not in actual:
            problems.append(f"{dvc_yaml}: stage {stage} is missing")
            continue
        have = set(actual[stage])
        for dep in deps:
            if dep not in have:
                problems.append(f"{dvc_yaml}: stage {stage} is missing dep {dep}")
        for dep in actual[stage]:
            if dep not in deps:
                problems.append(f"{dvc_yaml}: stage {stage} has extra dep {dep}")
    for stage in actual:
        if stage not in declared:
            problems.append(f"{dvc_yaml}: stage {stage} is not declared in STAGES")
    return problems + rule_problems(root)


def write(dvc_yaml: str | Path, root: Path | None = None) -> bool:
    """Rewrite the deps of every declared stage of ``dvc_yaml`` in place, keeping everything
    else (comments, params, outs, metrics, plots); returns whether the file changed."""
    from io import StringIO

    from ruamel.yaml import YAML
    from ruamel.yaml.comments import CommentedSeq

    yaml = YAML()
    yaml.indent(mapping=2, sequence=4, offset=2)
    yaml.preserve_quotes = True
    yaml.width = 4096
    path = Path(dvc_yaml)
    text = path.read_text(encoding="utf-8")
    document = yaml.load(text)
    stages = document.get("stages")
    declared = stage_deps(root)
    missing = [name for name in declared if not stages or name not in stages]
    if missing:
        raise KeyError(f"{dvc_yaml}: no stage {', '.join(missing)} to write deps into")
    for name, deps in declared.items():
        stage = stages[name]
        old = stage.get("deps")
        new = CommentedSeq(deps)
        if isinstance(old, CommentedSeq) and old.ca.end:
            new.ca.end = old.ca.end  # a comment after the list stays there
        if "deps" in stage:
            stage["deps"] = new
        else:
            stage.insert(list(stage).index("cmd") + 1 if "cmd" in stage else 0, "deps", new)
    out = StringIO()
    yaml.dump(document, out)
    if out.getvalue() == text:
        return False
    path.write_text(out.getvalue(), encoding="utf-8")
    return True


# -- command line ---------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m evalnoise.pipeline.dependencies",
        description="The dependencies of each pipeline stage and rule kind, declared once: "
        "print them, check dvc.yaml against them, or write them into dvc.yaml.",
    )
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--check", metavar="DVC_YAML", help="exit 1 naming each difference")
    group.add_argument("--write", metavar="DVC_YAML", help="rewrite the stages' deps in place")
    args = parser.parse_args(argv)
    if args.write:
        changed = write(args.write)
        print(f"{args.write}: {'deps rewritten' if changed else 'deps already up to date'}")
        problems = rule_problems()
    elif args.check:
        problems = check(args.check)
    else:
        for name in (area for area, scripts in areas().items() if scripts):
            print(f"area {name}:")
            print("".join(f"  {path}\n" for path in area_modules(name)), end="")
        for name, deps in stage_deps().items():
            print(f"stage {name}:")
            print("".join(f"  {path}\n" for path in deps), end="")
        problems = rule_problems()
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
