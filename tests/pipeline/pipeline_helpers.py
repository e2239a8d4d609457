"""Helpers of the pipeline tests: where the repository is, how to run its tools."""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_PATH = ROOT / "config" / "schemas" / "config.schema.yaml"
CONFIG_PATH = ROOT / "config" / "config.yaml"


def venv_tool(name: str) -> str:
    """A tool next to this interpreter (the project's venv), else on PATH; skip if absent."""
    candidate = Path(sys.executable).with_name(name)
    if candidate.exists():
        return str(candidate)
    found = shutil.which(name)
    if not found:
        pytest.skip(f"{name} is not installed")
    return found


def snakemake_bin() -> str:
    return venv_tool("snakemake")


def in_ci() -> bool:
    import os

    return bool(os.environ.get("CI"))


# -- a workspace: a copy of the project in which the pipeline runs for real --------------------

#: What a workspace copies from the repository (everything the DAG and dvc.yaml name).
PROJECT_FILES = (
    "Snakefile",
    "dvc.yaml",
    ".dvcignore",
    "rules",
    "scripts",
    "config",
    "profiles",
    "src",
    "agents",
    "images",
    "examples",
    "tools/dvc-snakemake",
)
TINY_AGENT = ROOT / "tests" / "pipeline" / "tiny_agent"


def ignore_caches(directory: str, names: list[str]) -> list[str]:
    """``shutil.copytree``'s ``ignore``: Python's caches are not part of a project."""
    return [n for n in names if n in ("__pycache__", ".pytest_cache") or n.endswith(".pyc")]


def copy_project(path: Path, names: tuple[str, ...] = PROJECT_FILES, root: Path = ROOT) -> Path:
    """Copy ``names`` of the repository (or of the tree ``root``) into the new directory
    ``path`` (the tests' workspaces and benchmarks/bench_pipeline.py's)."""
    path.mkdir(parents=True)
    for name in names:
        source = root / name
        if source.is_dir():
            shutil.copytree(source, path / name, ignore=ignore_caches)
        else:
            (path / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, path / name)
    return path


def merge(base: dict, overrides: dict) -> dict:
    """``overrides`` merged into ``base``; the maps of agents and resource profiles are
    replaced whole (they are lists of things, not settings)."""
    out = dict(base)
    for key, value in overrides.items():
        if (
            isinstance(value, dict)
            and isinstance(out.get(key), dict)
            and key not in ("agents", "resource_profiles")
        ):
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out


def write_config(workspace: Path, overrides: dict) -> dict:
    """config/config.yaml of ``workspace``: the embedded default with ``overrides``."""
    import yaml

    with open(CONFIG_PATH, encoding="utf-8") as handle:
        config = merge(yaml.safe_load(handle), overrides)
    if "agents" in overrides and "expected_failures" not in overrides.get("health", {}):
        # the default's declared failures name the default's agents
        config["health"] = {**config.get("health", {}), "expected_failures": []}
    if "agents" in overrides:
        # the overriding agents run under every profile the test gives
        for agent in config["agents"].values():
            agent.setdefault("resource_profiles", None)
    if "stage" not in overrides.get("scorer", {}).get("judge", {}):
        # the pipeline's mechanics are tested with the fast numeric scorer; the judge stage
        # (a real model server) has its own tests (test_judge_stage.py)
        config["scorer"]["judge"]["stage"] = False
    if "png" not in overrides.get("report", {}):
        # the report's pages without their PNG copies, whose rendering is most of the report
        # stage's CPU; the PNGs are tested where they are made (tests/report/), and
        # test_e2e.py's run, which asks for them, makes them
        config["report"] = {**config.get("report", {}), "png": False}
    with open(workspace / "config" / "config.yaml", "w", encoding="utf-8") as handle:
        yaml.safe_dump(config, handle, sort_keys=False)
    return config


def git(workspace: Path, *args: str) -> str:
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
        "PATH": "/usr/bin:/bin",
        "HOME": str(workspace),
    }
    return subprocess.run(
        ["git", *args], cwd=workspace, env=env, check=True, capture_output=True, text=True
    ).stdout


