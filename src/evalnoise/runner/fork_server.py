"""Warm external agents: one process per shard and agent that forks a child per trial.

An external agent whose spec says ``fork_server: true`` (the Harbor bridge: its imports cost
more than a trial's own work) is not started afresh for every trial. The first trial of a
shard starts the spec's ``command`` once, as a *fork server* (``agents/common/fork_server.py``,
the agent's side of this), with ``EVALNOISE_FORK_SERVER_FD`` naming one end of a
``SOCK_SEQPACKET`` socket pair; the server imports what its trials need and then forks one
child per trial, to which the runner hands the trial's environment, working directory and
three file descriptors (the stdin and stdout pipes of the exec protocol, the trial's stderr
file). The child is the trial's agent process, as a fresh start would be: its own process
group and pid (registered, killed by group, as any external agent), its own environment,
seed variables, home and log, and its end reported by the server as a ``returncode``
(:class:`ForkedAgent` is what :func:`evalnoise.runner.external_agent.run_external_agent` needs
of a :class:`subprocess.Popen`).

Failure semantics are a fresh start's:

- a child that crashes or exits without ``done`` is the trial's ``agent_error`` (its exit
  code, ``137`` for SIGKILL), never a score;
- a server that dies takes its children with it (``PR_SET_PDEATHSIG``); their trials end in
  ``agent_error`` with the cause in ``error``, and the next trial starts a new server;
- a server that cannot start (it exits before it is ready) is not tried again for that shard
  and agent: its trials start the command afresh (:func:`subprocess.Popen`), so the failure
  they meet is the one a fresh start meets;
- a server not ready by the agent phase's deadline ends that trial in ``timeout``, as a
  fresh start importing past the deadline would;
- :meth:`ForkServers.kill` (a shard's abort) SIGKILLs the shard's servers and children;
  :meth:`ForkServers.close` (a shard's end) closes their sockets — a server that sees its
  socket close kills its children and exits — and SIGKILLs what is left after a grace
  period. A runner killed outright closes the sockets too (the kernel does), and a server's
  scratch directory ``evalnoise-env.<shard>.fork-*`` marks it and its children
  (``EVALNOISE_FORK_SERVER`` in their environment) for
  :func:`evalnoise.runner.host_processes.kill_marked` at the shard's next start.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from evalnoise.runner.host_processes import host_environment
from evalnoise.runner.trial_container import read_tail

__all__ = [
    "FD_VARIABLE",
    "MARKER_VARIABLE",
    "ForkServer",
    "ForkServerFailed",
    "ForkServers",
    "ForkedAgent",
    "popen_agent",
]

#: the variable naming the server's end of the control socket (a descriptor number)
FD_VARIABLE = "EVALNOISE_FORK_SERVER_FD"
#: the variable naming the server's scratch directory: marks the server and its children
MARKER_VARIABLE = "EVALNOISE_FORK_SERVER"
#: prefix of a server's scratch directory after ``evalnoise-env.<shard>.``
SCRATCH_TAG = "fork-"
MAX_MESSAGE = 4 * 1024 * 1024
#: seconds a closed server has to kill its children and exit before it is SIGKILLed
CLOSE_GRACE_S = 5.0


class ForkServerFailed(RuntimeError):
    """The server ended (or never became ready); the message says how, with its log's tail."""


def popen_agent(
    command: Sequence[str], env: Mapping[str, str], cwd: Path, stderr: IO[bytes], deadline: float
) -> subprocess.Popen[bytes]:
    """A fresh start of an external agent's ``command`` (its own session and process group,
    stdin and stdout piped, ``stderr`` its log)."""
    return subprocess.Popen(
        list(command),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=stderr,
        cwd=cwd,
        env=dict(env),
        start_new_session=True,
        close_fds=True,
    )


class ForkedAgent:
    """A trial's agent process forked by a :class:`ForkServer`, with the part of
    :class:`subprocess.Popen`'s interface the exec protocol's runner uses."""

    def __init__(self, server: ForkServer, pid: int, stdin: IO[bytes], stdout: IO[bytes]):
        self.server, self.pid, self.stdin, self.stdout = server, pid, stdin, stdout
        self.args = server.command

    @property
    def returncode(self) -> int | None:
        """The exit code (``-N``: killed by signal N), None while it runs."""
        return self.server.returncode_of(self.pid)

    @property
    def note(self) -> str | None:
        """Why the process ended when its server's death ended it (None otherwise)."""
        with self.server._cond:
            return None if self.pid in self.server._exits else self.server._dead

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        """Wait for the server's report of the child's end; ``subprocess.TimeoutExpired``
        after ``timeout`` seconds."""
        code = self.server.wait_child(self.pid, timeout)
        if code is None:
            raise subprocess.TimeoutExpired(self.args, timeout or 0.0)
        return code


