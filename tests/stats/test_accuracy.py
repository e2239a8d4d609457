"""accuracy(): naive and task-clustered intervals against references."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from evalnoise.stats.accuracy import accuracy
from evalnoise.stats.icc import icc_oneway
from evalnoise.stats.paired import paired_difference


def _scores_for(rng, tasks, n_tasks, binary):
    """Beta(0.7, 0.7) task rates; 0/1 scores, or the rate plus noise clipped to [0, 1]."""
    p = rng.beta(0.7, 0.7, n_tasks)[tasks]
    scores = (rng.random(tasks.size) < p).astype(float)
    if not binary:
        scores = np.clip(p + rng.normal(0, 0.2, tasks.size), 0, 1)
    order = rng.permutation(tasks.size)
    # String labels, shuffled rows: the estimator must not depend on either.
    return scores[order], np.array([f"task-{t}" for t in tasks])[order]


def _unbalanced(rng, n_tasks=30, binary=True):
    trials = rng.integers(1, 9, n_tasks)
    return _scores_for(rng, np.repeat(np.arange(n_tasks), trials), n_tasks, binary)


def _statsmodels_cluster(scores, tasks, use_t=False):
    codes = pd.factorize(tasks)[0]
    return sm.OLS(scores, np.ones_like(scores)).fit(
        cov_type="cluster", cov_kwds={"groups": codes}, use_t=use_t
    )


def _statsmodels_cluster_wls(scores, tasks, use_t=False):
    """Intercept-only WLS with weights 1/T_g: its estimate is the mean of the task means."""
    codes = pd.factorize(tasks)[0]
    weights = 1.0 / np.bincount(codes)[codes]
    return sm.WLS(scores, np.ones_like(scores), weights=weights).fit(
        cov_type="cluster", cov_kwds={"groups": codes}, use_t=use_t
    )


def _task_means(scores, tasks):
    codes = pd.factorize(tasks)[0]
    return np.bincount(codes, weights=scores) / np.bincount(codes)


def _balanced(rng, n_tasks=30, trials=5, binary=True):
    return _scores_for(rng, np.repeat(np.arange(n_tasks), trials), n_tasks, binary)


def _inspect_ai_loop(scores, tasks):
    """inspect_ai's _clustered_stderr, written as its loop over clusters and outer products."""
    mean = scores.mean()
    total = 0.0
    labels = np.unique(tasks)
    for label in labels:
        d = scores[tasks == label] - mean
        total += np.outer(d, d).sum()
    return np.sqrt(total * len(labels) / (len(labels) - 1)) / scores.size


def test_naive_se_is_paper_eq3_for_binary():
    y = np.array([1, 1, 0, 1, 0, 0, 1, 1, 1, 0], dtype=float)
    tasks = np.repeat(np.arange(5), 2)
    res = accuracy(y, tasks)
    p, n = y.mean(), y.size
    assert res.se_naive == pytest.approx(np.sqrt(p * (1 - p) / n), rel=1e-12)
    z = stats.norm.ppf(0.975)
    assert res.ci_naive_low == pytest.approx(p - z * res.se_naive, rel=1e-12)
    assert res.ci_naive_high == pytest.approx(p + z * res.se_naive, rel=1e-12)
    assert (res.mean, res.n_obs, res.n_tasks) == (p, 10, 5)


def test_naive_se_partial_credit_uses_population_sd():
    rng = np.random.default_rng(0)
    y = rng.random(37)
    tasks = rng.integers(0, 6, 37)
    # 37 trials over 6 tasks cannot be balanced: eq. 3 about the pooled mean is
    # se_naive_pooled; se_naive is the same population SD with every task weighing equally.
    res = accuracy(y, tasks)
    assert res.se_naive_pooled == pytest.approx(np.std(y) / np.sqrt(37), rel=1e-12)
    counts = np.bincount(tasks)
    w = (37 / (counts.size * counts))[tasks]
    mu = _task_means(y, tasks).mean()
    assert res.mean == pytest.approx(mu, rel=1e-12)
    assert res.se_naive == pytest.approx(np.sqrt(np.sum(w * (y - mu) ** 2) / 37**2), rel=1e-12)
    # Balanced: both are np.std(y) / sqrt(N), exactly.
    tasks = np.repeat(np.arange(6), 6)
    y = rng.random(36)
    res = accuracy(y, tasks)
    assert res.se_naive == res.se_naive_pooled == pytest.approx(np.std(y) / 6, rel=1e-12)


