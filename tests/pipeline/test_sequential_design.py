"""evalnoise.pipeline.sequential: rounds as rectangles, their shards, and each unit's decision.

Pure functions; the pipeline around them is tested in test_sequential_pipeline.py.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from evalnoise.pipeline.sequential import (
    GroupTrials,
    Rect,
    SequentialSettings,
    Unit,
    decide_unit,
    entry_rounds,
    first_design,
    next_rects,
    round_rows,
    shard_ranges,
    stopping_rule,
    summary_record,
    task_count,
    trial_counts,
    units,
)
from evalnoise.pipeline.settings import ConfigError, _check_sequential
from evalnoise.pipeline.shard_plan import parse_range
from evalnoise.stopping_text import unit_reason


def settings(**overrides) -> SequentialSettings:
    base = dict(
        target="accuracy",
        goal=0.2,
        compare=None,
        first_tasks=4,
        first_trials=2,
        max_trials_per_task=4,
        max_tasks=40,
        budget=None,
        cost_per_task=1.0,
        cost_per_trial=1.0,
        max_rounds=20,
        confidence=0.95,
    )
    return SequentialSettings(**(base | overrides))


def cells(rects):
    return {
        (row, trial)
        for r in rects
        for row in range(r.first_row, r.last_row + 1)
        for trial in range(r.first_trial, r.last_trial + 1)
    }


def shard_cells(shards):
    out = []
    for block, chunk in shards:
        t0, t1 = parse_range(block)
        r0, r1 = parse_range(chunk)
        out += [(row, trial) for row in range(r0, r1 + 1) for trial in range(t0, t1 + 1)]
    return out


rect_lists = st.lists(st.tuples(st.integers(1, 9), st.integers(1, 5)), min_size=1, max_size=5).map(
    # consecutive rounds of new rows: (tasks, trials) each
    lambda spec: [
        Rect(i, sum(n for n, _ in spec[:i]), sum(n for n, _ in spec[: i + 1]) - 1, 0, t - 1)
        for i, (n, t) in enumerate(spec)
    ]
)


@hypothesis_settings(max_examples=200, deadline=None)
@given(rects=rect_lists, block=st.integers(1, 4), chunk=st.integers(1, 6))
def test_shards_cover_the_design_exactly_once(rects, block, chunk):
    covered = shard_cells(shard_ranges(rects, block, chunk))
    assert len(covered) == len(set(covered))
    assert set(covered) == cells(rects)


@hypothesis_settings(max_examples=100, deadline=None)
@given(rects=rect_lists, block=st.integers(1, 4), chunk=st.integers(1, 6))
def test_no_two_shards_share_a_journal(rects, block, chunk):
    # a journal is keyed by the shard's first trial and first row (evalnoise.pipeline.shard_plan)
    keys = [(parse_range(b)[0], parse_range(c)[0]) for b, c in shard_ranges(rects, block, chunk)]
    assert len(keys) == len(set(keys))


def test_entry_rounds_and_trial_counts():
    rects = [Rect(0, 0, 3, 0, 1), Rect(1, 4, 5, 0, 2), Rect(2, 0, 3, 2, 2)]
    rounds = entry_rounds([0, 3, 4, 5, 1, 6, 0], [0, 1, 2, 0, 2, 0, 3], rects)
    assert rounds.tolist() == [0, 0, 1, 1, 2, -1, -1]
    assert trial_counts(rects, task_count(rects)).tolist() == [3, 3, 3, 3, 3, 3]


def test_next_round_adds_new_rows_with_the_planned_trials():
    rects = [Rect(0, 0, 5, 0, 1)]
    go = {"stop": False, "action": "more_trials", "next_new_tasks": 4, "next_trials_per_task": 3}
    assert next_rects(go, "accuracy", rects, 1) == [Rect(1, 6, 9, 0, 2)]
    assert next_rects({**go, "stop": True}, "accuracy", rects, 1) == []


def test_the_icc_target_tops_every_task_up():
    rects = [Rect(0, 0, 3, 0, 1), Rect(1, 4, 5, 0, 2)]
    go = {"stop": False, "action": "more_trials", "next_new_tasks": 0, "next_trials_per_task": 4}
    added = next_rects(go, "icc", rects, 2)
    assert added == [Rect(2, 0, 3, 2, 3), Rect(2, 4, 5, 3, 3)]
    assert trial_counts(rects + added, 6).tolist() == [4] * 6


def test_units_pair_the_compared_agents_within_each_profile():
    s = settings(target="difference", compare=("a", "b"))
    got = units(s, [("a", "1x"), ("b", "1x"), ("c", "1x"), ("a", "3x")])
    assert [(u.label, u.groups, u.decides) for u in got] == [
        ("a - b@1x", (("a", "1x"), ("b", "1x")), True),
        ("c@1x", (("c", "1x"),), False),
        ("a@3x", (("a", "3x"),), False),
    ]
    assert [u.label for u in units(settings(), [("a", "1x"), ("b", "3x")])] == ["a@1x", "b@3x"]
    assert first_design(settings(), [("a", "1x")]) == {"a@1x": [Rect(0, 0, 3, 0, 1)]}


def trials_of(label, table, attempts=None):
    frame = pd.DataFrame(table, columns=["task", "trial", "score"])
    return GroupTrials(
        label=label,
        frame=frame,
        attempts=len(frame) if attempts is None else attempts,
        tasks_attempted=frame["task"].nunique(),
        statuses={"ok": len(frame)},
    )


def test_a_decision_continues_with_the_planned_block_then_stops_at_the_round_limit():
    rng = np.random.default_rng(3)
    rows = [(f"t{i}", j, float(rng.random() < 0.5)) for i in range(4) for j in range(2)]
    design = {"a@3x": [Rect(0, 0, 3, 0, 1)]}
    task_rows = {f"t{i}": i for i in range(40)}
    unit = Unit("a@3x", (("a", "3x"),))
    rec = decide_unit(unit, [trials_of("a@3x", rows)], design, task_rows, settings(), 0)
    assert rec["status"] == "continue" and not rec["stopped"]
    assert rec["decision"]["spent"] == 4 * 1.0 + 8 * 1.0  # tasks + attempts
    assert rec["decision"]["next_new_tasks"] == 4
    late = decide_unit(
        unit, [trials_of("a@3x", rows)], design, task_rows, settings(max_rounds=3), 2
    )
    assert late["stopped"] and late["status"] == "round_limit"
    assert late["decision"]["next_new_tasks"] == 0 and late["decision"]["max_rounds"] == 3
    # the record holds the numbers, the words are the text module's
    assert "reason" not in late and "reason" not in late["decision"]
    words = unit_reason(late)
    assert words.startswith("round limit: 3 rounds run (sequential.max_rounds); the next ")
    assert words.endswith(unit_reason(rec))  # what the same data said to run in round 0


def test_failed_attempts_are_paid_for():
    rows = [(f"t{i}", j, 1.0) for i in range(4) for j in range(2)]
    design = {"a@3x": [Rect(0, 0, 3, 0, 1)]}
    rec = decide_unit(
        Unit("a@3x", (("a", "3x"),)),
        [trials_of("a@3x", rows, attempts=12)],
        design,
        {f"t{i}": i for i in range(4)},
        settings(),
        0,
    )
    assert rec["decision"]["spent"] == 4 + 12


def test_a_group_with_nothing_counted_stops_as_no_data_never_as_a_score():
    empty = GroupTrials("a@1x", pd.DataFrame(columns=["task", "trial", "score"]), 8, 4,
                        {"oom_killed": 8})  # fmt: skip
    rec = decide_unit(Unit("a@1x", (("a", "1x"),)), [empty], {"a@1x": []}, {}, settings(), 0)
    assert rec["stopped"] and rec["status"] == "no_data" and rec["decision"] is None
    assert rec["outcomes"] == {"oom_killed": 8} and rec["attempts"] == 8
    assert unit_reason(rec) == (
        "a@1x: no trial counted after round 0 (8 attempts; outcomes: oom_killed 8); "
        "nothing to plan on"
    )


def test_a_trial_outside_the_design_is_an_error():
    rows = [("t0", 0, 1.0), ("t0", 5, 1.0), ("t1", 0, 0.0), ("t1", 1, 1.0)]
    with pytest.raises(ValueError, match="trial 5 of task row 0 is outside the design"):
        decide_unit(
            Unit("a@3x", (("a", "3x"),)),
            [trials_of("a@3x", rows)],
            {"a@3x": [Rect(0, 0, 1, 0, 1)]},
            {"t0": 0, "t1": 1},
            settings(),
            0,
        )


def test_the_difference_target_decides_for_the_pair():
    rng = np.random.default_rng(0)
    a = [(f"t{i}", j, float(rng.random() < 0.8)) for i in range(6) for j in range(2)]
    b = [(f"t{i}", j, float(rng.random() < 0.3)) for i in range(6) for j in range(2)]
    design = {"a@3x": [Rect(0, 0, 5, 0, 1)], "b@3x": [Rect(0, 0, 5, 0, 1)]}
    s = settings(target="difference", compare=("a", "b"), goal=0.3)
    rec = decide_unit(
        Unit("a - b@3x", (("a", "3x"), ("b", "3x"))),
        [trials_of("a@3x", a), trials_of("b@3x", b)],
        design,
        {f"t{i}": i for i in range(40)},
        s,
        0,
    )
    assert rec["groups"] == ["a@3x", "b@3x"]
    assert rec["decision"]["target"] == "difference"
    assert rec["decision"]["n_trials"] == 24  # both agents' trials
    assert rec["decision"]["spent"] == 2 * (6 + 12)


def test_summary_and_round_table_from_records():
    go = {"action": "more_tasks", "achieved": 0.4, "next_new_tasks": 4, "next_trials_per_task": 2}
    unit = {"unit": "a@3x", "groups": ["a@3x"], "stopped": False, "status": "continue",
            "reason": "go", "decision": go}  # fmt: skip
    stop = {**unit, "round": 1, "stopped": True, "status": "target_met", "reason": "met",
            "decision": {"action": "stop", "achieved": 0.1, "estimate": 0.5, "ci_low": 0.4,
                         "ci_high": 0.6}}  # fmt: skip
    s = {"max_tasks": 10, "max_trials_per_task": 4}
    records = [
        {"round": 0, "done": False, "target": "accuracy", "goal": 0.2, "settings": s,
         "design": {"a@3x": [[0, 0, 3, 0, 1]]}, "units": [{**unit, "round": 0}]},
        {"round": 1, "done": True, "target": "accuracy", "goal": 0.2, "settings": s,
         "design": {"a@3x": [[0, 0, 3, 0, 1], [1, 4, 7, 0, 1]]}, "units": [stop]},
    ]  # fmt: skip
    table = round_rows(records)
    assert table[["round", "status", "next_new_tasks"]].values.tolist() == [
        [0, "continue", 4],
        [1, "target_met", 0],
    ]
    assert "reason" not in table  # numbers only, unless the words are asked for
    worded = round_rows(records, reason=lambda u: u["reason"])
    assert worded["reason"].tolist() == ["go", "met"]
    assert summary_record(records, reason=lambda u: u["reason"])["units"][0]["reason"] == "met"
    summary = summary_record(records)
    assert summary["groups"]["a@3x"] == {
        "rounds": 2,
        "tasks": 8,
        "trials": 16,
        "fixed_design_trials": 40,
        "saved": pytest.approx(0.6),
    }
    assert summary["units"][0]["status"] == "target_met"
    with pytest.raises(ValueError, match="some units continue"):
        summary_record(records[:1])


def defaulted(raw):
    """``raw`` as the pipeline reads it: every default filled in from the schema (the one
    place defaults are written)."""
    from pipeline_helpers import SCHEMA_PATH

    from evalnoise.pipeline.settings import load_schema, with_defaults

    return with_defaults(raw, load_schema(SCHEMA_PATH))


def config(**sequential):
    return defaulted(
        {
            "agents": {"a": {}, "b": {"resource_profiles": ["1x"]}},
            "resource_profiles": {"1x": {}, "3x": {}},
            "trials": {"count": 4},
            "benchmark": {"source": "generated", "n": 20},
            "sequential": {"enabled": True, **sequential},
        }
    )


@pytest.mark.parametrize(
    ("sequential", "message"),
    [
        ({"target": "icc", "se": None}, "sequential.se: required by target 'icc'"),
        ({"target": "difference"}, "sequential.compare: the difference target needs two"),
        ({"target": "difference", "compare": ["a", "z"]}, r"sequential.compare\[1\]: 'z'"),
        ({"target": "difference", "compare": ["a", "a"]}, "two different agents"),
        ({"compare": ["a", "b"]}, "only the difference target compares"),
        ({"first_round": {"tasks": 4, "trials": 5}}, "sequential.first_round.trials: 5"),
        ({"max_tasks": 3, "first_round": {"tasks": 4}}, "sequential.first_round.tasks: 4"),
        ({"max_tasks": 30}, "sequential.max_tasks: 30 tasks, but the benchmark has"),
    ],
)
def test_config_errors_name_the_key(sequential, message):
    with pytest.raises(ConfigError, match=message):
        _check_sequential(config(**sequential))


def test_the_renamed_first_block_key_is_refused_naming_first_round():
    # "block" was both a time block and an adaptive round: the key is now first_round, and
    # a config that still says first_block fails naming the new key, never silently
    from pipeline_helpers import SCHEMA_PATH

    from evalnoise.pipeline.settings import check_config, load_schema

    raw = {
        "agents": {"a": {"program": "chat"}},
        "sequential": {"enabled": True, "first_block": {"tasks": 4, "trials": 2}},
    }
    with pytest.raises(
        ConfigError, match=r"sequential\.first_block: renamed to sequential\.first_round"
    ):
        check_config(raw, load_schema(SCHEMA_PATH))
    _check_sequential(config(first_round={"tasks": 4, "trials": 2}))  # the new key is read


def test_the_rule_carries_the_goal_as_the_targets_own_kind():
    icc = stopping_rule(settings(target="icc", goal=0.05, budget=500.0), 1)
    assert (icc.target, icc.se, icc.half_width, icc.budget) == ("icc", 0.05, None, 500.0)
    acc = stopping_rule(settings(max_trials_per_task=3, max_tasks=12), 2)
    assert (acc.target, acc.half_width, acc.se) == ("accuracy", 0.2, None)
    assert acc.budget == 2 * 12 * (1.0 + 3 * 1.0)  # budget_of: the fixed design's cost
    assert (acc.max_trials_per_task, acc.max_tasks, acc.confidence) == (3, 12, 0.95)


def test_the_icc_target_decides_on_bonetts_se():
    rng = np.random.default_rng(5)
    rows = [(f"t{i}", j, float(rng.random() < 0.5)) for i in range(6) for j in range(2)]
    rec = decide_unit(
        Unit("a@3x", (("a", "3x"),)),
        [trials_of("a@3x", rows)],
        {"a@3x": [Rect(0, 0, 5, 0, 1)]},
        {f"t{i}": i for i in range(40)},
        settings(target="icc", goal=0.03),
        0,
    )
    assert rec["decision"]["target"] == "icc" and rec["decision"]["goal"] == 0.03
    assert any("not an anytime-valid" in w for w in rec["decision"]["warnings"])


def test_a_bad_rule_names_the_unit_and_round():
    rows = [(f"t{i}", j, 1.0) for i in range(4) for j in range(2)]
    with pytest.raises(ValueError, match=r"^a@3x, round 0: the target must be a finite"):
        decide_unit(
            Unit("a@3x", (("a", "3x"),)),
            [trials_of("a@3x", rows)],
            {"a@3x": [Rect(0, 0, 3, 0, 1)]},
            {f"t{i}": i for i in range(4)},
            settings(goal=-0.1),
            0,
        )


def test_a_valid_difference_config_passes_and_off_is_never_checked():
    _check_sequential(config(target="difference", compare=["a", "b"], half_width=0.1))
    _check_sequential(defaulted({"sequential": {"enabled": False, "target": "icc", "se": None}}))


def test_settings_resolve_defaults_against_the_run():
    s = SequentialSettings.from_config(
        defaulted({"sequential": {"enabled": True, "half_width": 0.1}, "trials": {"count": 6}}),
        30,
    )
    assert (s.max_trials_per_task, s.max_tasks, s.budget_of(2)) == (6, 30, 2 * 30 * (0 + 6 * 1))
    assert SequentialSettings.from_config(defaulted({"sequential": {"enabled": False}}), 30) is None
    with pytest.raises(ValueError, match=r"sequential\.max_tasks: 50 tasks, but the tasks table"):
        SequentialSettings.from_config(
            defaulted({"sequential": {"enabled": True, "half_width": 0.1, "max_tasks": 50}}), 30
        )
