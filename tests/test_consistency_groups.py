"""The per-group entry points of evalnoise.consistency and their lines in words, on the
tau-bench gpt-4o airline trajectories it ships (pass^k as published; the tool calls as the
trajectories) and on small frames."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from evalnoise.consistency import (
    outcome_consistency_for_group,
    passk_for_group,
    trajectories_of,
    trajectory_consistency_for_group,
)
from evalnoise.consistency_text import (
    C_OUT_VERSUS_ICC,
    outcome_consistency_line,
    passk_line,
    trajectory_line,
)
from evalnoise.importers import import_trials
from evalnoise.stats import icc_oneway
from evalnoise.stats.trajectory import trajectory_consistency
from evalnoise.trial_table import Columns, validate_trials

TAU = Path("/work/shared/data/tau-bench/gpt-4o-airline.json")
TAU_EXCERPT = Path(__file__).parent / "data" / "tau-bench-import" / "gpt-4o-airline.json"


def _tau_source() -> Path:
    if TAU.is_file():
        return TAU
    pytest.fail(f"{TAU} (tau-bench's shipped trajectories) is missing")


def _frame(path: Path) -> pd.DataFrame:
    table = import_trials("tau-bench", [path]).table.to_pandas()
    return validate_trials(table, Columns(task="task_id", trial="trial", score="score",
                                          group="agent"), path=str(path))  # fmt: skip


def _tool_calls(path: Path) -> pd.DataFrame:
    """One action per tool call of the agent: its name and its arguments, canonical JSON."""
    rows = []
    for rec in json.loads(path.read_text()):
        # a trial that called no tool has an empty trajectory: one row, no action
        rows.append({"task": str(rec["task_id"]), "trial": str(rec["trial"]), "step": -1,
                     "action": None})  # fmt: skip
        step = 0
        for msg in rec.get("traj") or []:
            for call in msg.get("tool_calls") or []:
                fn = call["function"]
                args = json.dumps(json.loads(fn["arguments"] or "{}"), sort_keys=True)
                rows.append(
                    {
                        "task": str(rec["task_id"]),
                        "trial": str(rec["trial"]),
                        "step": step,
                        "action": f"{fn['name']}({args})",
                    }
                )
                step += 1
    return pd.DataFrame(rows)


def test_pass_hat_k_on_tau_benchs_shipped_trajectories_is_the_published_one():
    res = passk_for_group(_frame(_tau_source()))
    np.testing.assert_allclose(res.pass_hat, [0.42, 0.2733, 0.22, 0.20], atol=5e-4)
    assert res.pass_hat[1] == pytest.approx(0.27333333, abs=1e-8)
    assert np.all(res.pass_hat_ci_low < res.pass_hat) and np.all(
        res.pass_hat < res.pass_hat_ci_high
    )
    line = passk_line(res)
    assert line.startswith("pass^1 42.0% [") and "pass@4" in line and "50 tasks" in line


def test_the_excerpts_hand_computed_values():
    res = passk_for_group(_frame(TAU_EXCERPT))
    assert res.pass_hat[[0, 1, 3]] == pytest.approx([0.5, 1 / 3, 0.2])


def test_outcome_consistency_for_group_and_its_line():
    frame = _frame(TAU_EXCERPT)  # successes per task 0, 1, 4, 2, 3 of 4
    res = outcome_consistency_for_group(frame)
    np.testing.assert_allclose(sorted(res.c_out), sorted([1, 0.25, 1, 0, 0.25]))
    assert res.statistic == pytest.approx(2.5 / 5)
    icc = icc_oneway(frame["score"].to_numpy(), frame["task"].to_numpy()).icc
    line = outcome_consistency_line(res, icc)
    assert line.startswith("outcome consistency C_out 0.50 [") and C_OUT_VERSUS_ICC in line


def test_trajectories_of_tau_bench_gpt4o_airline():
    path = _tau_source()
    frame, actions = _frame(path), _tool_calls(path)
    res = trajectory_consistency_for_group(frame, actions)
    # every one of the 200 trials has a trajectory (18 of them empty: no tool called); the
    # per-task numbers are the pure function's on the same sequences
    joined = trajectories_of(frame, actions)
    assert len(joined) == 200 and res.n_trials.tolist() == [4] * 50
    assert (joined["sequence"].map(len) == 0).sum() == 18
    direct = trajectory_consistency(joined["sequence"].tolist(), joined["task"], joined["score"])
    np.testing.assert_array_equal(res.n_distinct, direct.n_distinct)
    assert 1 <= res.mean_distinct <= 4 and 0 <= res.mean_edit_distance <= 1
    assert res.n_consistent + res.n_inconsistent == 50
    assert "distinct paths per 4 trials" in trajectory_line(res)


def test_a_trial_without_a_trajectory_is_left_out_not_scored():
    frame = pd.DataFrame(
        {
            "group": "g",
            "task": ["a", "a", "b", "b"],
            "trial": ["0", "1", "0", "1"],
            "score": [1.0, 0.0, 1.0, 1.0],
        }
    )
    actions = pd.DataFrame(
        {
            "task": ["a", "a", "a", "b", "b"],
            "trial": [0, 0, 1, 0, 1],
            "step": [1, 0, 0, 0, 0],
            "action": ["cat", "ls", "ls", "ls", None],
        }
    )
    joined = trajectories_of(frame, actions)
    assert joined["sequence"].tolist() == [("ls", "cat"), ("ls",), ("ls",), ()]
    res = trajectory_consistency_for_group(frame, actions)
    assert res.n_trials.tolist() == [2, 2] and res.n_distinct.tolist() == [2, 2]
    # trial 1 of task a has no row: left out, not an empty path
    assert len(trajectories_of(frame, actions[actions["trial"] != 1])) == 2
    with pytest.raises(ValueError, match="no trial of the group"):
        trajectory_consistency_for_group(frame, actions.iloc[0:0])