def test_naive_se_binary_unbalanced_is_eq3_on_the_mean_of_task_means():
    rng = np.random.default_rng(10)
    y, tasks = _unbalanced(rng)
    res = accuracy(y, tasks)
    mu = _task_means(y, tasks).mean()
    assert res.se_naive == pytest.approx(np.sqrt(mu * (1 - mu) / y.size), rel=1e-12)
    p = y.mean()
    assert res.se_naive_pooled == pytest.approx(np.sqrt(p * (1 - p) / y.size), rel=1e-12)


@pytest.mark.parametrize("binary", [True, False])
def test_cr1_matches_statsmodels_cluster_ols(binary):
    # Balanced: the mean of task means is the pooled mean, and CR1 is OLS's clustered SE.
    rng = np.random.default_rng(1 if binary else 2)
    y, tasks = _balanced(rng, binary=binary)
    ref = _statsmodels_cluster(y, tasks)
    res = accuracy(y, tasks)
    # statsmodels' factor G/(G−1)·(N−1)/(N−K) is exactly CR1's G/(G−1) with K = 1.
    assert res.mean == res.mean_pooled == pytest.approx(ref.params[0], rel=1e-12)
    assert res.se_clustered == pytest.approx(ref.bse[0], rel=1e-10)
    low, high = ref.conf_int(0.05)[0]
    assert (res.ci_low, res.ci_high) == pytest.approx((low, high), rel=1e-10)
    assert res.se_clustered == pytest.approx(_inspect_ai_loop(y, tasks), rel=1e-10)


@pytest.mark.parametrize("binary", [True, False])
def test_cr1_unbalanced_matches_statsmodels_and_task_mean_references(binary):
    rng = np.random.default_rng(1 if binary else 2)
    y, tasks = _unbalanced(rng, binary=binary)
    res = accuracy(y, tasks)
    means = _task_means(y, tasks)
    g = means.size
    # 1. the estimand: the mean of the task means; the pooled mean (eq. 2) kept apart.
    assert res.mean == pytest.approx(means.mean(), rel=1e-12)
    assert res.mean_pooled == pytest.approx(y.mean(), rel=1e-12)
    assert res.mean_pooled == pytest.approx(_statsmodels_cluster(y, tasks).params[0])
    # 2. by hand: the SE of a mean of G independent task means (inspect_ai's stderr()).
    by_hand = np.sqrt(np.sum((means - means.mean()) ** 2) / (g * (g - 1)))
    assert res.se_clustered == pytest.approx(by_hand, rel=1e-12)
    assert res.se_clustered == pytest.approx(np.std(means, ddof=1) / np.sqrt(g), rel=1e-12)
    # 3. statsmodels OLS of the task means on a constant (classical SE).
    ols = sm.OLS(means, np.ones(g)).fit()
    assert res.se_clustered == pytest.approx(ols.bse[0], rel=1e-10)
    # 4. statsmodels trial-level WLS (weights 1/T_g) with task-clustered CR1 covariance.
    wls = _statsmodels_cluster_wls(y, tasks)
    assert res.mean == pytest.approx(wls.params[0], rel=1e-12)
    assert res.se_clustered == pytest.approx(wls.bse[0], rel=1e-10)
    low, high = wls.conf_int(0.05)[0]
    assert (res.ci_low, res.ci_high) == pytest.approx((low, high), rel=1e-10)
    assert res.ci_method == "clustered"
    # 5. the paper's between-query SE (eq. 11), as icc_oneway computes it, on any design.
    assert res.se_clustered == pytest.approx(icc_oneway(y, tasks).between_query_se, rel=1e-12)


def test_t_quantile_matches_statsmodels_use_t():
    # Unbalanced: the reference is the weighted (1/T_g) regression, whose estimate is the
    # mean of task means (for a balanced design it is the OLS one; see above).
    rng = np.random.default_rng(3)
    y, tasks = _unbalanced(rng, n_tasks=12)
    ref = _statsmodels_cluster_wls(y, tasks, use_t=True)
    res = accuracy(y, tasks, quantile="t", confidence=0.9)
    low, high = ref.conf_int(0.1)[0]
    assert (res.ci_low, res.ci_high) == pytest.approx((low, high), rel=1e-10)
    assert res.df == 11
    means = _task_means(y, tasks)
    ols = sm.OLS(means, np.ones(means.size)).fit()
    assert (res.ci_low, res.ci_high) == pytest.approx(tuple(ols.conf_int(0.1)[0]), rel=1e-10)


