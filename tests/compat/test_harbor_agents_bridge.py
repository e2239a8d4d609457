"""Harbor's own agents, unchanged, in evalnoise's environment trials (issue 37, items 1 and 4):
``agents/harbor_agent/bridge.py`` runs Harbor's agent class in Harbor's Python (PyPI
``harbor`` 0.25, tools/install-harbor.sh) as an exec-protocol agent of the real engine.

- Harbor's ``oracle`` and ``nop`` through the bridge earn, on every example task
  (``examples/harbor-tasks/``, 18), the reward evalnoise's built-in ``oracle`` and ``null``
  earn on the same task at the same profile: 1.0 and 0.0, as
  tests/runner/test_runner_example_tasks.py runs the built-ins and asserts. The oracle
  crosses the bridge's file transfers (its ``solution/`` uploaded as a tar, ``oracle.txt``
  downloaded in chunks).
- An agent whose ``setup()`` raises (an installed agent that downloads itself: offline its
  install fails) ends ``agent_setup_error``, never a score; Harbor's own exception types are
  read with the Harbor importer's table.

Per-trial seconds of both are printed (``pytest -s``), not asserted. Without Harbor these
tests skip naming what is missing — and fail under CI.
"""

from __future__ import annotations

import json
import statistics
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from harbor_tools import harbor_missing
from model_stack import require

from evalnoise.runner import agent_spec, trial_seed
from evalnoise.runner.resources import resource_profile
from evalnoise.runner.trial import TrialRequest
from evalnoise.tasks.harbor_folders import environment_task_rows, load_harbor_tasks

pytestmark = [pytest.mark.docker, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "harbor-tasks"
BRIDGE = "agents/harbor_agent/bridge.py"
PROFILE = "3x"


def bridge_spec(
    name: str, agent: str, model: str | None = None, fork_server: bool = True, **kwargs
) -> dict:
    """The spec the pipeline makes of a Harbor agent: the bridge as the shard's fork server
    (``fork_server=False``: started afresh for every trial)."""
    block = {"agent": agent, "kwargs": kwargs, "model": model}
    return {
        "name": name,
        "command": ["{harbor_python}", str(REPO / BRIDGE)],
        "env": {"HARBOR_AGENT": json.dumps(block, sort_keys=True, separators=(",", ":"))},
        "fork_server": fork_server,
    }


@pytest.fixture(scope="module")
def backend(docker_engine):
    require(harbor_missing() is None, str(harbor_missing()))
    from evalnoise.runner.base_image import build_base_image
    from evalnoise.runner.environment import EnvironmentBackend

    backend = EnvironmentBackend(base=build_base_image(client=docker_engine))
    yield backend
    backend.cleanup("harbor-bridge")


@pytest.fixture(scope="module")
def rows() -> dict[str, dict]:
    # by folder name (the task ids are evalnoise/<folder>)
    rows = environment_task_rows(load_harbor_tasks(EXAMPLES))
    return {row["task_id"].split("/")[-1]: row for row in rows}


def run_trial(backend, row: dict, spec: dict) -> dict:
    request = TrialRequest(
        agent=agent_spec(spec),
        task=row,
        resource_profile=resource_profile(PROFILE),
        trial=0,
        attempt=1,
        seed=trial_seed(0, spec["name"], row["task_id"], 0),
        shard_id="harbor-bridge",
    )
    return backend.run_trial(request)


def test_harbor_oracle_and_nop_through_the_bridge_earn_the_builtin_rewards(backend, rows):
    assert len(rows) == 18
    # Harbor's agent → the reward evalnoise's built-in earns on every example task at this
    # profile (the built-in's trials are tests/runner/test_runner_example_tasks.py's)
    agents = {
        "harbor-oracle": (bridge_spec("harbor-oracle", "oracle"), "oracle", 1.0),
        "harbor-nop": (bridge_spec("harbor-nop", "nop"), "null", 0.0),
    }
    plan = [(task_id, agent) for task_id in sorted(rows) for agent in agents]

    def one(item):
        task_id, agent = item
        return item, run_trial(backend, rows[task_id], agents[agent][0])

    with ThreadPoolExecutor(max_workers=2) as pool:
        results = dict(pool.map(one, plan))
    misses = []
    for task_id in sorted(rows):
        for harbor, (_, builtin, reward) in agents.items():
            theirs = results[task_id, harbor]
            got = (theirs["status"], theirs["reward"])
            if got != ("ok", reward):
                misses.append(
                    f"{task_id}: {harbor} {got}, the built-in {builtin} ('ok', {reward}): "
                    f"{theirs['error']} {theirs['stderr_tail'] and theirs['stderr_tail'][-600:]}"
                )
    assert not misses, "\n".join(misses)
    # the oracle's files crossed the bridge: every trial sent commands through the protocol
    assert all(results[t, "harbor-oracle"]["agent_steps"] >= 3 for t in rows)
    assert all(results[t, "harbor-nop"]["agent_steps"] == 0 for t in rows)
    for agent in agents:
        seconds = [results[t, agent]["duration_s"] for t in rows]
        phase = [results[t, agent]["agent_duration_s"] for t in rows]
        print(
            f"{agent}: container lifetime median {statistics.median(seconds):.2f} s, agent "
            f"phase median {statistics.median(phase):.2f} s over {len(rows)} trials"
        )


def test_an_agent_whose_setup_fails_is_agent_setup_error_never_a_score(backend, rows):
    row = rows["csv-to-jsonl"]
    # Harbor's installed agents install themselves in setup(): offline the download fails
    spec = bridge_spec("harbor-claude-code", "claude-code", "anthropic/claude-sonnet-4-5")
    result = run_trial(backend, row, spec)
    assert result["status"] == "agent_setup_error", (result["error"], result["stderr_tail"])
    assert result["phase"] == "agent"
    assert result["reward"] is None
    # Harbor's installer ran in the container and failed for want of a network
    assert "setup() raised NonZeroAgentExitCodeError" in result["error"]
    assert "apt-get" in result["stdout_tail"]


def test_a_missing_provider_key_is_infra_error_never_a_score(backend, rows, monkeypatch):
    """LiteLLM refuses the call before any request leaves the machine; Harbor's importer
    table reads its AuthenticationError as a misconfigured run (infra_error)."""
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    spec = bridge_spec(
        "harbor-terminus-nokey",
        "terminus-2",
        "anthropic/claude-sonnet-4-5",
        max_turns=1,
        record_terminal_session=False,
    )
    result = run_trial(backend, rows["csv-to-jsonl"], spec)
    assert result["status"] == "infra_error", (result["error"], result["stderr_tail"])
    assert result["reward"] is None
    assert "run() raised AuthenticationError" in result["error"]


def test_a_task_folder_given_relative_to_the_checkout_reaches_harbors_oracle(backend, rows):
    """The pipeline's task table holds task folders relative to the checkout; the bridge
    starts in its own home, so the runner gives it the folder absolute."""
    import os

    row = dict(rows["csv-to-jsonl"])
    row["task_dir"] = os.path.relpath(row["task_dir"])
    assert not os.path.isabs(row["task_dir"])
    # and the bridge started afresh for the trial (no fork server) does the same
    for fork_server in (True, False):
        spec = bridge_spec("harbor-oracle", "oracle", fork_server=fork_server)
        result = run_trial(backend, row, spec)
        assert (result["status"], result["reward"]) == ("ok", 1.0), result["error"]
