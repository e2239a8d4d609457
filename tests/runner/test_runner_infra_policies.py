"""The infra policy: which rows count for accuracy, and the counts every policy produces."""

from __future__ import annotations

import pandas as pd
import pytest
from outcome_tables import RETRIED, SINGLE, WITHOUT_VERDICT, table

from evalnoise.runner.infra_policies import (
    InfraPolicy,
    apply_infra_policy,
    infra_policy,
    should_retry,
)


def test_as_incorrect_scores_infra_outcomes_zero():
    result = apply_infra_policy(SINGLE, "as_incorrect")
    c = result.counts
    assert (c["trials"], c["attempts"], c["counted"], c["excluded"]) == (6, 6, 6, 0)
    assert c["scored_incorrect_by_policy"] == 3
    assert (c["infra_attempts"], c["infra_final"]) == (3, 3)
    assert (c["retried_trials"], c["superseded_attempts"]) == (0, 0)
    assert c["infra_error_rate_trials"] == pytest.approx(0.5)
    assert (c["timeout_attempts"], c["oom_killed_attempts"], c["infra_error_attempts"]) == (1, 1, 1)
    assert result.counted["score"].tolist() == [1.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    assert result.counted["score"].mean() == pytest.approx(1 / 6)
    assert len(result.excluded) == 0


def test_exclude_drops_infra_outcomes_and_counts_them():
    result = apply_infra_policy(SINGLE, "exclude")
    c = result.counts
    assert (c["trials"], c["counted"], c["excluded"], c["scored_incorrect_by_policy"]) == (
        6,
        3,
        3,
        0,
    )
    assert sorted(result.excluded["status"]) == ["infra_error", "oom_killed", "timeout"]
    assert result.counted["status"].tolist() == ["ok", "agent_error", "ok"]
    assert result.counted["score"].mean() == pytest.approx(1 / 3)


def test_retry_last_attempt_counts_earlier_attempts_kept_for_rates():
    result = apply_infra_policy(RETRIED, {"mode": "retry", "max_attempts": 3})
    c = result.counts
    assert (c["trials"], c["attempts"], c["counted"], c["excluded"]) == (6, 10, 6, 0)
    assert (c["retried_trials"], c["superseded_attempts"]) == (3, 4)
    assert (c["infra_attempts"], c["infra_final"]) == (5, 1)
    assert c["scored_incorrect_by_policy"] == 1  # t2/1: still timing out after 3 attempts
    assert c["infra_error_rate_attempts"] == pytest.approx(0.5)
    assert c["infra_error_rate_trials"] == pytest.approx(1 / 6)
    counted = result.counted.set_index(["task_id", "trial"])
    assert counted.loc[("t2", 0), "attempt"] == 2 and counted.loc[("t2", 0), "status"] == "ok"
    assert counted.loc[("t2", 1), "score"] == 0.0
    assert counted.loc[("t3", 0), "status"] == "agent_error"
    assert result.counted["score"].mean() == pytest.approx(3 / 6)
    assert sorted(result.superseded["status"]) == [
        "infra_error",
        "oom_killed",
        "timeout",
        "timeout",
    ]


def test_retry_then_exclude():
    result = apply_infra_policy(RETRIED, InfraPolicy("retry", 3, on_exhausted="exclude"))
    c = result.counts
    assert (c["counted"], c["excluded"], c["scored_incorrect_by_policy"]) == (5, 1, 0)
    assert result.excluded[["task_id", "trial", "attempt"]].values.tolist() == [["t2", 1, 3]]
    assert result.counted["score"].mean() == pytest.approx(3 / 5)


def test_correct_column_of_score_tables_is_set_false():
    scores = SINGLE.drop(columns="score").assign(correct=[True, False, None, None, None, False])
    result = apply_infra_policy(scores, "as_incorrect")
    assert result.counted["correct"].tolist() == [True, False, False, False, False, False]
    assert result.counted["score"].tolist()[2:5] == [0.0, 0.0, 0.0]


def test_pure_input_untouched_and_order_independent():
    before = RETRIED.copy()
    shuffled = RETRIED.sample(frac=1.0, random_state=3)
    a = apply_infra_policy(RETRIED, "retry:3")
    b = apply_infra_policy(shuffled, "retry:3")
    pd.testing.assert_frame_equal(RETRIED, before)
    assert a.counts == b.counts


@pytest.mark.parametrize("policy", ["as_incorrect", "exclude"])
def test_a_table_in_trial_order_gives_what_a_shuffled_one_gives(policy):
    # one attempt a trial, already in trial order: the rows are used as they are (no copy,
    # no reordering), and the input is still left as it was
    ordered = SINGLE.sort_values(["task_id", "trial"], kind="mergesort").reset_index(drop=True)
    before = ordered.copy()
    shuffled = ordered.sample(frac=1.0, random_state=5)
    a, b = apply_infra_policy(ordered, policy), apply_infra_policy(shuffled, policy)
    pd.testing.assert_frame_equal(ordered, before)
    assert a.counts == b.counts
    for name in ("counted", "excluded", "superseded"):
        pd.testing.assert_frame_equal(getattr(a, name), getattr(b, name))


def test_tables_without_attempt_column():
    result = apply_infra_policy(SINGLE.drop(columns="attempt"), "exclude")
    assert result.counts["excluded"] == 3


def test_should_retry():
    retry = infra_policy("retry:3")
    assert should_retry(retry, "oom_killed", 1) and should_retry(retry, "infra_error", 2)
    assert not should_retry(retry, "timeout", 3)
    assert not should_retry(retry, "agent_error", 1) and not should_retry(retry, "ok", 1)
    assert not should_retry(infra_policy("as_incorrect"), "timeout", 1)
    assert not should_retry(infra_policy("exclude"), "infra_error", 1)


@pytest.mark.parametrize(
    "spec,expected",
    [
        ("as_incorrect", InfraPolicy("as_incorrect")),
        ("exclude", InfraPolicy("exclude")),
        ("retry", InfraPolicy("retry", 3)),
        ("retry:5", InfraPolicy("retry", 5)),
        (
            {"mode": "retry", "max_attempts": 2, "on_exhausted": "exclude"},
            InfraPolicy("retry", 2, "exclude"),
        ),
    ],
)
def test_policy_specs(spec, expected):
    assert infra_policy(spec) == expected


@pytest.mark.parametrize(
    "bad",
    [
        "ignore",
        "exclude:2",
        "retry:x",
        "retry:0",
        {"mode": "retry", "attempts": 2},
        {"mode": "as_incorrect", "max_attempts": 3},
    ],
)
def test_invalid_policies(bad):
    with pytest.raises(ValueError):
        infra_policy(bad)


def test_describe():
    assert infra_policy("retry:3").describe() == "retry (up to 3 attempts; then as incorrect)"
    assert infra_policy("as_incorrect").describe() == "as incorrect"


def test_crashes_follow_the_policy_and_are_counted():
    """Issue 21.1: a crash (agent_error by a fault signal) has no answer: the scorer leaves
    it unscored and the policy decides how it counts, as for an infra outcome."""
    rows = table(
        [
            ("t1", 0, 1, "ok", 1.0),
            ("t1", 1, 1, "agent_error", None),  # SIGSEGV
            ("t2", 0, 1, "agent_error", 0.0),  # exit 1: the agent's own wrong answer
            ("t2", 1, 1, "ok", 1.0),
        ]
    )
    rows["exit_code"] = [0, 139, 1, 0]
    counted = apply_infra_policy(rows, "as_incorrect")
    assert counted.counts["crashed_final"] == 1
    assert counted.counts["scored_incorrect_by_policy"] == 1
    assert counted.counted["score"].tolist() == [1.0, 0.0, 0.0, 1.0]
    excluded = apply_infra_policy(rows, "exclude")
    assert excluded.counts["excluded"] == 1 and excluded.excluded["exit_code"].tolist() == [139]
    assert excluded.counted["score"].tolist() == [1.0, 0.0, 1.0]
    # without exit codes a crash cannot be told from another agent error
    assert apply_infra_policy(rows.drop(columns="exit_code"), "exclude").counts["excluded"] == 0


@pytest.mark.parametrize("policy", ["as_incorrect", "exclude", "retry:3"])
def test_a_trial_without_a_verdict_is_never_a_zero(policy):
    """verifier_error (no reward written) keeps a null score under every policy: the analysis
    leaves it out of every number (issue 36)."""
    result = apply_infra_policy(WITHOUT_VERDICT, policy)
    rows = result.counted[result.counted["status"] == "verifier_error"]
    assert len(rows) == 3 and rows["score"].isna().all()
