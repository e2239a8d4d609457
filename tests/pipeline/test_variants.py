"""Variants in the config and the plan: crossed levels, identity by content, checked keys."""

from __future__ import annotations

import copy

import pandas as pd
import pytest

from evalnoise.pipeline.collect import variant_trials
from evalnoise.pipeline.settings import ConfigError, agent_spec, check_config, with_defaults
from evalnoise.pipeline.shard_plan import ShardPlan, journal_path
from evalnoise.pipeline.variants import (
    NO_VARIANT,
    Variant,
    agent_variants,
    declared,
    prompt_levels,
    variant_key,
)

PARAPHRASE = "Answer with a number only.\n\n{question}"


def with_variants(config: dict, prompt=None, sampling=None, **agents) -> dict:
    config = copy.deepcopy(config)
    config["variants"] = {"prompt": prompt, "sampling": sampling or {}}
    for name, value in agents.items():
        config["agents"][name]["sampling"] = value
    return config


def test_without_variants_the_plan_is_todays(default_config):
    assert not declared(default_config)
    plan = ShardPlan.from_config(default_config, n_tasks=12)
    for agent in default_config["agents"]:
        assert plan.agent_variants(agent) == (NO_VARIANT,)
        # the agent spec the runner gets is the config's, unchanged
        spec = agent_spec(default_config, agent)
        assert plan.variant(agent, "").apply(spec) == spec
    shards = plan.shards()
    assert len(shards) == 4 * 2 * 2  # groups × blocks × chunks, as before variants
    assert {s.variant for s in shards} == {""}
    first = shards[0]
    assert first.wildcards == {
        "agent": "chat",
        "resource_profile": "3x",
        "block": "0000-0001",
        "chunk": "0000-0005",
        "variant": "",
    }
    assert str(journal_path("results/trials", "chat", "3x", "0004-0007", "0006-0011")) == (
        "results/trials/chat/3x/journals/t0004-c0006.jsonl"
    )


def test_levels_are_crossed_in_order_and_the_neutral_one_changes_nothing(default_config):
    config = with_variants(
        default_config,
        prompt=["{question}", PARAPHRASE],
        sampling={"AGENT_TEMPERATURE": [0.8, 0.2]},
    )
    variants = agent_variants(config, "chat")
    assert [(v.prompt, v.labels["sampling"]) for v in variants] == [
        ("p0", "AGENT_TEMPERATURE=0.8"),
        ("p0", "AGENT_TEMPERATURE=0.2"),
        ("p1", "AGENT_TEMPERATURE=0.8"),
        ("p1", "AGENT_TEMPERATURE=0.2"),
    ]
    # chat's own temperature is 0.8: p0 at 0.8 is the agent and task as configured
    neutral = variants[0]
    assert neutral.key == "" and neutral.segment == "" and neutral.identity == {}
    assert neutral.template is None and dict(neutral.env) == {}
    cooler = variants[1]
    assert dict(cooler.env) == {"AGENT_TEMPERATURE": "0.2"}
    assert cooler.key == variant_key({"env": {"AGENT_TEMPERATURE": "0.2"}})
    assert cooler.segment == f".v{cooler.key}" and len(cooler.key) == 12
    spec = agent_spec(config, "chat")
    assert cooler.apply(spec)["env"]["AGENT_TEMPERATURE"] == "0.2"
    assert cooler.apply(spec)["env"]["AGENT_MAX_TOKENS"] == spec["env"]["AGENT_MAX_TOKENS"]
    assert variants[2].identity == {"prompt": PARAPHRASE}
    assert variants[3].identity == {"prompt": PARAPHRASE, "env": {"AGENT_TEMPERATURE": "0.2"}}
    assert len({v.key for v in variants}) == 4
    tv = variants[3].trial_variant()
    assert (tv.key, tv.template, tv.prompt_variant, tv.sampling) == (
        variants[3].key,
        PARAPHRASE,
        "p1",
        "AGENT_TEMPERATURE=0.2",
    )


