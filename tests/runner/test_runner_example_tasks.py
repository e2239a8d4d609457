"""Every example Harbor task (examples/harbor-tasks) through the environment runner against
the real engine: the oracle earns reward 1 at the roomiest profile (3x), the null agent 0;
the oracle of each resource-sensitive task meets its resources at the tightest (1x): it is
OOM-killed or times out — an infra outcome, or, when the container lived on and the
verifier then gave its verdict, the flag ``oom_in_agent`` or ``verified_after = timeout``
(evalnoise.verified_after). All trials run; every miss is reported at once."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from evalnoise.runner import agent_spec, trial_seed
from evalnoise.runner.resources import resource_profile
from evalnoise.runner.trial import TrialRequest
from evalnoise.tasks.harbor_folders import environment_task_rows, load_harbor_tasks

pytestmark = [pytest.mark.docker, pytest.mark.slow]

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "harbor-tasks"


def test_example_tasks_oracle_null_and_resource_sensitivity(env_backend):
    tasks = load_harbor_tasks(EXAMPLES)
    rows = {row["task_id"]: row for row in environment_task_rows(tasks)}
    sensitive = {t.name for t in tasks if "resource-sensitive" in t.metadata["tags"]}
    plan = [(task_id, "oracle", "3x") for task_id in rows]
    plan += [(task_id, "null", "3x") for task_id in rows]
    plan += [(task_id, "oracle", "1x") for task_id in sorted(sensitive)]

    def run(item):
        task_id, agent, profile = item
        spec = agent_spec({"name": agent})
        request = TrialRequest(
            agent=spec,
            task=rows[task_id],
            resource_profile=resource_profile(profile),
            trial=0,
            attempt=1,
            seed=trial_seed(0, agent, task_id, 0),
            shard_id="example-tasks",
        )
        return item, env_backend.run_trial(request)

    with ThreadPoolExecutor(max_workers=2) as pool:
        results = dict(pool.map(run, plan))
    misses = []
    for (task_id, agent, profile), row in results.items():
        outcome = (row["status"], row["reward"])
        if profile == "3x" and agent == "oracle" and outcome != ("ok", 1.0):
            misses.append(f"{task_id} oracle@3x: {outcome} {row['error']}")
        if profile == "3x" and agent == "null" and outcome != ("ok", 0.0):
            misses.append(f"{task_id} null@3x: {outcome} {row['error']}")
        if row["network"] != "none":  # every example declares no-network: the sandbox stays
            misses.append(f"{task_id} {agent}@{profile}: network {row['network']}")
        met_its_resources = row["status"] in ("oom_killed", "timeout") or (
            row["status"] == "ok" and (row["oom_in_agent"] or row["verified_after"] == "timeout")
        )
        if profile == "1x" and not met_its_resources:
            misses.append(f"{task_id} oracle@1x should meet its resources: {outcome}")
    assert not misses, "\n".join(misses)
    assert len(sensitive) >= 5
