"""Agent processes on the host: the clean environment they start with, and finding the ones
a killed run left behind.

Two backends start an agent as a host process: the ``local`` backend (a question trial is a
subprocess, :mod:`evalnoise.runner.local_backend`) and the external agents of environment
tasks (:mod:`evalnoise.runner.external_agent`). Both give it :func:`host_environment` (no
variable of the runner's leaks in: only ``PATH``, ``LANG`` and a private ``HOME``/``TMPDIR``,
then the contract's and the agent's own), and both mark it with ``EVALNOISE_TASK_FILE``
pointing into the trial's scratch directory — which is how :func:`kill_marked` finds a
process a SIGKILLed run could not stop (its scratch directories are still on disk).
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterable
from pathlib import Path

__all__ = ["host_environment", "kill_marked"]


def host_environment(home: str | os.PathLike[str]) -> dict[str, str]:
    """The base environment of a host agent: this ``PATH``, ``LANG=C.UTF-8``, and ``home`` as
    ``HOME`` and ``TMPDIR``."""
    return {
        "PATH": os.environ.get("PATH", os.defpath),
        "LANG": "C.UTF-8",
        "HOME": str(home),
        "TMPDIR": str(home),
    }


def kill_marked(
    task_files: Iterable[str | os.PathLike[str]], variable: str = "EVALNOISE_TASK_FILE"
) -> int:
    """SIGKILL every process (but this one) whose environment has ``variable`` set to one
    of ``task_files``; return how many were killed. Processes whose environment cannot be
    read (gone, or another user's) are passed over. (The environment a process started
    with: a fork server's children carry their server's ``EVALNOISE_FORK_SERVER``,
    :mod:`evalnoise.runner.fork_server`.)"""
    markers = {f"{variable}={os.fspath(p)}".encode() for p in task_files}
    if not markers:
        return 0
    killed = 0
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            environ = set((proc / "environ").read_bytes().split(b"\0"))
        except OSError:
            continue
        if environ & markers:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(int(proc.name), signal.SIGKILL)
                killed += 1
    return killed
