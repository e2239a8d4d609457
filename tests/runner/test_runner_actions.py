"""A trial's actions (evalnoise.runner.actions): recording, normalisation, the QA agent's
reported trajectory, and the actions table a shard writes beside its trials — journaled with
each row, so a resumed shard has every trial's actions once (no engine needed)."""

from __future__ import annotations

import json

import pandas as pd
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st
from runner_helpers import Recording, task_row, tasks_frame

from evalnoise.runner import run_shard
from evalnoise.runner.actions import (
    MAX_ACTION_CHARS,
    MAX_ACTIONS,
    ActionRecorder,
    actions_table,
    cap_action,
    normalise_action,
    reported_trajectory,
    trial_paths,
)
from evalnoise.runner.contract import AgentOutput
from evalnoise.runner.exec_protocol import Done, Exec, Upload
from evalnoise.runner.trial import finish_row, record_output
from evalnoise.schema import ACTIONS, TRIALS

PATHS = trial_paths(
    scratch="/tmp/evalnoise-shard.1234/trial-7",
    home="/tmp/evalnoise-shard.1234/trial-7/home",
    task_dir="/work/tasks/csv-to-jsonl",
    workdir="/app",
)


def test_whitespace_collapses_and_the_trials_paths_become_placeholders():
    assert normalise_action("  ls \t -la\n\n  /app  ") == "ls -la /app"
    assert (
        normalise_action("cd /app/src && cat /tmp/evalnoise-shard.1234/trial-7/home/x", PATHS)
        == "cd {workdir}/src && cat {home}/x"
    )
    # only where the path ends: /app is not /application, nor /data/app
    assert normalise_action("ls /application /data/app /app", PATHS) == (
        "ls /application /data/app {workdir}"
    )
    assert normalise_action("cp -r /work/tasks/csv-to-jsonl/solution /s", PATHS) == (
        "cp -r {task_dir}/solution /s"
    )
    assert normalise_action("echo '/app'", PATHS) == "echo '{workdir}'"


def test_two_trials_with_their_own_scratch_take_the_same_action():
    first = trial_paths(scratch="/tmp/a/t1", home="/tmp/a/t1/home", workdir="/app")
    second = trial_paths(scratch="/tmp/b/t2", home="/tmp/b/t2/home", workdir="/app")
    assert normalise_action("cat /tmp/a/t1/home/.bashrc", first) == normalise_action(
        "cat   /tmp/b/t2/home/.bashrc", second
    )


def test_trial_paths_leave_out_what_would_swallow_every_path():
    assert trial_paths(workdir="/", scratch=None, home="", task_dir="relative") == {}
    assert trial_paths(workdir="/app/") == {"workdir": "/app"}


def test_the_recorder_keeps_the_order_and_records_no_done():
    recorder = ActionRecorder(PATHS)
    recorder.record(Exec("ls   /app", 5.0))
    recorder.record(Upload("/app/solution", b"tar"))
    recorder.record(Exec("python3 -m unittest", None))
    recorder.record(Done({"done": True}))
    assert recorder.actions == [
        "ls {workdir}",
        "upload {workdir}/solution",
        "python3 -m unittest",
    ]


def test_a_long_action_keeps_its_head_and_a_digest_of_the_whole():
    a, b = "x" * 5000, "x" * 4999 + "y"
    assert len(cap_action(a)) < MAX_ACTION_CHARS
    assert cap_action(a) != cap_action(b) and cap_action(a) == cap_action("x" * 5000)
    assert cap_action(a).startswith("x" * 1000 + " [... 4000 chars, sha256 ")
    assert cap_action("short") == "short"


def test_a_reported_trajectory_is_read_and_normalised():
    record = {
        "answer": "42",
        "trajectory": [{"tool": "calc", "args": {"expression": "6*7"}}, "  look  up  "],
    }
    assert reported_trajectory(record) == (
        ['{"args":{"expression":"6*7"},"tool":"calc"}', "look up"],
        None,
    )
    assert reported_trajectory({"answer": "42", "trajectory": []}) == ([], None)
    # none reported: not recorded, and nothing to say
    assert reported_trajectory({"answer": "42"}) == (None, None)
    assert reported_trajectory({"answer": "42", "trajectory": None}) == (None, None)
    assert reported_trajectory(None) == (None, None)


@pytest.mark.parametrize(
    ("trajectory", "note"),
    [
        ("ls", "not a JSON list (str)"),
        ({"a": 1}, "not a JSON list (dict)"),
        (["ls", 3], "action 1 is 3"),
        (["ls", ""], 'action 1 is ""'),
        (["ls", "   "], "action 1"),
        ([None], "action 0 is null"),
        ([["nested"]], "action 0"),
        (["a"] * (MAX_ACTIONS + 1), f"more than {MAX_ACTIONS}"),
    ],
)
def test_a_malformed_trajectory_is_not_recorded_and_said(trajectory, note):
    actions, said = reported_trajectory({"answer": "x", "trajectory": trajectory})
    assert actions is None
    assert said.startswith("trajectory ignored: ") and note in said


def _row(**extra):
    row = {name: None for name in TRIALS.names} | {
        "agent": "tool",
        "resource_profile": "3x",
        "task_id": "t",
        "trial": 0,
        "attempt": 1,
        "exit_code": 0,
    }
    return row | extra


