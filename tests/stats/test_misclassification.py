"""rogan_gladen(), ppi_mean(), corrected_accuracy(): closed forms, simulations with known truth."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalnoise.stats.misclassification import corrected_accuracy, ppi_mean, rogan_gladen


def _iid(rng, n=2000, n_labelled=300, p=0.4, se=0.85, sp=0.9):
    """Truth y, judge f with sensitivity se and specificity sp, a random labelled subset."""
    y = (rng.random(n) < p).astype(float)
    f = np.where(y == 1, rng.random(n) < se, rng.random(n) >= sp).astype(float)
    ref = np.full(n, np.nan)
    idx = rng.choice(n, n_labelled, replace=False)
    ref[idx] = y[idx]
    return f, ref, y


def _clustered(rng, n_tasks=150, trials=10, n_labelled=400, se=0.85, sp=0.9):
    """Task success rates ~ Beta(0.5, 0.5) (mean 0.5, strong clustering)."""
    tasks = np.repeat(np.arange(n_tasks), trials)
    y = (rng.random(tasks.size) < rng.beta(0.5, 0.5, n_tasks)[tasks]).astype(float)
    f = np.where(y == 1, rng.random(tasks.size) < se, rng.random(tasks.size) >= sp).astype(float)
    ref = np.full(tasks.size, np.nan)
    idx = rng.choice(tasks.size, n_labelled, replace=False)
    ref[idx] = y[idx]
    return f, ref, tasks


# --- closed forms ------------------------------------------------------------------------


def test_rogan_gladen_matches_greenland_formula():
    rng = np.random.default_rng(0)
    f, ref, _ = _iid(rng)
    res = rogan_gladen(f, ref)
    lab = np.isfinite(ref)
    q = f[~lab].mean()
    se = f[lab & (ref == 1)].mean()
    sp = 1 - f[lab & (ref == 0)].mean()
    j = se + sp - 1
    p = (q + sp - 1) / j
    n_u, m1, m0 = (~lab).sum(), (ref == 1).sum(), (ref == 0).sum()
    var = (q * (1 - q) / n_u + p**2 * se * (1 - se) / m1 + (1 - p) ** 2 * sp * (1 - sp) / m0) / j**2
    assert res.estimate == pytest.approx(p, rel=1e-12)
    assert res.se == pytest.approx(np.sqrt(var), rel=1e-10)
    assert (res.sensitivity, res.specificity, res.youden) == pytest.approx((se, sp, j))
    assert res.ci_low == pytest.approx(p - 1.959963984540054 * np.sqrt(var), rel=1e-9)
    assert (res.n_unlabelled, res.n_labelled) == (1700, 300)


def test_ppi_matches_angelopoulos_formula():
    rng = np.random.default_rng(1)
    f, ref, _ = _iid(rng)
    res = ppi_mean(f, ref)
    lab = np.isfinite(ref)
    fu, fl, yl = f[~lab], f[lab], ref[lab]
    theta = fu.mean() - (fl - yl).mean()
    var = fu.var(ddof=1) / fu.size + (fl - yl).var(ddof=1) / fl.size
    assert res.estimate == pytest.approx(theta, rel=1e-12)
    assert res.se == pytest.approx(np.sqrt(var), rel=1e-12)
    assert res.rectifier == pytest.approx((fl - yl).mean())
    assert res.classical == pytest.approx(yl.mean())
    assert res.lam == 1.0


def test_perfect_judge():
    rng = np.random.default_rng(2)
    _, ref, y = _iid(rng)
    rg, pp = rogan_gladen(y, ref), ppi_mean(y, ref)
    q = y[~np.isfinite(ref)].mean()
    assert rg.estimate == pytest.approx(q) and pp.estimate == pytest.approx(q)
    assert (rg.sensitivity, rg.specificity) == (1.0, 1.0)
    n_u = int((~np.isfinite(ref)).sum())
    assert pp.se == pytest.approx(np.sqrt(y[~np.isfinite(ref)].var(ddof=1) / n_u))
    assert rg.se == pytest.approx(np.sqrt(q * (1 - q) / n_u))


def test_clustered_se_with_singleton_tasks_is_iid_times_cr1():
    rng = np.random.default_rng(3)
    f, ref, _ = _iid(rng, n=500, n_labelled=120)
    ids = np.arange(f.size)
    n = f.size
    iid, clu = rogan_gladen(f, ref), rogan_gladen(f, ref, tasks=ids)
    assert clu.se == pytest.approx(iid.se * np.sqrt(n / (n - 1)), rel=1e-10)
    assert clu.n_tasks == n


# --- simulations with known truth (fixed seeds) -------------------------------------------


def test_iid_coverage_and_bias():
    rng = np.random.default_rng(2024)
    reps, truth = 500, 0.4
    est = np.empty((reps, 2))
    cover = np.zeros(2)
    for r in range(reps):
        f, ref, _ = _iid(rng)
        for i, res in enumerate((rogan_gladen(f, ref), ppi_mean(f, ref))):
            est[r, i] = res.estimate
            cover[i] += res.ci_low <= truth <= res.ci_high
    cover /= reps
    # Measured: RG 0.948, PPI 0.942; both means within 0.001 of the truth.
    assert np.all((cover >= 0.92) & (cover <= 0.98)), cover
    bias = est.mean(axis=0) - truth
    mc_se = est.std(axis=0, ddof=1) / np.sqrt(reps)
    assert np.all(np.abs(bias) < 3 * mc_se + 1e-3), (bias, mc_se)


def test_clustered_coverage_needs_tasks():
    rng = np.random.default_rng(7)
    reps, truth = 400, 0.5
    cover = np.zeros(4)
    for _ in range(reps):
        f, ref, tasks = _clustered(rng)
        res = (
            rogan_gladen(f, ref),
            rogan_gladen(f, ref, tasks=tasks),
            ppi_mean(f, ref),
            ppi_mean(f, ref, tasks=tasks),
        )
        cover += [r.ci_low <= truth <= r.ci_high for r in res]
    cover /= reps
    # Measured: clustered RG 0.958, PPI 0.948; trials as independent RG 0.843, PPI 0.793.
    assert 0.92 <= cover[1] <= 0.98 and 0.92 <= cover[3] <= 0.98, cover
    assert cover[0] < 0.91 and cover[2] < 0.91, cover


def test_lenient_judge_is_corrected():
    rng = np.random.default_rng(11)
    f, ref, _ = _iid(rng, n=20000, n_labelled=2000, p=0.3, se=0.95, sp=0.7)
    naive = f.mean()  # ≈ 0.3·0.95 + 0.7·0.3 = 0.495
    assert naive == pytest.approx(0.495, abs=0.015)
    for res in (rogan_gladen(f, ref), ppi_mean(f, ref)):
        assert res.ci_low <= 0.3 <= res.ci_high
        assert abs(res.estimate - 0.3) < 0.02


def test_selection_on_reference_label():
    """Docstring claim: labelled trials chosen by their reference label (here: half TRUE,
    half FALSE although p = 0.2) leave Rogan–Gladen unbiased for the unlabelled trials'
    accuracy, and bias PPI."""
    rng = np.random.default_rng(12)
    rg_err, pp_err = [], []
    for _ in range(200):
        y = (rng.random(3000) < 0.2).astype(float)
        f = np.where(y == 1, rng.random(3000) < 0.8, rng.random(3000) >= 0.9).astype(float)
        ref = np.full(3000, np.nan)
        pos = rng.choice(np.flatnonzero(y == 1), 150, replace=False)
        neg = rng.choice(np.flatnonzero(y == 0), 150, replace=False)
        ref[pos], ref[neg] = 1.0, 0.0
        truth_u = y[np.isnan(ref)].mean()  # ≈ 0.167: the labelling removed many positives
        rg_err.append(rogan_gladen(f, ref).estimate - truth_u)
        pp_err.append(ppi_mean(f, ref).estimate - truth_u)
    assert abs(np.mean(rg_err)) < 0.005
    assert np.mean(pp_err) > 0.05  # ≈ 0.267 − 0.167


def test_power_tuning():
    rng = np.random.default_rng(13)
    f, ref, _ = _iid(rng)
    tuned = ppi_mean(f, ref, power_tuning=True)
    assert 0.0 < tuned.lam <= 1.0
    assert abs(tuned.estimate - 0.4) < 0.08
    # A judge unrelated to the truth gets λ ≈ 0 and PPI++ ≈ the labelled mean.
    noise = (rng.random(f.size) < 0.5).astype(float)
    useless = ppi_mean(noise, ref, power_tuning=True)
    assert useless.lam < 0.2
    assert useless.se < ppi_mean(noise, ref).se
    assert useless.se == pytest.approx(useless.classical_se, rel=0.15)


# --- degenerate inputs -----------------------------------------------------------------


def test_chance_judge_is_undefined():
    f = np.array([1, 0, 1, 0, 1, 0, 1, 0], dtype=float)
    ref = np.array([1, 1, 0, 0, np.nan, np.nan, np.nan, np.nan])
    res = rogan_gladen(f, ref)
    assert res.youden == 0.0
    assert np.isnan(res.estimate) and np.isnan(res.ci_low)
    assert any("no better than chance" in w for w in res.warnings)


def test_truncation():
    # Labelled: Se = 0.9, Sp = 0.9; unlabelled judge mean 0.05 < 1 − Sp → raw estimate < 0.
    f_l = np.array([1] * 9 + [0] + [0] * 9 + [1], dtype=float)
    ref_l = np.array([1] * 10 + [0] * 10, dtype=float)
    f_u = np.array([1] + [0] * 19, dtype=float)
    f = np.concatenate([f_l, f_u])
    ref = np.concatenate([ref_l, np.full(20, np.nan)])
    res = rogan_gladen(f, ref)
    assert res.estimate_raw == pytest.approx((0.05 + 0.9 - 1) / 0.8)
    assert res.estimate == 0.0 and res.truncated
    assert res.ci_low == 0.0 and res.ci_high > 0.0
    assert any("truncated" in w for w in res.warnings)


def test_missing_and_invalid():
    f = np.array([1, 0, np.nan, 1, 0, 1], dtype=float)
    ref = np.array([1, 0, 1, np.nan, np.nan, np.nan])
    res = ppi_mean(f, ref)
    assert (res.n_labelled, res.n_unlabelled) == (2, 3)
    assert any("without a judge score" in w for w in res.warnings)
    with pytest.raises(ValueError, match="0/1"):
        rogan_gladen([0.5, 1], [1, 0])
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        ppi_mean([1.5, 1], [1, 0])
    all_labelled = rogan_gladen([1, 0], [1, 0])
    assert np.isnan(all_labelled.estimate)
    with pytest.raises(ValueError, match="tasks must not be missing"):
        ppi_mean([1, 0, 1], [1, np.nan, 0], tasks=[1, None, 2])


def test_unscored_trials_do_not_count_as_clusters():
    rng = np.random.default_rng(15)
    f, ref, tasks = _clustered(rng, n_tasks=30, trials=5, n_labelled=40)
    extra_f = np.append(f, np.nan)  # an unscored trial of a task seen nowhere else
    extra_ref, extra_t = np.append(ref, np.nan), np.append(tasks, 999)
    for fn in (rogan_gladen, ppi_mean):
        a, b = fn(f, ref, tasks=tasks), fn(extra_f, extra_ref, tasks=extra_t)
        assert (a.se, a.n_tasks) == (b.se, b.n_tasks)


def test_corrected_accuracy_bundle():
    rng = np.random.default_rng(14)
    f, ref, tasks = _clustered(rng, n_tasks=40, trials=5, n_labelled=60)
    res = corrected_accuracy(f, ref, tasks=tasks)
    assert res.naive == pytest.approx(f.mean())
    assert res.reference_mean == pytest.approx(np.nanmean(ref))
    assert res.rogan_gladen == rogan_gladen(f, ref, tasks=tasks)
    assert res.ppi == ppi_mean(f, ref, tasks=tasks)
    d = json.loads(json.dumps(res.to_dict()))
    assert set(d) >= {"rogan_gladen", "ppi", "naive"}
    # Partial credit: RG does not apply.
    with pytest.warns(RuntimeWarning, match="not all 0/1"):
        part = corrected_accuracy(np.clip(f * 0.9 + 0.05, 0, 1), ref)
    assert np.isnan(part.rogan_gladen.estimate) and np.isfinite(part.ppi.estimate)


# --- properties --------------------------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(st.booleans(), st.sampled_from([0.0, 1.0, np.nan])), min_size=2, max_size=60)
)
def test_estimates_and_intervals_in_unit_interval(rows):
    f, ref = (np.array(v, dtype=float) for v in zip(*rows, strict=True))
    for res in (rogan_gladen(f, ref), ppi_mean(f, ref), ppi_mean(f, ref, power_tuning=True)):
        if np.isfinite(res.estimate):
            assert 0.0 <= res.ci_low <= res.estimate <= res.ci_high <= 1.0
            assert res.truncated == (not 0.0 <= res.estimate_raw <= 1.0)
