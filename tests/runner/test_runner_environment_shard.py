"""The environment backend behind the existing shard runner, unchanged: run_shard takes an
EnvironmentBackend object and a tasks table of environment rows, journals the environment
columns and writes the TRIALS table (the integration point of the pipeline)."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from env_helpers import make_env_task

from evalnoise.runner import run_shard
from evalnoise.runner.environment import EXTRA_COLUMNS
from evalnoise.tasks.harbor_folders import environment_task_rows, load_harbor_tasks

pytestmark = pytest.mark.docker


def test_run_shard_with_the_environment_backend(env_backend, tmp_path):
    root = tmp_path / "tasks"
    root.mkdir()
    make_env_task(
        root,
        "solved",
        solve_sh="touch /app/done\n",
        test_sh="if [ -f /app/done ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n",
    )
    make_env_task(root, "noreward", solve_sh="true\n", test_sh="true\n")
    tasks = pd.DataFrame(environment_task_rows(load_harbor_tasks(root, public_network="offline")))
    result = run_shard(
        tasks,
        {"name": "oracle"},
        "3x",
        [0, 1],
        0,
        "as_incorrect",
        env_backend,
        tmp_path / "journal.jsonl",
        tmp_path / "trials.parquet",
        concurrency=2,
        progress=False,
    )
    assert result.statuses == {"ok": 2, "verifier_error": 2}
    lines = [json.loads(line) for line in (tmp_path / "journal.jsonl").read_text().splitlines()]
    rows = [line for line in lines if "status" in line]
    assert len(rows) == 4 and all(set(EXTRA_COLUMNS) <= set(row) for row in rows)
    by_task = {(r["task_id"], r["trial"]): r for r in rows}
    assert by_task[("test/solved", 0)]["reward"] == 1.0
    assert by_task[("test/noreward", 1)]["reward"] is None
    table = pd.read_parquet(tmp_path / "trials.parquet")
    assert sorted(table["status"]) == ["ok", "ok", "verifier_error", "verifier_error"]
