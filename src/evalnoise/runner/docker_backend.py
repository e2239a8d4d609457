"""The Docker backend: one trial = one fresh, hardened container, removed afterwards.

Per trial, through the Docker SDK: create a container from the agent's image with the
task bind-mounted read-only at ``/evalnoise/task.json`` and a writable ``/evalnoise/out``;
start it; wait until it exits or its deadline passes (then kill it); read the engine's
verdict (``State.OOMKilled``, exit code), the peak memory, stdout/stderr tails and the answer;
remove the container — in a ``finally``, so also after a timeout, a crash or an error.

Hardening by default: ``network_mode="none"`` with its own loopback only
(:func:`evalnoise.runner.engine.container_network`; ``host`` only if the agent spec asks for
it, to reach a model server on 127.0.0.1), ``cap_drop=["ALL"]``, ``no-new-privileges``, a
read-only root filesystem with a tmpfs ``/tmp``, a PID limit, user ``65534:65534``,
``init=True``, and a size-capped json-file log. Resource values come from
:mod:`evalnoise.runner.resources`.

**Peak memory** and OOM kills are read from the container's cgroups
(:mod:`evalnoise.runner.peak_memory`: the sources, best first, on cgroup v1, v2 and hybrid
hosts alike).

Every container carries the labels ``evalnoise.shard=<id>`` (and task/trial/attempt), so
:meth:`DockerBackend.cleanup` can remove what a killed run left behind.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evalnoise.runner import contract
from evalnoise.runner.engine import (
    container_network,
    join_notes,
    one_line,
    ping_engine,
    remove_trial_container,
)
from evalnoise.runner.peak_memory import (
    CGROUP_ROOT,
    PEAK_SOURCES,
    ContainerCgroupReader,
    ParentCgroups,
    Sampler,
    StatsSampler,
    cgroup_version,
    choose_peak_source,
    killed_at_memory_limit,
    read_current,
    read_oom_kills,
    read_peak,
)
from evalnoise.runner.resources import docker_resource_kwargs
from evalnoise.runner.trial import (
    EngineUnavailable,
    TrialRequest,
    finish_row,
    read_answer_file,
    record_output,
    start_row,
    task_allocation,
    utc_now,
)

NAME = "docker"
SHARD_LABEL = "evalnoise.shard"
#: Bound on the container's json-file log (disk, and what the runner reads back).
LOG_MAX_SIZE = "1m"
#: Seconds to wait for a killed container to report its exit.
KILL_GRACE_S = 30.0


class DockerBackend:
    """Runs trials in containers of a Docker engine (``docker.from_env()`` by default).

    Construction pings the engine and raises :class:`EngineUnavailable` if it does not
    answer. ``scratch_root`` holds each trial's task file and output directory (it must be
    on the engine's host; default: the system temp dir). ``measure_peak`` records each
    trial's peak memory from the best source the host offers (module docstring);
    ``peak_source`` forces one of :data:`PEAK_SOURCES` (tests do, to exercise each on one host).
    """

    name = NAME

    def __init__(
        self,
        client: Any = None,
        *,
        scratch_root: str | os.PathLike[str] | None = None,
        max_pool_size: int = 32,
        measure_peak: bool = True,
        peak_source: str | None = None,
    ) -> None:
        from evalnoise.runner.engine import connect_engine

        engine = connect_engine(client, max_pool_size=max_pool_size)
        self.client, self.host, self.host_cpus = engine.client, engine.host, engine.host_cpus
        self.cgroup_version, self.cgroup_driver = engine.cgroup_version, engine.cgroup_driver
        self.scratch_root = Path(scratch_root or tempfile.gettempdir())
        local_engine = engine.local
        #: the host's cgroup version as /sys/fs/cgroup shows it (None for a remote engine)
        self.host_cgroup_version = cgroup_version(CGROUP_ROOT) if local_engine else None
        self._parents: ParentCgroups | None = None
        #: where peak memory comes from (one of PEAK_SOURCES), None when not measured
        self.peak_source: str | None = None
        if measure_peak:
            self.peak_source = self._choose_peak_source(local_engine, peak_source)

    def _choose_peak_source(self, local_engine: bool, forced: str | None) -> str:
        version = self.host_cgroup_version
        parents = ParentCgroups(CGROUP_ROOT, version) if version is not None else None
        usable = parents is not None and self.cgroup_driver == "cgroupfs" and parents.usable()
        if forced is None:
            source = choose_peak_source(
                local=local_engine,
                driver=self.cgroup_driver,
                host_version=version,
                engine_version=self.cgroup_version,
                parents_usable=usable,
                parent_keeps_peak=usable and parents.keeps_peak(),
            )
        elif forced not in PEAK_SOURCES:
            raise ValueError(f"peak_source must be one of {PEAK_SOURCES}, not {forced!r}")
        elif (forced.startswith("parent") and not usable) or (
            forced == "container-sampled" and version is None
        ):
            raise ValueError(f"peak_source {forced!r} is not available on this host")
        else:
            source = forced
        if source.startswith("parent"):
            self._parents = parents
        return source

    # -- engine health ---------------------------------------------------------------------

    def check(self) -> None:
        """Raise :class:`EngineUnavailable` unless the engine answers a ping."""
        ping_engine(self.client)

    # -- cleanup ---------------------------------------------------------------------------

    def _shard_containers(self, shard_id: str) -> list[Any]:
        return self.client.containers.list(all=True, filters={"label": f"{SHARD_LABEL}={shard_id}"})

    def cleanup(self, shard_id: str) -> int:
        """Remove containers, scratch dirs and cgroups a killed run of ``shard_id`` left."""
        import docker.errors

        removed = 0
        for container in self._shard_containers(shard_id):
            with contextlib.suppress(docker.errors.NotFound):
                container.remove(force=True, v=True)
                removed += 1
        for path in self.scratch_root.glob(f"evalnoise-trial.{shard_id}.*"):
            shutil.rmtree(path, ignore_errors=True)
            removed += 1
        if self._parents is not None:
            removed += self._parents.cleanup(shard_id)
        return removed

    def abort(self, shard_id: str) -> None:
        """Kill and remove this shard's running containers (their waits then return)."""
        import docker.errors

        for container in self._shard_containers(shard_id):
            with contextlib.suppress(docker.errors.APIError):
                container.remove(force=True, v=True)

    # -- peak memory -----------------------------------------------------------------------

    def _start_sampler(self, container_id: str, cgroup_name: str | None) -> Sampler | None:
        """Start sampling a just-started container's memory, if the source is a sampled one."""
        if self.peak_source == "parent-sampled":
            directory = self._parents.memory_dir(cgroup_name)
            return Sampler(lambda: read_current(directory)).start()
        if self.peak_source == "container-sampled":
            api = self.client.api

            def pid() -> int:
                return int(api.inspect_container(container_id)["State"].get("Pid") or 0)

            reader = ContainerCgroupReader(pid, CGROUP_ROOT, self.host_cgroup_version)
            return Sampler(reader).start()
        if self.peak_source == "engine-stats":
            return StatsSampler(self.client.api, container_id).start()
        return None

    def _measured_peak(
        self, sampler: Sampler | None, cgroup_name: str | None
    ) -> tuple[int | None, bool, int | None]:
        """(peak bytes, whether exact, OOM kills) of a trial whose container has exited.

        Read before the parent cgroup is released (the parent outlives the container).
        """
        sampled = sampler.stop() if sampler is not None else None
        if cgroup_name is None:
            return sampled, False, None
        directory = self._parents.memory_dir(cgroup_name)
        exact = read_peak(directory) if self.peak_source == "parent" else None
        oom_kills = read_oom_kills(directory)
        return (exact, True, oom_kills) if exact is not None else (sampled, False, oom_kills)

    # -- one trial -------------------------------------------------------------------------

    def run_trial(self, request: TrialRequest) -> dict[str, Any]:
        """Run one trial in a fresh container and return its row (``trial.start_row``'s
        columns, finished by ``finish_row``: secrets scrubbed, stdout/stderr tails).

        The container gets the task file read-only, an output directory, a read-only root
        with a tmpfs scratch, no capabilities, the request's resource allocation
        (``docker_resource_kwargs``) and, with cgroup parents, a per-trial parent. The status
        is: ``infra_error`` when the image is missing or the engine fails (create, start,
        wait), ``timeout`` when the time limit killed it, ``oom_killed`` when the engine says
        so or the SIGKILL came with the peak at the hard limit (:func:`_exit_status`), else
        what the agent's output file and stdout say (``contract.parse_output``). The
        container is removed in every case; a failure to remove it is noted in ``error``."""
        import docker.errors
        import requests.exceptions

        spec, task = request.agent, request.task
        secrets = dict(request.secrets)
        allocation = task_allocation(request, self.host_cpus)
        row = start_row(request, allocation, backend=NAME, host=self.host)
        if not spec.image:
            row.update(status="infra_error", error=f"agent {spec.name!r} has no image")
            return finish_row(row, secrets)

        api = self.client.api
        uid = uuid.uuid4().hex[:12]
        container_id = None
        cgroup_name = f"{request.shard_id}.{uid}" if self._parents is not None else None
        sampler: Sampler | None = None
        workdir = Path(
            tempfile.mkdtemp(prefix=f"evalnoise-trial.{request.shard_id}.", dir=self.scratch_root)
        )
        stdout = stderr = None
        try:
            outdir = workdir / "out"
            outdir.mkdir()
            os.chmod(outdir, 0o777)  # the agent runs as an unprivileged user
            os.chmod(workdir, 0o755)
            payload = request.payload(allocation.time_limit_s)
            contract.write_task_file(workdir / "task.json", payload)
            environment = contract.agent_environment(
                payload, spec, secrets, runtime=request.runtime
            )
            environment.setdefault("HOME", contract.SCRATCH_DIR)
            host_config = _host_config(spec, allocation, workdir, outdir)
            if cgroup_name is not None:
                host_config["cgroup_parent"] = self._parents.prepare(
                    cgroup_name, allocation.cpu_shares
                )
            try:
                container_id = api.create_container(
                    image=spec.image,
                    command=list(spec.command) if spec.command else None,
                    name=f"evalnoise-{request.shard_id}-{uid}",
                    labels={
                        SHARD_LABEL: request.shard_id,
                        "evalnoise.agent": spec.name,
                        "evalnoise.task_id": str(task["task_id"]),
                        "evalnoise.trial": str(request.trial),
                        "evalnoise.attempt": str(request.attempt),
                    },
                    environment=environment,
                    user=spec.user,
                    working_dir=contract.SCRATCH_DIR,
                    host_config=api.create_host_config(**host_config),
                    **container_network(spec.network),
                )["Id"]
            except docker.errors.ImageNotFound as exc:
                row.update(status="infra_error", error=f"image not found: {one_line(exc)}")
                return finish_row(row, secrets)
            except docker.errors.APIError as exc:
                row.update(status="infra_error", error=f"create failed: {one_line(exc)}")
                return finish_row(row, secrets)
            try:
                api.start(container_id)
            except docker.errors.APIError as exc:
                row.update(status="infra_error", error=f"start failed: {one_line(exc)}")
                with contextlib.suppress(docker.errors.APIError):
                    row["image_digest"] = api.inspect_container(container_id).get("Image")
                return finish_row(row, secrets)
            t0 = time.monotonic()
            row["started_at"] = utc_now()
            sampler = self._start_sampler(container_id, cgroup_name)
            timed_out = _wait_or_kill(api, container_id, t0, allocation.time_limit_s)
            row["duration_s"] = time.monotonic() - t0
            row["ended_at"] = utc_now()
            attrs = api.inspect_container(container_id)
            state = attrs.get("State", {})
            row["image_digest"] = attrs.get("Image")
            row["exit_code"] = state.get("ExitCode")
            row["peak_memory_bytes"], exact_peak, oom_kills = self._measured_peak(
                sampler, cgroup_name
            )
            stdout = api.logs(container_id, stdout=True, stderr=False).decode("utf-8", "replace")
            stderr = api.logs(container_id, stdout=False, stderr=True).decode("utf-8", "replace")
            verdict = _exit_status(
                state,
                row["exit_code"],
                row["peak_memory_bytes"],
                allocation,
                timed_out=timed_out,
                exact_peak=exact_peak,
                oom_kills=oom_kills,
            )
            if verdict is not None:
                row.update(status=verdict[0], error=verdict[1])
            else:
                answer = read_answer_file(outdir / contract.OUTPUT_FILE, contract.MAX_ANSWER_BYTES)
                record_output(row, contract.parse_output(answer, stdout))
        except (
            docker.errors.DockerException,
            requests.exceptions.RequestException,
            OSError,
        ) as exc:
            row.update(status="infra_error", error=f"engine error: {one_line(exc)}")
        finally:
            if sampler is not None:
                sampler.stop()
            if container_id is not None:
                row["error"] = join_notes(row["error"], remove_trial_container(api, container_id))
            shutil.rmtree(workdir, ignore_errors=True)
            if cgroup_name is not None:
                self._parents.release(cgroup_name)
        return finish_row(row, secrets, stdout=stdout, stderr=stderr)


