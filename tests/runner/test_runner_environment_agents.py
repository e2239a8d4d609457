"""External environment agents: a host program speaking the exec protocol with the runner,
against the real Docker engine (the scripted agent in tests/runner/agents/exec_script)."""

from __future__ import annotations

import json
import time

import pytest
from env_helpers import env_trial, make_env_task, scripted_agent

from evalnoise.runner.environment import EnvironmentBackend, Sandbox

pytestmark = pytest.mark.docker

REWARD_IF_HELLO = """\
if [ "$(cat /app/hello.txt 2>/dev/null)" = hello ]; then echo 1; else echo 0; fi \\
  > /logs/verifier/reward.txt
"""


def answers(row) -> list[dict]:
    return [
        json.loads(line[len("ANSWER ") :])
        for line in (row["stderr_tail"] or "").splitlines()
        if line.startswith("ANSWER ")
    ]


def test_exec_protocol_round_trip(env_backend, tmp_path):
    folder = make_env_task(tmp_path, "protocol", test_sh=REWARD_IF_HELLO)
    agent = scripted_agent(
        [
            {"exec": "pwd; id -un; echo hello > hello.txt"},
            {"exec": "cat hello.txt; echo oops >&2; exit 4"},
            {"exec": "head -c 100000 /dev/zero | tr '\\0' a"},
            {
                "exec": "python3 -c 'import socket; s = socket.socket(); "
                's.bind(("127.0.0.1", 0)); s.listen(); socket.create_connection(s.getsockname()); '
                'print(socket.if_nameindex(), "loopback ok")\''
            },
            {"write_instruction": "/app/instruction.txt"},
            {"exec": "cat /app/instruction.txt"},
            {"done": {"model_calls": 3, "prompt_tokens": 120, "completion_tokens": 30}},
        ]
    )
    backend = EnvironmentBackend(
        client=env_backend.client, images=env_backend.images, sandbox=Sandbox(exec_output_bytes=64)
    )
    row = env_trial(backend, folder, agent)
    assert (row["status"], row["reward"]) == ("ok", 1.0), row["error"]
    first, second, big, network, _, instruction = answers(row)
    assert first["exit_code"] == 0 and first["output"] == "/app\nroot\n"
    # stdout and stderr reach the engine on separate pipes: their relative order may vary
    assert second["exit_code"] == 4 and sorted(second["output"].splitlines()) == ["hello", "oops"]
    assert big["truncated_bytes"] == 100000 - 64
    assert big["output"] == "a" * 32 + "\n[... 99936 bytes left out ...]\n" + "a" * 32
    # network_mode none: a loopback that works (container_network), and nothing else
    assert network["output"] == "[(1, 'lo')] loopback ok\n"
    assert instruction["output"] == "Instruction of protocol.\n"
    assert row["agent_steps"] == 6 and row["exit_code"] == 0
    assert (row["model_calls"], row["prompt_tokens"], row["completion_tokens"]) == (3, 120, 30)
    assert '{"exec": "pwd; id -un; echo hello > hello.txt"}' in row["stdout_tail"]


def test_command_timeout_kills_only_that_command(env_backend, tmp_path):
    folder = make_env_task(tmp_path, "cmdtimeout", test_sh=REWARD_IF_HELLO)
    agent = scripted_agent(
        [
            {"exec": "sleep 30; echo never", "timeout_s": 1},
            {"exec": "echo hello > hello.txt; echo after"},
        ]
    )
    t0 = time.monotonic()
    row = env_trial(env_backend, folder, agent)
    assert time.monotonic() - t0 < 15
    assert (row["status"], row["reward"]) == ("ok", 1.0), row["error"]
    slow, after = answers(row)
    assert slow["timed_out"] is True and slow["exit_code"] == 137
    assert after == {**after, "exit_code": 0, "output": "after\n", "timed_out": False}


def test_agent_deadline_covers_the_whole_exchange(env_backend, tmp_path):
    folder = make_env_task(tmp_path, "deadline", test_sh=REWARD_IF_HELLO, agent_timeout=2.0)
    thinking = scripted_agent([{"exec": "echo hello > hello.txt"}, {"sleep": 60}])
    t0 = time.monotonic()
    row = env_trial(env_backend, folder, thinking)
    assert time.monotonic() - t0 < 15
    # the verifier still ran, and its verdict decides; the timeout stays a flag
    assert (row["status"], row["phase"], row["reward"]) == ("ok", "agent", 1.0)
    assert row["verified_after"] == "timeout"
    assert row["rewards_json"] == '{"reward":1.0}'
    running = scripted_agent([{"exec": "echo hello > hello.txt; sleep 60"}])
    row = env_trial(env_backend, folder, running)
    assert (row["status"], row["phase"], row["verified_after"]) == ("ok", "agent", "timeout")
    assert row["rewards_json"] == '{"reward":1.0}'


@pytest.mark.parametrize(
    ("steps", "status", "message"),
    [
        ([{"raw": "ls -la"}], "agent_error", "exec protocol: not a JSON line"),
        ([{"raw": '{"answer": 42}'}], "agent_error", 'neither "exec", "upload" nor "done"'),
        ([{"exit": 2}], "agent_error", "exit code 2"),
        ([{"exit": 0}], "agent_error", 'ended without {"done": true}'),
        ([{"exit": 75}], "infra_error", "exit code 75"),
    ],
)
def test_agent_failures(env_backend, tmp_path, steps, status, message):
    folder = make_env_task(tmp_path, "failing", test_sh=REWARD_IF_HELLO)
    row = env_trial(env_backend, folder, scripted_agent(steps))
    assert message in row["error"] and row["rewards_json"] == '{"reward":0.0}'
    if status == "agent_error":
        # the verifier ran after the agent failed and gave its verdict (0): it decides, the
        # agent's failure is the flag
        assert (row["status"], row["phase"], row["reward"]) == ("ok", "agent", 0.0)
        assert row["verified_after"] == "agent_error"
    else:  # the infrastructure's outcome keeps its policy, whatever the verifier said
        assert (row["status"], row["phase"], row["reward"]) == (status, "agent", None)
        assert row["verified_after"] is None


def test_missing_command_is_infra_error(env_backend, tmp_path):
    folder = make_env_task(tmp_path, "nocommand", test_sh=REWARD_IF_HELLO)
    agent = {"name": "ghost", "command": ["/nonexistent/agent"]}
    row = env_trial(env_backend, folder, agent)
    assert (row["status"], row["phase"]) == ("infra_error", "agent")
    assert "could not start" in row["error"]


def test_malformed_usage_is_noted_not_fatal(env_backend, tmp_path):
    folder = make_env_task(tmp_path, "usage", test_sh=REWARD_IF_HELLO)
    agent = scripted_agent([{"exec": "echo hello > hello.txt"}, {"done": {"model_calls": "many"}}])
    row = env_trial(env_backend, folder, agent)
    assert (row["status"], row["reward"], row["model_calls"]) == ("ok", 1.0, None)
    assert "usage ignored" in row["error"]
