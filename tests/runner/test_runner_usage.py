"""The agent's reported model usage lands in its trial row (prompt_tokens, completion_tokens,
model_calls): through the local backend, the Docker backend, the journal and a resume.

A malformed report never fails the trial and is never read as a number: null plus a note in
``error``. No report is null (not reported), never 0.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from runner_helpers import local_probe_agent, probe_agent, run_one, task_row, tasks_frame

from evalnoise.models.agent_images import agent_env
from evalnoise.runner import contract, run_shard
from evalnoise.runner.local_backend import LocalBackend
from evalnoise.runner.shard import read_journal
from evalnoise.schema import TRIALS

AGENTS = Path(__file__).resolve().parents[2] / "agents"
USAGE = {"prompt_tokens": 120, "completion_tokens": 7, "model_calls": 2}
NULLS = dict.fromkeys(USAGE)


def record_task(record: dict, task_id: str = "t", **op) -> dict:
    return task_row(task_id, {"op": "record", "record": record, **op}, memory_mb=256)


def usage_of(row: dict) -> dict:
    return {k: row[k] for k in USAGE}


@pytest.fixture
def backend(tmp_path):
    return LocalBackend(scratch_root=tmp_path)


def test_usage_lands_in_the_trial_row(backend):
    row = run_one(backend, local_probe_agent(), record_task({"answer": "42", "usage": USAGE}))
    assert row["status"] == "ok" and row["prediction"] == "42" and row["error"] is None
    assert usage_of(row) == USAGE


def test_no_usage_is_null_never_zero(backend):
    row = run_one(backend, local_probe_agent(), record_task({"answer": "42"}))
    assert row["status"] == "ok" and row["error"] is None and usage_of(row) == NULLS
    # reported zeros are measurements; a key left out or null is unknown
    usage = {"prompt_tokens": 0, "completion_tokens": None, "model_calls": 0}
    row = run_one(backend, local_probe_agent(), record_task({"answer": "a", "usage": usage}))
    assert usage_of(row) == usage and row["error"] is None


@pytest.mark.parametrize(
    "usage,recorded,note",
    [
        ("lots", NULLS, "usage ignored: not a JSON object (str)"),
        ([1, 2], NULLS, "usage ignored: not a JSON object (list)"),
        (
            {"prompt_tokens": "120", "completion_tokens": -1, "model_calls": 1.5},
            NULLS,
            'usage ignored: prompt_tokens="120", completion_tokens=-1, model_calls=1.5 '
            "(not a count)",
        ),
        (
            {"prompt_tokens": 5, "completion_tokens": True, "model_calls": 2**70},
            {"prompt_tokens": 5, "completion_tokens": None, "model_calls": None},
            f"usage ignored: completion_tokens=true, model_calls={2**70} (not a count)",
        ),
    ],
)
def test_malformed_usage_is_null_with_a_note(backend, usage, recorded, note):
    row = run_one(backend, local_probe_agent(), record_task({"answer": "42", "usage": usage}))
    assert row["status"] == "ok" and row["prediction"] == "42"  # the trial stands
    assert usage_of(row) == recorded
    assert row["error"] == note


def test_usage_of_a_failed_trial_is_kept(backend):
    """The calls were made (and paid for) even when the agent then failed."""
    task = record_task({"answer": "42", "usage": USAGE}, code=3)
    row = run_one(backend, local_probe_agent(), task)
    assert (row["status"], row["error"]) == ("agent_error", "exit code 3")
    assert usage_of(row) == USAGE
    bad = record_task({"answer": "42", "usage": {"model_calls": "two"}}, code=3)
    row = run_one(backend, local_probe_agent(), bad)
    assert row["error"] == 'exit code 3; usage ignored: model_calls="two" (not a count)'


def test_stdout_answer_record_carries_its_usage():
    line = json.dumps({"answer": "7", "usage": {"model_calls": 1}})
    output = contract.parse_output(None, f"log line\n{line}\n")
    assert output.prediction == "7"
    assert contract.usage_columns(output.record) == (
        {"prompt_tokens": None, "completion_tokens": None, "model_calls": 1},
        None,
    )
    assert contract.parse_output(b"[]", "").record is None  # no answer: no record


def test_the_chat_agent_usage_reaches_the_row(backend, llama_server):
    """The real chat agent against the real model server, run by the local backend."""
    agent = {
        "name": "chat-local",
        "command": [sys.executable, str(AGENTS / "chat" / "agent.py")],
        "env": {
            **agent_env("http", base_url=llama_server.base_url, model=llama_server.model),
            "AGENT_MAX_TOKENS": "16",
        },
    }
    task = task_row("sum", "What is 2 + 3?", memory_mb=1024, time_limit_s=60)
    row = run_one(backend, agent, task)
    assert row["status"] == "ok", row["stderr_tail"]
    assert row["model_calls"] == 1
    assert row["prompt_tokens"] > 0 and 0 < row["completion_tokens"] <= 16


def test_journal_and_resume_keep_the_usage(tmp_path):
    tasks = tasks_frame(
        [
            record_task({"answer": "a", "usage": USAGE}, "task-0"),
            record_task({"answer": "b"}, "task-1"),
        ]
    )
    args = (tasks, local_probe_agent(), "1x", [0, 1], 5, "as_incorrect", "local")
    journal, out = tmp_path / "j.jsonl", tmp_path / "out.parquet"
    first = run_shard(*args, journal, out, progress=False)
    assert first.ran == 4
    _, rows = read_journal(journal)
    assert [usage_of(r) for r in rows if r["task_id"] == "task-0"] == [USAGE, USAGE]
    out.unlink()
    again = run_shard(*args, journal, out, progress=False)
    assert (again.ran, again.resumed) == (0, 4)  # every row from the journal
    table = pq.read_table(out)
    assert table.schema.equals(TRIALS)
    by_task = {(r["task_id"], r["trial"]): usage_of(r) for r in table.to_pylist()}
    assert by_task == {
        ("task-0", 0): USAGE,
        ("task-0", 1): USAGE,
        ("task-1", 0): NULLS,
        ("task-1", 1): NULLS,
    }


@pytest.mark.docker
def test_docker_backend_records_the_usage(docker_backend, probe_image):
    row = run_one(
        docker_backend,
        probe_agent(probe_image),
        record_task({"answer": "42", "usage": {**USAGE, "model_calls": "?"}}),
    )
    assert row["status"] == "ok" and row["prediction"] == "42"
    assert usage_of(row) == {**USAGE, "model_calls": None}
    assert row["error"] == 'usage ignored: model_calls="?" (not a count)'
