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

**Peak memory**, on cgroup v1, v2 and hybrid hosts alike. The engine destroys a container's
cgroup as soon as it exits (before the engine answers a wait), so its own cgroup files
cannot be read afterwards. The sources, best first (:func:`choose_peak_source`):

- ``parent`` — a local engine with the ``cgroupfs`` driver: each trial's container is placed
  under its own parent cgroup ``/evalnoise/<shard>.<trial-uid>`` that outlives the container;
  the parent's high-water mark (hierarchical, so it is the container's) is read after the
  exit: ``memory.max_usage_in_bytes`` on v1, ``memory.peak`` on v2 (Linux ≥ 5.19). The
  parent's CPU weight (``cpu.shares`` v1, ``cpu.weight`` v2) is set to the container's, so CPU
  weights between concurrent trials are the same as without the extra level. The parent is
  removed after the trial. On v2 the parent's ``memory.events`` also counts OOM kills.
- ``parent-sampled`` — the same parent on a v2 kernel without ``memory.peak``: its
  ``memory.current`` is sampled every :data:`SAMPLE_INTERVAL_S` while the container runs.
- ``container-sampled`` — a local engine whose parent cgroups are unusable (``systemd``
  driver, no write access): the container's own cgroup, found from ``/proc/<pid>/cgroup`` of
  its init, is sampled while it runs (its peak file when it has one, else its current usage).
- ``engine-stats`` — a remote engine: the engine's stats stream (about one sample a second).

Sampled peaks are lower bounds: a short burst between two samples is missed. The cgroup
version is read from :data:`CGROUP_ROOT` (:func:`cgroup_version`); the file readers are
functions of a cgroup directory so they are tested on directories laid out like each version.

Every container carries the labels ``evalnoise.shard=<id>`` (and task/trial/attempt), so
:meth:`DockerBackend.cleanup` can remove what a killed run left behind.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Mapping
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
CGROUP_ROOT = Path("/sys/fs/cgroup")
CGROUP_PARENT = "evalnoise"
#: Bound on the container's json-file log (disk, and what the runner reads back).
LOG_MAX_SIZE = "1m"
#: Seconds to wait for a killed container to report its exit.
KILL_GRACE_S = 30.0
#: Seconds between two reads of a cgroup's memory when no peak file can be read afterwards.
SAMPLE_INTERVAL_S = 0.02
#: A sampled peak misses the last burst before an OOM kill: this share of the hard limit
#: counts as "at the limit" for :func:`_killed_at_memory_limit` (exact peaks need 100 %).
SAMPLED_OOM_FRACTION = 0.9
PEAK_SOURCES = ("parent", "parent-sampled", "container-sampled", "engine-stats")

# Memory files of one cgroup directory (Documentation/admin-guide/cgroup-v2.rst and
# Documentation/admin-guide/cgroup-v1/memory.rst of the Linux kernel).
V2_PEAK, V2_CURRENT, V2_EVENTS = "memory.peak", "memory.current", "memory.events"
V1_PEAK, V1_CURRENT = "memory.max_usage_in_bytes", "memory.usage_in_bytes"


# -- cgroup files: small functions of a directory ------------------------------------------


def cgroup_version(root: Path = CGROUP_ROOT) -> int | None:
    """2 when ``root`` is a unified (v2-only) mount, 1 when memory is on a v1 hierarchy.

    A v2 mount has ``cgroup.controllers`` at its root. Hybrid hosts (v1 controllers under
    ``root/<controller>``, a v2 mount at ``root/unified`` with no controllers) count as 1:
    the memory controller, the one measured here, is v1 there. None: no memory controller.
    """
    if (root / "cgroup.controllers").is_file():
        return 2
    if (root / "memory" / V1_CURRENT).is_file():
        return 1
    return None


def memory_hierarchy(root: Path, version: int) -> Path:
    """The directory whose subtree holds the memory controller's cgroups."""
    return root if version == 2 else root / "memory"


