"""Shards: journal, resume, exactly-once after SIGKILL, retries, atomic Parquet output."""

from __future__ import annotations

import fcntl
import json
import os
import random
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from runner_helpers import (
    local_probe_agent,
    probe_agent,
    shard_containers,
    task_row,
    tasks_frame,
)

from evalnoise.atomic import is_temporary
from evalnoise.runner import apply_infra_policy, run_shard, trial_seed
from evalnoise.runner.shard import read_journal
from evalnoise.schema import TRIALS

SRC = Path(__file__).resolve().parents[2] / "src"


def answer_tasks(n: int, **kw) -> list[dict]:
    return [task_row(f"task-{i:02d}", {"op": "answer", "value": f"v{i}"}, **kw) for i in range(n)]


def journal_keys(path) -> list[tuple[str, int, int]]:
    _, rows = read_journal(path)
    return [(r["task_id"], r["trial"], r["attempt"]) for r in rows]


# -- local backend: fast, real subprocesses ------------------------------------------------


def test_shard_output_schema_order_and_seeds(tmp_path):
    tasks = tasks_frame(answer_tasks(3, memory_mb=256)[::-1])  # unsorted input
    result = run_shard(
        tasks,
        local_probe_agent(),
        "1x",
        [2, 0, 1],
        99,
        "as_incorrect",
        "local",
        tmp_path / "j.jsonl",
        tmp_path / "out.parquet",
        concurrency=2,
        progress=False,
    )
    assert (result.rows, result.trials, result.ran, result.resumed) == (9, 9, 9, 0)
    assert result.statuses == {"ok": 9}
    table = pq.read_table(tmp_path / "out.parquet")
    assert table.schema.equals(TRIALS)
    rows = table.to_pylist()
    keys = [(r["task_id"], r["trial"], r["attempt"]) for r in rows]
    assert keys == sorted(keys) and len(set(keys)) == 9
    for r in rows:
        assert r["seed"] == trial_seed(99, "probe-local", r["task_id"], r["trial"])
        assert r["prediction"] == "v" + str(int(r["task_id"][-2:]))
        assert r["backend"] == "local" and r["resource_profile"] == "1x"
        assert r["agent"] == "probe-local"
    assert not [p for p in tmp_path.iterdir() if is_temporary(p.name)]


def test_finished_shard_reruns_nothing(tmp_path):
    args = (
        tasks_frame(answer_tasks(2, memory_mb=256)),
        local_probe_agent(),
        "1x",
        [0, 1],
        1,
        "as_incorrect",
        "local",
        tmp_path / "j.jsonl",
        tmp_path / "out.parquet",
    )
    run_shard(*args, progress=False)
    before = (tmp_path / "j.jsonl").read_bytes()
    result = run_shard(*args, progress=False)
    assert (result.ran, result.resumed, result.rows) == (0, 4, 4)
    assert (tmp_path / "j.jsonl").read_bytes() == before


def test_torn_last_line_is_cut_and_that_trial_rerun(tmp_path):
    journal = tmp_path / "j.jsonl"
    args = (
        tasks_frame(answer_tasks(2, memory_mb=256)),
        local_probe_agent(),
        "1x",
        [0, 1],
        1,
        "as_incorrect",
        "local",
        journal,
        tmp_path / "out.parquet",
    )
    run_shard(*args, progress=False)
    lines = journal.read_bytes().split(b"\n")
    # keep the header and two rows; the third row is cut mid-write, as SIGKILL would
    journal.write_bytes(b"\n".join(lines[:3]) + b"\n" + lines[3][:40])
    result = run_shard(*args, progress=False)
    assert (result.ran, result.resumed, result.rows) == (2, 2, 4)
    keys = journal_keys(journal)
    assert len(keys) == len(set(keys)) == 4
    assert all(line.startswith(b"{") for line in journal.read_bytes().splitlines())


def test_corrupt_middle_line_is_an_error(tmp_path):
    journal = tmp_path / "j.jsonl"
    args = (
        tasks_frame(answer_tasks(1, memory_mb=256)),
        local_probe_agent(),
        "1x",
        [0, 1],
        1,
        "as_incorrect",
        "local",
        journal,
        tmp_path / "out.parquet",
    )
    run_shard(*args, progress=False)
    lines = journal.read_bytes().split(b"\n")
    journal.write_bytes(b"\n".join([lines[0], b"garbage", *lines[1:]]))
    with pytest.raises(ValueError, match="corrupt"):
        run_shard(*args, progress=False)


