"""The managed model servers of a job: started on first use, dying with their process, and —
for the judge jobs that run inside one process — kept between jobs.

A :class:`LazyServer` knows its URL at once (a free loopback port is chosen up front) and
starts :class:`evalnoise.models.LlamaServer` when it is first needed; a shard or a judge job
whose work is all journaled or cached starts none. Every server runs behind a watchdog
(``_WATCHDOG``): the kernel kills it when the process that started it dies, even by
SIGKILL, which runs no cleanup.

The judge jobs of a Snakemake run execute inside Snakemake's process (``in_process``), one
after another or two at a time. Starting a server (the interpreter, llama-cpp-python and
pydantic, the model: :mod:`evalnoise.models.serve`) costs about as much as judging a small
shard. :data:`JUDGE_SERVERS` keeps a server a
finished job leased, alive and idle, for the next judge job with the same settings, instead
of stopping it. That changes no reply: a seeded request's reply does not depend on what
the server served before (:attr:`evalnoise.models.ServerConfig.history_free`: prompts reuse
the cache only as far as a fresh evaluation would compute it the same); a server whose
replies would is never kept. Idle servers hold memory, not CPU; at most
:attr:`ServerPool.keep` of them are kept, and they stop with the process (``atexit``, and
the watchdog).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import logging
import os
import queue
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any

__all__ = ["JUDGE_SERVERS", "LazyServer", "ServerPool"]

log = logging.getLogger(__name__)

#: Runs the model server in place of the interpreter: first asks the kernel to SIGKILL it when
#: the process that started it dies (Linux ``PR_SET_PDEATHSIG``), so a job killed with
#: SIGKILL — which runs no cleanup — cannot leave its server running; then becomes Python.
_WATCHDOG = """#!{python}
import ctypes, os, signal, sys
try:
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
except (AttributeError, OSError):
    pass  # not Linux: the job's own cleanup still stops the server
if os.getppid() != int(os.environ.get("EVALNOISE_SERVER_PARENT", os.getppid())):
    os._exit(1)  # the job died before the watchdog was armed
