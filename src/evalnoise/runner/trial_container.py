"""One environment trial's container, driven from the host: commands with deadlines.

:class:`TrialContainer` runs ``bash -c <command>`` in a running container through the
engine's exec API, each with a deadline enforced on the host (the exec API has none): past it
the command's process tree — or every process but the container's own init and idle main
command — is killed through the host's view of the container's cgroup
(:mod:`evalnoise.runner.container_procs`). It also reads the cgroup's OOM-kill counter and
memory high-water mark while the container lives. :func:`tar_dir` packs a task folder's
``tests/`` or ``solution/`` for the engine's archive API; :func:`read_tail` reads the end of a
file the container wrote into a bind mount, never following a symlink it may have planted.
"""

from __future__ import annotations

import io
import os
import tarfile
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalnoise.runner.container_procs import keepers, kill_all_except, kill_tree, members, oom_kills
from evalnoise.runner.exec_protocol import CappedOutput
from evalnoise.runner.peak_memory import read_peak

#: Seconds a killed command has to disappear before the runner stops waiting for it.
KILL_GRACE_S = 10.0
_TAIL_READ_BYTES = 1 << 20


@dataclass
class CommandRun:
    """What one command run in the container came to."""

    exit_code: int | None = None
    timed_out: bool = False
    duration_s: float = 0.0
    killed: bool = True  # False: a timed-out command could not be stopped


def read_tail(path: Path) -> str | None:
    """The last MiB of the file at ``path`` as text (None if absent or a symlink)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        size = os.fstat(fd).st_size
        os.lseek(fd, max(0, size - _TAIL_READ_BYTES), os.SEEK_SET)
        return os.read(fd, _TAIL_READ_BYTES).decode("utf-8", "replace")
    finally:
        os.close(fd)


def tar_dir(source: Path, target: str, executable: tuple[str, ...] = ()) -> bytes:
    """A tar of ``source`` placed at ``target`` (relative to /): owned by root, files world
    readable, directories world listable, ``executable`` (relative paths) mode 0755."""
    buffer = io.BytesIO()

    def clean(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.uid = info.gid = 0
        info.uname = info.gname = "root"
        relative = info.name[len(target) + 1 :]
        if info.isdir():
            info.mode = 0o755
        elif info.isfile():
            info.mode = 0o755 if (relative in executable or info.mode & 0o100) else 0o644
        return info

    with tarfile.open(fileobj=buffer, mode="w") as archive:
        archive.add(str(source), arcname=target, filter=clean)
    return buffer.getvalue()


class TrialContainer:
    """One trial's container: runs commands in it with deadlines, reads its cgroup."""

    def __init__(self, api: Any, container_id: str, cgroup_dir: Path | None, main_pid: int):
        self.api, self.id, self.cgroup_dir, self.main_pid = api, container_id, cgroup_dir, main_pid

    def oom_kills(self) -> int | None:
        """OOM kills counted in the container's cgroup so far (None: not readable)."""
        return oom_kills(self.cgroup_dir)

    def peak(self) -> int | None:
        """The container cgroup's memory high-water mark in bytes (None: not readable)."""
        return read_peak(self.cgroup_dir) if self.cgroup_dir is not None else None

    def kill_agent_processes(self) -> bool:
        """SIGKILL everything but the init and the idle main command; True if it worked."""
        if self.cgroup_dir is None:
            return False
        keep = keepers(self.main_pid, members(self.cgroup_dir))
        return kill_all_except(self.cgroup_dir, keep)

    def run(
        self,
        command: str,
        *,
        user: str | None,
        env: Mapping[str, str] | None,
        timeout_s: float,
        output: CappedOutput | None = None,
        on_timeout: str = "tree",
    ) -> CommandRun:
        """``bash -c command`` until it exits or ``timeout_s`` passes. Then its process tree
        (``on_timeout="tree"``) or every process but the container's own (``"all"``) is
        killed, or nothing (``"none"``: the caller removes the container next)."""
        import docker.errors
        import requests.exceptions

        result = CommandRun()
        started = time.monotonic()
        exec_id = self.api.exec_create(
            self.id,
            ["bash", "-c", command],
            stdout=True,
            stderr=True,
            user=user or "",
            environment=dict(env) if env else None,
        )["Id"]
        failure: list[BaseException] = []

        def pump() -> None:
            try:
                if output is None:
                    self.api.exec_start(exec_id)
                else:
                    for chunk in self.api.exec_start(exec_id, stream=True):
                        output.write(chunk)
            except BaseException as exc:  # reported below, on the caller's thread
                failure.append(exc)

        worker = threading.Thread(target=pump, name="evalnoise-exec", daemon=True)
        worker.start()
        worker.join(max(0.0, timeout_s))
        if worker.is_alive():
            result.timed_out = True
            if on_timeout == "none":  # the container is removed next: that stops it
                result.duration_s = time.monotonic() - started
                result.killed = False
                return result
            if on_timeout == "all":
                result.killed = self.kill_agent_processes()
            else:
                pid = int(self.api.exec_inspect(exec_id).get("Pid") or 0)
                result.killed = (
                    self.cgroup_dir is not None and pid > 0 and kill_tree(self.cgroup_dir, pid)
                )
            worker.join(KILL_GRACE_S if result.killed else 0.5)
        result.duration_s = time.monotonic() - started
        if failure and not result.timed_out:
            exc = failure[0]
            if isinstance(
                exc, docker.errors.DockerException | requests.exceptions.RequestException
            ):
                raise exc
            raise RuntimeError(f"exec failed: {exc}") from exc
        if not worker.is_alive():
            info = self.api.exec_inspect(exec_id)
            if not info.get("Running"):
                result.exit_code = info.get("ExitCode")
        return result
