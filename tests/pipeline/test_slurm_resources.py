"""A run_trials job's cluster request, derived from its trials; the record of its jobs."""

from __future__ import annotations

import json
import re

import pytest
from pipeline_helpers import CLUSTER_WORKSPACES, copy_project, prepare_copy, run_tool

from evalnoise.pipeline.outputs import execution_record
from evalnoise.pipeline.slurm_resources import (
    MARGIN_S,
    RUNNER_OVERHEAD_MB,
    SERVER_OVERHEAD_MB,
    TRIAL_OVERHEAD_S,
    job_record_path,
    read_job_records,
    record_job,
    shard_job_resources,
)
from evalnoise.tasks.generated import LEVEL_RESOURCES

#: One generated task of each level: 1 CPU; 128, 128, 192 MB; 60, 90, 180 s.
LEVELS = [LEVEL_RESOURCES[level] for level in (1, 2, 3)]
THREE_X = {"name": "3x", "memory_limit_factor": 3.0, "cpu_limit_factor": 3.0}


def minutes(seconds: float) -> int:
    return -(-int(seconds) // 60) if seconds == int(seconds) else int(seconds // 60) + 1


def test_1x_two_at_once():
    request = shard_job_resources(LEVELS, "1x", trials=2, concurrency=2)
    assert (request.parallel, request.trials) == (2, 6)
    # the largest task's hard limit (192 MB) for each of 2 trials at once, + the runner
    assert request.mem_mb == 2 * 192 + RUNNER_OVERHEAD_MB
    assert request.cpus_per_task == 2
    # every trial at the largest time limit, 2 at a time, + the margin
    assert request.runtime == minutes((180 + TRIAL_OVERHEAD_S) * 6 / 2 + MARGIN_S)
    assert request.resources() == {
        "cpus_per_task": 2,
        "mem_mb": 2 * 192 + RUNNER_OVERHEAD_MB,
        "runtime": request.runtime,
    }


def test_the_profile_scales_memory_and_time():
    three = shard_job_resources(LEVELS, THREE_X, trials=2, concurrency=2)
    assert three.mem_mb == 2 * 3 * 192 + RUNNER_OVERHEAD_MB
    assert three.cpus_per_task == 2  # the CPU guarantee is the spec; the limit is a burst
    uncapped = shard_job_resources(LEVELS, "uncapped", trials=2, concurrency=2)
    assert uncapped.mem_mb == 2 * 192 + RUNNER_OVERHEAD_MB  # no limit: the guarantee
    slow = shard_job_resources(
        LEVELS, {"name": "slow", "time_limit_factor": 2.0}, trials=2, concurrency=2
    )
    assert slow.runtime == minutes((360 + TRIAL_OVERHEAD_S) * 6 / 2 + MARGIN_S)
    wide = shard_job_resources(
        [{"cpus": 0.5, "memory_mb": 100, "time_limit_s": 10}],
        {"name": "wide", "cpu_guarantee_factor": 1.5, "cpu_limit_factor": 3.0},
        trials=4,
        concurrency=3,
    )
    assert wide.cpus_per_task == 3  # ceil(0.5 × 1.5 × 3 at once) = ceil(2.25)


def test_attempts_concurrency_and_the_model_server():
    retry = shard_job_resources(
        LEVELS, "1x", trials=2, concurrency=2, infra_policy={"mode": "retry", "max_attempts": 3}
    )
    assert retry.runtime == minutes((180 + TRIAL_OVERHEAD_S) * 6 * 3 / 2 + MARGIN_S)
    assert shard_job_resources(LEVELS, "1x", trials=2, concurrency=2, infra_policy="retry:3") == (
        retry
    )
    served = shard_job_resources(LEVELS, "1x", trials=2, concurrency=2, served=True)
    assert served.mem_mb == 2 * 192 + RUNNER_OVERHEAD_MB + SERVER_OVERHEAD_MB
    # fewer trials than slots: the request follows the trials, not the threads
    one = shard_job_resources(LEVELS[:1], "1x", trials=1, concurrency=4)
    assert (one.parallel, one.cpus_per_task, one.mem_mb) == (1, 1, 128 + RUNNER_OVERHEAD_MB)
    assert one.runtime == minutes(60 + TRIAL_OVERHEAD_S + MARGIN_S)


def test_a_tasks_frame_works_like_records():
    import pandas as pd

    frame = pd.DataFrame.from_records(LEVELS)
    assert shard_job_resources(frame, "1x", trials=2, concurrency=2) == shard_job_resources(
        LEVELS, "1x", trials=2, concurrency=2
    )


@pytest.mark.parametrize(
    ("tasks", "kwargs", "message"),
    [
        ([], {}, "at least one task"),
        (LEVELS, {"trials": 0}, "trials"),
        (LEVELS, {"concurrency": 0}, "concurrency"),
        (LEVELS, {"concurrency": True}, "concurrency"),
        ([{"cpus": 1, "memory_mb": 0, "time_limit_s": 1}], {}, "memory_mb"),
    ],
)
def test_bad_requests_are_refused(tasks, kwargs, message):
    arguments = {"trials": 1, "concurrency": 1, **kwargs}
    with pytest.raises(ValueError, match=message):
        shard_job_resources(tasks, "1x", **arguments)


def test_the_dag_asks_for_what_the_function_says(tmp_path, default_config):
    """Every run_trials job of the embedded default, as a dry run shows it, requests what
    shard_job_resources derives for its shard (rules/common.smk wires it)."""
    from evalnoise.pipeline.sampling import sample_tasks
    from evalnoise.pipeline.settings import (
        infra_policy_spec,
        resource_profile_spec,
        uses_model_server,
    )
    from evalnoise.pipeline.shard_plan import parse_range

    # the whole project, src/ too: run_tool imports evalnoise from the copy, never another
    # checkout's install (whose plan may differ from this workflow's)
    ws = prepare_copy(copy_project(tmp_path / "ws"))
    CLUSTER_WORKSPACES.add(ws.resolve())  # a dry run of profiles/slurm: its executor plugin
    # the Slurm profile's threads (a dry run shows threads only when more than one)
    output = run_tool(ws, "snakemake", "-n", "--profile", "profiles/slurm").stdout
    jobs = re.findall(
        r"rule run_trials:\n(?:    .*\n)*?    wildcards: agent=(\w+), resource_profile=(\w+), "
        r"block=([\d-]+), chunk=([\d-]+)(?:, variant=[\w.-]*)?\n(?:    priority: \d+\n)?"
        r"    threads: (\d+)\n    resources: (.*)\n",
        output,
    )
    assert len(jobs) == 16  # (chat, tool_agent) × 3x + tool_agent_local × (1x, 3x); × 2 × 2
    tasks = sample_tasks(default_config["benchmark"])
    for agent, profile, block, chunk, threads, resources in jobs:
        asked = dict(re.findall(r"(\w+)=([^,]+)", resources))
        first, last = parse_range(chunk)
        block_first, block_last = parse_range(block)
        expected = shard_job_resources(
            tasks.iloc[first : last + 1],
            resource_profile_spec(default_config, profile),
            trials=block_last - block_first + 1,
            concurrency=int(threads),
            infra_policy=infra_policy_spec(default_config),
            served=uses_model_server(default_config, agent),
        )
        assert {k: int(asked[k]) for k in ("cpus_per_task", "mem_mb", "runtime")} == (
            expected.resources()
        ), (agent, profile, block, chunk)


# -- which jobs ran a shard ---------------------------------------------------------------------


SHARD = "results/trials/steady/1x/t0000-0001/c0000-0002.parquet"


def test_job_records_sit_beside_the_logs(tmp_path):
    assert job_record_path(SHARD).as_posix() == (
        "results/logs/jobs/trials/steady/1x/t0000-0001/c0000-0002.json"
    )
    absolute = tmp_path / SHARD
    assert job_record_path(absolute) == tmp_path / job_record_path(SHARD)
    assert job_record_path("elsewhere/x.parquet").as_posix() == "elsewhere/x.parquet.jobs.json"


def test_record_job_appends_one_record_per_job(tmp_path, monkeypatch, caplog):
    monkeypatch.chdir(tmp_path)
    slurm = {"SLURM_JOB_ID": "41", "SLURM_CLUSTER_NAME": "c", "SLURMD_NODENAME": "node7"}
    with caplog.at_level("INFO"):
        first = record_job(SHARD, log="x.log", environ=slurm)
    assert "executor: slurm, Slurm job 41, node node7" in caplog.text
    assert first["executor"] == "slurm" and first["slurm_job_id"] == "41"
    second = record_job(SHARD, environ={})
    assert second["executor"] == "local" and second["slurm_job_id"] is None
    records = read_job_records(SHARD)
    assert [r["slurm_job_id"] for r in records] == ["41", None]
    assert records[0]["node"] == "node7" and records[0]["log"] == "x.log"
    assert json.loads(job_record_path(SHARD).read_text()) == records


def test_unreadable_records_are_none(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert read_job_records(SHARD) == []
    path = job_record_path(SHARD)
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    assert read_job_records(SHARD) == []
    path.write_text('{"executor": "slurm"}')
    assert read_job_records(SHARD) == []


def test_the_manifest_lists_every_job_of_every_shard(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    other = "results/trials/shaky/1x/t0000-0001/c0000-0002.parquet"
    record_job(SHARD, environ={"SLURM_JOB_ID": "7"})  # cancelled
    record_job(SHARD, environ={"SLURM_JOB_ID": "9"})  # resumed
    record_job(other, environ={})
    execution = execution_record([SHARD, other])
    assert execution["executors"] == ["local", "slurm"]
    assert [(j["shard"], j["executor"], j["slurm_job_id"]) for j in execution["trial_jobs"]] == [
        (other, "local", None),
        (SHARD, "slurm", "7"),
        (SHARD, "slurm", "9"),
    ]
    restored = "results/trials/new/1x/t0000-0001/c0000-0002.parquet"  # e.g. by dvc pull
    assert execution_record([restored])["executors"] == ["unknown"]
