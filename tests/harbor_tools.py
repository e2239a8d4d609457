"""Harbor itself, driven from the tests: load task folders with Harbor's own task model and
run Harbor's agents (its ``oracle``, its ``nop``) on task folders, offline.

Harbor (PyPI ``harbor``, the Terminal-Bench 2.0 harness) needs Python 3.12 and ``docker
compose`` v2; ``tools/install-harbor.sh`` installs both under
``$EVALNOISE_CACHE_DIR/harbor`` (default ``~/.cache/evalnoise/harbor``) with telemetry off.
Everything here runs Harbor in that venv, as a subprocess: evalnoise never imports it.

For a test::

    from harbor_tools import harbor_missing, harbor_run_missing, load_task_with_harbor, \\
        harbor_oracle
    from model_stack import require

    require(harbor_missing() is None, harbor_missing())    # skip (fail under CI) if absent
    config = load_task_with_harbor(task_dir)["config"]     # Harbor's TaskConfig as JSON
    require(harbor_run_missing() is None, harbor_run_missing())
    outcomes = harbor_oracle([task_a, task_b], jobs_dir=tmp_path)
    # {task name: reward or exception type}

The module sits in ``tests/`` (like ``model_stack.py``) so any test folder can import it.
Offline: a task's ``environment/Dockerfile`` must build ``FROM`` a local image. Harbor passes
no build arguments itself, so :func:`run_harbor` adds a compose overlay (``harbor run
--extra-docker-compose``) that sets the build argument ``BASE`` to the evalnoise base image
(``evalnoise-base:<hash>``), and ``network_mode: none`` for the task's container and its
build (``build.network``): the engine here runs with ``--bridge=none``, and a task has no
business on a network anyway.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
INSTALL_SCRIPT = REPO / "tools" / "install-harbor.sh"
HARBOR_VERSION = "0.25.0"


class HarborError(RuntimeError):
    """Harbor failed to do what was asked; the message has the command and its output."""


def harbor_home() -> Path:
    """Where tools/install-harbor.sh installs Harbor (the same rule as the script)."""
    if os.environ.get("EVALNOISE_CACHE_DIR"):
        cache = Path(os.environ["EVALNOISE_CACHE_DIR"])
    else:
        xdg = os.environ.get("XDG_CACHE_HOME")
        cache = (Path(xdg) if xdg else Path.home() / ".cache") / "evalnoise"
    return cache / "harbor"


def harbor_python() -> Path:
    """Harbor's Python (a wrapper that turns telemetry off and sets DOCKER_CONFIG)."""
    return harbor_home() / "bin" / "python"


def harbor_cli() -> Path:
    """Harbor's command line (the same wrapper around ``harbor``)."""
    return harbor_home() / "bin" / "harbor"


def compose_plugin() -> Path:
    return harbor_home() / "docker" / "cli-plugins" / "docker-compose"


def harbor_missing() -> str | None:
    """What is missing to use Harbor's Python models here, or None. Names exactly what."""
    home = harbor_home()
    stamp = home / ".installed"
    if not harbor_python().exists() or not harbor_cli().exists() or not stamp.exists():
        py312 = sorted(Path("/root/.pyenv/versions").glob("3.12.*")) or None
        why = "" if py312 else " (no Python 3.12 under /root/.pyenv/versions: it exits 3)"
        return f"Harbor is not installed in {home}: run tools/install-harbor.sh{why}"
    first = stamp.read_text().splitlines()[0] if stamp.read_text() else ""
    if f"harbor=={HARBOR_VERSION}" not in first:
        return (
            f"Harbor in {home} is not {HARBOR_VERSION} (stamp: {first!r}): "
            "run tools/install-harbor.sh"
        )
    return None


