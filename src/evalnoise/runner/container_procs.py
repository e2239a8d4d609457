"""A running container seen from the host: its cgroup's memory counters and its processes.

An environment trial's container lives through both phases (agent, verifier), so its own
cgroup can be read while it runs — unlike a QA trial's, which is gone when its only process
exits (:mod:`evalnoise.runner.docker_backend` keeps a parent cgroup for that). This module
reads it through the host's ``/proc`` and ``/sys/fs/cgroup``, which works when the engine runs
on this host (the runner's case; a remote engine falls back to what the engine reports):

- :func:`oom_kills` — how many processes the kernel's OOM killer killed in the cgroup:
  ``oom_kill`` of ``memory.events`` (v2) or of ``memory.oom_control`` (v1, Linux ≥ 4.13).
  Read before and after a phase, the difference says which phase lost a process to the
  memory limit, whether or not the killed process was the one the runner started.
- :func:`kill_tree` / :func:`kill_all_except` — SIGKILL to one exec's process tree (a
  command past its own timeout) or to every process but the container's idle main process
  and its init (the agent phase past its deadline), repeated until none is left, since a
  dying shell's children can fork in between. Members come from the cgroup's
  ``cgroup.procs``; parentage from ``/proc/<pid>/stat``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterable
from pathlib import Path

from evalnoise.runner.peak_memory import oom_kill_count, read_oom_kills

PROC = Path("/proc")


def oom_kills(cgroup_dir: Path | None) -> int | None:
    """OOM kills counted in the cgroup (v2 ``memory.events``, v1 ``memory.oom_control``),
    None when neither file has the counter."""
    if cgroup_dir is None:
        return None
    count = read_oom_kills(cgroup_dir)
    if count is not None:
        return count
    return oom_kill_count(cgroup_dir / "memory.oom_control")


def members(cgroup_dir: Path) -> list[int]:
    """PIDs (host namespace) of the processes in the cgroup, [] if it cannot be read."""
    try:
        text = (cgroup_dir / "cgroup.procs").read_text()
    except OSError:
        return []
    return [int(p) for p in text.split() if p.isdigit()]


def stat_fields(pid: int, proc: Path = PROC) -> tuple[int, int] | None:
    """``(ppid, start time in clock ticks)`` of ``pid`` from ``/proc/<pid>/stat`` (proc(5)
    fields 4 and 22; the command name, field 2, may hold spaces and parentheses, so the
    fields are counted after its last ``)``), None if the process is gone."""
    try:
        text = (proc / str(pid) / "stat").read_text()
    except OSError:
        return None
    rest = text[text.rfind(")") + 2 :].split()
    try:
        return int(rest[1]), int(rest[19])
    except (IndexError, ValueError):
        return None


def keepers(main_pid: int, pids: Iterable[int], proc: Path = PROC) -> set[int]:
    """The container's own processes, not to be killed: its init (``main_pid``, the engine's
    ``State.Pid``) and the init's oldest child, the idle main command. Processes orphaned
    later may be re-parented to the init too; they started after the idle command."""
    oldest: tuple[int, int] | None = None
    for pid in pids:
        fields = stat_fields(pid, proc)
        if fields is None or fields[0] != main_pid:
            continue
        if oldest is None or fields[1] < oldest[1]:
            oldest = (fields[1], pid)
    return {main_pid} | ({oldest[1]} if oldest else set())


def _kill(pids: Iterable[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def kill_all_except(cgroup_dir: Path, keep: set[int], rounds: int = 50) -> bool:
    """SIGKILL every process of the cgroup not in ``keep`` until none is left; True when
    none is left (False: the cgroup cannot be read, or processes outlived ``rounds``)."""
    if not (cgroup_dir / "cgroup.procs").is_file():
        return False
    for _ in range(rounds):
        left = [p for p in members(cgroup_dir) if p not in keep]
        if not left:
            return True
        _kill(left)
        time.sleep(0.005)
    return not [p for p in members(cgroup_dir) if p not in keep]


def _parents(pids: Iterable[int], proc: Path = PROC) -> dict[int, int]:
    parent = {}
    for pid in pids:
        fields = stat_fields(pid, proc)
        if fields is not None:
            parent[pid] = fields[0]
    return parent


def _grow(tree: set[int], parent: dict[int, int]) -> set[int]:
    grew = True
    while grew:
        grew = False
        for pid, ppid in parent.items():
            if ppid in tree and pid not in tree:
                tree.add(pid)
                grew = True
    return tree


def descendants(root: int, pids: Iterable[int], proc: Path = PROC) -> set[int]:
    """``root`` and every process among ``pids`` whose chain of parents reaches it."""
    return _grow({root}, _parents(pids, proc))


def kill_tree(cgroup_dir: Path, root: int, rounds: int = 50) -> bool:
    """SIGKILL ``root`` (an exec's process) and its descendants in the cgroup until none is
    left; True when none is left. The tree is remembered across rounds, so a child that a
    killed parent left behind is still killed; a process that had left the tree before the
    first look (a daemon re-parented to the engine's shim) is not: a background job an
    agent's command started on purpose may stay."""
    if not (cgroup_dir / "cgroup.procs").is_file():
        return False
    tree = {root}
    for _ in range(rounds):
        pids = members(cgroup_dir)
        _grow(tree, _parents(pids))
        alive = [p for p in pids if p in tree]
        if not alive:
            return True
        _kill(alive)
        time.sleep(0.005)
    return not [p for p in members(cgroup_dir) if p in tree]
