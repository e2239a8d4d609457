"""Time and host as factors: the G study's components, MLS intervals, infra share, drift."""

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
def test_balanced_run_gives_the_textbook_anova(seed):
    run = make_run(seed=seed)
    y, task, block, host = _design(run)
    res = variance_components(y, task, block, host)
    assert res.method == "anova" and res.ci_method == "mls"
    expected = anova_components(balanced_anova(y, run), run)
    assert res.components == ("task", "time_block", "host", "task:time_block", "residual")
    for name, value in expected.items():
        idx = res.components.index(name)
        assert res.sigma2_raw[idx] == pytest.approx(value, rel=1e-9, abs=1e-12), name
    g, b, n, h = run.n_tasks, run.n_blocks, run.per_cell, run.n_hosts
    assert res.df.tolist() == [g - 1, b - 1, h - 1, (g - 1) * (b - 1), g * b * (n - 1) - (h - 1)]
    assert np.all((res.ci_low <= res.sigma2) & (res.sigma2 <= res.ci_high))


def test_labels_and_row_order_do_not_matter():
    run = make_run(seed=2)
    y, task, block, host = _design(run)
    base = variance_components(y, task, block, host)
    perm = np.random.default_rng(0).permutation(y.size)
    names = np.array([f"t{i}" for i in range(run.n_tasks)])[::-1]
    other = variance_components(
        y[perm], names[task][perm], (block * 7 + 1)[perm], np.array(list("wxyz"))[host][perm],
    )  # fmt: skip
    np.testing.assert_allclose(other.sigma2_raw, base.sigma2_raw, rtol=1e-9, atol=1e-13)
    np.testing.assert_allclose(other.ci_high, base.ci_high, rtol=1e-9, atol=1e-13)


# --- recovery of injected components ------------------------------------------------------------


def test_injected_time_flaky_and_host_components_recovered_within_cis():
    """A run with a time effect (+12 … −12 points over 4 blocks), 6 flaky tasks (±30 points
    between halves of the run) and 4 hosts (±6 points): the estimators' targets — the ANOVA
    components of the true success probabilities — lie inside the MLS intervals."""
    run = make_run(seed=3)
    y, task, block, host = _design(run)
    res = variance_components(y, task, block, host)
    truth = true_components(run)
    for name, lo, est, hi in zip(res.components, res.ci_low, res.sigma2, res.ci_high, strict=True):
        assert lo <= truth[name] <= hi, (name, lo, est, truth[name], hi)
        assert lo <= est <= hi
    true_infra = sum(truth[c] for c in INFRA_COMPONENTS) / sum(truth.values())
    assert res.infra_share_ci_low <= true_infra <= res.infra_share_ci_high
    assert res.infra_share_ci_low > 0.0  # the injected time effects are detected
    assert res.infra_detected and res.detected[res.components.index("time_block")]
    assert res.infra_components == INFRA_COMPONENTS
    assert res.share.sum() == pytest.approx(1.0)
    assert res["time_block"] == res.sigma2[1]
    common = variance_components(y, task, block, host, infra_components=("time_block", "host"))
    assert common.infra_share == pytest.approx(res.share[1] + res.share[2])
    with pytest.raises(ValueError, match="unknown"):
        variance_components(y, task, block, infra_components=("residual",))


def test_intervals_cover_the_truth_in_repeated_runs():
    """Coverage over 20 independent runs: the intervals for task, time block, task × block
    and residual are not narrower than they should be."""
    hits = dict.fromkeys(("task", "time_block", "task:time_block", "residual"), 0)
    for seed in range(20):
        run = make_run(seed=100 + seed, n_tasks=40)
        y, task, block, host = _design(run)
        res = variance_components(y, task, block, host)
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
    res = variance_components(y, task, block, host)
    assert res.infra_share_ci_low < 0.01
    assert res.infra_share < 0.05
    assert not res.infra_detected  # nothing to find: reported as not detected


# --- against an independent implementation: statsmodels' REML MixedLM ---------------------------


def _mixedlm(df, vcf, method):
    """statsmodels' REML fit; with several methods, the one of highest likelihood (its
    L-BFGS can stop at a worse point of the restricted likelihood than Nelder–Mead).
    Its dense solver: with one BLAS thread (tests/conftest.py) it beat the sparse one on
    every design here (132 random-effect columns: 2.3 s against 5.3 s of CPU)."""
    df = df.assign(one=1)
    model = sm.MixedLM.from_formula("y ~ 1", groups="one", re_formula="0", vc_formula=vcf, data=df)
    fits = []
    for m in [method] if isinstance(method, str) else method:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fits.append(model.fit(reml=True, method=m, maxiter=5000))
    fit = max(fits, key=lambda f: f.llf)
    return dict(zip(model.exog_vc.names, fit.vcomp, strict=True)) | {"residual": fit.scale}


