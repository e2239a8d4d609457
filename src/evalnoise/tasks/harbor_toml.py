"""A Harbor task folder's ``task.toml`` read and checked into a ``HarborTask``.

:func:`read_task_folder` reads one folder (:mod:`evalnoise.tasks.harbor_task` describes its
layout). The schema follows Harbor 0.25's ``harbor/models/task/config.py``: the same keys, the
same defaults where the runner has a use for a default, the same legacy migrations
(``memory = "2G"`` / ``storage = "10G"`` → MiB, by ``_parse_size_to_mb``; ``allow_internet``
→ ``network_mode``; ``version`` → ``schema_version``).

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

import math
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from evalnoise.tasks.harbor_task import (
    COMPOSE_FILE,
    CONFIG_FILE,
    DOCKERFILE,
    HEALTHCHECK_DEFAULTS,
    INSTRUCTION_FILE,
    REWARD_STRATEGIES,
    SOLVE_SCRIPT,
    TEST_SCRIPT,
    HarborDefaults,
    HarborStep,
    HarborTask,
    TaskProblem,
    folder_digest,
)
from evalnoise.tasks.verifier_setup import read_verifier_setup

__all__ = ["read_task_folder", "strip_canary"]

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
#: a step name: one portable folder name (Harbor's ``validate_step_name``, ASCII-strict)
_STEP_NAME = re.compile(r"[^<>:\"/\\|?*\x00-\x1f\x7f]{1,255}(?<![. ])")
_CANARY_LINE = re.compile(r"^(<!--.*canary.*-->|#.*canary.*)$", re.IGNORECASE)
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


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


def _unsupported(reader: _Reader, verifier_s: Mapping[str, Any], env_s: Mapping[str, Any]) -> None:
    """Problems for what this runner cannot honour: collect hooks, GPUs, TPUs, a non-linux
    OS, MCP servers."""
    if verifier_s.get("collect"):
        reader.problem("[[verifier.collect]]", "collect hooks need compose services")
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


def _task_network(
    reader: _Reader,
    sections: Mapping[str, Mapping[str, Any]],
    public_network: str,
) -> str:
    """The task's network: what ``[environment]`` declares (Harbor's default "public" when
    nothing is), with problems when the run rejects it or a phase asks for another."""
    env_s = sections["environment"]
    declared = _network(reader, env_s, "[environment]", legacy_allow_internet=True)
    network = declared or "public"
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
    for phase, section in (("[agent]", sections["agent"]), ("[verifier]", sections["verifier"])):
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
    return network


def _memory_mb(reader: _Reader, env_s: Mapping[str, Any]) -> int | None:
    """``memory_mb``, or the legacy ``memory = "2G"`` in MiB; a conflict between them is a
    problem."""
    memory_mb = reader.number(env_s, "memory_mb", "[environment].memory_mb", integer=True)
    if "memory" not in env_s:
        return memory_mb
    legacy = env_s["memory"]
    try:
        if not isinstance(legacy, str):
            raise ValueError(f"must be a size string like '2G', got {_kind(legacy)}")
        legacy_mb = _size_to_mb(legacy)
    except ValueError as exc:
        reader.problem("[environment].memory", str(exc))
        return memory_mb
    if legacy_mb <= 0:
        reader.problem("[environment].memory", f"must be positive, got {legacy!r}")
    elif "memory_mb" in env_s and env_s["memory_mb"] != legacy_mb:
        reader.problem(
            "[environment].memory",
            f"{legacy!r} ({legacy_mb} MB) conflicts with memory_mb = {env_s['memory_mb']!r}",
        )
    elif memory_mb is None:
        return legacy_mb
    return memory_mb


def _limits(
    reader: _Reader, sections: Mapping[str, Mapping[str, Any]], defaults: HarborDefaults
) -> tuple[dict[str, Any], list[str]]:
    """The task's cpus, memory and timeouts (each from :class:`HarborDefaults` when the task
    leaves it out: the second value names those) and its storage."""
    agent_s, verifier_s, env_s = sections["agent"], sections["verifier"], sections["environment"]
    cpus = reader.number(env_s, "cpus", "[environment].cpus")
    memory_mb = _memory_mb(reader, env_s)
    storage_mb = reader.number(env_s, "storage_mb", "[environment].storage_mb", integer=True)
    if "storage" in env_s and storage_mb is None:
        try:
            storage_mb = _size_to_mb(str(env_s["storage"]))
        except ValueError as exc:
            reader.problem("[environment].storage", str(exc))
    fallbacks = (
        ("cpus", cpus, "cpus" in env_s, defaults.cpus),
        ("memory_mb", memory_mb, "memory_mb" in env_s or "memory" in env_s, defaults.memory_mb),
        (
            "agent_timeout_s",
            reader.number(agent_s, "timeout_sec", "[agent].timeout_sec"),
            "timeout_sec" in agent_s,
            defaults.agent_timeout_s,
        ),
        (
            "verifier_timeout_s",
            reader.number(verifier_s, "timeout_sec", "[verifier].timeout_sec"),
            "timeout_sec" in verifier_s,
            defaults.verifier_timeout_s,
        ),
        (
            "build_timeout_s",
            reader.number(env_s, "build_timeout_sec", "[environment].build_timeout_sec"),
            "build_timeout_sec" in env_s,
            defaults.build_timeout_s,
        ),
    )
    values: dict[str, Any] = {"storage_mb": storage_mb}
    defaulted = []
    for key, value, declared_here, default in fallbacks:
        if value is None and not declared_here:
            defaulted.append(key)
            value = default
        values[key] = value
    return values, defaulted


def _instruction(
    reader: _Reader, folder: Path, data: Mapping[str, Any], steps: Sequence[HarborStep]
) -> str:
    """What the agent is told: ``instruction.md`` without its canary lines, or, for a
    multi-step task, each step's instruction under its name."""
    if data.get("steps"):
        return "\n\n".join(f"[step {st.name}]\n{st.instruction}" for st in steps)
    path = folder / INSTRUCTION_FILE
    if not path.is_file():
        reader.problem(INSTRUCTION_FILE, "missing")
        return ""
    try:
        instruction = strip_canary(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        reader.problem(INSTRUCTION_FILE, "not UTF-8 text")
        return ""
    if not instruction.strip():
        reader.problem(INSTRUCTION_FILE, "empty: the agent would get no instruction")
    return instruction


def _image_source(
    reader: _Reader, folder: Path, env_s: Mapping[str, Any]
) -> tuple[str | None, Path | None]:
    """Where the task's image comes from: ``[environment].docker_image``, else the
    ``environment/`` folder holding its Dockerfile."""
    docker_image = reader.text(env_s, "docker_image", "[environment].docker_image")
    if docker_image is not None:
        return docker_image, None
    if (folder / DOCKERFILE).is_file():
        return None, folder / "environment"
    reader.problem(DOCKERFILE, "missing, and no [environment].docker_image: no image to run")
    return None, None


def _read_toml(reader: _Reader, folder: Path) -> dict[str, Any] | None:
    """``task.toml`` parsed; None (with the problem said) when it is missing or not TOML."""
    config_path = folder / CONFIG_FILE
    if not config_path.is_file():
        reader.problem(CONFIG_FILE, "missing: not a Harbor task folder")
        return None
    try:
        return tomllib.loads(config_path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        reader.problem(CONFIG_FILE, f"not valid TOML: {exc}")
        return None


def read_task_folder(
    folder: Path, public_network: str, defaults: HarborDefaults
) -> tuple[HarborTask | None, list[TaskProblem]]:
    """One task folder read and checked: its task (None when refused) and every problem
    found in it (``public_network``: as :func:`evalnoise.tasks.harbor_folders.load_harbor_task`
    takes it)."""
    reader = _Reader(folder.name)
    data = _read_toml(reader, folder)
    if data is None:
        return None, reader.problems

    unknown: dict[str, Any] = {}
    _collect_unknown(data, _TOP_KEYS, "", unknown)
    sections = {name: reader.table(data, name) for name in _SECTION_KEYS}
    for name, keys in _SECTION_KEYS.items():
        _collect_unknown(sections[name], keys, f"{name}.", unknown)
    agent_s, verifier_s, env_s = sections["agent"], sections["verifier"], sections["environment"]
    metadata = reader.table(data, "metadata")

    name = reader.text(sections["task"], "name", "[task].name") or folder.name
    reader.task = name if name == folder.name else f"{name} ({folder.name})"

    version = data.get("schema_version", data.get("version", "1.4"))
    if not isinstance(version, str) or not re.fullmatch(r"1(\.\d+)*", version.strip()):
        key = "schema_version" if "schema_version" in data else "version"
        reader.problem(key, f"unsupported schema version {version!r}: this loader reads 1.x")

    verifier_setup = read_verifier_setup(data, verifier_s, folder, reader.problem)
    _unsupported(reader, verifier_s, env_s)
    healthcheck = _healthcheck(reader, env_s, "[environment].healthcheck")
    network = _task_network(reader, sections, public_network)
    values, defaulted = _limits(reader, sections, defaults)

    steps = _steps(reader, data, folder, values, verifier_s)
    strategy = data.get("multi_step_reward_strategy")
    if strategy is not None and strategy not in REWARD_STRATEGIES:
        reader.problem(
            "multi_step_reward_strategy",
            f"must be one of {list(REWARD_STRATEGIES)}, got {strategy!r}",
        )

    instruction = _instruction(reader, folder, data, steps)
    if not data.get("steps") and not (folder / TEST_SCRIPT).is_file():
        reader.problem(TEST_SCRIPT, "missing: the verifier has nothing to run")
    docker_image, build_context = _image_source(reader, folder, env_s)

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
        storage_mb=values["storage_mb"],
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
        compose_file=folder / COMPOSE_FILE if (folder / COMPOSE_FILE).is_file() else None,
        steps=tuple(steps),
        healthcheck=healthcheck,
        reward_strategy=(strategy or "mean") if steps else None,
        verifier=verifier_setup,
    )
    return task, []