def _wait_or_kill(api: Any, container_id: str, t0: float, time_limit_s: float) -> bool:
    """Wait for the container to exit; at its deadline kill it and wait for the exit. True
    when the runner killed it (a timeout); an engine that stops answering before the
    deadline raises."""
    import docker.errors
    import requests.exceptions

    try:
        api.wait(container_id, timeout=time_limit_s)
    except requests.exceptions.RequestException:
        if time.monotonic() - t0 < time_limit_s * 0.99:
            raise  # not our deadline: the engine went away
        timed_out = False
        try:
            api.kill(container_id)
            timed_out = True
        except docker.errors.APIError:
            pass  # it exited on its own just as the deadline passed
        api.wait(container_id, timeout=KILL_GRACE_S)
        return timed_out
    return False


def check_engine() -> EngineUnavailable | None:
    """``None`` if a Docker engine answers, else the reason (for skips and messages)."""
    try:
        DockerBackend(measure_peak=False).client.close()
    except EngineUnavailable as exc:
        return exc
    return None


def _host_config(spec: Any, allocation: Any, workdir: Path, outdir: Path) -> dict[str, Any]:
    """The trial container's host config: no network unless the agent asks, no capabilities,
    no new privileges, a read-only root with a tmpfs scratch, the task file read-only and the
    output directory writable, a bounded log, and the allocation's limits."""
    from docker.types import LogConfig, Mount

    return dict(
        network_mode=spec.network,
        cap_drop=["ALL"],
        security_opt=["no-new-privileges"],
        read_only=True,
        tmpfs={contract.SCRATCH_DIR: f"rw,nosuid,nodev,size={spec.scratch_mb}m,mode=1777"},
        pids_limit=spec.pids_limit,
        init=True,
        mounts=[
            Mount(contract.TASK_PATH, str(workdir / "task.json"), type="bind", read_only=True),
            Mount(contract.OUTPUT_DIR, str(outdir), type="bind", read_only=False),
        ],
        log_config=LogConfig(type="json-file", config={"max-size": LOG_MAX_SIZE, "max-file": "1"}),
        **docker_resource_kwargs(allocation),
    )


