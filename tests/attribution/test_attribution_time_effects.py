"""Time and host as factors: Henderson III components, bootstrap CIs, infra share, drift."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from attribution_synth import anova_components, balanced_anova, make_run, true_components
from hypothesis import given, settings
from hypothesis import strategies as st

from evalnoise.attribution import (
    INFRA_COMPONENTS,
    drift_test,
    time_blocks,
    time_effects,
    variance_components,
)


def _design(run):
    return run.trials["score"].to_numpy(), run.task, run.block, run.host


# --- the estimator against the textbook ---------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 5])
def test_henderson3_equals_balanced_anova(seed):
    run = make_run(seed=seed)
    y, task, block, host = _design(run)
    res = variance_components(y, task, block, host, n_boot=0)
    expected = anova_components(balanced_anova(y, run), run)
    assert res.components == ("task", "time_block", "host", "task:time_block", "residual")
    for name, value in expected.items():
        idx = res.components.index(name)
        assert res.sigma2_raw[idx] == pytest.approx(value, rel=1e-9, abs=1e-12), name
    g, b, n, h = run.n_tasks, run.n_blocks, run.per_cell, run.n_hosts
    assert res.df.tolist() == [g - 1, b - 1, h - 1, (g - 1) * (b - 1), g * b * (n - 1) - (h - 1)]
    assert math.isnan(res.ci_low[0])  # n_boot=0: no intervals


def test_labels_and_row_order_do_not_matter():
    run = make_run(seed=2)
    y, task, block, host = _design(run)
    base = variance_components(y, task, block, host, n_boot=50, seed=3)
    perm = np.random.default_rng(0).permutation(y.size)
    names = np.array([f"t{i}" for i in range(run.n_tasks)])[::-1]
    other = variance_components(
        y[perm], names[task][perm], (block * 7 + 1)[perm], np.array(list("wxyz"))[host][perm],
        n_boot=0,
    )  # fmt: skip
    np.testing.assert_allclose(other.sigma2_raw, base.sigma2_raw, rtol=1e-9, atol=1e-13)


# --- recovery of injected components ------------------------------------------------------------


def test_injected_time_flaky_and_host_components_recovered_within_cis():
    """A run with a time effect (+12 … −12 points over 4 blocks), 6 flaky tasks (±30 points
    between halves of the run) and 4 hosts (±6 points): the estimators' targets — the ANOVA
    components of the true success probabilities — lie inside the bootstrap intervals."""
    run = make_run(seed=3)
    y, task, block, host = _design(run)
    res = variance_components(y, task, block, host, n_boot=1000, seed=0)
    truth = true_components(run)
    for name, lo, est, hi in zip(res.components, res.ci_low, res.sigma2, res.ci_high, strict=True):
        assert lo <= truth[name] <= hi, (name, lo, est, truth[name], hi)
        assert lo <= est <= hi
    true_infra = sum(truth[c] for c in INFRA_COMPONENTS) / sum(truth.values())
    assert res.infra_share_ci_low <= true_infra <= res.infra_share_ci_high
    assert res.infra_share_ci_low > 0.0  # the injected time effects are detected
    assert res.infra_components == INFRA_COMPONENTS
    assert res.share.sum() == pytest.approx(1.0)
    assert res["time_block"] == res.sigma2[1]
    common = variance_components(
        y, task, block, host, infra_components=("time_block", "host"), n_boot=0
    )
    assert common.infra_share == pytest.approx(res.share[1] + res.share[2])
    with pytest.raises(ValueError, match="unknown"):
        variance_components(y, task, block, infra_components=("residual",))


def test_bootstrap_intervals_cover_the_truth_in_repeated_runs():
    """Coverage over 20 independent runs (n_boot = 200): the intervals for task, time block,
    task × block and residual are not narrower than they should be."""
    hits = dict.fromkeys(("task", "time_block", "task:time_block", "residual"), 0)
    for seed in range(20):
        run = make_run(seed=100 + seed, n_tasks=40)
        y, task, block, host = _design(run)
        res = variance_components(y, task, block, host, n_boot=200, seed=seed)
        truth = true_components(run)
        for name in hits:
            i = res.components.index(name)
            hits[name] += res.ci_low[i] <= truth[name] <= res.ci_high[i]
    assert all(v >= 17 for v in hits.values()), hits


def test_no_time_effect_gives_small_infra_share():
    run = make_run(
        seed=4, block_effects=(0, 0, 0, 0), host_effects=(0, 0, 0, 0), n_flaky=0, n_tasks=80
    )
    y, task, block, host = _design(run)
    res = variance_components(y, task, block, host, n_boot=500, seed=1)
    assert res.infra_share_ci_low < 0.01
    assert res.infra_share < 0.05


# --- against an independent implementation: statsmodels' REML MixedLM ---------------------------


def _mixedlm(df, vcf, method):
    df = df.assign(one=1)
    model = sm.MixedLM.from_formula("y ~ 1", groups="one", re_formula="0", vc_formula=vcf, data=df)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = model.fit(reml=True, method=method, maxiter=5000)
    return dict(zip(model.exog_vc.names, fit.vcomp, strict=True)) | {"residual": fit.scale}


def test_matches_mixedlm_reml_on_a_balanced_design_with_interaction():
    """Balanced, every estimate positive: ANOVA = REML exactly (Searle et al. 1992 §4.8);
    statsmodels' Nelder–Mead optimum agrees to its own precision."""
    # the precondition of ANOVA = REML: every estimate positive (true for this draw)
    run = make_run(seed=7, n_tasks=16, n_hosts=1, host_effects=(0.0,), n_flaky=4, flaky_effect=0.35)
    y, task, block, _ = _design(run)
    res = variance_components(y, task, block, interaction=True, n_boot=0)
    assert (res.sigma2_raw > 0).all()
    df = pd.DataFrame({"y": y, "task": task, "block": block, "cell": task * 4 + block})
    vcf = {"task": "0 + C(task)", "block": "0 + C(block)", "cell": "0 + C(cell)"}
    ref = _mixedlm(df, vcf, "nm")
    names = {"task": "task", "time_block": "block", "task:time_block": "cell"}
    names["residual"] = "residual"
    for ours, theirs in names.items():
        assert res[ours] == pytest.approx(ref[theirs], rel=5e-3, abs=2e-4), ours


