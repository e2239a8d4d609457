"""A task's extra services (``environment/docker-compose.yaml``), run by the real ``docker
compose`` around an environment trial.

Harbor runs a task as a compose project: its own base file defines the service ``main`` (the
task's image; the agent works in it), and the task's ``environment/docker-compose.yaml`` is
added last, so it can add services (a database, an API the agent must query) and override
``main``'s scalars. Here ``main`` stays the runner's container — created by
:mod:`evalnoise.runner.environment` with the resource profile, the sandbox and the trial's
mounts — and compose runs the *other* services:

1. The project is read as Harbor composes it: ``-f`` an overlay naming ``main``'s image, then
   the task's file (relative paths resolve from ``environment/``, the project directory), then
   an overlay that puts every service on the trial's own network (created by
   :mod:`evalnoise.runner.trial_network`; external to the project, so compose creates none)
   and labels every service container with the shard (a killed run's leftovers are found by
   the backend's ``cleanup``). ``docker compose config`` normalises it — the real
   implementation's reading, never a home-made one — and what would take a service off the
   trial's network or out of its sandbox is refused: another network, a ``network_mode``,
   ``privileged``, the host's PID or IPC namespace, published ports.
2. ``docker compose up --detach --wait --no-deps`` starts every service but ``main`` before the
   agent phase, builds what declares ``build`` (never pulls), and waits until each runs and,
   with a healthcheck, is healthy. A service that fails to start or to become healthy makes
   the trial ``infra_error`` (phase ``setup``) naming the service and its state
   (:class:`ServicesFailed`).
3. ``main`` joins the same network with the alias ``main``, so services and agent reach each
   other by name. The resource profile applies to ``main`` only; the other services get what
   the file declares. ``main``'s ``environment`` in the task's file is applied (under the
   task's ``[environment].env``), its ``depends_on`` holds (the services start first), its
   ``command``/``entrypoint`` give way to the runner's idle main process as Harbor's do to its
   ``sleep infinity``; any other key it sets there (volumes, devices, ``cap_add``…) is not
   applied, and the trial row's ``error`` names it (:attr:`ComposeProject.main_ignored`).
4. ``docker compose down --volumes --remove-orphans --timeout 0`` removes them with the trial.

Harbor's environment variables for its compose files are set (``MAIN_IMAGE_NAME``,
``CONTEXT_DIR``, ``CPUS``, ``MEMORY``) plus the task's resolved ``[environment].env``, as
Harbor's ``DockerEnvironment`` passes them. The compose command is the ``docker compose`` v2
plugin when the Docker CLI has it, else ``$EVALNOISE_COMPOSE`` (a ``docker-compose`` v2
binary), else the plugin ``tools/install-harbor.sh`` installs, run standalone
(:func:`compose_command`).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalnoise.runner.docker_backend import SHARD_LABEL
from evalnoise.runner.engine import one_line

__all__ = [
    "COMPOSE_ENV",
    "MAIN_SERVICE",
    "ComposeProject",
    "ServicesFailed",
    "compose_command",
    "project_name",
    "start_services",
    "stop_services",
]

#: names a ``docker-compose`` v2 binary to use when the Docker CLI has no compose plugin
COMPOSE_ENV = "EVALNOISE_COMPOSE"
#: Harbor's name of the service the agent works in
MAIN_SERVICE = "main"
#: how long ``up --wait`` waits for the services to run (and be healthy), in seconds
WAIT_TIMEOUT_S = 120
_COMMAND_TIMEOUT_S = 600
#: keys of ``main`` in the normalised project that the runner's own container honours or
#: that need nothing: its image (the task's), its environment (applied), its order after
#: the services (they start first), its network (the trial's) and compose's bookkeeping
_MAIN_TAKEN = {
    "image",
    "build",
    "environment",
    "depends_on",
    "networks",
    "expose",
    "command",
    "entrypoint",
    "pull_policy",
    "container_name",
    "labels",
}


class ServicesFailed(RuntimeError):
    """The task's services could not start (or be read); the message names the service."""


