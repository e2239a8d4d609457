"""A fork server for the tests of evalnoise.runner.fork_server: each trial (a forked child)
prints what it sees as one JSON line on stdout, logs its seed on stderr, then does what
``PROBE_MODE`` says: ``ok`` (exit 0), ``crash`` (SIGSEGV), ``sleep`` (60 s), ``kill-server``
(SIGKILL its server, then sleep). ``PROBE_PRELOAD=fail`` makes the preload raise;
``PROBE_SERVER=exit`` makes the server exit before it is ready. Standard library only."""

from __future__ import annotations

import json
import os
import random
import signal
import sys
import time

sys.path.insert(
    0,
    os.path.join(os.path.dirname(os.path.abspath(__file__)), *[os.pardir] * 4, "agents", "common"),
)

import fork_server

PRELOADED = {"done": False, "server_pid": None}


def preload() -> None:
    if os.environ.get("PROBE_PRELOAD") == "fail":
        raise ImportError("the probe's preload failed on purpose")
    PRELOADED.update(done=True, server_pid=os.getpid())


def run() -> int:
    mode = os.environ.get("PROBE_MODE", "ok")
    seen = {
        "seed": os.environ.get("EVALNOISE_SEED"),
        "server_variable": os.environ.get("EVALNOISE_FORK_SERVER"),
        "pid": os.getpid(),
        "ppid": os.getppid(),
        "pgid": os.getpgid(0),
        "random": random.random(),
        "cwd": os.getcwd(),
        "home": os.environ.get("HOME"),
        "preloaded": PRELOADED,
    }
    print(json.dumps(seen), flush=True)
    print(f"probe log: seed {seen['seed']}", file=sys.stderr, flush=True)
    if mode == "crash":
        os.kill(os.getpid(), signal.SIGSEGV)
    elif mode == "sleep":
        time.sleep(60)
    elif mode == "kill-server":
        os.kill(os.getppid(), signal.SIGKILL)
        time.sleep(60)
    return 0


if __name__ == "__main__":
    if os.environ.get("PROBE_SERVER") == "exit":
        sys.exit(3)
    if fork_server.requested():
        sys.exit(fork_server.serve(preload, run))
    sys.exit(run())
