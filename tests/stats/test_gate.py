"""The regression gate's decisions and the design whose MDD reaches the margin, checked
against the minimum detectable difference itself."""

from __future__ import annotations

import math

import pytest

from evalnoise.stats import minimum_detectable_difference
from evalnoise.stats.gate import design_for_margin, regression_gate


@pytest.mark.parametrize(
    ("lo", "hi", "decision", "within"),
    [
        (-0.03, 0.08, "non_inferior", True),  # lower bound above −0.05
        (-0.20, -0.01, "regression", False),  # whole interval below 0
        (-0.04, -0.01, "regression", True),  # a regression smaller than the margin
        (-0.09, 0.06, "inconclusive", False),  # neither
        (-0.05, 0.02, "inconclusive", False),  # the bound must lie strictly above −M
        (float("nan"), float("nan"), "inconclusive", False),  # no interval
    ],
)
def test_gate_decisions_by_hand(lo, hi, decision, within):
    g = regression_gate(0.0, lo, hi, 0.05)
    assert g.decision == decision and g.within_margin is within


def test_gate_refuses_a_negative_margin():
    with pytest.raises(ValueError, match="margin"):
        regression_gate(0.0, -0.1, 0.1, -0.01)


@pytest.mark.parametrize(
    ("n", "t", "s2b", "s2w", "r", "margin"),
    [(40, 4, 0.06, 0.12, 0.5, 0.05), (9, 4, 0.1, 0.15, 0.0, 0.1), (100, 2, 0.0, 0.2, 0.3, 0.03)],
)
def test_design_reaches_the_margin_and_no_fewer_would(n, t, s2b, s2w, r, margin):
    d = design_for_margin(margin, n, t, s2b, s2w, paired_correlation=r)

    def mdd(nn, tt):
        return minimum_detectable_difference(nn, tt, s2b, s2w, paired_correlation=r).mdd

    assert mdd(d.tasks_needed, t) <= margin + 1e-12
    if d.more_tasks > 0:
        assert mdd(d.tasks_needed - 1, t) > margin
    if d.trials_needed is None:
        # even infinitely many trials leave σ²_b/n above what the margin allows
        assert mdd(n, 1e12) > margin
    else:
        assert mdd(n, d.trials_needed) <= margin + 1e-12
        if d.more_trials > 0:
            assert mdd(n, d.trials_needed - 1) > margin
    assert d.more_tasks == d.tasks_needed - n


def test_a_design_already_past_the_margin_needs_nothing_more():
    d = design_for_margin(0.5, 200, 8, 0.01, 0.05)
    assert d.more_tasks == 0 and d.more_trials == 0 and d.tasks_needed == 200
    assert math.isclose(d.trials, 8)
