"""The sharding plan and task sampling: shard files never depend on the totals."""

from __future__ import annotations

import pandas as pd
import pytest

from evalnoise.pipeline.sampling import sample_tasks, task_pool_size
from evalnoise.pipeline.shard_plan import (
    ShardPlan,
    chunk_size,
    format_range,
    journal_path,
    parse_range,
    ranges,
    task_rows_digest,
)
from evalnoise.schema import TASKS


def test_ranges_and_labels():
    assert ranges(8, 4) == [(0, 3), (4, 7)]
    assert ranges(10, 4) == [(0, 3), (4, 7), (8, 9)]
    assert ranges(3, 6) == [(0, 2)]
    assert format_range(4, 7) == "0004-0007"
    assert parse_range("0004-0007") == (4, 7)
    assert parse_range("12000-12003") == (12000, 12003)
    for bad in ("4-7", "0007-0004", "0004_0007", "abcd-efgh"):
        with pytest.raises(ValueError):
            parse_range(bad)


def _two_agents(config):
    """chat and tool_agent under every resource profile."""
    config["agents"] = {
        k: {**config["agents"][k], "resource_profiles": None} for k in ("chat", "tool_agent")
    }
    return config


def test_agents_run_only_under_the_profiles_they_list(default_config):
    plan = ShardPlan.from_config(default_config, n_tasks=12)
    # the default: host-served agents under 3x only, the in-container one under both
    assert plan.groups() == [
        ("chat", "3x"),
        ("tool_agent", "3x"),
        ("tool_agent_local", "1x"),
        ("tool_agent_local", "3x"),
    ]
    assert plan.agent_pairs() == [
        ("3x", "chat", "tool_agent"),
        ("3x", "chat", "tool_agent_local"),
        ("3x", "tool_agent", "tool_agent_local"),
    ]
    assert plan.profile_pairs() == [("tool_agent_local", "1x", "3x")]
    assert len(plan.shards()) == 4 * 2 * 2


def test_raising_trials_only_adds_blocks(default_config):
    _two_agents(default_config)
    default_config["trials"] = {"count": 8, "block_size": 4}
    before = ShardPlan.from_config(default_config, n_tasks=12)
    default_config["trials"]["count"] = 16
    after = ShardPlan.from_config(default_config, n_tasks=12)
    assert set(before.shards()) < set(after.shards())
    new = set(after.shards()) - set(before.shards())
    assert {s.block for s in new} == {"0008-0011", "0012-0015"}
    # 2 agents x 2 resource profiles x 2 new blocks x 2 chunks; 8 new trials per task
    assert len(new) == 16
    assert sum(len(s.trials) * (s.rows[1] - s.rows[0] + 1) for s in new) == 2 * 2 * 12 * 8


def test_adding_an_agent_only_adds_its_shards(default_config):
    _two_agents(default_config)
    before = ShardPlan.from_config(default_config, n_tasks=12)
    default_config["agents"]["another"] = dict(default_config["agents"]["chat"])
    after = ShardPlan.from_config(default_config, n_tasks=12)
    new = set(after.shards()) - set(before.shards())
    assert set(before.shards()) < set(after.shards())
    assert {s.agent for s in new} == {"another"}
    assert len(new) == len(before.shards(agent="chat"))


def test_groups_and_pairs(default_config):
    plan = ShardPlan.from_config(_two_agents(default_config), n_tasks=12)
    assert plan.groups() == [
        ("chat", "1x"),
        ("chat", "3x"),
        ("tool_agent", "1x"),
        ("tool_agent", "3x"),
    ]
    assert plan.agent_pairs() == [("1x", "chat", "tool_agent"), ("3x", "chat", "tool_agent")]
    assert plan.profile_pairs() == [("chat", "1x", "3x"), ("tool_agent", "1x", "3x")]
    imported = ShardPlan.from_groups([("b", "imported"), ("a", "imported"), ("a", "x")])
    assert imported.agent_pairs() == [("imported", "a", "b")]
    assert imported.profile_pairs() == [("a", "imported", "x")]
    assert imported.shards() == []


def test_journal_is_keyed_by_the_shard_start():
    a = journal_path("results/trials", "chat", "1x", "0008-0009", "0012-0014")
    b = journal_path("results/trials", "chat", "1x", "0008-0011", "0012-0017")
    assert a == b
    assert a.as_posix() == "results/trials/chat/1x/journals/t0008-c0012.jsonl"
    assert a != journal_path("results/trials", "chat", "3x", "0008-0011", "0012-0017")


def test_generated_tasks_interleave_levels_and_grow_by_appending(default_config):
    bench = default_config["benchmark"]
    bench["n"] = 6
    six = sample_tasks(bench)
    assert list(six.columns) == [f.name for f in TASKS]
    assert list(six["level"]) == ["1", "2", "3", "1", "2", "3"]
    assert list(six["task_id"][:3]) == ["gen-l1-000", "gen-l2-000", "gen-l3-000"]
    bench["n"] = 9
    nine = sample_tasks(bench)
    pd.testing.assert_frame_equal(nine.iloc[:6].reset_index(drop=True), six)
    assert task_pool_size(bench) is None
    assert (six["sampling_seed"] == bench["seed"]).all()
    assert six["memory_mb"].gt(0).all() and six["time_limit_s"].gt(0).all()