def test_a_malformed_trajectory_never_fails_the_trial():
    row = record_output(_row(), AgentOutput("42", None, {"answer": "42", "trajectory": "calc 6*7"}))
    assert row["status"] == "ok" and row["prediction"] == "42"
    assert row["actions"] is None
    assert "trajectory ignored: not a JSON list" in row["error"]
    ok = record_output(_row(), AgentOutput("42", None, {"answer": "42", "trajectory": ["a"]}))
    assert ok["actions"] == ["a"] and ok["error"] is None


def test_secrets_are_redacted_from_the_actions_before_they_are_capped():
    secret = "s3cr3t-value"
    row = finish_row(
        _row(actions=[f"curl -H 'key: {secret}' x", secret + "y" * 5000]), {"K": secret}
    )
    assert row["actions"][0] == "curl -H 'key: [REDACTED]' x"
    assert secret not in row["actions"][1] and "sha256" in row["actions"][1]


def test_the_actions_table_keys_each_action_by_its_attempt():
    rows = [
        _row(task_id="b", trial=1, attempt=2, actions=["x", "y"]),
        _row(task_id="b", trial=1, attempt=1, actions=["z"]),
        _row(task_id="a", trial=0, attempt=1, actions=[]),
        _row(task_id="a", trial=1, attempt=1),  # recorded none
    ]
    table = actions_table(rows)
    assert table.schema == ACTIONS
    frame = table.to_pandas()
    assert frame[["task_id", "trial", "attempt", "step"]].values.tolist() == [
        ["a", 0, 1, 0],
        ["b", 1, 1, 0],
        ["b", 1, 2, 0],
        ["b", 1, 2, 1],
    ]
    assert frame["action"].isna().tolist() == [True, False, False, False]
    assert frame["action"].tolist()[1:] == ["z", "x", "y"]
    assert actions_table([]).num_rows == 0


_text = st.lists(st.sampled_from([*"ab/ {}.\t\n-_~", "/app", "/tmp/x", "/a/b"]), max_size=20).map(
    "".join
)
_paths = st.dictionaries(
    st.sampled_from(["home", "scratch", "task_dir", "workdir"]),
    st.text(alphabet=st.sampled_from(list("ab/._-")), min_size=1, max_size=8).map(
        lambda p: "/" + p
    ),
    max_size=4,
)


@given(_text, _paths)
def test_normalisation_is_idempotent(text, paths):
    once = normalise_action(text, paths)
    assert normalise_action(once, paths) == once
    assert "  " not in once and once == once.strip()


@given(st.text(max_size=3000))
def test_capping_is_idempotent_and_bounded(text):
    once = cap_action(text)
    assert cap_action(once) == once
    assert len(once) <= MAX_ACTION_CHARS


class Acting(Recording):
    """The recording backend whose trials report actions (``<task> step <i>`` for trial i),
    and that dies (as a SIGKILL would end the run) when asked to start ``dies_at``."""

    def __init__(self, dies_at: int | None = None, **kw) -> None:
        super().__init__(**kw)
        self.dies_at = dies_at

    def run_trial(self, request):
        if self.dies_at is not None and len(self.requests) >= self.dies_at:
            raise KeyboardInterrupt  # the run is killed before this trial starts
        row = super().run_trial(request)
        task = request.task["task_id"]
        row["actions"] = [f"{task} step {i}" for i in range(request.trial + 1)]
        return row


def test_a_resumed_shard_has_every_trials_actions_once(tmp_path):
    tasks = tasks_frame([task_row(f"t{i}", "q") for i in range(3)])
    args = (tasks, {"name": "acting", "image": "none"}, "1x", [0, 1, 2], 0, "as_incorrect")
    paths = {
        "journal_path": tmp_path / "journal.jsonl",
        "output_path": tmp_path / "trials.parquet",
        "actions_path": tmp_path / "actions" / "trials.parquet",
    }
    with pytest.raises(KeyboardInterrupt):
        run_shard(*args, Acting(dies_at=4), progress=False, **paths)
    assert not paths["actions_path"].exists()
    journaled = [json.loads(x) for x in paths["journal_path"].read_text().splitlines()[1:]]
    assert len(journaled) == 4 and all(r["actions"] for r in journaled)
    backend = Acting()
    run_shard(*args, backend, progress=False, **paths)
    assert len(backend.requests) == 5  # only what the journal lacked
    actions = pd.read_parquet(paths["actions_path"])
    expected = [
        (f"t{i}", trial, 1, step, f"t{i} step {step}")
        for i in range(3)
        for trial in range(3)
        for step in range(trial + 1)
    ]
    got = actions[["task_id", "trial", "attempt", "step", "action"]]
    assert [tuple(r) for r in got.itertuples(index=False)] == expected
    assert "actions" not in pq.read_schema(paths["output_path"]).names
    # a finished shard run again writes the same file
    before = paths["actions_path"].read_bytes()
    run_shard(*args, Acting(), progress=False, **paths)
    assert pd.read_parquet(paths["actions_path"]).equals(actions)
    assert len(before) > 0


def test_a_retried_trial_keeps_each_attempts_actions(tmp_path):
    tasks = tasks_frame([task_row("t0", "q")])
    backend = Acting(infra={("t0", 0)})
    run_shard(
        tasks,
        {"name": "acting", "image": "none"},
        "1x",
        [0],
        0,
        {"mode": "retry", "max_attempts": 2},
        backend,
        tmp_path / "j.jsonl",
        tmp_path / "t.parquet",
        progress=False,
        actions_path=tmp_path / "a.parquet",
    )
    actions = pd.read_parquet(tmp_path / "a.parquet")
    assert actions["attempt"].tolist() == [1, 2]