class ForkServer:
    """One running fork server (module docstring): started by the constructor, which does not
    wait for it to be ready (:meth:`spawn` does)."""

    def __init__(self, command: Sequence[str], env: Mapping[str, str], scratch: Path) -> None:
        self.command = list(command)
        self.scratch = scratch
        self.log_path = scratch / "server.log"
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.sock = ours
        self._cond = threading.Condition()
        self._send_lock = threading.Lock()
        self._ready = False
        self._dead: str | None = None
        self._replies: dict[int, dict[str, Any]] = {}
        self._exits: dict[int, int] = {}
        self._running: set[int] = set()
        self._next = 0
        full_env = {**env, FD_VARIABLE: str(theirs.fileno())}
        with open(self.log_path, "wb") as log:
            try:
                self.proc = subprocess.Popen(
                    self.command,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=log,
                    cwd=scratch / "home",
                    env=full_env,
                    start_new_session=True,
                    close_fds=True,
                    pass_fds=(theirs.fileno(),),
                )
            finally:
                theirs.close()
        self._reader = threading.Thread(
            target=self._read, name=f"fork-server-{self.proc.pid}", daemon=True
        )
        self._reader.start()

    # -- messages from the server ------------------------------------------------------------

    def _read(self) -> None:
        while True:
            try:
                data = self.sock.recv(MAX_MESSAGE)
            except OSError:
                data = b""
            if not data:
                break
            try:
                message = json.loads(data)
            except ValueError:  # not the server this runner speaks to: treat it as ended
                break
            with self._cond:
                if message.get("ready"):
                    self._ready = True
                elif "exited" in message:
                    self._exits[int(message["exited"])] = int(message["returncode"])
                    self._running.discard(int(message["exited"]))
                else:
                    self._replies[int(message.get("spawned", message.get("failed", -1)))] = message
                self._cond.notify_all()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=CLOSE_GRACE_S)
        how = (
            f"exit code {self.proc.returncode}"
            if self.proc.returncode is not None and self.proc.returncode >= 0
            else f"signal {-self.proc.returncode}"
            if self.proc.returncode is not None
            else "its socket closed"
        )
        tail = (read_tail(self.log_path) or "").strip()[-1500:]
        with self._cond:
            self._dead = f"the agent's fork server ended ({how})" + (
                f"; its log ends: {tail}" if tail else ""
            )
            self._cond.notify_all()

    @property
    def alive(self) -> bool:
        with self._cond:
            return self._dead is None

    @property
    def ended(self) -> str | None:
        """Why the server ended (None while it runs)."""
        with self._cond:
            return self._dead

    def returncode_of(self, pid: int) -> int | None:
        with self._cond:
            if pid in self._exits:
                return self._exits[pid]
            # a dead server's children are SIGKILLed with it (PR_SET_PDEATHSIG)
            return -signal.SIGKILL if self._dead is not None else None

    def wait_child(self, pid: int, timeout: float | None) -> int | None:
        end = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while pid not in self._exits and self._dead is None:
                left = None if end is None else end - time.monotonic()
                if left is not None and left <= 0:
                    return None
                self._cond.wait(left)
        return self.returncode_of(pid)

    def wait_ready(self, deadline: float) -> None:
        """Return once the server is ready; :class:`ForkServerFailed` if it ended first,
        ``TimeoutError`` at ``deadline`` (monotonic seconds)."""
        with self._cond:
            while not self._ready:
                if self._dead is not None:
                    raise ForkServerFailed(self._dead)
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError("the agent's fork server was not ready by the deadline")
                self._cond.wait(left)

    # -- one trial ---------------------------------------------------------------------------

    def spawn(
        self, env: Mapping[str, str], cwd: Path, stderr: IO[bytes], deadline: float
    ) -> ForkedAgent:
        """Fork the trial's agent process: its environment ``env``, working directory
        ``cwd``, stdin and stdout pipes to this runner, ``stderr`` its log."""
        self.wait_ready(deadline)
        stdin_r, stdin_w = os.pipe()
        stdout_r, stdout_w = os.pipe()
        theirs = (stdin_r, stdout_w, stderr.fileno())
        try:
            with self._cond:
                self._next += 1
                ident = self._next
            message = json.dumps({"spawn": ident, "env": dict(env), "cwd": str(cwd)})
            try:
                with self._send_lock:
                    socket.send_fds(self.sock, [message.encode("utf-8")], list(theirs))
            except OSError as exc:
                raise ForkServerFailed(f"the agent's fork server is gone: {exc}") from None
            with self._cond:
                while ident not in self._replies:
                    if self._dead is not None:
                        raise ForkServerFailed(self._dead)
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise TimeoutError("the agent's fork server did not fork in time")
                    self._cond.wait(left)
                reply = self._replies.pop(ident)
                if "spawned" in reply:
                    self._running.add(int(reply["pid"]))
        except BaseException:
            for fd in (stdin_w, stdout_r):
                os.close(fd)
            raise
        finally:
            os.close(stdin_r)
            os.close(stdout_w)
        if "spawned" not in reply:
            for fd in (stdin_w, stdout_r):
                os.close(fd)
            raise ForkServerFailed(f"the agent's fork server could not fork: {reply.get('error')}")
        return ForkedAgent(
            self, int(reply["pid"]), os.fdopen(stdin_w, "wb"), os.fdopen(stdout_r, "rb")
        )

    # -- the end -----------------------------------------------------------------------------

    def kill(self) -> None:
        """SIGKILL the server and every child it reported running, at once."""
        with self._cond:
            groups = list(self._running)
        if self.proc.poll() is None:  # a reaped server's pid may be another process's now
            groups.append(self.proc.pid)
        for group in groups:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(group, signal.SIGKILL)
        self._finish()

    def close(self) -> None:
        """Close the socket (the server kills its children and exits); SIGKILL after
        :data:`CLOSE_GRACE_S`."""
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        try:
            self.proc.wait(timeout=CLOSE_GRACE_S)
        except subprocess.TimeoutExpired:
            pass
        self.kill()

    def _finish(self) -> None:
        self.proc.wait()
        with contextlib.suppress(OSError):
            self.sock.close()
        self._reader.join(CLOSE_GRACE_S)
        shutil.rmtree(self.scratch, ignore_errors=True)


