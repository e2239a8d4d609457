"""The process a pipeline job runs in: its log, where it imports evalnoise from, and the
light jobs that run inside Snakemake's own process.

A rule's script runs either as Snakemake's ``script:`` runs it (a fresh Python process that
imports pandas and the package before any work) or, for the rules whose work is a
read, a computation and a write (sampling, analysis, report, manifest), inside Snakemake's
process through :func:`run_script` from a ``run:`` block. With ``force-use-threads``
(profiles/default) Snakemake runs ``run:`` jobs in its worker threads, so those jobs pay no
interpreter and no imports (``benchmarks/results/pipeline-a10-inprocess-2026-11-26.md``). Without it
Snakemake spawns a ``snakemake`` process per ``run:`` job, which is correct but slower.
"""

from __future__ import annotations

import builtins
import io
import logging
import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from types import SimpleNamespace
from typing import Any

__all__ = ["JobFailed", "export_checkout", "job_console", "log_to", "run_script"]

_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
#: the in-process job of the current thread, if any (set by :func:`run_script`)
_current = threading.local()


class JobFailed(RuntimeError):
    """A rule's script ended with a non-zero ``SystemExit`` inside Snakemake's process
    (an exception, not an exit: Snakemake's worker thread must report it, not die of it)."""


def log_to(path: str | os.PathLike[str]) -> logging.Logger:
    """Send the ``logging`` records and this process's stdout/stderr (file descriptors 1 and
    2, so child processes too) to ``path``, appending; return the ``evalnoise`` logger.

    Inside an in-process job (:func:`run_script`) the job's log is already open and only
    this thread's records go to it; the process's descriptors, shared with Snakemake and the
    other jobs, are left alone."""
    job = getattr(_current, "job", None)
    if job is not None:
        return logging.getLogger("evalnoise")
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    sys.stdout.flush()
    sys.stderr.flush()
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, force=True, format=_FORMAT)
    return logging.getLogger("evalnoise")


def job_console() -> Any:
    """A text stream to the terminal Snakemake writes to, for a message the user must see
    besides the job's log: Snakemake's own stderr in-process, else a duplicate of fd 2 taken
    before :func:`log_to` points fd 2 at the log."""
    if getattr(_current, "job", None) is not None:
        return sys.stderr
    return os.fdopen(os.dup(2), "w")


class _ThreadFilter(logging.Filter):
    def __init__(self, thread: int) -> None:
        super().__init__()
        self.thread = thread

    def filter(self, record: logging.LogRecord) -> bool:
        return record.thread == self.thread


@contextmanager
def _job_log(path: str | os.PathLike[str]) -> Iterator[logging.Logger]:
    """The records this thread logs, at INFO and above, appended to ``path``."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    handler = logging.FileHandler(path, mode="a", encoding="utf-8")
    handler.setFormatter(logging.Formatter(_FORMAT))
    handler.setLevel(logging.INFO)
    handler.addFilter(_ThreadFilter(threading.get_ident()))
    package = logging.getLogger("evalnoise")
    if package.level == logging.NOTSET or package.level > logging.INFO:
        package.setLevel(logging.INFO)
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield package
    finally:
        root.removeHandler(handler)
        handler.close()


def run_script(
    script: str | os.PathLike[str],
    *,
    input: Any,
    output: Any,
    params: Any,
    wildcards: Any,
    log: Any,
    name: str = "",
    threads: int = 1,
    resources: Any = None,
    config: Any = None,
) -> None:
    """Run a rule's script in this process, as Snakemake's ``script:`` would in its own.

    The script sees the same ``snakemake`` object (input, output, params, wildcards, log,
    rule (``name``), threads, resources, config) and logs to the job's log. A non-zero
    ``SystemExit`` becomes :class:`JobFailed`; any exception is written to the log with its
    traceback and raised, so Snakemake marks the job failed and removes its outputs."""
    snakemake = SimpleNamespace(
        input=input,
        output=output,
        params=params,
        wildcards=wildcards,
        log=log,
        rule=name,
        threads=threads,
        resources=resources,
        config=config if config is not None else {},
    )
    path = os.fspath(script)
    with _job_log(log[0]) as logger:
        _current.job = snakemake
        logger.info("in-process job %s started", name or os.path.basename(path))
        start, cpu = time.perf_counter(), time.thread_time()
        try:
            _run_as_main(path, snakemake)
        except SystemExit as stop:
            if stop.code not in (None, 0):
                logger.error("%s exited with %s", os.path.basename(path), stop.code)
                raise JobFailed(
                    f"{os.path.basename(path)} exited with {stop.code} (log: {log[0]})"
                ) from None
        except BaseException:
            logger.exception("%s failed", os.path.basename(path))
            raise
        finally:
            _current.job = None
        # read back by benchmarks/bench_analysis.py (an in-process job has no process to time)
        logger.info(
            "in-process job %s done: %.3f s wall, %.3f s CPU in this thread",
            name or os.path.basename(path),
            time.perf_counter() - start,
            time.thread_time() - cpu,
        )


def _run_as_main(path: str, snakemake: SimpleNamespace) -> None:
    """Execute the script at ``path`` as ``__main__`` in a namespace of its own holding
    ``snakemake``.

    Not ``runpy.run_path(..., run_name="__main__")``: that sets ``sys.argv[0]`` and
    ``sys.modules["__main__"]`` for the script and puts back what it found, which is not
    safe for jobs that overlap in Snakemake's worker threads (a job that ends while another
    runs leaves that job's script as the process's argv[0] and main module;
    tests/pipeline/test_jobs.py). Nothing process-wide is changed here."""
    with io.open_code(path) as fh:
        code = compile(fh.read(), path, "exec")
    namespace = {
        "__name__": "__main__",
        "__file__": path,
        "__cached__": None,
        "__doc__": None,
        "__loader__": None,
        "__package__": None,
        "__spec__": None,
        "__builtins__": builtins,
        "snakemake": snakemake,
    }
    exec(code, namespace)


def export_checkout(basedir: str | os.PathLike[str]) -> bool:
    """Put ``<basedir>/src`` first on ``PYTHONPATH`` (inherited by every job) when it holds
    evalnoise, so jobs import this checkout also inside an environment that Snakemake made
    (``--software-deployment-method conda``). Returns whether it did."""
    src = os.path.join(os.fspath(basedir), "src")
    if not os.path.isdir(os.path.join(src, "evalnoise")):
        return False
    rest = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and p != src]
    os.environ["PYTHONPATH"] = os.pathsep.join([src, *rest])
    return True
