"""A shard's work per trial does not grow with its size (issue 21, item 9).

The shard used to hand its thread pool every attempt up front and then, after each
completion, call ``concurrent.futures.wait`` on all of them still pending: work proportional
to the attempts left, per trial, so a 50,000-trial shard ran far slower per trial than one of
3,000 until most of it was done. Now it keeps at most two attempts per worker in the pool and
hands over the next as one finishes, in the same start order, retries still queued behind
every first attempt. These tests count (never time) what the shard hands the pool and the
waits, through a stand-in for the shard module's ``concurrent.futures`` that delegates to
the real one.
"""

from __future__ import annotations

import concurrent.futures as cf
import threading
from collections import Counter

import pytest
from runner_helpers import Recording, local_probe_agent, task_row, tasks_frame

import evalnoise.runner.shard as shard_module
from evalnoise.runner import run_shard
from evalnoise.runner.seeds import order_seed, trial_order

AGENT = "probe-local"


class CountingFutures:
    """``concurrent.futures`` as the shard sees it, counting what passes through: the
    futures submitted and not yet finished at each submit, and the futures handed to each
    ``wait``."""

    FIRST_COMPLETED = cf.FIRST_COMPLETED
    Future = cf.Future

    def __init__(self) -> None:
        self.outstanding_at_submit: list[int] = []
        self.waited: list[int] = []
        self._outstanding = 0
        self._lock = threading.Lock()
        counter = self

        class Pool(cf.ThreadPoolExecutor):
            def submit(self, fn, /, *args, **kwargs):
                with counter._lock:  # counted before it can finish, so never below zero
                    counter._outstanding += 1
                    counter.outstanding_at_submit.append(counter._outstanding)
                future = super().submit(fn, *args, **kwargs)
                future.add_done_callback(counter._finished)
                return future

        self.ThreadPoolExecutor = Pool

    def _finished(self, _future) -> None:
        with self._lock:
            self._outstanding -= 1

    def wait(self, fs, **kwargs):
        self.waited.append(len(fs))
        return cf.wait(fs, **kwargs)


def shard(tmp_path, backend, *, n_tasks, trials, concurrency=1, policy="as_incorrect"):
    tasks = tasks_frame([task_row(f"task-{i:03d}", "q") for i in range(n_tasks)])
    return run_shard(
        tasks,
        local_probe_agent(),
        "1x",
        list(trials),
        7,
        policy,
        backend,
        tmp_path / "j.jsonl",
        tmp_path / "out.parquet",
        concurrency=concurrency,
        progress=False,
    )


@pytest.mark.parametrize("concurrency", [1, 2, 4])
@pytest.mark.parametrize("n_tasks", [2, 20])
def test_the_pool_holds_at_most_two_attempts_per_worker_whatever_the_shards_size(
    tmp_path, monkeypatch, concurrency, n_tasks
):
    counting = CountingFutures()
    monkeypatch.setattr(shard_module, "cf", counting)
    backend = Recording()
    result = shard(tmp_path, backend, n_tasks=n_tasks, trials=range(20), concurrency=concurrency)
    n = n_tasks * 20
    assert (result.ran, result.rows, result.statuses) == (n, n, {"ok": n})
    assert len(set(backend.requests)) == n
    bound = 2 * concurrency
    assert len(counting.outstanding_at_submit) == n
    assert max(counting.outstanding_at_submit) <= bound
    # a wait's work is proportional to the futures it is handed: bounded per trial, the same
    # for 40 and 400 trials (it was the number of attempts still pending: 400 at the first)
    assert max(counting.waited) <= bound
    assert sum(counting.waited) <= bound * n


def test_retries_start_after_every_first_attempt_in_the_order_they_failed(tmp_path):
    pairs = [(f"task-{i:03d}", t) for i in range(4) for t in range(10)]
    expected = trial_order(order_seed(7), AGENT, "1x", pairs)
    failing = [expected[0], expected[5], expected[6], expected[7], expected[39]]
    backend = Recording(infra=set(failing))
    result = shard(tmp_path, backend, n_tasks=4, trials=range(10), policy="retry:2")
    assert (result.ran, result.rows) == (45, 45)
    # as when every attempt was submitted at once, the plan's order and then the retries;
    # the retries in the order their failed attempts ran (one worker), also those that end
    # together (they were queued in a set's order before)
    assert backend.requests == [(*key, 1) for key in expected] + [(*key, 2) for key in failing]


def test_many_workers_with_retries_run_every_attempt_exactly_once(tmp_path, monkeypatch):
    counting = CountingFutures()
    monkeypatch.setattr(shard_module, "cf", counting)
    pairs = [(f"task-{i:03d}", t) for i in range(12) for t in range(25)]
    expected = trial_order(order_seed(7), AGENT, "1x", pairs)
    failing = set(expected[::7])
    backend = Recording(infra=failing)
    result = shard(tmp_path, backend, n_tasks=12, trials=range(25), concurrency=3, policy="retry:2")
    want = [(*key, 1) for key in expected] + [(*key, 2) for key in sorted(failing)]
    assert sorted(backend.requests) == sorted(want)
    assert Counter(backend.requests).most_common(1)[0][1] == 1
    assert (result.ran, result.rows) == (len(want), len(want))
    assert result.statuses == {"ok": len(pairs), "timeout": len(failing)}
    assert max(counting.outstanding_at_submit) <= 6
    assert max(counting.waited) <= 6