def test_identity_is_content_names_are_labels(default_config):
    listed = with_variants(default_config, prompt=["{question}", PARAPHRASE, "Q: {question}"])
    named = with_variants(
        default_config, prompt={"terse": "Q: {question}", "plain": "{question}", "x": PARAPHRASE}
    )
    assert prompt_levels(listed)[1] == ("p1", PARAPHRASE)
    by_template = {v.template: v for v in agent_variants(named, "chat")}
    for v in agent_variants(listed, "chat"):
        # renamed and reordered: the same keys, so the same seeds, journals and files
        assert by_template[v.template].key == v.key
        assert by_template[v.template].prompt != v.prompt


def test_adding_a_level_only_adds_shards(default_config):
    two = with_variants(default_config, prompt=["{question}", PARAPHRASE])
    three = with_variants(default_config, prompt=["{question}", PARAPHRASE, "Q: {question}"])
    before = set(ShardPlan.from_config(two, n_tasks=12).shards())
    after = set(ShardPlan.from_config(three, n_tasks=12).shards())
    assert before < after and len(after - before) == 4 * 2 * 2
    # the neutral level's shards are a run's without variants
    plain = set(ShardPlan.from_config(default_config, n_tasks=12).shards())
    assert plain < before and {s.variant for s in plain} == {""}


def test_sampling_per_agent_replaces_the_global_facet(default_config):
    config = with_variants(
        default_config,
        sampling={"AGENT_TEMPERATURE": [0.2, 0.8]},
        tool_agent_local={},
        tool_agent={"AGENT_MAX_STEPS": [1, 3]},
    )
    assert len(agent_variants(config, "chat")) == 2
    assert agent_variants(config, "tool_agent_local") == (NO_VARIANT,)
    steps = agent_variants(config, "tool_agent")
    assert [v.labels["sampling"] for v in steps] == ["AGENT_MAX_STEPS=1", "AGENT_MAX_STEPS=3"]
    assert [v.key == "" for v in steps] == [False, True]  # its env says 3
    plan = ShardPlan.from_config(config, n_tasks=12)
    assert len(plan.shards("chat")) == 2 * 2 * 2
    assert len(plan.shards("tool_agent_local")) == 2 * 2 * 2  # two profiles, one variant
    with pytest.raises(KeyError):
        plan.variant("chat", ".v000000000000")


