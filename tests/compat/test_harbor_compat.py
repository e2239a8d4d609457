"""Compatibility with Harbor itself (PyPI ``harbor`` 0.25, installed by tools/install-harbor.sh):
the fixture tasks and a ``harbor task init`` task load in Harbor's own task model, and
Harbor's ``oracle`` and ``nop`` agents score the fixture tasks as their ``task.toml`` says
(``[metadata.expected.<agent>]``), offline, against the local Docker engine.

Without Harbor (or, for the runs, without the compose plugin, the engine or the base image)
these tests skip naming what is missing — and fail under CI (``model_stack.require``).
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from harbor_tools import (
    harbor_missing,
    harbor_run_missing,
    load_tasks_with_harbor,
    run_harbor,
)
from model_stack import require

from evalnoise.importers import harbor_jobs as hb
from evalnoise.importers import import_trials

DATA = Path(__file__).resolve().parents[1] / "data" / "harbor"
TASKS = sorted(p for p in (DATA / "tasks").iterdir() if (p / "task.toml").is_file())
INIT_TASK = DATA / "init-task"


def _toml(task: Path) -> dict:
    return tomllib.loads((task / "task.toml").read_text())


@pytest.fixture(scope="module")
def harbor_model() -> dict[str, dict]:
    require(harbor_missing() is None, str(harbor_missing()))
    return load_tasks_with_harbor([*TASKS, INIT_TASK])


def test_there_are_fixture_tasks() -> None:
    assert [t.name for t in TASKS] == ["agent-timeout", "greet", "no-reward"]


@pytest.mark.parametrize("task", TASKS, ids=lambda p: p.name)
def test_fixture_task_loads_in_harbors_model_as_written(task: Path, harbor_model) -> None:
    parsed = harbor_model[str(task)]
    assert "error" not in parsed, parsed.get("error")
    assert parsed["is_valid_dir"] is True  # `harbor run -p` would not skip it
    assert parsed["warnings"] == []
    assert parsed["has_steps"] is False
    assert parsed["verifier_mode"] == "shared"
    written = _toml(task)
    config = parsed["config"]
    assert parsed["name"] == written["task"]["name"]
    assert parsed["instruction"] == (task / "instruction.md").read_text()
    assert config["agent"]["timeout_sec"] == written["agent"]["timeout_sec"]
    assert config["verifier"]["timeout_sec"] == written["verifier"]["timeout_sec"]
    for key in ("cpus", "memory_mb", "build_timeout_sec"):
        assert config["environment"][key] == written["environment"][key]
    assert config["environment"]["docker_image"] is None  # built from environment/Dockerfile
    assert config["metadata"] == written["metadata"]  # free-form metadata kept as is


def test_harbor_task_init_folder_loads(harbor_model) -> None:
    parsed = harbor_model[str(INIT_TASK)]
    assert "error" not in parsed, parsed.get("error")
    assert parsed["is_valid_dir"] is True
    assert parsed["name"] == "evalnoise/init-task"
    # the template's default: a separate verifier environment (tests/Dockerfile FROM public
    # images), which an offline runner has to refuse or build differently
    assert parsed["verifier_mode"] == "separate"
    assert parsed["config"]["schema_version"] == "1.4"


@pytest.fixture(scope="module")
def harbor_runs(tmp_path_factory) -> dict:
    """Harbor's oracle and nop on the fixture tasks, in one job (one Harbor process)."""
    missing = harbor_run_missing()
    require(missing is None, str(missing))
    jobs = tmp_path_factory.mktemp("harbor-jobs")
    agents = ("oracle", "nop")
    run = run_harbor(TASKS, jobs_dir=jobs, job_name="+".join(agents), agent=agents, n_concurrent=2)
    return {agent: run.of_agent(agent) for agent in agents}


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.parametrize("agent", ["oracle", "nop"])
def test_harbors_agents_score_the_fixture_tasks_as_expected(agent: str, harbor_runs) -> None:
    run = harbor_runs[agent]
    for task in TASKS:
        expected = _toml(task)["metadata"]["expected"][agent]
        name = _toml(task)["task"]["name"]
        (outcome,) = run.outcomes[name]
        assert outcome.exception_type == expected.get("exception"), (name, outcome)
        assert outcome.reward == expected.get("reward"), (name, outcome)


@pytest.mark.docker
@pytest.mark.slow
def test_evalnoise_imports_a_fresh_harbor_job(harbor_runs) -> None:
    """The importer on a job Harbor just wrote (not only the committed excerpts): its
    oracle's trials, beside the nop's of the same job."""
    run = harbor_runs["oracle"]
    imported = import_trials("harbor", [run.job_dir]).table.to_pylist()
    assert {r["agent"] for r in imported} == {"oracle", "nop"}
    rows = {r["task_id"]: r for r in imported if r["agent"] == "oracle"}
    for task in TASKS:
        expected = _toml(task)["metadata"]["expected"]["oracle"]
        row = rows[_toml(task)["task"]["name"]]
        exc = expected.get("exception")
        assert row["error"] == exc
        status = "ok" if exc is None else hb.STATUS_OF_EXCEPTION[exc]
        if expected.get("reward") is not None and status in ("timeout", "agent_error"):
            # the verifier decided after the agent failed: its verdict, the failure a flag
            assert (row["status"], row["verified_after"]) == ("ok", status)
        else:
            assert (row["status"], row["verified_after"]) == (status, None)
        assert row["score"] == expected.get("reward")
        assert row["agent"] == "oracle" and row["duration_s"] > 0
