"""score_trials with the deterministic scorers: SCORES rows, infra and agent outcomes."""

from __future__ import annotations

import pandas as pd
import pyarrow as pa
import pytest

from evalnoise.errors import InputError
from evalnoise.schema import SCORES, TRIALS
from evalnoise.scorers import score_trials

TASKS = pd.DataFrame(
    {"task_id": ["a", "b"], "question": ["2+2?", "Capital of France?"], "answer": ["4", "Paris"]}
)


def _trials(rows):
    base = {
        "agent": "chat",
        "resource_profile": "1x",
        "trial": 0,
        "attempt": 1,
        "seed": 7,
        "exit_code": 0,
        "duration_s": 1.0,
    }
    return pd.DataFrame([{**base, **row} for row in rows])


def test_numeric_and_exact_rows():
    trials = _trials(
        [
            {"task_id": "a", "status": "ok", "prediction": "The answer is 4."},
            {"task_id": "a", "status": "ok", "prediction": "5", "trial": 1},
            {"task_id": "a", "status": "oom_killed", "prediction": None, "trial": 2},
            {"task_id": "a", "status": "agent_error", "prediction": "4", "trial": 3},
            {"task_id": "a", "status": "ok", "prediction": "", "trial": 4},
        ]
    )
    table = score_trials(trials, TASKS, "numeric")
    assert table.schema == SCORES
    out = table.to_pandas()
    assert out["scorer"].eq("numeric").all()
    assert out["correct"].tolist()[:2] == [True, False]
    assert pd.isna(out["correct"][2]) and pd.isna(out["score"][2])
    assert out["judge_status"][2] == "skipped_infra"
    assert out["correct"][3] == False  # noqa: E712 - agent_error counts as incorrect
    assert out["score"].tolist()[:2] == [1.0, 0.0]
    assert out["correct"][4] == False  # noqa: E712 - empty prediction
    # the trial columns pass through unchanged
    assert out["seed"].eq(7).all() and out["trial"].tolist() == [0, 1, 2, 3, 4]


def test_options_name_and_arrow_input():
    trials = _trials(
        [
            {"task_id": "a", "status": "ok", "prediction": "4.01"},
            {"task_id": "b", "status": "ok", "prediction": "paris!"},
        ]
    )
    out = score_trials(
        pa.Table.from_pandas(trials.iloc[[0]]),
        TASKS,
        "numeric",
        options={"rel_tol": 0.01},
        name="numeric@1%",
    ).to_pandas()
    assert out["correct"][0] == True  # noqa: E712
    assert out["scorer"].eq("numeric@1%").all()
    assert score_trials(trials.iloc[[1]], TASKS, "exact").to_pandas()["correct"][0] == True  # noqa: E712
    fuzzy = score_trials(trials.iloc[[1]], TASKS, "fuzzy").to_pandas()
    assert fuzzy["score"][0] == 1.0 and "ratio" in fuzzy["judge_explanation"][0]


def test_recorded_scores_pass_through():
    trials = _trials(
        [
            {"task_id": "a", "status": "ok", "prediction": None, "score": 1.0},
            {"task_id": "b", "status": "ok", "prediction": None, "score": 0.0},
        ]
    )
    out = score_trials(trials, TASKS, "recorded").to_pandas()
    assert out["correct"].tolist() == [True, False]
    assert out["score"].tolist() == [1.0, 0.0]


def test_errors():
    trials = _trials([{"task_id": "zzz", "status": "ok", "prediction": "1"}])
    with pytest.raises(InputError, match="zzz"):
        score_trials(trials, TASKS, "exact")
    with pytest.raises(ValueError, match="unknown scorer"):
        score_trials(trials, TASKS, "bleu")
    with pytest.raises(ValueError, match="LLMJudge"):
        score_trials(trials, TASKS, "judge")
    ok = _trials([{"task_id": "b", "status": "ok", "prediction": "Paris"}])
    with pytest.raises(InputError, match="exactly one number"):
        score_trials(ok, TASKS, "numeric")  # 'Paris' is no numeric target
    with pytest.raises(InputError, match="recorded"):
        score_trials(ok, TASKS, "recorded")


def test_every_trials_column_is_kept():
    row = {f.name: None for f in TRIALS}
    row.update(
        agent="x",
        resource_profile="1x",
        task_id="a",
        trial=0,
        attempt=1,
        status="ok",
        prediction="4",
        host="h",
        backend="docker",
    )
    out = score_trials(pd.DataFrame([row]), TASKS, "gaia").to_pandas()
    assert out["host"][0] == "h" and out["backend"][0] == "docker"
    assert out["correct"][0] == True  # noqa: E712


def test_a_crash_is_not_scored():
    """Issue 21.1: a crashed trial has no answer, so the score shard holds no 0 for it."""
    trials = _trials(
        [
            {"task_id": "a", "status": "agent_error", "exit_code": 139, "prediction": None},
            {"task_id": "a", "status": "agent_error", "exit_code": -11, "trial": 1},
            {"task_id": "a", "status": "agent_error", "exit_code": 1, "trial": 2},
        ]
    )
    out = score_trials(trials, TASKS, "numeric").to_pandas()
    assert out["score"].isna().tolist() == [True, True, False]
    assert out["correct"].isna().tolist() == [True, True, False]
    assert out["judge_status"].tolist()[:2] == ["skipped_crash", "skipped_crash"]
    assert "crashed (SIGSEGV)" in out["judge_explanation"][0]
    assert out["score"][2] == 0.0  # a plain agent error is the agent's wrong answer
