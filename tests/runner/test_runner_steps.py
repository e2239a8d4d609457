"""Multi-step environment trials (Harbor's [[steps]]): the reward strategies and early stop as
pure functions checked against Harbor 0.25's rules, and two-step tasks against the real
engine: the steps share one container, each has its own instruction, solution and verifier,
/tests does not outlive its step, a step's workdir and setup.sh run before it."""

from __future__ import annotations

import json
import textwrap

import pytest
from env_helpers import MadeImages, make_env_task, scripted_agent
from runner_helpers import shard_containers

from evalnoise.runner.steps import StepRun, combine_rewards, min_reward_failure

MADE = MadeImages()


@pytest.fixture(scope="module", autouse=True)
def _remove_made_images():
    """The task images this module's trials built are removed when it is done."""
    yield
    if MADE.tags:
        import docker

        MADE.remove(docker.from_env())


def run(name, rewards, status=None):
    return StepRun(name, status, None, None, rewards)


def test_mean_is_per_name_over_steps_with_a_verdict():
    runs = [
        run("a", {"reward": 1.0, "style": 0.5}),
        run("b", None, "timeout"),
        run("c", {"reward": 0.0}),
    ]
    # Harbor: missing names count 0, steps without a verdict are left out of the denominator
    assert combine_rewards(runs, "mean") == {"reward": 0.5, "style": 0.25}
    assert combine_rewards([run("a", None)], "mean") is None
    assert combine_rewards([], "mean") is None


def test_final_is_the_last_step_as_it_is():
    assert combine_rewards([run("a", {"reward": 1.0}), run("b", {"reward": 0.25})], "final") == {
        "reward": 0.25
    }
    assert combine_rewards([run("a", {"reward": 1.0}), run("b", None)], "final") is None


@pytest.mark.parametrize(
    ("rewards", "thresholds", "failure"),
    [
        ({"reward": 1.0}, {"reward": 1.0}, None),
        ({"reward": 0.5}, {"reward": 1.0}, "reward=0.5 below min_reward 1"),
        ({"reward": 1.0}, {"reward": 1.0, "style": 0.5}, "style=-inf below min_reward 0.5"),
        (None, {"reward": 0.0}, "reward=-inf below min_reward 0"),
    ],
)
def test_min_reward_gates_like_harbor(rewards, thresholds, failure):
    assert min_reward_failure(rewards, thresholds) == failure


# -- real engine -------------------------------------------------------------------------------

STEPS = """
[[steps]]
name = "one"
{one_extra}

[[steps]]
name = "two"
"""


def two_step_task(root, name, *, one_test, two_test, strategy="mean", one_extra=""):
    folder = make_env_task(
        root,
        name,
        test_sh="echo 0 > /logs/verifier/reward.txt\n",  # the shared test.sh, never run here
        extra_toml=STEPS.format(one_extra=one_extra),
    )
    toml = folder / "task.toml"
    toml.write_text(f'multi_step_reward_strategy = "{strategy}"\n' + toml.read_text())
    (folder / "instruction.md").unlink()
    files = {
        "steps/one/instruction.md": "Create /app/one.\n",
        "steps/one/solution/solve.sh": "echo making one; touch /app/one\n",
        "steps/one/tests/test.sh": one_test,
        "steps/two/instruction.md": "Create /app/two.\n",
        # the second step's solution proves the container is the same, /tests is gone and
        # its workdir's setup.sh ran
        "steps/two/solution/solve.sh": (
            "test -e /app/one && test ! -e /tests && test -e /app/setup-ran && touch /app/two\n"
        ),
        "steps/two/workdir/setup.sh": "touch /app/setup-ran\n",
        "steps/two/workdir/data.txt": "for step two\n",
        "steps/two/tests/test.sh": two_test,
    }
    for rel, text in files.items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("#!/bin/bash\n" + textwrap.dedent(text))
    return folder


REWARD_IF = "if {cond}; then echo {yes}; else echo 0; fi > /logs/verifier/reward.txt\n"


@pytest.mark.docker
def test_two_steps_in_one_container_scored_by_the_mean(env_backend, docker_engine, tmp_path):
    folder = two_step_task(
        tmp_path,
        "steps-two",
        one_test=REWARD_IF.format(cond="test -e /app/one", yes=1),
        two_test=REWARD_IF.format(cond="test -e /app/two && test -e /app/data.txt", yes=1),
    )
    row = MADE.trial(env_backend, folder, "oracle", shard_id="steps-two")
    assert (row["status"], row["reward"]) == ("ok", 1.0), (row["error"], row["stdout_tail"])
    assert json.loads(row["step_rewards_json"]) == [
        {"step": "one", "status": "ok", "rewards": {"reward": 1.0}},
        {"step": "two", "status": "ok", "rewards": {"reward": 1.0}},
    ]
    assert row["rewards_json"] == '{"reward":1.0}'
    assert "[step one]\nmaking one" in row["stdout_tail"]
    assert shard_containers(docker_engine, "steps-two") == []
    # the null agent: both steps verified, both 0
    null = MADE.trial(env_backend, folder, "null", shard_id="steps-null")
    assert (null["status"], null["reward"]) == ("ok", 0.0)
    assert [s["rewards"] for s in json.loads(null["step_rewards_json"])] == [
        {"reward": 0.0},
        {"reward": 0.0},
    ]


