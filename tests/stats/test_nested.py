"""The judge's nested components and the judge-sample plan, both computed by the G-study
engine: statsmodels MixedLM / Type I SS, simulations, brute force.

The tests of ``stats/nested.py`` (``nested_components``, ``nested_allocation``), which the
engine replaced: the same reference values, now against the judge table's record
(:func:`evalnoise.pipeline.judging.nested_record`, the G study of task / trial:task with judge
samples as replicates) and the D study behind ``evalnoise plan --sigma2-judge``
(:func:`evalnoise.stats.judge_sample_plan`).
"""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from statsmodels.stats.anova import anova_lm

from evalnoise.pipeline.judging import nested_record
from evalnoise.stats import dstudy, judge_sample_plan, variance_model
from evalnoise.stats._gmoments import mls_interval
from evalnoise.stats.cost_allocation import cost_allocation
from evalnoise.stats.planning import allocation_table


class _Record:
    """The judge record's keys as attributes (None shares as NaN)."""

    def __init__(self, record):
        self.record = record
        for k, v in record.items():
            setattr(self, k, float("nan") if v is None else v)

    def to_dict(self):
        return self.record


def nested_components(scores, tasks, trials, *, confidence=0.95, method="auto"):
    return _Record(nested_record(scores, tasks, trials, confidence, method=method))


def nested_mean_variance(n, t, k, s_a, s_b, s_e):
    """Var(μ̂) of n tasks × t trials × k judge samples, by the D study."""
    model = variance_model(
        ["task", "trial:task"],
        {"task": s_a, "trial:task": s_b, "residual": s_e},
        replicate="judge_sample",
    )
    var = dstudy(model, {"task": n, "trial": t}, replicates=k).variance
    return float(var[0]) if var.size == 1 else var


class _Plan:
    """judge_sample_plan's result in the shape of the old NestedAllocationResult."""

    def __init__(self, plan):
        res = plan.design
        rec = res.recommended
        self.recommended = type("Rec", (), {})()
        self.recommended.n_tasks = rec.sizes["task"]
        self.recommended.trials = rec.sizes["trial"]
        self.recommended.judge_samples = rec.replicates
        self.recommended.cost = rec.cost
        self.recommended.variance = rec.variance
        self.recommended.se = rec.se
        self.trials_opt = plan.trials_optimum
        self.judge_samples_opt = plan.judge_samples_optimum
        self.n_tasks_opt = plan.tasks_optimum
        self.judge_samples = plan.judge_samples
        self.variance = plan.variance
        self.variance_ratio = plan.variance_ratio
        self.warnings = res.warnings
        self.result = res


def nested_allocation(budget, s_a, s_b, s_e, **kw):
    return _Plan(judge_sample_plan(budget, s_a, s_b, s_e, **kw))


def _normal(rng, a=20, b=5, c=3, s=(0.04, 0.08, 0.05), keep=1.0):
    """Normal three-level data; ``keep`` < 1 drops judge samples at random (unbalanced)."""
    ta = np.repeat(np.arange(a), b * c)
    tr = np.tile(np.repeat(np.arange(b), c), a)
    y = (
        0.5
        + rng.normal(0, math.sqrt(s[0]), a)[ta]
        + rng.normal(0, math.sqrt(s[1]), a * b)[ta * b + tr]
        + rng.normal(0, math.sqrt(s[2]), a * b * c)
    )
    m = rng.random(y.size) < keep
    return y[m], ta[m], tr[m]


def _binary(rng, a=200, b=6, c=4, d=0.2):
    """0/1 judge verdicts with known components.

    Task rate p_i uniform on {0.3, 0.5, 0.7}; each trial's rate p_i ± d; each judge sample a
    Bernoulli(p_ij). Then σ²_task = Var(p_i) = 0.08/3, σ²_trial = d², σ²_judge =
    E[p_ij(1 − p_ij)] = E[p_i(1 − p_i)] − d² = 0.67/3 − d².
    """
    ta = np.repeat(np.arange(a), b * c)
    tr = np.tile(np.repeat(np.arange(b), c), a)
    p_i = rng.choice([0.3, 0.5, 0.7], a)
    p_ij = p_i[:, None] + d * rng.choice([-1.0, 1.0], (a, b))
    y = (rng.random(a * b * c) < p_ij.ravel()[ta * b + tr]).astype(float)
    truth = (0.08 / 3, d**2, 0.67 / 3 - d**2)
    return y, ta, tr, truth


# --- independent implementations ----------------------------------------------------------


