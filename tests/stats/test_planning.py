"""Budget allocation (paper eq. 9–10), Bonett's ICC sample size, minimum detectable difference."""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from statsmodels.stats.power import NormalIndPower

from evalnoise.stats.cost_allocation import (
    cost_allocation,
    optimal_trials_per_task,
    plan_from_pilot,
)
from evalnoise.stats.icc import icc_oneway
from evalnoise.stats.planning import (
    allocation_table,
    minimum_detectable_difference,
    tasks_for_icc_precision,
)

# --- allocation_table -------------------------------------------------------------------------


def _row(res, n_tasks, trials):
    hit = np.flatnonzero((res.n_tasks == n_tasks) & (res.trials == trials))
    assert hit.size == 1, (n_tasks, trials)
    return int(hit[0])


def test_paper_example_more_tasks_gives_68_percent_lower_se():
    # Paper, after eq. 10: B = 400, σ²_b/σ²_w ≈ 5, n = 100 × T = 4 vs n = 10 × T = 40.
    res = allocation_table(400, 5.0, 1.0)
    se_100 = res.se[_row(res, 100, 4)]
    se_10 = res.se[_row(res, 10, 40)]
    reduction = 1 - se_100 / se_10
    # By hand: Var = 5/100 + 1/400 = 0.0525 and 5/10 + 1/400 = 0.5025.
    assert reduction == pytest.approx(1 - math.sqrt(0.0525 / 0.5025), rel=1e-12)
    assert reduction == pytest.approx(0.676770, abs=1e-6)  # 67.7 %, the paper's "68 %"
    assert round(100 * reduction) == 68
    # Only the ratio σ²_b/σ²_w matters for the relative reduction.
    scaled = allocation_table(400, 0.05, 0.01)
    assert 1 - scaled.se[_row(scaled, 100, 4)] / scaled.se[_row(scaled, 10, 40)] == (
        pytest.approx(reduction, rel=1e-12)
    )


def test_divisor_pairs_and_eq9_variance():
    res = allocation_table(360, 0.2, 0.1)
    divisors = [d for d in range(1, 361) if 360 % d == 0]
    assert sorted(res.n_tasks.tolist()) == divisors
    assert np.all(res.n_tasks * res.trials == 360)
    assert np.all(res.trials_used == 360)
    assert np.all(np.diff(res.n_tasks) < 0)
    for n, t, v, s in zip(res.n_tasks, res.trials, res.variance, res.se, strict=True):
        assert v == pytest.approx(0.2 / n + 0.1 / (n * t), rel=1e-14)
        assert s == pytest.approx(math.sqrt(0.2 / n + 0.1 / (n * t)), rel=1e-14)
    assert (res.recommended.n_tasks, res.recommended.trials) == (360, 1)


def test_max_tasks_saturates_then_adds_trials():
    # 30 does not divide 400: the saturated allocation 30 × 13 is offered and wins.
    res = allocation_table(400, 5.0, 1.0, max_tasks=30)
    assert res.n_tasks.max() == 30
    assert (res.recommended.n_tasks, res.recommended.trials) == (30, 13)
    assert res.trials_used[_row(res, 30, 13)] == 390
    assert res.recommended.variance == pytest.approx(5 / 30 + 1 / 390)
    # All other rows still spend the whole budget exactly.
    others = res.n_tasks != 30
    assert np.all(res.n_tasks[others] * res.trials[others] == 400)


def test_within_variance_dominant_can_prefer_full_budget_over_saturation():
    # With σ²_b = 0 only n·T matters: 25 × 16 = 400 beats 30 × 13 = 390.
    res = allocation_table(400, 0.0, 1.0, max_tasks=30)
    assert (res.recommended.n_tasks, res.recommended.trials) == (25, 16)


def test_ties_prefer_more_tasks():
    res = allocation_table(64, 0.0, 1.0)
    assert np.all(res.variance == res.variance[0])
    assert res.recommended.n_tasks == 64