def test_changed_configuration_moves_the_old_journal_aside(tmp_path):
    journal = tmp_path / "j.jsonl"
    tasks = tasks_frame(answer_tasks(1, memory_mb=256))
    run_shard(
        tasks,
        local_probe_agent(),
        "1x",
        [0],
        1,
        "as_incorrect",
        "local",
        journal,
        tmp_path / "out.parquet",
        progress=False,
    )
    result = run_shard(
        tasks,
        local_probe_agent(),
        "1x",
        [0],
        2,
        "as_incorrect",
        "local",
        journal,
        tmp_path / "out.parquet",
        progress=False,
    )  # new run seed
    assert (result.ran, result.resumed) == (1, 0)
    aside = list(tmp_path.glob("j.jsonl.superseded-*"))
    assert len(aside) == 1 and len(read_journal(aside[0])[1]) == 1
    assert read_journal(journal)[0]["run_seed"] == 2


def test_a_changed_task_is_rerun_and_an_added_task_runs(tmp_path):
    journal = tmp_path / "j.jsonl"
    tasks = answer_tasks(2, memory_mb=256)
    run_shard(
        tasks_frame(tasks),
        local_probe_agent(),
        "1x",
        [0],
        1,
        "as_incorrect",
        "local",
        journal,
        tmp_path / "out.parquet",
        progress=False,
    )
    tasks[1]["question"] = json.dumps({"op": "answer", "value": "changed"})
    tasks.append(task_row("task-99", {"op": "answer", "value": "new"}, memory_mb=256))
    result = run_shard(
        tasks_frame(tasks),
        local_probe_agent(),
        "1x",
        [0],
        1,
        "as_incorrect",
        "local",
        journal,
        tmp_path / "out.parquet",
        progress=False,
    )
    assert (result.ran, result.resumed, result.rows) == (2, 1, 3)
    predictions = {
        r["task_id"]: r["prediction"] for r in pq.read_table(tmp_path / "out.parquet").to_pylist()
    }
    assert predictions == {"task-00": "v0", "task-01": "changed", "task-99": "new"}