def _read_int(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def read_peak(cgroup_dir: Path) -> int | None:
    """The cgroup's memory high-water mark in bytes, or None if it keeps none.

    ``memory.peak`` (v2, Linux ≥ 5.19) or ``memory.max_usage_in_bytes`` (v1); both count the
    cgroup and its descendants.
    """
    for name in (V2_PEAK, V1_PEAK):
        value = _read_int(cgroup_dir / name)
        if value is not None:
            return value
    return None


def read_current(cgroup_dir: Path) -> int | None:
    """The cgroup's memory usage now: ``memory.current`` (v2) or ``memory.usage_in_bytes`` (v1)."""
    for name in (V2_CURRENT, V1_CURRENT):
        value = _read_int(cgroup_dir / name)
        if value is not None:
            return value
    return None


def read_usage(cgroup_dir: Path) -> int | None:
    """What a sampler should read: the peak file when there is one, else current usage."""
    peak = read_peak(cgroup_dir)
    return peak if peak is not None else read_current(cgroup_dir)


def read_oom_kills(cgroup_dir: Path) -> int | None:
    """OOM kills in the cgroup and its descendants (v2 ``memory.events``), else None.

    v1 has no hierarchical count (its ``memory.oom_control`` counts the cgroup itself only).
    """
    return oom_kill_count(cgroup_dir / V2_EVENTS)


def oom_kill_count(path: Path) -> int | None:
    """The ``oom_kill N`` line of a cgroup memory file (v2 ``memory.events``, v1
    ``memory.oom_control``), None when the file or the line is missing."""
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        key, _, value = line.partition(" ")
        if key == "oom_kill" and value.strip().isdigit():
            return int(value)
    return None


def process_cgroup(proc_cgroup: str, version: int) -> str | None:
    """A process's memory cgroup path from the text of ``/proc/<pid>/cgroup``.

    Lines are ``hierarchy-id:controllers:path`` (proc(5)): v2 is the ``0::path`` line, v1 the
    line whose controller list holds ``memory``.
    """
    for line in proc_cgroup.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        if version == 2 and parts[0] == "0" and controllers == "":
            return path
        if version == 1 and "memory" in controllers.split(","):
            return path
    return None


def container_memory_dir(
    pid: int, root: Path, version: int, proc: Path = Path("/proc")
) -> Path | None:
    """The memory cgroup directory of process ``pid`` (a container's init), or None."""
    if pid <= 0:
        return None
    try:
        text = (proc / str(pid) / "cgroup").read_text()
    except OSError:
        return None
    path = process_cgroup(text, version)
    return None if path is None else memory_hierarchy(root, version) / path.lstrip("/")


def peak_from_stats(stats: dict[str, Any]) -> int | None:
    """Memory usage in one sample of the engine's stats stream (``max_usage`` on v1)."""
    memory = stats.get("memory_stats") or {}
    values = [memory.get(k) for k in ("max_usage", "usage")]
    values = [int(v) for v in values if isinstance(v, int | float)]
    return max(values) if values else None


def cpu_weight(cpu_shares: int) -> int:
    """cgroup v2 ``cpu.weight`` for v1 ``cpu.shares``, as runc converts them
    (libcontainer/cgroups ``ConvertCPUSharesToCgroupV2Value``: 1024 → 39, 2 → 1)."""
    return 1 + ((max(2, cpu_shares) - 2) * 9999) // 262142


def choose_peak_source(
    *,
    local: bool,
    driver: str | None,
    host_version: int | None,
    engine_version: str | None,
    parents_usable: bool,
    parent_keeps_peak: bool,
) -> str:
    """Where the peak memory of each trial comes from (one of :data:`PEAK_SOURCES`).

    The host's cgroup files describe the engine's containers only when the engine is local
    and reports the same cgroup version as ``/sys/fs/cgroup`` shows.
    """
    if not local:
        return "engine-stats"
    if host_version is None or str(host_version) != str(engine_version or "1"):
        return "engine-stats"
    if driver == "cgroupfs" and parents_usable:
        return "parent" if parent_keeps_peak else "parent-sampled"
    return "container-sampled"


def _killed_at_memory_limit(
    exit_code: int | None,
    peak: int | None,
    limit: int | None,
    *,
    exact: bool = True,
    oom_kills: int | None = None,
) -> bool:
    """A SIGKILLed container (exit 137) that the kernel's OOM killer killed.

    Docker sets ``State.OOMKilled`` from an OOM event that can reach it after the exit
    event, leaving the flag false; the cgroup does not race. Evidence, best first: the
    parent cgroup counted an OOM kill (v2 ``memory.events``); or the memory high-water mark
    reached the hard limit — an exact peak (v1 ``memory.max_usage_in_bytes``, v2
    ``memory.peak``) all of it, a sampled one (``exact=False``) :data:`SAMPLED_OOM_FRACTION`
    of it. The runner's own kill (timeout) is handled before this check.
    """
    if exit_code != 137:
        return False
    if oom_kills:
        return True
    if peak is None or limit is None:
        return False
    return peak >= (limit if exact else SAMPLED_OOM_FRACTION * limit)


class _ParentCgroups:
    """Per-trial parent cgroups that keep a container's memory high-water mark readable.

    v1: one directory per controller hierarchy (``<root>/<controller>/evalnoise/<name>``);
    the runner creates the ``cpu`` one (to set ``cpu.shares``), runc the others. v2: one
    directory ``<root>/evalnoise/<name>`` in which the runner enables the memory and cpu
    controllers (``cgroup.subtree_control`` of each ancestor) so that ``memory.peak`` and
    ``cpu.weight`` exist before the container starts.
    """

    def __init__(self, root: Path = CGROUP_ROOT, version: int = 1) -> None:
        self.root, self.version = root, version

    def _controllers(self) -> list[str]:
        try:
            available = (self.root / "cgroup.controllers").read_text().split()
        except OSError:
            return []
        return [c for c in ("cpu", "memory") if c in available]

    def _enable_v2(self) -> None:
        """Delegate cpu and memory to the children of the root and of ``evalnoise``."""
        wanted = " ".join(f"+{c}" for c in self._controllers())
        top = self.root / CGROUP_PARENT
        top.mkdir(exist_ok=True)
        for directory in (self.root, top):
            (directory / "cgroup.subtree_control").write_text(wanted)

    def usable(self) -> bool:
        if self.version == 1:
            return (
                (self.root / "memory").is_dir()
                and (self.root / "cpu").is_dir()
                and os.access(self.root / "cpu", os.W_OK)
            )
        if "memory" not in self._controllers():
            return False
        try:  # fails in a cgroup namespace whose root holds processes (EBUSY)
            self._enable_v2()
        except OSError:
            return False
        return True

    def keeps_peak(self) -> bool:
        """Whether a parent has a peak file (v2 kernels before 5.19 have no memory.peak)."""
        if self.version == 1:
            return True
        return (self.root / CGROUP_PARENT / V2_PEAK).is_file()

    def prepare(self, name: str, cpu_shares: int | None) -> str:
        """Create the parent ``name``; return it as the container's ``cgroup_parent``."""
        if self.version == 1:
            cpu_dir = self.root / "cpu" / CGROUP_PARENT / name
            cpu_dir.mkdir(parents=True, exist_ok=True)
            if cpu_shares is not None:
                (cpu_dir / "cpu.shares").write_text(str(cpu_shares))
        else:
            self._enable_v2()
            parent = self.root / CGROUP_PARENT / name
            parent.mkdir(exist_ok=True)
            if cpu_shares is not None and "cpu" in self._controllers():
                (parent / "cpu.weight").write_text(str(cpu_weight(cpu_shares)))
        return f"/{CGROUP_PARENT}/{name}"

    def memory_dir(self, name: str) -> Path:
        return memory_hierarchy(self.root, self.version) / CGROUP_PARENT / name

    def peak(self, name: str) -> int | None:
        return read_peak(self.memory_dir(name))

    def _pattern(self, name: str) -> str:
        levels = ("*", CGROUP_PARENT) if self.version == 1 else (CGROUP_PARENT,)
        return str(self.root.joinpath(*levels, name))

    def release(self, name: str, attempts: int = 5) -> bool:
        pending = glob.glob(self._pattern(name))
        for _ in range(attempts):
            left = []
            for path in pending:
                try:
                    os.rmdir(path)
                except FileNotFoundError:
                    pass
                except OSError:
                    left.append(path)
            if not left:
                return True
            pending = left
            time.sleep(0.02)
        return False

    def cleanup(self, prefix: str) -> int:
        names = {Path(p).name for p in glob.glob(self._pattern(f"{prefix}.*"))}
        return sum(self.release(name, attempts=1) for name in names)


class _Sampler:
    """Reads a memory figure again and again in a thread while a container runs; keeps the max.

    ``read`` returns bytes or None (nothing to read yet, or any more). :meth:`stop` ends the
    thread and returns the largest value seen (None if none).
    """

    def __init__(self, read: Callable[[], int | None], interval: float = SAMPLE_INTERVAL_S):
        self._read, self._interval = read, interval
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self.peak: int | None = None
        self._thread = threading.Thread(target=self._run, name="evalnoise-peak", daemon=True)

    def _record(self, value: int | None) -> None:
        if value is not None:
            with self._lock:
                self.peak = value if self.peak is None else max(self.peak, value)

    def _run(self) -> None:
        while True:
            with contextlib.suppress(Exception):  # a reader's failure loses samples, not the trial
                self._record(self._read())
            if self._stop.wait(self._interval):
                return

    def start(self) -> _Sampler:
        self._thread.start()
        return self

    def stop(self, timeout: float = 1.0) -> int | None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout)
        with self._lock:
            return self.peak