def test_trials_grid():
    res = allocation_table(400, 5.0, 1.0, trials_grid=[3, 1, 7, 1000, 7])
    assert res.trials.tolist() == [1, 3, 7]  # 1000 > B is dropped; duplicates collapse
    assert res.n_tasks.tolist() == [400, 133, 57]
    capped = allocation_table(400, 5.0, 1.0, trials_grid=[1, 3, 7], max_tasks=100)
    assert capped.n_tasks.tolist() == [100, 100, 57]
    assert (capped.recommended.n_tasks, capped.recommended.trials) == (100, 3)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"budget": 0},
        {"budget": 10.5},
        {"budget": True},
        {"sigma2_between": -1.0},
        {"sigma2_within": float("nan")},
        {"max_tasks": 0},
        {"trials_grid": []},
        {"trials_grid": [0, 2]},
        {"trials_grid": [1.5]},
        {"trials_grid": [500]},
    ],
)
def test_allocation_rejects_bad_input(kwargs):
    args = {"budget": 100, "sigma2_between": 1.0, "sigma2_within": 1.0, **kwargs}
    budget = args.pop("budget")
    with pytest.raises(ValueError):
        allocation_table(budget, args.pop("sigma2_between"), args.pop("sigma2_within"), **args)


@settings(max_examples=60, deadline=None)
@given(
    budget=st.integers(1, 5000),
    s2b=st.floats(0, 10),
    s2w=st.floats(0, 10),
    max_tasks=st.one_of(st.none(), st.integers(1, 6000)),
)
def test_recommended_is_the_minimum_variance_row(budget, s2b, s2w, max_tasks):
    res = allocation_table(budget, s2b, s2w, max_tasks=max_tasks)
    assert np.all(res.trials_used <= budget)
    if max_tasks is not None:
        assert np.all(res.n_tasks <= max_tasks)
    best = res.variance.min()
    assert res.recommended.variance == best
    assert res.recommended.n_tasks == res.n_tasks[res.variance == best].max()
    if s2b > 0 and (max_tasks is None or max_tasks >= budget):
        # Eq. 10: with the budget fixed, the most tasks wins.
        assert (res.recommended.n_tasks, res.recommended.trials) == (budget, 1)


# --- tasks_for_icc_precision ------------------------------------------------------------------


def _bonett_n(rho, k, w, conf=0.95):
    """Bonett (2002) written out independently, with the standard library's normal quantile."""
    z = NormalDist().inv_cdf(0.5 + conf / 2)
    return 8 * z * z * (1 - rho) ** 2 * (1 + (k - 1) * rho) ** 2 / (k * (k - 1) * w * w) + 1


def _bonett_se(rho, k, n):
    return math.sqrt(2 * (1 - rho) ** 2 * (1 + (k - 1) * rho) ** 2 / (k * (k - 1) * (n - 1)))


def test_bonett_published_values():
    # ρ = 0.7, k = 2, 95 % CI width 0.2: 101 tasks, the output of the R package ICC's
    # Nest(est.type = "hypothetical", w = 0.2, ICC = 0.7, k = 2), which implements Bonett 2002.
    assert tasks_for_icc_precision(0.7, 2, ci_width=0.2).n_tasks_needed == 101
    # ρ = 0.8, k = 2, width 0.2: 51, the worked example of an online calculator citing Bonett.
    assert tasks_for_icc_precision(0.8, 2, ci_width=0.2).n_tasks_needed == 51


@pytest.mark.parametrize("rho", [0.1, 0.3, 0.5, 0.7, 0.9])
@pytest.mark.parametrize("k", [2, 3, 5, 10, 64])
@pytest.mark.parametrize("w", [0.1, 0.2, 0.3])
def test_bonett_matches_independent_formula(rho, k, w):
    res = tasks_for_icc_precision(rho, k, ci_width=w)
    assert res.n_exact == pytest.approx(_bonett_n(rho, k, w), rel=1e-10)
    assert res.n_tasks_needed == max(2, math.ceil(_bonett_n(rho, k, w) - 1e-9))


@settings(max_examples=200, deadline=None)
@given(
    rho=st.floats(0, 0.99),
    k=st.integers(2, 64),
    se=st.floats(0.005, 0.3),
)
def test_se_target_round_trip(rho, k, se):
    n = tasks_for_icc_precision(rho, k, se=se).n_tasks_needed
    assert isinstance(n, int)
    assert n >= 2
    assert _bonett_se(rho, k, n) <= se * (1 + 1e-9)
    if n > 2:
        assert _bonett_se(rho, k, n - 1) > se * (1 - 1e-9)


