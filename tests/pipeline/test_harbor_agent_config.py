"""``agents.<name>.harbor``: Harbor's agents in environment trials (issue 37, item 1) — the
config block's schema and cross-field rules, and the runner agent spec it becomes."""

from __future__ import annotations

import json

import pytest

from evalnoise.pipeline.settings import (
    HARBOR_BRIDGE,
    INSPECT_ADAPTER,
    RUNTIME_URL_VAR,
    ConfigError,
    agent_spec,
    check_config,
    with_defaults,
)
from evalnoise.runner.contract import AgentSpec


def environment_config(**agents) -> dict:
    return {
        "benchmark": {"source": "harbor", "path": "examples/harbor-tasks"},
        "scorer": {"name": "reward", "judge": {"stage": False}},
        "agents": agents,
        "health": {"expected_failures": []},
    }


def problems(config: dict, schema: dict) -> str:
    with pytest.raises(ConfigError) as info:
        check_config(config, schema)
    return str(info.value)


def test_a_harbor_agent_block_is_valid_and_becomes_the_bridge_spec(schema):
    config = environment_config(
        t2={
            "model": "served",
            "harbor": {"agent": "terminus-2", "model": "served", "kwargs": {"temperature": 0}},
        },
        hnop={"harbor": {"agent": "nop"}},
    )
    check_config(config, schema)
    full = with_defaults(config, schema)
    spec = agent_spec(full, "t2")
    assert spec["command"] == ["{harbor_python}", HARBOR_BRIDGE]
    assert json.loads(spec["env"]["HARBOR_AGENT"]) == {
        "agent": "terminus-2",
        "model": "served",
        "kwargs": {"temperature": 0},
    }
    # canonical: sorted keys, no spaces (it is part of every trial's identity)
    assert spec["env"]["HARBOR_AGENT"] == (
        '{"agent":"terminus-2","kwargs":{"temperature":0},"model":"served"}'
    )
    assert spec["env"]["AGENT_MODEL"] == full["model_server"]["alias"]
    assert RUNTIME_URL_VAR in spec["runtime_env"]
    # Harbor imported once per shard: the bridge is the shard's fork server
    assert AgentSpec.from_dict(spec).fork_server is True  # the runner takes it
    nop = agent_spec(full, "hnop")
    assert json.loads(nop["env"]["HARBOR_AGENT"]) == {"agent": "nop", "model": None, "kwargs": {}}
    assert nop["runtime_env"] == []


@pytest.mark.parametrize(
    ("agent", "expected"),
    [
        ({"harbor": {}}, "agents.a.harbor: 'agent' is a required"),
        ({"harbor": {"agent": "nop", "modle": "x"}}, "agents.a.harbor"),
        ({"harbor": {"agent": "bad name!"}}, "agents.a.harbor.agent"),
        ({"harbor": {"agent": "nop", "kwargs": []}}, "agents.a.harbor.kwargs"),
        ({"harbor": {"agent": "nop"}, "program": "oracle"}, "agents.a.program"),
        ({"harbor": {"agent": "nop"}, "command": ["x"]}, "agents.a.command"),
        ({"harbor": {"agent": "terminus-2", "model": "served"}}, "agents.a.model"),
        ({"harbor": {"agent": "nop"}, "model": "served"}, "agents.a.model"),
    ],
)
def test_a_bad_harbor_block_names_its_key(schema, agent, expected):
    assert expected in problems(environment_config(a=agent), schema)


def test_an_inspect_agent_block_is_valid_and_becomes_the_adapter_spec(schema):
    config = environment_config(
        react={
            "model": "served",
            "inspect": {
                "solver": "inspect_ai.agent.react",
                "tools": ["bash", "python"],
                "model": "served",
            },
        }
    )
    check_config(config, schema)
    spec = agent_spec(with_defaults(config, schema), "react")
    assert spec["command"] == ["{python}", INSPECT_ADAPTER]
    assert json.loads(spec["env"]["INSPECT_AGENT"]) == {
        "solver": "inspect_ai.agent.react",
        "tools": ["bash", "python"],
        "model": "served",
        "kwargs": {},
        "generate": {},
        "model_args": {},
    }
    AgentSpec.from_dict(spec)
    bad = environment_config(
        a={"model": "served", "inspect": {"solver": "x", "tools": ["web"], "model": "served"}}
    )
    assert "agents.a.inspect.tools[0]" in problems(bad, schema)
    both = environment_config(
        a={"harbor": {"agent": "nop"}, "inspect": {"solver": "m:f", "model": None}}
    )
    assert "agents.a.inspect: give harbor or inspect, not both" in problems(both, schema)


def test_a_harbor_agent_needs_environment_tasks(schema):
    config = {"agents": {"a": {"harbor": {"agent": "nop"}}}}
    assert "agents.a.harbor" in problems(config, schema)
    assert "benchmark.source: harbor" in problems(config, schema)


def test_the_shipped_terminus2_config_is_valid(schema):
    import yaml
    from pipeline_helpers import ROOT

    config = yaml.safe_load((ROOT / "examples" / "configs" / "terminus2.yaml").read_text())
    check_config(config, schema)
    spec = agent_spec(with_defaults(config, schema), "terminus2")
    block = json.loads(spec["env"]["HARBOR_AGENT"])
    assert block["agent"] == "terminus-2" and block["model"] == "served"
    assert block["kwargs"]["record_terminal_session"] is False  # no asciinema offline
