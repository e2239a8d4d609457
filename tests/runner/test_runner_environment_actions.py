"""An exec-protocol agent's trajectory against the real engine: the commands the runner
executed in the task's container reach the shard's actions table in order, normalised
(whitespace collapsed, the task's working directory a placeholder), one set per trial, and
the trials table holds no action."""

from __future__ import annotations

import pandas as pd
import pyarrow.parquet as pq
import pytest
from env_helpers import SHARED_DOCKERFILE, make_env_task, scripted_agent

from evalnoise.runner import run_shard
from evalnoise.tasks.harbor_folders import environment_task_rows, load_harbor_tasks

pytestmark = pytest.mark.docker

#: its own image (the shared one plus a comment): removed when the test is done
DOCKERFILE = SHARED_DOCKERFILE + "# evalnoise test: trial actions\n"


def test_the_commands_an_agent_ran_are_its_trials_actions(env_backend, tmp_path):
    import docker

    root = tmp_path / "tasks"
    root.mkdir()
    make_env_task(
        root,
        "actions",
        test_sh="if [ -f /app/done ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n",
        dockerfile=DOCKERFILE,
    )
    tasks = pd.DataFrame(environment_task_rows(load_harbor_tasks(root, public_network="offline")))
    agent = scripted_agent(
        [
            {"exec": "echo   first\tstep"},
            {"exec": "cd /app &&  touch done"},
            {"exec": "ls /app"},
        ]
    )
    try:
        result = run_shard(
            tasks,
            agent,
            "3x",
            [0, 1],
            0,
            "as_incorrect",
            env_backend,
            tmp_path / "journal.jsonl",
            tmp_path / "trials.parquet",
            progress=False,
            actions_path=tmp_path / "actions.parquet",
        )
        assert result.statuses == {"ok": 2}
        actions = pd.read_parquet(tmp_path / "actions.parquet")
        for trial in (0, 1):
            mine = actions[actions["trial"] == trial]
            assert mine["step"].tolist() == [0, 1, 2]
            assert mine["action"].tolist() == [
                "echo first step",
                "cd {workdir} && touch done",
                "ls {workdir}",
            ]
        assert set(actions["task_id"]) == {"test/actions"} and set(actions["attempt"]) == {1}
        trials = pq.read_table(tmp_path / "trials.parquet")
        assert "actions" not in trials.schema.names
        assert trials.column("agent_steps").to_pylist() == [3, 3]
    finally:
        images = set()
        if (tmp_path / "trials.parquet").exists():
            images = set(pd.read_parquet(tmp_path / "trials.parquet")["image"].dropna())
        client = docker.from_env()
        for tag in images:
            try:
                client.images.remove(tag)
            except docker.errors.APIError:
                pass  # still in use by a container another test removes