def test_miller_is_uncorrected_cr1():
    rng = np.random.default_rng(4)
    y, tasks = _unbalanced(rng, n_tasks=9)
    g = np.unique(tasks).size
    cr1 = accuracy(y, tasks).se_clustered
    miller = accuracy(y, tasks, cluster_se="miller")
    assert miller.se_clustered == pytest.approx(cr1 * np.sqrt((g - 1) / g), rel=1e-12)
    # Unbalanced: Miller's SE_CLT on the G task means (population SD), = HC0 on them.
    means = _task_means(y, tasks)
    assert miller.se_clustered == pytest.approx(np.std(means) / np.sqrt(g), rel=1e-12)
    hc0 = sm.OLS(means, np.ones(g)).fit(cov_type="HC0")
    assert miller.se_clustered == pytest.approx(hc0.bse[0], rel=1e-10)
    # Balanced: Miller (2024) eq. 4 on the trials,
    # SE_CLT² + (1/n²) Σ_c Σ_i Σ_{j≠i} (s_i − s̄)(s_j − s̄).
    y, tasks = _balanced(rng, n_tasks=9, trials=4)
    miller = accuracy(y, tasks, cluster_se="miller")
    d = y - y.mean()
    cross = sum(
        np.outer(d[tasks == t], d[tasks == t]).sum() - (d[tasks == t] ** 2).sum()
        for t in np.unique(tasks)
    )
    direct = np.sqrt(np.var(y) / y.size + cross / y.size**2)
    assert miller.se_clustered == pytest.approx(direct, rel=1e-12)


def test_identical_epochs_design_effect():
    # Every epoch repeats the first: the extra rows carry no information, DEFF = nK/(n − 1).
    rng = np.random.default_rng(5)
    n_items, k = 50, 5
    first = rng.integers(0, 2, n_items).astype(float)
    res = accuracy(np.repeat(first, k), np.repeat(np.arange(n_items), k))
    assert res.design_effect == pytest.approx(n_items * k / (n_items - 1), rel=1e-12)
    single = accuracy(first, np.arange(n_items))
    assert res.se_clustered == pytest.approx(single.se_clustered, rel=1e-12)


def test_balanced_cr1_equals_between_query_se_and_t_ci():
    rng = np.random.default_rng(6)
    n_tasks, trials = 26, 64
    p = rng.beta(0.3, 2.0, n_tasks)
    y = (rng.random((n_tasks, trials)) < p[:, None]).astype(float).ravel()
    tasks = np.repeat(np.arange(n_tasks), trials)
    acc = accuracy(y, tasks, quantile="t")
    icc = icc_oneway(y, tasks)
    assert acc.se_clustered == pytest.approx(icc.between_query_se, rel=1e-12)
    half = stats.t.ppf(0.975, n_tasks - 1) * icc.between_query_se
    assert (acc.ci_low, acc.ci_high) == pytest.approx((acc.mean - half, acc.mean + half))


@pytest.mark.parametrize(
    ("acc", "between_var", "n", "low", "high"),
    [
        # Mustahsan et al., Table 2 (GAIA levels), Table 3 (FRAMES) and Table 5 (GAIA).
        # 17 of the 21 rows fit; four are internally inconsistent in the paper (GAIA L1
        # GPT-5, FRAMES Qwen and DeepSeek, GAIA Gemini: no variance reproduces them).
        (22.7, 0.100, 53, 14.0, 31.4),
        (54.2, 0.187, 86, 44.9, 63.5),
        (6.6, 0.019, 26, 1.0, 12.2),
        (44.2, 0.160, 26, 28.1, 60.4),
        (77.31, 0.088, 50, 68.86, 85.77),
        (38.16, 0.171, 50, 26.40, 49.91),
        (59.44, 0.183, 50, 47.28, 71.60),
    ],
)
def test_paper_tables_use_t_interval_on_task_means(acc, between_var, n, low, high):
    # The paper's CIs are mean ± t_{n−1}·sqrt(s²(task means)/n): the clustered CI with
    # quantile="t" (balanced case, see the test above). Its rounded table entries allow
    # ~0.1 point of slack.
    half = 100 * stats.t.ppf(0.975, n - 1) * np.sqrt(between_var / n)
    assert acc - half == pytest.approx(low, abs=0.15)
    assert acc + half == pytest.approx(high, abs=0.15)


