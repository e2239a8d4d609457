"""Peak memory across cgroup versions: what differs between v1, hybrid and v2 hosts.

This host is one kind (v1 or hybrid here); the others are tested on temp directories laid
out like each version's /sys/fs/cgroup, and every source the Docker backend can choose is
also run against the real engine where this host offers it.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest
from runner_helpers import probe_agent, run_one, task_row

from evalnoise.runner import peak_memory as pm
from evalnoise.runner.resources import MIB

# -- temp layouts ---------------------------------------------------------------------------


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def v1_root(tmp: Path, *, hybrid: bool = False) -> Path:
    """/sys/fs/cgroup of a v1 host (one mount per controller); hybrid adds ``unified``."""
    root = tmp / "cgroup"
    for controller in ("cpu", "cpuacct", "pids"):
        (root / controller).mkdir(parents=True)
    write(root / "memory" / "memory.usage_in_bytes", "123\n")
    write(root / "memory" / "memory.max_usage_in_bytes", "456\n")
    if hybrid:  # a v2 mount without controllers beside the v1 ones (systemd's "hybrid")
        write(root / "unified" / "cgroup.controllers", "")
    return root


def v2_root(tmp: Path, controllers: str = "cpuset cpu io memory pids") -> Path:
    """/sys/fs/cgroup of a unified host: ``cgroup.controllers`` at the root."""
    root = tmp / "cgroup"
    write(root / "cgroup.controllers", controllers + "\n")
    write(root / "cgroup.subtree_control", "")
    return root


def v1_cgroup(directory: Path, current: int, peak: int) -> Path:
    write(directory / pm.V1_CURRENT, f"{current}\n")
    write(directory / pm.V1_PEAK, f"{peak}\n")
    return directory


def v2_cgroup(directory: Path, current: int, peak: int | None, oom_kill: int = 0) -> Path:
    """A v2 cgroup directory; ``peak=None`` lays out a kernel before 5.19 (no memory.peak)."""
    write(directory / pm.V2_CURRENT, f"{current}\n")
    if peak is not None:
        write(directory / pm.V2_PEAK, f"{peak}\n")
    write(
        directory / pm.V2_EVENTS,
        f"low 0\nhigh 0\nmax 3\noom {oom_kill}\noom_kill {oom_kill}\noom_group_kill 0\n",
    )
    return directory


# -- version detection ---------------------------------------------------------------------


def test_version_detection(tmp_path):
    assert pm.cgroup_version(v1_root(tmp_path / "a")) == 1
    assert pm.cgroup_version(v1_root(tmp_path / "b", hybrid=True)) == 1  # memory is v1 there
    assert pm.cgroup_version(v2_root(tmp_path / "c")) == 2
    assert pm.cgroup_version(tmp_path / "empty") is None


def test_memory_hierarchy_per_version(tmp_path):
    assert pm.memory_hierarchy(tmp_path, 1) == tmp_path / "memory"
    assert pm.memory_hierarchy(tmp_path, 2) == tmp_path


def test_this_host_is_detected_as_its_mounts_say():
    root = Path("/sys/fs/cgroup")
    version = pm.cgroup_version(root)
    if (root / "cgroup.controllers").exists():
        assert version == 2
    elif (root / "memory" / "memory.usage_in_bytes").exists():
        assert version == 1
    else:
        assert version is None


# -- reading one cgroup directory ----------------------------------------------------------


def test_v1_directory(tmp_path):
    d = v1_cgroup(tmp_path / "v1", current=10 * MIB, peak=42 * MIB)
    assert pm.read_peak(d) == 42 * MIB
    assert pm.read_current(d) == 10 * MIB
    assert pm.read_usage(d) == 42 * MIB  # a sampler prefers the high-water mark
    assert pm.read_oom_kills(d) is None  # v1 keeps no hierarchical count


def test_v2_directory(tmp_path):
    d = v2_cgroup(tmp_path / "v2", current=10 * MIB, peak=42 * MIB, oom_kill=2)
    assert pm.read_peak(d) == 42 * MIB
    assert pm.read_current(d) == 10 * MIB
    assert pm.read_usage(d) == 42 * MIB
    assert pm.read_oom_kills(d) == 2


def test_v2_directory_without_memory_peak(tmp_path):
    d = v2_cgroup(tmp_path / "v2old", current=10 * MIB, peak=None)
    assert pm.read_peak(d) is None
    assert pm.read_current(d) == 10 * MIB
    assert pm.read_usage(d) == 10 * MIB  # what a sampler falls back to
    assert pm.read_oom_kills(d) == 0


def test_missing_or_garbled_files_read_as_none(tmp_path):
    assert pm.read_peak(tmp_path / "gone") is None
    assert pm.read_current(tmp_path / "gone") is None
    assert pm.read_oom_kills(tmp_path / "gone") is None
    write(tmp_path / "bad" / pm.V2_PEAK, "max\n")
    assert pm.read_peak(tmp_path / "bad") is None


PROC_V1 = """\
12:memory:/docker/abc
11:pids:/docker/abc
3:cpu,cpuacct:/docker/abc
0::/
"""
PROC_V1_JOINED = "4:memory,hugetlb:/evalnoise/s.1/abc\n1:name=systemd:/x\n"
PROC_V2 = "0::/system.slice/docker-abc.scope\n"


@pytest.mark.parametrize(
    ("text", "version", "expected"),
    [
        (PROC_V1, 1, "/docker/abc"),
        (PROC_V1, 2, "/"),  # the hybrid's v2 line names the unified hierarchy
        (PROC_V1_JOINED, 1, "/evalnoise/s.1/abc"),
        (PROC_V2, 2, "/system.slice/docker-abc.scope"),
        (PROC_V2, 1, None),
        ("", 2, None),
    ],
)
def test_process_cgroup(text, version, expected):
    assert pm.process_cgroup(text, version) == expected


@pytest.mark.parametrize("version", [1, 2])
def test_container_memory_dir_from_proc(tmp_path, version):
    root = v1_root(tmp_path) if version == 1 else v2_root(tmp_path)
    proc = tmp_path / "proc"
    write(proc / "4242" / "cgroup", PROC_V1 if version == 1 else PROC_V2)
    found = pm.container_memory_dir(4242, root, version, proc=proc)
    if version == 1:
        assert found == root / "memory" / "docker" / "abc"
    else:
        assert found == root / "system.slice" / "docker-abc.scope"
    assert pm.container_memory_dir(0, root, version, proc=proc) is None  # exited: no pid
    assert pm.container_memory_dir(999, root, version, proc=proc) is None  # no such process


def test_engine_stats_samples():
    v1 = {"memory_stats": {"usage": 30 * MIB, "max_usage": 50 * MIB, "limit": 64 * MIB}}
    v2 = {"memory_stats": {"usage": 30 * MIB, "limit": 64 * MIB, "stats": {}}}
    assert pm.peak_from_stats(v1) == 50 * MIB
    assert pm.peak_from_stats(v2) == 30 * MIB
    assert pm.peak_from_stats({"memory_stats": {}}) is None  # a stopped container's sample
    assert pm.peak_from_stats({}) is None


def test_cpu_weight_matches_runc():
    assert pm.cpu_weight(1024) == 39
    assert pm.cpu_weight(2) == 1
    assert pm.cpu_weight(262144) == 10000
    assert pm.cpu_weight(512) < pm.cpu_weight(1024) < pm.cpu_weight(2048)


# -- choosing a source ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({}, "parent"),
        ({"host_version": 2, "engine_version": "2"}, "parent"),
        ({"host_version": 2, "engine_version": "2", "parent_keeps_peak": False}, "parent-sampled"),
        ({"driver": "systemd"}, "container-sampled"),
        ({"parents_usable": False}, "container-sampled"),
        ({"local": False}, "engine-stats"),
        ({"host_version": None}, "engine-stats"),
        ({"host_version": 2, "engine_version": "1"}, "engine-stats"),  # not the same cgroups
    ],
)
def test_choose_peak_source(kwargs, expected):
    base = dict(
        local=True,
        driver="cgroupfs",
        host_version=1,
        engine_version="1",
        parents_usable=True,
        parent_keeps_peak=True,
    )
    assert pm.choose_peak_source(**{**base, **kwargs}) == expected


def test_killed_at_memory_limit_with_each_source():
    limit = 64 * MIB
    # exact high-water marks (v1 memory.max_usage_in_bytes, v2 memory.peak)
    assert pm.killed_at_memory_limit(137, limit, limit)
    assert not pm.killed_at_memory_limit(137, limit - 4096, limit)
    # a sampled peak misses the last burst before the kill
    assert pm.killed_at_memory_limit(137, int(0.95 * limit), limit, exact=False)
    assert not pm.killed_at_memory_limit(137, limit // 2, limit, exact=False)
    # a v2 parent that counted an OOM kill needs no peak at all
    assert pm.killed_at_memory_limit(137, None, limit, oom_kills=1)
    assert not pm.killed_at_memory_limit(137, None, limit, oom_kills=0)
    # never without a SIGKILL
    assert not pm.killed_at_memory_limit(0, limit, limit, oom_kills=1)
    assert not pm.killed_at_memory_limit(None, limit, limit)


# -- per-trial parent cgroups on temp layouts ----------------------------------------------


def test_v1_parent(tmp_path):
    root = v1_root(tmp_path)
    parents = pm.ParentCgroups(root, 1)
    assert parents.usable() and parents.keeps_peak()
    assert parents.prepare("s.1", 512) == "/evalnoise/s.1"
    assert (root / "cpu" / "evalnoise" / "s.1" / "cpu.shares").read_text() == "512"
    # runc creates the memory level when the container starts
    v1_cgroup(root / "memory" / "evalnoise" / "s.1", current=0, peak=77 * MIB)
    assert parents.memory_dir("s.1") == root / "memory" / "evalnoise" / "s.1"
    assert parents.peak("s.1") == 77 * MIB


def test_v2_parent(tmp_path):
    root = v2_root(tmp_path)
    parents = pm.ParentCgroups(root, 2)
    assert parents.usable()
    # the controllers are delegated down to the per-trial parent
    assert (root / "cgroup.subtree_control").read_text() == "+cpu +memory"
    assert (root / "evalnoise" / "cgroup.subtree_control").read_text() == "+cpu +memory"
    assert not parents.keeps_peak()  # a directory without memory.peak: an old kernel
    write(root / "evalnoise" / pm.V2_PEAK, "0\n")  # what Linux >= 5.19 shows
    assert parents.keeps_peak()
    assert parents.prepare("s.1", 1024) == "/evalnoise/s.1"
    assert (root / "evalnoise" / "s.1" / "cpu.weight").read_text() == "39"
    v2_cgroup(root / "evalnoise" / "s.1", current=0, peak=88 * MIB)
    assert parents.memory_dir("s.1") == root / "evalnoise" / "s.1"
    assert parents.peak("s.1") == 88 * MIB


def test_v2_parent_without_memory_controller_is_unusable(tmp_path):
    assert not pm.ParentCgroups(v2_root(tmp_path, "cpu io pids"), 2).usable()


def test_release_and_cleanup_find_each_layout(tmp_path):
    v1 = v1_root(tmp_path / "a")
    for controller in ("cpu", "memory", "pids"):
        (v1 / controller / "evalnoise" / "s.1").mkdir(parents=True)
    (v1 / "cpu" / "evalnoise" / "s.2").mkdir()
    assert pm.ParentCgroups(v1, 1).release("s.1")
    assert not list(v1.glob("*/evalnoise/s.1"))
    assert pm.ParentCgroups(v1, 1).cleanup("s") == 1
    v2 = v2_root(tmp_path / "b")
    for name in ("s.1", "s.2", "other.1"):
        (v2 / "evalnoise" / name).mkdir(parents=True)
    assert pm.ParentCgroups(v2, 2).cleanup("s") == 2
    assert [p.name for p in (v2 / "evalnoise").iterdir()] == ["other.1"]


# -- samplers ------------------------------------------------------------------------------


def test_sampler_keeps_the_largest_value_it_saw(tmp_path):
    d = v2_cgroup(tmp_path / "v2old", current=1 * MIB, peak=None)
    sampler = pm.Sampler(lambda: pm.read_usage(d), interval=0.005).start()
    for mb in (5, 40, 12, 3):  # a burst to 40 MiB, then down again
        (d / pm.V2_CURRENT).write_text(str(mb * MIB))
        time.sleep(0.05)
    assert sampler.stop() == 40 * MIB


def test_sampler_survives_a_failing_reader():
    calls = []

    def read():
        calls.append(1)
        if len(calls) % 2:
            raise OSError("the cgroup went away")
        return len(calls)

    sampler = pm.Sampler(read, interval=0.001).start()
    time.sleep(0.05)
    assert sampler.stop() >= 2


def test_container_reader_looks_the_cgroup_up_once(tmp_path):
    root, proc = v2_root(tmp_path), tmp_path / "proc"
    write(proc / "77" / "cgroup", PROC_V2)
    v2_cgroup(root / "system.slice" / "docker-abc.scope", current=5 * MIB, peak=None)
    lookups = []

    def pid():
        lookups.append(1)
        return 77

    reader = pm.ContainerCgroupReader(pid, root, 2, proc=proc)
    assert reader() == reader() == 5 * MIB
    gone = pm.ContainerCgroupReader(lambda: 0, root, 2, proc=proc)  # exited before lookup
    assert gone() is None and gone() is None
    assert len(lookups) == 1


class _FakeStatsAPI:
    def __init__(self, samples):
        self.samples, self.done = samples, threading.Event()

    def stats(self, container_id, decode, stream):
        assert decode and stream
        yield from self.samples
        self.done.set()


def test_stats_sampler_follows_the_stream():
    api = _FakeStatsAPI(
        [
            {"memory_stats": {"usage": 10 * MIB, "max_usage": 20 * MIB}},
            {"memory_stats": {"usage": 30 * MIB}},
            {"memory_stats": {}},
        ]
    )
    sampler = pm.StatsSampler(api, "abc").start()
    assert api.done.wait(5)
    assert sampler.stop() == 30 * MIB


# -- every source this host offers, against the real engine --------------------------------


def _backend_with(source: str, default):
    """A backend forced to ``source``, or None where this host cannot offer it."""
    from evalnoise.runner.docker_backend import DockerBackend

    try:
        return DockerBackend(peak_source=source)
    except ValueError:
        # the source the backend chose by itself is always available
        assert source != default.peak_source
        return None


@pytest.mark.docker
def test_the_default_source_is_the_best_one_the_host_offers(docker_backend):
    backend = docker_backend
    assert backend.host_cgroup_version == pm.cgroup_version(pm.CGROUP_ROOT)
    assert backend.peak_source in pm.PEAK_SOURCES
    if backend.cgroup_driver != "cgroupfs":
        assert backend.peak_source == "container-sampled"
    elif backend.host_cgroup_version == 1 and os.access(pm.CGROUP_ROOT / "cpu", os.W_OK):
        assert backend.peak_source == "parent"  # v1/hybrid hosts: exact, always
    elif backend.peak_source.startswith("parent"):  # v2: exact from Linux 5.19 on
        has_peak = (pm.CGROUP_ROOT / "evalnoise" / pm.V2_PEAK).exists()
        assert backend.peak_source == ("parent" if has_peak else "parent-sampled")


@pytest.mark.docker
@pytest.mark.parametrize("source", pm.PEAK_SOURCES)
def test_each_peak_source_measures_a_real_allocation(docker_backend, probe_image, source):
    backend = _backend_with(source, docker_backend)
    if backend is None:
        return
    # the engine's stats stream samples about once a second: hold the memory long enough
    hold = 2.5 if source == "engine-stats" else 0.4
    task = task_row("t-peak", {"op": "alloc", "mb": 100, "hold_s": hold}, memory_mb=64)
    row = run_one(backend, probe_agent(probe_image), task, "3x", shard_id=f"peak-{source}")
    assert row["status"] == "ok", row
    assert 100 * MIB <= row["peak_memory_bytes"] <= row["memory_limit_bytes"] == 192 * MIB
    assert not list(pm.CGROUP_ROOT.glob("*/evalnoise/peak-*"))  # v1: released
    assert not list(pm.CGROUP_ROOT.glob("evalnoise/peak-*"))  # v2: released


@pytest.mark.docker
@pytest.mark.parametrize("source", ["parent", "parent-sampled", "container-sampled"])
def test_an_oom_kill_is_recognised_with_each_cgroup_source(docker_backend, probe_image, source):
    backend = _backend_with(source, docker_backend)
    if backend is None:
        return
    task = task_row("t-mem", {"op": "alloc", "mb": 100}, memory_mb=64)
    row = run_one(backend, probe_agent(probe_image), task, "1x", shard_id=f"oom-{source}")
    assert (row["status"], row["exit_code"]) == ("oom_killed", 137), row


@pytest.mark.docker
def test_an_unknown_source_is_refused(docker_engine):
    from evalnoise.runner.docker_backend import DockerBackend

    with pytest.raises(ValueError, match="peak_source must be one of"):
        DockerBackend(peak_source="guess")
    assert DockerBackend(measure_peak=False).peak_source is None
