"""The distribution functions from scipy.special agree with scipy.stats (that the statistics
no longer import scipy.stats is checked in tests/test_imports.py)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from evalnoise.attribution._trial_frame import run_seconds, time_blocks
from evalnoise.stats import _distributions as d

Q = np.array([1e-12, 1e-6, 0.001, 0.025, 0.05, 0.1, 0.3, 0.5, 0.7, 0.9, 0.95, 0.975, 0.999])
X = np.array([-40.0, -8.0, -2.5, -1.0, -0.1, 0.0, 0.1, 1.0, 1.96, 3.0, 8.0, 40.0])
DF = np.array([1.0, 2.0, 3.5, 9.0, 29.0, 99.0, 1e3, 1e5])


def _close(ours, theirs, rtol=1e-12, what=""):
    np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=1e-300, equal_nan=True, err_msg=what)


def test_normal():
    _close(d.norm_ppf(Q), stats.norm.ppf(Q))
    _close(d.norm_sf(X), stats.norm.sf(X))


def test_student_t():
    q, df = np.meshgrid(Q, DF)
    _close(d.t_ppf(q, df), stats.t.ppf(q, df))
    x, df = np.meshgrid(X, DF)
    _close(d.t_sf(x, df), stats.t.sf(x, df))


def test_f():
    q, n1, n2 = np.meshgrid(Q, DF, DF[:-1])
    _close(d.f_ppf(q, n1, n2), stats.f.ppf(q, n1, n2), rtol=1e-9)
    x, n1, n2 = np.meshgrid(np.abs(X), DF, DF[:-1])
    _close(d.f_sf(x, n1, n2), stats.f.sf(x, n1, n2), rtol=1e-9)


def test_chi2():
    q, df = np.meshgrid(Q, DF)
    _close(d.chi2_ppf(q, df), stats.chi2.ppf(q, df))
    x, df = np.meshgrid(np.abs(X), DF)
    _close(d.chi2_sf(x, df), stats.chi2.sf(x, df))


def test_binomial_cdf():
    n = np.arange(0, 200)
    k = np.minimum(np.arange(0, 200) // 3, n)
    for p in (0.5, 0.01, 0.9):
        _close(d.binom_cdf(k, n, p), stats.binom.cdf(k, n, p), rtol=1e-10)
    assert d.binom_cdf(2.7, 5, 0.5) == pytest.approx(stats.binom.cdf(2, 5, 0.5), rel=1e-12)


EDGE_Q = [-0.5, 0.0, 1.0, 1.5, np.nan, 0.5]
EDGE_X = [-np.inf, -3.0, -0.0, 0.0, 2.0, np.inf, np.nan]
EDGE_DF = [-1.0, 0.0, 0.5, 4.0, np.inf, np.nan]


@pytest.mark.parametrize("df", EDGE_DF)
def test_the_edges_follow_scipy_stats(df):
    """Support ends, arguments out of range and invalid degrees of freedom: the boundary
    rules of rv_continuous, which the special functions alone do not all follow."""
    with np.errstate(all="ignore"):
        cases = {
            "norm.ppf": (d.norm_ppf(EDGE_Q), stats.norm.ppf(EDGE_Q)),
            "norm.sf": (d.norm_sf(EDGE_X), stats.norm.sf(EDGE_X)),
            "t.ppf": (d.t_ppf(EDGE_Q, df), stats.t.ppf(EDGE_Q, df)),
            "t.sf": (d.t_sf(EDGE_X, df), stats.t.sf(EDGE_X, df)),
            "chi2.ppf": (d.chi2_ppf(EDGE_Q, df), stats.chi2.ppf(EDGE_Q, df)),
            "chi2.sf": (d.chi2_sf(EDGE_X, df), stats.chi2.sf(EDGE_X, df)),
            "f.ppf": (d.f_ppf(EDGE_Q, df, 3.0), stats.f.ppf(EDGE_Q, df, 3.0)),
            "f.sf": (d.f_sf(EDGE_X, 3.0, df), stats.f.sf(EDGE_X, 3.0, df)),
        }
    for what, (ours, theirs) in cases.items():
        _close(ours, theirs, rtol=1e-9, what=what)
    k = [-1, 0, 3, 10, 11, np.nan]
    for n, p in [(10, 0.3), (10, 0.0), (10, 1.0), (10, 1.2), (-1, 0.5), (2.5, 0.5), (0, 0.5)]:
        with np.errstate(all="ignore"):
            _close(d.binom_cdf(k, n, p), stats.binom.cdf(k, n, p), 1e-10, f"binom n={n} p={p}")


def test_scalars_in_scalars_out():
    assert np.ndim(d.norm_ppf(0.975)) == 0 and np.ndim(d.t_sf(1.0, 3)) == 0
    assert d.norm_ppf(0.975) == pytest.approx(1.959963984540054, rel=1e-15)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.one_of(st.integers(0, 20).map(float), st.floats(0, 1e6, allow_nan=False)),
        min_size=1,
        max_size=60,
    ),
    st.integers(1, 9),
)
def test_time_blocks_rank_ties_as_scipy_rankdata_min(starts, n_blocks):
    t = np.asarray(starts)
    expected = ((stats.rankdata(run_seconds(t), method="min") - 1) * n_blocks) // t.size
    np.testing.assert_array_equal(time_blocks(t, n_blocks), expected)
