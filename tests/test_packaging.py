"""``pip install evalnoise`` from a built wheel, in a fresh virtualenv, outside the checkout.

The wheel is built from a copy of the sources (a setuptools build writes ``build/`` and
``*.egg-info`` next to them: not into a checkout others work in) with pip's build isolation:
the project venv's setuptools is older than ``[build-system] requires`` and has no ``wheel``,
so ``--no-build-isolation`` cannot build. The fresh venv gets the wheel and its core
dependencies from the configured package index, nothing else. Then ``evalnoise
analyze`` runs on the example bundled inside the package, from a directory outside the
checkout, and the commands that need an extra or a checkout say so.

Without the package index or ``venv`` the test cannot run: it skips, and fails under CI.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from model_stack import require

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
#: what pip prints when the index (or a download) cannot be reached
_OFFLINE = (
    "Could not find a version that satisfies",
    "No matching distribution found",
    "NewConnectionError",
    "Temporary failure in name resolution",
    "Network is unreachable",
    "ConnectionError",
    "ReadTimeoutError",
)
NANO = "openai/gpt-5-nano-2025-08-07"
MINI = "openai/gpt-5.4-mini-2026-03-17"


def _run(cmd: list[str], **kwargs) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kwargs)


def _pip_ok(result: subprocess.CompletedProcess[str], what: str) -> None:
    """A pip failure for want of the index is a requirement (skip; fail under CI); any other
    pip failure is a failure of the package."""
    if result.returncode == 0:
        return
    output = result.stdout + result.stderr
    require(
        not any(marker in output for marker in _OFFLINE),
        f"{what}: the package index cannot be reached:\n{output[-2000:]}",
    )
    pytest.fail(f"{what} failed:\n{output[-4000:]}")


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> dict:
    """Build the wheel, install it with its core dependencies into a fresh venv."""
    tmp = tmp_path_factory.mktemp("packaging")
    source = tmp / "source"
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "*.pyc")
    shutil.copytree(REPO / "src", source / "src", ignore=ignore)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, source / name)
    dist = tmp / "dist"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check"]
    _pip_ok(_run([*pip, "wheel", "--no-deps", "-q", "-w", dist, source]), "building the wheel")
    (wheel,) = dist.glob("evalnoise-*.whl")

    # A venv without pip, filled by this pip (--python): ensurepip alone takes seconds. No
    # byte-compiling of every installed module either (most of the install's CPU time).
    venv = tmp / "venv"
    made = _run([sys.executable, "-m", "venv", "--without-pip", venv])
    require(made.returncode == 0, f"python -m venv does not work here: {made.stderr}")
    python = venv / "bin" / "python"
    install = [*pip, "--python", python, "install", "-q", "--no-compile", wheel]
    _pip_ok(_run(install), "installing the wheel with its dependencies")

    work = tmp / "elsewhere"  # outside the checkout: no Snakefile, no src/
    work.mkdir()
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("PYTHON", "EVALNOISE_", "VIRTUAL_ENV"))
    }
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '/usr/bin:/bin')}"
    return {"wheel": wheel, "venv": venv, "python": python, "work": work, "env": env}


def _in_venv(installed: dict, *argv: str) -> subprocess.CompletedProcess[str]:
    return _run(list(argv), cwd=installed["work"], env=installed["env"], timeout=120)


def test_the_wheel_holds_the_package_and_its_data_only(installed):
    names = zipfile.ZipFile(installed["wheel"]).namelist()
    assert all(n.split("/")[0] in ("evalnoise", "evalnoise-0.1.0.dist-info") for n in names)
    assert "evalnoise/data/gpqa_diamond_example.csv" in names
    metadata = zipfile.ZipFile(installed["wheel"]).read("evalnoise-0.1.0.dist-info/METADATA")
    requires = [
        line.split(":", 1)[1].strip()
        for line in metadata.decode().splitlines()
        if line.startswith("Requires-Dist:")
    ]
    core = {r.split(">")[0].split("=")[0].strip().lower() for r in requires if "extra ==" not in r}
    assert core == {
        "numpy",
        "scipy",
        "pandas",
        "pyarrow",
        "zstandard",
        "jsonschema",
        "pyyaml",
        "tqdm",
    }


def test_analyze_runs_on_the_bundled_example_outside_the_checkout(installed):
    where = _in_venv(
        installed,
        installed["python"],
        "-c",
        "import evalnoise, importlib.util as u\n"
        "from importlib.resources import files\n"
        "print(evalnoise.__file__)\n"
        "print(files('evalnoise') / 'data' / 'gpqa_diamond_example.csv')\n"
        "print([m for m in ('snakemake', 'dvc', 'docker', 'altair', 'vl_convert') "
        "if u.find_spec(m)])",
    )
    assert where.returncode == 0, where.stderr
    package, example, extras = where.stdout.splitlines()
    venv = installed["venv"].resolve()
    assert Path(package).resolve().is_relative_to(venv)  # the installed copy, not src/
    assert Path(example).resolve().is_relative_to(venv)
    assert extras == "[]"  # the core install has none of the extras

    result = _in_venv(installed, "evalnoise", "analyze", example, "--group", "model", "--json")
    assert result.returncode == 0, result.stderr
    groups = {g["group"]: g for g in json.loads(result.stdout)["groups"]}
    assert set(groups) == {NANO, MINI}
    nano, mini = groups[NANO], groups[MINI]
    assert (nano["n_tasks"], nano["n_obs"], mini["n_tasks"], mini["n_obs"]) == (50, 250, 50, 250)
    assert nano["mean"] == pytest.approx(0.68, abs=1e-12)
    assert mini["mean"] == pytest.approx(0.608, abs=1e-12)
    assert (nano["ci_low"], nano["ci_high"]) == pytest.approx((0.573749423, 0.786250577), abs=1e-8)
    assert (mini["ci_low"], mini["ci_high"]) == pytest.approx((0.491629881, 0.724370119), abs=1e-8)
    assert nano["icc"] == pytest.approx(0.582839799, abs=1e-8)
    assert mini["icc"] == pytest.approx(0.660962603, abs=1e-8)
    assert nano["sigma2_within"] == pytest.approx(0.092, abs=1e-12)


def test_what_needs_an_extra_or_a_checkout_says_so(installed):
    image = _in_venv(installed, "evalnoise", "image", "build")
    assert image.returncode == 2
    assert "pip install 'evalnoise[docker]'" in image.stderr
    run = _in_venv(installed, "evalnoise", "run", "-n")
    assert run.returncode == 2
    assert "pip install 'evalnoise[pipeline]'" in run.stderr
    probe = (
        "import sys\n"
        "try:\n    from evalnoise.report import build_report\n"
        "except ImportError as exc:\n    print(exc)\n"
        "from evalnoise.pipeline import dependencies\n"
        "try:\n    dependencies.ROOT\n"
        "except FileNotFoundError as exc:\n    print(exc)\n"
    )
    result = _in_venv(installed, installed["python"], "-c", probe)
    assert result.returncode == 0, result.stderr
    report, checkout = result.stdout.splitlines()
    assert "pip install 'evalnoise[report]'" in report
    assert "needs an evalnoise source checkout" in checkout
    assert "EVALNOISE_CHECKOUT" in checkout
