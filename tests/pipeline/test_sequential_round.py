"""The adaptive round's loop (evalnoise.pipeline.sequential_round), without Snakemake: which
units are decided, what the next design holds, what the record says."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from test_sequential_design import settings

from evalnoise.formatting import dumps
from evalnoise.pipeline.sequential import GroupTrials, Rect, SequentialSettings, task_count
from evalnoise.pipeline.sequential_round import RoundResult, decide_round, group_trials

TASKS = [f"t{i}" for i in range(40)]


def trials(label: str, p: float, n_tasks: int = 4, n_trials: int = 2, seed: int = 0):
    rng = np.random.default_rng(seed)
    rows = [(f"t{i}", j, float(rng.random() < p)) for i in range(n_tasks) for j in range(n_trials)]
    frame = pd.DataFrame(rows, columns=["task", "trial", "score"])
    return GroupTrials(label, frame, len(frame), n_tasks, {"ok": len(frame)})


def test_round_zero_decides_every_group_and_plans_the_next_rectangles():
    design = {"a@1x": [Rect(0, 0, 3, 0, 1)], "b@1x": [Rect(0, 0, 3, 0, 1)]}
    data = {"a@1x": trials("a@1x", 0.5, seed=1), "b@1x": trials("b@1x", 0.5, seed=2)}
    asked = []

    def trials_of(agent, profile):
        asked.append((agent, profile))
        return data[f"{agent}@{profile}"]

    result = decide_round(settings(), 0, design, [("a", "1x"), ("b", "1x")], {}, TASKS, trials_of)
    assert isinstance(result, RoundResult)
    assert asked == [("a", "1x"), ("b", "1x")]
    assert [u["unit"] for u in result.units] == ["a@1x", "b@1x"]
    for unit in result.units:
        assert unit["status"] == "continue" and not unit["stopped"]
        new = unit["decision"]["next_new_tasks"]
        want = unit["decision"]["next_trials_per_task"]
        # the next round's rows follow the design's last row, with the planned trials
        assert unit["next"] == [[1, 4, 3 + new, 0, want - 1]]
        group = unit["groups"][0]
        assert result.next_design[group] == [*design[group], Rect.from_list(unit["next"][0])]
    assert not result.done
    assert result.design == design  # the round's own design is kept as it ran


def test_a_unit_stopped_earlier_keeps_its_record_and_its_trials_are_not_read():
    design = {"a@1x": [Rect(0, 0, 3, 0, 1)], "b@1x": [Rect(0, 0, 3, 0, 1)]}
    stopped = {"unit": "a@1x", "groups": ["a@1x"], "round": 0, "stopped": True,
               "status": "achieved", "decision": {"stop": True}, "next": []}  # fmt: skip
    asked = []

    def trials_of(agent, profile):
        asked.append(agent)
        return trials(f"{agent}@{profile}", 0.5)

    result = decide_round(
        settings(), 1, design, [("a", "1x"), ("b", "1x")], {"a@1x": stopped}, TASKS, trials_of
    )
    assert asked == ["b"]
    assert result.units[0] == stopped
    assert result.next_design["a@1x"] == design["a@1x"]  # no new trials for a stopped unit


def test_the_round_limit_stops_every_unit_and_the_round_is_done():
    design = {"a@1x": [Rect(0, 0, 3, 0, 1)]}
    result = decide_round(
        settings(max_rounds=1),
        0,
        design,
        [("a", "1x")],
        {},
        TASKS,
        lambda a, r: trials("a@1x", 0.5),
    )
    assert result.units[0]["status"] == "round_limit"
    assert result.units[0]["next"] == []
    assert result.done
    assert result.next_design == design


def test_the_difference_target_adds_the_same_rectangles_to_both_groups():
    design = {g: [Rect(0, 0, 5, 0, 1)] for g in ("a@1x", "b@1x", "c@1x")}
    data = {
        "a@1x": trials("a@1x", 0.8, n_tasks=6, seed=3),
        "b@1x": trials("b@1x", 0.3, n_tasks=6, seed=4),
        "c@1x": trials("c@1x", 0.5, n_tasks=6, seed=5),
    }
    result = decide_round(
        settings(target="difference", compare=("a", "b"), goal=0.05),
        0,
        design,
        [("a", "1x"), ("b", "1x"), ("c", "1x")],
        {},
        TASKS,
        lambda a, r: data[f"{a}@{r}"],
    )
    pair, other = result.units
    assert pair["unit"] == "a - b@1x" and not pair["stopped"]
    assert other["status"] == "not_compared" and other["stopped"]
    assert result.next_design["a@1x"] == result.next_design["b@1x"] != design["a@1x"]
    assert result.next_design["c@1x"] == design["c@1x"]


def test_the_record_is_what_the_wiring_and_summary_read():
    design = {"a@1x": [Rect(0, 0, 3, 0, 1)]}
    s = settings()
    result = decide_round(s, 0, design, [("a", "1x")], {}, TASKS, lambda a, r: trials("a@1x", 0.5))
    record = json.loads(dumps(result.to_record()))
    assert set(record) == {
        "round", "done", "target", "goal", "settings", "design", "next_design", "tasks",
        "units",
    }  # fmt: skip
    assert record["round"] == 0 and record["done"] is False
    assert record["target"] == "accuracy" and record["goal"] == pytest.approx(0.2)
    assert record["settings"]["max_tasks"] == 40
    assert SequentialSettings(**record["settings"]) == s  # the settings round-trip
    assert record["design"] == {"a@1x": [[0, 0, 3, 0, 1]]}
    nxt = [Rect.from_list(r) for r in record["next_design"]["a@1x"]]
    assert record["tasks"] == {"a@1x": task_count(nxt)} and record["tasks"]["a@1x"] > 4


def test_a_task_outside_the_tasks_table_names_the_group():
    design = {"a@1x": [Rect(0, 0, 3, 0, 1)]}
    with pytest.raises(ValueError, match="a@1x: task 't3' is not in the tasks table"):
        decide_round(
            settings(), 0, design, [("a", "1x")], {}, TASKS[:3], lambda a, r: trials("a@1x", 0.5)
        )


def test_group_trials_reads_the_group_from_the_score_shards():
    scores = pd.DataFrame(
        {
            "agent": ["a"] * 4 + ["b"] * 2,
            "resource_profile": ["1x"] * 6,
            "task_id": ["t0", "t0", "t1", "t1", "t0", "t1"],
            "trial": [0, 1, 0, 1, 0, 0],
            "status": ["ok", "ok", "ok", "oom_killed", "ok", "ok"],
            "score": [1.0, 0.0, 1.0, np.nan, 1.0, 1.0],
        }
    )
    policy = {"mode": "as_incorrect"}
    try:
        got = group_trials(scores, {}, "a", "1x", policy)
    except (KeyError, ValueError) as error:  # the score table's own columns are required
        pytest.fail(f"the score table fixture is incomplete: {error}")
    assert got.label == "a@1x"
    assert got.attempts == 4 and got.tasks_attempted == 2
    assert sorted(got.frame["task"]) == ["t0", "t0", "t1", "t1"]
