"""The verdict after an agent failure (evalnoise.verified_after): the flags, the stricter
reading, how the infra policy and the readings apply them, and the runner's decision."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from evalnoise.analysis import failure_readings
from evalnoise.outcomes import flag_counts, flags_text, outcome_line
from evalnoise.runner.environment_phases import agent_oom_outcome, verdict_after_agent_failure
from evalnoise.runner.infra_policies import (
    InfraPolicy,
    apply_infra_policy,
    infra_policy,
    should_retry,
)
from evalnoise.verified_after import apply_rule, as_failures, verified_mask


def _trials() -> pd.DataFrame:
    """Two tasks, three trials each: t1 solved on every trial (one after a timeout, one after
    an agent error), t2 solved once after a timeout, failed once, and one timeout without a
    verdict."""
    return pd.DataFrame(
        {
            "agent": "a",
            "resource_profile": "p",
            "task_id": ["t1", "t1", "t1", "t2", "t2", "t2"],
            "trial": [0, 1, 2, 0, 1, 2],
            "attempt": 1,
            "status": ["ok", "ok", "ok", "ok", "ok", "timeout"],
            "exit_code": [0, 1, None, None, 0, None],
            "score": [1.0, 1.0, 1.0, 1.0, 0.0, np.nan],
            "correct": [True, True, True, True, False, None],
            "reward": [1.0, 1.0, 1.0, 1.0, 0.0, np.nan],
            "verified_after": [None, "agent_error", "timeout", "timeout", None, None],
            "oom_in_agent": [None, None, True, None, None, None],
        }
    )


def test_as_failures_gives_back_the_agent_outcome():
    trials = _trials()
    before = trials.copy()
    strict = as_failures(trials)
    pd.testing.assert_frame_equal(trials, before)  # pure
    assert strict["status"].tolist() == ["ok", "agent_error", "timeout", "timeout", "ok", "timeout"]
    # an agent error is incorrect (the scorer's rule); a timeout has no score: the policy's
    assert strict["score"].tolist()[:2] == [1.0, 0.0]
    assert np.isnan(strict["score"].tolist()[2]) and np.isnan(strict["score"].tolist()[3])
    assert strict["correct"].tolist()[1] is False or not strict["correct"].tolist()[1]
    assert strict["reward"].isna().tolist() == [False, True, True, True, False, True]
    # the flag stays: the row still says what the verifier decided
    assert strict["verified_after"].tolist() == trials["verified_after"].tolist()
    assert apply_rule(trials, "verdict") is trials
    assert apply_rule(trials, None) is trials
    with pytest.raises(ValueError, match="after_agent_failure"):
        apply_rule(trials, "lenient")


def test_a_table_without_the_column_is_read_as_it_is():
    plain = pd.DataFrame({"status": ["ok", "timeout"], "score": [1.0, np.nan]})
    assert as_failures(plain) is plain
    assert not verified_mask(plain).any()
    assert flag_counts(plain) == {}  # no flag column: nothing counted


def test_flag_counts_and_their_text():
    """The flags come from the one flag table (evalnoise.outcome_table.FLAG_TABLE)."""
    counts = flag_counts(_trials())
    assert (counts["verified_after"], counts["oom_in_agent"]) == (3, 1)
    line = outcome_line({"trials": 6, "attempts": 6, "ok": 5, "timeout": 1, **counts})
    assert line.endswith(
        "; flagged: 3 verified after an agent failure, 1 OOM kill in the agent phase"
    )
    assert "flagged" not in outcome_line({"trials": 1, "attempts": 1, "ok": 1})


def _mean_of_task_means(tasks, values):
    frame = pd.DataFrame({"t": tasks, "v": values})
    return frame.groupby("t")["v"].mean().mean()


def test_readings_show_the_stricter_reading_beside():
    trials = _trials()
    readings = failure_readings(trials)
    # by hand: answered = the five ok trials; failures as incorrect adds the timeout as 0
    assert readings["answered"].n_trials == 5
    assert readings["answered"].mean == pytest.approx(
        _mean_of_task_means(["t1"] * 3 + ["t2"] * 2, [1, 1, 1, 1, 0])
    )
    assert readings["failures_as_incorrect"].mean == pytest.approx(
        _mean_of_task_means(["t1"] * 3 + ["t2"] * 3, [1, 1, 1, 1, 0, 0])
    )
    # the stricter reading: the three verdicts after an agent failure count as 0 too
    strict = readings["verified_as_failures"]
    assert strict.n_trials == 6
    assert strict.mean == pytest.approx(
        _mean_of_task_means(["t1"] * 3 + ["t2"] * 3, [1, 0, 0, 0, 0, 0])
    )
    # without such a trial there is no third reading (every other group's record unchanged)
    plain = trials.assign(verified_after=None)
    assert "verified_as_failures" not in failure_readings(plain)


def test_the_infra_policy_applies_the_rule():
    trials = _trials()
    verdict = apply_infra_policy(trials, "as_incorrect").counted
    assert verdict["score"].tolist() == [1.0, 1.0, 1.0, 1.0, 0.0, 0.0]
    failure = apply_infra_policy(trials, {"mode": "as_incorrect", "after_agent_failure": "failure"})
    assert failure.counted["score"].tolist() == [1.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    assert failure.counts["infra_final"] == 3  # the two verified timeouts and the plain one
    excluded = apply_infra_policy(trials, {"mode": "exclude", "after_agent_failure": "failure"})
    assert excluded.counted["score"].tolist() == [1.0, 0.0, 0.0]
    assert len(excluded.excluded) == 3


def test_policy_spec_round_trip_and_retry():
    policy = infra_policy({"mode": "retry", "max_attempts": 2, "after_agent_failure": "failure"})
    assert policy.after_agent_failure == "failure"
    assert policy.to_dict()["after_agent_failure"] == "failure"
    assert "after_agent_failure" not in InfraPolicy().to_dict()  # the default: as it was
    assert "counts as that failure" in policy.describe()
    assert InfraPolicy().describe() == "as incorrect"
    # a verified timeout is retried only when it counts as the timeout it was
    assert should_retry(policy, "ok", 1, "timeout")
    assert not should_retry(infra_policy({"mode": "retry"}), "ok", 1, "timeout")
    assert not should_retry(policy, "ok", 1, "agent_error")  # an agent error is not infra
    with pytest.raises(ValueError, match="after_agent_failure"):
        InfraPolicy(after_agent_failure="maybe")


def test_config_key_is_validated_and_reaches_the_policy():
    from pathlib import Path

    from evalnoise.pipeline.settings import (
        ConfigError,
        check_config,
        infra_policy_spec,
        load_schema,
        with_defaults,
    )

    root = Path(__file__).resolve().parents[1]
    schema = load_schema(root / "config" / "schemas" / "config.schema.yaml")
    config = with_defaults({}, schema)
    assert config["scoring"]["after_agent_failure"] == "verdict"
    assert infra_policy_spec(config) == {"mode": "as_incorrect"}  # the default run's params
    strict = with_defaults({"scoring": {"after_agent_failure": "failure"}}, schema)
    assert infra_policy_spec(strict) == {"mode": "as_incorrect", "after_agent_failure": "failure"}
    check_config({"scoring": {"after_agent_failure": "failure"}}, schema)
    with pytest.raises(ConfigError, match=r"scoring\.after_agent_failure"):
        check_config({"scoring": {"after_agent_failure": "lenient"}}, schema)


def test_outcomes_and_health_follow_the_rule():
    from evalnoise.outcomes import assess_health
    from evalnoise.pipeline.stages import outcomes_with_flags

    trials = _trials()
    verdict = outcomes_with_flags(trials, "verdict")
    assert (verdict["ok"], verdict["timeout"], verdict["no_answer"]) == (5, 1, 0)
    assert verdict["verified_after"] == 3
    # the health rule counts as a failure only what has no valid verdict
    assert assess_health(verdict).failure_rate == pytest.approx(1 / 6)
    failure = outcomes_with_flags(trials, "failure")
    assert (failure["ok"], failure["timeout"], failure["no_answer"]) == (2, 3, 1)
    assert failure["verified_after"] == 3  # the flags are the same under both rules


def _row(status, exit_code=None):
    return {"status": status, "exit_code": exit_code, "reward": None, "verified_after": None}


def test_the_runner_scores_a_verdict_after_an_agent_failure():
    row = _row("timeout", 137)
    assert verdict_after_agent_failure(row, 1.0)
    assert (row["status"], row["reward"], row["verified_after"]) == ("ok", 1.0, "timeout")
    row = _row("agent_error", 1)
    assert verdict_after_agent_failure(row, 0.25)
    assert (row["status"], row["reward"], row["verified_after"]) == ("ok", 0.25, "agent_error")
    # a crash (fault signal) stays a crash; infra outcomes keep their policy
    for status, code in (("agent_error", 139), ("oom_killed", 137), ("infra_error", None)):
        row = _row(status, code)
        assert not verdict_after_agent_failure(row, 1.0)
        assert (row["status"], row["verified_after"]) == (status, None)


def test_an_oom_kill_is_the_task_s_own_while_the_container_lives():
    status, error, flag = agent_oom_outcome(None, None, alive=True, limit_bytes=64)
    assert (status, flag) == (None, True) and "container lived on" in error
    status, error, flag = agent_oom_outcome("agent_error", "exit 1", alive=True, limit_bytes=64)
    assert (status, flag) == ("agent_error", True) and error.startswith("exit 1; ")
    status, error, flag = agent_oom_outcome(None, None, alive=False, limit_bytes=64)
    assert (status, flag) == ("oom_killed", False) and "ended the container" in error
    assert agent_oom_outcome("timeout", "late", alive=False, limit_bytes=64) == (
        "timeout",
        "late",
        False,
    )


def test_the_pipeline_group_reads_the_rule_from_the_policy():
    """collect.group_data + stages.group_health: the frame the statistics take and the
    health under each rule; the attempts stay as recorded (the readings need both)."""
    from evalnoise.pipeline.collect import group_data
    from evalnoise.pipeline.stages import group_health

    scores = _trials()
    levels = {"t1": "easy", "t2": "hard"}
    verdict = group_data(scores, levels, "a", "p", {"mode": "as_incorrect"})
    assert verdict.after_agent_failure == "verdict"
    assert verdict.frame["score"].tolist() == [1.0, 1.0, 1.0, 1.0, 0.0, 0.0]
    failure = group_data(
        scores, levels, "a", "p", {"mode": "as_incorrect", "after_agent_failure": "failure"}
    )
    assert failure.after_agent_failure == "failure"
    assert failure.frame["score"].tolist() == [1.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    assert failure.attempts["status"].tolist() == scores["status"].tolist()  # as recorded
    outcomes, health, _ = group_health(verdict, {"max_failure_rate": 0.5, "expected_failures": []})
    assert (outcomes["ok"], outcomes["verified_after"], health.valid) == (5, 3, True)
    outcomes, health, _ = group_health(failure, {"max_failure_rate": 0.5, "expected_failures": []})
    assert (outcomes["ok"], health.valid) == (2, False)  # 4 of 6 failed: today's reading
    assert outcomes["verified_after"] == 3


def test_the_card_counts_the_flags_and_shows_both_readings():
    from evalnoise.report.card_text import card_fields
    from evalnoise.report.cards import CardContext, evaluation_card

    readings = failure_readings(_trials())
    record = {
        "group": "a@p",
        "n_tasks": 2,
        "n_obs": 6,
        "mean": readings["failures_as_incorrect"].mean,
        "ci_low": 0.0,
        "ci_high": 1.0,
        "se_clustered": 0.2,
        "icc": 0.5,
        "icc_ci_low": 0.1,
        "icc_ci_high": 0.9,
        "icc_se": 0.2,
        "interpretation": "moderate",
        "warnings": [],
        "readings": readings,
        "outcomes": {
            "ok": 5,
            "timeout": 1,
            "trials": 6,
            "attempts": 6,
            "verified_after": 3,
            "oom_in_agent": 1,
        },
    }
    card = evaluation_card(record, CardContext(benchmark="b", infra_policy="as incorrect"))
    assert flags_text(card["outcomes"]) == (
        "3 verified after an agent failure, 1 OOM kill in the agent phase"
    )
    fields = {name: value for name, value, _ in card_fields(card)}
    assert "verdicts after agent failures as incorrect" in fields["Readings"]
    # a card without flags is as it was
    plain = {**record, "outcomes": {"ok": 6, "trials": 6, "attempts": 6}}
    plain_card = evaluation_card(plain, CardContext(benchmark="b", infra_policy="x"))
    assert flags_text(plain_card["outcomes"]) == ""
