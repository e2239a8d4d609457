"""The agent contract: what a trial's container gets, and what it must give back.

Any image that follows this contract is an agent (docs/agent-contract.md says the same).

**Input.** The runner writes the task as a JSON object to ``/evalnoise/task.json``
(bind-mounted read-only)::

    {"contract_version": 1, "task_id": "...", "question": "...", "trial": 3, "attempt": 1,
     "seed": 4093871592037718117, "seed32": 1312745573, "time_limit_s": 60.0,
     "level": "...", "cpus": 1.0, "memory_mb": 512, "agent": "...",
     "resource_profile": "3x", "output_path": "/evalnoise/out/answer.json"}

The task's reference answer is never given to the agent. The same values arrive as
environment variables:

====================== =====================================================
``EVALNOISE_TASK_ID``  task id
``EVALNOISE_TRIAL``    trial index (0-based)
``EVALNOISE_ATTEMPT``  attempt number (1-based; >1 only when the infra policy retries)
``EVALNOISE_SEED``     63-bit trial seed (see :mod:`evalnoise.runner.seeds`)
``EVALNOISE_SEED32``   the seed's low 31 bits, for RNGs that take 32-bit seeds
``EVALNOISE_QUESTION`` the question (omitted if longer than 64 KiB: read the file)
``EVALNOISE_TIME_LIMIT_S`` seconds until the runner kills the trial
``EVALNOISE_TASK_FILE`` path of the task JSON
``EVALNOISE_OUTPUT``   path the answer must be written to
====================== =====================================================

plus the agent's own ``env`` and the secrets named in its ``secret_env`` (values read
from the runner's environment at run time).

**Output.** The agent writes ``{"answer": <value>}`` to ``EVALNOISE_OUTPUT``
(``/evalnoise/out/answer.json``, on a writable bind mount; at most 1 MiB) and exits 0. A string
answer is recorded as is; any other JSON value as its canonical JSON text. If that file is
missing or unreadable, the last line of stdout that is a JSON object with an ``"answer"``
key is used instead. The record may carry the agent's model usage (optional; agents built on
``agents/common/agentlib.py`` send it without asking)::

    {"answer": "42", "usage": {"model_calls": 2, "prompt_tokens": 310, "completion_tokens": 18}}

Each count is a non-negative integer or null (unknown); a missing ``usage`` or key is
unknown too. The record may also carry a ``trajectory``, the agent's actions in order (each a
non-empty string or a JSON object such as a tool call), recorded beside the trial, never in
its row (:func:`evalnoise.runner.actions.reported_trajectory`: a malformed one is not
recorded, with a note in ``error``). The runner records the counts in the trial row
(:func:`usage_columns`): a malformed value is recorded as null with a note in ``error``,
never read as a number and never a reason to fail the trial. Exit status 75
(``EX_TEMPFAIL``: a service the agent depends on, such as the model endpoint, stayed
unreachable) is ``infra_error``; any other non-zero exit, or no answer either way, is
``agent_error``.

**Environment.** In a container the root filesystem is read-only; ``/tmp`` is a writable
tmpfs (also ``HOME`` and the working directory); the process runs as user ``65534:65534``
with no capabilities, ``no-new-privileges``, a PID limit and an init process; there is no
network unless the agent declares ``network: host`` (for a model server on 127.0.0.1).
Under the ``local`` backend the paths are temp-dir paths given by the same variables, and
isolation is much weaker (see :mod:`evalnoise.runner.local_backend`).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

CONTRACT_VERSION = 1

CONTRACT_DIR = "/evalnoise"
TASK_PATH = "/evalnoise/task.json"
OUTPUT_DIR = "/evalnoise/out"
OUTPUT_FILE = "answer.json"
OUTPUT_PATH = f"{OUTPUT_DIR}/{OUTPUT_FILE}"
SCRATCH_DIR = "/tmp"

ENV_PREFIX = "EVALNOISE_"
#: Questions longer than this are not put in EVALNOISE_QUESTION (Linux caps one env string).
MAX_QUESTION_ENV_BYTES = 64 * 1024
#: Answer files larger than this are an agent error.
MAX_ANSWER_BYTES = 1024 * 1024

#: Exit status by which an agent says "a service I depend on (the model endpoint) stayed
#: unreachable after my retries" — ``EX_TEMPFAIL`` from sysexits.h. The trial is then an
#: ``infra_error``, not the agent's failure: the infra policy decides how it counts.
EXIT_INFRA_UNAVAILABLE = 75
#: Bytes of stdout/stderr kept in the trial row.
TAIL_BYTES = 4096
REDACTED = "[REDACTED]"

NETWORK_MODES = ("none", "host")
#: Agents of environment tasks that the runner itself plays (evalnoise.runner.environment):
#: ``oracle`` runs the task's solution/solve.sh, ``nop`` (the null agent) does nothing.
BUILTIN_AGENTS = ("oracle", "nop")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class AgentSpec:
    """An agent: an image following the contract (or a command, for the local backend).

    ``env`` holds non-secret variables; ``secret_env`` only *names* host variables whose
    values are passed at run time and redacted from everything recorded; ``runtime_env``
    names host variables that are not secret but only known at run time (such as the URL of
    a model server started for this shard on a free port): passed through, recorded only by
    name, never part of a trial's identity.
    """

    name: str
    image: str | None = None
    command: tuple[str, ...] | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    secret_env: tuple[str, ...] = ()
    runtime_env: tuple[str, ...] = ()
    network: str = "none"
    user: str = "65534:65534"
    pids_limit: int = 256
    scratch_mb: int = 256
    #: an agent the runner plays itself for environment tasks (:data:`BUILTIN_AGENTS`)
    builtin: str | None = None
    #: an external agent whose command serves forks: started once per shard, a child forked
    #: per trial (:mod:`evalnoise.runner.fork_server`)
    fork_server: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError("agent spec: 'name' must be a non-empty string")
        if self.builtin is not None and self.builtin not in BUILTIN_AGENTS:
            raise ValueError(
                f"agent {self.name!r}: builtin must be one of {BUILTIN_AGENTS}, got "
                f"{self.builtin!r}"
            )
        if self.network not in NETWORK_MODES:
            raise ValueError(
                f"agent {self.name!r}: network must be one of {NETWORK_MODES}, got {self.network!r}"
            )
        for key in list(self.env) + list(self.secret_env) + list(self.runtime_env):
            if not _ENV_NAME.match(key):
                raise ValueError(f"agent {self.name!r}: invalid variable name {key!r}")
            if key.startswith(ENV_PREFIX):
                raise ValueError(
                    f"agent {self.name!r}: {key!r} uses the reserved prefix {ENV_PREFIX}"
                )
        kinds = {
            "env": set(self.env),
            "secret_env": set(self.secret_env),
            "runtime_env": set(self.runtime_env),
        }
        for (a, sa), (b, sb) in itertools.combinations(kinds.items(), 2):
            if sa & sb:
                raise ValueError(f"agent {self.name!r}: {sorted(sa & sb)} are both {a} and {b}")
        if self.command is not None and not self.command:
            raise ValueError(f"agent {self.name!r}: command must not be empty")
        if self.fork_server and not self.command:
            raise ValueError(f"agent {self.name!r}: fork_server needs a command")
        if int(self.pids_limit) < 1 or int(self.scratch_mb) < 1:
            raise ValueError(f"agent {self.name!r}: pids_limit and scratch_mb must be >= 1")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AgentSpec:
        allowed = {
            "name",
            "image",
            "command",
            "env",
            "secret_env",
            "runtime_env",
            "network",
            "user",
            "pids_limit",
            "scratch_mb",
            "builtin",
            "fork_server",
        }
        unknown = set(data) - allowed
        if unknown:
            raise ValueError(
                f"agent spec: unknown keys {sorted(unknown)}; expected {sorted(allowed)}"
            )
        if "name" not in data:
            raise ValueError("agent spec: 'name' is required")
        command = data.get("command")
        if isinstance(command, str):
            command = shlex.split(command)
        env = data.get("env") or {}
        if not isinstance(env, Mapping):
            raise ValueError("agent spec: 'env' must be a mapping of name to value")
        names = {}
        for key in ("secret_env", "runtime_env"):
            value = data.get(key) or ()
            if isinstance(value, str) or not isinstance(value, Sequence):
                raise ValueError(f"agent spec: {key!r} must be a list of variable names")
            names[key] = tuple(str(v) for v in value)
        return cls(
            name=data["name"],
            image=data.get("image"),
            command=tuple(str(c) for c in command) if command is not None else None,
            env={str(k): str(v) for k, v in env.items()},
            secret_env=names["secret_env"],
            runtime_env=names["runtime_env"],
            network=data.get("network", "none"),
            user=str(data.get("user", "65534:65534")),
            pids_limit=int(data.get("pids_limit", 256)),
            scratch_mb=int(data.get("scratch_mb", 256)),
            builtin=data.get("builtin"),
            fork_server=_flag(data.get("fork_server", False), "fork_server"),
        )

    def to_dict(self) -> dict[str, Any]:
        """The spec as config data (secret *names* only; values never live here)."""
        return {
            "name": self.name,
            "image": self.image,
            "command": list(self.command) if self.command is not None else None,
            "env": dict(sorted(self.env.items())),
            "secret_env": list(self.secret_env),
            "runtime_env": list(self.runtime_env),
            "network": self.network,
            "user": self.user,
            "pids_limit": self.pids_limit,
            "scratch_mb": self.scratch_mb,
            # only when set: the spec of every other agent (and its journals' headers) stays
            # what it was before built-in agents existed
            **({"builtin": self.builtin} if self.builtin is not None else {}),
            **({"fork_server": True} if self.fork_server else {}),
        }

    def secret_values(self, environ: Mapping[str, str] | None = None) -> dict[str, str]:
        """Values of ``secret_env`` from ``environ`` (default ``os.environ``).

        Raises ``KeyError`` naming every missing variable (never a value).
        """
        return self._values(self.secret_env, "secret", environ)

    def runtime_values(self, environ: Mapping[str, str] | None = None) -> dict[str, str]:
        """Values of ``runtime_env`` from ``environ`` (default ``os.environ``).

        Raises ``KeyError`` naming every missing variable.
        """
        return self._values(self.runtime_env, "run-time", environ)

    def _values(
        self, names: Sequence[str], kind: str, environ: Mapping[str, str] | None
    ) -> dict[str, str]:
        environ = os.environ if environ is None else environ
        missing = [name for name in names if name not in environ]
        if missing:
            raise KeyError(
                f"agent {self.name!r}: {kind} variables not set in the runner's "
                f"environment: {', '.join(missing)}"
            )
        return {name: environ[name] for name in names}


def _flag(value: Any, key: str) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"agent spec: {key!r} must be true or false, got {value!r}")
    return value


def agent_spec(spec: AgentSpec | Mapping[str, Any]) -> AgentSpec:
    return spec if isinstance(spec, AgentSpec) else AgentSpec.from_dict(spec)


def task_payload(
    task: Mapping[str, Any],
    *,
    agent: str,
    resource_profile: str,
    trial: int,
    attempt: int,
    seed: int,
    time_limit_s: float,
    output_path: str = OUTPUT_PATH,
) -> dict[str, Any]:
    """The task JSON given to the agent. Never includes the reference answer."""
    from evalnoise.formatting import jsonable as plain

    return {
        "contract_version": CONTRACT_VERSION,
        "task_id": str(task["task_id"]),
        "question": str(task["question"]),
        "trial": int(trial),
        "attempt": int(attempt),
        "seed": int(seed),
        "seed32": int(seed) & 0x7FFFFFFF,
        "time_limit_s": float(time_limit_s),
        "level": plain(task.get("level")),
        "cpus": plain(task.get("cpus")),
        "memory_mb": plain(task.get("memory_mb")),
        "agent": agent,
        "resource_profile": resource_profile,
        "output_path": output_path,
    }


def agent_environment(
    payload: Mapping[str, Any],
    spec: AgentSpec,
    secrets: Mapping[str, str],
    *,
    task_path: str = TASK_PATH,
    output_path: str = OUTPUT_PATH,
    runtime: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Environment variables of one trial: the agent's env, its run-time variables, its
    secrets, EVALNOISE_*."""
    env = dict(spec.env)
    env.update(runtime or {})
    env.update(secrets)
    env.update(
        {
            "EVALNOISE_TASK_ID": str(payload["task_id"]),
            "EVALNOISE_TRIAL": str(payload["trial"]),
            "EVALNOISE_ATTEMPT": str(payload["attempt"]),
            "EVALNOISE_SEED": str(payload["seed"]),
            "EVALNOISE_SEED32": str(payload["seed32"]),
            "EVALNOISE_TIME_LIMIT_S": repr(float(payload["time_limit_s"])),
            "EVALNOISE_TASK_FILE": task_path,
            "EVALNOISE_OUTPUT": output_path,
        }
    )
    question = str(payload["question"])
    if len(question.encode("utf-8")) <= MAX_QUESTION_ENV_BYTES and "\x00" not in question:
        env["EVALNOISE_QUESTION"] = question
    return env


