"""Faults a pipeline job cannot cure by running again at once, said in one line.

A dead Docker engine, a full disk or a model server that will not start fail a job the same
way on every attempt of Snakemake's ``retries``. Before, each attempt failed within seconds
and printed a ~100-line traceback, three times. Here:

- :func:`fault_of` classifies the exception into a :class:`Fault`: what failed, where, and
  what to do — the one line the job prints on the console and in its log (no traceback);
  an exception it does not know is not a fault of the environment and keeps its traceback.
- :func:`job` runs a job's body under that rule and leaves a *marker* beside the job's log
  when it fails by a fault (removed once the job succeeds). A retried attempt finds the
  marker and first asks whether the cause has cleared: the engine answers again (one ping,
  or waiting up to ``EVALNOISE_ENGINE_WAIT_S`` seconds when that is set), the disk has more
  room than at the failure. If it has, the job runs. If not, the attempt ends at once: when
  the marker is fresh (younger than :data:`RETRY_WINDOW_S`: Snakemake retrying the attempt
  that just failed) it says so in the job's log only, so the console carries the fault's
  line once per job however many retries the profile allows; an older marker (an earlier
  run's) gives the line again, ``(again: the cause has not gone away)``.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TextIO

__all__ = ["Fault", "engine_probe", "fault_of", "job"]

#: errno values that mean the disk (or a quota) is full
_DISK_FULL = {errno.ENOSPC, errno.EDQUOT}
#: how long a retried attempt waits for the engine to answer again (0: a single ping)
ENGINE_WAIT_S = float(os.environ.get("EVALNOISE_ENGINE_WAIT_S", "0"))
#: a fault marker younger than this was left by the attempt Snakemake is now retrying
RETRY_WINDOW_S = 300.0


@dataclass(frozen=True)
class Fault:
    """A fault of the job's environment: ``kind`` (``engine``, ``disk_full``,
    ``model_server``, ``busy``), what failed, what to do, and for a full disk the
    directory and its free bytes at the failure."""

    kind: str
    what: str
    todo: str
    path: str | None = None
    free_bytes: int | None = None

    def line(self, job: str) -> str:
        """``<job>: <what>; <what to do>`` on one line."""
        return " ".join(f"{job}: {self.what}; {self.todo}".split())


def _free(path: str | os.PathLike[str]) -> int | None:
    probe = Path(path)
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    try:
        return shutil.disk_usage(probe).free
    except OSError:
        return None


def fault_of(exc: BaseException, where: str | os.PathLike[str] | None = None) -> Fault | None:
    """The :class:`Fault` an exception stands for, or None (a bug or bad input: keep its
    traceback). ``where``: the job's output, named when a full disk's error names no file
    (a write to an open file does not)."""
    from evalnoise.errors import EngineUnavailable

    if isinstance(exc, EngineUnavailable):
        return Fault(
            "engine",
            f"{exc}",
            "start it (tools/docker-engine.sh) and rerun `evalnoise run`: finished trials "
            "are kept in the journal and only the rest run",
        )
    if isinstance(exc, BlockingIOError) and "another process is running this shard" in str(exc):
        return Fault("busy", str(exc), "wait for that run to finish, or stop it")
    if isinstance(exc, OSError) and exc.errno in _DISK_FULL:
        target = exc.filename or where or os.getcwd()
        directory = os.path.dirname(os.path.abspath(os.fspath(target)))
        return Fault(
            "disk_full",
            f"the disk is full ({exc.strerror}) writing "
            + (f"{exc.filename}" if exc.filename else f"into {directory}"),
            f"free space on the disk holding {directory} and rerun `evalnoise run`: "
            "journals keep every finished trial",
            path=directory,
            free_bytes=_free(directory),
        )
    from evalnoise.models.server import ServerError

    if isinstance(exc, ServerError):
        return Fault(
            "model_server",
            f"the model server did not start: {' '.join(str(exc).split())[:400]}",
            "see the server log next to this job's log (.server), check "
            "tools/install-model.sh, then rerun",
        )
    return None


def _marker(log_path: str | os.PathLike[str]) -> Path:
    """Where a job's fault marker lives: in /dev/shm when it exists (a full disk could not
    take the marker of its own fault), keyed by the log's absolute path."""
    import hashlib

    key = hashlib.sha256(os.path.abspath(os.fspath(log_path)).encode()).hexdigest()[:24]
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        directory = shm / "evalnoise-faults"
        with contextlib.suppress(OSError):
            directory.mkdir(exist_ok=True)
            return directory / f"{key}.json"
    return Path(f"{os.fspath(log_path)}.fault")


def _write_marker(marker: Path, record: dict[str, Any]) -> None:
    with contextlib.suppress(OSError):
        marker.write_text(json.dumps(record) + "\n", encoding="utf-8")


def engine_probe(backend: str) -> Callable[[], None] | None:
    """For the ``docker`` backend, a function that raises when the engine does not answer."""
    if backend != "docker":
        return None

    def check() -> None:
        from evalnoise.runner.docker_backend import check_engine

        problem = check_engine()
        if problem is not None:
            raise problem

    return check


def _cleared(fault: dict[str, Any], engine_check: Callable[[], Any] | None) -> bool:
    """Whether the cause of an earlier attempt's fault is gone (waiting for the engine)."""
    if fault.get("kind") == "engine" and engine_check is not None:
        deadline = time.monotonic() + ENGINE_WAIT_S
        while True:
            try:
                engine_check()
                return True
            except Exception:  # the engine does not answer yet
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                time.sleep(min(1.0, left))
    if fault.get("kind") == "disk_full" and fault.get("path"):
        before, now = fault.get("free_bytes"), _free(fault["path"])
        return before is None or now is None or now > before + (1 << 20)
    return True


def job(
    body: Callable[[], Any],
    *,
    name: str,
    log_path: str | os.PathLike[str],
    console: TextIO,
    log: logging.Logger,
    engine_check: Callable[[], Any] | None = None,
    output: str | os.PathLike[str] | None = None,
) -> Any:
    """Run ``body()``; on a :class:`Fault` print its one line (console and log) and exit 1.

    ``name`` says which job (``run_trials chat/3x t0000-0003 c000``), ``log_path`` is the
    job's log (the marker goes beside it), ``engine_check`` raises when the engine does not
    answer (a retried attempt after an engine fault waits for it; module docstring),
    ``output`` the job's output (where a full disk is, when its error names no file).
    """
    marker = _marker(log_path)
    earlier = None
    with contextlib.suppress(OSError, ValueError):
        earlier = json.loads(marker.read_text(encoding="utf-8"))
    if isinstance(earlier, dict) and not _cleared(earlier, engine_check):
        at = earlier.pop("at", None)
        line = Fault(**earlier).line(name)
        if isinstance(at, int | float) and 0 <= time.time() - at < RETRY_WINDOW_S:
            # the retry of the attempt that just failed: the console has its line already
            log.error("%s (retried attempt: the cause has not gone away; ending it)", line)
            sys.exit(1)
        line += " (again: the cause has not gone away)"
        log.error("%s", line)
        print(line, file=console, flush=True)
        _write_marker(marker, {**earlier, "at": time.time()})
        sys.exit(1)
    try:
        result = body()
    except Exception as exc:
        fault = fault_of(exc, output)
        if fault is None:
            raise
        line = fault.line(name)
        log.error("%s", line)
        print(line, file=console, flush=True)
        _write_marker(marker, {**asdict(fault), "at": time.time()})
        sys.exit(1)
    with contextlib.suppress(OSError):
        marker.unlink()
    return result
