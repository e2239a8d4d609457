"""Harbor's agents, unchanged, as evalnoise exec-protocol agents (docs/agent-contract.md).

Runs in Harbor's own Python (tools/install-harbor.sh's venv, Python >= 3.12), started by the
runner as an external environment agent. It builds Harbor's agent class from the
``HARBOR_AGENT`` variable (canonical JSON ``{"agent": name or "module:Class", "model": ...,
"kwargs": {...}}``, written by evalnoise's pipeline), hands it :class:`ExecProtocolEnvironment`
— Harbor's ``BaseEnvironment`` whose ``exec``, ``upload_*`` and ``download_*`` go to the
trial's container as exec-protocol requests on this process's stdout — and awaits the agent's
own ``setup()`` and ``run()``, as Harbor's ``Trial`` does (the agent's ``extra_env`` scoped
over both). Then it says ``done`` with

- ``usage``: the agent's ``AgentContext`` as cost drivers (``prompt_tokens`` =
  ``n_input_tokens``, ``completion_tokens`` = ``n_output_tokens``, ``model_calls`` = the
  model requests Terminus-2 timed, else null: unknown, never 0);
- ``harbor``: the rest of the context (cache tokens, cost, episodes);
- ``error`` when ``setup()`` or ``run()`` raised: ``{"type", "message", "phase": "setup" |
  "run"}``; the runner classifies the type with the Harbor importer's table
  (``evalnoise.runner.agent_failures``).

Files cross as base64 inside shell commands (``agents/common/exec_channel.py``); a directory
as a gzipped tar through a file in the container's ``/tmp``. Harbor's logger writes to stderr
(the trial row's ``stderr_tail``); anything else written to stdout by the agent's libraries
goes to stderr too, so only protocol lines reach the runner. Harbor's trial folder (the
agent's logs, Terminus-2's ``trajectory.json``) is made in the agent's fresh home and removed
with the trial, or kept under ``HARBOR_TRIAL_DIR`` (an ``env`` of the agent spec) in
``<task>__<trial>__<attempt>/``.

``model: served`` arrives as ``AGENT_MODEL`` (the served model's alias) and ``AGENT_BASE_URL``
(the run's model server, OpenAI-compatible): the agent's model becomes ``openai/<alias>`` with
that base URL (``api_base`` for agents that take it, ``OPENAI_BASE_URL`` otherwise) and a
placeholder key when none is set. The trial's seed is ``EVALNOISE_SEED``/``EVALNOISE_SEED32``
in this process's environment, and the model call's ``seed`` (``EVALNOISE_SEED32``) for
agents that take ``llm_call_kwargs`` (Terminus-2).

Commands run as the task's agent user, whatever ``user`` the agent names (the exec protocol
has one user); the first such request is logged.

Started as a fork server (the pipeline's Harbor agents: ``fork_server: true``,
``agents/common/fork_server.py``), it imports Harbor and the agent's class once per shard
(:func:`preload`) and each trial is a forked child running :func:`trial_main`, with the
trial's own environment, seed, home and stderr.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import io
import json
import logging
import os
import shlex
import sys
import tarfile
import tempfile
import traceback
import uuid
from pathlib import Path
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "common"))

import fork_server  # noqa: E402
from exec_channel import Channel, ProtocolClosed  # noqa: E402

#: Harbor's agents whose constructor gets the task folder (Harbor's Trial._init_agent)
TASK_DIR_AGENTS = ("oracle",)

log = logging.getLogger("evalnoise.harbor_agent")


def _harbor_environment_class() -> type:
    from harbor.environments.base import BaseEnvironment, ExecResult
    from harbor.environments.capabilities import EnvironmentCapabilities

    class ExecProtocolEnvironment(BaseEnvironment):
        """Harbor's ``BaseEnvironment`` over evalnoise's exec protocol: the trial's container,
        started and removed by evalnoise's runner (``start``/``stop`` do nothing)."""

        channel: Channel
        _warned_user = False

        @staticmethod
        def type() -> str:
            return "evalnoise"

        @property
        def capabilities(self) -> EnvironmentCapabilities:
            # the trial's container has no network: a task that asks for none is honoured
            return EnvironmentCapabilities(disable_internet=True)

        def _validate_definition(self) -> None:
            return None

        async def start(self, force_build: bool) -> None:
            return None

        async def stop(self, delete: bool) -> None:
            return None

        async def exec(
            self,
            command: str,
            cwd: str | None = None,
            env: dict[str, str] | None = None,
            timeout_sec: int | None = None,
            user: str | int | None = None,
        ) -> ExecResult:
            user = self._resolve_user(user)
            if user is not None and not self._warned_user:
                self._warned_user = True
                log.info(
                    "exec as user %r requested: evalnoise runs every command as the task's "
                    "agent user",
                    user,
                )
            prefix = []
            for key, value in (self._merge_env(env) or {}).items():
                prefix.append(f"export {key}={shlex.quote(str(value))}")
            if cwd:
                prefix.append(f"cd {shlex.quote(str(cwd))} || exit 1")
            full = "\n".join([*prefix, command]) if prefix else command
            answer = self.channel.exec(full, timeout_sec)
            code = answer.get("exit_code")
            if answer.get("timed_out"):
                # what Harbor's Docker environment raises for a command past its timeout
                raise RuntimeError(f"Command timed out after {timeout_sec} seconds")
            return ExecResult(
                stdout=answer.get("output", ""),
                stderr="",
                return_code=137 if code is None else int(code),
            )

        async def upload_file(self, source_path: Path | str, target_path: str) -> None:
            source = Path(source_path)
            self.channel.upload_file(
                source.read_bytes(), target_path, source.stat().st_mode & 0o777
            )

        async def upload_dir(self, source_dir: Path | str, target_dir: str) -> None:
            buffer = io.BytesIO()
            with tarfile.open(fileobj=buffer, mode="w") as tar:
                tar.add(str(source_dir), arcname=".")
            self.channel.upload(buffer.getvalue(), target_dir)

        async def download_file(self, source_path: str, target_path: Path | str) -> None:
            target = Path(target_path)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(self.channel.get_bytes(source_path))

        async def download_dir(self, source_dir: str, target_dir: Path | str) -> None:
            staged = f"/tmp/.evalnoise-download-{uuid.uuid4().hex}.tar.gz"
            self.channel.checked(
                f"tar -czf {staged} -C {shlex.quote(source_dir)} .", f"download {source_dir}"
            )
            try:
                data = self.channel.get_bytes(staged)
            finally:
                await self.exec(f"rm -f {staged}")
            target = Path(target_dir)
            target.mkdir(parents=True, exist_ok=True)
            with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
                tar.extractall(target, filter="data")

    return ExecProtocolEnvironment


