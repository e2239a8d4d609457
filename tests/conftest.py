"""Fixtures shared across test folders, and the CI guard.

``docker_engine``: a Docker SDK client of the running engine (tools/docker-engine.sh starts
one). ``llama_server``: one real llama-cpp-python server (SmolLM2-135M, n_threads=1) for the
whole session, used by the model, scorer and agent tests. ``requires_model_stack``: the
local model stack (tools/install-model.sh) is installed. Each goes through
:func:`model_stack.require`: without what it needs, a test skips — except in CI (``CI`` set),
where it fails.

**Order.** Test files start longest first (tests/file_order.py), so that the parallel
workers of tools/test.sh do not end waiting on a long file handed out last.

**No analytics.** ``DVC_NO_ANALYTICS=1`` for every process of the suite (below).

**One BLAS thread.** ``OPENBLAS_NUM_THREADS=1`` for every process of the suite (below).

**CI guard.** Under CI, a skipped test is reported as failed when it is marked ``docker`` or
its skip reason names the engine, the model stack, the browser or a cluster
(:func:`model_stack.names_a_requirement`); this also covers tests that call ``pytest.skip``
or ``importorskip`` directly instead of :func:`model_stack.require`.
"""

from __future__ import annotations

import os
import sys

import pytest
from file_order import CACHE_KEY, FileTimes, cached_seconds, costs, longest_first
from model_stack import MISSING, MODEL_STACK, in_ci, names_a_requirement, require

_FILE_SECONDS = pytest.StashKey[dict]()

# DVC reports usage to its analytics endpoint (a daemon it spawns) unless the repository's
# config says `core.analytics false` or this is set. The repository's .dvc/config says so,
# but a test's fresh repository runs `dvc init` before it has that config, and a `dvc init`
# spawned the daemon (seen in a process ledger of the suite): no test may send traffic
# outside 127.0.0.0/8. Set for this process and every process it starts.
os.environ["DVC_NO_ANALYTICS"] = "1"

# One OpenBLAS thread per process (set before numpy loads; inherited by the workers and every
# process they start): the suite runs 4 workers on 2 cores, where a second BLAS thread has no
# core to run on and its busy-waiting is billed as CPU. With one busy process beside it,
# test_attribution_variants.py took 12.5-17.4 s of CPU with OpenBLAS's default 2 threads and
# 5.2 s with 1; test_attribution_time_effects.py 23.8 s and 12.8 s (measured). An explicit
# setting in the environment wins.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

# pytest caches a test module with its asserts rewritten (__pycache__/*-pytest-*.pyc) only
# where bytecode is written, and these machines set PYTHONDONTWRITEBYTECODE: every worker
# then rewrote every test module it collects, each run (collecting the suite: 17.3 s of CPU
# uncached, 8.7 s cached; measured). This process and its workers write them (the test
# modules are imported after this file); the processes they start keep the environment's
# setting.
sys.dont_write_bytecode = False


def pytest_configure(config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):  # a pytest-xdist worker: the controller's reading
        config.stash[_FILE_SECONDS] = config.workerinput.get(CACHE_KEY, {})
    else:  # the controller (or the only process) reads the cache once, and records
        config.stash[_FILE_SECONDS] = cached_seconds(config)
        config.pluginmanager.register(FileTimes(), "evalnoise-file-times")


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node) -> None:
    """Every pytest-xdist worker orders the files from the controller's one reading of the
    cache: pytest-xdist refuses to run when the workers' collections differ, even in order
    (another run in this checkout may rewrite the cache while the workers collect)."""
    node.workerinput[CACHE_KEY] = node.config.stash[_FILE_SECONDS]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The longest files first (tests/file_order.py)."""
    items[:] = longest_first(items, costs(items, config.stash[_FILE_SECONDS]))


@pytest.fixture(scope="session")
def requires_model_stack() -> None:
    require(MODEL_STACK, MISSING)


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory, requires_model_stack):
    """One managed server for the session (n_threads=1, log in a temp dir)."""
    from evalnoise.models import LlamaServer

    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    with LlamaServer(log_path=str(log)) as server:
        yield server


@pytest.fixture(scope="session")
def docker_engine():
    from evalnoise.runner.docker_backend import check_engine

    problem = check_engine()
    require(problem is None, f"no Docker engine answers: {problem}")
    import docker

    client = docker.from_env()
    yield client
    client.close()


def _skip_reason(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2])  # (path, line, "Skipped: reason")
    return str(longrepr)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """The CI guard (module docstring): a skip CI must not accept becomes a failure."""
    report = yield
    if report.skipped and in_ci() and not hasattr(report, "wasxfail"):
        reason = _skip_reason(report)
        if item.get_closest_marker("docker") is not None or names_a_requirement(reason):
            report.outcome = "failed"
            report.longrepr = f"CI is set, so this test must not skip: {reason}"
    return report