def test_matches_mixedlm_reml_on_a_balanced_design_with_interaction():
    """Balanced, every estimate positive: ANOVA = REML exactly (Searle et al. 1992 §4.8);
    statsmodels' Nelder–Mead optimum agrees to its own precision."""
    # the precondition of ANOVA = REML: every estimate positive (true for this draw)
    run = make_run(seed=7, n_tasks=16, n_hosts=1, host_effects=(0.0,), n_flaky=4, flaky_effect=0.35)
    y, task, block, _ = _design(run)
    res = variance_components(y, task, block, interaction=True)
    assert (res.sigma2_raw > 0).all()
    df = pd.DataFrame({"y": y, "task": task, "block": block, "cell": task * 4 + block})
    vcf = {"task": "0 + C(task)", "block": "0 + C(block)", "cell": "0 + C(cell)"}
    ref = _mixedlm(df, vcf, "nm")
    names = {"task": "task", "time_block": "block", "task:time_block": "cell"}
    names["residual"] = "residual"
    for ours, theirs in names.items():
        assert res[ours] == pytest.approx(ref[theirs], rel=5e-3, abs=2e-4), ours


def test_matches_mixedlm_reml_with_unbalanced_hosts():
    """Hosts drawn at random per trial (unbalanced): the G study's REML against
    statsmodels' REML."""
    run = make_run(seed=8, n_tasks=30, n_flaky=0)
    rng = np.random.default_rng(8)
    y = run.trials["score"].to_numpy().copy()
    host = rng.integers(0, 3, y.size)
    y = np.where(rng.random(y.size) < 0.15, (host == 0).astype(float), y)  # host-0 bias
    res = variance_components(y, run.task, run.block, host, interaction=False)
    assert res.method == "reml"
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
    one_block = variance_components(y, task, np.zeros_like(block))
    assert one_block.components == ("task", "residual")
    assert any("time_block" in w for w in one_block.warnings)
    confounded = variance_components(y, task, block, host=block, interaction=False)
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
@given(seed=st.integers(0, 10_000))
def test_components_nonnegative_and_shares_sum_to_one(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(20, 120))
    y = (rng.random(n) < rng.random()).astype(float)
    y[:2] = [0.0, 1.0]
    task = rng.integers(0, int(rng.integers(2, 8)), n)
    task[:2] = [0, 1]
    block = rng.integers(0, 4, n)
    res = variance_components(y, task, block, rng.integers(0, 3, n))
    assert (res.sigma2 >= 0).all()
    assert res.share.sum() == pytest.approx(1.0)
    assert 0.0 <= res.infra_share <= 1.0
    assert (res.ci_low <= res.ci_high).all()
    assert 0.0 <= res.infra_share_ci_low <= res.infra_share_ci_high <= 1.0
    # the share rule: detected exactly when the permutation family rejects, and then
    # exactly when one of its components is detected; never a component under a "not
    # detected" share
    assert res.infra_detected == res.permutation.family_detected
    infra = [res.components.index(c) for c in res.infra_components]
    assert res.infra_detected == bool(res.detected[infra].any())
    assert res.infra_pvalue == pytest.approx(res.pvalue[infra].min())
    assert (res.ci_high <= 0.25 + 1e-12).all()  # 0/1 scores: no variance above 0.25


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
    assert res.slope < 0 and res.pvalue < 0.01  # the injected decline over the run
    assert res.ci_low < res.slope < res.ci_high


def test_drift_null_and_degenerate_cases():
    run = make_run(seed=11, block_effects=(0, 0, 0, 0), n_flaky=0, host_effects=(0,) * 4)
    y, task, _, _ = _design(run)
    res = drift_test(y, task, run.trials["started_at"])
    assert res.pvalue > 0.01 and res.ci_low < 0 < res.ci_high
    same = drift_test(y, task, np.zeros(y.size))
    assert math.isnan(same.slope) and same.warnings
    one = drift_test([0.0, 1.0, 1.0], ["a", "a", "a"], [0.0, 1.0, 2.0])
    assert math.isnan(one.se) and math.isnan(one.pvalue) and one.slope == pytest.approx(1.0)


# --- the table-level entry point ----------------------------------------------------------------