def test_one_task_gives_nan_with_reason():
    res = accuracy(np.array([1.0, 0.0, 1.0]), np.array(["a", "a", "a"]))
    assert res.mean == pytest.approx(2 / 3)
    assert np.isnan(res.se_clustered) and np.isnan(res.ci_low) and np.isnan(res.design_effect)
    assert np.isfinite(res.se_naive)
    assert any("one task" in w for w in res.warnings)


def test_all_equal_scores():
    res = accuracy(np.ones(12), np.repeat(np.arange(4), 3))
    assert res.mean == 1.0
    assert res.se_naive == 0.0 and res.se_clustered == 0.0
    # Not the point [1, 1]: the Wilson interval on n_eff = G = 4 tasks.
    low, high = proportion_confint(4, 4, alpha=0.05, method="wilson")
    assert (res.ci_low, res.ci_high) == pytest.approx((low, high), abs=1e-12)
    assert res.ci_high == 1.0 and res.ci_low < 1.0
    assert res.ci_method == "wilson_effective_n"
    assert (res.ci_naive_low, res.ci_naive_high) == (1.0, 1.0)  # eq. 4 as printed
    assert np.isnan(res.design_effect)
    assert any("every score is equal" in w for w in res.warnings)
    assert any("n_eff = G = 4" in w for w in res.warnings)
    # Values that do not sum exactly in floating point must give exact zeros too.
    res = accuracy(np.full(9, 0.1), np.repeat(np.arange(3), 3))
    assert res.se_naive == 0.0 and res.se_clustered == 0.0


def test_empty_input():
    res = accuracy(np.array([]), np.array([]))
    assert res.n_obs == 0 and np.isnan(res.mean) and res.warnings


@pytest.mark.parametrize(
    "kwargs",
    [{"confidence": 1.0}, {"confidence": 0.0}, {"cluster_se": "cr2"}, {"quantile": "z"}],
)
def test_rejects_bad_options(kwargs):
    with pytest.raises(ValueError):
        accuracy(np.array([1.0, 0.0]), np.array([0, 1]), **kwargs)


def test_gpqa_excerpt_matches_statsmodels(gpqa_excerpt):
    for _, df in gpqa_excerpt.groupby("model_id"):
        y, items = df["score"].to_numpy(), df["item_id"].to_numpy()
        ref = _statsmodels_cluster(y, items)
        res = accuracy(y, items)
        assert res.n_tasks == 40 and res.n_obs == 200
        assert res.se_clustered == pytest.approx(ref.bse[0], rel=1e-10)
        assert res.design_effect > 1  # epochs of one item are positively correlated


def test_gpqa_full_matches_evalconfidence_and_statsmodels(gpqa_full):
    for model, df in gpqa_full.groupby("model_id"):
        y, items = df["score"].to_numpy(), df["item_id"].to_numpy()
        ref = _statsmodels_cluster(y, items, use_t=True)
        res = accuracy(y, items, quantile="t")
        assert res.n_tasks == 198 and res.n_obs == 990
        assert res.se_clustered == pytest.approx(ref.bse[0], rel=1e-10)
        assert (res.ci_low, res.ci_high) == pytest.approx(tuple(ref.conf_int(0.05)[0]))
        if "gpt-5-nano" in model:
            # Published by evalconfidence's demo notebook (standard_error(nano)): mean
            # 0.6758, cluster-robust SE 0.0276, 95% CI [0.6213, 0.7302] with t on G − 1 df,
            # design effect 3.44 against an n − 1 naive variance (ours uses n, so it is
            # larger by 990/989).
            assert res.mean == pytest.approx(0.6758, abs=5e-5)
            assert res.se_clustered == pytest.approx(0.0276, abs=5e-5)
            assert res.ci_low == pytest.approx(0.6213, abs=5e-5)
            assert res.ci_high == pytest.approx(0.7302, abs=5e-5)
            assert res.design_effect * 989 / 990 == pytest.approx(3.44, abs=5e-3)


@st.composite
def _designs(draw):
    n_tasks = draw(st.integers(1, 6))
    trials = draw(st.lists(st.integers(1, 5), min_size=n_tasks, max_size=n_tasks))
    n = sum(trials)
    binary = draw(st.booleans())
    elem = st.sampled_from([0.0, 1.0]) if binary else st.sampled_from([0.0, 0.25, 0.5, 1.0])
    scores = np.array(draw(st.lists(elem, min_size=n, max_size=n)))
    tasks = np.repeat(np.arange(n_tasks), trials)
    perm = np.array(draw(st.permutations(range(n))), dtype=int)
    return scores, tasks, perm


