"""The run's plan and every job's params (evalnoise.pipeline.run_plan), without Snakemake."""

from __future__ import annotations

import copy
from types import SimpleNamespace

import pytest
from pipeline_helpers import ROOT

from evalnoise.pipeline.effective_config import (
    GUARD_VARIABLE,
    config_record,
    run_record,
    strict_refusal,
)
from evalnoise.pipeline.judges import judge_specs
from evalnoise.pipeline.run_plan import TRIALS_DIR, PlanError, RunPlan, pair_groups
from evalnoise.pipeline.sampling import sample_tasks, task_pool_size
from evalnoise.pipeline.settings import ConfigError, resource_profile_spec, with_defaults
from evalnoise.pipeline.shard_plan import ShardPlan, journal_path
from evalnoise.pipeline.slurm_resources import shard_job_resources

GPQA = str(ROOT / "src" / "evalnoise" / "data" / "gpqa_diamond_example.csv")


def shard(**wildcards):
    """A job's wildcards, as Snakemake passes them (attributes)."""
    base = {
        "agent": "chat",
        "resource_profile": "3x",
        "block": "0002-0003",
        "chunk": "0006-0008",
        "variant": "",
    }
    return SimpleNamespace(**{**base, **wildcards})


@pytest.fixture
def run(default_config):
    return RunPlan.from_config(default_config)


def test_a_sampled_run_is_planned_from_its_tasks(default_config, run):
    tasks = sample_tasks(default_config["benchmark"])
    assert run.plan == ShardPlan.from_config(default_config, len(tasks))
    assert run.task_pool == task_pool_size(default_config["benchmark"])
    assert run.sequential is None and not run.imported
    assert run.planned_tasks().equals(tasks)
    assert run.planned_tasks() is run.planned_tasks()  # sampled once per parse
    assert list(run.judges) == list(judge_specs(default_config["scorer"]["judge"]))
    assert run.primary_judge == next(iter(run.judges))


def test_an_imported_table_plans_its_groups_only(default_config):
    columns = {**default_config["columns"], "group": "model"}
    config = {**default_config, "trials_from": GPQA, "columns": columns}
    run = RunPlan.from_config(config)
    assert run.imported and run.task_pool is None and run.sequential is None
    assert run.plan.blocks == () and run.plan.shards() == []
    assert run.plan.groups() and run.variant_params() == {}
    assert not run.judge_stage  # an imported table is never judged again


def test_a_plan_that_fails_says_so_and_a_bad_judge_names_its_key(default_config, tmp_path):
    config = copy.deepcopy(default_config)
    config["benchmark"] = {**config["benchmark"], "source": "file", "path": str(tmp_path / "x")}
    with pytest.raises(PlanError, match=r"^cannot plan the run: "):
        RunPlan.from_config(config)
    config = copy.deepcopy(default_config)
    config["scorer"]["judge"]["judges"] = {"r": {"rule": "last_number", "model": "m"}}
    with pytest.raises(ConfigError, match=r"^config key scorer\.judge\.judges\.r\.model"):
        RunPlan.from_config(config)


def test_a_shards_params(default_config, run):
    w = shard()
    assert run.trials_param(w) == [2, 3]
    assert run.rows_param(w) == [6, 8]
    assert run.journal_param(w) == str(
        journal_path(TRIALS_DIR, "chat", "3x", "0002-0003", "0006-0008", "")
    )
    assert run.journal_param(w).endswith("chat/3x/journals/t0002-c0006.jsonl")
    assert run.resource_profile_param(w) == resource_profile_spec(default_config, "3x")
    assert run.agent_param(w)["name"] == "chat"
    assert run.variant_params() == {}  # no variants: no `variant` param at all
    assert run.infra_policy_param() == {"mode": "as_incorrect"}
    assert set(run.machine_param()) == {"host", "cpu_model"}


def test_the_canary_runs_in_the_roomiest_profile(default_config, run):
    limits = {
        name: spec["memory_limit_factor"]
        for name, spec in default_config["resource_profiles"].items()
    }
    assert run.canary_profile_param()["name"] == max(limits, key=limits.get)


def test_a_served_agent_takes_the_model_server(default_config, run):
    for agent, spec in default_config["agents"].items():
        served = spec["model"] == "served"
        assert run.agent_server_tokens(shard(agent=agent)) == int(served)
        assert (run.agent_server(shard(agent=agent)) is not None) == served