os.execv({python!r}, [{python!r}, *sys.argv[1:]])
"""


def _server_config(spec: Mapping[str, Any], log_path: Any, **extra: Any) -> Any:
    """A :class:`evalnoise.models.ServerConfig` whose server dies with this process (its
    ``python`` is a watchdog script: remove that file with :func:`_drop_wrapper`)."""
    from evalnoise.models import ServerConfig

    python = str(spec.get("python") or sys.executable)
    fd, wrapper = tempfile.mkstemp(prefix="evalnoise-llama-", suffix=".py")
    with os.fdopen(fd, "w") as handle:
        handle.write(_WATCHDOG.format(python=python))
    os.chmod(wrapper, 0o755)
    os.environ["EVALNOISE_SERVER_PARENT"] = str(os.getpid())
    values = {
        **dict(spec),
        **extra,
        "python": wrapper,
        "log_path": str(log_path) if log_path else None,
    }
    return ServerConfig(**values)


def _drop_wrapper(config: Any) -> None:
    with contextlib.suppress(OSError):
        os.unlink(config.python)


class _Starter:
    """One thread that lives as long as the process and starts every managed server.

    The kernel's parent-death signal follows the *thread* that forked the child, not the
    process: a server started from a job's thread would be killed when that thread ends,
    while a kept server must outlive the job that started it."""

    def __init__(self) -> None:
        self._calls: queue.SimpleQueue[tuple[Callable[[], Any], concurrent.futures.Future]] = (
            queue.SimpleQueue()
        )
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def run(self, call: Callable[[], Any]) -> Any:
        """``call()`` on the starter thread; its result, or its exception re-raised here."""
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._serve, name="evalnoise-server-starter", daemon=True
                )
                self._thread.start()
        done: concurrent.futures.Future = concurrent.futures.Future()
        self._calls.put((call, done))
        return done.result()

    def _serve(self) -> None:
        while True:
            call, done = self._calls.get()
            try:
                done.set_result(call())
            except BaseException as exc:
                done.set_exception(exc)


_STARTER = _Starter()


class LazyServer:
    """A managed model server whose URL is known at once but which starts on first use.

    The port is chosen up front (:func:`evalnoise.models.server.free_port`) so the agent's
    environment can name the URL before any trial runs; :meth:`ensure` starts the server
    (once, thread-safe); :meth:`stop` stops it if it was started. Should this process be
    killed outright, the kernel kills the server too (see ``_WATCHDOG``).
    """

    def __init__(self, spec: Mapping[str, Any], log_path: str | os.PathLike[str] | None = None):
        from evalnoise.models.server import free_port

        self.config = _server_config(spec, log_path, port=free_port())
        self.base_url = f"http://{self.config.host}:{self.config.port}/v1"
        self.model = self.config.model_alias
        self.server: Any = None
        self.starts = 0
        self._lock = threading.Lock()

    def ensure(self) -> None:
        """Start the server unless it runs already (on the process's starter thread)."""
        with self._lock:
            if self.server is None:
                from evalnoise.models import LlamaServer

                server = LlamaServer(self.config)
                try:
                    _STARTER.run(server.start)
                finally:
                    _drop_wrapper(self.config)
                self.server = server
                self.starts += 1
                log.info(
                    "model server %s (pid %s) serving %s", self.base_url, server.pid, server.model
                )

    def alive(self) -> bool:
        """Whether the started server's process still runs (False before it started)."""
        server = self.server
        return server is not None and server.alive()

    def stop(self) -> None:
        with self._lock:
            _drop_wrapper(self.config)
            if self.server is not None:
                self.server.stop()
                self.server = None
                log.info("model server stopped")


class ServerPool:
    """Started servers kept between the jobs of one process, one job at a time each.

    :meth:`lease` hands a job an idle server started with the same settings, else a new
    :class:`LazyServer`; when the job ends, a server that was started, still runs and
    evaluates prompts one token at a time goes back to the pool, while at most ``keep``
    servers are idle; any other is stopped. Two jobs at once lease two servers, so a
    server never serves two jobs at the same time."""

    def __init__(self, keep: int = 2) -> None:
        self.keep = keep
        self._idle: dict[str, list[LazyServer]] = {}
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def lease(
        self, spec: Mapping[str, Any], log_path: str | os.PathLike[str] | None = None
    ) -> Iterator[LazyServer]:
        """A server of ``spec`` (:func:`evalnoise.pipeline.settings.model_server_spec`) for
        the ``with`` block; a new one writes its log to ``log_path``."""
        key = json.dumps(dict(spec), sort_keys=True, default=str)
        server = self._take(key)
        if server is None:
            server = LazyServer(spec, log_path)
        else:
            log.info(
                "model server %s (pid %s) serving %s, kept from an earlier job (its log: %s)",
                server.base_url,
                server.server.pid,
                server.model,
                server.config.log_path,
            )
        try:
            yield server
        finally:
            self._give_back(key, server)

    def _take(self, key: str) -> LazyServer | None:
        with self._lock:
            idle = self._idle.get(key, [])
            while idle:
                server = idle.pop()
                if server.alive():
                    return server
                server.stop()
        return None

    def _give_back(self, key: str, server: LazyServer) -> None:
        with self._lock:
            kept = sum(len(idle) for idle in self._idle.values())
            if server.alive() and server.config.history_free and kept < self.keep:
                self._idle.setdefault(key, []).append(server)
                return
        server.stop()

    def kept(self) -> list[LazyServer]:
        """The idle servers kept for the next job."""
        with self._lock:
            return [server for idle in self._idle.values() for server in idle]

    def stop(self) -> None:
        """Stop every idle server."""
        with self._lock:
            idle, self._idle = self._idle, {}
        for servers in idle.values():
            for server in servers:
                server.stop()


#: The judge jobs' servers of this process (:func:`evalnoise.pipeline.shards.score_shard`).
JUDGE_SERVERS = ServerPool()
