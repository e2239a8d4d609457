"""A run_trials job as typed records: read from the rule's params, every field checked."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import given
from hypothesis import strategies as st
from snakemake.iocontainers import Params

from evalnoise.pipeline.reruns import (
    add_judge_rerun,
    add_verifier_rerun,
    judge_reruns,
    verifier_reruns,
)
from evalnoise.pipeline.run_plan import RunPlan
from evalnoise.pipeline.shard_job import ShardFiles, ShardJob, ShardJobError

#: the params of one run_trials job, as RunPlan makes them (rules/trials.smk), including the
#: params that are only Snakemake's rerun triggers
PARAMS = {
    "agent": {"name": "chat", "command": None, "env": {"AGENT_TEMPERATURE": 0.8}},
    "resource_profile": {"name": "3x", "memory_limit_factor": 3.0},
    "trials": [2, 3],
    "rows": [0, 5],
    "run_seed": 0,
    "infra_policy": {"mode": "as_incorrect"},
    "backend": "docker",
    "journal": "results/trials/chat/3x/journals/t0002-c0000.jsonl",
    "task_rows": "c6d38425ad05569b",
    "server": {"n_ctx": 512},
    "reward_key": None,
    "unverified_reruns": 0,
    "code_version": "48c894778d8d5212",
}


def test_a_job_reads_the_same_from_snakemakes_params_and_from_a_mapping():
    as_snakemake = ShardJob.from_params(
        Params(fromdict=PARAMS), tasks_path="results/tasks.parquet", concurrency=2
    )
    as_mapping = ShardJob.from_params(PARAMS, tasks_path="results/tasks.parquet", concurrency=2)
    assert as_snakemake == as_mapping
    assert as_mapping.rows == (0, 5) and as_mapping.trials == (2, 3)
    assert as_mapping.variant is None  # a run without variants has no such param
    assert as_mapping.server == {"n_ctx": 512} and as_mapping.concurrency == 2
    # plain JSON values, the params' own
    assert json.loads(json.dumps(as_mapping.to_dict()))["trials"] == [2, 3]
    files = ShardFiles.from_params(
        Params(fromdict=PARAMS),
        output="results/trials/chat/3x/t0002-0003/c0000-0005.parquet",
        log="results/logs/run_trials/chat/3x/t0002-0003-c0000-0005.log",
        image_info="results/trials/chat/image.json",
    )
    assert files.journal == PARAMS["journal"]
    assert files.server_log == "results/logs/run_trials/chat/3x/t0002-0003-c0000-0005.log.server"


def test_every_planned_shard_is_a_valid_job(default_config):
    """RunPlan's params of every shard (as rules/trials.smk hands them over) make a job."""
    run = RunPlan.from_config(default_config)
    shards = [s for a, r in run.plan.groups() for s in run.plan.shards(a, r)]
    assert shards
    for shard in shards:
        w = SimpleNamespace(**shard.wildcards)
        params = {
            "agent": run.agent_param(w),
            "resource_profile": run.resource_profile_param(w),
            "trials": run.trials_param(w),
            "rows": run.rows_param(w),
            "run_seed": default_config["run_seed"],
            "infra_policy": run.infra_policy_param(),
            "backend": default_config["backend"],
            "journal": run.journal_param(w),
            "server": run.agent_server(w),
            "reward_key": default_config["benchmark"]["reward"],
        }
        job = ShardJob.from_params(params, tasks_path="results/tasks.parquet")
        assert job.agent["name"] == shard.agent
        assert job.resource_profile["name"] == shard.resource_profile
        assert list(job.trials) == params["trials"] and list(job.rows) == params["rows"]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("rows", [3, 1]),
        ("rows", [0]),
        ("rows", "0-5"),
        ("rows", [-1, 2]),
        ("trials", []),
        ("trials", [0, "1"]),
        ("trials", [True]),
        ("agent", "chat"),
        ("agent", {"command": None}),
        ("resource_profile", {}),
        ("run_seed", "0"),
        ("run_seed", 1.5),
        ("infra_policy", {"retries": 2}),
        ("backend", "kubernetes"),
        ("server", "http://127.0.0.1:8080"),
        ("reward_key", 1),
        ("variant", ["p0"]),
        ("network", "as_declared"),
        ("network", {"mode": "offline"}),
    ],
)
def test_a_bad_field_is_named(field, value):
    with pytest.raises(ShardJobError, match=f"shard job: {field} must be"):
        ShardJob.from_params({**PARAMS, field: value}, tasks_path="results/tasks.parquet")


