"""judge_agreement(): κ against statsmodels and a published table, error rates, clustering."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from statsmodels.stats.inter_rater import cohens_kappa
from statsmodels.stats.proportion import proportion_confint

from evalnoise.stats import wilson_interval
from evalnoise.stats.agreement import judge_agreement, judge_agreement_by_level


def _expand(n11, n10, n01, n00):
    """Verdict arrays (judge, reference) realizing a 2×2 table."""
    judge = np.repeat([1.0, 1.0, 0.0, 0.0], [n11, n10, n01, n00])
    ref = np.repeat([1.0, 0.0, 1.0, 0.0], [n11, n10, n01, n00])
    return judge, ref


def _table(res):
    return np.array(
        [[res.n_true_accept, res.n_false_accept], [res.n_false_reject, res.n_true_reject]]
    )


def _noisy_judge(rng, n_tasks=100, trials=5, far=0.15, frr=0.2, task_effect=0.0):
    """Reference labels per trial and a judge with given error rates (optionally per task)."""
    tasks = np.repeat(np.arange(n_tasks), trials)
    p = rng.beta(0.7, 0.7, n_tasks)[tasks]
    ref = (rng.random(tasks.size) < p).astype(float)
    # task_effect: a share of tasks whose answers the judge always gets wrong.
    bad = (rng.random(n_tasks) < task_effect)[tasks]
    flip = np.where(ref == 1, rng.random(tasks.size) < frr, rng.random(tasks.size) < far)
    judge = np.where(flip | bad, 1 - ref, ref)
    return judge, ref, tasks


# --- reference values ------------------------------------------------------------------


def test_published_example():
    # Wikipedia "Cohen's kappa", worked example: 20 yes/yes, 5 yes/no, 10 no/yes, 15 no/no
    # → p_o = 0.7, p_e = 0.5, κ = 0.4.
    res = judge_agreement(*_expand(20, 5, 10, 15))
    assert res.agreement == pytest.approx(0.7)
    assert res.kappa == pytest.approx(0.4)


@pytest.mark.parametrize(
    "cells",
    [(20, 5, 10, 15), (174, 51, 37, 238), (3, 1, 2, 40), (90, 2, 1, 7), (1, 10, 10, 1)],
)
def test_kappa_and_se_match_statsmodels(cells):
    res = judge_agreement(*_expand(*cells))
    ref = cohens_kappa(_table(res))
    assert res.kappa == pytest.approx(ref.kappa, rel=1e-12)
    assert res.kappa_se == pytest.approx(ref.std_kappa, rel=1e-10)
    assert res.kappa_se0 == pytest.approx(ref.std_kappa0, rel=1e-10)
    assert res.kappa_max == pytest.approx(ref.kappa_max, rel=1e-12)
    assert res.kappa_pvalue == pytest.approx(ref.pvalue_two_sided, rel=1e-8)
    z = 1.959963984540054
    assert res.kappa_ci_low == pytest.approx(max(ref.kappa - z * ref.std_kappa, -1), rel=1e-9)
    assert res.kappa_ci_high == pytest.approx(min(ref.kappa + z * ref.std_kappa, 1), rel=1e-9)


def test_kappa_matches_statsmodels_on_random_tables():
    rng = np.random.default_rng(5)
    for _ in range(50):
        judge, ref, _ = _noisy_judge(rng, n_tasks=int(rng.integers(5, 60)), trials=3)
        res = judge_agreement(judge, ref)
        sm = cohens_kappa(_table(res))
        assert res.kappa == pytest.approx(sm.kappa, rel=1e-12, abs=1e-14)
        assert res.kappa_se == pytest.approx(sm.std_kappa, rel=1e-9, abs=1e-14)


def test_error_rates_and_wilson_intervals():
    res = judge_agreement(*_expand(174, 51, 37, 238))
    assert res.false_accept_rate == pytest.approx(51 / 289)
    assert res.false_reject_rate == pytest.approx(37 / 211)
    assert (res.n_reference_false, res.n_reference_true) == (289, 211)
    lo, hi = proportion_confint(51, 289, alpha=0.05, method="wilson")
    assert (res.far_ci_low, res.far_ci_high) == pytest.approx((lo, hi), rel=1e-10)
    lo, hi = proportion_confint(37, 211, alpha=0.05, method="wilson")
    assert (res.frr_ci_low, res.frr_ci_high) == pytest.approx((lo, hi), rel=1e-10)
    lo, hi = proportion_confint(412, 500, alpha=0.05, method="wilson")
    assert (res.agreement_ci_low, res.agreement_ci_high) == pytest.approx((lo, hi), rel=1e-10)
    assert res.judge_positive_rate == pytest.approx(225 / 500)
    assert res.reference_positive_rate == pytest.approx(211 / 500)


# --- clustering ------------------------------------------------------------------------


def test_one_trial_per_task_cluster_matches_independent():
    rng = np.random.default_rng(1)
    judge, ref, _ = _noisy_judge(rng, n_tasks=600, trials=1)
    res = judge_agreement(judge, ref, tasks=np.arange(judge.size), n_resamples=4000)
    # Every task a single trial: the cluster bootstrap is the ordinary bootstrap, whose SD
    # approximates the FCE asymptotic SE; design effects are G/(G − 1).
    assert res.kappa_cluster_se == pytest.approx(res.kappa_se, rel=0.08)
    g = res.n_tasks
    for d in (res.design_effect_agreement, res.design_effect_far, res.design_effect_frr):
        assert d == pytest.approx(g / (g - 1), rel=1e-9)


def test_cluster_bootstrap_tracks_sampling_sd_of_clustered_kappa():
    """Whole tasks misgraded: the cluster SE matches κ̂'s real spread; the FCE SE is too small."""
    rng = np.random.default_rng(2)
    kappas, fce, clus = [], [], []
    for _ in range(150):
        judge, ref, tasks = _noisy_judge(rng, n_tasks=60, trials=8, task_effect=0.15)
        res = judge_agreement(judge, ref, tasks=tasks, n_resamples=400, seed=int(rng.integers(1e9)))
        kappas.append(res.kappa)
        fce.append(res.kappa_se)
        clus.append(res.kappa_cluster_se)
    sd = np.std(kappas, ddof=1)
    assert np.mean(clus) == pytest.approx(sd, rel=0.15)
    assert np.mean(fce) < 0.8 * sd
    assert res.design_effect_agreement > 1.5


