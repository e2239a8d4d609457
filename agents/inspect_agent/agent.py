"""Inspect's agents (solvers), unchanged, as evalnoise exec-protocol agents.

Runs on the host in the project's Python with the released ``inspect_ai`` (the ``inspect``
extra), started by the runner as an external environment agent (docs/agent-contract.md,
"Inspect's agents"). The ``INSPECT_AGENT`` variable (canonical JSON, written by evalnoise's
pipeline) names the agent::

    {"solver": "inspect_ai.agent.react" | "module:factory", "tools": ["bash", "python"],
     "model": "served" | "<provider>/<model>", "kwargs": {...}, "generate": {...},
     "model_args": {...}}

It registers the sandbox environment provider ``evalnoise`` (Inspect's extension point,
``@sandboxenv``) whose ``exec``, ``write_file`` and ``read_file`` go to the trial's container
through the exec protocol (``agents/common/exec_channel.py``), builds one Inspect ``Task``
whose single sample's input is the task's instruction, with no scorer (evalnoise's verifier
decides the score), and runs it with ``inspect_ai.eval``. The solver factory is called with
the tools (``bash()``, ``python()`` from ``inspect_ai.tool``) and ``kwargs``. ``generate``
becomes the model's ``GenerateConfig``, its ``seed`` the trial's (``EVALNOISE_SEED32``).

``model: served`` is ``openai-api/served/<alias>`` at the run's model server
(``AGENT_BASE_URL``, a placeholder key). Inspect's model usage (tokens of every model, model
calls counted from the sample's model events) becomes the cost drivers of ``done``; an
evaluation that ended in error is reported as ``error`` (its exception type read from the
traceback), which the runner classifies (``evalnoise.runner.agent_failures``).

Commands run as ``bash -c`` as the task's agent user: ``user`` is accepted only as that user
(``SandboxUserUnsupportedError`` otherwise); ``input`` reaches the command's stdin from a
base64 literal; stdout and stderr arrive merged (as stdout).
"""

from __future__ import annotations

import base64
import importlib
import inspect
import json
import os
import re
import shlex
import sys
import tempfile
from typing import Any, Literal, overload

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "common"))

from exec_channel import Channel, CommandFailed, ProtocolClosed  # noqa: E402
from inspect_ai.util import (  # noqa: E402
    ExecResult,
    SandboxEnvironment,
    SandboxEnvironmentConfigType,
    sandboxenv,
)
from inspect_ai.util._sandbox.environment import SandboxUserUnsupportedError  # noqa: E402

#: the sandbox provider's name (``sandbox="evalnoise"`` in the task)
SANDBOX = "evalnoise"
CHANNEL: Channel | None = None
#: users a command may name: the task's agent user (from the task file) and nothing else
AGENT_USERS: set[str] = set()


@sandboxenv(name=SANDBOX)
class EvalnoiseSandbox(SandboxEnvironment):
    """The trial's container, started and removed by evalnoise's runner."""

    @classmethod
    async def sample_init(
        cls,
        task_name: str,
        config: SandboxEnvironmentConfigType | None,
        metadata: dict[str, str],
    ) -> dict[str, SandboxEnvironment]:
        return {"default": cls()}

    @classmethod
    async def sample_cleanup(
        cls,
        task_name: str,
        config: SandboxEnvironmentConfigType | None,
        environments: dict[str, SandboxEnvironment],
        interrupted: bool,
    ) -> None:
        return None

    async def exec(
        self,
        cmd: list[str],
        input: str | bytes | None = None,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        user: str | None = None,
        timeout: int | None = None,
        timeout_retry: bool = True,
        concurrency: bool = True,
    ) -> ExecResult[str]:
        if user is not None and user not in AGENT_USERS:
            raise SandboxUserUnsupportedError(
                f"evalnoise runs every command as the task's agent user, not {user!r}"
            )
        lines = [f"export {k}={shlex.quote(str(v))}" for k, v in (env or {}).items()]
        if cwd:
            lines.append(f"cd {shlex.quote(cwd)} || exit 1")
        command = shlex.join(cmd)
        if input is not None:
            data = input.encode("utf-8") if isinstance(input, str) else input
            staged = base64.b64encode(data).decode("ascii")
            command = f"printf %s {staged} | base64 -d | {command}"
        assert CHANNEL is not None
        answer = CHANNEL.exec("\n".join([*lines, command]), timeout)
        if answer.get("timed_out"):
            raise TimeoutError(f"command timed out after {timeout} s")
        code = answer.get("exit_code")
        code = 137 if code is None else int(code)
        return ExecResult(success=code == 0, returncode=code, stdout=answer["output"], stderr="")

    async def write_file(self, file: str, contents: str | bytes) -> None:
        data = contents.encode("utf-8") if isinstance(contents, str) else contents
        assert CHANNEL is not None
        try:
            CHANNEL.put_bytes(data, file)
        except CommandFailed as exc:
            raise PermissionError(str(exc)) from None

    @overload
    async def read_file(self, file: str, text: Literal[True] = True) -> str: ...

    @overload
    async def read_file(self, file: str, text: Literal[False]) -> bytes: ...

    async def read_file(self, file: str, text: bool = True) -> str | bytes:
        assert CHANNEL is not None
        data = CHANNEL.get_bytes(file)
        return data.decode("utf-8") if text else data