def test_file_tasks_are_stratified_by_level(tmp_path, default_config):
    rows = [
        {
            "id": f"t{i:02d}",
            "question": f"q{i}",
            "answer": str(i),
            "level": "easy" if i < 12 else "hard",
        }
        for i in range(16)
    ]
    path = tmp_path / "tasks.jsonl"
    pd.DataFrame(rows).to_json(path, orient="records", lines=True)
    bench = default_config["benchmark"]
    bench.update(source="file", path=str(path), n=8, seed=3, memory_mb=128)
    picked = sample_tasks(bench)
    assert len(picked) == 8
    assert picked["level"].value_counts().to_dict() == {"easy": 6, "hard": 2}
    assert picked["task_id"].is_unique
    assert (picked["memory_mb"] == 128).all()  # the override
    assert (picked["cpus"] == 1.0).all()  # the default for undeclared resources
    assert sample_tasks(bench).equals(picked)  # deterministic
    assert task_pool_size(bench) == 16
    bench["stratify_by_level"] = False
    assert len(sample_tasks(bench)) == 8
    bench["n"] = None
    assert len(sample_tasks(bench)) == 16


# -- shard size: shards.target_seconds --------------------------------------------------------


def test_without_a_shard_target_the_plan_is_the_default_one(default_config):
    assert default_config["shards"] == {"target_seconds": None, "trial_seconds": 1.0}
    assert chunk_size(default_config) == default_config["task_chunk_size"] == 6
    unset = {k: v for k, v in default_config.items() if k != "shards"}
    assert ShardPlan.from_config(unset, n_tasks=12) == ShardPlan.from_config(
        default_config, n_tasks=12
    )
    assert ShardPlan.from_config(default_config, n_tasks=12).chunks == ("0000-0005", "0006-0011")


@pytest.mark.parametrize(
    ("target", "trial_seconds", "block", "expected"),
    [
        (60, 0.5, 4, 30),  # 120 trials a shard, 4 trial indices → 30 tasks
        (60, 0.02, 5, 600),  # exact: no float noise rounds 600.0000001 up
        (10, 1.0, 4, 6),  # wants 3 tasks: never below task_chunk_size
        (61, 1.0, 4, 16),  # rounded up
    ],
)
def test_a_shard_target_widens_the_task_chunks(
    default_config, target, trial_seconds, block, expected
):
    default_config["shards"] = {"target_seconds": target, "trial_seconds": trial_seconds}
    default_config["trials"] = {"count": 8, "block_size": block}
    assert chunk_size(default_config) == expected


def test_a_shard_target_keeps_growth_exact(default_config):
    """The chunk size depends on no count: more trials or tasks add shards, and every old
    shard is kept or (a partial last chunk) grows under the same journal."""
    _two_agents(default_config)
    default_config["shards"] = {"target_seconds": 40, "trial_seconds": 1.0}
    default_config["trials"] = {"count": 4, "block_size": 4}
    before = ShardPlan.from_config(default_config, n_tasks=25)
    assert before.chunks == ("0000-0009", "0010-0019", "0020-0024")
    default_config["trials"]["count"] = 8
    more_trials = ShardPlan.from_config(default_config, n_tasks=25)
    assert set(before.shards()) < set(more_trials.shards())
    more_tasks = ShardPlan.from_config(default_config, n_tasks=31)
    assert more_tasks.chunks == ("0000-0009", "0010-0019", "0020-0029", "0030-0030")
    journals = {journal_path("r", *s.wildcards.values()) for s in more_trials.shards()}
    grown = {journal_path("r", *s.wildcards.values()) for s in more_tasks.shards()}
    assert journals < grown  # the grown chunk 0020-0029 resumes the journal of 0020-0024


def test_the_shard_target_is_validated(default_config, schema):
    from evalnoise.pipeline.settings import ConfigError, check_config

    for bad in ({"target_seconds": 0}, {"trial_seconds": -1.0}, {"target_secs": 5}):
        default_config["shards"] = {"target_seconds": None, "trial_seconds": 1.0, **bad}
        with pytest.raises(ConfigError, match=r"config key shards"):
            check_config(default_config, schema)


def test_task_rows_digest_changes_only_for_the_rows_that_changed(default_config):
    tasks = sample_tasks({**default_config["benchmark"], "n": 7})
    grown = sample_tasks({**default_config["benchmark"], "n": 8})
    assert task_rows_digest(tasks, "0000-0005") == task_rows_digest(grown, "0000-0005")
    # the partial last chunk grows: its digest changes, so only its shards rerun
    assert task_rows_digest(tasks, "0006-0006") == task_rows_digest(grown, "0006-0006")
    assert task_rows_digest(grown, "0006-0007") != task_rows_digest(tasks, "0006-0006")
    changed = tasks.copy()
    changed.loc[2, "memory_mb"] = 4096
    assert task_rows_digest(changed, "0000-0005") != task_rows_digest(tasks, "0000-0005")