def _engine_problem() -> str | None:
    docker = shutil.which("docker")
    if docker is None:
        return "no docker client on PATH (the Docker engine is needed: tools/docker-engine.sh)"
    try:
        proc = subprocess.run(
            [docker, "info", "--format", "{{.ServerVersion}}"],
            capture_output=True,
            text=True,
            timeout=20,
        )
    except subprocess.TimeoutExpired:
        return "the Docker engine did not answer `docker info` within 20 s"
    if proc.returncode != 0 or not proc.stdout.strip():
        return f"no Docker engine answers: {proc.stderr.strip()[:200]} (tools/docker-engine.sh)"
    return None


def base_image() -> str:
    """The evalnoise base image tag the current inputs build (``evalnoise-base:<hash>``)."""
    from evalnoise.runner.base_image import base_image_tag

    return base_image_tag()


def _image_exists(tag: str) -> bool:
    proc = subprocess.run(
        ["docker", "image", "inspect", tag], capture_output=True, text=True, timeout=60
    )
    return proc.returncode == 0


def harbor_run_missing(base: str | None = None) -> str | None:
    """What is missing to *run* Harbor here (its venv, the compose plugin, the Docker engine,
    the base image), or None."""
    missing = harbor_missing()
    if missing:
        return missing
    if not os.access(compose_plugin(), os.X_OK):
        return (
            f"the docker compose v2 plugin is missing ({compose_plugin()}): run "
            "tools/install-harbor.sh"
        )
    problem = _engine_problem()
    if problem:
        return problem
    tag = base or base_image()
    if not _image_exists(tag):
        return f"the base image {tag} is not in the Docker engine: run `evalnoise image build`"
    return None


# --- Harbor's task model ------------------------------------------------------------------

_LOAD_SCRIPT = r"""
import json, sys, warnings
from pathlib import Path
from harbor.models.task.task import Task
from harbor.models.task.verifier_mode import resolve_task_verifier_mode

out = {}
for path in sys.argv[1:]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            task = Task(Path(path))
        except Exception as exc:
            out[path] = {"error": f"{type(exc).__name__}: {exc}", "is_valid_dir": False}
            continue
        valid = Task.is_valid_dir(Path(path))
    out[path] = {
        "name": task.name,
        "instruction": task.instruction,
        "is_valid_dir": valid,
        "has_steps": task.has_steps,
        "verifier_mode": resolve_task_verifier_mode(task.config).value,
        "config": task.config.model_dump(mode="json"),
        "warnings": [str(w.message) for w in caught],
    }
print(json.dumps(out))
"""


