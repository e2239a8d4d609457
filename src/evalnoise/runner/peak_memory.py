"""A trial container's peak memory and OOM kills, read from its cgroups.

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
"""

from __future__ import annotations

import contextlib
import glob
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = [
    "CGROUP_PARENT",
    "CGROUP_ROOT",
    "PEAK_SOURCES",
    "SAMPLED_OOM_FRACTION",
    "SAMPLE_INTERVAL_S",
    "ContainerCgroupReader",
    "ParentCgroups",
    "Sampler",
    "StatsSampler",
    "cgroup_version",
    "choose_peak_source",
    "container_memory_dir",
    "cpu_weight",
    "killed_at_memory_limit",
    "memory_hierarchy",
    "oom_kill_count",
    "peak_from_stats",
    "process_cgroup",
    "read_current",
    "read_oom_kills",
    "read_peak",
    "read_usage",
]

CGROUP_ROOT = Path("/sys/fs/cgroup")
#: the parent cgroup under which each trial's own parent is made
CGROUP_PARENT = "evalnoise"
#: Seconds between two reads of a cgroup's memory when no peak file can be read afterwards.
SAMPLE_INTERVAL_S = 0.02
#: A sampled peak misses the last burst before an OOM kill: this share of the hard limit
#: counts as "at the limit" for :func:`killed_at_memory_limit` (exact peaks need 100 %).
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


def killed_at_memory_limit(
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
    of it. A kill at the trial's deadline is the runner's own: its caller counts it a timeout
    and never asks this.
    """
    if exit_code != 137:
        return False
    if oom_kills:
        return True
    if peak is None or limit is None:
        return False
    return peak >= (limit if exact else SAMPLED_OOM_FRACTION * limit)


class ParentCgroups:
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


class Sampler:
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

    def start(self) -> Sampler:
        self._thread.start()
        return self

    def stop(self, timeout: float = 1.0) -> int | None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout)
        with self._lock:
            return self.peak


class ContainerCgroupReader:
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


class StatsSampler(Sampler):
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