def test_matches_mixedlm_reml_with_unbalanced_hosts():
    """Hosts drawn at random per trial (unbalanced): Henderson III and REML are different
    estimators of the same components, close but not equal."""
    run = make_run(seed=8, n_tasks=30, n_flaky=0)
    rng = np.random.default_rng(8)
    y = run.trials["score"].to_numpy().copy()
    host = rng.integers(0, 3, y.size)
    y = np.where(rng.random(y.size) < 0.15, (host == 0).astype(float), y)  # host-0 bias
    res = variance_components(y, run.task, run.block, host, interaction=False, n_boot=0)
    df = pd.DataFrame({"y": y, "task": run.task, "block": run.block, "host": host})
    vcf = {"task": "0 + C(task)", "block": "0 + C(block)", "host": "0 + C(host)"}
    ref = _mixedlm(df, vcf, "lbfgs")
    for ours, theirs in {"task": "task", "time_block": "block", "host": "host"}.items():
        assert res[ours] == pytest.approx(ref[theirs], abs=3e-3), ours
    assert res["residual"] == pytest.approx(ref["residual"], rel=5e-3)


# --- degenerate designs -------------------------------------------------------------------------


def test_non_estimable_components_are_dropped():
    run = make_run(seed=9, n_tasks=10)
    y, task, block, _ = _design(run)
    one_block = variance_components(y, task, np.zeros_like(block), n_boot=0)
    assert one_block.components == ("task", "residual")
    assert any("time_block" in w for w in one_block.warnings)
    confounded = variance_components(y, task, block, host=block, interaction=False, n_boot=0)
    assert "host" not in confounded.components
    single = variance_components([0.0, 1.0, 1.0, 0.0, 1.0, 1.0], [0, 0, 0, 1, 1, 1], [0, 1, 2] * 2)
    assert single.components == ("task", "time_block", "residual")
    assert any("two trials" in w for w in single.warnings)
    with pytest.raises(ValueError, match="two tasks"):
        variance_components(y, np.zeros_like(task), block)
    with pytest.raises(ValueError):
        variance_components(y[:-1], task, block)
    with pytest.raises(ValueError):
        variance_components(np.full(y.size, np.nan), task, block)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), n_boot=st.integers(0, 30))
