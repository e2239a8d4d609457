"""The agent contract's pure parts: specs, task payload, environment, answers, redaction."""

from __future__ import annotations

import json

import pytest

from evalnoise.runner import contract
from evalnoise.runner.contract import AgentSpec, parse_answer, redact, tail

TASK = {
    "task_id": "t-1",
    "question": "What is 2+2?",
    "answer": "4",
    "level": "easy",
    "cpus": 1.0,
    "memory_mb": 128,
    "time_limit_s": 30.0,
    "sampling_seed": 3,
}


def payload(**kw):
    return contract.task_payload(
        TASK,
        agent="a",
        resource_profile="3x",
        trial=2,
        attempt=1,
        seed=2**62 + 5,
        time_limit_s=30.0,
        **kw,
    )


def test_payload_has_the_task_but_never_the_answer():
    p = payload()
    assert "answer" not in p and "sampling_seed" not in p
    assert p["task_id"] == "t-1" and p["question"] == "What is 2+2?"
    assert (p["trial"], p["attempt"], p["seed"], p["seed32"]) == (2, 1, 2**62 + 5, 5)
    assert p["output_path"] == "/evalnoise/out/answer.json"
    assert p["resource_profile"] == "3x" and p["contract_version"] == 1


def test_environment_variables():
    spec = AgentSpec(name="a", image="img", env={"MODEL": "m"}, secret_env=("API_KEY",))
    env = contract.agent_environment(payload(), spec, {"API_KEY": "s3cret"})
    assert env["EVALNOISE_TASK_ID"] == "t-1"
    assert env["EVALNOISE_TRIAL"] == "2" and env["EVALNOISE_ATTEMPT"] == "1"
    assert env["EVALNOISE_SEED"] == str(2**62 + 5) and env["EVALNOISE_SEED32"] == "5"
    assert env["EVALNOISE_QUESTION"] == "What is 2+2?"
    assert env["EVALNOISE_TIME_LIMIT_S"] == "30.0"
    assert env["EVALNOISE_OUTPUT"] == "/evalnoise/out/answer.json"
    assert env["EVALNOISE_TASK_FILE"] == "/evalnoise/task.json"
    assert env["MODEL"] == "m" and env["API_KEY"] == "s3cret"


def test_huge_question_is_left_to_the_task_file():
    big = dict(TASK, question="x" * (contract.MAX_QUESTION_ENV_BYTES + 1))
    p = contract.task_payload(
        big, agent="a", resource_profile="1x", trial=0, attempt=1, seed=1, time_limit_s=1.0
    )
    env = contract.agent_environment(p, AgentSpec(name="a"), {})
    assert "EVALNOISE_QUESTION" not in env


def test_agent_spec_from_config():
    spec = AgentSpec.from_dict(
        {
            "name": "smol",
            "image": "evalnoise-smol:1",
            "command": "python3 -m agent --fast",
            "env": {"T": 0.8},
            "secret_env": ["OPENAI_API_KEY"],
            "network": "host",
        }
    )
    assert spec.command == ("python3", "-m", "agent", "--fast")
    assert spec.env == {"T": "0.8"} and spec.network == "host"
    assert spec.to_dict()["secret_env"] == ["OPENAI_API_KEY"]
    assert (spec.user, spec.pids_limit) == ("65534:65534", 256)


@pytest.mark.parametrize(
    "bad",
    [
        {"image": "x"},
        {"name": "a", "network": "bridge"},
        {"name": "a", "secret_env": "KEY"},
        {"name": "a", "env": {"EVALNOISE_SEED": "1"}},
        {"name": "a", "env": {"K": "1"}, "secret_env": ["K"]},
        {"name": "a", "env": {"BAD-NAME": "1"}},
        {"name": "a", "imgae": "typo"},
        {"name": "a", "command": []},
    ],
)
def test_invalid_agent_specs(bad):
    with pytest.raises(ValueError):
        AgentSpec.from_dict(bad)