def test_two_runs_of_one_shard_exclude_each_other(tmp_path):
    journal = tmp_path / "j.jsonl"
    with open(tmp_path / "j.jsonl.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        with pytest.raises(BlockingIOError, match="another process"):
            run_shard(
                tasks_frame(answer_tasks(1)),
                local_probe_agent(),
                "1x",
                [0],
                1,
                "as_incorrect",
                "local",
                journal,
                tmp_path / "out.parquet",
                progress=False,
            )


def test_secrets_never_reach_journal_or_parquet(tmp_path):
    secret = "tok-" + uuid.uuid4().hex
    tasks = tasks_frame([task_row("t", {"op": "echo_env", "name": "PROBE_SECRET"}, memory_mb=256)])
    result = run_shard(
        tasks,
        local_probe_agent(secret_env=["PROBE_SECRET"]),
        "1x",
        [0, 1],
        1,
        "as_incorrect",
        "local",
        tmp_path / "j.jsonl",
        tmp_path / "o.parquet",
        progress=False,
        environ={"PROBE_SECRET": secret},
    )
    assert result.statuses == {"ok": 2}
    assert secret.encode() not in (tmp_path / "j.jsonl").read_bytes()
    table = pq.read_table(tmp_path / "o.parquet")
    assert secret not in json.dumps(table.to_pylist(), default=str)
    assert table.column("prediction").to_pylist() == ["[REDACTED]"] * 2
    with pytest.raises(KeyError, match="PROBE_SECRET"):  # a missing secret fails fast
        run_shard(
            tasks,
            local_probe_agent(secret_env=["PROBE_SECRET"]),
            "1x",
            [0],
            1,
            "as_incorrect",
            "local",
            tmp_path / "j2.jsonl",
            tmp_path / "o2.parquet",
            progress=False,
            environ={},
        )


def test_the_answer_column_is_never_handed_to_the_agent(tmp_path):
    tasks = tasks_frame(
        [task_row("t", {"op": "introspect"}, memory_mb=256, answer="THE-GOLD-ANSWER")]
    )
    run_shard(
        tasks,
        local_probe_agent(),
        "1x",
        [0],
        1,
        "as_incorrect",
        "local",
        tmp_path / "j.jsonl",
        tmp_path / "o.parquet",
        progress=False,
    )
    (row,) = pq.read_table(tmp_path / "o.parquet").to_pylist()
    assert row["status"] == "ok" and "THE-GOLD-ANSWER" not in row["prediction"]


# -- docker backend: retries and the infra policies ----------------------------------------


@pytest.mark.docker
@pytest.mark.parametrize(
    "policy,expected_rows,expected_counts",
    [
        # the flaky task is OOM-killed on attempt 1 only; the doomed one on every attempt
        (
            "as_incorrect",
            {("flaky", 1): "oom_killed", ("doomed", 1): "oom_killed"},
            {
                "trials": 2,
                "attempts": 2,
                "counted": 2,
                "excluded": 0,
                "scored_incorrect_by_policy": 2,
                "infra_attempts": 2,
                "infra_final": 2,
                "retried_trials": 0,
            },
        ),
        (
            "exclude",
            {("flaky", 1): "oom_killed", ("doomed", 1): "oom_killed"},
            {
                "trials": 2,
                "attempts": 2,
                "counted": 0,
                "excluded": 2,
                "scored_incorrect_by_policy": 0,
                "infra_attempts": 2,
                "infra_final": 2,
                "retried_trials": 0,
            },
        ),
        (
            "retry:3",
            {
                ("flaky", 1): "oom_killed",
                ("flaky", 2): "ok",
                ("doomed", 1): "oom_killed",
                ("doomed", 2): "oom_killed",
                ("doomed", 3): "oom_killed",
            },
            {
                "trials": 2,
                "attempts": 5,
                "counted": 2,
                "excluded": 0,
                "scored_incorrect_by_policy": 1,
                "infra_attempts": 4,
                "infra_final": 1,
                "retried_trials": 2,
            },
        ),
    ],
)
def test_infra_policies_end_to_end(tmp_path, probe_image, policy, expected_rows, expected_counts):
    tasks = tasks_frame(
        [
            task_row("flaky", {"op": "oom_until", "attempt": 2, "mb": 100}, memory_mb=48),
            task_row("doomed", {"op": "alloc", "mb": 100}, memory_mb=48),
        ]
    )
    result = run_shard(
        tasks,
        probe_agent(probe_image),
        "1x",
        [0],
        5,
        policy,
        "docker",
        tmp_path / "j.jsonl",
        tmp_path / "out.parquet",
        concurrency=2,
        progress=False,
    )
    trials = pq.read_table(tmp_path / "out.parquet").to_pandas()
    got = {(r.task_id, r.attempt): r.status for r in trials.itertuples()}
    assert got == expected_rows
    assert result.rows == len(expected_rows)
    # attempts of one trial share its seed
    assert trials.groupby("task_id")["seed"].nunique().eq(1).all()
    counts = apply_infra_policy(trials, policy).counts
    assert {k: counts[k] for k in expected_counts} == expected_counts


@pytest.mark.docker
def test_stale_containers_of_the_shard_are_removed_on_start(tmp_path, docker_engine, base_image):
    shard = "stale" + uuid.uuid4().hex[:8]
    other = "other" + uuid.uuid4().hex[:8]
    leftover = docker_engine.containers.run(
        base_image,
        ["sleep", "300"],
        detach=True,
        network_mode="none",
        labels={"evalnoise.shard": shard},
    )
    bystander = docker_engine.containers.run(
        base_image,
        ["sleep", "300"],
        detach=True,
        network_mode="none",
        labels={"evalnoise.shard": other},
    )
    try:
        run_shard(
            tasks_frame(answer_tasks(1)),
            probe_agent(base_image, command=["sh", "-c", "echo '{\"answer\": 1}'"]),
            "1x",
            [0],
            1,
            "as_incorrect",
            "docker",
            tmp_path / "j.jsonl",
            tmp_path / "o.parquet",
            shard_id=shard,
            progress=False,
        )
        assert shard_containers(docker_engine, shard) == []
        assert shard_containers(docker_engine, other) == [bystander.id]
    finally:
        for c in (leftover, bystander):
            try:
                c.remove(force=True)
            except Exception:
                pass


# -- SIGKILL at any moment, then resume: exactly once --------------------------------------


def _start_cli(tmp_path, tasks_path, agent, shard_id, log) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(SRC))
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "evalnoise",
            "run-shard",
            "--tasks",
            str(tasks_path),
            "--agent",
            json.dumps(agent),
            "--resource-profile",
            "1x",
            "--trials",
            "0-2",
            "--run-seed",
            "11",
            "--backend",
            "docker",
            "--output",
            str(tmp_path / "out.parquet"),
            "--journal",
            str(tmp_path / "j.jsonl"),
            "--concurrency",
            "2",
            "--shard-id",
            shard_id,
            "--no-progress",
        ],
        env=env,
        stdout=log,
        stderr=log,
    )


def _rows_in(path) -> int:
    try:
        return max(0, path.read_bytes().count(b"\n") - 1)  # minus the header
    except FileNotFoundError:
        return 0


