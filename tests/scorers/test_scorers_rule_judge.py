"""Rule-based judges: the last number, the last choice; no model."""

from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalnoise.schema import SCORES
from evalnoise.scorers import score_trials
from evalnoise.scorers.deterministic import numeric
from evalnoise.scorers.judge import NO_PREDICTION, OK, SKIPPED_INFRA
from evalnoise.scorers.rule_judge import NOT_APPLICABLE, RuleJudge, same_as_reference

NUMBERS = [
    ("10 * 10 - 47 = 53", "53", True),
    ("The answer is 53.", "53", True),
    ("53, or maybe 54", "53", False),  # a right number followed by another
    ("47 + 6 = 53", "47", False),
    ("I cannot compute it.", "53", False),  # no number: incorrect
    ("1,234 apples", "1234", True),
    ("−12", "-12", True),
]


@pytest.mark.parametrize(("reply", "target", "correct"), NUMBERS)
def test_last_number(reply, target, correct):
    result = RuleJudge("last_number").judge("q", reply, target)
    assert result.status == OK and result.correct is correct
    assert result.votes == (correct,) and result.score == float(correct)
    assert result.calls == 0 and result.prompt_tokens == 0


CHOICES = [
    ("I think (A), no wait: the answer is B", "B", "(A) x (B) y (C) z", True),
    ("B. Final answer: C", "B", "(A) x (B) y (C) z", False),
    ("None of them", "B", "(A) x (B) y (C) z", False),
    ("Yes, 7 is prime.", "yes", "Is 7 prime?", True),
    ("No.", "yes", "Is 7 prime?", False),
]


@pytest.mark.parametrize(("reply", "target", "question", "correct"), CHOICES)
def test_last_choice(reply, target, question, correct):
    result = RuleJudge("last_choice").judge(question, reply, target)
    assert result.status == OK and result.correct is correct


def test_a_rule_judges_only_its_kind_and_never_infra_outcomes():
    judge = RuleJudge("last_number")
    text = judge.judge("Capital of France?", "Paris", "Paris")
    assert text.status == NOT_APPLICABLE and text.correct is None and text.votes == ()
    assert RuleJudge("last_choice").judge("q", "42", "42").status == NOT_APPLICABLE
    skipped = judge.judge("q", "42", "42", status="oom_killed")
    assert skipped.status == SKIPPED_INFRA and skipped.correct is None
    empty = judge.judge("q", "  ", "42")
    assert empty.status == NO_PREDICTION and empty.correct is False
    with pytest.raises(ValueError, match="rule"):
        RuleJudge("first_number")


@given(st.text(max_size=80), st.integers(-(10**6), 10**6))
def test_last_number_is_the_numeric_scorer_picking_the_last(reply, value):
    """What ``same_as_reference`` says: against the numeric reference (pick last) the rule
    agrees on every reply."""
    result = RuleJudge("last_number").judge("q", reply, str(value))
    if not reply.strip():
        assert result.status == NO_PREDICTION
        return
    assert result.correct is numeric(reply, str(value), pick="last").correct


def test_same_as_reference():
    numeric_last = {"name": "numeric", "numeric": {"pick": "last"}}
    assert same_as_reference("last_number", numeric_last)
    assert not same_as_reference("last_number", {"name": "numeric", "numeric": {"pick": "first"}})
    assert not same_as_reference("last_number", {"name": "exact"})
    assert not same_as_reference("last_choice", numeric_last)
    assert not same_as_reference(None, numeric_last)


def test_score_trials_with_a_rule_judge():
    tasks = pd.DataFrame(
        {"task_id": ["a", "b"], "question": ["1+1?", "Capital?"], "answer": ["2", "Paris"]}
    )
    trials = pd.DataFrame(
        {
            "agent": "x",
            "resource_profile": "1x",
            "task_id": ["a", "a", "b"],
            "trial": [0, 1, 0],
            "attempt": 1,
            "status": ["ok", "timeout", "ok"],
            "prediction": ["1 + 1 = 2", None, "Paris"],
        }
    )
    table = score_trials(trials, tasks, "judge", judge=RuleJudge("last_number"))
    assert table.schema == SCORES
    out = table.to_pandas()
    assert out["scorer"].tolist() == ["judge:rule:last_number"] * 3
    assert out["judge_status"].tolist() == [OK, SKIPPED_INFRA, NOT_APPLICABLE]
    assert out["correct"].tolist()[0] is True and out["correct"].isna().tolist()[1:] == [True] * 2
    assert list(out["judge_votes"].iloc[0]) == [True]
    assert out["judge_calls"].tolist() == [0, 0, 0]  # a measured zero: no model