def test_secret_values_come_from_the_environment_and_missing_ones_are_named():
    spec = AgentSpec(name="a", secret_env=("K1", "K2"))
    assert spec.secret_values({"K1": "v1", "K2": "v2", "OTHER": "x"}) == {"K1": "v1", "K2": "v2"}
    with pytest.raises(KeyError, match="K2") as info:
        spec.secret_values({"K1": "v1"})
    assert "v1" not in str(info.value)


def test_runtime_values_are_named_when_missing_and_cannot_double_as_secrets():
    spec = AgentSpec(name="a", runtime_env=("AGENT_BASE_URL",))
    assert spec.runtime_values({"AGENT_BASE_URL": "u"}) == {"AGENT_BASE_URL": "u"}
    assert AgentSpec.from_dict(spec.to_dict()) == spec
    with pytest.raises(KeyError, match="AGENT_BASE_URL"):
        spec.runtime_values({})
    with pytest.raises(ValueError, match="both secret_env and runtime_env"):
        AgentSpec(name="a", secret_env=("X",), runtime_env=("X",))


@pytest.mark.parametrize(
    "file,stdout,expected",
    [
        (b'{"answer": "42"}', "", "42"),
        (b'{"answer": 42}', "", "42"),
        (b'{"answer": {"b": 1, "a": [1, 2]}}', "", '{"a": [1, 2], "b": 1}'),
        (None, 'log line\n{"answer": "from stdout"}\n{"answer": "last"}\nbye\n', "last"),
        (b"not json", '{"answer": "fallback"}', "fallback"),
        (b'{"answer": "file wins"}', '{"answer": "stdout"}', "file wins"),
        (None, '{"no": 1}\n[1, 2]\n{broken\n', None),
        (b'{"answer": null}', "", None),
        (b'["answer"]', "", None),
        (b"\xff\xfe", "", None),
        (b'{"answer": "' + b"x" * (contract.MAX_ANSWER_BYTES + 10) + b'"}', "", None),
    ],
)
def test_parse_answer(file, stdout, expected):
    prediction, problem = parse_answer(file, stdout)
    assert prediction == expected
    assert (problem is None) == (expected is not None)


def test_redact_and_tail():
    assert redact("key=abc123 and abc123", {"K": "abc123"}) == "key=[REDACTED] and [REDACTED]"
    assert redact("ab abc", ["ab", "abc"]) == "[REDACTED] [REDACTED]"  # longest first
    assert redact("nothing", {"K": ""}) == "nothing"
    assert redact(None, {"K": "x"}) is None
    assert tail("short") == "short"
    long = "é" * 5000  # 2 bytes each
    cut = tail(long, 4096)
    assert len(cut.encode()) <= 4096 and cut == "é" * 2048


def test_write_task_file_is_read_only(tmp_path):
    path = tmp_path / "task.json"
    contract.write_task_file(path, payload())
    assert json.loads(path.read_text())["task_id"] == "t-1"
    assert path.stat().st_mode & 0o777 == 0o444


def test_fork_server_is_a_flag_of_an_agent_with_a_command_and_only_then_in_its_dict():
    plain = AgentSpec.from_dict({"name": "a", "command": ["x"]})
    assert plain.fork_server is False and "fork_server" not in plain.to_dict()
    warm = AgentSpec.from_dict({"name": "a", "command": ["x"], "fork_server": True})
    assert warm.to_dict()["fork_server"] is True
    assert AgentSpec.from_dict(warm.to_dict()) == warm
    with pytest.raises(ValueError, match="fork_server needs a command"):
        AgentSpec.from_dict({"name": "a", "builtin": "nop", "fork_server": True})
    with pytest.raises(ValueError, match="'fork_server' must be true or false"):
        AgentSpec.from_dict({"name": "a", "command": ["x"], "fork_server": "yes"})