class ForkServers:
    """The fork servers of a backend, one per (shard, agent, secrets, run-time values),
    started by the first trial that needs one (module docstring)."""

    def __init__(self, scratch_root: Path) -> None:
        self.scratch_root = scratch_root
        self._servers: dict[tuple[str, str], ForkServer] = {}
        self._broken: set[tuple[str, str]] = set()
        self._lock = threading.Lock()

    def starter(
        self, shard_id: str, command: Sequence[str], base_env: Mapping[str, str]
    ) -> Callable[..., Any]:
        """The ``start`` of :func:`~evalnoise.runner.external_agent.run_external_agent` for
        one trial: a child of the shard's server for ``command`` and ``base_env`` (what all
        its trials share: the agent's ``env``, secrets and run-time variables)."""
        digest = hashlib.sha256(
            json.dumps([list(command), sorted(base_env.items())]).encode("utf-8")
        ).hexdigest()
        key = (shard_id, digest)

        def start(
            command: Sequence[str],
            env: Mapping[str, str],
            cwd: Path,
            stderr: IO[bytes],
            deadline: float,
        ) -> Any:
            server = self._server(key, command, base_env)
            if server is None:
                return popen_agent(command, env, cwd, stderr, deadline)
            try:
                return server.spawn(env, cwd, stderr, deadline)
            except ForkServerFailed:
                if not server._ready:  # it never started: fresh starts from now on
                    self._forget(key, server, broken=True)
                    return popen_agent(command, env, cwd, stderr, deadline)
                self._forget(key, server)
                raise

        return start

    def _server(
        self, key: tuple[str, str], command: Sequence[str], base_env: Mapping[str, str]
    ) -> ForkServer | None:
        with self._lock:
            if key in self._broken:
                return None
            server = self._servers.pop(key, None)
            if server is not None and server.alive:
                self._servers[key] = server
                return server
            if server is not None:  # it died between trials: its socket and scratch go
                threading.Thread(target=server.kill, daemon=True).start()
            scratch = Path(
                tempfile.mkdtemp(
                    prefix=f"evalnoise-env.{key[0]}.{SCRATCH_TAG}", dir=self.scratch_root
                )
            )
            (scratch / "home").mkdir()
            env = {
                **host_environment(scratch / "home"),
                **base_env,
                MARKER_VARIABLE: str(scratch),
            }
            try:
                server = ForkServer(command, env, scratch)
            except OSError as exc:
                shutil.rmtree(scratch, ignore_errors=True)
                print(
                    f"evalnoise: the agent's fork server could not start ({exc})", file=sys.stderr
                )
                self._broken.add(key)
                return None
            self._servers[key] = server
            return server

    def _forget(self, key: tuple[str, str], server: ForkServer, broken: bool = False) -> None:
        with self._lock:
            if self._servers.get(key) is server:
                del self._servers[key]
            if broken:
                self._broken.add(key)
                print(
                    f"evalnoise: the agent's fork server did not start: {server.ended}; its "
                    "trials start the agent afresh",
                    file=sys.stderr,
                )
        server.kill()

    def _take(self, shard_id: str | None) -> list[ForkServer]:
        with self._lock:
            keys = [k for k in self._servers if shard_id is None or k[0] == shard_id]
            return [self._servers.pop(k) for k in keys]

    def kill(self, shard_id: str | None = None) -> None:
        """SIGKILL the servers (of ``shard_id``, or all) and their children."""
        for server in self._take(shard_id):
            server.kill()

    def close(self, shard_id: str | None = None) -> None:
        """Stop the servers (of ``shard_id``, or all): sockets closed, then SIGKILL."""
        for server in self._take(shard_id):
            server.close()
