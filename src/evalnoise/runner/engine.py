"""The Docker engine a backend talks to: connected once, with what the backends read of it.

:func:`connect_engine` is the one place a backend (:class:`~evalnoise.runner.docker_backend.
DockerBackend` for question trials, :class:`~evalnoise.runner.environment.EnvironmentBackend`
for environment trials) gets its client: it pings the engine (``info``) and turns any
failure into :class:`~evalnoise.errors.EngineUnavailable`, so a run that cannot reach the
engine stops before its first trial instead of recording each as an infra error.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from evalnoise.errors import EngineUnavailable

__all__ = [
    "Engine",
    "connect_engine",
    "container_network",
    "join_notes",
    "main_process_alive",
    "one_line",
    "ping_engine",
    "remove_trial_container",
]


def one_line(text: Any, limit: int = 500) -> str:
    """``text`` on one line (whitespace runs collapsed), cut to ``limit`` characters with
    "…": how the backends put an engine's or a process's message into a trial row."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def join_notes(*notes: str | None) -> str | None:
    """The notes that are given, joined with "; " into a trial row's ``error`` (None when
    there is none)."""
    return "; ".join(n for n in notes if n) or None


def container_network(mode: str) -> dict[str, Any]:
    """``create_container``'s network argument for a trial container whose host config says
    ``network_mode=mode``: what both backends pass.

    ``"none"`` adds ``network_disabled=True``. The container still gets a network namespace of
    its own holding only a working loopback (runc brings ``lo`` up; the tests of both
    backends check both, and that the host's 127.0.0.1 stays out of reach). Why: with it the
    engine adds no libnetwork prestart hook, which re-executes ``dockerd``
    (``libnetwork-setkey``) for every container started, so a container costs less to start
    (``benchmarks/results/comment-measurements.md``). ``"host"`` shares the host's namespace
    and gets no hook either way.
    """
    return {"network_disabled": True} if mode == "none" else {}


def remove_trial_container(api: Any, container_id: str) -> str | None:
    """Remove a trial's container with its anonymous volumes (``force=True, v=True``),
    through ``api`` (``docker.APIClient``): what both backends do when a trial ends.

    ``None`` once the container is gone (removed now, or already gone); otherwise the note
    for the trial row's ``error``, ``"container not removed: …"``. Never raises: the
    trial's outcome stands, and a container left behind is found by its shard label and
    removed by the backend's ``cleanup()``."""
    import docker.errors

    try:
        api.remove_container(container_id, force=True, v=True)
    except docker.errors.NotFound:
        return None
    except Exception as exc:  # left for cleanup(); the trial's outcome stands
        return f"container not removed: {one_line(exc, 200)}"
    return None


def main_process_alive(
    api: Any, container_id: str, main_pid: int, *, settle_s: float = 0.5
) -> bool:
    """Whether a trial's container still runs its main process: ``State.Running`` and the
    same ``State.Pid`` as when it started (``main_pid``; 0: not known, the running state
    alone decides), through ``settle_s`` seconds of asking again (the engine marks a
    container whose main process the kernel just killed as exited a moment later; a live
    container stays live). After an OOM kill this is what tells a killed process of the task
    (the container lives on) from a kill that ended the container: ``State.OOMKilled`` is set
    in both cases (Docker 20.10, cgroup v1)."""
    import time

    deadline = time.monotonic() + settle_s
    while True:
        state = api.inspect_container(container_id)["State"]
        if not state.get("Running"):
            return False
        if main_pid and int(state.get("Pid") or 0) != int(main_pid):
            return False
        if time.monotonic() >= deadline:
            return True
        time.sleep(0.1)


def ping_engine(client: Any) -> None:
    """Raise :class:`EngineUnavailable` unless the engine behind ``client`` answers a ping:
    what a backend's ``check()`` asks before an infra outcome is journaled."""
    try:
        client.ping()
    except Exception as exc:  # any transport error means the same thing here
        raise EngineUnavailable(f"the Docker engine stopped answering: {one_line(exc)}") from exc


@dataclass(frozen=True)
class Engine:
    """A connected engine: its ``client`` (``docker.DockerClient``), the engine host's name,
    CPUs, cgroup version and driver as the engine reports them, and whether it is local
    (a unix socket or localhost: its cgroups and processes are this machine's)."""

    client: Any
    host: str
    host_cpus: float
    cgroup_version: str
    cgroup_driver: str | None
    local: bool


def connect_engine(client: Any = None, *, max_pool_size: int = 32) -> Engine:
    """The engine behind ``client`` (default: ``docker.from_env``, DOCKER_HOST or the local
    socket), asked for its ``info``; :class:`EngineUnavailable` if it does not answer."""
    import docker
    import docker.errors

    try:
        client = client or docker.from_env(max_pool_size=max_pool_size, timeout=120)
        info = client.info()
    except (docker.errors.DockerException, OSError) as exc:
        raise EngineUnavailable(f"the Docker engine does not answer: {one_line(exc)}") from exc
    base_url = client.api.base_url
    return Engine(
        client=client,
        host=info.get("Name") or os.uname().nodename,
        host_cpus=float(info.get("NCPU") or os.cpu_count() or 1),
        cgroup_version=str(info.get("CgroupVersion") or "1"),
        cgroup_driver=info.get("CgroupDriver"),
        local="localhost" in base_url or "unix" in base_url,
    )
