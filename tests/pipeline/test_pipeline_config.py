"""Config validation: every problem is reported by its dotted key; defaults; documentation."""

from __future__ import annotations

import copy
import re
import subprocess

import pytest
from pipeline_helpers import ROOT, SCHEMA_PATH, snakemake_bin, tool_env

from evalnoise.pipeline.settings import (
    RUNTIME_URL_VAR,
    ConfigError,
    agent_spec,
    check_config,
    infra_policy_spec,
    with_defaults,
)


def problems(config: dict, schema: dict) -> str:
    with pytest.raises(ConfigError) as info:
        check_config(config, schema)
    return str(info.value)


def test_the_default_config_is_valid_and_complete(default_config_raw, schema):
    check_config(default_config_raw, schema)
    # the schema's defaults are the embedded default config ...
    assert with_defaults({}, schema) == with_defaults(default_config_raw, schema)
    # ... and config.yaml spells out every key (agents and judges list only what they set)
    filled = with_defaults(default_config_raw, schema)
    filled.pop("agents")
    raw = copy.deepcopy({k: v for k, v in default_config_raw.items() if k != "agents"})
    for config in (filled, raw):
        judges = config["scorer"]["judge"].pop("judges")
    assert filled == raw
    assert judges == {"llm": {}, "last_number": {"rule": "last_number"}}


#: Configs as users write them: partial agents, profiles, judges, facets, sequential rounds,
#: an imported run, nothing at all, and the two shipped files.
PARTIAL_CONFIGS = {
    "empty": {},
    "agents only": {"agents": {"a": {"program": "chat"}, "b": {"model": "served"}}},
    "profiles": {"resource_profiles": {"big": {"memory_limit_factor": 4.0}, "small": {}}},
    "judges": {"scorer": {"judge": {"judges": {"j": {}, "r": {"rule": "last_number"}}}}},
    "facets": {"variants": {"sampling": {"AGENT_MAX_STEPS": [1, 3]}}},
    "sequential": {"sequential": {"enabled": True, "first_round": {"tasks": 4}}},
    "imported": {"trials_from": "x.csv", "columns": {"group": "model"}},
    "trials": {"trials": {"count": 7}, "analysis": {"bootstrap": {}}},
}


@pytest.mark.parametrize(
    "config",
    [*PARTIAL_CONFIGS.values(), "config/config.yaml", "config/environment.yaml"],
    ids=[*PARTIAL_CONFIGS, "config.yaml", "environment.yaml"],
)
def test_defaults_are_snakemakes_defaults(config, schema):
    """rules/common.smk fills the defaults with with_defaults instead of Snakemake's
    validate(set_default=True); the two must fill the same keys with the same values."""
    import yaml
    from snakemake.utils import validate

    if isinstance(config, str):
        config = yaml.safe_load((ROOT / config).read_text())
    by_snakemake = copy.deepcopy(config)
    validate(by_snakemake, schema=str(SCHEMA_PATH))
    assert with_defaults(config, schema) == by_snakemake


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda c: c.update(trails=3), "config key trails: unknown key"),
        (
            lambda c: c["trials"].update(cuont=16),
            "config key trials.cuont: unknown key (allowed: block_size, count)",
        ),
        (
            lambda c: c["trials"].update(count="16"),
            "config key trials.count: '16' is not of type 'integer'",
        ),
        (
            lambda c: c["trials"].update(block_size=0),
            "config key trials.block_size: 0 is less than the minimum of 1",
        ),
        (
            lambda c: c["agents"]["chat"].update(temprature=0.3),
            "config key agents.chat.temprature: unknown key",
        ),
        (
            lambda c: c["resource_profiles"]["3x"].update(memory_limit_factor=-1),
            "config key resource_profiles.3x.memory_limit_factor",
        ),
        (
            lambda c: c["agents"].update({"bad name": c["agents"]["chat"]}),
            "config key agents.bad name: name not allowed",
        ),
        (
            lambda c: c["analysis"]["bootstrap"].update(resamples=10),
            "config key analysis.bootstrap.resamples: 10 is less than the minimum of 100",
        ),
        (lambda c: c["scorer"].update(name="llm"), "config key scorer.name: 'llm' is not one of"),
        (
            lambda c: c.update(backend="kubernetes"),
            "config key backend: 'kubernetes' is not one of ['docker', 'local']",
        ),
        (
            lambda c: c["benchmark"]["columns"].update(prompt="q"),
            "config key benchmark.columns.prompt: name not allowed",
        ),
    ],
)
def test_schema_errors_name_the_key(default_config_raw, schema, change, expected):
    config = copy.deepcopy(default_config_raw)
    change(config)
    assert expected in problems(config, schema)


