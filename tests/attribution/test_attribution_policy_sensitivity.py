"""Policy sensitivity: accuracy under as_incorrect, exclude and retry from the same trials."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from outcome_tables import RETRIED, table

from evalnoise.attribution import POLICIES, policy_sensitivity
from evalnoise.stats import accuracy

INFRA = ("timeout", "oom_killed", "infra_error")


def test_three_policies_by_hand():
    res = policy_sensitivity(RETRIED)
    frame = res.to_frame().set_index("policy")
    assert res.policy == POLICIES and res.applicable.all()
    # as_incorrect, first attempts: t1 (1, 0), t2 (0, 0), t3 (0, 1) -> task means .5, 0, .5
    assert frame.loc["as_incorrect", "mean"] == pytest.approx(1 / 3)
    # exclude, first attempts: t1 (1, 0), t2 (-), t3 (1) -> .5, 1
    assert frame.loc["exclude", "mean"] == pytest.approx(0.75)
    assert frame.loc["exclude", ["n_counted", "n_excluded", "n_tasks"]].tolist() == [3, 3, 2]
    # retry, last attempts: t1 (1, 0), t2 (1, 0 exhausted), t3 (0, 1) -> .5, .5, .5
    assert frame.loc["retry", "mean"] == pytest.approx(0.5)
    assert frame.loc["retry", ["n_counted", "n_excluded"]].tolist() == [6, 0]
    assert res.max_shift == pytest.approx(0.75 - 1 / 3)
    ref = accuracy(np.array([1.0, 0, 0, 0, 0, 1]), np.array(["t1", "t1", "t2", "t2", "t3", "t3"]))
    assert res.accuracy["as_incorrect"].mean == ref.mean
    assert (res.ci_low[0], res.ci_high[0]) == (ref.ci_low, ref.ci_high)
    assert res.half_width == pytest.approx((ref.ci_high - ref.ci_low) / 2)
    assert res.moves_result == (res.max_shift > res.half_width)
    assert "retries ignored" in frame.loc["as_incorrect", "note"]
    exhausted_excluded = policy_sensitivity(RETRIED, on_exhausted="exclude").to_frame()
    row = exhausted_excluded.set_index("policy").loc["retry"]
    assert row["mean"] == pytest.approx((0.5 + 1.0 + 0.5) / 3)
    assert row["n_excluded"] == 1


def test_retry_not_applicable_without_retries_and_json():
    single = RETRIED[RETRIED["attempt"] == 1]
    res = policy_sensitivity(single)
    frame = res.to_frame().set_index("policy")
    assert not frame.loc["retry", "applicable"] and np.isnan(frame.loc["retry", "mean"])
    assert frame.loc["retry", "note"].startswith("not applicable")
    assert "retry" not in res.accuracy
    out = json.loads(json.dumps(res.to_dict()))
    assert [p["policy"] for p in out["policies"]] == list(POLICIES)
    assert out["policies"][2]["applicable"] is False
    assert isinstance(out["moves_result"], bool)


def test_moves_result_when_infra_outcomes_are_common():
    rng = np.random.default_rng(0)
    rows = []
    for t in range(40):
        for k in range(5):
            infra = rng.random() < 0.3
            rows.append((f"t{t}", k, 1, "timeout" if infra else "ok", None if infra else 1.0))
    res = policy_sensitivity(table(rows))
    assert res.moves_result and res.max_shift > res.half_width
    stable = policy_sensitivity(table([r for r in rows if r[3] == "ok"]))
    assert not stable.moves_result and stable.max_shift == 0.0


def test_correct_column_and_unscored_rows():
    frame = RETRIED.drop(columns="score").assign(
        correct=pd.array([True, False, None, True, None, None, None, None, False, True])
    )
    by_correct = policy_sensitivity(frame).to_frame()
    np.testing.assert_allclose(by_correct["mean"], policy_sensitivity(RETRIED).to_frame()["mean"])
    judged = RETRIED.copy()
    judged.loc[0, "score"] = np.nan  # ok but unscored (judge error)
    row = policy_sensitivity(judged).to_frame().iloc[0]
    assert row["n_unscored"] == 1 and row["n_counted"] == 5


def test_input_checks():
    with pytest.raises(ValueError, match="one group"):
        policy_sensitivity(pd.concat([RETRIED, RETRIED.assign(resource_profile="3x")]))
    with pytest.raises(ValueError, match="score"):
        policy_sensitivity(RETRIED.drop(columns="score"))
    with pytest.raises(ValueError, match="status"):
        policy_sensitivity(RETRIED.drop(columns="status"))


@st.composite
def trial_tables(draw, infra_allowed=True):
    """Realistic tables: only infra outcomes are retried; each trial has 1–3 attempts."""
    n_tasks = draw(st.integers(1, 5))
    rows = []
    last_status = st.sampled_from(("ok", "agent_error", *INFRA) if infra_allowed else ("ok",))
    for t in range(n_tasks):
        for k in range(draw(st.integers(1, 4))):
            n_att = draw(st.integers(1, 3)) if infra_allowed else 1
            for a in range(1, n_att + 1):
                status = draw(st.sampled_from(INFRA)) if a < n_att else draw(last_status)
                score = None
                if status == "ok":
                    score = draw(st.sampled_from([0.0, 0.5, 1.0]))
                elif status == "agent_error":
                    score = 0.0
                rows.append((f"t{t}", k, a, status, score))
    return table(rows)


@settings(max_examples=60, deadline=None)
@given(trials=trial_tables(infra_allowed=False))
def test_without_infra_rows_every_policy_agrees(trials):
    res = policy_sensitivity(trials)
    ok = res.mean[res.applicable]
    assert np.all(ok == ok[0])
    assert res.max_shift == 0.0 and not res.moves_result
    assert not res.applicable[2]  # nothing was retried


# 40 examples: each runs the pandas policy pipeline twice (~0.11 s of CPU an example)
@settings(max_examples=40, deadline=None)
@given(trials=trial_tables())
def test_orderings_and_flag_consistency(trials):
    res = policy_sensitivity(trials)
    m = dict(zip(res.policy, res.mean, strict=True))
    if np.isfinite(m["exclude"]):
        assert m["exclude"] >= m["as_incorrect"] - 1e-12
    if res.applicable[2]:
        assert m["retry"] >= m["as_incorrect"] - 1e-12
    assert res.n_counted[0] == trials.drop_duplicates(["task_id", "trial"]).shape[0]
    finite = res.mean[res.applicable & np.isfinite(res.mean)]
    assert res.max_shift == pytest.approx(finite.max() - finite.min())
    if np.isfinite(res.half_width):
        assert res.moves_result == (res.max_shift > res.half_width)
    # the reversed row order changes nothing
    again = policy_sensitivity(trials.iloc[::-1])
    np.testing.assert_array_equal(again.mean, res.mean)