@pytest.mark.docker
def test_min_reward_stops_early_and_final_takes_the_last_step(env_backend, tmp_path):
    stopped = two_step_task(
        tmp_path,
        "steps-stop",
        one_test=REWARD_IF.format(cond="false", yes=1),
        two_test=REWARD_IF.format(cond="true", yes=1),
        one_extra="min_reward = 1.0",
    )
    row = MADE.trial(env_backend, stopped, "oracle", shard_id="steps-stop")
    assert (row["status"], row["reward"]) == ("ok", 0.0)
    assert [s["step"] for s in json.loads(row["step_rewards_json"])] == ["one"]
    assert row["error"] == "stopped after step 'one' (1 of 2): reward=0 below min_reward 1"

    final = two_step_task(
        tmp_path,
        "steps-final",
        one_test=REWARD_IF.format(cond="true", yes=1),
        two_test=REWARD_IF.format(cond="true", yes=0.25),
        strategy="final",
    )
    row = MADE.trial(env_backend, final, "oracle", shard_id="steps-final")
    assert (row["status"], row["reward"]) == ("ok", 0.25)


@pytest.mark.docker
def test_a_step_without_a_verdict_stops_and_fails_the_trial(env_backend, tmp_path):
    folder = two_step_task(
        tmp_path,
        "steps-noverdict",
        one_test="echo no reward\n",
        two_test=REWARD_IF.format(cond="true", yes=1),
    )
    row = MADE.trial(env_backend, folder, "oracle", shard_id="steps-none")
    assert (row["status"], row["phase"], row["reward"]) == ("verifier_error", "verifier", None)
    assert row["error"].startswith("step 'one': no reward file")
    assert json.loads(row["step_rewards_json"]) == [
        {"step": "one", "status": "verifier_error", "rewards": None}
    ]


@pytest.mark.docker
def test_healthchecks_are_polled_before_the_agent(env_backend, tmp_path):
    """[environment].healthcheck as Harbor polls it: retries consecutive failures fail the
    trial before its agent runs (infra_error in setup); a passing one lets it run."""
    failing = make_env_task(
        tmp_path,
        "hc-unhealthy",
        test_sh="echo 1 > /logs/verifier/reward.txt\n",
        solve_sh="touch /app/ran\n",
        extra_toml=(
            "[environment.healthcheck]\n"
            'command = "test -e /app/ready"\ninterval_sec = 0\nretries = 2\ntimeout_sec = 5\n'
        ),
    )
    row = MADE.trial(env_backend, failing, "oracle", shard_id="steps-hc")
    assert (row["status"], row["phase"], row["exit_code"]) == ("infra_error", "setup", None)
    assert row["error"] == "healthcheck failed after 2 consecutive retries: test -e /app/ready"
    healthy = make_env_task(
        tmp_path,
        "hc-healthy",
        test_sh="echo 1 > /logs/verifier/reward.txt\n",
        solve_sh="true\n",
        extra_toml='[environment.healthcheck]\ncommand = "test -d /app"\n',
    )
    row = MADE.trial(env_backend, healthy, "oracle", shard_id="steps-hc")
    assert (row["status"], row["reward"]) == ("ok", 1.0)


@pytest.mark.docker
def test_an_external_agent_runs_every_step(env_backend, tmp_path):
    """The agent runs once per step in the same container, with its home kept and the
    step's own task file (a read-only one left by the step before is replaced)."""
    folder = two_step_task(
        tmp_path,
        "steps-external",
        one_test=REWARD_IF.format(cond="test -e /app/one", yes=1),
        two_test=REWARD_IF.format(cond="test -e /app/two && test -e /app/data.txt", yes=1),
    )
    agent = scripted_agent([{"exec": "touch /app/one /app/two"}])
    row = MADE.trial(env_backend, folder, agent, shard_id="steps-external")
    assert (row["status"], row["reward"]) == ("ok", 1.0), (row["error"], row["stderr_tail"])
    assert [s["status"] for s in json.loads(row["step_rewards_json"])] == ["ok", "ok"]
    # the trial's actions: each step's command, in order, the task's workdir normalised
    assert row["actions"] == ["touch {workdir}/one {workdir}/two"] * 2