def test_bootstrap_is_reproducible_and_seeded():
    rng = np.random.default_rng(3)
    judge, ref, tasks = _noisy_judge(rng, n_tasks=40, trials=4)
    a = judge_agreement(judge, ref, tasks=tasks, seed=7, n_resamples=500)
    b = judge_agreement(judge, ref, tasks=tasks, seed=7, n_resamples=500)
    c = judge_agreement(judge, ref, tasks=tasks, seed=8, n_resamples=500)
    assert a == b
    assert a.kappa_cluster_ci_low != c.kappa_cluster_ci_low
    assert a.kappa_cluster_ci_low <= a.kappa <= a.kappa_cluster_ci_high
    no_tasks = judge_agreement(judge, ref)
    assert np.isnan(no_tasks.kappa_cluster_se) and np.isnan(no_tasks.design_effect_far)
    assert no_tasks.n_tasks == 0


def test_clustered_wilson_uses_design_effect():
    rng = np.random.default_rng(4)
    judge, ref, tasks = _noisy_judge(rng, n_tasks=50, trials=10, task_effect=0.2)
    res = judge_agreement(judge, ref, tasks=tasks, n_resamples=200)
    d = max(res.design_effect_far, 1.0)
    lo, hi = wilson_interval(res.false_accept_rate, res.n_reference_false, design_effect=d)
    assert (res.far_ci_low, res.far_ci_high) == pytest.approx((float(lo), float(hi)))
    plain = judge_agreement(judge, ref)
    assert res.far_ci_high - res.far_ci_low > plain.far_ci_high - plain.far_ci_low


# --- degenerate judges and inputs --------------------------------------------------------


def test_judge_always_true_is_degenerate():
    ref = np.array([1.0] * 30 + [0.0] * 10)
    res = judge_agreement(np.ones(40), ref)
    assert res.degenerate
    assert "TRUE" in res.degenerate_reason
    assert res.kappa == 0.0
    assert res.false_accept_rate == 1.0 and res.false_reject_rate == 0.0


def test_nearly_constant_judge_is_degenerate_and_threshold_applies():
    judge, ref = _expand(96, 2, 0, 2)  # judge says TRUE to 98 %
    res = judge_agreement(judge, ref)
    assert res.degenerate and "98.0%" in res.degenerate_reason
    assert not judge_agreement(judge, ref, degenerate_threshold=0.99).degenerate
    assert not judge_agreement(*_expand(20, 5, 10, 15)).degenerate


def test_constant_reference_is_degenerate_both_ways():
    """Issue 21.10: an always-right agent (reference TRUE everywhere) gets κ = 0 whatever
    the judge does; it is flagged by the same rule as the always-wrong case."""
    judge = np.array([1.0] * 36 + [0.0] * 4)  # the judge rejects 10 % of right answers
    right = judge_agreement(judge, np.ones(40))
    assert right.kappa == 0.0 and right.degenerate
    assert "reference says TRUE to 100.0%" in right.degenerate_reason
    assert "false-reject" in right.degenerate_reason
    wrong = judge_agreement(1.0 - judge, np.zeros(40))  # mirror image: always wrong
    assert wrong.kappa == 0.0 and wrong.degenerate
    assert "reference says FALSE to 100.0%" in wrong.degenerate_reason
    assert "false-accept" in wrong.degenerate_reason


