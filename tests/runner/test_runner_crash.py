"""A real crash, classified: an agent that dies of SIGSEGV, run through the real runner.

The segv agent (tests/runner/agents/segv) kills itself with SIGSEGV — a real fault signal,
as a native library built for another CPU gives (docs/measurements.md, "CPUs differ"). Through a
whole shard on each backend its trials must end ``agent_error`` with the signal's exit code,
and :func:`evalnoise.outcomes.outcome_counts` must count them ``crashed`` — not
``no_answer``, which is what an agent that merely exits non-zero gets — beside a healthy
probe agent's trials counted ``ok``.
"""

from __future__ import annotations

import signal
import sys

import pandas as pd
import pytest
from runner_helpers import (
    SEGV_SCRIPT,
    local_probe_agent,
    probe_agent,
    task_row,
    tasks_frame,
)

from evalnoise.outcomes import assess_health, crash_signal, crash_signal_name, outcome_counts
from evalnoise.runner import run_shard

N_TASKS = 2
TRIALS = [0, 1]
SIGSEGV = int(signal.SIGSEGV)


def tasks() -> pd.DataFrame:
    # 256 MiB: the local backend's address-space cap must leave room for python3 itself
    return tasks_frame(
        [
            task_row(f"t-{i}", {"op": "answer", "value": f"v{i}"}, memory_mb=256, answer=f"v{i}")
            for i in range(N_TASKS)
        ]
    )


def run(tmp_path, backend, agent: dict) -> pd.DataFrame:
    """One shard of ``agent`` over every task and trial; its Parquet rows, scored by hand."""
    name = agent["name"]
    run_shard(
        tasks(),
        agent,
        "1x",
        TRIALS,
        7,
        "as_incorrect",
        backend,
        tmp_path / f"{name}.jsonl",
        tmp_path / f"{name}.parquet",
        progress=False,
    )
    frame = pd.read_parquet(tmp_path / f"{name}.parquet")
    # the scorer's job, done here so "ok" trials are scored: exact match with the answer
    answers = tasks().set_index("task_id")["answer"]
    ok = frame["status"] == "ok"
    frame["score"] = (frame["prediction"] == frame["task_id"].map(answers)).astype(float)
    frame.loc[~ok, "score"] = None
    return frame


def check_classified(frame: pd.DataFrame, crashed_agent: str, healthy_agent: str) -> None:
    n = N_TASKS * len(TRIALS)
    segv = frame[frame["agent"] == crashed_agent]
    assert (segv["status"] == "agent_error").all(), segv[["status", "error"]]
    assert segv["prediction"].isna().all()
    assert all(crash_signal(code) == SIGSEGV for code in segv["exit_code"])
    assert {crash_signal_name(code) for code in segv["exit_code"]} == {"SIGSEGV"}
    assert segv["stderr_tail"].str.contains("native library built for another CPU").all()

    counts = outcome_counts(segv)
    assert (counts["crashed"], counts["no_answer"], counts["trials"]) == (n, 0, n)
    health = assess_health(counts, crash_examples=["SIGSEGV"])
    assert not health.valid and "crashed (SIGSEGV)" in health.reasons[0]

    healthy = outcome_counts(frame[frame["agent"] == healthy_agent])
    assert (healthy["ok"], healthy["unscored"], healthy["crashed"]) == (n, 0, 0)
    assert assess_health(healthy).valid

    both = outcome_counts(frame)
    assert (both["ok"], both["crashed"], both["no_answer"], both["trials"]) == (n, n, 0, 2 * n)


def test_a_segfault_in_the_local_backend_is_a_crash(tmp_path):
    from evalnoise.runner.local_backend import LocalBackend

    backend = LocalBackend()
    segv_agent = {"name": "segv-local", "command": [sys.executable, str(SEGV_SCRIPT)]}
    frame = pd.concat(
        [run(tmp_path, backend, segv_agent), run(tmp_path, backend, local_probe_agent())]
    )
    # the local backend records death by signal N as 128 + N, as a shell (and docker-init)
    # does; subprocess's -N would classify the same (tests/test_outcomes.py)
    assert set(frame.loc[frame["agent"] == "segv-local", "exit_code"]) == {128 + SIGSEGV}
    check_classified(frame, "segv-local", "probe-local")


@pytest.mark.docker
def test_a_segfault_in_a_container_is_a_crash(tmp_path, docker_backend, segv_image, probe_image):
    segv_agent = {"name": "segv", "image": segv_image}
    frame = pd.concat(
        [
            run(tmp_path, docker_backend, segv_agent),
            run(tmp_path, docker_backend, probe_agent(probe_image)),
        ]
    )
    # the runner starts containers with an init (docker-init): it reports 128 + 11
    segv = frame[frame["agent"] == "segv"]
    assert set(segv["exit_code"]) == {139}
    assert set(segv["error"]) == {"exit code 139"}
    check_classified(frame, "segv", "probe")


def test_a_plain_non_zero_exit_is_no_answer_not_a_crash(tmp_path):
    """The contrast: exit status 3 (the probe's "crash" op) is an agent error, no crash."""
    from evalnoise.runner.local_backend import LocalBackend

    agent = local_probe_agent(name="gives-up")
    frame_tasks = tasks_frame([task_row("t-0", {"op": "crash"}, memory_mb=256)])
    run_shard(
        frame_tasks,
        agent,
        "1x",
        [0],
        7,
        "as_incorrect",
        LocalBackend(),
        tmp_path / "j.jsonl",
        tmp_path / "out.parquet",
        progress=False,
    )
    frame = pd.read_parquet(tmp_path / "out.parquet")
    assert list(frame["exit_code"]) == [3] and list(frame["status"]) == ["agent_error"]
    counts = outcome_counts(frame)
    assert (counts["no_answer"], counts["crashed"]) == (1, 0)
