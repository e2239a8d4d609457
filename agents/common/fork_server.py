"""An external agent's warm process: imports once, forks one child per trial (the agent's side).

An adapter whose imports cost more than its trials' own work (Harbor's pydantic models and
LiteLLM, in ``agents/harbor_agent/bridge.py``) runs as a *fork server* when its agent spec says
``fork_server: true`` (docs/agent-contract.md, "Warm agent processes"). The runner
(``evalnoise.runner.fork_server``) starts the spec's ``command`` once per shard with
``EVALNOISE_FORK_SERVER_FD``, the number of a ``SOCK_SEQPACKET`` Unix socket, in its
environment; :func:`serve` then

1. calls ``preload()`` (the imports; an exception is logged and the server serves anyway: the
   trial that needs the failed import fails in its own child, with its own outcome);
2. says ``{"ready": true, "pid": ...}``;
3. for each ``{"spawn": id, "env": {...}, "cwd": dir}`` message, which carries three file
   descriptors (the trial's stdin, stdout and stderr), forks a child and answers
   ``{"spawned": id, "pid": pid}`` (or ``{"failed": id, "error": ...}``);
4. reports each child's end as ``{"exited": pid, "returncode": n}`` (``-N``: killed by
   signal N, as :mod:`subprocess` reports it);
5. when the runner closes the socket (it ended, or stops the server), SIGKILLs every child's
   process group and exits.

A child is what a fresh start of the command would be, less the imports: its own process
group (the runner kills it by that group, as it kills a process it started), the trial's
stdin/stdout/stderr on descriptors 0/1/2, the trial's environment *replacing* the server's
(``os.environ``), the trial's home as the working directory, the random module seeded afresh
from the OS (a fresh interpreter's ``random`` state; forked children would otherwise share
the server's), ``tempfile``'s directory read again from ``TMPDIR``, the default signal
handlers, and SIGKILL when the server dies (``PR_SET_PDEATHSIG``). It then runs ``run()`` and
exits with its return value (1 and the traceback on stderr if it raised). Standard library
only.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import random
import selectors
import signal
import socket
import sys
import tempfile
import traceback
from collections.abc import Callable
from typing import Any

#: the variable holding the control socket's descriptor number
FD_VARIABLE = "EVALNOISE_FORK_SERVER_FD"
#: the largest control message (the trial's environment: its question is at most 64 KiB)
MAX_MESSAGE = 4 * 1024 * 1024
_PR_SET_PDEATHSIG = 1


def requested() -> bool:
    """Whether the runner started this process as a fork server."""
    return FD_VARIABLE in os.environ


def serve(preload: Callable[[], Any], run: Callable[[], int]) -> int:
    """Serve the runner's spawn requests until it closes the socket (module docstring);
    returns in the server only (0), never in a child."""
    sock = socket.socket(fileno=int(os.environ.pop(FD_VARIABLE)))
    try:
        preload()
    except Exception:  # the child that needs it fails, as a fresh start would
        print(f"fork server: preload failed:\n{traceback.format_exc()}", file=sys.stderr)
    wake_r, wake_w = socket.socketpair()
    wake_r.setblocking(False)
    wake_w.setblocking(False)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.set_wakeup_fd(wake_w.fileno(), warn_on_full_buffer=False)
    children: set[int] = set()
    _send(sock, {"ready": True, "pid": os.getpid()})
    selector = selectors.DefaultSelector()
    selector.register(sock, selectors.EVENT_READ)
    selector.register(wake_r, selectors.EVENT_READ)
    try:
        while True:
            _reap(sock, children)
            for key, _ in selector.select():
                if key.fileobj is wake_r:
                    with contextlib.suppress(BlockingIOError):
                        wake_r.recv(4096)
                    continue
                message, fds = _receive(sock)
                if message is None:
                    return 0
                pid = _spawn(sock, message, fds, run, (selector, wake_r, wake_w))
                if pid is not None:
                    children.add(pid)
    finally:
        for pid in children:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)


def _send(sock: socket.socket, message: dict[str, Any]) -> None:
    with contextlib.suppress(OSError):  # the runner is gone: the next receive ends the loop
        sock.send(json.dumps(message).encode("utf-8"))


def _receive(sock: socket.socket) -> tuple[dict[str, Any] | None, list[int]]:
    """The next message and the descriptors it carries; ``(None, [])`` at the runner's end."""
    try:
        data, fds, _, _ = socket.recv_fds(sock, MAX_MESSAGE, 3)
    except ConnectionError:
        return None, []
    if not data:
        return None, []
    return json.loads(data), list(fds)


def _reap(sock: socket.socket, children: set[int]) -> None:
    """Report every child that ended (``waitpid`` without blocking)."""
    while children:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        children.discard(pid)
        _send(sock, {"exited": pid, "returncode": os.waitstatus_to_exitcode(status)})


def _spawn(
    sock: socket.socket,
    message: dict[str, Any],
    fds: list[int],
    run: Callable[[], int],
    own: tuple[Any, ...],
) -> int | None:
    """Fork the child of one ``spawn`` message; its pid (None if it could not be made)."""
    ident = message.get("spawn")
    if len(fds) != 3:
        for fd in fds:
            os.close(fd)
        _send(sock, {"failed": ident, "error": f"expected 3 descriptors, got {len(fds)}"})
        return None
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        pid = os.fork()
    except OSError as exc:
        for fd in fds:
            os.close(fd)
        _send(sock, {"failed": ident, "error": f"fork: {exc}"})
        return None
    if pid == 0:
        _child(sock, message, fds, run, own)  # never returns
    for fd in fds:
        os.close(fd)
    # its own process group before the runner learns its pid (the child does the same:
    # whichever runs first, the group exists when the runner may kill it)
    with contextlib.suppress(PermissionError, ProcessLookupError):
        os.setpgid(pid, pid)
    _send(sock, {"spawned": ident, "pid": pid})
    return pid


def _child(
    sock: socket.socket,
    message: dict[str, Any],
    fds: list[int],
    run: Callable[[], int],
    own: tuple[Any, ...],
) -> None:
    """The trial's process (module docstring); exits with ``run()``'s value."""
    code = 1
    try:
        try:
            os.setsid()
        except PermissionError:  # the server made it a group leader first
            pass
        with contextlib.suppress(Exception):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() == 1:  # the server died before the child could ask to follow it
            os._exit(137)
        selector, wake_r, wake_w = own
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        selector.close()
        wake_r.close()
        wake_w.close()
        sock.close()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        for fd in fds:
            if fd > 2:
                os.close(fd)
        os.environ.clear()
        os.environ.update({str(k): str(v) for k, v in message.get("env", {}).items()})
        os.chdir(message.get("cwd") or os.environ.get("HOME") or "/")
        random.seed()
        tempfile.tempdir = None
        code = int(run() or 0)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        with contextlib.suppress(Exception):
            traceback.print_exc()
        code = 1
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)
