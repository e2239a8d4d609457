"""Building blocks: BH, exact McNemar, Fisher (one-sided, 2×r), time blocks, outcomes."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
import scipy
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar
from statsmodels.stats.multitest import multipletests

from evalnoise.attribution import (
    benjamini_hochberg,
    fisher_exact_2xr,
    mcnemar_exact_p,
    time_blocks,
)
from evalnoise.attribution._exact_tests import fisher_greater
from evalnoise.attribution._trial_frame import binary_outcome, score_values

pvalues = st.lists(st.floats(0, 1), min_size=1, max_size=40)


@settings(max_examples=80, deadline=None)
@given(p=pvalues)
def test_benjamini_hochberg_matches_statsmodels(p):
    ours = benjamini_hochberg(p)
    ref = multipletests(p, method="fdr_bh")[1]
    np.testing.assert_allclose(ours, ref, rtol=1e-12, atol=1e-15)
    assert (ours >= np.asarray(p) - 1e-15).all()


def test_benjamini_hochberg_nan_and_checks():
    out = benjamini_hochberg([0.01, np.nan, 0.04, 0.03])
    assert np.isnan(out[1])
    np.testing.assert_allclose(
        out[[0, 2, 3]], multipletests([0.01, 0.04, 0.03], method="fdr_bh")[1]
    )
    assert benjamini_hochberg([]).size == 0
    with pytest.raises(ValueError):
        benjamini_hochberg([1.5])


@settings(max_examples=80, deadline=None)
@given(b=st.integers(0, 60), c=st.integers(0, 60), n11=st.integers(0, 5), n00=st.integers(0, 5))
def test_mcnemar_exact_matches_statsmodels_and_is_symmetric(b, c, n11, n00):
    p = float(mcnemar_exact_p(b, c))
    assert 0.0 <= p <= 1.0
    assert float(mcnemar_exact_p(c, b)) == p
    if b + c == 0:
        assert p == 1.0
        return
    ref = sm_mcnemar([[n11, b], [c, n00]], exact=True)
    assert p == pytest.approx(ref.pvalue, rel=1e-12)


def test_mcnemar_exact_vectorized():
    b, c = np.array([0, 3, 10, 7]), np.array([0, 1, 0, 7])
    out = mcnemar_exact_p(b, c)
    assert out.tolist() == [
        pytest.approx(float(mcnemar_exact_p(x, y))) for x, y in zip(b, c, strict=True)
    ]
    with pytest.raises(ValueError):
        mcnemar_exact_p(-1, 2)


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_fisher_greater_matches_scipy(data):
    n_total = data.draw(st.integers(2, 80))
    n = data.draw(st.integers(1, n_total - 1))
    x_total = data.draw(st.integers(0, n_total))
    x = data.draw(st.integers(max(0, x_total - (n_total - n)), min(n, x_total)))
    table = [[x, n - x], [x_total - x, n_total - n - x_total + x]]
    ref = stats.fisher_exact(table, alternative="greater").pvalue
    assert float(fisher_greater(x, n, x_total, n_total)) == pytest.approx(ref, rel=1e-9)


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_fisher_2x2_matches_scipy(data):
    n = data.draw(st.lists(st.integers(1, 25), min_size=2, max_size=2))
    s = [data.draw(st.integers(0, k)) for k in n]
    stat, p, method = fisher_exact_2xr(s, n)
    ref = stats.fisher_exact([[s[0], n[0] - s[0]], [s[1], n[1] - s[1]]]).pvalue
    assert method == "fisher_exact"
    assert p == pytest.approx(ref, rel=1e-9, abs=1e-12)
    assert 0.0 < stat <= 1.0


def _freeman_halton_brute(s, n):
    """Every 2×r table with the observed margins, enumerated the slow way."""
    s, n = np.asarray(s), np.asarray(n)
    total = s.sum()

    def prob(x):
        num = np.prod([scipy.special.comb(nk, xk) for nk, xk in zip(n, x, strict=True)])
        return num / scipy.special.comb(n.sum(), total)

    p_obs = prob(s)
    p = 0.0
    for x in itertools.product(*(range(k + 1) for k in n)):
        if sum(x) == total and prob(x) <= p_obs * (1 + 1e-7):
            p += prob(x)
    return p


@pytest.mark.parametrize(
    "s, n",
    [
        ([4, 4, 1, 0], [4, 4, 4, 4]),
        ([0, 5, 2], [5, 5, 5]),
        ([3, 1, 2, 2, 0], [3, 4, 2, 5, 3]),
        ([2, 2, 2], [4, 4, 4]),
    ],
)
def test_fisher_2xr_matches_brute_force_and_scipy(s, n):
    stat, p, method = fisher_exact_2xr(s, n)
    assert method == "fisher_exact"
    assert p == pytest.approx(_freeman_halton_brute(s, n), rel=1e-9)
    if not hasattr(stats, "MonteCarloMethod"):
        return
    # scipy >= 1.15: the same test for r×c tables, its p by Monte Carlo (SE ≤ 0.0016 here)
    table = np.array([s, np.subtract(n, s)])
    ref = stats.fisher_exact(table, method=stats.MonteCarloMethod(n_resamples=99_999, rng=0))
    assert stat == pytest.approx(ref.statistic, rel=1e-9)
    assert p == pytest.approx(ref.pvalue, abs=0.006)


def test_fisher_2xr_monte_carlo_fallback_and_edges():
    s, n = [15, 12, 6, 2], [20, 20, 20, 20]
    _, exact, m1 = fisher_exact_2xr(s, n)
    _, approx, m2 = fisher_exact_2xr(s, n, max_tables=10, n_resamples=20_000, seed=1)
    assert (m1, m2) == ("fisher_exact", "fisher_monte_carlo")
    assert approx == pytest.approx(exact, abs=5e-4)  # both tiny
    _, again, _ = fisher_exact_2xr(s, n, max_tables=10, n_resamples=2000, seed=1)
    assert again == fisher_exact_2xr(s, n, max_tables=10, n_resamples=2000, seed=1)[1]
    assert fisher_exact_2xr([0, 0, 0], [3, 4, 5])[1] == 1.0  # constant outcome
    assert fisher_exact_2xr([2, 0], [3, 0])[1] == 1.0  # one group with trials
    with pytest.raises(ValueError):
        fisher_exact_2xr([3], [2])


def test_time_blocks_equal_count_ties_and_missing():
    t = pd.Series(pd.date_range("2025-01-01", periods=12, freq="min", tz="UTC"))
    shuffled = t.sample(frac=1.0, random_state=0).reset_index(drop=True)
    blocks = time_blocks(shuffled, 4)
    assert np.bincount(blocks).tolist() == [3, 3, 3, 3]
    order = np.argsort(shuffled.to_numpy())
    assert (np.diff(blocks[order]) >= 0).all()  # block 0 is the start of the run
    tied = time_blocks([0.0, 0.0, 0.0, 5.0, 6.0, 7.0], 2)
    assert tied.tolist() == [0, 0, 0, 1, 1, 1]
    with_nat = time_blocks(pd.Series([t[0], pd.NaT, t[5]]), 2)
    assert with_nat.tolist() == [0, -1, 1]
    naive = time_blocks(pd.Series(t.dt.tz_localize(None)), 3)
    assert naive.tolist() == time_blocks(t, 3).tolist()
    with pytest.raises(ValueError):
        time_blocks(t, 0)


def test_outcomes_prefer_correct_then_score():
    frame = pd.DataFrame(
        {
            "score": [1.0, 0.0, np.nan, 0.7, np.nan],
            "correct": pd.array([True, None, False, None, None], dtype="boolean"),
        }
    )
    y = binary_outcome(frame)
    assert y[:4].tolist() == [1.0, 0.0, 0.0, 1.0] and np.isnan(y[4])
    s = score_values(frame)
    assert s[:4].tolist() == [1.0, 0.0, 0.0, 0.7] and np.isnan(s[4])
