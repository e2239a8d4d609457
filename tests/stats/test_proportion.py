"""wilson_interval(): against statsmodels, on an effective sample size, vectorized."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from evalnoise.stats import ProportionInterval, wilson_interval
from evalnoise.stats._results import plain
from evalnoise.stats.proportion import wilson_or_nan


@pytest.mark.parametrize("k,n", [(0, 5), (1, 5), (3, 5), (5, 5), (17, 64), (64, 64), (1, 1)])
@pytest.mark.parametrize("confidence", [0.9, 0.95, 0.99])
def test_matches_statsmodels(k, n, confidence):
    low, high = wilson_interval(k / n, n, confidence)
    ref_low, ref_high = proportion_confint(k, n, alpha=1 - confidence, method="wilson")
    assert float(low) == pytest.approx(ref_low, abs=1e-12)
    assert float(high) == pytest.approx(ref_high, abs=1e-12)


def test_effective_sample_size_is_n_over_design_effect():
    # 200 trials with design effect 4 carry the information of 50 independent ones.
    low, high = wilson_interval(0.3, 200, design_effect=4.0)
    ref_low, ref_high = proportion_confint(15, 50, alpha=0.05, method="wilson")
    assert (float(low), float(high)) == pytest.approx((ref_low, ref_high), abs=1e-12)
    assert tuple(wilson_interval(0.3, 50.0)) == (low, high)


def test_fractional_effective_n_by_hand():
    p, n_eff = 0.25, 7.3
    z = stats.norm.ppf(0.975)
    center = (p + z**2 / (2 * n_eff)) / (1 + z**2 / n_eff)
    half = z * np.sqrt(p * (1 - p) / n_eff + z**2 / (4 * n_eff**2)) / (1 + z**2 / n_eff)
    low, high = wilson_interval(p, n_eff)
    assert (float(low), float(high)) == pytest.approx((center - half, center + half), rel=1e-12)


def test_vectorized_and_named():
    p = np.array([0.0, 0.2, 1.0])
    res = wilson_interval(p, np.array([3, 10, 3]), design_effect=np.array([1.0, 2.0, 1.0]))
    assert isinstance(res, ProportionInterval)
    assert res.low.shape == res.high.shape == (3,)
    assert np.all((res.low >= 0) & (res.low <= p) & (p <= res.high) & (res.high <= 1))
    assert res.low[0] == 0.0 and res.high[2] == 1.0
    assert res.high[0] > 0 and res.low[2] < 1
    assert float(res.high[1]) == pytest.approx(float(wilson_interval(0.2, 5).high), rel=1e-12)


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"mean": 0.5, "n": 0}, "n must be"),
        ({"mean": 0.5, "n": np.nan}, "n must be"),
        ({"mean": 1.5, "n": 3}, "mean must lie"),
        ({"mean": np.nan, "n": 3}, "mean must lie"),
        ({"mean": 0.5, "n": 3, "confidence": 1.0}, "confidence"),
        ({"mean": 0.5, "n": 3, "design_effect": 0.0}, "design_effect"),
    ],
)
def test_rejects_bad_input(kwargs, message):
    with pytest.raises(ValueError, match=message):
        wilson_interval(**kwargs)


@settings(max_examples=200, deadline=None)
@given(
    st.floats(0.0, 1.0),
    st.floats(0.5, 1e4),
    st.floats(1.0, 20.0),
    st.sampled_from([0.8, 0.95, 0.99]),
)
def test_contains_the_estimate_and_has_positive_width(p, n, deff, confidence):
    low, high = wilson_interval(p, n, confidence, design_effect=deff)
    assert 0.0 <= low <= p <= high <= 1.0
    assert low < high


def test_shared_result_helpers():
    # In-memory records (stats._results.plain: NaN stays NaN; to_dict() is jsonable's, see
    # test_result_vocabulary.py); one "Wilson or NaN".
    value = {"a": (np.float64(0.5), np.int64(2)), "b": np.array([[1, 2]]), "c": pd.NA}
    assert plain(value) == {"a": [0.5, 2], "b": [[1, 2]], "c": None}
    assert np.isnan(plain(np.float32("nan")))
    assert all(np.isnan(v) for v in wilson_or_nan(float("nan"), 0, 0.95))
    low, high = wilson_interval(0.3, 40)
    assert wilson_or_nan(0.3, 40, 0.95, float("nan")) == (float(low), float(high))
    assert wilson_or_nan(0.3, 40, 0.95, 0.5) == (float(low), float(high))  # floored at 1
    low2, high2 = wilson_interval(0.3, 40, design_effect=2.0)
    assert wilson_or_nan(0.3, 40, 0.95, 2.0) == (float(low2), float(high2))