def test_components_nonnegative_and_shares_sum_to_one(seed, n_boot):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(20, 120))
    y = (rng.random(n) < rng.random()).astype(float)
    y[:2] = [0.0, 1.0]
    task = rng.integers(0, int(rng.integers(2, 8)), n)
    task[:2] = [0, 1]
    block = rng.integers(0, 4, n)
    res = variance_components(y, task, block, rng.integers(0, 3, n), n_boot=n_boot, seed=seed)
    assert (res.sigma2 >= 0).all()
    assert res.share.sum() == pytest.approx(1.0)
    assert 0.0 <= res.infra_share <= 1.0
    if n_boot:
        assert (res.ci_low <= res.ci_high).all()
        assert res.infra_share_ci_low <= res.infra_share_ci_high


# --- drift ----------------------------------------------------------------------------------------


def test_drift_matches_statsmodels_fixed_effects_ols_with_task_clusters():
    run = make_run(seed=10, n_tasks=30)
    y, task, _, _ = _design(run)
    res = drift_test(y, task, run.trials["started_at"])
    t = (run.trials["started_at"] - run.trials["started_at"].min()).dt.total_seconds()
    t = (t / t.max()).to_numpy()
    df = pd.DataFrame({"y": y, "t": t, "task": task})
    fe = sm.OLS.from_formula("y ~ t + C(task)", df).fit()
    assert res.slope == pytest.approx(fe.params["t"], rel=1e-10)
    yd = y - df.groupby("task")["y"].transform("mean")
    td = t - df.groupby("task")["t"].transform("mean")
    within = sm.OLS(yd.to_numpy(), td.to_numpy()).fit(cov_type="cluster", cov_kwds={"groups": task})
    assert res.se == pytest.approx(within.bse[0], rel=1e-10)
    assert res.df == run.n_tasks - 1
    assert res.slope < 0 and res.p < 0.01  # the injected decline over the run
    assert res.ci_low < res.slope < res.ci_high


def test_drift_null_and_degenerate_cases():
    run = make_run(seed=11, block_effects=(0, 0, 0, 0), n_flaky=0, host_effects=(0,) * 4)
    y, task, _, _ = _design(run)
    res = drift_test(y, task, run.trials["started_at"])
    assert res.p > 0.01 and res.ci_low < 0 < res.ci_high
    same = drift_test(y, task, np.zeros(y.size))
    assert math.isnan(same.slope) and same.warnings
    one = drift_test([0.0, 1.0, 1.0], ["a", "a", "a"], [0.0, 1.0, 2.0])
    assert math.isnan(one.se) and math.isnan(one.p) and one.slope == pytest.approx(1.0)


# --- the table-level entry point ----------------------------------------------------------------


def test_time_effects_on_a_trial_table(noisy_run):
    res = time_effects(noisy_run.trials, n_boot=200, seed=0)
    assert res.n_hosts == 4 and res.n_time_blocks == 4
    assert res.n_trials == len(noisy_run.trials)
    blocks = time_blocks(noisy_run.trials["started_at"], 4)
    np.testing.assert_array_equal(blocks, noisy_run.block)  # blocks = the injected rounds
    frame = res.to_frame()
    assert frame["component"].tolist() == list(res.components.components)
    assert frame.loc[frame["infrastructure"], "component"].tolist() == list(INFRA_COMPONENTS)
    assert res.drift.slope < 0 and res.drift.p < 0.01
    assert 0 < res.infra_share < 1
    json.dumps(res.to_dict(), allow_nan=True)  # JSON-ready
    # infra outcomes excluded rather than scored 0: fewer trials, same structure
    excl = time_effects(noisy_run.trials, policy="exclude", n_boot=0)
    assert excl.n_trials < res.n_trials
    with pytest.raises(ValueError, match="one group"):
        time_effects(pd.concat([noisy_run.trials, noisy_run.trials.assign(agent="b")]))