@settings(max_examples=60, deadline=None)
@given(_designs())
def test_properties(design):
    scores, tasks, perm = design
    res = accuracy(scores, tasks)
    relabelled = np.array([f"t{97 - t}" for t in tasks])
    other = accuracy(scores[perm], relabelled[perm])
    for name in ("mean", "se_naive", "se_clustered", "design_effect", "ci_low", "ci_high"):
        a, b = getattr(res, name), getattr(other, name)
        assert (np.isnan(a) and np.isnan(b)) or a == pytest.approx(b, rel=1e-9, abs=1e-12)
    assert res.se_naive >= 0
    if np.isfinite(res.design_effect):
        assert res.design_effect >= 0
    if np.isfinite(res.se_clustered):
        assert res.se_clustered >= 0
        assert res.ci_low <= res.mean <= res.ci_high


def test_intervals_are_truncated_to_the_unit_interval_with_a_warning():
    # 3 tasks, accuracy near 1: the clustered normal interval would pass 100 %
    scores = np.array([1, 1, 1, 1, 1, 1, 1, 0], dtype=float)
    tasks = np.array(["a", "a", "b", "b", "c", "c", "c", "c"])
    res = accuracy(scores, tasks)
    raw_high = res.mean + 1.959963984540054 * res.se_clustered
    assert raw_high > 1.0
    assert res.ci_high == 1.0 and 0.0 <= res.ci_low < res.mean
    assert res.ci_naive_high == 1.0
    assert any("truncated" in w for w in res.warnings)
    inside = accuracy(np.array([0, 1, 1, 0, 1, 0], dtype=float), np.array(list("aabbcc")))
    assert not any("truncated" in w for w in inside.warnings)


# --- The headline estimand: the mean of task means ----------------------------------------


def test_balanced_designs_give_identical_mean_and_naive_se(gpqa_excerpt):
    # Balanced: every weight N/(G·T_g) is exactly 1, so the task-mean estimator and its naive
    # SE are the pooled ones bit for bit (the reference tests above pin the values).
    for _, df in gpqa_excerpt.groupby("model_id"):
        res = accuracy(df["score"].to_numpy(), df["item_id"].to_numpy())
        assert res.mean == res.mean_pooled
        assert res.se_naive == res.se_naive_pooled
    rng = np.random.default_rng(11)
    y, tasks = _balanced(rng, n_tasks=17, trials=7, binary=False)
    res = accuracy(y, tasks)
    assert res.mean == res.mean_pooled == pytest.approx(y.mean(), rel=1e-12)
    assert res.se_naive == res.se_naive_pooled == np.sqrt(np.var(y) / y.size)


def test_inspect_style_log_with_excluded_errors():
    # 5 samples × 4 epochs, 5 trials lost to infrastructure errors: T_g = 3, 4, 2, 3, 3 and
    # 1, 1, 1, 0, 0 correct. Inspect reduces epochs per sample (mean) and averages samples:
    # 0.2167; the pooled eq. 2 gives 3/15 = 0.200 — the two numbers seen on a real log.
    tasks = np.repeat(list("abcde"), [3, 4, 2, 3, 3])
    y = np.array([1, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0], dtype=float)
    res = accuracy(y, tasks)
    assert res.mean == pytest.approx(13 / 60, rel=1e-12)
    assert round(res.mean, 4) == 0.2167
    assert res.mean_pooled == pytest.approx(0.2, rel=1e-12)
    means = np.array([1 / 3, 1 / 4, 1 / 2, 0, 0])
    # inspect_ai's stderr(): np.std(reduced scores, ddof=1) / sqrt(n).
    assert res.se_clustered == pytest.approx(np.std(means, ddof=1) / np.sqrt(5), rel=1e-12)
    # compare() reports the same mean per agent.
    other = np.zeros_like(y)
    pd_res = paired_difference(y, tasks, other, tasks)
    assert pd_res.mean_a == pytest.approx(res.mean, rel=1e-12)