def _exit_status(
    state: Mapping[str, Any],
    exit_code: int | None,
    peak_memory_bytes: int | None,
    allocation: Any,
    *,
    timed_out: bool,
    exact_peak: bool,
    oom_kills: int | None,
) -> tuple[str, str] | None:
    """``(status, error)`` when the container did not end on its own terms: ``timeout``
    (killed at the time limit), ``oom_killed`` (the engine's OOMKilled flag, or a SIGKILL
    with the cgroup's OOM kill count or the peak at the hard limit: the engine's flag can
    arrive after the exit event); None when its output decides."""
    if timed_out:
        return "timeout", f"killed at the {allocation.time_limit_s:g}s time limit"
    if state.get("OOMKilled"):
        return (
            "oom_killed",
            f"the engine reports OOMKilled (memory limit {allocation.memory_limit_bytes} bytes)",
        )
    if killed_at_memory_limit(
        exit_code,
        peak_memory_bytes,
        allocation.memory_limit_bytes,
        exact=exact_peak,
        oom_kills=oom_kills,
    ):
        evidence = (
            f"the cgroup counted {oom_kills} OOM kill(s)"
            if oom_kills
            else "peak memory at the hard limit"
        )
        return (
            "oom_killed",
            f"SIGKILL with {evidence} ({allocation.memory_limit_bytes} bytes); the engine's "
            "OOMKilled flag was not set (its OOM event can arrive after the exit event)",
        )
    return None