def compose_command() -> list[str] | None:
    """The compose command (module docstring): ``["docker", "compose"]``, the binary of
    ``$EVALNOISE_COMPOSE``, ``tools/install-harbor.sh``'s plugin, or ``docker-compose`` on
    PATH; None when there is none."""
    docker = shutil.which("docker")
    if docker is not None:
        probe = subprocess.run(
            [docker, "compose", "version"], capture_output=True, text=True, check=False
        )
        if probe.returncode == 0:
            return [docker, "compose"]
    from evalnoise.user_cache import cache_dir

    candidates = [
        os.environ.get(COMPOSE_ENV),
        str(cache_dir() / "harbor" / "docker" / "cli-plugins" / "docker-compose"),
        shutil.which("docker-compose"),
    ]
    for candidate in candidates:
        if candidate and os.access(candidate, os.X_OK):
            return [candidate]
    return None


@dataclass(frozen=True)
class ComposeProject:
    """One trial's compose project: its name, the ``-f`` files in order, its directory (the
    task's ``environment/``), the environment compose runs in, and the services started."""

    name: str
    files: tuple[Path, ...]
    directory: Path
    env: Mapping[str, str]
    services: tuple[str, ...] = ()
    command: tuple[str, ...] = ()
    #: the trial's folder holding the overlay files; removed with the project
    scratch: Path | None = None
    #: ``main``'s ``environment`` as the task's file declares it (applied under the task's
    #: ``[environment].env``)
    main_env: Mapping[str, str] = field(default_factory=dict)
    #: ``main``'s other keys in the task's file that the runner's container does not take
    main_ignored: tuple[str, ...] = ()

    def run(self, *args: str, timeout: float = _COMMAND_TIMEOUT_S) -> subprocess.CompletedProcess:
        """``compose -p NAME --project-directory DIR -f … ARGS`` (output captured)."""
        argv = [*self.command, "--project-name", self.name, "--project-directory"]
        argv.append(str(self.directory))
        for path in self.files:
            argv += ["-f", str(path)]
        return subprocess.run(
            [*argv, *args],
            capture_output=True,
            text=True,
            env=dict(self.env),
            timeout=timeout,
            check=False,
        )


def _harbor_env(
    image: str, directory: Path, cpus: float, memory_mb: int, task_env: Mapping[str, str]
) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        MAIN_IMAGE_NAME=image,
        CONTEXT_DIR=str(directory),
        CPUS=f"{cpus:g}",
        MEMORY=f"{memory_mb}M",
        # the classic builder: compose builds with the engine alone, no buildx needed
        DOCKER_BUILDKIT=env.get("DOCKER_BUILDKIT", "0"),
        COMPOSE_DOCKER_CLI_BUILD=env.get("COMPOSE_DOCKER_CLI_BUILD", "0"),
    )
    env.update(task_env)
    return env


def _refusals(model: Mapping[str, Any]) -> list[str]:
    """What the normalised project asks that would leave the trial's network or sandbox."""
    found = []
    for name in sorted(model.get("networks") or {}):
        if name != "default":
            found.append(f"network {name!r} (services run on the trial's network only)")
    for name, service in sorted((model.get("services") or {}).items()):
        if name == MAIN_SERVICE:
            continue
        if service.get("network_mode"):
            found.append(f"service {name!r}: network_mode {service['network_mode']!r}")
        if service.get("privileged"):
            found.append(f"service {name!r}: privileged")
        for key in ("pid", "ipc"):
            if service.get(key) == "host":
                found.append(f"service {name!r}: {key}: host")
        if service.get("ports"):
            found.append(f"service {name!r}: published ports")
    return found


def _failed_services(project: ComposeProject) -> str:
    """The services that are not running (or not healthy), as ``name (state)``."""
    listed = project.run("ps", "--all", "--format", "json", timeout=60)
    text = listed.stdout.strip()
    entries: list[dict[str, Any]] = []
    if text.startswith("["):
        entries = json.loads(text)
    else:
        entries = [json.loads(line) for line in text.splitlines() if line.strip()]
    bad = []
    seen = set()
    for entry in entries:
        service = entry.get("Service")
        seen.add(service)
        state, health = entry.get("State", ""), entry.get("Health", "")
        if state != "running" or health not in ("", "healthy"):
            code = entry.get("ExitCode")
            detail = state + (f", {health}" if health else "")
            detail += f", exit code {code}" if state == "exited" and code is not None else ""
            bad.append(f"{service} ({detail})")
    bad += [f"{s} (not created)" for s in project.services if s not in seen]
    return ", ".join(bad)