def precompile(src: Path) -> None:
    """Byte-compile the workspace's package once, for all of its jobs.

    Every Snakemake job (and Snakemake itself) imports evalnoise from the workspace's own
    copy; where ``PYTHONDONTWRITEBYTECODE`` is set (as on these machines) no process writes
    the ``.pyc`` it compiled, so each of a run's ~40 jobs compiled the same modules again
    (≈ 0.25 s of CPU each, measured). The ``.pyc`` files are checked against the source's
    hash, not its mtime, so a test that edits a module of its workspace imports the edit.
    """
    import compileall
    import py_compile

    compileall.compile_dir(
        src, quiet=1, invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH
    )


@functools.cache
def derived_code_areas() -> Path | None:
    """The checkout's on-disk cache of its derived code areas (``evalnoise.provenance.CACHE``),
    derived in this process if it is not there for the checkout's present state: None when
    evalnoise is imported from another tree than this checkout's.

    Snakemake derives the code areas (the import walk behind every ``code_version``) at its
    first DAG build in a fresh copy of the project, a few seconds of CPU each time. The cache
    is keyed by the bytes of every file the derivation reads, so a workspace holding the same
    files as the checkout can start with the checkout's copy (:func:`seed_code_areas`); a test
    that edits a module or a rule changes the key, and its Snakemake derives anew."""
    from evalnoise import provenance
    from evalnoise.pipeline import dependencies

    if Path(dependencies.ROOT).resolve() != ROOT.resolve():
        return None
    for area, scripts in dependencies.areas(ROOT).items():
        if scripts:
            provenance.area_files(area)
    cache = ROOT / provenance.CACHE
    return cache if cache.is_file() else None


def seed_code_areas(workspace: Path) -> None:
    """Give a copy of the project the checkout's derived code areas (see
    :func:`derived_code_areas`): only read where its key is the copy's own."""
    from evalnoise import provenance

    cache = derived_code_areas()
    if cache is not None:
        (workspace / provenance.CACHE).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(cache, workspace / provenance.CACHE)


def prepare_copy(path: Path) -> Path:
    """A copy of the project (:func:`copy_project`) made ready for its Snakemake runs: its
    package byte-compiled (:func:`precompile`), its code areas derived
    (:func:`seed_code_areas`)."""
    precompile(path / "src")
    seed_code_areas(path)
    return path


def make_workspace(path: Path, overrides: dict) -> Path:
    """A fresh git + DVC repository at ``path`` holding the project and the tiny agent, with
    the project's DVC config (so its default remote is ``path``'s sibling
    ``evalnoise-dvc-remote``, as the project's is)."""
    prepare_copy(copy_project(path))
    shutil.copytree(TINY_AGENT, path / "agents" / "tiny", ignore=ignore_caches)
    write_config(path, overrides)
    # results/metrics.json is a DVC metric with cache: false, so git keeps it
    (path / ".gitignore").write_text(
        ".snakemake/\n/results/*\n!/results/metrics.json\n"
        ".evalnoise-cache/\n__pycache__/\n*.tar.gz\n"
    )
    git(path, "init", "-q")
    run_tool(path, "dvc", "init", "-q")
    shutil.copy2(ROOT / ".dvc" / "config", path / ".dvc" / "config")
    git(path, "add", "-A")
    git(path, "commit", "-qm", "workspace")
    return path


#: Workspaces whose Snakemake talks to a real Slurm cluster (test_slurm registers its own);
#: every other workspace's tools get :func:`no_slurm_probe` first on PATH.
SLURM_WORKSPACES: set[Path] = set()
#: Workspaces whose Snakemake needs the cluster executor plugins without a cluster
#: (test_pipeline_profiles' dry runs of the cluster profiles). Every workspace neither here
#: nor in :data:`SLURM_WORKSPACES` runs its tools with ``EVALNOISE_CLUSTER_PLUGINS=0``, so
#: Snakemake does not import the plugins (0.4 s of CPU per start, measured: the Kubernetes
#: client and the Slurm plugin; tools/install-cluster-plugins.sh).
CLUSTER_WORKSPACES: set[Path] = set()
_SHIM: list[Path] = []


