"""The shell agent (agents/shell_agent) on the offline model, in a real task container.

One environment trial of an example task with the real SmolLM2 server and the real engine:
the agent speaks the exec protocol, its commands run in the task's container, the verifier
scores what it left, and its model usage is recorded. A 135M model rarely solves a task;
what is checked is that every part of a real multi-turn episode happened and was recorded,
with ``{python}`` and the agent's relative path resolved when it starts.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from env_helpers import env_request
from model_stack import needs_model

from evalnoise.runner.actions import normalise_action

pytestmark = [pytest.mark.docker, pytest.mark.slow, needs_model]

ROOT = Path(__file__).resolve().parents[2]


def test_shell_agent_episode_is_recorded(env_backend, llama_server, monkeypatch):
    from evalnoise.pipeline.settings import RUNTIME_URL_VAR

    monkeypatch.chdir(ROOT)  # the agent's path is relative to the checkout
    spec = {
        "name": "shell_agent",
        "command": ["{python}", "agents/shell_agent/agent.py"],
        "env": {
            "AGENT_BACKEND": "http",
            "AGENT_MODEL": llama_server.model,
            "AGENT_TEMPERATURE": "0.8",
            "AGENT_MAX_TOKENS": "48",
            "AGENT_MAX_STEPS": "3",
        },
        "runtime_env": [RUNTIME_URL_VAR],
    }
    request = env_request(ROOT / "examples" / "harbor-tasks" / "csv-to-jsonl", spec, "3x")
    # the served model's URL reaches the agent at run time, as the pipeline passes it
    request = replace(request, runtime={RUNTIME_URL_VAR: llama_server.base_url})
    row = env_backend.run_trial(request)
    assert row["status"] == "ok", (row["error"], row["stderr_tail"])
    assert row["reward"] in (0.0, 1.0) and row["phase"] is None
    # the model was called (1 to 3 times: AGENT_MAX_STEPS) and every token counted
    assert 1 <= row["model_calls"] <= 3
    assert row["prompt_tokens"] > 0 and row["completion_tokens"] > 0
    assert 0 <= row["agent_steps"] <= 2  # the last call can only finish
    assert "model call(s)" in row["stderr_tail"]
    # its commands, in order, are the trial's actions (normalised: whitespace collapsed, the
    # task's working directory a placeholder); the transcript is every request it sent
    sent = [
        json.loads(line)["exec"]
        for line in row["stdout_tail"].splitlines()
        if line.startswith("{") and "exec" in json.loads(line)
    ]
    assert len(row["actions"]) == len(sent) == row["agent_steps"]
    for action, command in zip(row["actions"], sent, strict=True):
        assert action == normalise_action(command) or "{workdir}" in action, (action, command)
