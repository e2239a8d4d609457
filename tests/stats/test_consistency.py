"""Outcome consistency C_out = (2p̂ − 1)², by hand and by exact expectation."""

from __future__ import annotations

from math import comb

import numpy as np
import pytest

from evalnoise.stats.outcome_consistency import outcome_consistency


def test_c_out_by_hand():
    # task a: 4 of 4 right (C 1); b: 2 of 4 (C 0); c: 3 of 4 (p 0.75, C 0.25)
    scores = [1, 1, 1, 1, 1, 0, 1, 0, 1, 1, 1, 0]
    tasks = ["a"] * 4 + ["b"] * 4 + ["c"] * 4
    res = outcome_consistency(scores, tasks)
    np.testing.assert_allclose(res.c_out, [1.0, 0.0, 0.25])
    assert res.statistic == pytest.approx(1.25 / 3)
    # unbiased: minus 4 p(1 − p)/(n − 1): a 1 − 0, b 0 − 1/3, c 0.25 − 0.25
    np.testing.assert_allclose(res.c_out_unbiased, [1.0, -1 / 3, 0.0], atol=1e-15)
    assert res.mean_unbiased == pytest.approx(2 / 9)
    se = np.std([1.0, 0.0, 0.25], ddof=1) / np.sqrt(3)
    assert res.se == pytest.approx(se)
    assert res.ci_low == pytest.approx(max(0.0, 1.25 / 3 - 1.959963984540054 * se))
    assert res.ci_high == min(1.0, 1.25 / 3 + 1.959963984540054 * se) == 1.0  # truncated
    assert res.n_trials.tolist() == [4, 4, 4] and res.n_tasks == 3


@pytest.mark.parametrize(("n", "p"), [(2, 0.5), (4, 0.3), (5, 0.9), (8, 0.62)])
def test_the_unbiased_value_is_unbiased_and_the_plug_in_is_not(n, p):
    # exact expectations over Binomial(n, p) outcomes of one task
    weights = np.array([comb(n, c) * p**c * (1 - p) ** (n - c) for c in range(n + 1)])
    plug, unbiased = [], []
    for c in range(n + 1):
        res = outcome_consistency([1.0] * c + [0.0] * (n - c), np.zeros(n))
        plug.append(res.c_out[0])
        unbiased.append(res.c_out_unbiased[0])
    truth = (2 * p - 1) ** 2
    assert weights @ np.array(unbiased) == pytest.approx(truth, abs=1e-12)
    assert weights @ np.array(plug) == pytest.approx(truth + 4 * p * (1 - p) / n, abs=1e-12)


def test_partial_credit_and_single_trials():
    res = outcome_consistency([0.5, 0.5, 1.0], ["a", "a", "b"])
    np.testing.assert_allclose(res.c_out, [0.0, 1.0])
    assert res.c_out_unbiased[0] == 0.0 and np.isnan(res.c_out_unbiased[1])
    assert np.isnan(res.mean_unbiased)
    with pytest.raises(ValueError):
        outcome_consistency([1.5], ["a"])