def test_ci_width_and_se_targets_agree():
    z = NormalDist().inv_cdf(0.975)
    by_w = tasks_for_icc_precision(0.6, 8, ci_width=0.12)
    by_se = tasks_for_icc_precision(0.6, 8, se=0.12 / (2 * z))
    assert by_w.n_tasks_needed == by_se.n_tasks_needed
    assert by_w.se == pytest.approx(by_se.se, rel=1e-12)
    # The paper's guideline: SE(ICC) <= 0.03 is a 95 % CI of about ±0.06.
    guide = tasks_for_icc_precision(0.65, 16, se=0.03)
    assert guide.ci_width == pytest.approx(2 * z * 0.03, rel=1e-12)


def test_icc_precision_broadcasts_and_orders_sensibly():
    res = tasks_for_icc_precision(np.array([0.3, 0.5, 0.7]), np.array([[2], [8], [32]]), se=0.05)
    assert res.n_tasks_needed.shape == (3, 3)
    # More trials per task never needs more tasks.
    assert np.all(np.diff(res.n_tasks_needed, axis=0) <= 0)
    # A tighter target never needs fewer tasks.
    tight = tasks_for_icc_precision(0.5, 8, se=0.02).n_tasks_needed
    loose = tasks_for_icc_precision(0.5, 8, se=0.05).n_tasks_needed
    assert tight > loose


def test_icc_precision_edge_and_errors():
    assert tasks_for_icc_precision(1.0, 4, se=0.01).n_tasks_needed == 2
    with pytest.raises(ValueError):
        tasks_for_icc_precision(0.5, 4)
    with pytest.raises(ValueError):
        tasks_for_icc_precision(0.5, 4, ci_width=0.1, se=0.05)
    with pytest.raises(ValueError):
        tasks_for_icc_precision(0.5, 1, se=0.05)
    with pytest.raises(ValueError):
        tasks_for_icc_precision(1.2, 4, se=0.05)
    with pytest.raises(ValueError):
        tasks_for_icc_precision(0.5, 4, ci_width=0.0)
    with pytest.raises(ValueError):
        tasks_for_icc_precision(0.5, 4.0, se=0.05)


# --- minimum_detectable_difference ------------------------------------------------------------


@pytest.mark.parametrize("alpha,power", [(0.05, 0.8), (0.01, 0.9), (0.1, 0.5)])
@pytest.mark.parametrize("r", [0.0, 0.6])
def test_mdd_matches_statsmodels_normal_power(alpha, power, r):
    n, t, s2b, s2w = 80, 5, 0.12, 0.08
    res = minimum_detectable_difference(
        n, t, s2b, s2w, alpha=alpha, power=power, paired_correlation=r
    )
    sd = math.sqrt((s2b / n + s2w / (n * t)) * (1 - r))
    # Two independent samples of size 1 with sd `sd`: the difference has SE sqrt(2)·sd.
    d = NormalIndPower().solve_power(effect_size=None, nobs1=1, alpha=alpha, power=power, ratio=1)
    # statsmodels adds the far rejection tail, which matters only near power = 0.5.
    tol = 1e-5 if power > 0.5 else 5e-3
    assert res.mdd == pytest.approx(d * sd, rel=tol)
    z = NormalDist()
    by_hand = (z.inv_cdf(1 - alpha / 2) + z.inv_cdf(power)) * math.sqrt(2) * sd
    assert res.mdd == pytest.approx(by_hand, rel=1e-12)
    assert res.variance == pytest.approx(s2b / n + s2w / (n * t), rel=1e-14)


def test_mdd_power_is_achieved():
    res = minimum_detectable_difference(50, 4, 0.1, 0.1)
    z = NormalDist()
    shift = res.mdd / res.se_diff
    achieved = z.cdf(shift - res.z_alpha) + z.cdf(-shift - res.z_alpha)
    assert achieved == pytest.approx(0.8, abs=1e-4)


