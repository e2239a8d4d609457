"""The judge jobs' model servers: started on first use, kept between jobs of one process only
while that changes no reply, never leased to two jobs at once, never a dead one, and alive
after the thread that started them ended."""

from __future__ import annotations

import os
import signal
import threading
import time

import pandas as pd
import pytest
from model_stack import needs_model

from evalnoise.models import ChatClient
from evalnoise.pipeline.model_servers import JUDGE_SERVERS, LazyServer, ServerPool
from evalnoise.pipeline.settings import model_server_spec
from evalnoise.pipeline.shards import score_shard

pytestmark = [needs_model, pytest.mark.slow]

SPEC = {"n_ctx": 512}


def _ask(server: LazyServer, prompt: str) -> str:
    client = ChatClient(
        server.base_url, server.model, connect=server.ensure, alive=server.alive, seed=7
    )
    return client.complete(prompt, temperature=0.8, max_tokens=12)


def test_a_kept_server_replies_as_a_fresh_one_and_is_leased_to_one_job_at_a_time(tmp_path):
    pool = ServerPool(keep=1)
    try:
        with pool.lease(SPEC, tmp_path / "a.log") as first:
            assert first.server is None  # nothing asked yet: nothing started
            fresh = _ask(first, "Name a colour.")
            _ask(first, "What is 12 + 30? Answer with the number only.")
            pid = first.server.pid
        with pool.lease(SPEC, tmp_path / "b.log") as again:
            assert again is first and again.server.pid == pid  # kept, not started again
            # at temperature 0.8 with a seed: the same reply after other prompts
            assert _ask(again, "Name a colour.") == fresh
            with pool.lease(SPEC, tmp_path / "c.log") as other:
                assert other is not again  # a job running now never shares its server
                assert other.server is None
        assert again.starts == 1 and again.alive()
        assert not (tmp_path / "b.log").exists()  # the kept server logs where it started
    finally:
        pool.stop()
    assert not first.alive()


def test_at_most_keep_servers_stay_and_an_unstarted_or_other_batch_one_never(tmp_path):
    pool = ServerPool(keep=1)
    try:
        with pool.lease(SPEC, tmp_path / "a.log") as a, pool.lease(SPEC, tmp_path / "b.log") as b:
            a.ensure()
            b.ensure()
        assert [a.alive(), b.alive()].count(True) == 1  # one kept, the other stopped
        pool.stop()
        assert not a.alive() and not b.alive()
        with pool.lease(SPEC) as unstarted:
            pass
        assert unstarted.server is None and not os.path.exists(unstarted.config.python)
        with pool.lease(SPEC) as next_one:
            assert next_one is not unstarted  # an unstarted server is not kept either
        # a batch of 2 cannot be split into pieces of two or more: not history-free
        batched = {**SPEC, "n_ubatch": 2}
        with pool.lease(batched, tmp_path / "c.log") as c:
            c.ensure()
        assert not c.alive()  # its replies would depend on what it served before
    finally:
        pool.stop()


def test_a_server_that_died_is_never_leased_again(tmp_path):
    pool = ServerPool(keep=2)
    try:
        with pool.lease(SPEC, tmp_path / "a.log") as first:
            first.ensure()
        os.kill(first.server.pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while first.alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        with pool.lease(SPEC, tmp_path / "b.log") as second:
            assert second is not first
            assert _ask(second, "Say yes.")  # a new server, on its own port
    finally:
        pool.stop()


def test_a_server_outlives_the_thread_that_asked_for_it(tmp_path):
    """The parent-death signal follows the forking thread: servers are started from one
    thread that lives as long as the process, not from the job's."""
    server = LazyServer(SPEC, tmp_path / "server.log")
    try:
        thread = threading.Thread(target=server.ensure)
        thread.start()
        thread.join()
        time.sleep(1.0)  # a SIGKILL on the thread's end would have landed by now
        assert server.alive()
        assert _ask(server, "Say yes.")
    finally:
        server.stop()


def test_a_judge_job_starts_a_server_only_for_a_verdict_not_in_its_cache(tmp_path, default_config):
    trials = pd.DataFrame(
        {
            "agent": "chat",
            "resource_profile": "3x",
            "task_id": "a",
            "trial": [0, 1],
            "attempt": 1,
            "status": "ok",
            "prediction": ["The answer is 4.", "It is 5."],
        }
    )
    tasks = pd.DataFrame({"task_id": ["a"], "question": ["What is 2 + 2?"], "answer": ["4"]})
    trials.to_parquet(tmp_path / "trials.parquet")
    tasks.to_parquet(tmp_path / "tasks.parquet")
    scorer = {**default_config["scorer"], "name": "judge"}
    cache = tmp_path / "judge.sqlite"

    def judge_job(name: str):
        return score_shard(
            trials_path=tmp_path / "trials.parquet",
            tasks_path=tmp_path / "tasks.parquet",
            scorer=scorer,
            output=tmp_path / f"{name}.parquet",
            server=model_server_spec(default_config, "judge"),
            server_log=tmp_path / f"{name}.server",
            judge_cache=cache,
        )

    JUDGE_SERVERS.stop()
    try:
        first = judge_job("first")
        assert first.column("judge_calls").to_pylist() == [1, 1]
        (kept,) = JUDGE_SERVERS.kept()  # started for the first job, kept after it
        assert kept.config.log_path == str(tmp_path / "first.server")
        JUDGE_SERVERS.stop()
        again = judge_job("again")  # every verdict in the cache: no server at all
        assert JUDGE_SERVERS.kept() == [] and not (tmp_path / "again.server").exists()
        assert again.column("judge_cached").to_pylist() == [1, 1]
        assert again.column("score").to_pylist() == first.column("score").to_pylist()
    finally:
        JUDGE_SERVERS.stop()
