"""Paired comparison of two agents: t on task means, McNemar, paired bootstrap, Holm, compare."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar
from statsmodels_holm import statsmodels_holm

import evalnoise.stats.paired as paired_mod
from evalnoise.stats.paired import (
    compare,
    holm,
    mcnemar,
    paired_bootstrap,
    paired_difference,
)
from evalnoise.stats.planning import minimum_detectable_difference


def _long_table(rng, n_tasks, n_trials, p, labels=None):
    """Binary trial outcomes: task i succeeds with probability p[i]."""
    labels = np.arange(n_tasks) if labels is None else np.asarray(labels)
    tasks = np.repeat(labels, n_trials)
    trials = np.tile(np.arange(n_trials), n_tasks)
    scores = (rng.random(n_tasks * n_trials) < np.repeat(p, n_trials)).astype(float)
    return tasks, trials, scores


# --- paired_difference ------------------------------------------------------------------------


def test_paired_difference_matches_scipy_ttest_rel_with_inner_join():
    rng = np.random.default_rng(1)
    p = rng.random(30)
    ta, _, ya = _long_table(rng, 30, 5, p)
    tb, _, yb = _long_table(rng, 30, 3, np.clip(p - 0.1, 0, 1))
    # B misses tasks 0..3 and has two tasks A never ran; rows in a different order.
    keep = tb >= 4
    tb = np.concatenate([tb[keep], [100, 100, 101]])
    yb = np.concatenate([yb[keep], [1.0, 0.0, 1.0]])
    order = rng.permutation(tb.size)
    tb, yb = tb[order], yb[order]

    res = paired_difference(ya, ta, yb, tb, confidence=0.9)
    assert (res.n_tasks, res.n_dropped_a, res.n_dropped_b) == (26, 4, 2)

    common = np.arange(4, 30)
    ma = pd.Series(ya).groupby(ta).mean().loc[common].to_numpy()
    mb = pd.Series(yb).groupby(tb).mean().loc[common].to_numpy()
    ref = stats.ttest_rel(ma, mb)
    ci = ref.confidence_interval(0.9)
    assert res.diff == pytest.approx(ma.mean() - mb.mean(), abs=1e-14)
    assert res.mean_a == pytest.approx(ma.mean(), abs=1e-14)
    assert res.mean_b == pytest.approx(mb.mean(), abs=1e-14)
    assert res.statistic == pytest.approx(ref.statistic, rel=1e-12)
    assert res.pvalue == pytest.approx(ref.pvalue, rel=1e-10)
    assert res.df == 25
    assert res.se == pytest.approx(np.std(ma - mb, ddof=1) / math.sqrt(26), rel=1e-12)
    assert (res.ci_low, res.ci_high) == (
        pytest.approx(ci.low, rel=1e-10),
        pytest.approx(ci.high, rel=1e-10),
    )
    assert sorted(res.tasks.tolist()) == common.tolist()


def test_paired_difference_degenerate_cases():
    tasks = np.repeat(np.arange(4), 2)
    ones, zeros = np.ones(8), np.zeros(8)
    same = paired_difference(ones, tasks, ones, tasks)
    assert (same.diff, same.se, same.pvalue) == (0.0, 0.0, 1.0)
    assert math.isnan(same.statistic)
    shifted = paired_difference(ones, tasks, zeros, tasks)
    assert (shifted.diff, shifted.se, shifted.pvalue, shifted.statistic) == (
        1.0,
        0.0,
        0.0,
        math.inf,
    )
    one = paired_difference([1.0, 0.0], ["x", "x"], [0.0], ["x"])
    assert one.n_tasks == 1 and one.diff == 0.5
    assert math.isnan(one.se) and math.isnan(one.pvalue) and math.isnan(one.ci_low)
    with pytest.raises(ValueError, match="no task in common"):
        paired_difference([1.0], ["x"], [1.0], ["y"])
    with pytest.raises(ValueError):
        paired_difference([np.nan], ["x"], [1.0], ["x"])


task_means = st.lists(st.floats(0, 1), min_size=2, max_size=25)


@settings(max_examples=60, deadline=None)
@given(data=st.data(), n_trials=st.integers(1, 4))
def test_paired_difference_antisymmetric_and_relabel_invariant(data, n_trials):
    n_tasks = data.draw(st.integers(2, 20))
    scores = data.draw(
        st.lists(
            st.sampled_from([0.0, 0.25, 0.5, 1.0]),
            min_size=2 * n_tasks * n_trials,
            max_size=2 * n_tasks * n_trials,
        )
    )
    y = np.array(scores)
    ya, yb = y[: n_tasks * n_trials], y[n_tasks * n_trials :]
    tasks = np.repeat(np.arange(n_tasks), n_trials)
    ab = paired_difference(ya, tasks, yb, tasks)
    ba = paired_difference(yb, tasks, ya, tasks)
    assert ba.diff == pytest.approx(-ab.diff, abs=1e-12)
    assert ba.se == pytest.approx(ab.se, abs=1e-12)
    assert ba.ci_low == pytest.approx(-ab.ci_high, abs=1e-12)
    assert (math.isnan(ab.pvalue) and math.isnan(ba.pvalue)) or ba.pvalue == pytest.approx(
        ab.pvalue, abs=1e-12
    )

    # Relabel tasks with a bijection onto strings and shuffle the rows of each agent.
    perm = np.random.default_rng(n_tasks).permutation(n_tasks)
    names = np.array([f"task-{i}" for i in perm])
    oa = np.random.default_rng(1).permutation(ya.size)
    ob = np.random.default_rng(2).permutation(yb.size)
    re = paired_difference(ya[oa], names[tasks][oa], yb[ob], names[tasks][ob])
    assert re.diff == pytest.approx(ab.diff, abs=1e-12)
    assert re.se == pytest.approx(ab.se, abs=1e-12)
    assert (math.isnan(ab.pvalue) and math.isnan(re.pvalue)) or re.pvalue == pytest.approx(
        ab.pvalue, abs=1e-12
    )


# --- mcnemar ----------------------------------------------------------------------------------


def _pairs(n11, n10, n01, n00):
    a = np.repeat([1, 1, 0, 0], [n11, n10, n01, n00])
    b = np.repeat([1, 0, 1, 0], [n11, n10, n01, n00])
    return a, b


def test_mcnemar_r_documentation_example():
    # R's ?mcnemar.test (Agresti 1990, p. 350): presidential approval in two surveys,
    # matrix(c(794, 86, 150, 570), nrow = 2): approve→approve 794, approve→disapprove 150,
    # disapprove→approve 86, disapprove→disapprove 570. R prints
    # "McNemar's chi-squared = 16.818, df = 1, p-value = 4.115e-05".
    a, b = _pairs(794, 150, 86, 570)
    res = mcnemar(a, b)
    assert (res.n10, res.n01, res.n_pairs) == (150, 86, 1600)
    assert res.statistic == pytest.approx(16.818, abs=5e-4)
    assert res.statistic == pytest.approx(63**2 / 236, rel=1e-14)
    assert res.pvalue_chi2 == pytest.approx(4.115e-05, abs=5e-9)
    assert res.method == "chi2" and res.pvalue == res.pvalue_chi2


@settings(max_examples=80, deadline=None)
@given(n01=st.integers(0, 60), n10=st.integers(0, 60), n11=st.integers(0, 5), n00=st.integers(0, 5))
def test_mcnemar_matches_statsmodels(n01, n10, n11, n00):
    a, b = _pairs(n11, n10, n01, n00)
    if a.size == 0:
        return
    res = mcnemar(a, b)
    table = [[n11, n10], [n01, n00]]
    assert (res.n01, res.n10) == (n01, n10)
    if n01 + n10 == 0:
        assert (
            math.isnan(res.statistic) and res.pvalue == res.pvalue_exact == res.pvalue_chi2 == 1.0
        )
        return
    approx = sm_mcnemar(table, exact=False, correction=True)
    exact = sm_mcnemar(table, exact=True)
    assert res.statistic == pytest.approx(approx.statistic, rel=1e-12)
    assert res.pvalue_chi2 == pytest.approx(approx.pvalue, rel=1e-9)
    assert res.pvalue_exact == pytest.approx(exact.pvalue, rel=1e-9)
    assert res.pvalue_exact == pytest.approx(stats.binomtest(n10, n01 + n10, 0.5).pvalue, rel=1e-9)
    assert res.pvalue == (res.pvalue_exact if n01 + n10 < 25 else res.pvalue_chi2)
    swapped = mcnemar(b, a)
    assert (swapped.n01, swapped.n10) == (n10, n01)
    assert swapped.pvalue == pytest.approx(res.pvalue, rel=1e-12)


def test_mcnemar_threshold_and_input_checks():
    a, b = _pairs(10, 9, 3, 10)
    assert mcnemar(a, b).method == "exact"
    assert mcnemar(a, b, exact_threshold=0).method == "chi2"
    assert mcnemar(a.astype(bool), b.astype(bool)) == mcnemar(a, b)
    with pytest.raises(ValueError, match="binary"):
        mcnemar([0.5, 1.0], [1.0, 1.0])
    with pytest.raises(ValueError):
        mcnemar([1, 0], [1])


# --- paired_bootstrap -------------------------------------------------------------------------


def _agrees_with_scipy(a, b):
    """Our paired bootstrap against scipy.stats.bootstrap (paired, percentile) on the same
    data: different random streams, so agreement within Monte Carlo error; and the SE
    against the analytic paired SE, sqrt((n−1)/n)·s_d/sqrt(n)."""
    ours = paired_bootstrap(a, b, n_resamples=20_000, seed=3)
    ref = stats.bootstrap(
        (a, b),
        lambda x, y, axis: np.mean(x - y, axis=axis),
        paired=True,
        vectorized=True,
        n_resamples=20_000,
        method="percentile",
        confidence_level=0.95,
        rng=np.random.default_rng(11),
    )
    assert ours.diff == pytest.approx(np.mean(a - b), abs=1e-15)
    assert ours.se == pytest.approx(ref.standard_error, rel=0.03)
    assert ours.ci_low == pytest.approx(ref.confidence_interval.low, abs=0.1 * ours.se)
    assert ours.ci_high == pytest.approx(ref.confidence_interval.high, abs=0.1 * ours.se)
    d = a - b
    assert ours.se == pytest.approx(np.std(d, ddof=0) / math.sqrt(d.size), rel=0.03)


def test_paired_bootstrap_matches_scipy():
    rng = np.random.default_rng(7)
    base = rng.random(40)
    a = np.clip(base + rng.normal(0, 0.15, 40), 0, 1)
    b = np.clip(base - 0.05 + rng.normal(0, 0.15, 40), 0, 1)
    _agrees_with_scipy(a, b)


def test_paired_bootstrap_is_reproducible_and_block_invariant(monkeypatch):
    rng = np.random.default_rng(0)
    a, b = rng.random(50), rng.random(50)
    one = paired_bootstrap(a, b, n_resamples=3000, seed=5)
    assert paired_bootstrap(a, b, n_resamples=3000, seed=5) == one
    assert paired_bootstrap(a, b, n_resamples=3000, seed=6) != one
    monkeypatch.setattr(paired_mod, "_BOOTSTRAP_BLOCK", 50 * 7)  # blocks of 7 resamples
    assert paired_bootstrap(a, b, n_resamples=3000, seed=5) == one
    assert (one.n_resamples, one.seed) == (3000, 5)


@settings(max_examples=40, deadline=None)
@given(a=task_means, data=st.data())
def test_paired_bootstrap_ci_contains_observed_diff(a, data):
    b = data.draw(st.lists(st.floats(0, 1), min_size=len(a), max_size=len(a)))
    res = paired_bootstrap(a, b, n_resamples=2000, seed=1)
    assert res.ci_low - 1e-12 <= res.diff <= res.ci_high + 1e-12
    swapped = paired_bootstrap(b, a, n_resamples=2000, seed=1)
    assert swapped.ci_low == pytest.approx(-res.ci_high, abs=1e-12)
    assert swapped.se == pytest.approx(res.se, abs=1e-12)


def _binary_task_means(rng, n_tasks, n_trials, shift=0.05):
    """Task means of two agents on binary trials: few distinct paired differences."""
    p = rng.beta(0.8, 0.8, n_tasks)
    a = rng.binomial(n_trials, p) / n_trials
    b = rng.binomial(n_trials, np.clip(p + shift, 0, 1)) / n_trials
    return a, b


def test_paired_bootstrap_counts_of_values_match_scipy():
    # Binary trials, 10 a task: d takes at most 21 values, so the counts of the distinct
    # values are drawn (Multinomial), not task indices; scipy resamples task indices.
    rng = np.random.default_rng(12)
    a, b = _binary_task_means(rng, 400, 10)
    assert np.unique(a - b).size * paired_mod._MULTINOMIAL_RATIO <= a.size
    _agrees_with_scipy(a, b)


def test_paired_bootstrap_draws_counts_of_values_as_documented():
    # The documented scheme for few distinct differences, written out: n_resamples rows of
    # Multinomial(n; m_k / n) counts of the sorted distinct values v_k, mean = C · v / n.
    a = np.repeat([1.0, 0.5, 0.0, 1.0], 10)
    b = np.repeat([0.5, 0.5, 0.5, 0.0], 10)
    res = paired_bootstrap(a, b, n_resamples=7, seed=4, confidence=0.5)
    values, m = np.unique(a - b, return_counts=True)
    counts = np.random.default_rng(4).multinomial(40, m / 40, size=7)
    boot = (counts * values).sum(axis=1) / 40
    assert res.se == pytest.approx(np.std(boot, ddof=1), rel=1e-12)
    assert res.ci_low == pytest.approx(np.percentile(boot, 25), rel=1e-12)
    assert res.ci_high == pytest.approx(np.percentile(boot, 75), rel=1e-12)


def test_paired_bootstrap_counts_and_indices_agree(monkeypatch):
    # The two ways of drawing (counts of values, task indices) give the same bootstrap
    # distribution: on the same data their CIs agree within Monte Carlo error, and the
    # counts are block invariant as the indices are.
    a, b = _binary_task_means(np.random.default_rng(5), 2000, 10)
    counts = paired_bootstrap(a, b, n_resamples=20_000, seed=1)
    monkeypatch.setattr(paired_mod, "_BOOTSTRAP_BLOCK", 21 * 13)
    assert paired_bootstrap(a, b, n_resamples=20_000, seed=1) == counts
    monkeypatch.setattr(paired_mod, "_MULTINOMIAL_RATIO", 10**9)  # task indices
    indices = paired_bootstrap(a, b, n_resamples=20_000, seed=1)
    assert indices != counts
    assert counts.se == pytest.approx(indices.se, rel=0.03)
    assert counts.ci_low == pytest.approx(indices.ci_low, abs=0.1 * counts.se)
    assert counts.ci_high == pytest.approx(indices.ci_high, abs=0.1 * counts.se)


@settings(max_examples=40, deadline=None)
@given(
    n_trials=st.integers(1, 4),
    levels=st.lists(st.integers(0, 4), min_size=16, max_size=120),
    data=st.data(),
)
def test_paired_bootstrap_counts_ci_contains_observed_diff(n_trials, levels, data):
    a = np.minimum(np.array(levels), n_trials) / n_trials
    b = (
        np.array(data.draw(st.lists(st.integers(0, n_trials), min_size=a.size, max_size=a.size)))
        / n_trials
    )
    res = paired_bootstrap(a, b, n_resamples=2000, seed=1)
    assert res.ci_low - 1e-12 <= res.diff <= res.ci_high + 1e-12
    assert a.min() - b.max() - 1e-12 <= res.ci_low <= res.ci_high <= a.max() - b.min() + 1e-12
    swapped = paired_bootstrap(b, a, n_resamples=2000, seed=1)
    assert swapped.se == pytest.approx(res.se, rel=0.2)


def test_paired_bootstrap_input_checks():
    with pytest.raises(ValueError):
        paired_bootstrap([0.1, 0.2], [0.1])
    with pytest.raises(ValueError):
        paired_bootstrap([], [])
    with pytest.raises(ValueError):
        paired_bootstrap([0.1], [0.2], n_resamples=1)
    with pytest.raises(ValueError):
        paired_bootstrap([0.1], [0.2], seed=-1)


# --- holm -------------------------------------------------------------------------------------


def test_holm_matches_statsmodels():
    # a fixed handful of vectors (ties, zeros, ones included) rather than a hypothesis search
    rng = np.random.default_rng(8)
    cases = [rng.random(m) ** 3 for m in (1, 2, 5, 17, 40)]
    cases += [np.array([0.01, 0.01, 0.2, 0.2, 1.0, 0.0]), np.array([0.04, 0.02, 0.03])]
    for p in cases:
        np.testing.assert_allclose(holm(p), statsmodels_holm(p), rtol=1e-12)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(0, 1), min_size=1, max_size=30))
def test_holm_is_bounded_and_monotone(p):
    p = np.array(p)
    adj = holm(p)
    assert np.all(adj >= p) and np.all(adj <= 1)
    # Step-down by hand: the smallest p is multiplied by m, and with one test nothing changes.
    assert adj.min() == min(1.0, p.min() * p.size)
    order = np.argsort(p, kind="stable")
    assert np.all(np.diff(adj[order]) >= 0)


def test_holm_nan_and_shape():
    p = np.array([[0.01, np.nan], [0.04, 0.03]])
    adj = holm(p)
    assert adj.shape == (2, 2) and np.isnan(adj[0, 1])
    np.testing.assert_allclose(adj[~np.isnan(p)], statsmodels_holm([0.01, 0.04, 0.03]))
    with pytest.raises(ValueError):
        holm([0.5, 1.5])


def test_one_implementation_of_mcnemar_exact_holm_and_bh():
    # McNemar's exact p and the multiplicity adjustments live in stats.paired; the
    # attribution package re-exports the same objects.
    import evalnoise.attribution as attribution
    import evalnoise.attribution._exact_tests as common
    import evalnoise.stats as stats_pkg

    for name in ("benjamini_hochberg", "mcnemar_exact_p"):
        fn = getattr(paired_mod, name)
        assert getattr(stats_pkg, name) is fn
        assert getattr(attribution, name) is fn and getattr(common, name) is fn
    rng = np.random.default_rng(3)
    a, b = (rng.random((2, 60)) < 0.5).astype(float)
    res = mcnemar(a, b)
    assert res.pvalue_exact == float(paired_mod.mcnemar_exact_p(res.n01, res.n10))
    p = np.array([0.01, np.nan, 0.04, 0.03])
    assert np.isnan(paired_mod.benjamini_hochberg(p)[1]) and np.isnan(holm(p)[1])


# --- compare ----------------------------------------------------------------------------------

CLI_KEYS = {
    "a", "b", "n_tasks", "n_dropped_a", "n_dropped_b", "mean_a", "mean_b", "diff",
    "se_paired", "ci_low", "ci_high", "pvalue", "mcnemar", "bootstrap", "mdd",
    "power_analysis", "sigma2_between", "sigma2_within", "confidence", "warnings",
}  # fmt: skip


def _two_agents(seed=0, n_tasks=40, n_trials=4):
    rng = np.random.default_rng(seed)
    p = rng.beta(0.8, 0.8, n_tasks)
    a = _long_table(rng, n_tasks, n_trials, p)
    b = _long_table(rng, n_tasks, n_trials, np.clip(p - 0.1, 0, 1))
    return a, b


def test_compare_bundles_the_pieces():
    (ta, ra, ya), (tb, rb, yb) = _two_agents()
    res = compare(ta, ra, ya, tb, rb, yb, names=("gpt", "claude"), n_resamples=4000, seed=9)
    rec = res.to_dict()
    assert set(rec) == CLI_KEYS
    assert rec["mcnemar"] == res.mcnemar.to_dict()
    assert set(rec["mcnemar"]) == {
        "n01", "n10", "n_pairs", "statistic", "pvalue_chi2", "pvalue_exact", "pvalue", "method"
    }  # fmt: skip
    assert set(rec["bootstrap"]) == {
        "diff", "ci_low", "ci_high", "se", "n_resamples", "seed", "confidence"
    }  # fmt: skip
    assert (rec["a"], rec["b"], rec["bootstrap"]["seed"]) == ("gpt", "claude", 9)

    pdiff = paired_difference(ya, ta, yb, tb)
    assert rec["diff"] == pdiff.diff == pytest.approx(rec["mean_a"] - rec["mean_b"])
    assert (rec["se_paired"], rec["pvalue"]) == (pdiff.se, pdiff.pvalue)
    assert res.bootstrap == paired_bootstrap(
        pdiff.task_means_a, pdiff.task_means_b, n_resamples=4000, seed=9
    )
    assert res.mcnemar == mcnemar(ya, yb)  # same (task, trial) order in both tables
    assert res.warnings == ()


def test_compare_mdd_uses_pooled_anova_components():
    (ta, ra, ya), (tb, rb, yb) = _two_agents(seed=3, n_tasks=30, n_trials=6)
    res = compare(ta, ra, ya, tb, rb, yb, n_resamples=500)
    # Balanced design, written out independently: MSW = mean of per-task variances (paper
    # eq. 15), MSB = T · var(task means), σ²_b = (MSB − MSW)/T.
    comps = []
    for t, y in ((ta, ya), (tb, yb)):
        g = pd.Series(y).groupby(t)
        comps.append((g.var(ddof=1).mean(), 6 * g.mean().var(ddof=1)))
    msw = np.mean([c[0] for c in comps])
    s2b = max(0.0, np.mean([(c[1] - msw) / 6 for c in comps]))
    assert res.sigma2_within == pytest.approx(msw, rel=1e-12)
    assert res.sigma2_between == pytest.approx(s2b, rel=1e-12)
    ma = pd.Series(ya).groupby(ta).mean().to_numpy()
    mb = pd.Series(yb).groupby(tb).mean().to_numpy()
    r = np.corrcoef(ma, mb)[0, 1]
    expected = minimum_detectable_difference(30, 6, s2b, msw, paired_correlation=r).mdd
    assert res.mdd == pytest.approx(expected, rel=1e-12)
    assert res.power_analysis.paired_correlation == pytest.approx(r, rel=1e-12)


def test_compare_aligns_trials_for_mcnemar():
    # A: tasks 0..9 × trials 0..3; B: tasks 2..11 × trials 1..4, rows shuffled.
    rng = np.random.default_rng(5)
    ta, ra = np.repeat(np.arange(10), 4), np.tile(np.arange(4), 10)
    tb, rb = np.repeat(np.arange(2, 12), 4), np.tile(np.arange(1, 5), 10)
    ya = rng.integers(0, 2, ta.size).astype(float)
    yb = rng.integers(0, 2, tb.size).astype(float)
    order = rng.permutation(tb.size)
    res = compare(ta, ra, ya, tb[order], rb[order], yb[order], n_resamples=200)
    assert (res.n_tasks, res.n_dropped_a, res.n_dropped_b) == (8, 2, 2)
    assert res.mcnemar.n_pairs == 8 * 3
    sa = pd.Series(ya, index=pd.MultiIndex.from_arrays([ta, ra]))
    sb = pd.Series(yb, index=pd.MultiIndex.from_arrays([tb, rb]))
    common = sa.index.intersection(sb.index)
    a, b = sa.loc[common].to_numpy(), sb.loc[common].to_numpy()
    assert res.mcnemar.n01 == int(np.sum((a == 0) & (b == 1)))
    assert res.mcnemar.n10 == int(np.sum((a == 1) & (b == 0)))
    # Trial labels may be strings, as the table reader produces.
    as_str = compare(ta, ra.astype(str), ya, tb, rb.astype(str), yb, n_resamples=200)
    assert as_str.mcnemar == mcnemar(a, b)


def test_compare_non_binary_scores_skip_mcnemar_with_warning():
    (ta, ra, ya), (tb, rb, yb) = _two_agents(n_tasks=10)
    yb = yb * 0.5
    with pytest.warns(RuntimeWarning, match="not binary"):
        res = compare(ta, ra, ya, tb, rb, yb, n_resamples=200)
    assert res.mcnemar is None
    assert res.to_dict()["mcnemar"] is None
    assert math.isfinite(res.diff) and math.isfinite(res.mdd)


def test_compare_swap_and_errors():
    (ta, ra, ya), (tb, rb, yb) = _two_agents(seed=2, n_tasks=25)
    ab = compare(ta, ra, ya, tb, rb, yb, n_resamples=1000)
    ba = compare(tb, rb, yb, ta, ra, ya, n_resamples=1000)
    assert ba.diff == pytest.approx(-ab.diff, abs=1e-15)
    assert (ba.mcnemar.n01, ba.mcnemar.n10) == (ab.mcnemar.n10, ab.mcnemar.n01)
    assert ba.bootstrap.ci_low == pytest.approx(-ab.bootstrap.ci_high, abs=1e-12)
    assert ba.mdd == pytest.approx(ab.mdd, rel=1e-12)
    with pytest.raises(ValueError, match="more than once"):
        compare(np.r_[ta, ta[:1]], np.r_[ra, ra[:1]], np.r_[ya, ya[:1]], tb, rb, yb)
    with pytest.raises(ValueError):
        compare(ta, ra[:-1], ya, tb, rb, yb)


def test_compare_single_trial_per_task_still_gives_mdd():
    rng = np.random.default_rng(4)
    t = np.arange(60)
    ya = rng.integers(0, 2, 60).astype(float)
    yb = rng.integers(0, 2, 60).astype(float)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = compare(t, np.zeros(60), ya, t, np.zeros(60), yb, n_resamples=200)
    # With T = 1, Var(μ̂) = var(task scores)/n whatever the split into σ²_b and σ²_w.
    r = np.corrcoef(ya, yb)[0, 1]
    pooled = np.mean([ya.var(ddof=1), yb.var(ddof=1)])
    expected = minimum_detectable_difference(60, 1, pooled, 0.0, paired_correlation=r).mdd
    assert res.mdd == pytest.approx(expected, rel=1e-12)


def test_mcnemar_switches_to_chi2_at_the_threshold():
    below = mcnemar(*_pairs(5, 14, 10, 5))  # 24 discordant pairs
    at = mcnemar(*_pairs(5, 15, 10, 5))  # 25
    assert (below.method, below.pvalue) == ("exact", below.pvalue_exact)
    assert (at.method, at.pvalue) == ("chi2", at.pvalue_chi2)


def test_paired_bootstrap_resamples_tasks_as_documented():
    # The documented scheme, written out: n_resamples rows of n task indices drawn uniformly
    # with replacement from default_rng(seed); SE with ddof = 1; linear-interpolation quantiles.
    a = np.array([0.9, 0.1, 0.5, 0.7, 0.3])
    b = np.array([0.2, 0.4, 0.5, 0.1, 0.3])
    res = paired_bootstrap(a, b, n_resamples=6, seed=4, confidence=0.5)
    idx = np.random.default_rng(4).integers(0, 5, size=(6, 5))
    boot = (a - b)[idx].mean(axis=1)
    assert res.se == pytest.approx(np.std(boot, ddof=1), rel=1e-12)
    assert res.ci_low == pytest.approx(np.percentile(boot, 25), rel=1e-12)
    assert res.ci_high == pytest.approx(np.percentile(boot, 75), rel=1e-12)


def test_compare_mdd_unbalanced_trials():
    import statsmodels.formula.api as smf
    from statsmodels.stats.anova import anova_lm

    rng = np.random.default_rng(12)
    n_tasks = 25
    p = rng.beta(1, 1, n_tasks)
    tables = []
    for shift in (0.0, 0.1):
        counts = rng.integers(2, 9, n_tasks)
        t = np.repeat(np.arange(n_tasks), counts)
        y = (rng.random(t.size) < np.clip(p[t] - shift, 0, 1)).astype(float)
        tables.append((t, np.concatenate([np.arange(c) for c in counts]), y, counts))
    (ta, ra, ya, ca), (tb, rb, yb, cb) = tables
    res = compare(ta, ra, ya, tb, rb, yb, n_resamples=200)

    # One-way ANOVA of each agent by statsmodels; n0 = (N − ΣT_i²/N)/(k − 1).
    parts = []
    for t, y, c in ((ta, ya, ca), (tb, yb, cb)):
        table = anova_lm(smf.ols("y ~ C(t)", data=pd.DataFrame({"y": y, "t": t})).fit())
        big_n = c.sum()
        n0 = (big_n - np.sum(c**2) / big_n) / (n_tasks - 1)
        parts.append((table.loc["Residual", "sum_sq"], table.loc["Residual", "df"],
                      table.loc["C(t)", "mean_sq"], n0))  # fmt: skip
    msw = sum(q[0] for q in parts) / sum(q[1] for q in parts)
    s2b = max(0.0, np.mean([(q[2] - msw) / q[3] for q in parts]))
    assert res.sigma2_within == pytest.approx(msw, rel=1e-10)
    assert res.sigma2_between == pytest.approx(s2b, rel=1e-10)
    # Var of a mean of task means, σ²_b/n + σ²_w Σ(1/T_i)/n², averaged over the two agents.
    var = np.mean([s2b / n_tasks + msw * np.sum(1 / c) / n_tasks**2 for c in (ca, cb)])
    assert res.power_analysis.variance == pytest.approx(var, rel=1e-12)