def load_tasks_with_harbor(task_dirs: Sequence[str | os.PathLike[str]]) -> dict[str, dict]:
    """Parse task folders with Harbor's own ``harbor.models.task.task.Task``.

    Returns ``{str(task_dir): {...}}`` with ``name`` (Harbor's task name), ``instruction``,
    ``is_valid_dir`` (``Task.is_valid_dir``: what ``harbor run -p`` would accept — Harbor
    skips the others without a word), ``has_steps``, ``verifier_mode`` (resolved),
    ``config`` (the TaskConfig, ``model_dump(mode="json")``: every field with Harbor's
    defaults filled, legacy fields migrated) and ``warnings`` (e.g. legacy-field
    migrations); or ``{"error": "<Type>: <message>", "is_valid_dir": False}`` when Harbor
    refuses the folder. One Python process for all folders (Harbor's import takes ~2 s).
    """
    missing = harbor_missing()
    if missing:
        raise HarborError(missing)
    dirs = [str(Path(d).resolve()) for d in task_dirs]
    proc = subprocess.run(
        [str(harbor_python()), "-c", _LOAD_SCRIPT, *dirs],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if proc.returncode != 0:
        raise HarborError(f"Harbor's task model failed: {proc.stderr.strip()[-2000:]}")
    loaded = json.loads(proc.stdout.strip().splitlines()[-1])
    return {str(given): loaded[d] for given, d in zip(task_dirs, dirs, strict=True)}


def load_task_with_harbor(task_dir: str | os.PathLike[str]) -> dict:
    """:func:`load_tasks_with_harbor` of one folder: its entry."""
    return load_tasks_with_harbor([task_dir])[str(task_dir)]


def harbor_task_init(
    name: str, parent: str | os.PathLike[str], *options: str, timeout_s: float = 120
) -> Path:
    """``harbor task init NAME -p PARENT [OPTIONS]``: the folder Harbor writes
    (``PARENT/<NAME's part after the "/">``), e.g. ``options=("--verifier-mode", "shared")``.
    Raises :class:`HarborError` when Harbor is missing or fails."""
    missing = harbor_missing()
    if missing:
        raise HarborError(missing)
    proc = subprocess.run(
        [str(harbor_cli()), "task", "init", name, "-p", str(parent), *options],
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )
    folder = Path(parent) / name.rsplit("/", 1)[-1]
    if proc.returncode != 0 or not (folder / "task.toml").is_file():
        output = (proc.stdout + proc.stderr).strip()
        raise HarborError(f"harbor task init exited {proc.returncode}: {output[-2000:]}")
    return folder


# --- Harbor's exception taxonomy ----------------------------------------------------------

_EXCEPTIONS_SCRIPT = r"""
import ast, builtins, json
from pathlib import Path
import harbor
from harbor.models.trial.error_policy import ERROR_POLICIES

root = Path(harbor.__file__).parent
known = {n for n, v in vars(builtins).items()
         if isinstance(v, type) and issubclass(v, BaseException)}
classes = []
for py in sorted(root.rglob("*.py")):
    module = ".".join(py.relative_to(root.parent).with_suffix("").parts)
    for node in ast.walk(ast.parse(py.read_text(encoding="utf-8"), str(py))):
        if isinstance(node, ast.ClassDef):
            bases = [b.id if isinstance(b, ast.Name) else b.attr if isinstance(b, ast.Attribute)
                     else "" for b in node.bases]
            classes.append((node.name, module, bases))
defined = {}
changed = True
while changed:
    changed = False
    for name, module, bases in classes:
        if name in defined:
            continue
        if any(b in known or b in defined or b.endswith(("Error", "Exception")) for b in bases):
            defined[name] = module
            changed = True
print(json.dumps({
    "defined": defined,
    "policies": {name: policy.cause.value for name, policy in ERROR_POLICIES.items()},
}))
"""


def harbor_exception_types() -> dict[str, dict[str, str | None]]:
    """Every exception type a Harbor trial can record, by name: ``{"module": where Harbor
    defines it (None for the litellm/asyncio names its error policy lists), "cause": its
    FailureCause in ``harbor/models/trial/error_policy.py`` (None when unlisted)}``.

    Harbor's classes are found in its source (every class deriving, directly or through
    another such class, from a built-in exception or a class named ``*Error``/``*Exception``),
    so modules behind optional extras that are not installed are covered too.
    """
    missing = harbor_missing()
    if missing:
        raise HarborError(missing)
    proc = subprocess.run(
        [str(harbor_python()), "-c", _EXCEPTIONS_SCRIPT],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if proc.returncode != 0:
        raise HarborError(f"listing Harbor's exceptions failed: {proc.stderr.strip()[-2000:]}")
    data = json.loads(proc.stdout)
    names = sorted(set(data["defined"]) | set(data["policies"]))
    return {n: {"module": data["defined"].get(n), "cause": data["policies"].get(n)} for n in names}


# --- running Harbor's agents --------------------------------------------------------------


@dataclass(frozen=True)
class TrialOutcome:
    """What Harbor recorded for one trial (read straight from its ``result.json``)."""

    task: str
    trial_dir: Path
    rewards: dict[str, float] | None
    exception_type: str | None
    seconds: float | None
    phase_seconds: dict[str, float | None] = field(default_factory=dict)
    agent: str | None = None  # Harbor's agent_info.name

    @property
    def reward(self) -> float | None:
        """The reward named ``reward``, else the only one, else None."""
        if not self.rewards:
            return None
        if "reward" in self.rewards:
            return self.rewards["reward"]
        return next(iter(self.rewards.values())) if len(self.rewards) == 1 else None

    @property
    def summary(self) -> float | str:
        """The reward when the trial ended without an exception, else the exception type
        (an agent timeout whose verifier still scored shows as ``AgentTimeoutError``: look
        at :attr:`reward` for that score)."""
        if self.exception_type is not None:
            return self.exception_type
        return self.reward if self.reward is not None else "no reward"


@dataclass(frozen=True)
class HarborRun:
    """One ``harbor run``: its job folder, the trial outcomes by task name, wall time."""

    job_dir: Path
    outcomes: dict[str, list[TrialOutcome]]
    wall_seconds: float
    stdout: str

    def by_task(self) -> dict[str, float | str]:
        """``{task name: reward or exception type}`` (:attr:`TrialOutcome.summary`); the
        first trial of each task when there were several attempts."""
        return {task: trials[0].summary for task, trials in sorted(self.outcomes.items())}

    def of_agent(self, agent: str) -> HarborRun:
        """The same run with only ``agent``'s trials (a job of several agents)."""
        outcomes = {
            task: kept
            for task, trials in self.outcomes.items()
            if (kept := [t for t in trials if t.agent == agent])
        }
        return replace(self, outcomes=outcomes)


def compose_overlay(path: Path, base: str, *, init: bool = True) -> Path:
    """Write the compose overlay :func:`run_harbor` passes: build argument ``BASE`` and no
    network for the task's main service, at run time and for its build's ``RUN`` steps;
    with ``init``, ``init: true`` too.

    Why the build's ``network: none``: the engine here runs with ``--bridge=none``, and a
    build step on the default (bridge) network fails with "network bridge not found" — any
    Dockerfile with a ``RUN`` line, like most example tasks'. evalnoise builds task images
    with no network too (``evalnoise.runner.base_image``).

    Why ``init``: Harbor's main service runs ``sh -c "sleep infinity"`` as PID 1, which
    ignores SIGTERM, so every ``docker compose down`` waits out the 10 s stop grace period
    (measured here: 10.5 s of a 16.5 s trial). With Docker's init as PID 1 the shell gets
    the signal and the teardown takes ~0.5 s; nothing a task or its verifier sees changes.
    """
    path.write_text(
        "# evalnoise: offline Harbor runs (tests/harbor_tools.py)\n"
        "services:\n"
        "  main:\n"
        "    network_mode: none\n" + ("    init: true\n" if init else "") + "    build:\n"
        "      network: none\n"
        "      args:\n"
        f"        BASE: {json.dumps(base)}\n"
    )
    return path


def _seconds(timing: Any) -> float | None:
    from datetime import datetime

    if (
        not isinstance(timing, dict)
        or not timing.get("started_at")
        or not timing.get("finished_at")
    ):
        return None
    start = datetime.fromisoformat(timing["started_at"].replace("Z", "+00:00"))
    end = datetime.fromisoformat(timing["finished_at"].replace("Z", "+00:00"))
    return (end - start).total_seconds()


def read_job(job_dir: Path) -> dict[str, list[TrialOutcome]]:
    """The trial outcomes of a Harbor job folder, by task name, in trial start order."""
    out: dict[str, list[tuple[str, TrialOutcome]]] = {}
    for result in sorted(job_dir.glob("*/result.json")):
        data = json.loads(result.read_text())
        exc = data.get("exception_info") or {}
        rewards = (data.get("verifier_result") or {}).get("rewards")
        outcome = TrialOutcome(
            task=data["task_name"],
            trial_dir=result.parent,
            rewards=None if rewards is None else {k: float(v) for k, v in rewards.items()},
            exception_type=exc.get("exception_type"),
            seconds=_seconds(
                {"started_at": data.get("started_at"), "finished_at": data.get("finished_at")}
            ),
            phase_seconds={
                phase: _seconds(data.get(phase))
                for phase in ("environment_setup", "agent_setup", "agent_execution", "verifier")
            },
            agent=(data.get("agent_info") or {}).get("name"),
        )
        out.setdefault(outcome.task, []).append((data.get("started_at") or "", outcome))
    return {task: [o for _, o in sorted(items, key=lambda x: x[0])] for task, items in out.items()}


def run_harbor(
    task_dirs: Sequence[str | os.PathLike[str]],
    *,
    jobs_dir: str | os.PathLike[str],
    agent: str | Sequence[str] = "oracle",
    job_name: str | None = None,
    base: str | None = None,
    n_concurrent: int = 1,
    n_attempts: int = 1,
    init: bool = True,
    timeout_s: float = 1800,
) -> HarborRun:
    """``harbor run`` of ``agent`` on the task folders, offline, against the local engine.

    ``agent`` may name several agents: one job runs every (task, agent) trial, sharing one
    Harbor process and its ``n_concurrent`` slots; :meth:`HarborRun.of_agent` splits it.

    A JobConfig (``tasks: [{path}]``, ``agents: [{name: agent}]``, docker environment with
    the :func:`compose_overlay`; ``init=False`` times Harbor's teardown as it ships) is
    written to a temporary folder and run with ``harbor run -c CONFIG --yes --quiet``.
    Harbor exits 0 even when trials fail; a non-zero exit or a job without a trial result
    raises :class:`HarborError` with the output's tail.
    """
    missing = harbor_run_missing(base)
    if missing:
        raise HarborError(missing)
    jobs = Path(jobs_dir).resolve()
    jobs.mkdir(parents=True, exist_ok=True)
    agents = [agent] if isinstance(agent, str) else list(agent)
    name = job_name or f"{'+'.join(agents)}-{time.strftime('%Y%m%d-%H%M%S')}"
    with tempfile.TemporaryDirectory(prefix="harbor-run-") as tmp:
        overlay = compose_overlay(
            Path(tmp) / "evalnoise-offline.yaml", base or base_image(), init=init
        )
        config = {
            "job_name": name,
            "jobs_dir": str(jobs),
            "n_attempts": n_attempts,
            "n_concurrent_trials": n_concurrent,
            "quiet": True,
            "agents": [{"name": a} for a in agents],
            "environment": {"type": "docker", "extra_docker_compose": [str(overlay)]},
            "tasks": [{"path": str(Path(d).resolve())} for d in task_dirs],
        }
        config_path = Path(tmp) / "job.json"
        config_path.write_text(json.dumps(config, indent=2))
        start = time.perf_counter()
        proc = subprocess.run(
            [str(harbor_cli()), "run", "-c", str(config_path), "--yes", "--quiet"],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            cwd=tmp,
        )
        wall = time.perf_counter() - start
    job_dir = jobs / name
    output = (proc.stdout + proc.stderr).strip()
    if proc.returncode != 0:
        raise HarborError(f"harbor run exited {proc.returncode}: {output[-3000:]}")
    outcomes = read_job(job_dir) if job_dir.is_dir() else {}
    if not outcomes:
        raise HarborError(f"harbor run left no trial result in {job_dir}: {output[-3000:]}")
    return HarborRun(job_dir=job_dir, outcomes=outcomes, wall_seconds=wall, stdout=output)


def harbor_oracle(
    task_dirs: Sequence[str | os.PathLike[str]], *, jobs_dir: str | os.PathLike[str], **kwargs
) -> dict[str, float | str]:
    """Harbor's ``oracle`` on the task folders: ``{task name: reward or exception type}``
    (:meth:`HarborRun.by_task`). ``kwargs`` go to :func:`run_harbor` (e.g. ``agent="nop"``)."""
    return run_harbor(task_dirs, jobs_dir=jobs_dir, **kwargs).by_task()