def agent_class(name: str) -> type:
    """Harbor's agent class: a name Harbor knows (``terminus-2``, ``oracle``, ``nop``,
    ``claude-code``, …) or an import path ``module:Class``."""
    from harbor.agents.factory import AgentFactory
    from harbor.models.agent.name import AgentName

    if ":" in name:
        module, _, attr = name.partition(":")
        return getattr(importlib.import_module(module), attr)
    if name not in AgentName.values():
        known = ", ".join(sorted(AgentName.values()))
        raise ValueError(f"Harbor has no agent named {name!r} (known: {known})")
    return AgentFactory.get_agent_class(AgentName(name))


def served_model(config: dict[str, Any], kwargs: dict[str, Any], accepts: set[str]) -> str | None:
    """The LiteLLM model name, pointing the agent at the run's model server when the model
    is ``served`` (module docstring)."""
    model = config.get("model")
    if model != "served":
        return model
    alias, base = os.environ.get("AGENT_MODEL"), os.environ.get("AGENT_BASE_URL")
    if not alias or not base:
        raise RuntimeError("model: served, but AGENT_MODEL or AGENT_BASE_URL is not set")
    os.environ.setdefault("OPENAI_API_KEY", "evalnoise-served-model")
    os.environ["OPENAI_BASE_URL"] = base
    os.environ["OPENAI_API_BASE"] = base
    if "api_base" in accepts:
        kwargs.setdefault("api_base", base)
    return f"openai/{alias}"


def _accepted(cls: type) -> set[str]:
    names: set[str] = set()
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is not None:
            names |= set(inspect.signature(init).parameters)
    options = getattr(cls, "options_model", None)
    if options is not None:
        names |= set(options.model_fields)
    return names


def usage_of(context: Any) -> tuple[dict[str, int | None], dict[str, Any]]:
    """(the contract's usage, the rest of Harbor's AgentContext)."""
    metadata = context.metadata or {}
    calls = metadata.get("api_request_times_msec")
    usage = {
        "model_calls": len(calls) if isinstance(calls, list) else None,
        "prompt_tokens": context.n_input_tokens,
        "completion_tokens": context.n_output_tokens,
    }
    extra = {
        "n_cache_tokens": context.n_cache_tokens,
        "cost_usd": context.cost_usd,
        "n_episodes": metadata.get("n_episodes"),
    }
    return usage, extra


