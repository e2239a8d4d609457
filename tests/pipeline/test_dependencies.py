"""One declaration of what each stage and rule kind depends on (evalnoise.pipeline.dependencies):
code_version() hashes exactly the files a rule's scripts reach, dvc.yaml's deps are the code
folders covering them, and both follow the scripts' imports."""

from __future__ import annotations

import ast
import hashlib
import json
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from evalnoise import provenance
from evalnoise.pipeline import dependencies
from evalnoise.pipeline.dependencies import (
    ROOT,
    STAGES,
    area_modules,
    areas,
    check,
    code_folder,
    imported_modules,
    main,
    rule_problems,
    stage_deps,
    stage_files,
    workflow_rules,
    write,
)

DVC_YAML = ROOT / "dvc.yaml"
REGENERATE = "python -m evalnoise.pipeline.dependencies --write dvc.yaml"
AREAS = sorted(area for area, scripts in areas().items() if scripts)


def _copy_checkout(tmp_path: Path) -> Path:
    """What the declaration reads (package, scripts, workflow files, dvc.yaml), copied."""
    root = tmp_path / "checkout"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for rel in ("src/evalnoise", "scripts", "rules"):
        shutil.copytree(ROOT / rel, root / rel, ignore=ignore)
    for rel in ("Snakefile", "dvc.yaml", "config/schemas/config.schema.yaml"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, root / rel)
    return root


def _files(root: Path) -> dict[str, bytes]:
    """Every file of a copy (relative path → bytes)."""
    return {
        path.relative_to(root).as_posix(): path.read_bytes()
        for path in root.rglob("*")
        if path.is_file()
    }


@pytest.fixture(scope="module")
def _shared_checkout(tmp_path_factory) -> tuple[Path, dict[str, bytes]]:
    """The copy and its files, code_version's on-disk cache of its areas among them."""
    root = _copy_checkout(tmp_path_factory.mktemp("dependencies"))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(dependencies, "ROOT", root)
        for area in AREAS:
            provenance.code_version(area)
    assert (root / provenance.CACHE).is_file()
    return root, _files(root)


@pytest.fixture
def checkout(_shared_checkout, monkeypatch) -> Path:
    """One copy of the checkout for the tests that edit one (a copy each, its areas derived
    before and after the edit, was most of this file's time), the declaration reading it.
    Put back byte for byte after each test, code_version's on-disk cache in ``.snakemake``
    too: every test starts from the same files, and its "before" code versions come from
    that cache (keyed by the content of every file the derivation reads, as in a Snakemake
    run) instead of a new derivation; what an edit changes is always derived anew."""
    root, pristine = _shared_checkout
    monkeypatch.setattr(dependencies, "ROOT", root)
    yield root
    now = _files(root)
    for rel in now.keys() - pristine.keys():
        (root / rel).unlink()
    for rel, data in pristine.items():
        if now.get(rel) != data:
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_bytes(data)
    assert _files(root) == pristine  # the next test starts from the checkout's files


def _synced_copy(tmp_path: Path) -> Path:
    """dvc.yaml copied and brought up to date: these tests do not depend on the checkout's
    dvc.yaml being current (test_dvc_yaml_deps_match_the_declaration checks that)."""
    copy = tmp_path / "dvc.yaml"
    shutil.copy2(DVC_YAML, copy)
    write(copy)
    return copy


def _dep_problems(dvc_yaml: Path) -> list[str]:
    """check() without the rule problems (other work in progress may have some)."""
    rules = set(rule_problems())
    return [problem for problem in check(dvc_yaml) if problem not in rules]


