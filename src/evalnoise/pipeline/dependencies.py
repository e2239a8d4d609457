"""What each pipeline stage and each kind of rule depends on, declared once.

Two things must know which files a result depends on. Snakemake cannot see inside an
imported package, so a rule carries ``params: code_version=code_version("<area>")``
(:mod:`evalnoise.provenance`): a hash of exactly the package files its scripts reach
(:func:`area_modules`), so editing a module reruns exactly the jobs whose code it is. DVC
runs one Snakemake target per stage (``dvc.yaml``) and needs only to know *when* to run it:
a stage's ``deps`` are its data and its code folders (:func:`stage_deps`), a cover of every
file its rules' code versions hash, its scripts, its rule files and what the DAG build
imports (:func:`stage_files`). An edit in a folder a stage depends on reruns its Snakemake
target, which reruns the jobs whose code version changed and no other: a scorer edit runs
the ``trials`` stage's target, and no paid-for trial, as ``code_version("runner")`` does not
hash the scorers.

An *area* is a kind of rule: the name its rules pass to ``code_version``. Its entry points
are the scripts (``script:``, or ``run: in_process(...)``) of the rules that carry it, read
from the rule files themselves (:func:`workflow_rules`), so a new rule needs no second list.
Declared by hand are only what cannot be read off the code: which rules each DVC stage runs
and which artifacts it reads (:data:`STAGES`), the non-Python files an area's code reads
(:data:`AREA_FILES`), and the package files a module runs by path (:data:`RUN_BY_PATH`).
What the scripts reach in the package is :mod:`evalnoise.pipeline.import_graph`'s walk.

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
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from evalnoise._checkout import checkout_root
from evalnoise.pipeline.import_graph import PACKAGE, reached_files

__all__ = [
    "AREA_FILES",
    "CODE_FOLDERS",
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
    "code_folder",
    "imported_modules",
    "main",
    "rule_problems",
    "stage_deps",
    "stage_files",
    "workflow_files",
    "workflow_rules",
    "write",
]

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
#: package modules that run another package file as a program, by its path or ``-m`` name
#: (which no import shows): a dependency on the module is one on that file too. The model
#: server program decides how prompts are evaluated, and so the replies of the served agents
#: and judges; the build worker builds an environment task's image.
RUN_BY_PATH: dict[str, tuple[str, ...]] = {
    "src/evalnoise/models/server.py": ("src/evalnoise/models/serve.py",),
    "src/evalnoise/runner/task_images.py": ("src/evalnoise/runner/_build_worker.py",),
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


def imported_modules(paths: Iterable[str | Path], root: Path | None = None) -> list[str]:
    """The package files (relative to the checkout, sorted) that the scripts or Snakemake
    files ``paths`` (relative to the checkout) need (:func:`evalnoise.pipeline.import_graph.
    reached_files`), with the files the reached modules run by path (:data:`RUN_BY_PATH`)."""
    found = reached_files(paths, _root(root))
    return sorted(set(found).union(*(RUN_BY_PATH.get(f, ()) for f in found)))


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


# -- a stage's files and its dvc.yaml deps ------------------------------------------------------

#: The folders a stage depends on as a whole when it needs any file in them: the rule files,
#: the scripts and each subpackage of the package. The package's own top-level modules are
#: deps one by one (their folder, ``src/evalnoise``, is all of the package).
CODE_FOLDERS: tuple[str, ...] = ("rules", "scripts", f"src/{PACKAGE}/*")


def code_folder(path: str) -> str:
    """The dep that covers ``path`` in ``dvc.yaml``: its code folder (:data:`CODE_FOLDERS`),
    or the path itself."""
    parts = path.split("/")
    for folder in CODE_FOLDERS:
        pattern = folder.split("/")
        if len(parts) > len(pattern) and all(
            want in ("*", part) for want, part in zip(pattern, parts, strict=False)
        ):
            return "/".join(parts[: len(pattern)])
    return path


def stage_files(root: Path | None = None) -> dict[str, list[str]]:
    """Each stage's files: workflow files, its rules' files and scripts, the files its areas'
    code reads, then the package modules (of its rules' areas, of its rules' scripts and of
    what the workflow files import while Snakemake builds the DAG). Rules that do not exist
    are left out (and reported by :func:`rule_problems`)."""
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
        out[name] = list(dict.fromkeys([*files, *scripts, *extra, *sorted(modules)]))
    return out


def stage_deps(root: Path | None = None) -> dict[str, list[str]]:
    """Each stage's ``dvc.yaml`` deps: its data, then the code folders (:func:`code_folder`)
    of its files (:func:`stage_files`), the package's subpackages before its top-level
    modules."""
    out = {}
    for name, files in stage_files(root).items():
        covers = list(dict.fromkeys(code_folder(f) for f in files))
        package = [c for c in covers if c.startswith(f"src/{PACKAGE}/")]
        top = [c for c in package if c.endswith(".py")]
        rest = [c for c in covers if c not in package]
        out[name] = [*STAGES[name].data, *rest, *sorted(set(package) - set(top)), *sorted(top)]
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
