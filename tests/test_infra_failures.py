"""Failures of a whole task (a build that failed, an unset variable, tampering) are named
once per task, with the reason and the build log's last lines (issue 38.3)."""

from __future__ import annotations

import pandas as pd

from evalnoise.infra_failures import TaskFailure, failure_lines, task_failures

BUILD_ERROR = (
    "build of evalnoise-task-broken:abc failed (worker exit 1)\n--- build log (tail) ---\n"
    "Step 3/4 : RUN false\n ---> Running in 1f\n\nThe command '/bin/sh -c false' returned a "
    "non-zero code: 1\n"
)


def _rows(task, statuses, errors, phases=None, attempts=None, tampered=None):
    n = len(statuses)
    return pd.DataFrame(
        {
            "agent": "a",
            "resource_profile": "1x",
            "task_id": task,
            "trial": list(range(n)),
            "attempt": attempts or [1] * n,
            "status": statuses,
            "error": errors,
            "phase": phases or [None] * n,
            "environment_tampered": tampered or [None] * n,
        }
    )


def test_a_build_failure_is_one_record_naming_the_task_and_the_log_tail():
    table = pd.concat(
        [
            _rows("broken", ["infra_error"] * 3, [BUILD_ERROR] * 3, ["build"] * 3),
            _rows("fine", ["ok", "ok", "infra_error"], [None, None, "container: gone"]),
        ]
    )
    (record,) = task_failures(table)
    assert record == TaskFailure(
        "broken",
        "build",
        3,
        3,
        "build of evalnoise-task-broken:abc failed (worker exit 1)",
        (
            "Step 3/4 : RUN false",
            "---> Running in 1f",
            "The command '/bin/sh -c false' returned a non-zero code: 1",
        ),
    )
    assert failure_lines([record.to_dict()]) == [
        "task broken: image build failed in all 3 trials: build of evalnoise-task-broken:abc "
        "failed (worker exit 1) | log: Step 3/4 : RUN false | ---> Running in 1f | The "
        "command '/bin/sh -c false' returned a non-zero code: 1"
    ]


def test_the_same_infra_error_in_every_trial_is_named_different_ones_are_not():
    unset = "variable TOKEN of the task's env is not set in the runner's environment"
    table = pd.concat(
        [
            _rows("needs-token", ["infra_error"] * 2, [unset] * 2, ["setup"] * 2),
            _rows("flaky", ["infra_error"] * 2, ["container: a", "container: b"]),
        ]
    )
    (record,) = task_failures(table)
    assert (record.task_id, record.kind, record.trials, record.log_tail) == (
        "needs-token",
        "infra_error",
        2,
        (),
    )
    assert record.line() == f"task needs-token: infra_error in all 2 trials: {unset}"


def test_only_final_attempts_count():
    # the first attempt failed to build, the retry ran: no shared failure
    table = _rows(
        "retried",
        ["infra_error", "ok"],
        [BUILD_ERROR, None],
        ["build", None],
        attempts=[1, 2],
    )
    table["trial"] = [0, 0]
    assert task_failures(table) == []


def test_tampered_trials_are_named_per_task():
    table = _rows(
        "csv",
        ["agent_error", "ok", "agent_error"],
        ["x", None, "y"],
        tampered=["/tests/json.py: added", None, "/tests/json.py: added; python3: changed"],
    )
    (record,) = task_failures(table)
    assert record.line() == (
        "task csv: the agent changed what the verifier executes in 2 of 3 trials: "
        "/tests/json.py: added; python3: changed"
    )


def test_tables_without_the_columns():
    assert task_failures(pd.DataFrame()) == []
    plain = pd.DataFrame({"task_id": ["q1", "q1"], "trial": [0, 1], "status": ["ok", "ok"]})
    assert task_failures(plain) == []