def test_every_problem_is_listed(default_config_raw, schema):
    config = copy.deepcopy(default_config_raw)
    config["trials"]["count"] = 0
    config["run_sed"] = 1
    message = problems(config, schema)
    assert "config key trials.count:" in message
    assert "config key run_sed: unknown key" in message


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            lambda c: c["agents"]["chat"].update(image="x:1"),
            "config key agents.chat: give exactly one of program, build or image",
        ),
        (
            lambda c: c["agents"]["chat"]["env"].update(AGENT_BASE_URL="http://x"),
            "config key agents.chat.env.AGENT_BASE_URL: set by the pipeline",
        ),
        (
            lambda c: c["benchmark"].update(source="file"),
            "config key benchmark.path: required when benchmark.source is 'file'",
        ),
        (
            lambda c: c.update(backend="local"),
            "config key agents.chat.command: required with the local backend",
        ),
        (
            lambda c: c["benchmark"].update(
                source="harbor", path="tasks", network="offline", network_name="lab"
            ),
            "config key benchmark.network_name: names the network public-network tasks join, "
            "which they have only with benchmark.network: as_declared (not 'offline')",
        ),
        (
            lambda c: c["agents"]["chat"]["env"].update(OPENAI_API_KEY="sk-live-1234567890"),
            "config key agents.chat.env.OPENAI_API_KEY: holds a literal value",
        ),
    ],
)
def test_semantic_errors_name_the_key(default_config_raw, schema, change, expected):
    config = copy.deepcopy(default_config_raw)
    change(config)
    assert expected in problems(config, schema)


def test_a_secret_is_named_never_given(default_config_raw, schema):
    config = copy.deepcopy(default_config_raw)
    config["agents"]["chat"]["env"]["OPENAI_API_KEY"] = "OPENAI_API_KEY"  # a name: fine
    check_config(config, schema)


def _walk(schema: dict, node: dict, prefix: str = ""):
    """(dotted key, property schema) of every declared key."""
    if "$ref" in node:
        target = schema
        for part in node["$ref"][2:].split("/"):
            target = target[part]
        node = target
    for name, sub in (node.get("properties") or {}).items():
        key = f"{prefix}.{name}" if prefix else name
        yield key, sub
        yield from _walk(schema, sub, key)
    extra = node.get("additionalProperties")
    if isinstance(extra, dict):
        yield from _walk(schema, extra, f"{prefix}.<name>")


def test_every_key_has_description_default_and_docs(schema):
    readme = (ROOT / "config" / "README.md").read_text(encoding="utf-8")
    keys = list(_walk(schema, schema))
    assert len(keys) > 60
    for key, sub in keys:
        assert sub.get("description"), f"{key} has no description"
        assert "default" in sub, f"{key} has no default"
        assert f"`{key}`" in readme, f"{key} is not documented in config/README.md"


def test_every_object_is_closed(schema):
    def objects(node, where="(top)"):
        if isinstance(node, dict):
            if node.get("type") == "object" and "properties" in node:
                yield where, node
            for key, value in node.items():
                yield from objects(value, f"{where}/{key}")

    found = list(objects(schema))
    assert found
    for where, node in found:
        assert node.get("additionalProperties") is False, where


def test_agent_spec_carries_names_never_values(default_config):
    spec = agent_spec(default_config, "chat")
    assert spec["network"] == "host"
    assert spec["env"]["AGENT_BACKEND"] == "http"
    assert spec["env"]["AGENT_MODEL"] == default_config["model_server"]["alias"]
    assert RUNTIME_URL_VAR in spec["runtime_env"] and RUNTIME_URL_VAR not in spec["env"]
    assert RUNTIME_URL_VAR not in spec["secret_env"]  # a URL is no secret: never redacted
    assert spec["env"]["AGENT_TEMPERATURE"] == "0.8"


def test_infra_policy_spec(default_config):
    assert infra_policy_spec(default_config) == {"mode": "as_incorrect"}
    default_config["infra_policy"]["mode"] = "retry"
    assert infra_policy_spec(default_config) == {
        "mode": "retry",
        "max_attempts": 3,
        "on_exhausted": "as_incorrect",
    }


def test_snakemake_reports_the_bad_key(tmp_path):
    """The message a user sees from `snakemake` itself names the key, and nothing runs."""
    result = subprocess.run(
        [
            snakemake_bin(),
            "-n",
            "--directory",
            str(ROOT),
            "--snakefile",
            str(ROOT / "Snakefile"),
            "--config",
            "trials={count: 8, blocksize: 4}",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        # the suite's environment for a local run: without it Snakemake loads the cluster
        # plugins, and the Slurm plugin's `scontrol` waited 9 s for a controller (12 s in
        # all against 2 s, measured)
        env=tool_env(ROOT),
    )
    assert result.returncode != 0
    output = result.stdout + result.stderr
    assert re.search(
        r"config key trials\.blocksize: unknown key \(allowed: block_size, count\)", output
    ), output[-2000:]
    assert "Traceback" not in output