def test_the_network_choice_reaches_the_job(default_config, tmp_path):
    """benchmark.network and network_name of a harbor run become the job's network; other
    runs hand over none (the backend's default)."""
    job = ShardJob.from_params(
        {**PARAMS, "network": {"mode": "offline", "name": None}}, tasks_path="t.parquet"
    )
    assert job.network == {"mode": "offline", "name": None}
    assert ShardJob.from_params(PARAMS, tasks_path="t.parquet").network is None
    assert RunPlan.from_config(default_config).network_param is None  # generated benchmark
    examples = Path(__file__).resolve().parents[2] / "examples" / "harbor-tasks"
    harbor = {
        **default_config,
        "benchmark": {
            **default_config["benchmark"],
            "source": "harbor",
            "path": str(examples),
            "n": None,
            "network_name": "lab-net",
        },
    }
    assert RunPlan.from_config(harbor).network_param == {"mode": "as_declared", "name": "lab-net"}
    rejecting = {**harbor, "benchmark": {**harbor["benchmark"], "network": "reject"}}
    assert RunPlan.from_config(rejecting).network_param is None


def test_a_missing_param_and_bad_files_are_named():
    params = {k: v for k, v in PARAMS.items() if k != "run_seed"}
    with pytest.raises(ShardJobError, match="params lack 'run_seed'"):
        ShardJob.from_params(params, tasks_path="t.parquet")
    with pytest.raises(ShardJobError, match="concurrency must be an integer >= 1"):
        ShardJob.from_params(PARAMS, tasks_path="t.parquet", concurrency=0)
    with pytest.raises(ShardJobError, match="tasks_path must be a path"):
        ShardJob.from_params(PARAMS, tasks_path="")
    with pytest.raises(ShardJobError, match="journal must be a path"):
        ShardFiles(journal=None, output="shard.parquet")
    with pytest.raises(ShardJobError, match="image_info must be a path or None"):
        ShardFiles(journal="j.jsonl", output="shard.parquet", image_info=3)


@given(
    first=st.integers(0, 10_000),
    width=st.integers(0, 100),
    trials=st.lists(st.integers(0, 1_000), min_size=1, max_size=20),
    seed=st.integers(-(2**63), 2**63 - 1),
    concurrency=st.integers(1, 64),
)
def test_a_job_is_its_plain_form(first, width, trials, seed, concurrency):
    """A valid job survives its JSON form unchanged (what a param could carry)."""
    job = ShardJob.from_params(
        {**PARAMS, "rows": [first, first + width], "trials": trials, "run_seed": seed},
        tasks_path="results/tasks.parquet",
        concurrency=concurrency,
    )
    assert ShardJob(**json.loads(json.dumps(job.to_dict()))) == job


def test_the_rerun_counters_count_up_beside_the_shard(tmp_path):
    shard = tmp_path / "c0000-0005.parquet"
    assert verifier_reruns(shard) == judge_reruns(shard) == 0
    assert add_verifier_rerun(shard) == 1 and add_verifier_rerun(shard) == 2
    assert verifier_reruns(shard) == 2 and judge_reruns(shard) == 0
    assert add_judge_rerun(shard) == 1 and judge_reruns(shard) == 1
    assert (tmp_path / "c0000-0005.parquet.unverified-reruns").read_text() == "2\n"
    (tmp_path / "c0000-0005.parquet.unjudged-reruns").write_text("garbled")
    assert judge_reruns(shard) == 0  # unreadable: as if none
