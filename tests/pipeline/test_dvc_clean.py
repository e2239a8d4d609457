"""`dvc status` stays clean when Python caches appear inside a stage's dependencies.

Issue 21.5: importing an agent's module (the test suite does) writes
``agents/**/__pycache__/``; without ``.dvcignore`` listing it, DVC hashed it into the
``agents`` dependency and reported every stage out of date after ``tools/test.sh``. This
test takes every *directory* the project's ``dvc.yaml`` lists as a dependency, copies it into
a fresh DVC repository with the project's ``.dvcignore``, records a stage over them, then
imports and byte-compiles their Python code (as running the suite does) and asks
``dvc status``.
"""

from __future__ import annotations

import compileall
import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml
from pipeline_helpers import ROOT, ignore_caches, venv_tool


def _directory_deps() -> list[str]:
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text(encoding="utf-8"))["stages"]
    deps = {d for stage in stages.values() for d in stage.get("deps", ())}
    return sorted(d for d in deps if (ROOT / d).is_dir())


def _dvc(repo: Path, *args: str) -> str:
    result = subprocess.run(
        [venv_tool("dvc"), *args], cwd=repo, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_python_caches_in_dependencies_leave_dvc_status_clean(tmp_path):
    deps = _directory_deps()
    assert "agents" in deps  # the dependency of the report
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    _dvc(repo, "init", "-q")
    _dvc(repo, "config", "core.analytics", "false")
    shutil.copy2(ROOT / ".dvcignore", repo / ".dvcignore")
    for dep in deps:
        shutil.copytree(ROOT / dep, repo / dep, ignore=ignore_caches)
    stage = {"cmd": "echo done > out.txt", "deps": deps, "outs": ["out.txt"]}
    (repo / "dvc.yaml").write_text(yaml.safe_dump({"stages": {"stage": stage}}))
    _dvc(repo, "repro", "-q")
    assert "up to date" in _dvc(repo, "status")

    # what the suite does to these directories: import the agents' code, compile the rest
    agents = repo / "agents" / "common"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run(
        [sys.executable, "-c", "import agentlib"], cwd=agents, env=env, check=True, timeout=60
    )
    assert (agents / "__pycache__").is_dir(), sorted(p.name for p in agents.iterdir())
    for dep in deps:
        compileall.compile_dir(str(repo / dep), quiet=1)
    assert list((repo).rglob("*.pyc"))
    assert "up to date" in _dvc(repo, "status")


def test_dvc_runs_the_snakemake_of_its_own_environment(tmp_path):
    """Issue 21.6: ``.venv/bin/dvc repro`` with the venv NOT on PATH runs the stages'
    Snakemake from DVC's own environment (tools/dvc-snakemake), as dvc.yaml's stages do."""
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text(encoding="utf-8"))["stages"]
    assert all("tools/dvc-snakemake" in s["cmd"] for s in stages.values())
    repo = tmp_path / "repo"
    (repo / "tools").mkdir(parents=True)
    shutil.copy2(ROOT / "tools" / "dvc-snakemake", repo / "tools" / "dvc-snakemake")
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    _dvc(repo, "init", "-q")
    stage = {"cmd": "tools/dvc-snakemake --version > version.txt", "outs": ["version.txt"]}
    (repo / "dvc.yaml").write_text(yaml.safe_dump({"stages": {"stage": stage}}))
    bare = {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/root")}
    assert subprocess.run(["sh", "-c", "command -v snakemake"], env=bare).returncode != 0
    result = subprocess.run(
        [venv_tool("dvc"), "repro", "-q"],
        cwd=repo,
        env=bare,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    import snakemake

    assert (repo / "version.txt").read_text().strip() == snakemake.__version__
