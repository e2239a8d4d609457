"""agentlib counts the model usage of every reply and writes it into the answer record.

Against the real llama-cpp-python server (the session's ``llama_server``) and the real
llama_cpp library in process: no server is mocked. Unknown is null, a known zero is 0.
"""

from __future__ import annotations

import json
import sys

import pytest
from agent_helpers import AGENTS, run_agent

from evalnoise.models import ChatClient
from evalnoise.models.agent_images import agent_env
from evalnoise.tasks import generate_tasks

sys.path.insert(0, str(AGENTS / "common"))
import agentlib

TASKS = generate_tasks(2, seed=0)
MESSAGES = [
    [{"role": "user", "content": "What is 2 + 3? Answer with a number."}],
    [{"role": "user", "content": "Name a colour."}],
]
MAX_TOKENS = 12


@pytest.fixture
def fresh(monkeypatch, tmp_path):
    """A process whose agentlib has made no model client yet; answers go to a temp file."""
    monkeypatch.setattr(agentlib, "USAGE", None)
    output = tmp_path / "answer.json"
    monkeypatch.setenv("EVALNOISE_OUTPUT", str(output))
    return output


def _served(monkeypatch, server) -> None:
    for name, value in agent_env("http", base_url=server.base_url, model=server.model).items():
        monkeypatch.setenv(name, value)


def test_http_model_sums_the_servers_usage(llama_server, monkeypatch, fresh):
    _served(monkeypatch, llama_server)
    model = agentlib.load_model()
    for i, messages in enumerate(MESSAGES):
        model.chat(messages, temperature=0.0, max_tokens=MAX_TOKENS, seed=i)
    # the same requests straight to the server: greedy decoding, so the same replies
    client = ChatClient(llama_server.base_url, llama_server.model, timeout=60)
    replies = [
        client.chat(messages, temperature=0.0, max_tokens=MAX_TOKENS, seed=i)
        for i, messages in enumerate(MESSAGES)
    ]
    assert all(r.prompt_tokens > 0 and 0 < r.completion_tokens <= MAX_TOKENS for r in replies)
    assert agentlib.USAGE.to_dict() == {
        "model_calls": 2,
        "prompt_tokens": sum(r.prompt_tokens for r in replies),
        "completion_tokens": sum(r.completion_tokens for r in replies),
    }
    agentlib.write_answer("5", steps=2)
    record = json.loads(fresh.read_text())
    assert record == {"answer": "5", "steps": 2, "usage": agentlib.USAGE.to_dict()}


def test_a_loaded_model_never_called_is_a_known_zero(llama_server, monkeypatch, fresh):
    _served(monkeypatch, llama_server)
    agentlib.load_model()
    agentlib.write_answer("x")
    usage = json.loads(fresh.read_text())["usage"]
    assert usage == {"model_calls": 0, "prompt_tokens": 0, "completion_tokens": 0}


def test_without_a_model_client_nothing_is_claimed(fresh):
    agentlib.write_answer("x")
    assert json.loads(fresh.read_text()) == {"answer": "x"}  # unknown: the runner records null
    agentlib.write_answer("y", usage={"model_calls": 1})  # an agent's own report wins
    assert json.loads(fresh.read_text())["usage"] == {"model_calls": 1}


def test_an_unreported_count_makes_the_total_unknown(monkeypatch):
    monkeypatch.setattr(agentlib, "USAGE", None)
    usage = agentlib._usage()
    usage.add({"prompt_tokens": 10, "completion_tokens": 2})
    usage.add({"prompt_tokens": 7})  # this reply did not say how many it wrote
    usage.add(None)  # nor this one anything
    usage.add({"prompt_tokens": "3", "completion_tokens": True})  # no counts at all
    assert usage.to_dict() == {"model_calls": 4, "prompt_tokens": None, "completion_tokens": None}


def test_local_model_counts_llama_cpp_usage(requires_model_stack, monkeypatch, fresh):
    from evalnoise.models.server import default_model_path

    monkeypatch.setenv("AGENT_BACKEND", "local")
    monkeypatch.setenv("AGENT_MODEL_PATH", str(default_model_path()))
    monkeypatch.setenv("AGENT_N_CTX", "512")
    model = agentlib.load_model()
    model.chat(MESSAGES[0], temperature=0.0, max_tokens=MAX_TOKENS, seed=0)
    model.chat(MESSAGES[1], temperature=0.0, max_tokens=MAX_TOKENS, seed=0)
    usage = agentlib.USAGE.to_dict()
    assert usage["model_calls"] == 2
    assert usage["prompt_tokens"] > 10 and 2 <= usage["completion_tokens"] <= 2 * MAX_TOKENS


@pytest.mark.parametrize("agent", ["chat", "tool_agent"])
def test_agents_report_usage_without_asking(llama_server, agent):
    env = agent_env("http", base_url=llama_server.base_url, model=llama_server.model)
    out = run_agent(agent, TASKS.iloc[0].to_dict(), seed=5, env={**env, "AGENT_MAX_TOKENS": "24"})
    assert out["exit_code"] == 0, out["stderr"]
    usage = out["record"]["usage"]
    calls = out["record"].get("steps", 1)  # the tool agent makes one call per step
    assert usage["model_calls"] == calls
    assert usage["prompt_tokens"] > 0 and 0 < usage["completion_tokens"] <= 24 * calls
