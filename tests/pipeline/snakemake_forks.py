"""Snakemake runs of the tests, forked from a process that has already imported Snakemake.

A ``snakemake`` command spends ~2 s of a core before it reads the Snakefile: importing its
CLI (1.1 s), building its argument parser with the plugin registries (0.25 s) and importing
pandas for its params check (0.6 s; measured on the test machines). The suite starts ~150
of them, ~16 % of its CPU. This module keeps one process per pytest worker (the *server*,
started on first use) that has done those imports; each run is a fork of it that calls
``snakemake.cli.main()`` as the ``snakemake`` console script does, with the run's own
arguments, working directory, environment (``PYTHONPATH`` included) and standard streams.
What Snakemake does after its imports (the Snakefile, the DAG, the jobs, their processes
and containers) is unchanged (its one import-time value, the run directory it logs, is set
to the run's);  tests/pipeline/test_snakemake_forks.py holds the fork to the
real command's exit codes and output.

Only workspaces without the cluster executor plugins are served (the server starts with
``EVALNOISE_CLUSTER_PLUGINS=0``, so those plugins are not on its path); test_e2e.py runs the
README's commands with the real ``snakemake`` command, as users do.

The client (snakemake_fork_client.py, run with ``python -S -E``) passes its descriptors 0-2
over the socket with the request. For each request the server forks a *monitor*, which
forks the *runner*, waits for it, and sends the client the runner's exit code (negative: the
signal that ended it). A client that goes away first (a test's timeout kills it) has its
runner killed; a client sent SIGTERM, SIGINT or SIGHUP passes it to the runner.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

CLIENT = Path(__file__).with_name("snakemake_fork_client.py")
#: what a runner takes over from the request
_STREAMS = (0, 1, 2)
_server: dict[str, object] = {}


# -- the tests' side ----------------------------------------------------------------------------


def enabled() -> bool:
    """Whether runs are forked: in a test (pytest sets ``PYTEST_CURRENT_TEST`` for its
    setup, call and teardown), unless ``EVALNOISE_TEST_SNAKEMAKE_FORKS=0``; the benchmarks
    that share these helpers time the real command."""
    return bool(os.environ.get("PYTEST_CURRENT_TEST")) and (
        os.environ.get("EVALNOISE_TEST_SNAKEMAKE_FORKS") != "0"
    )


def command(snakemake: str, args: list[str] | tuple[str, ...]) -> list[str]:
    """The command that runs ``snakemake args`` as a fork of this worker's server."""
    return [sys.executable, "-S", "-E", str(CLIENT), _socket(), snakemake, *args]


def _socket() -> str:
    if "socket" not in _server:
        home = Path(tempfile.mkdtemp(prefix="evalnoise-snakemake-forks-"))
        path = str(home / "socket")
        env = dict(os.environ)
        env.pop("PYTHONPATH", None)
        env["EVALNOISE_CLUSTER_PLUGINS"] = "0"
        process = subprocess.Popen(
            [sys.executable, __file__, path],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            text=True,
        )
        ready = process.stdout.readline() if process.stdout else ""
        if ready.strip() != "ready":
            process.kill()
            raise RuntimeError(f"the Snakemake fork server did not start ({ready!r})")

        def stop() -> None:
            process.terminate()
            process.wait(10)
            shutil.rmtree(home, ignore_errors=True)

        atexit.register(stop)
        _server.update(socket=path, process=process)
    return str(_server["socket"])


# -- the server -------------------------------------------------------------------------------


def serve(path: str) -> None:
    """Import Snakemake, then fork a monitor for each request on the socket ``path``."""
    import pandas  # noqa: F401  (Snakemake's params check imports it in every run)
    import snakemake.cli

    snakemake.cli.get_argument_parser()  # the plugin registries, collected once
    parent = os.getppid()
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # monitors are reaped by the kernel
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(16)
    listener.settimeout(5.0)
    print("ready", flush=True)
    while os.getppid() == parent:  # the worker that started it is alive
        try:
            connection, _ = listener.accept()
        except TimeoutError:
            continue
        connection.settimeout(None)
        if os.fork() == 0:
            listener.close()
            _monitor(connection)  # returns only in the runner, by SystemExit
        connection.close()


def _monitor(connection: socket.socket) -> None:
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    header, fds, _, _ = socket.recv_fds(connection, 8, len(_STREAMS))
    (size,) = struct.unpack("!Q", header)
    payload = b""
    while len(payload) < size:
        chunk = connection.recv(size - len(payload))
        if not chunk:
            os._exit(1)
        payload += chunk
    request = json.loads(payload)
    pid = os.fork()
    if pid == 0:
        connection.close()
        _run(request, fds)
        return
    for fd in fds:
        os.close(fd)
    connection.sendall(json.dumps({"pid": pid}).encode() + b"\n")
    runner = os.pidfd_open(pid)
    while True:
        readable, _, _ = select.select([connection, runner], [], [])
        if runner in readable:
            break
        if not connection.recv(64):  # the client is gone: so is its run
            os.kill(pid, signal.SIGKILL)
            break
    _, status = os.waitpid(pid, 0)
    try:
        connection.sendall(f"{os.waitstatus_to_exitcode(status)}\n".encode())
    except OSError:
        pass
    os._exit(0)


def _run(request: dict, fds: list[int]) -> None:
    """Become ``snakemake ARGS`` as the console script starts it; exits by SystemExit."""
    for target, fd in zip(_STREAMS, fds, strict=True):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    argv = request["argv"]
    # the console script's sys.path: its own directory, then PYTHONPATH, then the rest
    extra = [p for p in request["env"].get("PYTHONPATH", "").split(os.pathsep) if p]
    sys.path[:1] = [os.path.dirname(argv[0]), *extra]
    sys.argv = list(argv)
    import snakemake.workflow
    from snakemake.cli import main

    # the one value Snakemake takes from its process at import time (searched for: a class
    # attribute, the cwd of the import; Snakemake logs it as the run directory)
    snakemake.workflow.Workflow._rundir = str(Path.cwd().absolute())
    main()


if __name__ == "__main__":
    serve(sys.argv[1])
