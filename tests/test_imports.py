"""What a command imports: the core commands never load an optional dependency, a missing
extra is named, and what only a checkout has is looked for explicitly.

The import checks run in a fresh interpreter: this one has imported whatever earlier tests
needed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest

import evalnoise.report
from evalnoise import _checkout
from evalnoise._extras import EXTRAS, MissingExtraError, require
from evalnoise.cli import COMMANDS, build_parser, main

SRC = Path(__file__).resolve().parents[1] / "src"
EXAMPLE = str(resources.files("evalnoise") / "data" / "gpqa_diamond_example.csv")
#: top-level modules of the extras (pipeline, docker, report) and the report's drawing code
HEAVY = ("altair", "vl_convert", "docker", "snakemake", "dvc")


def _loaded_after(code: str, tmp_path: Path) -> set[str]:
    """The modules loaded by ``code`` in a fresh interpreter (run outside the checkout)."""
    out = tmp_path / "modules.json"
    dump = f"import json, sys\nopen({str(out)!r}, 'w').write(json.dumps(list(sys.modules)))"
    script = f"{code}\n{dump}"
    env = {"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"}
    subprocess.run(
        [sys.executable, "-c", script], check=True, cwd=tmp_path, env=env, capture_output=True
    )
    return set(json.loads(out.read_text()))


def _heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if m.split(".")[0] in HEAVY)


CORE_COMMANDS = {
    "analyze": ["analyze", EXAMPLE, "--group", "model", "--json"],
    "compare": [
        "compare",
        EXAMPLE,
        "--group",
        "model",
        "openai/gpt-5-nano-2025-08-07",
        "openai/gpt-5.4-mini-2026-03-17",
        "--resamples",
        "200",
    ],
    "plan": ["plan", "--help"],
    "import": ["import", "--help"],
}


@pytest.mark.parametrize("command", sorted(CORE_COMMANDS))
def test_a_core_command_imports_no_optional_dependency(command, tmp_path):
    argv = CORE_COMMANDS[command]
    code = (
        "import contextlib, io\nfrom evalnoise.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    try:\n        assert main({argv!r}) == 0\n"
        "    except SystemExit as exc:\n        assert exc.code == 0\n"
    )
    modules = _loaded_after(code, tmp_path)
    assert _heavy(modules) == []
    assert not any(m.startswith("evalnoise.report") for m in modules)
    # only the command's own module: not every subcommand's
    # (the infra policy, evalnoise.runner.infra_policies, is read by the attribution: not the
    # runner)
    runner = {"evalnoise.cli.run_shard", "evalnoise.runner.shard", "evalnoise.runner.trial"}
    assert not runner & set(modules)
    assert not any(m.startswith("evalnoise.") and m.endswith("_backend") for m in modules)
    assert "evalnoise.archive" not in modules
    if command == "analyze":
        commands = {m for m in modules if m.startswith(("evalnoise.cli.", "evalnoise.importers"))}
        assert commands == {"evalnoise.cli.analyze", "evalnoise.cli._columns"}


def test_the_report_cards_and_the_pipeline_stages_do_not_draw(tmp_path):
    """Importing the light part of the report (and the analysis stages, which use it) does
    not import altair or vl-convert: the package's names are loaded on first access. The
    report itself renders with vl-convert and builds its specs as plain dicts: no altair
    (only the altair charts of evalnoise.report.charts import it)."""
    code = (
        "import sys\nimport evalnoise.report.cards, evalnoise.report.cards_markdown\n"
        "import evalnoise.pipeline.stages, evalnoise.pipeline.summary\n"
        "assert not {'altair', 'vl_convert'} & set(sys.modules), sorted(sys.modules)\n"
        "from evalnoise.report import build_report"
    )
    heavy = set(_heavy(_loaded_after(code, tmp_path)))
    assert "vl_convert" in heavy
    assert "altair" not in heavy
    charts = "import sys\nfrom evalnoise.report import per_task_chart"
    assert "altair" in set(_heavy(_loaded_after(charts, tmp_path)))


def test_the_statistics_and_the_analysis_stages_do_not_import_scipy_stats(tmp_path):
    """scipy.stats costs about a second per process; the analysis jobs do not load it (the
    attribution's Fisher test imports it where it runs; evalnoise.stats._distributions)."""
    code = (
        "import evalnoise.stats, evalnoise.analysis, evalnoise.attribution\n"
        "import evalnoise.pipeline.stages, evalnoise.pipeline.attribution_stage"
    )
    modules = _loaded_after(code, tmp_path)
    assert "evalnoise.pipeline.stages" in modules
    assert "scipy.stats" not in modules


def test_the_judge_statuses_and_the_rule_judge_load_no_model(tmp_path):
    """The judge stage's numbers read the judge statuses (evalnoise.scorers.verdicts) and the
    rule judge; the scorers' and models' packages load their names on first access, so none
    of this imports the LLM judge, the model client or the server."""
    code = "import evalnoise.pipeline.judging, evalnoise.scorers.rule_judge, evalnoise.models"
    modules = _loaded_after(code, tmp_path)
    assert "evalnoise.scorers.verdicts" in modules
    assert not {m for m in modules if m.startswith("evalnoise.models.")}
    assert "evalnoise.scorers.judge" not in modules
    assert "evalnoise.scorers.score_table" not in modules
    # the client alone does not bring the server
    client = _loaded_after("from evalnoise.models import ChatClient", tmp_path)
    assert "evalnoise.models.client" in client
    assert "evalnoise.models.server" not in client


@pytest.mark.parametrize(
    "package",
    [
        "evalnoise.scorers",
        "evalnoise.models",
        "evalnoise.runner",
        "evalnoise.tasks",
        "evalnoise.report",
    ],
)
def test_the_lazy_packages_keep_their_public_names(package):
    import importlib

    module = importlib.import_module(package)
    assert set(module._MODULES) == set(module.__all__)
    for name in module.__all__:
        home = importlib.import_module(f"{package}.{module._MODULES[name]}")
        assert getattr(module, name) is getattr(home, name), name
    assert set(module.__all__) <= set(dir(module))
    with pytest.raises(AttributeError):
        module.no_such_name  # noqa: B018
    from evalnoise.scorers import JudgeResult, judge, score_table

    # the statuses and the result moved to verdicts; the old homes still name them
    assert judge.JudgeResult is JudgeResult
    assert (judge.OK, judge.JUDGE_ERROR, score_table.SKIPPED_CRASH) == (
        "ok",
        "judge_error",
        "skipped_crash",
    )


def test_the_report_does_not_reexport_statistics():
    assert "wilson_interval" not in evalnoise.report.__all__
    assert not hasattr(evalnoise.report, "wilson_interval")
    with pytest.raises(AttributeError):
        evalnoise.report.no_such_name  # noqa: B018


def test_every_command_is_listed_and_loaded_alone():
    def choices(parser):
        return set(next(a for a in parser._actions if a.dest == "command").choices)

    assert choices(build_parser()) == set(COMMANDS)
    assert choices(build_parser(["analyze", "x.csv"])) == {"analyze"}
    assert choices(build_parser(["verify", "x.tar.gz"])) == {"archive", "verify"}
    assert choices(build_parser(["--help"])) == set(COMMANDS)  # the help lists them all
    assert choices(build_parser(["nope"])) == set(COMMANDS)  # the error lists them all


# -- a missing extra is named ---------------------------------------------------------------------


def _without(monkeypatch, *modules):
    # find_spec reports a module set to None in sys.modules as absent
    for module in modules:
        monkeypatch.setitem(sys.modules, module, None)


@pytest.mark.parametrize(
    ("argv", "extra"),
    [
        (["image", "build"], "docker"),
        (["image", "build-agent", ".", "--tag", "x:y"], "docker"),
        (
            [
                "run-shard",
                *"--tasks t --agent a --resource-profile 1x".split(),
                "--trials",
                "0",
                "--run-seed",
                "1",
                "--output",
                "o.parquet",
            ],
            "docker",
        ),
        (["run", "-n"], "pipeline"),
    ],
)
def test_a_command_names_the_extra_it_misses(argv, extra, monkeypatch, capsys):
    _without(monkeypatch, *EXTRAS[extra])
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"needs the '{extra}' extra" in err
    assert f"pip install 'evalnoise[{extra}]'" in err


def test_the_report_names_its_extra(monkeypatch):
    _without(monkeypatch, "altair")
    monkeypatch.delitem(vars(evalnoise.report), "build_report", raising=False)
    with pytest.raises(ImportError, match=r"pip install 'evalnoise\[report\]'") as info:
        evalnoise.report.build_report  # noqa: B018
    assert isinstance(info.value, MissingExtraError)
    assert info.value.name == "altair"


def test_require_passes_when_installed():
    for extra in EXTRAS:
        require(extra, "this test")  # the dev environment has every extra


# -- what only a checkout has -------------------------------------------------------------------


@pytest.fixture
def no_checkout(tmp_path, monkeypatch):
    """As if evalnoise were installed from a wheel and run outside a checkout."""
    installed = tmp_path / "site-packages" / "evalnoise" / "_checkout.py"
    monkeypatch.setattr(_checkout, "__file__", str(installed))
    for name in (_checkout.CHECKOUT_ENV, "EVALNOISE_BASE_INPUTS", "EVALNOISE_AGENTS_DIR"):
        monkeypatch.delenv(name, raising=False)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    return tmp_path


def test_without_a_checkout_each_use_says_how_to_name_one(no_checkout, monkeypatch):
    from evalnoise.models.agent_images import agents_dir
    from evalnoise.pipeline import dependencies
    from evalnoise.runner.base_image import default_inputs_dir

    monkeypatch.delitem(vars(dependencies), "ROOT", raising=False)  # pinned by an earlier test
    with pytest.raises(FileNotFoundError, match="EVALNOISE_CHECKOUT") as info:
        dependencies.ROOT  # noqa: B018
    assert "deriving the pipeline's dependencies" in str(info.value)
    with pytest.raises(_checkout.CheckoutNotFoundError, match="EVALNOISE_BASE_INPUTS"):
        default_inputs_dir()
    with pytest.raises(_checkout.CheckoutNotFoundError, match="EVALNOISE_AGENTS_DIR"):
        agents_dir()


def test_the_cli_reports_a_missing_checkout_on_one_line(no_checkout, capsys):
    assert main(["image", "build"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("evalnoise image: error: building the base image needs")
    assert "EVALNOISE_BASE_INPUTS" in err and "Traceback" not in err


def test_a_checkout_is_found_by_name_or_in_the_working_directory(no_checkout, monkeypatch):
    checkout = no_checkout / "checkout"
    (checkout / "src" / "evalnoise").mkdir(parents=True)
    (checkout / "images" / "base").mkdir(parents=True)
    (checkout / "Snakefile").write_text("")
    monkeypatch.setenv(_checkout.CHECKOUT_ENV, str(checkout))
    assert _checkout.checkout_path("images/base", "a test") == checkout / "images" / "base"
    with pytest.raises(_checkout.CheckoutNotFoundError, match="agents is missing"):
        _checkout.checkout_path("agents", "a test")
    monkeypatch.setenv(_checkout.CHECKOUT_ENV, str(no_checkout / "work"))
    with pytest.raises(_checkout.CheckoutNotFoundError, match="is not an evalnoise checkout"):
        _checkout.checkout_root("a test")
    monkeypatch.delenv(_checkout.CHECKOUT_ENV)
    monkeypatch.chdir(checkout)
    assert _checkout.checkout_root("a test") == checkout
    monkeypatch.setenv("EVALNOISE_BASE_INPUTS", "/somewhere")
    assert _checkout.checkout_path(
        "images/base", "a test", override_env="EVALNOISE_BASE_INPUTS"
    ) == Path("/somewhere")


def test_in_this_checkout_the_paths_are_the_repositorys(monkeypatch):
    for name in (_checkout.CHECKOUT_ENV, "EVALNOISE_BASE_INPUTS", "EVALNOISE_AGENTS_DIR"):
        monkeypatch.delenv(name, raising=False)
    root = Path(__file__).resolve().parents[1]
    assert _checkout.checkout_root("a test") == root
    from evalnoise.models.agent_images import agents_dir
    from evalnoise.runner.base_image import default_inputs_dir

    assert agents_dir() == root / "agents"
    assert default_inputs_dir() == root / "images" / "base"