def no_slurm_probe() -> Path:
    """A directory holding a ``scontrol`` that fails at once.

    Snakemake's Slurm executor plugin (tools/install-cluster-plugins.sh, for profiles/slurm) runs
    ``scontrol show config`` whenever Snakemake starts; where the Slurm client is installed
    (tools/slurm-cluster.sh installs it) and no controller answers, that call waits 9 s
    (measured here) — 9 s more for every Snakemake run of the suite. A workspace that does
    not use Slurm gets this ``scontrol`` instead; the plugin then takes its no-Slurm default.
    """
    if not _SHIM:
        import tempfile

        shim = Path(tempfile.mkdtemp(prefix="evalnoise-no-slurm-"))
        (shim / "scontrol").write_text("#!/bin/sh\nexit 1\n")
        (shim / "scontrol").chmod(0o755)
        _SHIM.append(shim)
    return _SHIM[0]


def tool_env(workspace: Path) -> dict[str, str]:
    import os

    env = dict(os.environ)
    path = [str(Path(sys.executable).parent), env.get("PATH", "")]
    resolved = Path(workspace).resolve()
    if resolved not in SLURM_WORKSPACES:
        path.insert(0, str(no_slurm_probe()))
    if resolved in SLURM_WORKSPACES or resolved in CLUSTER_WORKSPACES:
        env.pop("EVALNOISE_CLUSTER_PLUGINS", None)
    else:
        env["EVALNOISE_CLUSTER_PLUGINS"] = "0"
    env["PATH"] = os.pathsep.join(path)
    env["PYTHONPATH"] = str(workspace / "src")
    return env


