"""Helpers of the environment-trial tests: small Harbor tasks written into a temp dir, and one
trial through a real :class:`~evalnoise.runner.environment.EnvironmentBackend`.

Every task made by :func:`make_env_task` has the same ``environment/`` folder, so they share
one task image (built once, then a cache hit); what differs is ``tests/`` and ``solution/``,
which are copied in at run time.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

from runner_helpers import AGENTS

EXEC_SCRIPT_AGENT = AGENTS / "exec_script" / "agent.py"
SHARED_DOCKERFILE = "ARG BASE\nFROM ${BASE}\nWORKDIR /app\n"


def make_env_task(
    root: Path,
    name: str,
    *,
    test_sh: str,
    solve_sh: str | None = None,
    agent_timeout: float = 20.0,
    verifier_timeout: float = 20.0,
    memory_mb: int = 128,
    cpus: float = 1.0,
    dockerfile: str = SHARED_DOCKERFILE,
    extra_toml: str = "",
    environment_toml: str = "",
) -> Path:
    """A task folder ``root/name``; ``extra_toml`` is appended (whole sections), and
    ``environment_toml`` lines go into ``[environment]``."""
    folder = root / name
    (folder / "environment").mkdir(parents=True)
    (folder / "tests").mkdir()
    (folder / "task.toml").write_text(
        textwrap.dedent(
            f"""\
            schema_version = "1.4"

            [task]
            name = "test/{name}"

            [agent]
            timeout_sec = {agent_timeout}

            [verifier]
            timeout_sec = {verifier_timeout}
            environment_mode = "shared"

            [environment]
            cpus = {cpus}
            memory_mb = {memory_mb}
            network_mode = "no-network"
            build_timeout_sec = 120.0
            """
        )
        + environment_toml
        + "\n"
        + extra_toml
    )
    (folder / "instruction.md").write_text(f"Instruction of {name}.\n")
    (folder / "environment" / "Dockerfile").write_text(dockerfile)
    (folder / "tests" / "test.sh").write_text("#!/bin/bash\n" + textwrap.dedent(test_sh))
    if solve_sh is not None:
        (folder / "solution").mkdir()
        (folder / "solution" / "solve.sh").write_text("#!/bin/bash\n" + textwrap.dedent(solve_sh))
    return folder


def env_request(
    folder: Path,
    agent: str | dict = "oracle",
    resource_profile: str = "3x",
    *,
    shard_id: str = "envtest",
    trial: int = 0,
    secrets: dict | None = None,
):
    """The :class:`TrialRequest` the shard would make for ``folder``'s task."""
    from evalnoise.runner import agent_spec, trial_seed
    from evalnoise.runner import resource_profile as make_profile
    from evalnoise.runner.trial import TrialRequest
    from evalnoise.tasks.harbor_folders import environment_task_rows, load_harbor_task

    (row,) = environment_task_rows([load_harbor_task(folder, public_network="offline")])
    spec = agent_spec(agent if isinstance(agent, dict) else {"name": agent})
    return TrialRequest(
        agent=spec,
        task=row,
        resource_profile=make_profile(resource_profile),
        trial=trial,
        attempt=1,
        seed=trial_seed(0, spec.name, row["task_id"], trial),
        shard_id=shard_id,
        secrets=secrets or {},
    )


def env_trial(backend, folder: Path, agent: str | dict = "oracle", resource_profile="3x", **kw):
    """One environment trial of ``folder`` through ``backend``."""
    return backend.run_trial(env_request(folder, agent, resource_profile, **kw))


def scripted_agent(steps: list[dict], name: str = "scripted") -> dict:
    """An external agent spec running tests/runner/agents/exec_script with ``steps``."""
    import json

    return {
        "name": name,
        "command": [sys.executable, str(EXEC_SCRIPT_AGENT)],
        "env": {"EXEC_SCRIPT": json.dumps(steps)},
    }


class MadeImages:
    """The task images a test module's trials made, removed when the module is done (the
    tags of its own tasks only: a tag another module's task shares is not touched)."""

    def __init__(self) -> None:
        self.tags: set[str] = set()

    def trial(self, backend, folder: Path, agent: str | dict = "oracle", **kw):
        """:func:`env_trial`, the trial's image remembered."""
        row = env_trial(backend, folder, agent, **kw)
        if row.get("image"):
            self.tags.add(row["image"])
        return row

    def remove(self, client) -> None:
        import docker.errors

        for tag in sorted(self.tags):
            try:
                client.images.remove(tag)
            except docker.errors.APIError:
                pass  # in use by a container of another test: its own cleanup removes that