def test_balanced_matches_textbook_reshape():
    rng = np.random.default_rng(0)
    a, b, c = 12, 4, 3
    y, ta, tr = _normal(rng, a, b, c)
    cube = y.reshape(a, b, c)
    cell, task, grand = cube.mean(2), cube.mean((1, 2)), cube.mean()
    ms_a = b * c * ((task - grand) ** 2).sum() / (a - 1)
    ms_b = c * ((cell - task[:, None]) ** 2).sum() / (a * (b - 1))
    ms_e = ((cube - cell[..., None]) ** 2).sum() / (a * b * (c - 1))
    res = nested_components(y, ta, tr)
    assert (res.ms_task, res.ms_trial, res.ms_judge) == pytest.approx((ms_a, ms_b, ms_e))
    assert res.sigma2_task_raw == pytest.approx((ms_a - ms_b) / (b * c))
    assert res.sigma2_trial_raw == pytest.approx((ms_b - ms_e) / c)
    assert res.sigma2_judge_raw == pytest.approx(ms_e)
    assert (res.k_trial, res.k_task_trial, res.k_task) == (3.0, 3.0, 12.0)
    assert (res.df_task, res.df_trial, res.df_judge) == (11, 36, 96)
    assert res.balanced and res.method == "anova"


@pytest.mark.parametrize("seed", [1, 2])
def test_balanced_matches_statsmodels_mixedlm_reml(seed):
    rng = np.random.default_rng(seed)
    y, ta, tr = _normal(rng, a=30, b=6, c=4, s=(1.0, 0.5, 0.25))
    res = nested_components(y, ta, tr)
    assert res.sigma2_task_raw > 0 and res.sigma2_trial_raw > 0  # no truncation
    df = pd.DataFrame({"y": y, "task": ta, "trial": tr})
    model = smf.mixedlm(
        "y ~ 1", df, groups="task", re_formula="1", vc_formula={"trial": "0 + C(trial)"}
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = model.fit(reml=True)
    # Balanced data, no estimate at 0: REML = ANOVA (measured agreement ~1e-5).
    assert res.sigma2_task == pytest.approx(float(fit.cov_re.iloc[0, 0]), rel=1e-3)
    assert res.sigma2_trial == pytest.approx(float(fit.vcomp[0]), rel=1e-3)
    assert res.sigma2_judge == pytest.approx(float(fit.scale), rel=1e-3)


def test_unbalanced_sums_of_squares_match_type1_anova():
    rng = np.random.default_rng(3)
    y, ta, tr = _normal(rng, a=15, b=4, c=3, keep=0.7)
    res = nested_components(y, ta, tr)
    assert not res.balanced and res.method == "reml"
    df = pd.DataFrame({"y": y, "task": ta, "trial": tr})
    table = anova_lm(smf.ols("y ~ C(task) + C(task):C(trial)", df).fit(), typ=1)
    assert res.ms_task == pytest.approx(table["mean_sq"].iloc[0], rel=1e-9)
    assert res.ms_trial == pytest.approx(table["mean_sq"].iloc[1], rel=1e-9)
    assert res.ms_judge == pytest.approx(table["mean_sq"].iloc[2], rel=1e-9)
    assert (res.df_task, res.df_trial, res.df_judge) == tuple(table["df"].astype(int))
    assert any("unbalanced" in w for w in res.warnings)


def test_mls_reduces_to_chi_square_and_matches_gauge_rr_form():
    # Nothing subtracted: the exact χ² interval for c1·σ².
    lo, hi = mls_interval(np.array([2.0]), np.array([3.0]), np.array([10.0]), 0.05)
    assert lo == pytest.approx(2 * 3 * 10 / stats.chi2.ppf(0.975, 10))
    assert hi == pytest.approx(2 * 3 * 10 / stats.chi2.ppf(0.025, 10))
    # Written out with F(∞, n) quantiles as in Burdick & Graybill (1992), ch. 3.
    s1, n1, s2, n2, al = 5.0, 9, 1.5, 40, 0.1
    g1 = 1 - stats.f.ppf(al / 2, 1e12, n1)
    h1 = stats.f.ppf(1 - al / 2, 1e12, n1) - 1
    g2 = 1 - stats.f.ppf(al / 2, 1e12, n2)
    h2 = stats.f.ppf(1 - al / 2, 1e12, n2) - 1
    f1, f2 = stats.f.ppf(1 - al / 2, n1, n2), stats.f.ppf(al / 2, n1, n2)
    g12 = ((f1 - 1) ** 2 - g1**2 * f1**2 - h2**2) / f1
    h12 = ((1 - f2) ** 2 - h1**2 * f2**2 - g2**2) / f2
    lo_ref = s1 - s2 - math.sqrt(g1**2 * s1**2 + h2**2 * s2**2 + g12 * s1 * s2)
    hi_ref = s1 - s2 + math.sqrt(h1**2 * s1**2 + g2**2 * s2**2 + h12 * s1 * s2)
    got = mls_interval(np.array([1.0, -1.0]), np.array([s1, s2]), np.array([n1, n2]), al)
    assert got == pytest.approx((lo_ref, hi_ref), rel=1e-6)


# --- simulations with known components (fixed seeds) --------------------------------------


@pytest.mark.parametrize("keep", [1.0, 0.75])
def test_coverage_and_unbiasedness_normal(keep):
    truth = np.array([0.04, 0.08, 0.05])
    rng = np.random.default_rng(11)
    reps = 400
    raw = np.empty((reps, 3))
    cover = np.zeros(3)
    for r in range(reps):
        # the moment estimator (Henderson III: Type I for a nested design) is the unbiased one
        res = nested_components(*_normal(rng, s=tuple(truth), keep=keep), method="henderson3")
        raw[r] = res.sigma2_task_raw, res.sigma2_trial_raw, res.sigma2_judge_raw
        lows = res.sigma2_task_ci_low, res.sigma2_trial_ci_low, res.sigma2_judge_ci_low
        highs = res.sigma2_task_ci_high, res.sigma2_trial_ci_high, res.sigma2_judge_ci_high
        cover += (np.array(lows) <= truth) & (truth <= np.array(highs))
    cover /= reps
    # Measured: balanced 0.938 / 0.935 / 0.943, unbalanced 0.943 / 0.943 / 0.948.
    assert np.all((cover >= 0.92) & (cover <= 0.98)), cover
    mc_se = raw.std(axis=0, ddof=1) / math.sqrt(reps)
    assert np.all(np.abs(raw.mean(axis=0) - truth) < 3 * mc_se), (raw.mean(axis=0), mc_se)


def test_binary_verdicts_recover_known_components():
    rng = np.random.default_rng(21)
    y, ta, tr, truth = _binary(rng)
    res = nested_components(y, ta, tr)
    got = (res.sigma2_task, res.sigma2_trial, res.sigma2_judge)
    lows = (res.sigma2_task_ci_low, res.sigma2_trial_ci_low, res.sigma2_judge_ci_low)
    highs = (res.sigma2_task_ci_high, res.sigma2_trial_ci_high, res.sigma2_judge_ci_high)
    for t, lo, hi in zip(truth, lows, highs, strict=True):
        assert lo <= t <= hi
    assert got == pytest.approx(truth, abs=0.015)
    # Unbiased on binary data too (method of moments): average over replications.
    raw = np.array(
        [
            [r.sigma2_task_raw, r.sigma2_trial_raw, r.sigma2_judge_raw]
            for r in (nested_components(*_binary(rng, a=60)[:3]) for _ in range(150))
        ]
    )
    mc_se = raw.std(axis=0, ddof=1) / math.sqrt(raw.shape[0])
    assert np.all(np.abs(raw.mean(axis=0) - np.array(truth)) < 3 * mc_se)


# --- degenerate designs ------------------------------------------------------------------


def test_one_judge_sample_per_trial():
    rng = np.random.default_rng(4)
    y, ta, tr = _normal(rng, c=1)
    res = nested_components(y, ta, tr)
    assert np.isnan(res.sigma2_judge) and np.isnan(res.sigma2_trial)
    assert any("one judge sample" in w for w in res.warnings)
    # σ²_task is still the one-way ANOVA between-task component.
    from evalnoise.stats import icc_oneway

    assert res.sigma2_task_raw == pytest.approx(icc_oneway(y, ta).sigma2_between)
    assert np.isnan(res.share_task)


def test_one_trial_per_task_and_one_task():
    rng = np.random.default_rng(5)
    res = nested_components(*_normal(rng, b=1))
    assert np.isnan(res.sigma2_trial) and np.isnan(res.sigma2_task)
    assert np.isfinite(res.sigma2_judge)
    res = nested_components(*_normal(rng, a=1))
    assert np.isnan(res.sigma2_task) and np.isfinite(res.sigma2_trial)


def test_constant_scores_and_truncation():
    ta, tr = np.repeat(np.arange(4), 6), np.tile(np.repeat(np.arange(3), 2), 4)
    res = nested_components(np.ones(24), ta, tr)
    assert (res.sigma2_task, res.sigma2_trial, res.sigma2_judge) == (0.0, 0.0, 0.0)
    assert np.isnan(res.share_task) and any("no variance to split" in w for w in res.warnings)
    # Trials vary less than judge noise predicts: σ²_trial < 0 → truncated, raw kept.
    y = np.tile([0.0, 1.0], 12)
    res = nested_components(y, ta, tr)
    assert res.sigma2_trial_raw < 0 and res.sigma2_trial == 0.0
    assert res.share_judge == pytest.approx(1.0)
    assert any("truncated" in w for w in res.warnings)


def test_missing_rows_labels_and_order():
    rng = np.random.default_rng(6)
    y, ta, tr = _normal(rng, a=8)
    ref = nested_components(y, ta, tr)
    order = rng.permutation(y.size)
    names = np.array([f"task-{t}" for t in ta])
    shuffled = nested_components(y[order], names[order], tr[order])
    assert shuffled.sigma2_task == pytest.approx(ref.sigma2_task)
    assert shuffled.sigma2_trial_ci_high == pytest.approx(ref.sigma2_trial_ci_high)
    y2 = np.append(y, np.nan)
    res = nested_components(y2, np.append(ta, 0), np.append(tr, 0))
    assert res.n_obs == y.size and any("without a score" in w for w in res.warnings)
    with pytest.raises(ValueError, match="labels for"):
        nested_components(y, ta[:-1], tr)
    with pytest.raises(ValueError, match="missing label"):
        nested_components(y, np.where(ta == 0, np.nan, ta), tr)


def test_to_dict_is_json():
    rng = np.random.default_rng(7)
    d = nested_components(*_normal(rng)).to_dict()
    assert json.loads(json.dumps(d))["method"] == "anova"
    plan = nested_allocation(500, 0.04, 0.1, 0.05, cost_per_trial=1, cost_per_judge_sample=0.1)
    back = json.loads(json.dumps(plan.result.to_dict()))
    assert back["recommended"]["replicates"] >= 1
    assert len(back["variance"]) == len(back["n_free"])


# --- planner -----------------------------------------------------------------------------


def test_integer_search_hits_closed_form_optimum():
    # T* = sqrt(0.16·4/(0.04·1)) = 4, K* = sqrt(0.16·1/(0.16·0.25)) = 2, n* = 1000/10 = 100.
    res = nested_allocation(
        1000, 0.04, 0.16, 0.16, cost_per_task=4, cost_per_trial=1, cost_per_judge_sample=0.25
    )
    assert (res.trials_opt, res.judge_samples_opt, res.n_tasks_opt) == pytest.approx((4, 2, 100))
    rec = res.recommended
    assert (rec.n_tasks, rec.trials, rec.judge_samples) == (100, 4, 2)
    assert rec.variance == pytest.approx(nested_mean_variance(100, 4, 2, 0.04, 0.16, 0.16))
    assert rec.cost == 1000.0
    assert res.variance_ratio[1] < 1.0  # a second judge sample is worth buying


def test_matches_brute_force():
    rng = np.random.default_rng(8)
    for _ in range(20):
        s = rng.uniform(0.0, 0.2, 3)
        c_a, c_b, c_e = rng.uniform(0, 5), rng.uniform(0.5, 2), rng.uniform(0.05, 1)
        budget = float(rng.uniform(50, 400))
        res = nested_allocation(
            budget,
            *s,
            cost_per_task=c_a,
            cost_per_trial=c_b,
            cost_per_judge_sample=c_e,
            max_judge_samples=12,
        )
        best = math.inf
        for t in range(1, 200):
            for k in range(1, 13):
                n = math.floor(budget / (c_a + t * c_b + t * k * c_e))
                if n >= 1:
                    best = min(best, s[0] / n + s[1] / (n * t) + s[2] / (n * t * k))
        assert res.recommended.variance == pytest.approx(best, rel=1e-12)
        assert res.recommended.cost <= budget + 1e-9


def test_reduces_to_paper_allocation_without_judge_noise():
    # No judge noise, free judging: the paper's eq. 9–10 planner (planning.allocation_table).
    for n_max in (None, 50, 7):
        res = nested_allocation(
            400, 5.0, 1.0, 0.0, cost_per_trial=1, cost_per_judge_sample=0.0, max_tasks=n_max
        ).recommended
        ref = allocation_table(400, 5.0, 1.0, max_tasks=n_max).recommended
        assert (res.n_tasks, res.trials, res.judge_samples) == (ref.n_tasks, ref.trials, 1)
        assert res.variance == pytest.approx(ref.variance)


_DYADIC_COSTS = [0.0, 0.25, 0.5, 1.0, 1.5, 2.0, 4.0, 8.0]


@settings(max_examples=150, deadline=None)
@given(
    st.integers(2, 1000),
    st.floats(0.001, 1.0),
    st.floats(0.001, 1.0),
    st.sampled_from(_DYADIC_COSTS),
    st.sampled_from(_DYADIC_COSTS[1:]),
    st.one_of(st.none(), st.integers(1, 400)),
    st.one_of(st.none(), st.integers(1, 60)),
)
def test_reduces_to_cost_allocation_without_judge_noise_or_cost(
    budget, s_a, s_b, c_a, c_b, max_tasks, max_trials
):
    # σ²_judge = 0 and free judging: the two-stage money planner (planning.cost_allocation).
    # Dyadic costs and whole budgets keep every floor exact, so both searches see the same
    # integer plans.
    if budget < c_a + c_b:
        return
    caps = {"max_tasks": max_tasks, "max_trials": max_trials}
    nested = nested_allocation(
        budget, s_a, s_b, 0.0, cost_per_task=c_a, cost_per_trial=c_b, cost_per_judge_sample=0.0,
        **caps,
    )  # fmt: skip
    ref = cost_allocation(budget, s_a, s_b, cost_per_task=c_a, cost_per_trial=c_b, **caps)
    rec, want = nested.recommended, ref.recommended
    assert (rec.n_tasks, rec.trials, rec.judge_samples) == (want.n_tasks, want.trials, 1)
    assert (rec.cost, rec.variance, rec.se) == (want.cost, want.variance, want.se)
    assert nested.trials_opt == ref.trials_exact or (
        math.isnan(nested.trials_opt) and math.isnan(ref.trials_exact)
    )


def test_judge_samples_not_worth_buying_when_judge_is_quiet_or_dear():
    res = nested_allocation(1000, 0.05, 0.15, 0.01, cost_per_trial=1, cost_per_judge_sample=0.5)
    assert res.judge_samples_opt < 1 and res.recommended.judge_samples == 1
    assert np.all(res.variance_ratio[1:] > 1)
    noisy_cheap = nested_allocation(
        1000, 0.05, 0.05, 0.2, cost_per_trial=1, cost_per_judge_sample=0.02
    )
    assert noisy_cheap.judge_samples_opt == pytest.approx(math.sqrt(0.2 / (0.05 * 0.02)))
    assert noisy_cheap.recommended.judge_samples > 1


def test_planner_validation_and_edges():
    with pytest.raises(ValueError, match="cost_per_trial"):
        nested_allocation(100, 0.1, 0.1, 0.1, cost_per_trial=0, cost_per_judge_sample=1)
    with pytest.raises(ValueError, match="cannot buy"):
        nested_allocation(1, 0.1, 0.1, 0.1, cost_per_trial=1, cost_per_judge_sample=1)
    with pytest.raises(ValueError, match="sigma2\\['task'\\]"):
        nested_allocation(100, -0.1, 0.1, 0.1, cost_per_trial=1, cost_per_judge_sample=1)
    free = nested_allocation(
        100, 0.1, 0.1, 0.1, cost_per_trial=1, cost_per_judge_sample=0, max_tasks=10
    )
    assert free.recommended.judge_samples == 64
    assert any("judge_sample is the largest searched (64)" in w for w in free.warnings)
    assert math.isinf(free.judge_samples_opt)
    assert nested_mean_variance([1, 2], 1, 1, 1.0, 0.0, 0.0).tolist() == [1.0, 0.5]


# --- properties --------------------------------------------------------------------------

_design = st.tuples(
    st.integers(2, 6),  # tasks
    st.integers(2, 4),  # trials per task
    st.integers(2, 4),  # judge samples per trial
    st.integers(0, 2**32 - 1),  # seed
    st.floats(0.0, 0.5),  # share of rows dropped
    st.booleans(),  # binary scores
)


@settings(max_examples=60, deadline=None)
@given(_design)
def test_truncated_components_nonnegative_shares_sum_to_one(design):
    a, b, c, seed, drop, binary = design
    rng = np.random.default_rng(seed)
    y, ta, tr = _normal(rng, a, b, c, s=(0.05, 0.05, 0.05), keep=1.0 - drop)
    if binary:
        y = (y > 0.5).astype(float)
    res = nested_components(y, ta, tr)
    comps = np.array([res.sigma2_task, res.sigma2_trial, res.sigma2_judge])
    shares = np.array([res.share_task_estimate, res.share_trial_estimate, res.share_judge_estimate])
    finite = np.isfinite(comps)
    assert np.all(comps[finite] >= 0)
    if np.all(np.isfinite(shares)):
        assert shares.sum() == pytest.approx(1.0)
        assert np.all(shares >= 0)
    for lo, est, hi in (
        (res.sigma2_task_ci_low, res.sigma2_task, res.sigma2_task_ci_high),
        (res.sigma2_trial_ci_low, res.sigma2_trial, res.sigma2_trial_ci_high),
        (res.sigma2_judge_ci_low, res.sigma2_judge, res.sigma2_judge_ci_high),
    ):
        if np.isfinite(lo):
            assert 0.0 <= lo <= est * (1 + 1e-12) + 1e-15 and est <= hi * (1 + 1e-12) + 1e-15
    # Location and scale: shifting leaves components unchanged, scaling by 3 multiplies by 9.
    moved = nested_components(3.0 * y + 1.0, ta, tr)
    assert moved.sigma2_task_raw == pytest.approx(9 * res.sigma2_task_raw, abs=1e-9, nan_ok=True)
    assert moved.sigma2_trial_raw == pytest.approx(9 * res.sigma2_trial_raw, abs=1e-9, nan_ok=True)
    assert moved.sigma2_judge_raw == pytest.approx(9 * res.sigma2_judge_raw, abs=1e-9, nan_ok=True)


@settings(max_examples=60, deadline=None)
@given(
    st.floats(0.0, 1.0),
    st.floats(0.0, 1.0),
    st.floats(0.0, 1.0),
    st.floats(0.0, 5.0),
    st.floats(0.1, 3.0),
    st.floats(0.0, 1.0),
    st.floats(20.0, 2000.0),
)
def test_recommended_is_feasible_and_no_worse_than_k1(s_a, s_b, s_e, c_a, c_b, c_e, budget):
    if budget < c_a + c_b + c_e:
        return
    res = nested_allocation(
        budget, s_a, s_b, s_e, cost_per_task=c_a, cost_per_trial=c_b, cost_per_judge_sample=c_e
    )
    rec = res.recommended
    assert rec.n_tasks >= 1 and rec.cost <= budget * (1 + 1e-9)
    assert rec.variance <= res.variance[0] + 1e-15
    assert rec.variance == pytest.approx(
        nested_mean_variance(rec.n_tasks, rec.trials, rec.judge_samples, s_a, s_b, s_e)
    )


def test_the_judge_record_keeps_the_judge_tables_columns():
    """Every column of the judge table (the fields of the replaced NestedComponentsResult),
    and the summary reads its shares: a component not detected has no share."""
    from evalnoise.formatting import jsonable
    from evalnoise.pipeline.summary import judge_summary

    old_columns = {
        f"sigma2_{c}{k}" for c in ("task", "trial", "judge") for k in ("", "_raw", "_ci_low",
                                                                        "_ci_high")
    } | {f"share_{c}" for c in ("task", "trial", "judge")} | {
        f"{k}_{c}" for k in ("ms", "df") for c in ("task", "trial", "judge")
    } | {"icc_task", "mean", "k_trial", "k_task_trial", "k_task", "n_tasks", "n_trials",
         "n_obs", "balanced", "method", "ci_method", "confidence", "warnings"}  # fmt: skip
    rng = np.random.default_rng(12)
    y, ta, tr, _ = _binary(rng, a=40)
    record = nested_record(y, ta, tr, 0.95)
    assert old_columns <= set(record)
    assert json.loads(json.dumps(jsonable(record)))["n_obs"] == y.size
    summary = judge_summary({"mode": "extract", "samples": 4, "sent": 1, "nested": record})
    assert summary["share_judge"] == pytest.approx(record["share_judge_estimate"])
    quiet = nested_record(np.repeat(rng.random(40 * 6) < 0.5, 4).astype(float),
                          np.repeat(np.arange(40), 24), np.tile(np.repeat(np.arange(6), 4), 40),
                          0.95)  # fmt: skip
    assert quiet["sigma2_judge"] == 0 and quiet["share_judge"] is None
    assert not quiet["detected_judge"] and quiet["share_judge_estimate"] == 0