def test_equal_scores_have_no_share_to_split():
    """An agent right every time: no variance, so no share — not 100% of a rounding error."""
    task = np.repeat(np.arange(6), 8)
    block = np.tile(np.arange(4), 12)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no all-NaN quantiles either
        res = variance_components(np.ones(task.size), task, block, n_boot=50)
    assert res.total_variance == 0 and np.isnan(res.infra_share)
    assert np.isnan(res.infra_share_ci_low) and np.isnan(res.infra_share_ci_high)
    assert "every score is equal: there is no variance to split" in res.warnings


# --- the bootstrap at the design cells ----------------------------------------------------------


def _unbalanced(seed, n=400):
    rng = np.random.default_rng(seed)
    task = rng.integers(0, 25, n)
    block = rng.integers(0, 4, n)
    host = rng.integers(0, 3, n)
    y = (rng.random(n) < 0.3 + 0.4 * (task % 2) + 0.05 * block).astype(float)
    factors = {
        "task": task,
        "time_block": block,
        "host": host,
        "task:time_block": pd.factorize(task * 4 + block, sort=True)[0],
    }
    return y, factors


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_reductions_from_cell_sums_equal_those_from_the_trials(seed):
    """Every model's fit is constant within a design cell: the reductions computed from the
    cell sums and Σy² are the ones computed from the trials (unbalanced, with hosts)."""
    from evalnoise.attribution.time_effects import _Henderson

    rng = np.random.default_rng(seed)
    y, factors = _unbalanced(seed)
    hend = _Henderson(factors)
    first, sizes = hend.cells()
    assert sizes.sum() == y.size
    cell = pd.factorize(pd.MultiIndex.from_arrays(list(factors.values())))[0]
    ys = np.column_stack([y, rng.standard_normal((y.size, 3))])
    position = np.empty(first.size, dtype=np.int64)
    position[cell[first]] = np.arange(first.size)  # cell id → its place in hend.cells()
    sums = np.zeros((first.size, ys.shape[1]))
    np.add.at(sums, position[cell], ys)
    np.testing.assert_allclose(
        hend.reduce_cells(sums, (ys**2).sum(axis=0)), hend.reduce(ys), rtol=1e-9, atol=1e-9
    )


def _trial_level_bootstrap(hend, factors, sigma2, a_mat, n_boot, seed):
    """The reference: every trial simulated (y = Σ_f u_f + e), re-estimated on the design."""
    rng = np.random.default_rng(seed)
    codes = list(factors.values())
    sd = np.sqrt(sigma2)
    y = rng.standard_normal((codes[0].size, n_boot)) * sd[-1]
    for c, s in zip(codes, sd[:-1], strict=True):
        y += (rng.standard_normal((int(c.max()) + 1, n_boot)) * s)[c]
    return np.maximum(np.linalg.solve(a_mat, hend.reduce(y)).T, 0.0)


def test_the_cell_bootstrap_has_the_law_of_the_trial_bootstrap():
    """Simulating cell sums and the within-cell χ² gives the estimates the same distribution
    as simulating every trial: two-sample KS per component, 4,000 replicates each."""
    from scipy import stats

    from evalnoise.attribution.time_effects import _bootstrap, _Henderson

    _, factors = _unbalanced(7)
    hend = _Henderson(factors)
    names, a_mat, _ = hend.system()
    sigma2 = np.array([0.04, 0.01, 0.005, 0.02, 0.15])
    assert names == [*factors, "residual"]
    cells = _bootstrap(hend, factors, sigma2, a_mat, 4000, seed=1)
    trials = _trial_level_bootstrap(hend, factors, sigma2, a_mat, 4000, seed=2)
    for i, name in enumerate(names):
        p = stats.ks_2samp(cells[:, i], trials[:, i]).pvalue
        assert p > 0.001, (name, p)
        assert np.mean(cells[:, i]) == pytest.approx(np.mean(trials[:, i]), rel=0.1, abs=1e-3)
