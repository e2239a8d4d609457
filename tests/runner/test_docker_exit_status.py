"""How a finished trial container's end becomes a status, before its output is read
(evalnoise.runner.docker_backend._exit_status): pure, no engine."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from evalnoise.runner.docker_backend import _exit_status

LIMIT = 256 * 2**20
ALLOC = SimpleNamespace(time_limit_s=30.0, memory_limit_bytes=LIMIT)


def status(state=None, exit_code=0, peak=None, *, timed_out=False, exact=True, kills=None):
    return _exit_status(
        state or {},
        exit_code,
        peak,
        ALLOC,
        timed_out=timed_out,
        exact_peak=exact,
        oom_kills=kills,
    )


def test_a_clean_exit_leaves_the_verdict_to_the_output():
    assert status({"ExitCode": 0}, 0, LIMIT // 2) is None
    assert status({"ExitCode": 1}, 1, LIMIT) is None  # an agent error, not the limit


def test_the_runner_s_kill_at_the_deadline_is_a_timeout_first():
    # even when the engine also flags OOM: the deadline came first and the runner killed it
    assert status({"OOMKilled": True}, 137, LIMIT, timed_out=True) == (
        "timeout",
        "killed at the 30s time limit",
    )


def test_the_engine_s_oom_flag():
    verdict, error = status({"OOMKilled": True}, 137, None)
    assert verdict == "oom_killed"
    assert f"memory limit {LIMIT} bytes" in error


@pytest.mark.parametrize(
    ("peak", "exact", "kills", "evidence"),
    [
        (None, True, 2, "the cgroup counted 2 OOM kill(s)"),
        (LIMIT, True, None, "peak memory at the hard limit"),
        (int(0.99 * LIMIT), False, None, "peak memory at the hard limit"),
    ],
)
def test_a_sigkill_at_the_limit_without_the_flag_is_an_oom_kill(peak, exact, kills, evidence):
    verdict, error = status({"OOMKilled": False}, 137, peak, exact=exact, kills=kills)
    assert verdict == "oom_killed"
    assert error.startswith(f"SIGKILL with {evidence} ({LIMIT} bytes)")
    assert "OOMKilled flag was not set" in error


def test_a_sigkill_below_the_limit_is_not_an_oom_kill():
    assert status({"OOMKilled": False}, 137, LIMIT // 2) is None
    assert status({"OOMKilled": False}, 137, None) is None