def test_undefined_kappa():
    res = judge_agreement(np.ones(10), np.ones(10))
    assert np.isnan(res.kappa) and np.isnan(res.kappa_se)
    assert res.degenerate and "undefined" in res.degenerate_reason
    assert np.isnan(res.false_accept_rate)
    assert res.false_reject_rate == 0.0
    assert any("false-accept" in w for w in res.warnings)


def test_missing_values_are_dropped():
    judge = [1, 0, None, 1, np.nan, 0, True]
    ref = [1, 0, 1, None, 0, 1, False]
    res = judge_agreement(judge, ref)
    assert res.n == 4 and res.n_dropped == 3
    assert (res.n_true_accept, res.n_false_accept, res.n_false_reject, res.n_true_reject) == (
        1,
        1,
        1,
        1,
    )


def test_empty_and_invalid_inputs():
    res = judge_agreement([np.nan], [1])
    assert res.n == 0 and np.isnan(res.kappa) and res.degenerate
    with pytest.raises(ValueError, match="0/1"):
        judge_agreement([0.5, 1], [1, 0])
    with pytest.raises(ValueError, match="rows"):
        judge_agreement([1, 0], [1])
    with pytest.raises(ValueError, match="confidence"):
        judge_agreement([1, 0], [1, 0], confidence=1.0)
    with pytest.raises(ValueError, match="tasks must not be missing"):
        judge_agreement([1, 0], [1, 0], tasks=np.array(["a", None], dtype=object))


def test_by_level_matches_subsets():
    rng = np.random.default_rng(6)
    judge, ref, tasks = _noisy_judge(rng, n_tasks=60, trials=4)
    levels = np.array(["L3", "L1", "L2"])[tasks % 3]
    out = judge_agreement_by_level(judge, ref, levels, tasks=tasks, n_resamples=200)
    assert list(out) == ["L1", "L2", "L3"]
    for level, res in out.items():
        m = levels == level
        assert res == judge_agreement(judge[m], ref[m], tasks=tasks[m], n_resamples=200)


def test_to_dict_is_json():
    rng = np.random.default_rng(8)
    judge, ref, tasks = _noisy_judge(rng, n_tasks=20, trials=3)
    d = judge_agreement(judge, ref, tasks=tasks, n_resamples=100).to_dict()
    assert json.loads(json.dumps(d))["n"] == 60
    assert isinstance(d["warnings"], list) and isinstance(d["degenerate"], bool)


# --- properties --------------------------------------------------------------------------

_verdicts = st.lists(st.tuples(st.booleans(), st.booleans()), min_size=1, max_size=80)


@settings(max_examples=200, deadline=None)
@given(_verdicts)
def test_kappa_bounds_and_intervals_contain_estimates(pairs):
    judge, ref = (np.array(v, dtype=float) for v in zip(*pairs, strict=True))
    res = judge_agreement(judge, ref)
    if np.isfinite(res.kappa):
        assert -1.0 - 1e-12 <= res.kappa <= 1.0 + 1e-12
        assert res.kappa <= res.kappa_max + 1e-12
        assert -1.0 <= res.kappa_ci_low <= res.kappa <= res.kappa_ci_high <= 1.0
    assert 0.0 <= res.agreement_ci_low <= res.agreement <= res.agreement_ci_high <= 1.0
    for rate, lo, hi in (
        (res.false_accept_rate, res.far_ci_low, res.far_ci_high),
        (res.false_reject_rate, res.frr_ci_low, res.frr_ci_high),
    ):
        if np.isfinite(rate):
            assert 0.0 <= lo <= rate <= hi <= 1.0
    # Swapping the raters leaves κ unchanged and swaps FAR with 1 − specificity's twin.
    swapped = judge_agreement(ref, judge)
    assert swapped.kappa == pytest.approx(res.kappa, nan_ok=True)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.booleans(), min_size=2, max_size=80).filter(lambda v: 0 < sum(v) < len(v)))
def test_perfect_agreement(verdicts):
    v = np.array(verdicts, dtype=float)
    res = judge_agreement(v, v, tasks=np.arange(v.size) % 4, n_resamples=50)
    assert res.kappa == pytest.approx(1.0)
    assert res.agreement == 1.0
    assert res.false_accept_rate == 0.0 and res.false_reject_rate == 0.0
    assert res.kappa_se == pytest.approx(0.0, abs=1e-7)