def write_task_file(path: str | os.PathLike[str], payload: Mapping[str, Any]) -> None:
    """``payload`` as the agent's read-only task file; one left by an earlier step of the
    same trial is replaced, not written through (it is read-only to a user other than root)."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(payload, handle, ensure_ascii=False, sort_keys=True)
    os.chmod(path, 0o444)


def _answer_text(obj: Any) -> str | None:
    if not isinstance(obj, dict) or obj.get("answer") is None:
        return None
    value = obj["answer"]
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def classify_exit(
    exit_code: int, prediction: str | None, problem: str | None
) -> tuple[str, str | None]:
    """Status and error of a trial that ran to completion (not timed out or OOM-killed).

    exit 0 with an answer → ``ok``; exit :data:`EXIT_INFRA_UNAVAILABLE` → ``infra_error``;
    any other non-zero exit, or no answer → ``agent_error``.
    """
    if exit_code == EXIT_INFRA_UNAVAILABLE:
        return "infra_error", (
            f"exit code {exit_code}: the agent reports a service it needs was unreachable"
        )
    if exit_code != 0:
        return "agent_error", f"exit code {exit_code}"
    if prediction is None:
        return "agent_error", problem
    return "ok", None


@dataclass(frozen=True)
class AgentOutput:
    """What the runner reads from a finished agent: the answer and the record it came in.

    ``prediction`` is the answer text (None: no answer, ``problem`` says why); ``record``
    the JSON object that gave it (None without an answer), whose ``usage`` the trial row
    records (:func:`usage_columns`).
    """

    prediction: str | None
    problem: str | None
    record: dict[str, Any] | None = None


def parse_output(output_file: bytes | None, stdout: str) -> AgentOutput:
    """The answer from the output file, else stdout's last JSON line with an answer.

    ``output_file`` is the file's bytes (``None`` if absent).
    """
    problems = []
    if output_file is None:
        problems.append("no answer file")
    elif len(output_file) > MAX_ANSWER_BYTES:
        problems.append(f"answer file larger than {MAX_ANSWER_BYTES} bytes")
    else:
        try:
            obj = json.loads(output_file.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
            obj = None
        text = _answer_text(obj)
        if text is not None:
            return AgentOutput(text, None, obj)
        problems.append('answer file is not a JSON object with a non-null "answer"')
    for line in reversed(stdout.splitlines()):
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            obj = json.loads(line)
        except (json.JSONDecodeError, RecursionError):
            continue
        text = _answer_text(obj)
        if text is not None:
            return AgentOutput(text, None, obj)
    problems.append('no JSON line with an "answer" on stdout')
    return AgentOutput(None, "; ".join(problems))


def parse_answer(output_file: bytes | None, stdout: str) -> tuple[str | None, str | None]:
    """``(prediction, problem)`` of :func:`parse_output`."""
    output = parse_output(output_file, stdout)
    return output.prediction, output.problem


#: The usage counts an agent may report, and the trial columns that record them.
USAGE_KEYS = ("prompt_tokens", "completion_tokens", "model_calls")
#: Largest count taken at face value (int64-safe).
MAX_USAGE_COUNT = 2**53


def usage_columns(record: Mapping[str, Any] | None) -> tuple[dict[str, int | None], str | None]:
    """``(columns, note)``: the trial columns of :data:`USAGE_KEYS` from an answer record's
    ``usage``, and a note naming what was malformed (None if nothing was).

    A count is recorded only as the integer it is (0 ≤ n ≤ 2**53; not a bool, a fraction or
    a string); null or absent is unknown (null, no note); anything else is null with a note:
    a malformed report must neither fail the trial nor pass for a measurement.
    """
    columns: dict[str, int | None] = dict.fromkeys(USAGE_KEYS)
    usage = None if record is None else record.get("usage")
    if usage is None:
        return columns, None
    if not isinstance(usage, Mapping):
        return columns, f"usage ignored: not a JSON object ({type(usage).__name__})"
    bad = []
    for key in USAGE_KEYS:
        value = usage.get(key)
        if value is None:
            continue
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_USAGE_COUNT:
            columns[key] = value
        else:
            bad.append(f"{key}={json.dumps(value)[:40]}")
    note = f"usage ignored: {', '.join(bad)} (not a count)" if bad else None
    return columns, note


def redact(text: str | None, secrets: Mapping[str, str] | Sequence[str]) -> str | None:
    """``text`` with every occurrence of every non-empty secret value replaced."""
    if text is None:
        return None
    values = secrets.values() if isinstance(secrets, Mapping) else secrets
    for value in sorted({v for v in values if v}, key=len, reverse=True):
        text = text.replace(value, REDACTED)
    return text


def tail(text: str, limit: int = TAIL_BYTES) -> str:
    """The last ``limit`` bytes of ``text`` (UTF-8), cut at a character boundary."""
    data = text.encode("utf-8", errors="replace")
    if len(data) <= limit:
        return text
    return data[-limit:].decode("utf-8", errors="ignore")