def _drop_dep(path: Path, stage: str, dep: str) -> None:
    """Remove one dep line from one stage of a dvc.yaml (plain text, like a hand edit)."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    start = lines.index(f"  {stage}:\n")
    index = next(i for i in range(start, len(lines)) if lines[i] == f"      - {dep}\n")
    del lines[index]
    path.write_text("".join(lines), encoding="utf-8")


# -- the checkout as it is ----------------------------------------------------------------------


def test_dvc_yaml_deps_match_the_declaration():
    problems = _dep_problems(DVC_YAML)
    assert not problems, f"run `{REGENERATE}`:\n" + "\n".join(problems)


def test_every_rule_has_an_area_and_a_stage():
    assert rule_problems() == []


def test_areas_are_read_from_the_rules():
    rules = workflow_rules()
    assert rules["run_trials"].script == "scripts/run_trials.py"
    assert rules["run_trials"].areas == ("runner",)
    assert rules["run_trials"].file == "rules/trials.smk"
    # a light rule runs its script in Snakemake's process: `run: in_process("...", ...)`
    assert rules["compare"].script == "scripts/compare.py"
    assert rules["compare"].areas == ("analysis",)
    assert "scripts/analyze_group.py" in areas()["analysis"]
    assert "scripts/summarize.py" in areas()["summary"]
    assert set(AREAS) >= {"tasks", "images", "runner", "scorers", "analysis", "summary", "report"}
    used = {
        match
        for path in (ROOT / "rules").glob("*.smk")
        for match in re.findall(r"code_version\(\"(\w+)\"\)", path.read_text(encoding="utf-8"))
    }
    assert used == set(AREAS)


@pytest.mark.parametrize("area", AREAS)
def test_code_version_hashes_exactly_the_area_modules(area):
    files = area_modules(area)
    assert provenance.AREAS[area] == tuple(files)
    package = ROOT / "src" / "evalnoise"
    digest = hashlib.sha256()
    for rel in files:
        digest.update((ROOT / rel).relative_to(package).as_posix().encode() + b"\0")
        digest.update((ROOT / rel).read_bytes() + b"\0")
    assert provenance.code_version(area) == digest.hexdigest()[:16]


def _covered(path: str, deps: list[str]) -> bool:
    return any(path == dep or path.startswith(dep + "/") for dep in deps)


@pytest.mark.parametrize("stage", sorted(STAGES))
def test_each_stage_covers_its_rules_code_versions_and_scripts(stage):
    """Every file code_version hashes for a stage's rules, its scripts and rule files lie
    under the stage's deps: a change Snakemake sees, DVC sees. And every dep holds such a
    file (no dep for nothing)."""
    deps = stage_deps()[stage]
    files = stage_files()[stage]
    rules = workflow_rules()
    for name in STAGES[stage].rules:
        rule = rules[name]
        assert {rule.file, rule.script} <= set(files)
        for area in rule.areas:
            assert set(area_modules(area)) <= set(files)
    assert [f for f in files if not _covered(f, deps)] == []
    code = [dep for dep in deps if dep not in STAGES[stage].data]
    assert [dep for dep in code if not any(_covered(f, [dep]) for f in files)] == []
    assert all((ROOT / dep).exists() for dep in code)


def test_deps_are_code_folders_and_the_package_top_level_modules():
    """A subpackage, rules/ and scripts/ are one dep each; a module directly in the package is
    its own dep (its folder would be all of the package)."""
    assert code_folder("src/evalnoise/stats/icc.py") == "src/evalnoise/stats"
    assert code_folder("src/evalnoise/report/templates/x.html") == "src/evalnoise/report"
    assert code_folder("src/evalnoise/atomic.py") == "src/evalnoise/atomic.py"
    assert code_folder("rules/trials.smk") == "rules"
    assert code_folder("scripts/run_trials.py") == "scripts"
    assert code_folder("config/schemas/config.schema.yaml") == ("config/schemas/config.schema.yaml")
    for deps in stage_deps().values():
        assert "src/evalnoise" not in deps
        package = [d for d in deps if d.startswith("src/")]
        assert all(d.count("/") == 2 for d in package)  # no file inside a subpackage


#: Run by one Python process: the third-party libraries the areas' scripts share are imported
#: once, then each area's import statements run in a fork of it (a fresh process each used to
#: import numpy, pandas, pyarrow and scipy anew: most of the probe's time). No package module
#: is loaded before the fork (checked), so what a child loads is what those statements load.
_PROBE = """
import json, os, sys, traceback
import numpy, pandas, pyarrow, pyarrow.parquet, scipy.stats, yaml
assert not [name for name in sys.modules if name.split(".")[0] == "evalnoise"], "preloaded"
out = {}
for area, code in json.loads(sys.argv[1]).items():
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        status = 0
        try:
            exec(compile(code, f"<{area}>", "exec"), {"__name__": "__probe__"})
            files = [module.__file__ for name, module in sorted(sys.modules.items())
                     if name.split(".")[0] == "evalnoise" and getattr(module, "__file__", None)]
            text = json.dumps(files)
        except BaseException:
            text, status = json.dumps(traceback.format_exc()), 1
        with os.fdopen(write, "w") as pipe:
            pipe.write(text)
        os._exit(status)
    os.close(write)
    with os.fdopen(read) as pipe:
        text = pipe.read()
    os.waitpid(pid, 0)
    out[area] = json.loads(text)
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def loaded_by_area() -> dict[str, list[str] | str]:
    """Area → the package files Python loads running the top-level import statements of the
    area's scripts (or the traceback of a statement that failed)."""
    code = {
        area: "\n".join(
            ast.unparse(node)
            for script in areas()[area]
            for node in ast.parse((ROOT / script).read_text(encoding="utf-8")).body
            if isinstance(node, ast.Import | ast.ImportFrom)
        )
        for area in AREAS
    }
    result = subprocess.run(
        [sys.executable, "-c", _PROBE, json.dumps(code)],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    return json.loads(result.stdout)


@pytest.mark.parametrize("area", AREAS)
def test_static_set_covers_what_python_loads(area, loaded_by_area):
    """Python itself, importing what the area's scripts import at top level, loads no package
    module outside the derived set (function-local imports are checked by the tests below)."""
    files = loaded_by_area[area]
    assert isinstance(files, list), files  # else the traceback of a failed import
    loaded = {Path(p).resolve().relative_to(ROOT).as_posix() for p in files}
    assert loaded - set(area_modules(area)) == set()


def test_a_scorer_edit_does_not_touch_the_runner():
    """Function-level reach: run_trials needs pipeline.shards.run_trials_shard, not
    score_shard, so the paid-for trials do not depend on the scorers (and vice versa)."""
    runner, scorers = set(area_modules("runner")), set(area_modules("scorers"))
    assert "src/evalnoise/pipeline/shards.py" in runner & scorers
    assert not {m for m in runner if m.startswith("src/evalnoise/scorers/")}
    assert "src/evalnoise/scorers/judge.py" in scorers
    assert not {m for m in scorers if m.startswith("src/evalnoise/runner/")}
    analysis = set(area_modules("analysis"))
    for module in ("pipeline/stages.py", "pipeline/collect.py", "runner/infra_policies.py"):
        assert f"src/evalnoise/{module}" in analysis
    assert "src/evalnoise/analysis.py" in analysis


#: The text summary.txt shows: its lines, the groups' lines, the attribution's, the judges'.
WORDING = (
    "src/evalnoise/pipeline/summary.py",
    "src/evalnoise/group_text.py",
    "src/evalnoise/attribution/text.py",
    "src/evalnoise/report/judge_text.py",
    "src/evalnoise/design_text.py",
)


def test_the_numbers_do_not_hash_the_wording():
    """The numeric jobs (per-group analysis, compare, attribution, the sequential rounds)
    carry code_version("analysis"), which hashes no report module and no module of text;
    summarize and check carry code_version("summary"), which does."""
    rules = workflow_rules()
    for name in ("analyze_group", "compare", "attribution", "sequential_round"):
        assert rules[name].areas == ("analysis",)
    for name in ("summarize", "check"):
        assert rules[name].areas == ("summary",)
    # the adaptive run's reasons: worded by the rule that writes summary.json, not the checkpoint
    assert rules["sequential_summary"].areas == ("sequential_summary",)
    assert "src/evalnoise/stopping_text.py" in area_modules("sequential_summary")
    analysis, summary = set(area_modules("analysis")), set(area_modules("summary"))
    assert not {m for m in analysis if m.startswith("src/evalnoise/report/")}
    assert not analysis & set(WORDING)
    assert set(WORDING) <= summary
    assert "src/evalnoise/pipeline/stages.py" in analysis & summary
    # the adaptive run's stopping rule is a number; the sentences saying why it stopped are not
    assert "src/evalnoise/pipeline/sequential.py" in analysis


@pytest.mark.parametrize("module", WORDING)
def test_rewording_a_line_reruns_the_summary_not_a_statistic(checkout, module):
    """An edit of a card's or a summary line's wording (in a copy of the checkout) changes
    code_version("summary") and leaves code_version("analysis") as it was: Snakemake reruns
    summarize (and what reads it), never a group's statistics, a comparison or attribution."""
    root = checkout
    before = {area: provenance.code_version(area) for area in ("analysis", "summary")}
    path = root / module
    path.write_text(
        path.read_text(encoding="utf-8") + '\n\nREWORDED = "a line said differently"\n',
        encoding="utf-8",
    )
    assert provenance.code_version("analysis") == before["analysis"]
    assert provenance.code_version("summary") != before["summary"]


#: A sentence of each text module that words a statistic's result: (module, old, new, the
#: areas that hash it). The decisions' reasons reach summary.txt and the report through
#: results/sequential/summary.json, which sequential_summary writes; the D study's lines are
#: printed by the summary and the report alike.
SENTENCES = (
    (
        "src/evalnoise/stopping_text.py",
        "task limit reached: all",
        "task cap reached: all",
        {"sequential_summary"},
    ),
    (
        "src/evalnoise/design_text.py",
        '"cheapest design to {goal}"',
        '"least costly design to {goal}"',
        {"summary", "report"},
    ),
)


@pytest.mark.parametrize(
    ("module", "old", "new", "areas"), SENTENCES, ids=[m for m, *_ in SENTENCES]
)
def test_rewording_a_reason_changes_only_the_summary_and_report_versions(
    checkout, module, old, new, areas
):
    """A sentence of the stopping decisions' or the D study's words, reworded in a copy of
    the checkout, changes the code version of the summary (summarize and check; the
    reasons' own area, sequential_summary, the rule that writes them) and of the report
    where it prints them, and of no other area: the adaptive checkpoint (sequential_round) and every
    analysis carry code_version("analysis"), which stays as it was, so none of them reruns."""
    root = checkout
    before = {area: provenance.code_version(area) for area in AREAS}
    path = root / module
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, f"{module}: the sentence to reword is not there once"
    path.write_text(text.replace(old, new), encoding="utf-8")
    after = {area: provenance.code_version(area) for area in AREAS}
    assert {area for area in AREAS if after[area] != before[area]} == areas
    assert after["analysis"] == before["analysis"]
    assert workflow_rules()["sequential_round"].areas == ("analysis",)


#: The judge's model code: the HTTP client, the managed server, the LLM judge. The judge
#: stage's numbers read the judges' verdicts from the score shards, never a model.
MODEL_CODE = {
    "src/evalnoise/models/client.py": "scorers",
    "src/evalnoise/models/server.py": "runner",
    "src/evalnoise/scorers/judge.py": "scorers",
}


def test_the_numbers_do_not_hash_the_model_code():
    """The judge statuses the judge stage counts (evalnoise.scorers.verdicts) import no model
    client, and the scorers' and models' packages load their names on first access: the
    analysis area reaches neither the client, the server nor the LLM judge."""
    analysis = set(area_modules("analysis"))
    assert not analysis & set(MODEL_CODE)
    assert not {m for m in analysis if m.startswith("src/evalnoise/models/")}
    assert "src/evalnoise/scorers/verdicts.py" in analysis  # where the statuses are read from
    for module, area in MODEL_CODE.items():
        assert module in area_modules(area)


@pytest.mark.parametrize("module", sorted(MODEL_CODE))
def test_editing_the_model_code_reruns_no_statistic(checkout, module):
    """An edit of the model client, the server or the LLM judge (in a copy of the checkout)
    leaves code_version("analysis") as it was, and changes the code version of the rules that
    run that code (judging with the client, running trials with the server)."""
    root = checkout
    area = MODEL_CODE[module]
    before = {name: provenance.code_version(name) for name in ("analysis", area)}
    path = root / module
    path.write_text(
        path.read_text(encoding="utf-8") + "\n\nRETRIES_CHANGED = 7\n", encoding="utf-8"
    )
    assert provenance.code_version("analysis") == before["analysis"]
    assert provenance.code_version(area) != before[area]


# -- a missing dependency is reported -------------------------------------------------------------


def test_check_names_a_missing_and_an_extra_dep(tmp_path, capsys):
    copy = _synced_copy(tmp_path)
    _drop_dep(copy, "analysis", "src/evalnoise/pipeline")
    _drop_dep(copy, "scores", "src/evalnoise/provenance.py")
    extra = "      - scripts\n      - src/evalnoise/archive.py\n      - src/evalnoise/cli\n"
    text = copy.read_text(encoding="utf-8")
    copy.write_text(text.replace("      - scripts\n", extra, 1), encoding="utf-8")
    assert set(_dep_problems(copy)) == {
        f"{copy}: stage analysis is missing dep src/evalnoise/pipeline",
        f"{copy}: stage scores is missing dep src/evalnoise/provenance.py",
        f"{copy}: stage trials has extra dep src/evalnoise/archive.py",
        f"{copy}: stage trials has extra dep src/evalnoise/cli",
    }
    assert main(["--check", str(copy)]) == 1
    err = capsys.readouterr().err
    assert "missing dep src/evalnoise/pipeline" in err
    assert "extra dep src/evalnoise/archive.py" in err


def test_a_new_module_imported_in_a_function_must_be_declared(checkout):
    """A module that analysis code starts importing (inside a function) is a dependency of
    the analysis stage and of code_version("analysis") at once; --write fixes dvc.yaml."""
    root = checkout
    write(root / "dvc.yaml")
    assert _dep_problems(root / "dvc.yaml") == []
    before = provenance.code_version("analysis")
    (root / "src/evalnoise/brand_new.py").write_text("VALUE = 1\n", encoding="utf-8")
    stages = root / "src/evalnoise/pipeline/stages.py"
    stages.write_text(
        stages.read_text(encoding="utf-8")
        + "\n\ndef _uses_new():\n    from evalnoise.brand_new import VALUE\n\n    return VALUE\n",
        encoding="utf-8",
    )
    assert "src/evalnoise/brand_new.py" not in area_modules("analysis")  # nothing calls it
    stages.write_text(
        stages.read_text(encoding="utf-8") + "\n\nCALLED = _uses_new()\n", encoding="utf-8"
    )
    assert "src/evalnoise/brand_new.py" in area_modules("analysis")
    assert "src/evalnoise/brand_new.py" in provenance.AREAS["analysis"]
    assert provenance.code_version("analysis") != before
    problems = _dep_problems(root / "dvc.yaml")
    stages = [s for s, deps in stage_deps().items() if "src/evalnoise/brand_new.py" in deps]
    assert "analysis" in stages
    assert problems == [
        f"{root / 'dvc.yaml'}: stage {stage} is missing dep src/evalnoise/brand_new.py"
        for stage in stages
    ]
    assert write(root / "dvc.yaml") is True
    assert _dep_problems(root / "dvc.yaml") == []
    assert write(root / "dvc.yaml") is False


def test_a_new_module_in_a_folder_a_stage_has_needs_no_dvc_yaml_edit(checkout):
    """A module added to a subpackage the analysis stage depends on already (and used by its
    code) joins code_version("analysis") and leaves dvc.yaml as it is: the folder covers it."""
    root = checkout
    write(root / "dvc.yaml")
    before = provenance.code_version("analysis")
    new = "src/evalnoise/pipeline/brand_new_step.py"
    (root / new).write_text("VALUE = 1\n", encoding="utf-8")
    stages = root / "src/evalnoise/pipeline/stages.py"
    stages.write_text(
        stages.read_text(encoding="utf-8")
        + "\n\nfrom evalnoise.pipeline.brand_new_step import VALUE as _NEW\n",
        encoding="utf-8",
    )
    assert new in area_modules("analysis")
    assert provenance.code_version("analysis") != before
    assert _dep_problems(root / "dvc.yaml") == []
    assert write(root / "dvc.yaml") is False


def test_a_rule_the_declaration_cannot_place_is_reported(checkout):
    root = checkout
    baseline = set(rule_problems())  # whatever the checkout has (other work in progress)
    with open(root / "rules/report.smk", "a", encoding="utf-8") as handle:
        handle.write(
            '\n\nrule extra:\n    output:\n        "x",\n    script:\n'
            '        "../scripts/report.py"\n'
        )
    problems = set(rule_problems()) - baseline
    assert problems == {
        "rules/report.smk: rule extra runs scripts/report.py but has no code_version param",
        "rules/report.smk: rule extra belongs to no stage in STAGES",
    }
    assert problems <= set(check(root / "dvc.yaml"))


def test_write_restores_the_deps_and_keeps_everything_else(tmp_path):
    copy = _synced_copy(tmp_path)
    synced = copy.read_text(encoding="utf-8")
    _drop_dep(copy, "trials", "scripts")
    _drop_dep(copy, "report", "src/evalnoise/pipeline")
    assert len(_dep_problems(copy)) == 2
    assert write(copy) is True
    assert _dep_problems(copy) == []
    assert copy.read_text(encoding="utf-8") == synced  # comments, params, outs, plots kept


def test_write_keeps_everything_but_deps(tmp_path):
    copy = tmp_path / "dvc.yaml"
    original = DVC_YAML.read_text(encoding="utf-8")
    copy.write_text(original.replace("      - rules\n", ""), encoding="utf-8")
    write(copy)
    old, new = yaml.safe_load(original), yaml.safe_load(copy.read_text(encoding="utf-8"))
    for stage in old["stages"].values():
        stage.pop("deps")
    for stage in new["stages"].values():
        stage.pop("deps")
    assert old == new
    assert copy.read_text(encoding="utf-8").startswith(original.split("stages:")[0])
    assert "# one plot per agent @ resource profile" in copy.read_text(encoding="utf-8")


# -- code_version follows its modules ------------------------------------------------------------


def test_code_version_changes_when_one_of_its_modules_changes(checkout):
    root = checkout
    before = {area: provenance.code_version(area) for area in AREAS}
    assert before == {area: provenance.code_version(area) for area in AREAS}  # deterministic
    with open(root / "src/evalnoise/scorers/judge.py", "a", encoding="utf-8") as handle:
        handle.write("# an edit\n")
    after = {area: provenance.code_version(area) for area in AREAS}
    changed = {area for area in AREAS if after[area] != before[area]}
    expected = {a for a in AREAS if "src/evalnoise/scorers/judge.py" in area_modules(a)}
    assert changed == expected
    assert "scorers" in changed
    assert "runner" not in changed  # no trial reruns for a judge edit
    with open(root / "src/evalnoise/pipeline/collect.py", "a", encoding="utf-8") as handle:
        handle.write("# an edit\n")
    assert provenance.code_version("analysis") != after["analysis"]


def test_unknown_area_is_an_error():
    with pytest.raises(KeyError, match="unknown area 'nope'"):
        provenance.code_version("nope")


# -- the import analysis on a small package -------------------------------------------------------


def _tree(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")


def test_imports_followed_statically(tmp_path):
    _tree(
        tmp_path,
        {
            "src/evalnoise/__init__.py": "",
            "src/evalnoise/top.py": "from evalnoise.pkg import helper\n",
            "src/evalnoise/pkg/__init__.py": "from .sub import helper\n",
            "src/evalnoise/pkg/sub.py": """\
                def helper():
                    from evalnoise import local_only
                    return local_only.VALUE

                def unused():
                    from evalnoise import never

                class Thing:
                    def method(self):
                        from evalnoise.methods import M
                """,
            "src/evalnoise/local_only.py": "VALUE = 1\n",
            "src/evalnoise/never.py": "",
            "src/evalnoise/methods.py": "M = 1\n",
            "src/evalnoise/mod.py": """\
                def f():
                    from evalnoise import via_attr
                def g():
                    from evalnoise import never
                """,
            "src/evalnoise/via_attr.py": "",
            "scripts/entry.py": """\
                import json

                from evalnoise.pkg import helper
                from evalnoise import mod

                def main():
                    mod.f()
                    return helper()
                """,
            "scripts/thing.py": "from evalnoise.pkg.sub import Thing\n\nThing().method()\n",
            "scripts/unused.py": "from evalnoise.pkg.sub import Thing\n",
        },
    )
    assert imported_modules(["scripts/entry.py"], tmp_path) == [
        "src/evalnoise/__init__.py",
        "src/evalnoise/local_only.py",
        "src/evalnoise/mod.py",
        "src/evalnoise/pkg/__init__.py",
        "src/evalnoise/pkg/sub.py",
        "src/evalnoise/via_attr.py",
    ]
    assert "src/evalnoise/methods.py" in imported_modules(["scripts/thing.py"], tmp_path)
    # imported, never used: its module runs, the methods do not
    assert imported_modules(["scripts/unused.py"], tmp_path) == [
        "src/evalnoise/__init__.py",
        "src/evalnoise/pkg/__init__.py",
        "src/evalnoise/pkg/sub.py",
    ]


def test_snakemake_file_imports(tmp_path):
    _tree(
        tmp_path,
        {
            "src/evalnoise/__init__.py": "",
            "src/evalnoise/a.py": "",
            "src/evalnoise/b.py": "X = 1\nY = 2\n",
            "src/evalnoise/c.py": "def f():\n    pass\n",
            "rules/x.smk": """\
                # rules that import
                from evalnoise import a
                from evalnoise.b import (
                    X,
                    Y,
                )


                rule r:
                    output:
                        "x",
                    shell:
                        "import this"


                def fn(wildcards):
                    from evalnoise.c import f

                    return f()
                """,
        },
    )
    assert imported_modules(["rules/x.smk"], tmp_path) == [
        "src/evalnoise/__init__.py",
        "src/evalnoise/a.py",
        "src/evalnoise/b.py",
        "src/evalnoise/c.py",
    ]


def test_building_the_dag_imports_no_model_judge_statistics_or_shard_runner():
    """What the rule files import while Snakemake builds the DAG (the plan, every job's params,
    the wiring) is a dep of every DVC stage: it stays off the model code, the LLM judge, the
    statistics and the shard runner, which are deps only of the stages that hash them."""
    rule_files = [path.relative_to(ROOT).as_posix() for path in dependencies.workflow_files()]
    dag_build = set(imported_modules(rule_files))
    assert "src/evalnoise/pipeline/run_plan.py" in dag_build  # the walk did reach the plan
    assert "src/evalnoise/scorers/judge_template.py" in dag_build  # the judge's hash
    heavy = {
        m
        for m in dag_build
        if m.startswith(("src/evalnoise/models/", "src/evalnoise/stats/"))
        or m
        in (
            "src/evalnoise/scorers/judge.py",
            "src/evalnoise/pipeline/shards.py",
            "src/evalnoise/runner/shard.py",
        )
    }
    assert heavy == set()
    analysis = stage_files()["analysis"]
    assert not [m for m in analysis if m.startswith("src/evalnoise/models/")]
    assert "src/evalnoise/models" not in stage_deps()["analysis"]
    assert "src/evalnoise/scorers/judge.py" not in analysis


def test_a_lazy_package_table_leads_each_name_to_its_own_module(tmp_path):
    """A lazy package's names load from the submodule its ``_MODULES`` table names
    (evalnoise._lazy.load): a script using one name reaches that submodule and no other; a
    script using the package as a whole reaches every submodule of the table."""
    _tree(
        tmp_path,
        {
            "src/evalnoise/__init__.py": "",
            "src/evalnoise/_lazy.py": "def load(namespace, modules, name, extras=None):\n"
            "    import importlib\n",
            "src/evalnoise/pkg/__init__.py": """\
                from evalnoise import _lazy

                _MODULES = {"light": "light", "Heavy": "heavy"}


                def __getattr__(name):
                    return _lazy.load(globals(), _MODULES, name)
                """,
            "src/evalnoise/pkg/light.py": "def light():\n    return 1\n",
            "src/evalnoise/pkg/heavy.py": "class Heavy:\n    pass\n",
            "scripts/one.py": "from evalnoise.pkg import light\n\nlight()\n",
            "scripts/whole.py": "from evalnoise import pkg\n\nprint(vars(pkg))\n",
        },
    )
    one = imported_modules(["scripts/one.py"], tmp_path)
    assert "src/evalnoise/pkg/light.py" in one
    assert "src/evalnoise/_lazy.py" in one  # the loader runs
    assert "src/evalnoise/pkg/heavy.py" not in one
    whole = imported_modules(["scripts/whole.py"], tmp_path)
    assert {"src/evalnoise/pkg/light.py", "src/evalnoise/pkg/heavy.py"} <= set(whole)


def test_the_lazy_packages_keep_their_tables_as_data():
    """Every package whose names load on first access holds its table as a literal dict
    and no import statement in its ``__getattr__``."""
    lazy = []
    for init in (ROOT / "src/evalnoise").glob("*/__init__.py"):
        tree = ast.parse(init.read_text(encoding="utf-8"))
        getattr_ = [n for n in tree.body if getattr(n, "name", None) == "__getattr__"]
        if not getattr_:
            continue
        lazy.append(init.parent.name)
        assert not [
            n for n in ast.walk(getattr_[0]) if isinstance(n, ast.Import | ast.ImportFrom)
        ], init
        tables = [
            n
            for n in tree.body
            if isinstance(n, ast.Assign) and [t.id for t in n.targets] == ["_MODULES"]
        ]
        assert tables and isinstance(tables[0].value, ast.Dict), init
    assert {"models", "report", "runner", "scorers", "tasks"} <= set(lazy)


def test_a_program_a_module_runs_is_hashed_with_it():
    """The model server runs serve.py by path, the task image builder runs its build worker
    with ``python -m``: no import shows either, so both are declared (RUN_BY_PATH)."""
    runner = area_modules("runner")
    assert "src/evalnoise/models/serve.py" in runner
    assert "src/evalnoise/runner/_build_worker.py" in runner