def test_mdd_shrinks_with_more_data_and_pairing():
    n = np.array([10, 20, 40, 80])
    by_n = minimum_detectable_difference(n, 4, 0.1, 0.1).mdd
    assert np.all(np.diff(by_n) < 0)
    by_t = minimum_detectable_difference(40, np.array([1, 2, 8, 64]), 0.1, 0.1).mdd
    assert np.all(np.diff(by_t) < 0)
    by_r = minimum_detectable_difference(40, 4, 0.1, 0.1, paired_correlation=[-0.5, 0, 0.5]).mdd
    assert np.all(np.diff(by_r) < 0)
    # The floor set by task difficulty: infinite trials still leave σ²_b/n.
    inf_t = minimum_detectable_difference(40, 1e12, 0.1, 0.1)
    assert inf_t.variance == pytest.approx(0.1 / 40, rel=1e-9)


@pytest.mark.parametrize(
    "kwargs",
    [{"alpha": 0.0}, {"power": 1.0}, {"paired_correlation": 1.0}, {"paired_correlation": -1.5}],
)
def test_mdd_rejects_bad_input(kwargs):
    with pytest.raises(ValueError):
        minimum_detectable_difference(10, 2, 0.1, 0.1, **kwargs)
    with pytest.raises(ValueError):
        minimum_detectable_difference(0, 2, 0.1, 0.1)
    with pytest.raises(ValueError):
        minimum_detectable_difference(10, 2, -0.1, 0.1)


# --- budgets in money: cost_allocation, optimal_trials_per_task, plan_from_pilot -----------------


def _brute_force(budget, s2b, s2w, c_task, c_trial, max_tasks=None, max_trials=None):
    """Every affordable (n, T), written out: the minimum variance, ties to more tasks."""
    best = None
    n = 1
    while n * (c_task + c_trial) <= budget * (1 + 1e-9) and (max_tasks is None or n <= max_tasks):
        t = 1
        while n * (c_task + t * c_trial) <= budget * (1 + 1e-9) and (
            max_trials is None or t <= max_trials
        ):
            v = s2b / n + s2w / (n * t)
            if best is None or v < best[0] or (v == best[0] and n > best[1]):
                best = (v, n, t)
            t += 1
        n += 1
    return best


@pytest.mark.parametrize(
    ("budget", "s2b", "s2w", "c_task", "c_trial", "max_tasks", "max_trials"),
    [
        (500.0, 0.1, 0.15, 2.0, 0.25, None, None),
        (500.0, 0.1, 0.15, 2.0, 0.25, 60, None),
        (300.0, 0.02, 0.2, 10.0, 1.0, None, 8),
        (120.0, 0.2, 0.05, 0.0, 1.0, None, None),
        (97.3, 0.05, 0.2, 3.7, 0.9, 25, 12),
        (1000.0, 0.0, 0.2, 5.0, 1.0, None, 50),
    ],
)
def test_cost_allocation_matches_brute_force(
    budget, s2b, s2w, c_task, c_trial, max_tasks, max_trials
):
    res = cost_allocation(
        budget,
        s2b,
        s2w,
        cost_per_task=c_task,
        cost_per_trial=c_trial,
        max_tasks=max_tasks,
        max_trials=max_trials,
    )
    v, n, t = _brute_force(budget, s2b, s2w, c_task, c_trial, max_tasks, max_trials)
    assert (res.recommended.n_tasks, res.recommended.trials) == (n, t)
    assert res.recommended.variance == pytest.approx(v, rel=1e-12)
    assert np.all(res.cost <= budget * (1 + 1e-9))
    assert res.variance_exact <= res.variance.min() * (1 + 1e-12)
    # Frontier: no row is dominated by another.
    assert np.all(np.diff(res.n_tasks) < 0) and np.all(np.diff(res.trials) > 0)


@settings(max_examples=60, deadline=None)
@given(
    budget=st.floats(2, 400),
    s2b=st.floats(0.001, 0.3),
    s2w=st.floats(0, 0.3),
    c_task=st.floats(0, 20),
    c_trial=st.floats(0.05, 5),
    max_tasks=st.one_of(st.none(), st.integers(1, 80)),
)
def test_cost_allocation_is_the_exhaustive_optimum(budget, s2b, s2w, c_task, c_trial, max_tasks):
    if budget < c_task + c_trial:
        with pytest.raises(ValueError):
            cost_allocation(budget, s2b, s2w, cost_per_task=c_task, cost_per_trial=c_trial)
        return
    res = cost_allocation(
        budget, s2b, s2w, cost_per_task=c_task, cost_per_trial=c_trial, max_tasks=max_tasks
    )
    v, n, _ = _brute_force(budget, s2b, s2w, c_task, c_trial, max_tasks)
    assert res.recommended.variance == pytest.approx(v, rel=1e-12)
    assert res.recommended.n_tasks == n