def problems(config: dict, schema: dict) -> str:
    with pytest.raises(ConfigError) as info:
        check_config(config, schema)
    return str(info.value)


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            lambda c: c.update(variants={"prompt": ["{question}", "Answer: {q}"]}),
            "config key variants.prompt[1]: the template has no {question}",
        ),
        (
            lambda c: c.update(variants={"prompt": {"a": "{question}", "b": "Think. "}}),
            "config key variants.prompt.b: the template has no {question}",
        ),
        (
            lambda c: c.update(variants={"prompt": ["{question}", "Q {question}", "{question}"]}),
            "config key variants.prompt[2]: the same template as variants.prompt[0]",
        ),
        (
            lambda c: c.update(variants={"sampling": {"AGENT_TEMPERATURE": [0.8, "0.8"]}}),
            "config key variants.sampling.AGENT_TEMPERATURE[1]: '0.8' is the same level as [0]",
        ),
        (
            lambda c: c.update(variants={"sampling": {"AGENT_TEMPERATURE": [1, 1.0]}}),
            "config key variants.sampling.AGENT_TEMPERATURE[1]: 1.0 is the same level as [0]",
        ),
        (
            lambda c: c.update(variants={"sampling": {"AGENT_TOP_P": [0.9, 1.0]}}),
            "config key variants.sampling.AGENT_TOP_P: agent 'chat' does not take AGENT_TOP_P "
            "(the settings in its env: AGENT_MAX_TOKENS, AGENT_TEMPERATURE); declare it in "
            "agents.chat.env, or give agents.chat.sampling",
        ),
        (
            lambda c: c["agents"]["chat"].update(sampling={"AGENT_MAX_STEPS": [1, 2]}),
            "config key agents.chat.sampling.AGENT_MAX_STEPS: agent 'chat' does not take "
            "AGENT_MAX_STEPS",
        ),
        (
            lambda c: c["agents"]["chat"].update(
                env={"AGENT_API_TOKEN": "X"}, sampling={"AGENT_API_TOKEN": ["A", "B"]}
            ),
            "config key agents.chat.sampling.AGENT_API_TOKEN: looks like a credential",
        ),
        (
            lambda c: c.update(trials_from="t.csv", variants={"prompt": ["{question}"]}),
            "config key variants: an imported trial table is not run",
        ),
        (
            lambda c: (
                c["sequential"].update(enabled=True),
                c.update(variants={"prompt": ["{question}", "Q {question}"]}),
            ),
            "config key variants: variants are not supported in adaptive mode",
        ),
        # the JSON schema's own messages name the key too
        (
            lambda c: c.update(variants={"prompt": "{question}"}),
            "config key variants.prompt: '{question}' is not of type",
        ),
        (
            lambda c: c.update(variants={"prompt": ["{question}", ""]}),
            "config key variants.prompt[1]: '' should be non-empty",
        ),
        (
            lambda c: c.update(variants={"sampling": {"AGENT_TEMPERATURE": []}}),
            "config key variants.sampling.AGENT_TEMPERATURE: [] should be non-empty",
        ),
        (
            lambda c: c.update(variants={"sampling": {"AGENT_TEMPERATURE": [[0.2]]}}),
            "config key variants.sampling.AGENT_TEMPERATURE[0]: [0.2] is not of type",
        ),
        (
            lambda c: c.update(variants={"promt": ["{question}"]}),
            "config key variants.promt: unknown key (allowed: prompt, sampling)",
        ),
        (
            lambda c: c["agents"]["chat"].update(sampling=[0.2]),
            "config key agents.chat.sampling: [0.2] is not of type",
        ),
    ],
)
def test_variant_errors_name_the_key(default_config_raw, schema, change, expected):
    config = copy.deepcopy(default_config_raw)
    change(config)
    assert expected in problems(config, schema)


def test_a_global_sampling_facet_is_checked_against_the_default_agents(schema):
    # no agents given: the default agents run, and tool_agent_local has no AGENT_TOP_K
    config = {"variants": {"sampling": {"AGENT_MAX_STEPS": [1, 3]}}}
    assert "agent 'chat' does not take AGENT_MAX_STEPS" in problems(config, schema)
    ok = {
        "variants": {"prompt": ["{question}", PARAPHRASE], "sampling": {}},
    }
    check_config(ok, schema)
    assert declared(with_defaults(ok, schema))


def test_variant_trials_number_each_variant_apart():
    frame = pd.DataFrame(
        {
            "task_id": ["t"] * 6,
            "trial": [0, 1, 0, 1, 0, 1],
            "prompt_variant": ["p1", "p1", "p0", "p0", "p2", "p2"],
            "sampling": [None] * 6,
        }
    )
    assert variant_trials(frame, stride=2).tolist() == [2000, 2001, 0, 1, 4000, 4001]
    plain = frame.drop(columns=["prompt_variant", "sampling"])
    assert variant_trials(plain, stride=2).tolist() == [0, 1, 0, 1, 0, 1]
    nulls = frame.assign(prompt_variant=None)
    assert variant_trials(nulls, stride=2).tolist() == [0, 1, 0, 1, 0, 1]
    both = frame.assign(sampling=["x", "y", "x", "y", "x", "y"])
    assert variant_trials(both, stride=2).tolist() == [2000, 2003, 0, 3, 4000, 4003]
    with pytest.raises(ValueError, match="stride"):
        variant_trials(frame, stride=1)


def test_variant_dataclass_defaults():
    assert Variant().key == "" and Variant().labels == {"prompt_variant": None, "sampling": None}