def test_time_effects_on_a_trial_table(noisy_run):
    res = time_effects(noisy_run.trials)
    assert res.n_hosts == 4 and res.n_time_blocks == 4
    assert res.n_trials == len(noisy_run.trials)
    blocks = time_blocks(noisy_run.trials["started_at"], 4)
    np.testing.assert_array_equal(blocks, noisy_run.block)  # blocks = the injected rounds
    frame = res.to_frame()
    assert frame["component"].tolist() == list(res.components.components)
    assert frame.loc[frame["infrastructure"], "component"].tolist() == list(INFRA_COMPONENTS)
    assert res.drift.slope < 0 and res.drift.pvalue < 0.01
    assert 0 < res.infra_share < 1
    json.dumps(res.to_dict(), allow_nan=True)  # JSON-ready
    # infra outcomes excluded rather than scored 0: fewer trials, same structure
    excl = time_effects(noisy_run.trials, policy="exclude")
    assert excl.n_trials < res.n_trials
    with pytest.raises(ValueError, match="one group"):
        time_effects(pd.concat([noisy_run.trials, noisy_run.trials.assign(agent="b")]))


def test_equal_scores_have_no_share_to_split():
    """An agent right every time: no variance, so no share — not 100% of a rounding error."""
    task = np.repeat(np.arange(6), 8)
    block = np.tile(np.arange(4), 12)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no all-NaN quantiles either
        res = variance_components(np.ones(task.size), task, block)
    assert res.total_variance == 0 and np.isnan(res.infra_share)
    assert np.isnan(res.infra_share_ci_low) and np.isnan(res.infra_share_ci_high)
    assert "every score is equal: there is no variance to split" in res.warnings


# --- the estimators work at the design cells ----------------------------------------------------


def _unbalanced(seed, n=400):
    rng = np.random.default_rng(seed)
    task = rng.integers(0, 25, n)
    block = rng.integers(0, 4, n)
    host = rng.integers(0, 3, n)
    y = (rng.random(n) < 0.3 + 0.4 * (task % 2) + 0.05 * block).astype(float)
    return y, task, block, host


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_reductions_from_cell_sums_equal_those_from_the_trials(seed):
    """Every model's fit is constant within a design cell: the Henderson III mean squares the
    engine computes from the cell sums are the reductions in residual sum of squares of
    ordinary least squares fits to the trials (unbalanced, with hosts), each effect added to
    the model of every effect that does not contain it."""
    y, task, block, host = _unbalanced(seed)
    res = variance_components(y, task, block, host)
    df = pd.DataFrame({"y": y, "t": task, "b": block, "h": host})

    def rss(formula):
        return sm.OLS.from_formula(formula, df).fit().ssr

    terms = {
        "task": ("C(b) + C(h)", "C(t) + C(b) + C(h)"),
        "time_block": ("C(t) + C(h)", "C(t) + C(b) + C(h)"),
        "host": ("C(t) * C(b)", "C(t) * C(b) + C(h)"),
        "task:time_block": ("C(t) + C(b) + C(h)", "C(t) * C(b) + C(h)"),
    }
    g = res.gstudy
    for name, (small, big) in terms.items():
        i = res.components.index(name)
        reduction = rss("y ~ " + small) - rss("y ~ " + big)
        assert g.ms[i] * g.df[i] == pytest.approx(reduction, rel=1e-9, abs=1e-9), name
    full = sm.OLS.from_formula("y ~ C(t) * C(b) + C(h)", df).fit()
    assert g.ms[-1] * g.df[-1] == pytest.approx(full.ssr, rel=1e-9)
    assert g.df[-1] == full.df_resid


def test_reml_at_the_cells_equals_reml_on_the_trials():
    """The restricted likelihood of the trials is that of the cell means and the within-cell
    sum of squares: the engine's REML (at the cells) is statsmodels' REML on the trials."""
    y, task, block, host = _unbalanced(7)
    y = y + np.random.default_rng(7).normal(0, 0.3, y.size)  # continuous: no ties at 0
    res = variance_components(y, task, block, host)
    df = pd.DataFrame({"y": y, "task": task, "block": block, "host": host})
    df["cell"] = df["task"] * 4 + df["block"]
    vcf = {"task": "0 + C(task)", "block": "0 + C(block)", "host": "0 + C(host)",
           "cell": "0 + C(cell)"}  # fmt: skip
    # Nelder-Mead alone: it had the highest restricted likelihood of statsmodels' L-BFGS
    # (unconverged, -316.36), Nelder-Mead (-313.11137) and Powell (-313.11148) on this draw
    ref = _mixedlm(df, vcf, "nm")
    names = {"task": "task", "time_block": "block", "host": "host", "task:time_block": "cell"}
    for ours, theirs in names.items():
        assert res[ours] == pytest.approx(ref[theirs], rel=2e-3, abs=2e-4), ours
    assert res["residual"] == pytest.approx(ref["residual"], rel=1e-3)
