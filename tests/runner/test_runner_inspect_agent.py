"""Inspect's agents, unchanged, in evalnoise's environment trials (issue 37, items 3 and 4):
``agents/inspect_agent/agent.py`` runs Inspect's own ``react()`` agent with its ``bash()``
tool (the released ``inspect_ai``, the ``inspect`` extra) against the real engine; its
sandbox provider sends every command to the trial's container through the exec protocol.

The model is a **scripted** OpenAI-compatible endpoint on loopback (this file's
:class:`ScriptedModel`): it answers with fixed tool calls, so the test checks the adapter —
Inspect's agent loop, its tool, the sandbox provider, the runner — and not a model. (The
served SmolLM2 on llama-cpp-python's server returns no tool calls: the server's chat format
for it has no function calling, so ``react()`` never calls ``bash`` with it.) Holds: the
agent's commands run in the container in the order the model gave them, each seeing the
last's effect; the verifier scores what the agent left; Inspect's usage becomes the trial's
cost drivers.
"""

from __future__ import annotations

import importlib.util
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from model_stack import require

from evalnoise.runner import agent_spec, trial_seed
from evalnoise.runner.resources import resource_profile
from evalnoise.runner.trial import TrialRequest
from evalnoise.tasks.harbor_folders import environment_task_rows, load_harbor_task

pytestmark = [pytest.mark.docker]

REPO = Path(__file__).resolve().parents[2]
TASK = REPO / "examples" / "harbor-tasks" / "env-greeting"
#: the model's turns: two bash commands (the second needs the first's file), then submit
SCRIPT = [
    ("bash", {"command": "echo first-step > /tmp/inspect-step.txt"}),
    ("bash", {"command": "cat /tmp/inspect-step.txt && echo second-step"}),
    ("submit", {"answer": "done"}),
]


class ScriptedModel(ThreadingHTTPServer):
    """``POST /v1/chat/completions`` → the next scripted tool call (10 prompt and 5
    completion tokens each); the requests are kept."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.requests: list[dict] = []

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        served = self.server.requests  # type: ignore[attr-defined]
        served.append(body)
        name, arguments = SCRIPT[min(len(served), len(SCRIPT)) - 1]
        reply = {
            "id": f"chatcmpl-{len(served)}",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", "scripted"),
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "tool_calls",
                    "message": {
                        "role": "assistant",
                        "content": "",
                        "tool_calls": [
                            {
                                "id": f"call_{len(served)}",
                                "type": "function",
                                "function": {"name": name, "arguments": json.dumps(arguments)},
                            }
                        ],
                    },
                }
            ],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def scripted_model():
    server = ScriptedModel()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def test_react_with_bash_runs_its_commands_in_the_trial_container_in_order(
    env_backend, scripted_model
):
    require(
        importlib.util.find_spec("inspect_ai"),
        "inspect_ai is not installed: pip install -e '.[inspect]'",
    )
    (row,) = environment_task_rows([load_harbor_task(TASK)])
    block = {
        "solver": "inspect_ai.agent.react",
        "tools": ["bash"],
        "model": "served",
        "kwargs": {},
        "generate": {"temperature": 0.0},
        "model_args": {"stream": False},
    }
    spec = agent_spec(
        {
            "name": "inspect-react",
            "command": ["{python}", str(REPO / "agents" / "inspect_agent" / "agent.py")],
            "env": {"AGENT_MODEL": "scripted", "INSPECT_AGENT": json.dumps(block)},
            "runtime_env": ["AGENT_BASE_URL"],
            "network": "host",
        }
    )
    result = env_backend.run_trial(
        TrialRequest(
            agent=spec,
            task=row,
            resource_profile=resource_profile("3x"),
            trial=0,
            attempt=1,
            seed=trial_seed(0, spec.name, row["task_id"], 0),
            shard_id="inspect-agent",
            runtime={"AGENT_BASE_URL": scripted_model.base_url},
        )
    )
    assert result["status"] == "ok", (result["error"], result["stderr_tail"])
    assert result["reward"] == 0.0  # the verifier's verdict: the agent did not do the task
    log = result["stdout_tail"]
    first, second = log.find("echo first-step"), log.find("echo second-step")
    assert 0 <= first < second, log
    # the second command saw the first's file: Inspect got the container's output back
    tool_results = [
        m["content"] for m in scripted_model.requests[2]["messages"] if m["role"] == "tool"
    ]
    assert any("first-step" in str(c) and "second-step" in str(c) for c in tool_results)
    assert result["model_calls"] == 3
    assert (result["prompt_tokens"], result["completion_tokens"]) == (30, 15)
    # the trial's seed reached the model call
    assert all(
        r.get("seed") == trial_seed(0, spec.name, row["task_id"], 0) & 0x7FFFFFFF
        for r in scripted_model.requests
    )