def project_name(name: str) -> str:
    """``name`` as a compose project name: lower case, ``[a-z0-9_-]``, starting alphanumeric
    (Harbor's ``_sanitize_docker_compose_project_name``)."""
    name = re.sub(r"[^a-z0-9_-]", "-", name.lower())
    return name if re.match(r"[a-z0-9]", name) else "0" + name


def start_services(
    *,
    compose_file: Path,
    image: str,
    network: str,
    shard_id: str,
    project_name: str,
    scratch: Path,
    cpus: float,
    memory_mb: int,
    task_env: Mapping[str, str],
    command: Sequence[str] | None = None,
) -> ComposeProject:
    """Start the task's services but ``main`` on ``network`` (module docstring) and return
    the project; raises :class:`ServicesFailed` naming what failed (the services already
    started are removed first)."""
    command = list(command) if command is not None else compose_command()
    if command is None:
        raise ServicesFailed(
            "the task has extra services, and no docker compose v2 is installed (the Docker "
            f"CLI's plugin, ${COMPOSE_ENV}, or tools/install-harbor.sh's)"
        )
    directory = compose_file.parent
    base = scratch / "compose-main.json"
    base.write_text(json.dumps({"services": {MAIN_SERVICE: {"image": image}}}))
    env = _harbor_env(image, directory, cpus, memory_mb, task_env)
    project = ComposeProject(
        project_name, (base, compose_file), directory, env, command=tuple(command)
    )
    read = project.run("config", "--format", "json", timeout=120)
    if read.returncode != 0:
        raise ServicesFailed(f"docker compose cannot read the task's file: {one_line(read.stderr)}")
    model = json.loads(read.stdout)
    refused = _refusals(model)
    if refused:
        raise ServicesFailed("the task's compose file asks for " + "; ".join(refused))
    services = tuple(sorted(s for s in model.get("services") or {} if s != MAIN_SERVICE))
    main = (model.get("services") or {}).get(MAIN_SERVICE) or {}
    main_env = {
        str(k): "" if v is None else str(v) for k, v in (main.get("environment") or {}).items()
    }
    main_ignored = tuple(sorted(set(main) - _MAIN_TAKEN))
    overlay = scratch / "compose-trial.json"
    overlay.write_text(
        json.dumps(
            {
                "services": {s: {"labels": {SHARD_LABEL: shard_id}} for s in services},
                "networks": {"default": {"name": network, "external": True}},
            }
        )
    )
    project = ComposeProject(
        project_name,
        (base, compose_file, overlay),
        directory,
        env,
        services,
        tuple(command),
        scratch,
        main_env,
        main_ignored,
    )
    if not services:
        return project
    up = project.run(
        "up",
        "--detach",
        "--wait",
        "--wait-timeout",
        str(WAIT_TIMEOUT_S),
        "--no-deps",
        "--pull",
        "never",
        *services,
        timeout=_COMMAND_TIMEOUT_S,
    )
    if up.returncode != 0:
        failed = _failed_services(project) or "unknown"
        note = stop_services(project)  # also removes the scratch folder
        message = f"the task's service(s) failed to start or become healthy: {failed}"
        tail = one_line(up.stderr or up.stdout, 300)
        raise ServicesFailed("; ".join(p for p in (message, f"compose: {tail}", note) if p))
    return project


def stop_services(project: ComposeProject | None) -> str | None:
    """Remove the project's containers and volumes; None when done, else the note for the
    trial row's ``error``. Never raises."""
    if project is None:
        return None
    note = None
    if project.services:
        try:
            down = project.run(
                "down",
                "--volumes",
                "--remove-orphans",
                "--timeout",
                "0",
                timeout=_COMMAND_TIMEOUT_S,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            note = f"services not removed: {one_line(exc, 200)}"
        else:
            if down.returncode != 0:
                note = f"services not removed: {one_line(down.stderr, 200)}"
    if project.scratch is not None:
        shutil.rmtree(project.scratch, ignore_errors=True)
    return note
