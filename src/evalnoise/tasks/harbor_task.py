"""A Harbor task (Terminal-Bench 2.0's format) as a record: what a trial of it needs.

A Harbor task is a folder::

    task.toml            schema 1.x ([task], [metadata], [agent], [verifier], [environment],
                         [solution]) or legacy ``version = "1.0"``
    instruction.md       what the agent is told (leading canary comment lines are dropped,
                         as Harbor's ``strip_canary`` does)
    environment/         a Dockerfile and its build context (or [environment].docker_image)
    tests/test.sh        the verifier: copied to /tests after the agent, writes
                         /logs/verifier/reward.txt or reward.json
    solution/solve.sh    what the oracle agent runs (optional)

:class:`HarborTask` is one such folder validated (:mod:`evalnoise.tasks.harbor_toml` reads
it; :mod:`evalnoise.tasks.harbor_folders` loads a folder or a set of them); :class:`HarborStep`
one step of a multi-step task; :class:`HarborTaskError` every problem of a task set at once.
The defaults (:class:`HarborDefaults`) are Harbor 0.25's where the runner has a use for a
default (verifier timeout 600 s, build timeout 600 s). ``${VAR}`` templates of a task's env
are resolved when a trial starts (:func:`resolve_env`); :func:`folder_digest` is the
content hash a trial checks the folder against.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalnoise.errors import InputError
from evalnoise.tasks.verifier_setup import SHARED, VerifierSetup

__all__ = [
    "DEFAULTS",
    "HEALTHCHECK_DEFAULTS",
    "HarborDefaults",
    "HarborStep",
    "HarborTask",
    "HarborTaskError",
    "TaskProblem",
    "folder_digest",
    "resolve_env",
    "templated_names",
]

CONFIG_FILE = "task.toml"
INSTRUCTION_FILE = "instruction.md"
TEST_SCRIPT = "tests/test.sh"
SOLVE_SCRIPT = "solution/solve.sh"
DOCKERFILE = "environment/Dockerfile"
#: the task's own compose file (extra services); Harbor reads this name only, so an
#: ``environment/docker-compose.yml`` is a file of the build context like any other
COMPOSE_FILE = "environment/docker-compose.yaml"
#: what ``public_network`` may be: run such tasks on a network of their own (``as_declared``),
#: reject them, or run them without network anyway (``offline``)
PUBLIC_NETWORK_CHOICES = ("as_declared", "reject", "offline")
#: ``multi_step_reward_strategy`` values (Harbor's ``MultiStepRewardStrategy``)
REWARD_STRATEGIES = ("mean", "final")
#: Harbor's ``HealthcheckConfig`` defaults (Docker HEALTHCHECK's polling, in seconds)
HEALTHCHECK_DEFAULTS = {
    "interval_sec": 5.0,
    "timeout_sec": 30.0,
    "start_period_sec": 0.0,
    "start_interval_sec": 5.0,
    "retries": 3,
}
#: ``${VAR}`` or ``${VAR:-default}`` as the whole value (Harbor's ``resolve_env_vars``)
_ENV_TEMPLATE = re.compile(r"\$\{([^}:]+)(?::-(.*))?\}")


@dataclass(frozen=True)
class TaskProblem:
    """One reason a task cannot run here: which task, which field, why."""

    task: str
    field: str
    reason: str

    def __str__(self) -> str:
        return f"{self.task}: {self.field}: {self.reason}"


class HarborTaskError(InputError):
    """Every problem of a task or task set at once (``problems``), one per line."""

    def __init__(self, problems: Sequence[TaskProblem], *, path: str | os.PathLike[str]):
        self.problems = tuple(problems)
        count = len(self.problems)
        lines = "\n".join(f"  - {p}" for p in self.problems)
        noun = "problem" if count == 1 else "problems"
        super().__init__(f"{count} {noun} in Harbor tasks:\n{lines}", path=str(path))


@dataclass(frozen=True)
class HarborDefaults:
    """Values for what a task does not declare.

    Harbor leaves ``cpus``, ``memory_mb`` and the agent timeout unset (no limit) when a task
    omits them; resource profiles need numbers, so these fill in (and the task records
    which ones it took, :attr:`HarborTask.defaulted`). The verifier and build timeouts are
    Harbor's own defaults.
    """

    cpus: float = 1.0
    memory_mb: int = 2048
    agent_timeout_s: float = 600.0
    verifier_timeout_s: float = 600.0
    build_timeout_s: float = 600.0


DEFAULTS = HarborDefaults()


@dataclass(frozen=True)
class HarborStep:
    """One ``[[steps]]`` entry of a multi-step task, resolved (Harbor 0.25's ``StepConfig``):
    its instruction (``steps/<name>/instruction.md``), the agent's and verifier's timeouts,
    users and env (the step's own, else the task's), ``min_reward`` (reward name → threshold;
    a number gates on ``reward``), and its folders: ``steps/<name>/tests`` (added over the
    task's ``tests/``), ``steps/<name>/solution`` (the oracle's, else the task's) and
    ``steps/<name>/workdir`` (copied into the working directory before the step; its
    ``setup.sh`` runs then)."""

    name: str
    instruction: str
    agent_timeout_s: float
    verifier_timeout_s: float
    agent_user: str | None
    verifier_user: str | None
    verifier_env: Mapping[str, str]
    min_reward: Mapping[str, float] | None
    folder: Path
    #: run before the step's agent (:data:`HEALTHCHECK_DEFAULTS` keys), None without
    healthcheck: Mapping[str, Any] | None = None

    @property
    def tests_dir(self) -> Path:
        return self.folder / "tests"

    @property
    def solution_dir(self) -> Path:
        return self.folder / "solution"

    @property
    def workdir_dir(self) -> Path:
        return self.folder / "workdir"


@dataclass(frozen=True)
class HarborTask:
    """One Harbor task folder, validated: what a trial of it needs.

    ``name`` is the task id: ``[task].name`` or the folder's name. ``docker_image`` (a
    prebuilt image, used as is) or ``build_context`` (the ``environment/`` folder holding the
    Dockerfile) says where the container image comes from. ``env`` (``[environment].env``),
    ``verifier_env`` and ``solution_env`` are kept as written: ``${VAR}`` templates are
    resolved from the runner's environment when a trial starts (:func:`resolve_env`).
    ``digest`` is :func:`folder_digest` of the whole folder.
    """

    name: str
    folder: Path
    instruction: str
    level: str | None
    cpus: float
    memory_mb: int
    storage_mb: int | None
    agent_timeout_s: float
    verifier_timeout_s: float
    build_timeout_s: float
    docker_image: str | None
    build_context: Path | None
    env: Mapping[str, str]
    workdir: str | None
    agent_user: str | None
    verifier_user: str | None
    verifier_env: Mapping[str, str]
    solution_env: Mapping[str, str]
    #: what the task asked for ("no-network" or "public"); the run decides what a public task
    #: gets (:mod:`evalnoise.runner.trial_network`)
    network_mode: str
    schema_version: str
    metadata: Mapping[str, Any]
    #: keys Harbor does not define, dotted (``"environment.foo"``) → value
    unknown: Mapping[str, Any]
    #: fields filled from :class:`HarborDefaults` because the task left them out
    defaulted: tuple[str, ...]
    digest: str
    has_solution: bool
    #: ``environment/docker-compose.yaml``: extra services (:mod:`evalnoise.runner.
    #: compose_services`), None without
    compose_file: Path | None = None
    #: ``[[steps]]``, in order (empty: a single-step task); run by :mod:`evalnoise.runner.steps`
    steps: tuple[HarborStep, ...] = ()
    #: ``[environment].healthcheck``: polled before the agent (:data:`HEALTHCHECK_DEFAULTS`
    #: keys and ``command``), None without
    healthcheck: Mapping[str, Any] | None = None
    #: ``multi_step_reward_strategy`` of a multi-step task ("mean", Harbor's default, or
    #: "final"); None for a single-step task
    reward_strategy: str | None = None

    #: the step being run (:mod:`evalnoise.runner.steps` sets it on a copy), else None
    active_step: HarborStep | None = None
    #: where the verifier runs (:mod:`evalnoise.tasks.verifier_setup`)
    verifier: VerifierSetup = SHARED

    @property
    def tests_dir(self) -> Path:
        """``tests/``: copied to /tests before the verifier runs."""
        return self.folder / "tests"

    @property
    def tests_dirs(self) -> tuple[Path, ...]:
        """What is copied to /tests, in order: ``tests/``, then, for a step, the step's
        ``tests/`` over it (Harbor's order: the step's ``test.sh`` wins when it has one)."""
        if self.active_step is None:
            return (self.tests_dir,)
        found = (self.tests_dir, self.active_step.tests_dir)
        return tuple(d for d in found if d.is_dir())

    @property
    def solution_dir(self) -> Path:
        """``solution/``: what the oracle agent runs (``solve.sh``); a step's own
        ``solution/`` when it has one."""
        step = self.active_step
        if step is not None and step.solution_dir.is_dir():
            return step.solution_dir
        return self.folder / "solution"


def resolve_env(env: Mapping[str, str], environ: Mapping[str, str]) -> dict[str, str]:
    """Harbor's ``resolve_env_vars``: a value that is entirely ``${VAR}`` takes ``VAR`` from
    ``environ``, ``${VAR:-default}`` falls back to ``default``; other values are literal.

    Raises ``KeyError`` naming the variable when one is unset and has no default.
    """
    resolved = {}
    for key, value in env.items():
        match = _ENV_TEMPLATE.fullmatch(value)
        if match is None:
            resolved[key] = value
        elif match.group(1) in environ:
            resolved[key] = environ[match.group(1)]
        elif match.group(2) is not None:
            resolved[key] = match.group(2)
        else:
            raise KeyError(match.group(1))
    return resolved


def templated_names(env: Mapping[str, str]) -> tuple[str, ...]:
    """The keys of ``env`` whose value is a ``${VAR}`` template (their resolved values come
    from the runner's environment and are treated as secrets)."""
    return tuple(k for k, v in env.items() if _ENV_TEMPLATE.fullmatch(v))


def _task_files(folder: Path) -> list[Path]:
    """Every file and symlink under ``folder`` except ``.git`` and ``__pycache__`` contents."""
    found = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d not in (".git", "__pycache__"))
        here = Path(root)
        found.extend(here / name for name in files)
        # a symlink to a directory is listed in dirs but not walked (followlinks=False)
        found.extend(here / d for d in dirs if (here / d).is_symlink())
    return sorted(found)


def folder_digest(folder: str | os.PathLike[str]) -> str:
    """SHA-256 (hex) of a folder's content:

        sha256(for each file, sorted by relative POSIX path: path ‖ NUL ‖ kind ‖ NUL ‖ bytes ‖ NUL)

    where kind is ``f`` (regular file; bytes = its content, plus ``x`` when executable) or
    ``l`` (symlink; bytes = its target, not followed). ``.git`` and ``__pycache__`` are
    left out. A change to any file of the task (instruction, tests, environment, solution,
    task.toml) changes it."""
    root = Path(folder)
    digest = hashlib.sha256()
    for path in _task_files(root):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        if path.is_symlink():
            digest.update(b"l\0" + os.readlink(path).encode() + b"\0")
            continue
        executable = os.access(path, os.X_OK)
        digest.update(b"fx\0" if executable else b"f\0")
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        digest.update(b"\0")
    return digest.hexdigest()