class _ContainerCgroupReader:
    """Reads a running container's own cgroup, looked up once from its init's pid.

    If the lookup fails (the container already exited) it is not repeated: every further
    read is None.
    """

    def __init__(
        self, pid: Callable[[], int], root: Path, version: int, proc: Path = Path("/proc")
    ) -> None:
        self._pid, self._root, self._version, self._proc = pid, root, version, proc
        self._looked_up = False
        self._dir: Path | None = None

    def __call__(self) -> int | None:
        if not self._looked_up:
            self._looked_up = True
            self._dir = container_memory_dir(self._pid(), self._root, self._version, self._proc)
        return None if self._dir is None else read_usage(self._dir)


class _StatsSampler(_Sampler):
    """Follows the engine's stats stream (the engine samples about once a second).

    The stream ends when the container is removed; :meth:`stop` does not wait for that.
    """

    def __init__(self, api: Any, container_id: str) -> None:
        super().__init__(lambda: None)
        self._api, self._container_id = api, container_id

    def _run(self) -> None:
        with contextlib.suppress(Exception):  # the engine closing the stream ends it
            for stats in self._api.stats(self._container_id, decode=True, stream=True):
                self._record(peak_from_stats(stats))
                if self._stop.is_set():
                    return

    def stop(self, timeout: float = 0.0) -> int | None:
        # the stream blocks until the engine's next sample (one a second): do not wait for it
        return super().stop(timeout)


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
        self._parents: _ParentCgroups | None = None
        #: where peak memory comes from (one of PEAK_SOURCES), None when not measured
        self.peak_source: str | None = None
        if measure_peak:
            self.peak_source = self._choose_peak_source(local_engine, peak_source)

    def _choose_peak_source(self, local_engine: bool, forced: str | None) -> str:
        version = self.host_cgroup_version
        parents = _ParentCgroups(CGROUP_ROOT, version) if version is not None else None
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

    def _start_sampler(self, container_id: str, cgroup_name: str | None) -> _Sampler | None:
        """Start sampling a just-started container's memory, if the source is a sampled one."""
        if self.peak_source == "parent-sampled":
            directory = self._parents.memory_dir(cgroup_name)
            return _Sampler(lambda: read_current(directory)).start()
        if self.peak_source == "container-sampled":
            api = self.client.api

            def pid() -> int:
                return int(api.inspect_container(container_id)["State"].get("Pid") or 0)

            reader = _ContainerCgroupReader(pid, CGROUP_ROOT, self.host_cgroup_version)
            return _Sampler(reader).start()
        if self.peak_source == "engine-stats":
            return _StatsSampler(self.client.api, container_id).start()
        return None

    def _measured_peak(
        self, sampler: _Sampler | None, cgroup_name: str | None
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
        sampler: _Sampler | None = None
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
            timed_out = False
            try:
                api.wait(container_id, timeout=allocation.time_limit_s)
            except requests.exceptions.RequestException:
                if time.monotonic() - t0 < allocation.time_limit_s * 0.99:
                    raise  # not our deadline: the engine went away
                try:
                    api.kill(container_id)
                    timed_out = True
                except docker.errors.APIError:
                    pass  # it exited on its own just as the deadline passed
                api.wait(container_id, timeout=KILL_GRACE_S)
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
    if _killed_at_memory_limit(
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