def _build(channel: Channel, config: dict[str, Any], task: dict[str, Any], paths: Any) -> tuple:
    """Harbor's view of the trial: the environment over the exec protocol, and the agent
    built as Harbor's ``Trial._init_agent`` builds it."""
    from harbor.models.task.task import Task
    from harbor.models.trial.config import ResourceMode

    task_dir = Path(task["task_dir"])
    harbor_task = Task(task_dir)
    environment_cls = _harbor_environment_class()
    environment_cls.channel = channel
    environment = environment_cls(
        # evalnoise applies the resource profile to the container; Harbor's checks of how an
        # environment enforces cpus/memory do not apply
        cpu_enforcement_policy=ResourceMode.IGNORE,
        memory_enforcement_policy=ResourceMode.IGNORE,
        environment_dir=task_dir / "environment",
        environment_name=harbor_task.name,
        session_id=f"{task['task_id']}__{task['trial']}__env",
        trial_paths=paths,
        task_env_config=harbor_task.config.environment,
    )
    cls = agent_class(str(config["agent"]))
    kwargs = dict(config.get("kwargs") or {})
    accepts = _accepted(cls)
    model = served_model(config, kwargs, accepts)
    if "llm_call_kwargs" in accepts:
        call = dict(kwargs.get("llm_call_kwargs") or {})
        call.setdefault("seed", int(os.environ["EVALNOISE_SEED32"]))
        kwargs["llm_call_kwargs"] = call
    if cls.name() in TASK_DIR_AGENTS:
        kwargs.update(
            task_dir=task_dir, trial_paths=paths, agent_timeout_sec=task.get("time_limit_s")
        )
    agent = cls(logs_dir=paths.agent_dir, model_name=model, logger=log, **kwargs)
    agent.session_id = f"{task['task_id']}__{task['trial']}__agent"
    return environment, agent


async def run_agent(channel: Channel, config: dict[str, Any], task: dict[str, Any]) -> dict:
    """Build the agent and the environment, await ``setup()`` then ``run()``; the ``done``
    message."""
    from harbor.models.agent.context import AgentContext
    from harbor.models.trial.paths import TrialPaths

    keep = os.environ.get("HARBOR_TRIAL_DIR")
    if keep:  # Harbor's trial folder kept (its agent's logs, trajectory.json)
        name = f"{task['task_id']}__{task['trial']}__{task['attempt']}".replace("/", "_")
        work = Path(keep) / name
        work.mkdir(parents=True, exist_ok=True)
    else:  # in the agent's fresh home, removed with the trial
        work = Path(tempfile.mkdtemp(prefix="harbor-trial-", dir=os.environ.get("HOME")))
    paths = TrialPaths(work)
    paths.mkdir()
    context = AgentContext()
    phase = "setup"  # building the environment and the agent is part of its setup
    error = None
    agent = None
    try:
        environment, agent = _build(channel, config, task, paths)
        with environment.scoped_exec_env(agent.extra_env):
            await agent.setup(environment=environment)
            phase = "run"
            await agent.run(str(task["question"]), environment, context)
    except ProtocolClosed:
        raise
    except BaseException as exc:  # every failure is reported, then classified
        if isinstance(exc, KeyboardInterrupt | SystemExit):
            raise
        log.error("Harbor agent failed in %s():\n%s", phase, traceback.format_exc())
        error = {"type": type(exc).__name__, "message": str(exc)[:2000], "phase": phase}
    usage, extra = usage_of(context)
    done: dict[str, Any] = {"done": True, "usage": usage, "harbor": extra}
    if agent is not None:
        done["harbor"]["agent"] = agent.name()
    if error is not None:
        done["error"] = error
    return done


def preload() -> None:
    """What every trial of this agent imports (Harbor's models, the agent's class and its
    libraries: LiteLLM for Terminus-2), imported once in a fork server."""
    from harbor.models.agent.context import AgentContext  # noqa: F401
    from harbor.models.task.task import Task  # noqa: F401
    from harbor.models.trial.config import ResourceMode  # noqa: F401
    from harbor.models.trial.paths import TrialPaths  # noqa: F401

    _harbor_environment_class()
    agent_class(str(json.loads(os.environ["HARBOR_AGENT"])["agent"]))


def main() -> int:
    """A trial (a fresh start), or the fork server of a shard's trials."""
    if fork_server.requested():
        return fork_server.serve(preload, trial_main)
    return trial_main()


def trial_main() -> int:
    """One trial: the agent's ``setup()`` and ``run()``, then ``done`` (module docstring)."""
    logging.basicConfig(
        stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(name)s %(message)s"
    )
    channel = Channel()
    config = json.loads(os.environ["HARBOR_AGENT"])
    with open(os.environ["EVALNOISE_TASK_FILE"], encoding="utf-8") as handle:
        task = json.load(handle)
    try:
        done = asyncio.run(run_agent(channel, config, task))
    except ProtocolClosed as exc:
        log.error("%s", exc)
        return 1
    channel.send(done)
    sys.stderr.flush()
    # done is said: skip the interpreter's teardown (LiteLLM's worker threads can hold it for
    # seconds, which the runner would wait for before it runs the verifier)
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