def solver_of(config: dict[str, Any]) -> Any:
    """The configured solver: its factory called with the tools and ``kwargs``."""
    from inspect_ai.tool import bash, python

    name = str(config["solver"])
    module, _, attr = name.partition(":") if ":" in name else name.rpartition(".")
    factory = getattr(importlib.import_module(module), attr)
    makers = {"bash": bash, "python": python}
    unknown = [t for t in config.get("tools") or [] if t not in makers]
    if unknown:
        raise ValueError(f"unknown tools {unknown}: this adapter offers {sorted(makers)}")
    tools = [makers[t]() for t in config.get("tools") or []]
    kwargs = dict(config.get("kwargs") or {})
    if tools and "tools" in inspect.signature(factory).parameters:
        kwargs["tools"] = tools
    return factory(**kwargs)


def model_of(config: dict[str, Any]) -> str:
    """Inspect's model name; ``served`` points at the run's model server."""
    model = config.get("model")
    if model != "served":
        return str(model)
    alias, base = os.environ.get("AGENT_MODEL"), os.environ.get("AGENT_BASE_URL")
    if not alias or not base:
        raise RuntimeError("model: served, but AGENT_MODEL or AGENT_BASE_URL is not set")
    os.environ["SERVED_BASE_URL"] = base
    os.environ.setdefault("SERVED_API_KEY", "evalnoise-served-model")
    return f"openai-api/served/{alias}"


def _error_type(traceback_text: str | None) -> str:
    """The exception type on the last line of a traceback (``Exception`` if none)."""
    for line in reversed((traceback_text or "").strip().splitlines()):
        found = re.match(r"^([A-Za-z_][\w.]*)(?::|$)", line.strip())
        if found:
            return found.group(1).rsplit(".", 1)[-1]
    return "Exception"


def run(config: dict[str, Any], task: dict[str, Any]) -> dict[str, Any]:
    """One Inspect evaluation of one sample in the trial's container; the ``done`` message."""
    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.event import ModelEvent
    from inspect_ai.model import GenerateConfig

    generate = dict(config.get("generate") or {})
    generate.setdefault("seed", int(os.environ["EVALNOISE_SEED32"]))
    inspect_task = Task(
        dataset=[Sample(input=str(task["question"]), id=str(task["task_id"]))],
        solver=solver_of(config),
        scorer=None,
        sandbox=SANDBOX,
        config=GenerateConfig(**generate),
    )
    logs = eval(
        inspect_task,
        model=model_of(config),
        model_args=dict(config.get("model_args") or {}),
        log_dir=tempfile.mkdtemp(prefix="inspect-logs-", dir=os.environ.get("HOME")),
        display="none",
        score=False,
        fail_on_error=False,
    )
    log = logs[0]
    usage: dict[str, int | None] = {
        "model_calls": None,
        "prompt_tokens": None,
        "completion_tokens": None,
    }
    by_model = log.stats.model_usage if log.stats else {}
    if by_model:
        usage["prompt_tokens"] = sum(u.input_tokens for u in by_model.values())
        usage["completion_tokens"] = sum(u.output_tokens for u in by_model.values())
    sample = (log.samples or [None])[0]
    if sample is not None:
        usage["model_calls"] = sum(isinstance(e, ModelEvent) for e in sample.events)
    done: dict[str, Any] = {"done": True, "usage": usage, "inspect": {"status": log.status}}
    error = log.error or (sample.error if sample is not None else None)
    if error is not None:
        done["error"] = {
            "type": _error_type(error.traceback),
            "message": str(error.message)[:2000],
            "phase": "run",
        }
    return done


def main() -> int:
    global CHANNEL
    CHANNEL = Channel()
    config = json.loads(os.environ["INSPECT_AGENT"])
    with open(os.environ["EVALNOISE_TASK_FILE"], encoding="utf-8") as handle:
        task = json.load(handle)
    user = str(task.get("user") or "0:0")
    AGENT_USERS.add(user)
    if user.split(":")[0] in ("0", "root"):
        AGENT_USERS.update(("root", "0", "0:0"))
    try:
        done = run(config, task)
    except ProtocolClosed as exc:
        print(exc, file=sys.stderr)
        return 1
    CHANNEL.send(done)
    return 0


if __name__ == "__main__":
    sys.exit(main())