def run_tool(
    workspace: Path, tool: str, *args: str, check: bool = True, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    """Run a venv tool (snakemake, dvc, evalnoise) in ``workspace``, importing evalnoise
    from the workspace's own copy (so edits to the checkout during a test change nothing)."""
    env = tool_env(workspace)
    env.update(
        {
            "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@example.invalid",
            "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@example.invalid",
        }
    )
    result = subprocess.run(
        [venv_tool(tool), *args],
        cwd=workspace,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if check and result.returncode != 0:
        raise AssertionError(
            f"{tool} {' '.join(args)} failed ({result.returncode}):\n"
            f"{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
        )
    return result


def job_counts(dry_run_output: str) -> dict[str, int]:
    """The 'Job stats' table of a Snakemake (dry) run as {rule: count}."""
    import re

    match = re.search(r"Job stats:\njob\s+count\n[- ]+\n(.*?)\ntotal\s+(\d+)", dry_run_output, re.S)
    if not match:
        return {}
    counts = {}
    for line in match.group(1).splitlines():
        name, count = line.split()
        counts[name] = int(count)
    return counts


def job_wildcards(dry_run_output: str, rule: str) -> list[str]:
    """The ``wildcards:`` line of every job of ``rule`` in a Snakemake (dry) run's output."""
    import re

    return re.findall(rf"rule {rule}:\n(?:    .*\n)*?    wildcards: (.*)\n", dry_run_output)


def journals(workspace: Path) -> dict[str, list[dict]]:
    """Every shard journal of ``workspace`` → its trial rows (header left out)."""
    import json

    out = {}
    for path in sorted((workspace / "results" / "trials").glob("*/*/journals/*.jsonl")):
        rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        out[str(path.relative_to(workspace))] = [r for r in rows if "journal" not in r]
    return out


def shard_files(workspace: Path) -> dict[str, tuple[int, bytes]]:
    """Every trial and score shard of ``workspace`` (relative to its ``results/``) →
    (mtime, bytes): what a grown run must leave untouched."""
    results = workspace / "results"
    return {
        str(p.relative_to(results)): (p.stat().st_mtime_ns, p.read_bytes())
        for kind in ("trials", "scores")
        for p in sorted(results.glob(f"{kind}/*/*/t*/c*.parquet"))
    }


def digests(paths) -> dict[str, str]:
    import hashlib

    return {str(p): hashlib.sha256(Path(p).read_bytes()).hexdigest() for p in paths}


#: Values that are functions of *when* trials ran, so two runs of the same trials differ in
#: them (the attribution stage's time model: its variance components, infrastructure share
#: and drift over time blocks that bin the start times, or why it could not be fitted), and
#: of *what the run spent* (``costs``, evalnoise.costs: the container seconds are the
#: trials' ``duration_s``; the judge's calls vs cache hits depend on what an earlier,
#: killed run had already judged).
WHEN_KEYS = re.compile(
    r"^(infra_share.*|infra_components|components|drift_.*|time_blocks"
    r"|time_effects_not_computed|costs"
    # the one noise model crosses task with time block: whether it is fitted, and its SEs
    r"|noise|noise_not_computed|total_error_.*|se_clustered)$"
)
#: The same in the summary's and the report's text (the cards' cost lines open with
#: "per trial attempt").
WHEN_TEXT = re.compile(r"infrastructure share of variance[^\n<]*|per trial attempt\b[^\n<|]*")


#: The summary's lines of the one noise model (evalnoise.attribution.text.noise_lines): a
#: model of task × time block, present only where the trials spread over time blocks.
NOISE_LINES = re.compile(
    r"^ *(noise, one model|components: |D study, SE if doubled: |cheapest design to SE "
    r"|no design within |SE [0-9.]+ needs ).*\n",
    re.M,
)


def without_when(value):
    """``value`` (parsed JSON) without the keys :data:`WHEN_KEYS` names, at any depth."""
    if isinstance(value, dict):
        return {k: without_when(v) for k, v in value.items() if not WHEN_KEYS.match(k)}
    if isinstance(value, list):
        return [without_when(v) for v in value]
    return value


# -- one finished tiny evaluation per test run, shared by the files that only read it --------

#: The tiny evaluation that test_kill_resume.py (its uninterrupted reference) and
#: test_slurm.py (the local executor's results) compare against: 2 agents × 1 resource
#: profile × 3 tasks × 2 trials, the stdlib agent of tests/pipeline/tiny_agent in real
#: containers. ``TINY_SLEEP_S`` widens each trial to a second so that a run can be killed
#: (or a Slurm job cancelled) while a shard is half-way.
TINY_REFERENCE = {
    "benchmark": {"n": 3},
    "agents": {
        "steady": {"build": "agents/tiny", "env": {"TINY_SKILL": "a", "TINY_SLEEP_S": 1.0}},
        "shaky": {"build": "agents/tiny", "env": {"TINY_SKILL": "b", "TINY_SLEEP_S": 1.0}},
    },
    "resource_profiles": {"1x": {}},
    "trials": {"count": 2, "block_size": 2},
    "task_chunk_size": 3,
    "analysis": {"convergence": {"subsamples": 50}, "bootstrap": {"resamples": 500}},
}


def shared_root(tmp_path_factory) -> Path:
    """A directory every process of this test run sees: pytest-xdist's workers each have
    their own base temp directory, all in the run's one (pytest-xdist's documented way to
    share a session fixture between workers)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if base.name.startswith("popen-gw") else base


def finished_reference(root: Path) -> Path:
    """The tiny evaluation (:data:`TINY_REFERENCE`) run once, uninterrupted, with
    ``evalnoise run --cores 2``, in ``root/tiny-reference/ws``: built by the first test that
    asks (the others wait on the lock), then read by everyone. Callers must not change it:
    a test that mutates a finished run copies it (``shutil.copytree(..., symlinks=True)``).
    A build that failed leaves no ``done`` marker, so the next caller builds again."""
    import fcntl

    home = root / "tiny-reference"
    home.mkdir(parents=True, exist_ok=True)
    workspace, done = home / "ws", home / "done"
    with open(home / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not done.exists():
            if workspace.exists():
                shutil.rmtree(workspace)  # a build that failed half-way
            make_workspace(workspace, TINY_REFERENCE)
            run_tool(workspace, "evalnoise", "run", "--cores", "2")
            done.write_text("finished\n")
    return workspace


def leftover_containers(engine, workspace: Path) -> list[str]:
    """The ids of the trial containers the workspace's shards left behind (label
    ``evalnoise.shard``). Listed without inspecting each container, which the Docker SDK's
    ``containers.list`` does: a container of another test, removed between the list and its
    inspection, must not fail this test."""
    from evalnoise.runner.shard import default_shard_id

    ours = {default_shard_id(p) for p in workspace.glob("results/trials/*/*/journals/*.jsonl")}
    listed = engine.api.containers(all=True, filters={"label": "evalnoise.shard"})
    return [c["Id"] for c in listed if (c.get("Labels") or {}).get("evalnoise.shard") in ours]


def remove_containers(engine, ids: list[str]) -> None:
    """Remove these containers; one already gone is no error."""
    import docker.errors

    for container in ids:
        try:
            engine.api.remove_container(container, force=True)
        except docker.errors.NotFound:
            pass