def test_coverage_on_an_unbalanced_design_with_informative_trial_loss():
    # 60 tasks, p_g ~ Beta(2, 3) (benchmark score 0.4), and hard tasks lose more trials
    # (T_g = 1 + Binomial(7, p_g)), as when infra errors are excluded. The 95% interval of
    # the mean of task means covers 0.4 at its nominal rate; the pooled mean, which
    # overweights easy tasks, does not.
    rng = np.random.default_rng(20251)
    n_tasks, reps, a, b = 60, 2000, 2.0, 3.0
    target = a / (a + b)
    covered = covered_pooled = 0
    for _ in range(reps):
        p = rng.beta(a, b, n_tasks)
        counts = 1 + rng.binomial(7, p)
        tasks = np.repeat(np.arange(n_tasks), counts)
        y = (rng.random(tasks.size) < p[tasks]).astype(float)
        res = accuracy(y, tasks)
        covered += res.ci_low <= target <= res.ci_high
        # The former estimator: pooled mean ± z · its CR1 SE (statsmodels' OLS cluster SE).
        e = np.bincount(tasks, weights=y - res.mean_pooled)
        se_pooled = np.sqrt(n_tasks / (n_tasks - 1) * (e @ e)) / y.size
        covered_pooled += abs(res.mean_pooled - target) <= 1.959963984540054 * se_pooled
    assert 0.93 <= covered / reps <= 0.97
    assert covered_pooled / reps < 0.8


# --- Non-degenerate intervals when every task mean is equal --------------------------------


@pytest.mark.parametrize("value", [0.0, 1.0])
@pytest.mark.parametrize("kwargs", [{}, {"cluster_se": "miller"}, {"quantile": "t"}])
def test_all_zero_or_all_one_group_gets_wilson_on_n_tasks(value, kwargs):
    tasks = np.repeat(np.arange(7), [1, 2, 5, 3, 3, 8, 2])
    res = accuracy(np.full(tasks.size, value), tasks, **kwargs)
    k = int(7 * value)
    low, high = proportion_confint(k, 7, alpha=0.05, method="wilson")
    assert res.mean == value and res.se_clustered == 0.0
    assert (res.ci_low, res.ci_high) == pytest.approx((low, high), abs=1e-12)
    assert 0.0 <= res.ci_low <= res.mean <= res.ci_high <= 1.0 and res.ci_low < res.ci_high
    assert res.ci_method == "wilson_effective_n"
    assert any("Wilson" in w for w in res.warnings)


def test_equal_task_means_without_equal_scores():
    # Every task scores 1/2: the clustered SE is 0, the design effect has no estimate.
    y = np.array([1, 0, 0, 1, 1, 0, 1, 0], dtype=float)
    tasks = np.array([0, 0, 1, 1, 2, 2, 2, 2])
    res = accuracy(y, tasks, confidence=0.9)
    assert res.mean == 0.5 and res.se_clustered == 0.0 and res.se_naive > 0
    assert np.isnan(res.design_effect)
    low, high = proportion_confint(1.5, 3, alpha=0.1, method="wilson")
    assert (res.ci_low, res.ci_high) == pytest.approx((low, high), abs=1e-12)
    assert res.ci_method == "wilson_effective_n"
    assert any("same mean score" in w for w in res.warnings)
    # Not-quite-equal task means keep the clustered interval.
    y[-1] = 1.0
    assert accuracy(y, tasks).ci_method == "clustered"


def test_one_task_all_zero_stays_nan():
    res = accuracy(np.zeros(4), np.zeros(4))
    assert np.isnan(res.ci_low) and res.ci_method == "clustered"


@st.composite
def _binary_designs(draw):
    n_tasks = draw(st.integers(2, 8))
    trials = draw(st.lists(st.integers(1, 6), min_size=n_tasks, max_size=n_tasks))
    p = draw(st.sampled_from([0.0, 0.1, 0.5, 0.9, 1.0]))
    scores = draw(
        st.lists(
            st.sampled_from([0.0, 1.0]) if 0 < p < 1 else st.just(p),
            min_size=sum(trials),
            max_size=sum(trials),
        )
    )
    return np.array(scores), np.repeat(np.arange(n_tasks), trials)


@settings(max_examples=200, deadline=None)
@given(
    _binary_designs(),
    st.sampled_from(["cr1", "miller"]),
    st.sampled_from(["normal", "t"]),
    st.sampled_from([0.8, 0.95, 0.99]),
)
def test_binary_interval_contains_the_mean_and_has_positive_width(
    design, cluster_se, quantile, confidence
):
    scores, tasks = design
    res = accuracy(scores, tasks, cluster_se=cluster_se, quantile=quantile, confidence=confidence)
    assert res.ci_low <= res.mean <= res.ci_high
    assert 0.0 <= res.ci_low < res.ci_high <= 1.0
    assert 0.0 <= res.mean <= 1.0 and 0.0 <= res.mean_pooled <= 1.0