def test_cochran_closed_form():
    # T* = sqrt(c_task/c_trial · σ²_w/σ²_b) minimizes (σ²_b + σ²_w/T)(c_task + T c_trial).
    s2b, s2w, c1, c2, b = 0.08, 0.18, 6.0, 0.5, 900.0
    res = cost_allocation(b, s2b, s2w, cost_per_task=c1, cost_per_trial=c2)
    t_star = math.sqrt(c1 / c2 * s2w / s2b)
    assert res.trials_exact == pytest.approx(t_star, rel=1e-12)
    assert res.n_tasks_exact == pytest.approx(b / (c1 + t_star * c2), rel=1e-12)
    closed = (math.sqrt(s2b * c1) + math.sqrt(s2w * c2)) ** 2 / b
    assert res.variance_exact == pytest.approx(closed, rel=1e-12)
    grid = np.linspace(0.5, 40, 200_001)
    numeric = ((s2b + s2w / grid) * (c1 + grid * c2) / b).min()
    assert closed == pytest.approx(numeric, rel=1e-8)
    # The integer optimum sits next to T*.
    assert res.recommended.trials in (math.floor(t_star), math.ceil(t_star))
    # optimal_trials_per_task ignores that n is whole (here T = 5 buys 105.9 tasks, T = 6
    # exactly 100, so the budget's optimum is 6); it too sits next to T*.
    opt = optimal_trials_per_task(s2b, s2w, c1, c2)
    assert opt.trials in (math.floor(t_star), math.ceil(t_star))
    assert opt.trials_exact == pytest.approx(t_star)
    assert opt.unit_cost == pytest.approx(c1 + opt.trials * c2)


@pytest.mark.parametrize("max_tasks", [None, 30, 150, 1000])
@pytest.mark.parametrize("budget", [64, 360, 400, 997])
def test_cost_allocation_in_runs_agrees_with_allocation_table(budget, max_tasks):
    # c_task = 0, c_trial = 1: the budget counts runs, as in the paper's eq. 10.
    for s2b, s2w in [(5.0, 1.0), (0.1, 0.02), (0.0, 1.0)]:
        runs = allocation_table(budget, s2b, s2w, max_tasks=max_tasks).recommended
        money = cost_allocation(
            budget, s2b, s2w, cost_per_task=0.0, cost_per_trial=1.0, max_tasks=max_tasks
        ).recommended
        assert money.variance <= runs.variance * (1 + 1e-12)
        if s2b > 0:
            assert (money.n_tasks, money.trials) == (runs.n_tasks, runs.trials)


def test_cost_allocation_saturates_tasks_then_buys_trials():
    res = cost_allocation(1000.0, 0.1, 0.1, cost_per_task=1.0, cost_per_trial=1.0, max_tasks=40)
    # Unconstrained T* = 1; with 40 tasks the rest of the money goes into trials: 40 × 24.
    assert (res.recommended.n_tasks, res.recommended.trials) == (40, 24)
    assert res.recommended.cost == pytest.approx(40 * 25)


def test_optimal_trials_edges_and_broadcasting():
    opt = optimal_trials_per_task(
        [0.1, 0.1, 0.0, 0.0], [0.2, 0.0, 0.2, 0.0], 4.0, 1.0, max_trials=9
    )
    assert opt.trials.tolist() == [3, 1, 9, 1]
    assert np.isinf(opt.trials_exact[2]) and np.isnan(opt.trials_exact[3])
    assert optimal_trials_per_task(0.1, 0.2, 0.0, 1.0).trials == 1  # the paper's eq. 10
    for t_star_case in np.linspace(0.1, 20, 37):
        # Brute force over T: the integer minimizer of the cost-weighted unit variance.
        s2w = t_star_case**2 * 0.1 / 3.0
        opt = optimal_trials_per_task(0.1, s2w, 3.0, 1.0, max_trials=12)
        t = np.arange(1, 13)
        assert opt.trials == t[np.argmin((0.1 + s2w / t) * (3.0 + t))]
    with pytest.raises(ValueError):
        optimal_trials_per_task(0.0, 0.2, 1.0, 1.0)  # unbounded without a cap
    with pytest.raises(ValueError):
        optimal_trials_per_task(0.1, 0.2, 1.0, 0.0)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"budget": 0.0},
        {"budget": 2.0},  # less than one task with one trial
        {"budget": float("inf")},
        {"cost_per_trial": 0.0},
        {"cost_per_task": -1.0},
        {"sigma2_between": -0.1},
        {"max_tasks": 0},
        {"max_trials": 2.5},
    ],
)
def test_cost_allocation_rejects_bad_input(kwargs):
    args = {
        "budget": 100.0,
        "sigma2_between": 0.1,
        "sigma2_within": 0.1,
        "cost_per_task": 2.0,
        "cost_per_trial": 1.0,
        **kwargs,
    }
    with pytest.raises(ValueError):
        cost_allocation(
            args.pop("budget"), args.pop("sigma2_between"), args.pop("sigma2_within"), **args
        )