def test_each_judge_job_has_its_own_judge(default_config, run):
    first, *others = run.judges
    assert run.judge_spec()["name"] == first
    for name in others:
        assert run.judge_spec(shard(judge=name))["name"] == name
        assert run.judge_scorer_param(shard(judge=name))["judge"]["name"] == name
        assert run.judge_scorer_param(shard(judge=name))["name"] == "judge"
    # the reference scorer is not the judge here: it needs no server
    assert default_config["scorer"]["name"] != "judge"
    assert run.scorer_server() is None and run.scorer_server_tokens() == 0
    assert run.judges_param() is run.judges


def test_no_judge_no_template_hash(default_config):
    config = copy.deepcopy(default_config)
    config["scorer"]["judge"]["stage"] = False
    run = RunPlan.from_config(config)
    assert not run.judge_stage and run.judge_template_hash() is None
    assert RunPlan.from_config(default_config).judge_template_hash() is not None


def test_pairs_within_a_profile_and_within_an_agent():
    agents = SimpleNamespace(kind="agents", within="3x", a="a1", b="a2")
    profiles = SimpleNamespace(kind="resource_profiles", within="a1", a="1x", b="3x")
    assert pair_groups(agents) == (("a1", "3x"), ("a2", "3x"))
    assert pair_groups(profiles) == (("a1", "1x"), ("a1", "3x"))


def test_imported_names_come_back_as_the_tables(default_config):
    plan = ShardPlan.from_groups([("openai/gpt-5", "big box"), ("x", "big box")])
    run = RunPlan(default_config, plan, None, {"llm": {}}, None)
    (a, profile) = plan.groups()[0]
    assert run.group_param(SimpleNamespace(agent=a, resource_profile=profile)) == [
        "openai/gpt-5",
        "big box",
    ]
    assert run.plan_groups_param() == [["openai/gpt-5", "big box"], ["x", "big box"]]
    w = SimpleNamespace(kind="agents", within=profile, a=a, b=plan.groups()[1][0])
    assert run.pair_groups_param(w) == {"a": ["openai/gpt-5", "big box"], "b": ["x", "big box"]}


def test_the_slurm_request_is_the_shards_and_asked_once(default_config, run):
    w = shard(agent="tool_agent_local", resource_profile="1x")
    expected = shard_job_resources(
        sample_tasks(default_config["benchmark"]).iloc[6:9],
        resource_profile_spec(default_config, "1x"),
        trials=2,
        concurrency=3,
        infra_policy={"mode": "as_incorrect"},
        served=default_config["agents"]["tool_agent_local"]["model"] == "served",
    )
    assert run.run_trials_cpus(w, 3) == expected.cpus_per_task
    assert run.run_trials_mem_mb(w, 3) == expected.mem_mb
    assert run.run_trials_runtime(w, 3) == expected.runtime
    assert run.shard_request(w, 3) is run.shard_request(w, 3)
    assert run.shard_request(w, 1) is not run.shard_request(w, 3)


def test_variants_add_a_variant_param(default_config):
    config = copy.deepcopy(default_config)
    config["variants"]["prompt"] = ["{question}", "Q: {question}"]
    run = RunPlan.from_config(config)
    params = run.variant_params()
    assert list(params) == ["variant"]
    segments = [v.segment for v in run.plan.agent_variants("chat")]
    assert len(segments) == 2
    keys = {params["variant"](shard(variant=s))["key"] for s in segments}
    assert len(keys) == 2


# -- the effective config's record and guard ---------------------------------------------------


def test_the_record_is_against_the_config_file_with_defaults(default_config, schema, tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text("trials: {count: 2}\n", encoding="utf-8")
    record = run_record(default_config, path, schema)
    assert record == config_record(default_config, with_defaults({"trials": {"count": 2}}, schema))
    assert "trials.count" in record["overridden"]
    assert run_record(default_config, tmp_path / "absent.yaml", schema) == config_record(
        default_config, with_defaults({}, schema)
    )


def test_only_a_strict_run_is_refused(default_config, schema, tmp_path):
    import json

    record = config_record({**default_config, "run_seed": 7}, with_defaults({}, schema))
    path = tmp_path / "config.json"
    path.write_text(json.dumps(record), encoding="utf-8")
    assert strict_refusal(default_config, {}, str(path)) is None
    message = strict_refusal(default_config, {GUARD_VARIABLE: "strict"}, str(path))
    assert message and "run_seed" in message and str(path) in message
    assert strict_refusal(default_config, {GUARD_VARIABLE: "strict"}, str(tmp_path / "no")) is None
