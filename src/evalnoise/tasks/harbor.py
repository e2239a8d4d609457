"""Harbor task folders (Terminal-Bench 2.0's format) as environment tasks.

A Harbor task is a folder::

    task.toml            schema 1.x ([task], [metadata], [agent], [verifier], [environment],
                         [solution]) or legacy ``version = "1.0"``
    instruction.md       what the agent is told (leading canary comment lines are dropped,
                         as Harbor's ``strip_canary`` does)
    environment/         a Dockerfile and its build context (or [environment].docker_image)
    tests/test.sh        the verifier: copied to /tests after the agent, writes
                         /logs/verifier/reward.txt or reward.json
    solution/solve.sh    what the oracle agent runs (optional)

:func:`load_harbor_tasks` reads one task folder, or a folder of task folders, into frozen
:class:`HarborTask` records; :func:`environment_task_rows` turns them into tasks-table rows.
The schema follows Harbor 0.25's ``harbor/models/task/config.py``: the same keys, the same
defaults where the runner has a use for a default (verifier timeout 600 s, build timeout
600 s), the same legacy migrations (``memory = "2G"`` / ``storage = "10G"`` → MiB, by
``_parse_size_to_mb``; ``allow_internet`` → ``network_mode``; ``version`` → ``schema_version``).

**What the runner cannot honour is rejected, never skipped** (Harbor itself skips invalid
task folders without a word). Every problem of every task of a set is collected and raised
together as one :class:`HarborTaskError` whose ``problems`` name the task, the field and the
reason:

- in ``[verifier.environment]`` (Harbor's separate verifier), any key but ``docker_image``;
  ``environment_mode = "separate"`` itself is supported
  (:mod:`evalnoise.tasks.verifier_setup`);
- ``[[steps]]`` (multi-step tasks: ``steps/<name>/`` folders with their own instruction,
  tests and solution);
- network allowlists: ``network_mode = "allowlist"`` (or ``allowed_hosts``) anywhere — no
  egress proxy honours them; an ``[agent]`` or ``[verifier]`` ``network_mode`` other than the
  environment's (the trial's container keeps one network for all its phases); and, only with
  ``public_network="reject"``, ``"public"`` — declared, by legacy ``allow_internet = true``,
  or by Harbor's default when nothing is declared. By default (``"as_declared"``) a public
  task's trials run on a network of their own (:mod:`evalnoise.runner.trial_network`);
  ``"offline"`` runs them without network. :attr:`HarborTask.network_mode` keeps what the
  task asked for either way;
- ``gpus > 0``, ``tpu``, ``os = "windows"``, ``mcp_servers``,
  ``[[verifier.collect]]``;
- a schema version other than 1.x; missing ``instruction.md`` or ``tests/test.sh``; neither
  ``docker_image`` nor ``environment/Dockerfile``; a value of the wrong type; and, in a task
  set, a folder without ``task.toml`` or two tasks with the same id.

A task's ``environment/docker-compose.yaml`` (extra services) is kept in
:attr:`HarborTask.compose_file` and run by :mod:`evalnoise.runner.compose_services`; a
``docker-compose.yml`` is task data, as in Harbor, which reads only the ``.yaml`` name.

Keys Harbor does not define are kept in :attr:`HarborTask.unknown` (dotted key → value) and
are not an error; Harbor ignores them the same way. Keys Harbor defines that change nothing
here (``artifacts``, ``source``, ``[task].description``, ``skills_dir``…) are accepted and
not kept.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from evalnoise.column_names import ENVIRONMENT_TASK_COLUMNS
from evalnoise.errors import InputError
from evalnoise.tasks.verifier_setup import SHARED, VerifierSetup, read_verifier_setup

__all__ = [
    "DEFAULTS",
    "ENVIRONMENT_TASK_COLUMNS",
    "KIND",
    "FolderLoad",
    "HarborDefaults",
    "HarborStep",
    "HarborTask",
    "HarborTaskError",
    "TaskProblem",
    "environment_task_rows",
    "folder_digest",
    "is_task_folder",
    "load_harbor_task",
    "load_harbor_tasks",
    "load_task_folders",
    "resolve_env",
    "strip_canary",
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
#: kind of a tasks-table row made by :func:`environment_task_rows`
KIND = "environment"

# Harbor 0.25's keys per section (harbor/models/task/config.py). Keys here but not read
# below are accepted and change nothing in this runner.
_TOP_KEYS = {
    "schema_version",
    "version",
    "task",
    "metadata",
    "verifier",
    "agent",
    "environment",
    "solution",
    "source",
    "multi_step_reward_strategy",
    "steps",
    "artifacts",
}
_TASK_KEYS = {"name", "version", "description", "authors", "keywords"}
_AGENT_KEYS = {"timeout_sec", "user", "network_mode", "allowed_hosts"}
_VERIFIER_KEYS = {
    "timeout_sec",
    "env",
    "user",
    "environment_mode",
    "environment",
    "collect",
    "network_mode",
    "allowed_hosts",
}
_ENVIRONMENT_KEYS = {
    "build_timeout_sec",
    "docker_image",
    "os",
    "cpus",
    "memory_mb",
    "storage_mb",
    "gpus",
    "gpu_types",
    "tpu",
    "mcp_servers",
    "env",
    "skills_dir",
    "healthcheck",
    "workdir",
    "allow_internet",
    "network_mode",
    "allowed_hosts",
    "memory",
    "storage",
}
_SOLUTION_KEYS = {"env"}
_SECTION_KEYS = {
    "task": _TASK_KEYS,
    "agent": _AGENT_KEYS,
    "verifier": _VERIFIER_KEYS,
    "environment": _ENVIRONMENT_KEYS,
    "solution": _SOLUTION_KEYS,
}
_NETWORK_MODES = ("no-network", "public", "allowlist")
#: ``multi_step_reward_strategy`` values (Harbor's ``MultiStepRewardStrategy``)
REWARD_STRATEGIES = ("mean", "final")
#: a step name: one portable folder name (Harbor's ``validate_step_name``, ASCII-strict)
_STEP_NAME = re.compile(r"[^<>:\"/\\|?*\x00-\x1f\x7f]{1,255}(?<![. ])")
_CANARY_LINE = re.compile(r"^(<!--.*canary.*-->|#.*canary.*)$", re.IGNORECASE)
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
#: ``${VAR}`` or ``${VAR:-default}`` as the whole value (Harbor's ``resolve_env_vars``)
_ENV_TEMPLATE = re.compile(r"\$\{([^}:]+)(?::-(.*))?\}")
#: folders of a task set that are not tasks: hidden folders and Python caches
_SKIPPED_DIRS = re.compile(r"^(\..*|__pycache__)$")


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


@dataclass
class _Reader:
    """Collects the problems of one task while its fields are read."""

    task: str
    problems: list[TaskProblem] = field(default_factory=list)

    def problem(self, where: str, reason: str) -> None:
        self.problems.append(TaskProblem(self.task, where, reason))

    def table(self, data: Mapping[str, Any], key: str) -> Mapping[str, Any]:
        value = data.get(key, {})
        if not isinstance(value, Mapping):
            self.problem(f"[{key}]", f"must be a table, got {_kind(value)}")
            return {}
        return value

    def number(
        self, section: Mapping[str, Any], name: str, where: str, *, integer: bool = False
    ) -> float | int | None:
        if name not in section:
            return None
        value = section[name]
        if isinstance(value, bool) or not isinstance(value, int | float):
            self.problem(where, f"must be a number, got {_kind(value)} {value!r}")
            return None
        if not math.isfinite(value) or value <= 0:
            self.problem(where, f"must be a positive number, got {value!r}")
            return None
        if integer:
            if not float(value).is_integer():
                self.problem(where, f"must be a whole number, got {value!r}")
                return None
            return int(value)
        return float(value)

    def text(self, section: Mapping[str, Any], name: str, where: str) -> str | None:
        value = section.get(name)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, str | int):
            self.problem(where, f"must be a string, got {_kind(value)} {value!r}")
            return None
        value = str(value).strip()
        if not value:
            self.problem(where, "must not be empty")
            return None
        return value

    def env(self, section: Mapping[str, Any], where: str) -> dict[str, str]:
        value = section.get("env", {})
        if not isinstance(value, Mapping):
            self.problem(where, f'must be a table of NAME = "value", got {_kind(value)}')
            return {}
        out = {}
        for key, item in value.items():
            if not _ENV_NAME.match(str(key)):
                self.problem(f"{where}.{key}", "is not a valid environment variable name")
            elif not isinstance(item, str):
                self.problem(f"{where}.{key}", f"must be a string, got {_kind(item)} {item!r}")
            else:
                out[str(key)] = item
        return out


def _kind(value: Any) -> str:
    return {
        bool: "a boolean",
        int: "an integer",
        float: "a number",
        str: "a string",
        list: "an array",
        dict: "a table",
    }.get(type(value), type(value).__name__)


def _size_to_mb(text: str) -> int:
    """Harbor's ``EnvironmentConfig._parse_size_to_mb``: ``"2G"`` → 2048, ``"512M"`` → 512,
    ``"1024K"`` → 1 (K rounds down), case-insensitive; anything else raises ValueError."""
    size = text.strip().upper()
    if size.endswith("G"):
        return int(float(size[:-1]) * 1024)
    if size.endswith("M"):
        return int(float(size[:-1]))
    if size.endswith("K"):
        return int(float(size[:-1]) / 1024)
    raise ValueError(f"invalid size {text!r}: expected a number and G, M or K, like '2G'")


def strip_canary(text: str) -> str:
    """``text`` without its leading canary comment lines and the blank lines after them
    (Harbor's ``strip_canary``: an HTML or ``#`` comment mentioning "canary")."""
    lines = text.split("\n")
    start = 0
    while start < len(lines) and _CANARY_LINE.match(lines[start].strip()):
        start += 1
    while start < len(lines) and not lines[start].strip():
        start += 1
    return "\n".join(lines[start:])


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


def _collect_unknown(
    data: Mapping[str, Any], allowed: set[str], prefix: str, unknown: dict[str, Any]
) -> None:
    for key, value in data.items():
        if key not in allowed:
            unknown[f"{prefix}{key}"] = value


def _network(
    reader: _Reader,
    section: Mapping[str, Any],
    where: str,
    *,
    legacy_allow_internet: bool = False,
) -> str | None:
    """The section's declared network mode (None: not declared), with problems for
    allowlists and invalid values; ``allow_internet`` maps like Harbor's migration."""
    mode = section.get("network_mode")
    if mode is not None and mode not in _NETWORK_MODES:
        reader.problem(f"{where}.network_mode", f"must be one of {list(_NETWORK_MODES)}")
        return None
    hosts = section.get("allowed_hosts")
    if mode == "allowlist" or hosts:
        reader.problem(
            f"{where}.network_mode" if mode == "allowlist" else f"{where}.allowed_hosts",
            "network allowlists are not supported (no egress proxy): declare "
            '"public" or "no-network"',
        )
        return "allowlist"
    if mode is None and legacy_allow_internet and "allow_internet" in section:
        allow = section["allow_internet"]
        if not isinstance(allow, bool):
            reader.problem(f"{where}.allow_internet", f"must be true or false, got {allow!r}")
            return None
        return "public" if allow else "no-network"
    return mode


#: Harbor's ``HealthcheckConfig`` defaults (Docker HEALTHCHECK's polling, in seconds)
HEALTHCHECK_DEFAULTS = {
    "interval_sec": 5.0,
    "timeout_sec": 30.0,
    "start_period_sec": 0.0,
    "start_interval_sec": 5.0,
    "retries": 3,
}


def _healthcheck(
    reader: _Reader, section: Mapping[str, Any], where: str
) -> Mapping[str, Any] | None:
    """A ``healthcheck`` table (Harbor's ``HealthcheckConfig``) with its defaults filled."""
    raw = section.get("healthcheck")
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        reader.problem(where, f"must be a table, got {_kind(raw)}")
        return None
    command = raw.get("command")
    if not isinstance(command, str) or not command.strip():
        reader.problem(f"{where}.command", "required: the shell command (exit 0: healthy)")
        return None
    out: dict[str, Any] = {"command": command}
    for key, default in HEALTHCHECK_DEFAULTS.items():
        value = raw.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            reader.problem(f"{where}.{key}", f"must be a number >= 0, got {value!r}")
            return None
        out[key] = int(value) if key == "retries" else float(value)
    return MappingProxyType(out)


def _steps(
    reader: _Reader,
    data: Mapping[str, Any],
    folder: Path,
    values: Mapping[str, Any],
    verifier_s: Mapping[str, Any],
) -> list[HarborStep]:
    """The ``[[steps]]`` of a task (Harbor's ``StepConfig``), with problems for what the
    runner cannot honour: a step's separate verifier or network of its own."""
    raw = data.get("steps")
    if raw is None:
        return []
    if not isinstance(raw, list) or not all(isinstance(x, Mapping) for x in raw):
        reader.problem("[[steps]]", "must be an array of tables")
        return []
    steps: list[HarborStep] = []
    seen: set[str] = set()
    # the task's verifier env, its problems said where the task's fields are read
    raw_env = verifier_s.get("env")
    task_verifier_env = (
        {str(k): v for k, v in raw_env.items() if isinstance(v, str)}
        if isinstance(raw_env, Mapping)
        else {}
    )
    for index, entry in enumerate(raw):
        name = entry.get("name")
        where = f"[[steps]][{index}]"
        if not isinstance(name, str) or not _STEP_NAME.fullmatch(name) or name in (".", ".."):
            reader.problem(f"{where}.name", f"must be a portable folder name, got {name!r}")
            continue
        where = f"[[steps]] {name!r}"
        if name.casefold() in seen:
            reader.problem(where, "duplicate step name")
            continue
        seen.add(name.casefold())
        agent = reader.table(entry, "agent")
        verifier = reader.table(entry, "verifier")
        healthcheck = _healthcheck(reader, entry, f"{where}.healthcheck")
        mode = verifier.get("environment_mode")
        if mode == "separate" or "environment" in verifier:
            reader.problem(
                f"{where}.verifier.environment_mode",
                "a separate verifier environment is not supported",
            )
        for phase, section in (("agent", agent), ("verifier", verifier)):
            if section.get("network_mode") or section.get("allowed_hosts"):
                reader.problem(
                    f"{where}.{phase}.network_mode",
                    "a step's own network is not supported (one network per trial)",
                )
        agent_timeout = reader.number(agent, "timeout_sec", f"{where}.agent.timeout_sec")
        verifier_timeout = reader.number(verifier, "timeout_sec", f"{where}.verifier.timeout_sec")
        min_reward = entry.get("min_reward")
        thresholds: dict[str, float] | None = None
        if isinstance(min_reward, bool):
            reader.problem(f"{where}.min_reward", "must be a number or a table of numbers")
        elif isinstance(min_reward, int | float):
            thresholds = {"reward": float(min_reward)}
        elif isinstance(min_reward, Mapping):
            if all(
                isinstance(v, int | float) and not isinstance(v, bool) for v in min_reward.values()
            ):
                thresholds = {str(k): float(v) for k, v in min_reward.items()}
            else:
                reader.problem(f"{where}.min_reward", "must be a number or a table of numbers")
        elif min_reward is not None:
            reader.problem(f"{where}.min_reward", "must be a number or a table of numbers")
        step_dir = folder / "steps" / name
        instruction = ""
        path = step_dir / INSTRUCTION_FILE
        if not path.is_file():
            reader.problem(f"steps/{name}/{INSTRUCTION_FILE}", "missing")
        else:
            try:
                instruction = strip_canary(path.read_text(encoding="utf-8"))
            except UnicodeDecodeError:
                reader.problem(f"steps/{name}/{INSTRUCTION_FILE}", "not UTF-8 text")
        if not (step_dir / "tests" / "test.sh").is_file() and not (folder / TEST_SCRIPT).is_file():
            reader.problem(
                f"steps/{name}/tests/test.sh",
                f"missing, and no {TEST_SCRIPT}: the step's verifier has nothing to run",
            )
        steps.append(
            HarborStep(
                name=name,
                instruction=instruction,
                agent_timeout_s=float(agent_timeout or values["agent_timeout_s"] or 0.0),
                verifier_timeout_s=float(verifier_timeout or values["verifier_timeout_s"] or 0.0),
                agent_user=reader.text(agent, "user", f"{where}.agent.user"),
                verifier_user=reader.text(verifier, "user", f"{where}.verifier.user"),
                verifier_env=MappingProxyType(
                    {**task_verifier_env, **reader.env(verifier, f"{where}.verifier.env")}
                ),
                min_reward=None if thresholds is None else MappingProxyType(thresholds),
                folder=step_dir,
                healthcheck=healthcheck,
            )
        )
    if not steps and not reader.problems:
        reader.problem("[[steps]]", "declares no step")
    return steps


def _load_one(
    folder: Path, public_network: str, defaults: HarborDefaults
) -> tuple[HarborTask | None, list[TaskProblem]]:
    reader = _Reader(folder.name)
    config_path = folder / CONFIG_FILE
    if not config_path.is_file():
        reader.problem(CONFIG_FILE, "missing: not a Harbor task folder")
        return None, reader.problems
    try:
        data = tomllib.loads(config_path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        reader.problem(CONFIG_FILE, f"not valid TOML: {exc}")
        return None, reader.problems

    unknown: dict[str, Any] = {}
    _collect_unknown(data, _TOP_KEYS, "", unknown)
    sections = {name: reader.table(data, name) for name in _SECTION_KEYS}
    for name, keys in _SECTION_KEYS.items():
        _collect_unknown(sections[name], keys, f"{name}.", unknown)
    task_s, agent_s = sections["task"], sections["agent"]
    verifier_s, env_s = sections["verifier"], sections["environment"]
    metadata = reader.table(data, "metadata")

    name = reader.text(task_s, "name", "[task].name") or folder.name
    reader.task = name if name == folder.name else f"{name} ({folder.name})"

    version = data.get("schema_version", data.get("version", "1.4"))
    if not isinstance(version, str) or not re.fullmatch(r"1(\.\d+)*", version.strip()):
        key = "schema_version" if "schema_version" in data else "version"
        reader.problem(key, f"unsupported schema version {version!r}: this loader reads 1.x")

    # -- what this runner cannot honour -----------------------------------------------------
    verifier_setup = read_verifier_setup(data, verifier_s, folder, reader.problem)
    if verifier_s.get("collect"):
        reader.problem("[[verifier.collect]]", "collect hooks need compose services")
    compose_file = folder / COMPOSE_FILE if (folder / COMPOSE_FILE).is_file() else None
    gpus = env_s.get("gpus")
    if gpus is not None and (isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 0):
        reader.problem("[environment].gpus", f"must be a whole number >= 0, got {gpus!r}")
    elif gpus:
        reader.problem("[environment].gpus", f"{gpus} GPU(s) requested; no GPUs are given")
    if env_s.get("tpu"):
        reader.problem("[environment].tpu", "TPUs are not supported")
    task_os = env_s.get("os", "linux")
    if not isinstance(task_os, str) or task_os.lower() != "linux":
        reader.problem("[environment].os", f"only linux containers run here, got {task_os!r}")
    if env_s.get("mcp_servers"):
        reader.problem("[environment].mcp_servers", "MCP servers need network access")
    healthcheck = _healthcheck(reader, env_s, "[environment].healthcheck")

    # -- network: the task's own (as_declared), none (offline), or rejected --------------------
    declared = _network(reader, env_s, "[environment]", legacy_allow_internet=True)
    network = declared or "public"  # Harbor's default when nothing is declared
    if network == "public" and public_network == "reject":
        how = (
            f"declares network_mode = {declared!r}"
            if "network_mode" in env_s
            else "declares allow_internet = true"
            if "allow_internet" in env_s
            else "declares no network_mode, which Harbor reads as 'public'"
        )
        reader.problem(
            "[environment].network_mode",
            f"the task {how}; the run rejects public-network tasks (benchmark.network: "
            'reject). Declare network_mode = "no-network" if it needs none, or run with '
            "benchmark.network: as_declared (a network of the trial's own) or offline",
        )
    for phase, section in (("[agent]", agent_s), ("[verifier]", verifier_s)):
        phase_mode = _network(reader, section, phase)
        if phase_mode is None or phase_mode == "allowlist" or public_network == "offline":
            continue
        if phase_mode == "public" and public_network == "reject":
            reader.problem(
                f"{phase}.network_mode",
                "asks for public network; the run rejects public-network tasks",
            )
        elif phase_mode != network and network != "allowlist":
            reader.problem(
                f"{phase}.network_mode",
                f"{phase_mode!r} differs from the environment's {network!r}: a trial's "
                "container has one network for all its phases",
            )

    # -- resources and time ----------------------------------------------------------------
    defaulted = []
    cpus = reader.number(env_s, "cpus", "[environment].cpus")
    memory_mb = reader.number(env_s, "memory_mb", "[environment].memory_mb", integer=True)
    if "memory" in env_s:  # legacy
        legacy = env_s["memory"]
        try:
            if not isinstance(legacy, str):
                raise ValueError(f"must be a size string like '2G', got {_kind(legacy)}")
            legacy_mb = _size_to_mb(legacy)
        except ValueError as exc:
            reader.problem("[environment].memory", str(exc))
        else:
            if legacy_mb <= 0:
                reader.problem("[environment].memory", f"must be positive, got {legacy!r}")
            elif "memory_mb" in env_s and env_s["memory_mb"] != legacy_mb:
                reader.problem(
                    "[environment].memory",
                    f"{legacy!r} ({legacy_mb} MB) conflicts with memory_mb = "
                    f"{env_s['memory_mb']!r}",
                )
            elif memory_mb is None:
                memory_mb = legacy_mb
    storage_mb = reader.number(env_s, "storage_mb", "[environment].storage_mb", integer=True)
    if "storage" in env_s and storage_mb is None:
        try:
            storage_mb = _size_to_mb(str(env_s["storage"]))
        except ValueError as exc:
            reader.problem("[environment].storage", str(exc))
    agent_timeout = reader.number(agent_s, "timeout_sec", "[agent].timeout_sec")
    verifier_timeout = reader.number(verifier_s, "timeout_sec", "[verifier].timeout_sec")
    build_timeout = reader.number(env_s, "build_timeout_sec", "[environment].build_timeout_sec")
    fallbacks = (
        ("cpus", cpus, "cpus" in env_s, defaults.cpus),
        ("memory_mb", memory_mb, "memory_mb" in env_s or "memory" in env_s, defaults.memory_mb),
        ("agent_timeout_s", agent_timeout, "timeout_sec" in agent_s, defaults.agent_timeout_s),
        (
            "verifier_timeout_s",
            verifier_timeout,
            "timeout_sec" in verifier_s,
            defaults.verifier_timeout_s,
        ),
        (
            "build_timeout_s",
            build_timeout,
            "build_timeout_sec" in env_s,
            defaults.build_timeout_s,
        ),
    )
    values = {}
    for key, value, declared_here, default in fallbacks:
        if value is None and not declared_here:
            defaulted.append(key)
            value = default
        values[key] = value

    # -- steps ([[steps]]: each its instruction, agent phase and verifier, in order) ---------
    steps = _steps(reader, data, folder, values, verifier_s)
    strategy = data.get("multi_step_reward_strategy")
    if strategy is not None and strategy not in REWARD_STRATEGIES:
        reader.problem(
            "multi_step_reward_strategy",
            f"must be one of {list(REWARD_STRATEGIES)}, got {strategy!r}",
        )

    # -- files -----------------------------------------------------------------------------
    instruction = ""
    instruction_path = folder / INSTRUCTION_FILE
    if data.get("steps"):
        instruction = "\n\n".join(f"[step {st.name}]\n{st.instruction}" for st in steps)
    elif not instruction_path.is_file():
        reader.problem(INSTRUCTION_FILE, "missing")
    else:
        try:
            instruction = strip_canary(instruction_path.read_text(encoding="utf-8"))
        except UnicodeDecodeError:
            reader.problem(INSTRUCTION_FILE, "not UTF-8 text")
        else:
            if not instruction.strip():
                reader.problem(INSTRUCTION_FILE, "empty: the agent would get no instruction")
    if not data.get("steps") and not (folder / TEST_SCRIPT).is_file():
        reader.problem(TEST_SCRIPT, "missing: the verifier has nothing to run")
    docker_image = reader.text(env_s, "docker_image", "[environment].docker_image")
    build_context = None
    if docker_image is None:
        if (folder / DOCKERFILE).is_file():
            build_context = folder / "environment"
        else:
            reader.problem(
                DOCKERFILE, "missing, and no [environment].docker_image: no image to run"
            )

    level = metadata.get("difficulty")
    if level is not None and not isinstance(level, str | int | float):
        reader.problem("[metadata].difficulty", f"must be text, got {_kind(level)}")
        level = None

    env = reader.env(env_s, "[environment].env")
    verifier_env = reader.env(verifier_s, "[verifier].env")
    solution_env = reader.env(sections["solution"], "[solution].env")
    workdir = reader.text(env_s, "workdir", "[environment].workdir")
    agent_user = reader.text(agent_s, "user", "[agent].user")
    verifier_user = reader.text(verifier_s, "user", "[verifier].user")
    if reader.problems:
        return None, reader.problems
    task = HarborTask(
        name=name,
        folder=folder,
        instruction=instruction,
        level=None if level is None else str(level),
        cpus=float(values["cpus"]),
        memory_mb=int(values["memory_mb"]),
        storage_mb=storage_mb,
        agent_timeout_s=float(values["agent_timeout_s"]),
        verifier_timeout_s=float(values["verifier_timeout_s"]),
        build_timeout_s=float(values["build_timeout_s"]),
        docker_image=docker_image,
        build_context=build_context,
        env=MappingProxyType(env),
        workdir=workdir,
        agent_user=agent_user,
        verifier_user=verifier_user,
        verifier_env=MappingProxyType(verifier_env),
        solution_env=MappingProxyType(solution_env),
        network_mode=network,
        schema_version=str(version),
        metadata=MappingProxyType(dict(metadata)),
        unknown=MappingProxyType(unknown),
        defaulted=tuple(defaulted),
        digest=folder_digest(folder),
        has_solution=(folder / SOLVE_SCRIPT).is_file(),
        compose_file=compose_file,
        steps=tuple(steps),
        healthcheck=healthcheck,
        reward_strategy=(strategy or "mean") if steps else None,
        verifier=verifier_setup,
    )
    return task, []


def _check_choice(public_network: str) -> None:
    if public_network not in PUBLIC_NETWORK_CHOICES:
        raise ValueError(
            f"public_network must be one of {PUBLIC_NETWORK_CHOICES}, got {public_network!r}"
        )


def load_harbor_task(
    folder: str | os.PathLike[str],
    *,
    public_network: str = "as_declared",
    defaults: HarborDefaults = DEFAULTS,
) -> HarborTask:
    """One Harbor task folder; raises :class:`HarborTaskError` with all its problems."""
    _check_choice(public_network)
    path = Path(folder).resolve()
    task, problems = _load_one(path, public_network, defaults)
    if problems:
        raise HarborTaskError(problems, path=path)
    assert task is not None
    return task


def is_task_folder(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is one task (it holds ``task.toml``) rather than a set of tasks."""
    return (Path(path) / CONFIG_FILE).is_file()


@dataclass(frozen=True)
class FolderLoad:
    """One folder of a task set as the loader read it: its task (None when refused) and
    every problem found in it."""

    folder: Path
    task: HarborTask | None
    problems: tuple[TaskProblem, ...]


def load_task_folders(
    path: str | os.PathLike[str],
    *,
    public_network: str = "as_declared",
    defaults: HarborDefaults = DEFAULTS,
) -> list[FolderLoad]:
    """Every folder of ``path`` loaded on its own: one task folder (it holds ``task.toml``),
    or each sub-folder of a set (sorted by name; hidden folders and ``__pycache__`` are not
    tasks; files beside them are ignored). A folder whose task id an earlier folder already
    has is refused with that problem. Raises :class:`HarborTaskError` only when ``path`` is
    not a directory or holds no folder at all."""
    _check_choice(public_network)
    root = Path(path).resolve()
    if not root.is_dir():
        raise HarborTaskError([TaskProblem(root.name, "folder", "not a directory")], path=root)
    if is_task_folder(root):
        folders = [root]
    else:
        folders = sorted(
            p for p in root.iterdir() if p.is_dir() and not _SKIPPED_DIRS.match(p.name)
        )
    if not folders:
        raise HarborTaskError(
            [TaskProblem(root.name, "folder", "no task folders in it")], path=root
        )
    loads: list[FolderLoad] = []
    seen: dict[str, str] = {}
    for folder in folders:
        task, found = _load_one(folder, public_network, defaults)
        if task is not None and task.name in seen:
            found = [
                TaskProblem(
                    f"{task.name} ({folder.name})",
                    "[task].name",
                    f"duplicate task id: folder {seen[task.name]!r} has the same",
                )
            ]
            task = None
        elif task is not None:
            seen[task.name] = folder.name
        loads.append(FolderLoad(folder, task, tuple(found)))
    return loads


def load_harbor_tasks(
    path: str | os.PathLike[str],
    *,
    public_network: str = "as_declared",
    defaults: HarborDefaults = DEFAULTS,
) -> list[HarborTask]:
    """The tasks of ``path`` (:func:`load_task_folders`: one task folder, or a folder of
    task folders).

    Every problem of every task — and a sub-folder without ``task.toml``, two tasks with
    the same id, a set without tasks — is raised at once in one :class:`HarborTaskError`.
    """
    root = Path(path).resolve()
    if is_task_folder(root):
        return [load_harbor_task(root, public_network=public_network, defaults=defaults)]
    loads = load_task_folders(root, public_network=public_network, defaults=defaults)
    problems = [p for load in loads for p in load.problems]
    if problems:
        raise HarborTaskError(problems, path=root)
    return [load.task for load in loads if load.task is not None]


def environment_task_rows(tasks: Iterable[HarborTask]) -> list[dict[str, Any]]:
    """Tasks-table rows: the TASKS columns (``question`` = the instruction, ``answer`` = ""
    since the verifier, not a reference answer, decides; ``time_limit_s`` = the agent
    timeout; ``sampling_seed`` null) plus :data:`ENVIRONMENT_TASK_COLUMNS`: ``kind`` =
    "environment", ``task_dir`` (absolute path of the task folder), ``verifier_time_limit_s``
    and ``task_digest`` (:func:`folder_digest`, so a trial can tell that the folder changed
    after the table was made)."""
    return [
        {
            "task_id": task.name,
            "question": task.instruction,
            "answer": "",
            "level": task.level,
            "cpus": task.cpus,
            "memory_mb": task.memory_mb,
            "time_limit_s": task.agent_timeout_s,
            "sampling_seed": None,
            "kind": KIND,
            "task_dir": str(task.folder),
            "verifier_time_limit_s": task.verifier_timeout_s,
            "task_digest": task.digest,
        }
        for task in tasks
    ]