def test_plan_from_pilot_uses_the_pilots_components():
    rng = np.random.default_rng(12)
    p = rng.beta(1, 1.5, 30)
    tasks = np.repeat(np.arange(30), 5)
    scores = (rng.random(tasks.size) < p[tasks]).astype(float)
    plan = plan_from_pilot(scores, tasks, budget=400.0, cost_per_task=3.0, cost_per_trial=0.5)
    ref = icc_oneway(scores, tasks)
    assert plan.sigma2_between == pytest.approx(ref.sigma2_between)
    assert plan.sigma2_within == pytest.approx(ref.sigma2_within)
    assert (plan.pilot_tasks, plan.pilot_trials) == (30, 150)
    direct = cost_allocation(
        400.0, ref.sigma2_between, ref.sigma2_within, cost_per_task=3.0, cost_per_trial=0.5
    )
    assert plan.allocation.recommended == direct.recommended
    assert plan.ci_half_width == pytest.approx(NormalDist().inv_cdf(0.975) * plan.se)
    assert plan.warnings == ()


def test_plan_from_pilot_floors_a_negative_component_and_needs_two_trials():
    # Every task has the same mean: MSB < MSW, σ²_between < 0.
    scores = np.array([1, 0, 0, 1, 1, 0, 0, 1, 1, 0, 1, 0], dtype=float)
    tasks = np.repeat(np.arange(6), 2)
    plan = plan_from_pilot(scores, tasks, budget=50.0, cost_per_task=0.0, cost_per_trial=1.0)
    assert plan.sigma2_between_raw < 0 and plan.sigma2_between == 0.0
    assert any("negative" in w for w in plan.warnings)
    assert any("only 6 tasks" in w for w in plan.warnings)
    with pytest.raises(ValueError, match="max_trials"):
        plan_from_pilot(scores, tasks, budget=50.0, cost_per_task=1.0, cost_per_trial=1.0)
    with pytest.raises(ValueError, match="two trials"):
        plan_from_pilot(np.array([1.0, 0.0]), np.array([0, 1]), budget=10.0)


def test_the_results_say_when_the_task_pool_binds():
    # eq. 10: with n·T = B fixed more tasks always win, so a pool below B binds
    capped = allocation_table(400, 5.0, 1.0, max_tasks=50)
    assert (capped.recommended.n_tasks, capped.recommended.trials) == (50, 8)
    assert (capped.tasks_without_cap, capped.pool_bound) == (400, True)
    loose = allocation_table(400, 5.0, 1.0, max_tasks=1000)
    assert (loose.recommended.n_tasks, loose.pool_bound) == (400, False)
    assert allocation_table(400, 5.0, 1.0).pool_bound is False
    # money: the pool binds exactly when the uncapped optimum has more tasks than exist
    free = cost_allocation(500.0, 0.1, 0.15, cost_per_task=2.0, cost_per_trial=0.25)
    n_free = free.recommended.n_tasks
    assert (free.tasks_without_cap, free.pool_bound) == (n_free, False)
    for pool in (n_free - 10, n_free, n_free + 10):
        res = cost_allocation(
            500.0, 0.1, 0.15, cost_per_task=2.0, cost_per_trial=0.25, max_tasks=pool
        )
        assert res.recommended.n_tasks <= pool
        assert res.tasks_without_cap == n_free and res.pool_bound == (n_free > pool)