@pytest.mark.docker
def test_sigkill_at_any_moment_then_resume_gives_exactly_one_row_per_trial(
    tmp_path, docker_engine, probe_image
):
    n_tasks, n_trials = 4, 3
    plan = {(f"task-{i:02d}", k) for i in range(n_tasks) for k in range(n_trials)}
    tasks_path = tmp_path / "tasks.parquet"
    tasks_frame(
        [task_row(f"task-{i:02d}", {"op": "sleep", "s": 0.3}, memory_mb=64) for i in range(n_tasks)]
    ).to_parquet(tasks_path)
    agent = probe_agent(probe_image)
    shard = "kill" + uuid.uuid4().hex[:8]
    journal = tmp_path / "j.jsonl"
    rng = random.Random(20240611)
    # kill points: after k journal rows, at random moments, after the last row
    kills = [
        ("rows", 1),
        ("time", rng.uniform(0.3, 2.5)),
        ("rows", 5),
        ("time", rng.uniform(0.3, 2.5)),
        ("rows", len(plan)),
    ]
    leftovers_seen = 0
    progress: list = []
    with open(tmp_path / "cli.log", "wb") as log:
        for kind, point in kills:
            done_before = set(journal_keys(journal))
            proc = _start_cli(tmp_path, tasks_path, agent, shard, log)
            t0 = time.monotonic()
            while proc.poll() is None:
                if (kind == "rows" and _rows_in(journal) >= point) or (
                    kind == "time" and time.monotonic() - t0 >= point
                ):
                    break
                time.sleep(0.01)
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            leftovers_seen += len(shard_containers(docker_engine, shard))
            progress.append((kind, round(point, 2), len(journal_keys(journal))))
            keys = journal_keys(journal)
            assert len(keys) == len(set(keys)), "a trial was journaled twice"
            assert done_before <= set(keys), "a finished trial was lost"
        # the last run, left alone, finishes
        done_before = set(journal_keys(journal))
        proc = _start_cli(tmp_path, tasks_path, agent, shard, log)
        assert proc.wait(timeout=120) == 0, (tmp_path / "cli.log").read_text()[-3000:]

    keys = journal_keys(journal)
    assert len(keys) == len(set(keys)) == len(plan)
    assert {(t, k) for t, k, _ in keys} == plan
    assert done_before <= set(keys)
    rows = pq.read_table(tmp_path / "out.parquet").to_pylist()
    assert Counter((r["task_id"], r["trial"]) for r in rows) == Counter(plan)
    assert all(r["attempt"] == 1 and r["status"] == "ok" for r in rows)
    # the Parquet rows are the journal's rows, not reruns
    _, journaled = read_journal(journal)
    started = {(r["task_id"], r["trial"]): r["started_at"] for r in journaled}
    for r in rows:
        assert r["started_at"].isoformat() == started[(r["task_id"], r["trial"])]
    # whatever the killed runs left behind is gone
    assert shard_containers(docker_engine, shard) == []
    assert not list(Path("/tmp").glob(f"evalnoise-trial.{shard}.*"))
    assert not list(Path("/sys/fs/cgroup").glob(f"*/evalnoise/{shard}.*"))  # cgroup v1
    assert not list(Path("/sys/fs/cgroup").glob(f"evalnoise/{shard}.*"))  # cgroup v2
    assert leftovers_seen >= 1, "no kill left a container behind: cleanup was not exercised"
    # the kills interrupted the shard at different stages (not all before the first trial)
    assert len({n for _, _, n in progress}) >= 3, progress
    print("kill points (kind, point, journaled rows):", progress)


@pytest.mark.docker
def test_sigterm_stops_the_shard_and_removes_its_running_containers(
    tmp_path, docker_engine, probe_image
):
    tasks_path = tmp_path / "tasks.parquet"
    tasks_frame(
        [task_row(f"task-{i:02d}", {"op": "sleep", "s": 30}, memory_mb=64) for i in range(2)]
    ).to_parquet(tasks_path)
    shard = "term" + uuid.uuid4().hex[:8]
    with open(tmp_path / "cli.log", "wb") as log:
        proc = _start_cli(tmp_path, tasks_path, probe_agent(probe_image), shard, log)
        deadline = time.monotonic() + 30
        while len(shard_containers(docker_engine, shard)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(shard_containers(docker_engine, shard)) == 2
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 128 + signal.SIGTERM
    assert shard_containers(docker_engine, shard) == []
    assert _rows_in(tmp_path / "j.jsonl") == 0  # the interrupted trials were not recorded
    assert not (tmp_path / "out.parquet").exists()
