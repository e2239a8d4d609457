"""icc_oneway(), icc_batch(), bonett_se(): published values and independent implementations."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pingouin as pg
import pytest
import statsmodels.api as sm
import statsmodels.formula.api as smf
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from evalnoise.stats.icc import bonett_se, icc_batch, icc_oneway, interpret_icc

# pingouin 0.7 calls DataFrame.dropna(inplace=True), deprecated in pandas 3.1: not ours.
pytestmark = pytest.mark.filterwarnings("ignore:The inplace keyword in DataFrame.dropna")


@pytest.fixture
def exact_pingouin_ci(monkeypatch):
    # pingouin rounds CI95 to 2 decimals for display; compare against its unrounded values.
    monkeypatch.setitem(pg.options, "round.column.CI95", None)


def _pingouin_icc1(df, targets, raters, ratings):
    table = pg.intraclass_corr(df, targets=targets, raters=raters, ratings=ratings)
    table = table.set_index("Type")
    return table.loc["ICC(1,1)"], table.loc["ICC(1,k)"]


def _assert_matches_pingouin(res, single, average):
    assert res.icc == pytest.approx(single["ICC"], rel=1e-10)
    assert res.statistic == pytest.approx(single["F"], rel=1e-10)
    assert (res.df1, res.df2) == (single["df1"], single["df2"])
    assert res.pvalue == pytest.approx(single["pval"], rel=1e-8, abs=1e-300)
    assert (res.ci_low, res.ci_high) == pytest.approx(tuple(single["CI95"]), rel=1e-10)
    assert res.icc_k == pytest.approx(average["ICC"], rel=1e-10)
    assert (res.icc_k_ci_low, res.icc_k_ci_high) == pytest.approx(tuple(average["CI95"]), rel=1e-10)


def _direct_loop(scores, tasks):
    """Textbook one-way ANOVA written as loops over tasks (independent of the package)."""
    labels = list(dict.fromkeys(tasks.tolist()))
    groups = [scores[tasks == t] for t in labels]
    a, n = len(groups), scores.size
    grand = scores.mean()
    ssb = sum(len(g) * (g.mean() - grand) ** 2 for g in groups)
    ssw = sum(((g - g.mean()) ** 2).sum() for g in groups)
    msb, msw = ssb / (a - 1), ssw / (n - a)
    n0 = (n - sum(len(g) ** 2 for g in groups) / n) / (a - 1)
    means = np.array([g.mean() for g in groups])
    var_means = means.var(ddof=1)
    pooled = sum((len(g) - 1) * g.var(ddof=1) for g in groups if len(g) > 1) / sum(
        len(g) - 1 for g in groups
    )
    return {
        "ms_between": msb,
        "ms_within": msw,
        "n0": n0,
        "icc": (msb - msw) / (msb + (n0 - 1) * msw),
        "icc_plugin": var_means / (var_means + pooled),
        "var_task_means": var_means,
        "sigma2_within": pooled,
        "between_query_se": np.sqrt(var_means / a),
    }


def _unbalanced_binary(rng, n_tasks=25, max_trials=12):
    trials = rng.integers(1, max_trials + 1, n_tasks)
    tasks = np.repeat(np.arange(n_tasks), trials)
    p = rng.beta(0.8, 0.8, n_tasks)[tasks]
    return (rng.random(tasks.size) < p).astype(float), tasks


# --- published reference values -------------------------------------------------------


def test_shrout_fleiss_1979_published_values(shrout_fleiss):
    res = icc_oneway(shrout_fleiss["score"].to_numpy(), shrout_fleiss["target"].to_numpy())
    # Shrout & Fleiss (1979), Table 4: ICC(1,1) = .17, ICC(1,4) = .44; their Table 3 gives
    # BMS = 11.24 and WMS = 6.26. psych::ICC reports F = 1.79 (5, 18 df), p = .165, 95% CI
    # [−.13, .72] and, for ICC1k, [−.88, .91].
    assert res.icc == pytest.approx(0.17, abs=0.005)
    assert res.icc_k == pytest.approx(0.44, abs=0.005)
    assert res.ms_between == pytest.approx(11.24, abs=0.005)
    assert res.ms_within == pytest.approx(6.26, abs=0.005)
    assert res.statistic == pytest.approx(1.79, abs=0.005)
    assert (res.df1, res.df2, res.n0) == (5, 18, 4)
    assert res.pvalue == pytest.approx(0.165, abs=0.0005)
    assert (res.ci_low, res.ci_high) == pytest.approx((-0.13, 0.72), abs=0.005)
    assert (res.icc_k_ci_low, res.icc_k_ci_high) == pytest.approx((-0.88, 0.91), abs=0.005)
    assert res.interpretation == "poor"
    assert res.warnings == ()


def test_shrout_fleiss_matches_pingouin(shrout_fleiss, exact_pingouin_ci):
    res = icc_oneway(shrout_fleiss["score"].to_numpy(), shrout_fleiss["target"].to_numpy())
    _assert_matches_pingouin(res, *_pingouin_icc1(shrout_fleiss, "target", "judge", "score"))


def test_pingouin_wine_dataset(exact_pingouin_ci):
    data = pg.read_dataset("icc")
    res = icc_oneway(data["Scores"].to_numpy(), data["Wine"].to_numpy())
    # pingouin's docstring: ICC(1,1) 0.728, F 11.680 on (7, 24), CI95 [0.43, 0.93].
    assert res.icc == pytest.approx(0.728, abs=5e-4)
    assert res.statistic == pytest.approx(11.680, abs=5e-4)
    _assert_matches_pingouin(res, *_pingouin_icc1(data, "Wine", "Judge", "Scores"))


@pytest.mark.parametrize("seed", [0, 1])
def test_balanced_binary_matches_pingouin(seed, exact_pingouin_ci):
    rng = np.random.default_rng(seed)
    n_tasks, trials = 40, 6
    p = rng.beta(0.5, 0.5, n_tasks)
    y = (rng.random((n_tasks, trials)) < p[:, None]).astype(float)
    df = pd.DataFrame(
        {
            "task": np.repeat(np.arange(n_tasks), trials),
            "trial": np.tile(np.arange(trials), n_tasks),
            "score": y.ravel(),
        }
    )
    res = icc_oneway(df["score"].to_numpy(), df["task"].to_numpy())
    _assert_matches_pingouin(res, *_pingouin_icc1(df, "task", "trial", "score"))


def test_gpqa_excerpt_matches_pingouin(gpqa_excerpt, exact_pingouin_ci):
    for _, df in gpqa_excerpt.groupby("model_id"):
        res = icc_oneway(df["score"].to_numpy(), df["item_id"].to_numpy())
        assert (res.n_tasks, res.n_obs, res.n0) == (40, 200, 5)
        _assert_matches_pingouin(res, *_pingouin_icc1(df, "item_id", "epoch", "score"))


def test_gpqa_full_matches_pingouin(gpqa_full, exact_pingouin_ci):
    for _, df in gpqa_full.groupby("model_id"):
        res = icc_oneway(df["score"].to_numpy(), df["item_id"].to_numpy())
        _assert_matches_pingouin(res, *_pingouin_icc1(df, "item_id", "epoch", "score"))


# --- unbalanced designs: statsmodels ANOVA and a direct implementation -------------------


@pytest.mark.parametrize("seed", [2, 3, 4])
def test_unbalanced_binary_matches_statsmodels_anova(seed):
    rng = np.random.default_rng(seed)
    y, tasks = _unbalanced_binary(rng)
    fit = smf.ols("score ~ C(task)", data=pd.DataFrame({"score": y, "task": tasks})).fit()
    table = sm.stats.anova_lm(fit)
    res = icc_oneway(y, tasks)
    assert res.ms_between == pytest.approx(table.loc["C(task)", "mean_sq"], rel=1e-10)
    assert res.ms_within == pytest.approx(table.loc["Residual", "mean_sq"], rel=1e-10)
    assert res.statistic == pytest.approx(table.loc["C(task)", "F"], rel=1e-10)
    assert res.pvalue == pytest.approx(table.loc["C(task)", "PR(>F)"], rel=1e-8)
    assert (res.df1, res.df2) == (table.loc["C(task)", "df"], table.loc["Residual", "df"])
    ref = _direct_loop(y, tasks)
    for name, value in ref.items():
        assert getattr(res, name) == pytest.approx(value, rel=1e-10), name
    assert any("unbalanced" in w for w in res.warnings)


def test_unbalanced_partial_credit_direct():
    rng = np.random.default_rng(5)
    tasks = np.repeat(np.arange(15), rng.integers(2, 7, 15))
    y = np.clip(rng.beta(2, 2, 15)[tasks] + rng.normal(0, 0.15, tasks.size), 0, 1)
    res = icc_oneway(y, tasks)
    for name, value in _direct_loop(y, tasks).items():
        assert getattr(res, name) == pytest.approx(value, rel=1e-10), name


def test_component_identities():
    rng = np.random.default_rng(6)
    y, tasks = _unbalanced_binary(rng)
    res = icc_oneway(y, tasks)
    # ICC = σ_b² / (σ_b² + σ_w²) (paper eq. 6) with the ANOVA components.
    s2b, s2w = res.sigma2_between, res.sigma2_within
    assert res.icc == pytest.approx(s2b / (s2b + s2w), rel=1e-12)
    # ICC(1,k) is the Spearman–Brown step-up of ICC(1,1) to k = n0 trials.
    k = res.n0
    assert res.icc_k == pytest.approx(k * res.icc / (1 + (k - 1) * res.icc), rel=1e-12)
    assert res.icc_plugin == pytest.approx(
        res.var_task_means / (res.var_task_means + res.sigma2_within), rel=1e-12
    )
    assert res.se == pytest.approx(float(bonett_se(res.icc, res.n0, res.n_tasks)))


# --- Bonett (2002) -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rho", "k", "width", "n_published"),
    [
        # R package ICC, Nest(est.type="hypothetical", w=0.2, ICC=0.7, k=2) → 101.
        (0.7, 2, 0.2, 101),
        # ptenklooster.nl calculator citing Bonett (2002): ICC 0.8, two raters, width 0.2 → 51.
        (0.8, 2, 0.2, 51),
    ],
)
def test_bonett_se_reproduces_published_sample_sizes(rho, k, width, n_published):
    z = stats.norm.ppf(0.975)
    # Bonett's n is the smallest number of tasks whose expected CI width 2·z·SE ≤ w.
    assert 2 * z * bonett_se(rho, k, n_published) <= width
    assert 2 * z * bonett_se(rho, k, n_published - 1) > width


def test_bonett_se_matches_monte_carlo_spread():
    # Normal one-way random-effects data, ρ = 0.5: the SD of the ANOVA estimator over
    # replications should match Bonett's large-sample SE.
    rng = np.random.default_rng(7)
    reps, n_tasks, k, rho = 2000, 120, 4, 0.5
    effects = rng.normal(0, np.sqrt(rho), (reps, n_tasks, 1))
    y = effects + rng.normal(0, np.sqrt(1 - rho), (reps, n_tasks, k))
    batch = icc_batch(np.full(n_tasks, k), y.sum(-1), (y * y).sum(-1))
    expected = bonett_se(rho, k, n_tasks)
    assert batch.icc.std() == pytest.approx(expected, rel=0.08)
    assert batch.icc.mean() == pytest.approx(rho, abs=0.01)
    # The paper's eq. 8 as printed (n(n − 1)(T − 1)F² in the denominator) is far smaller
    # than the actual spread, which is why bonett_se does not use it.
    f_expected = (1 + (k - 1) * rho) / (1 - rho)
    eq8 = np.sqrt(
        2
        * (1 - rho) ** 2
        * (1 + (k - 1) * rho) ** 2
        / (n_tasks * (n_tasks - 1) * (k - 1) * f_expected**2)
    )
    assert eq8 < batch.icc.std() / 10


def test_bonett_se_undefined_for_single_trial_or_task():
    assert np.isnan(bonett_se(0.5, 1, 50)) and np.isnan(bonett_se(0.5, 4, 1))
    assert bonett_se(1.0, 4, 50) == 0.0


# --- the paper's plug-in estimator ---------------------------------------------------------


def test_plugin_is_biased_upward_at_small_trial_counts():
    # Var(task mean over T trials) = σ_b² + σ_w²/T, so eqs. 6–7 overstate ICC at small T;
    # the ANOVA estimator corrects for it.
    rng = np.random.default_rng(8)
    reps, n_tasks, trials, rho = 300, 100, 2, 0.3
    effects = rng.normal(0, np.sqrt(rho), (reps, n_tasks, 1))
    y = effects + rng.normal(0, np.sqrt(1 - rho), (reps, n_tasks, trials))
    batch = icc_batch(np.full(n_tasks, trials), y.sum(-1), (y * y).sum(-1))
    plugin_expected = (rho + (1 - rho) / trials) / (rho + (1 - rho) / trials + (1 - rho))
    assert batch.icc_plugin.mean() == pytest.approx(plugin_expected, abs=0.02)
    assert batch.icc.mean() == pytest.approx(rho, abs=0.02)


# --- degenerate inputs ---------------------------------------------------------------------


def test_all_equal_scores_are_nan_with_reason():
    res = icc_oneway(np.full(12, 0.1), np.repeat(np.arange(4), 3))
    assert np.isnan(res.icc) and np.isnan(res.icc_plugin) and np.isnan(res.statistic)
    assert np.isnan(res.ci_low) and np.isnan(res.se)
    assert res.ms_between == 0.0 and res.ms_within == 0.0
    assert res.interpretation == "undefined"
    assert any("every score is equal" in w for w in res.warnings)


def test_one_trial_per_task():
    res = icc_oneway(np.array([0.0, 1.0, 1.0, 0.5]), np.arange(4))
    assert res.df2 == 0 and np.isnan(res.icc) and np.isnan(res.sigma2_within)
    assert np.isnan(res.icc_plugin)
    assert res.var_task_means == pytest.approx(np.var([0, 1, 1, 0.5], ddof=1))
    assert any("df2" in w for w in res.warnings)


def test_one_task():
    res = icc_oneway(np.array([0.0, 1.0, 1.0]), np.zeros(3))
    assert res.df1 == 0 and np.isnan(res.icc) and np.isnan(res.between_query_se)
    assert res.sigma2_within == pytest.approx(1 / 3)
    assert any("one task" in w for w in res.warnings)


def test_deterministic_tasks_give_icc_one():
    res = icc_oneway(np.repeat([0.0, 1.0, 1.0, 0.0], 3), np.repeat(np.arange(4), 3))
    assert res.icc == 1.0 and res.icc_k == 1.0 and res.icc_plugin == 1.0
    assert (res.ci_low, res.ci_high) == (1.0, 1.0)
    assert res.statistic == np.inf and res.pvalue == 0.0 and res.se == 0.0
    assert any("within-task variance is zero" in w for w in res.warnings)


def test_equal_task_means_give_negative_icc():
    y = np.array([0, 1, 1, 0, 0, 1, 1, 0], dtype=float)
    res = icc_oneway(y, np.repeat(np.arange(4), 2))
    assert res.ms_between == 0.0
    assert res.icc == pytest.approx(-1 / (res.n0 - 1))
    assert res.sigma2_between < 0 and np.isnan(res.icc_k)
    assert res.pvalue == 1.0
    assert res.ci_low <= res.icc <= res.ci_high


def test_empty_input():
    res = icc_oneway(np.array([]), np.array([]))
    assert res.n_obs == 0 and np.isnan(res.icc) and res.warnings


def test_rejects_bad_confidence():
    with pytest.raises(ValueError):
        icc_oneway(np.array([1.0, 0.0]), np.array([0, 1]), confidence=1.5)


@pytest.mark.parametrize(
    ("value", "band"),
    [
        (-0.2, "poor"),
        (0.4999, "poor"),
        (0.5, "moderate"),
        (0.7499, "moderate"),
        (0.75, "good"),
        (0.9, "good"),
        (0.9001, "excellent"),
        (float("nan"), "undefined"),
    ],
)
def test_koo_li_bands(value, band):
    assert interpret_icc(value) == band


# --- batch helper ----------------------------------------------------------------------------


def test_icc_batch_matches_icc_oneway():
    rng = np.random.default_rng(9)
    data = [_unbalanced_binary(rng, n_tasks=12) for _ in range(5)]
    n_tasks = 12
    count = np.zeros((5, n_tasks))
    total = np.zeros((5, n_tasks))
    for b, (y, tasks) in enumerate(data):
        count[b] = np.bincount(tasks, minlength=n_tasks)
        total[b] = np.bincount(tasks, weights=y, minlength=n_tasks)
    batch = icc_batch(count, total, total)  # 0/1 scores: Σy² = Σy
    for b, (y, tasks) in enumerate(data):
        ref = icc_oneway(y, tasks)
        for name in ("icc", "icc_k", "icc_plugin", "ms_between", "ms_within", "n0"):
            assert getattr(batch, name)[b] == pytest.approx(getattr(ref, name), rel=1e-10)


def test_icc_batch_shared_design_and_absent_tasks():
    rng = np.random.default_rng(10)
    count = np.array([3.0, 5.0, 0.0, 4.0])
    y = [rng.random(int(c)) for c in count]
    total = np.array([[v.sum() for v in y]])
    total_sq = np.array([[(v * v).sum() for v in y]])
    shared = icc_batch(count, total, total_sq)  # 1-D count: matrix-product path
    stacked = icc_batch(count[None, :], total, total_sq)
    ref = icc_oneway(np.concatenate(y), np.repeat(np.arange(4), count.astype(int)))
    assert shared.n_tasks[0] == 3 and ref.n_tasks == 3
    for name in ("icc", "icc_plugin", "ms_between", "ms_within", "var_task_means"):
        assert getattr(shared, name)[0] == pytest.approx(getattr(ref, name), rel=1e-10)
        assert getattr(stacked, name)[0] == pytest.approx(getattr(ref, name), rel=1e-10)


def test_icc_batch_degenerate_rows_are_nan():
    count = np.full(3, 2.0)
    total = np.array([[2.0, 2.0, 2.0], [0.0, 2.0, 1.0]])  # all ones; mixed
    batch = icc_batch(count, total, total)
    assert np.isnan(batch.icc[0]) and np.isfinite(batch.icc[1])


# --- properties ----------------------------------------------------------------------------


@st.composite
def _designs(draw):
    n_tasks = draw(st.integers(1, 6))
    trials = draw(st.lists(st.integers(1, 5), min_size=n_tasks, max_size=n_tasks))
    n = sum(trials)
    elem = st.sampled_from([0.0, 1.0]) if draw(st.booleans()) else st.floats(0, 1)
    scores = np.array(draw(st.lists(elem, min_size=n, max_size=n)))
    perm = np.array(draw(st.permutations(range(n))), dtype=int)
    return scores, np.repeat(np.arange(n_tasks), trials), perm


@settings(max_examples=80, deadline=None)
@given(_designs())
def test_properties(design):
    scores, tasks, perm = design
    res = icc_oneway(scores, tasks)
    other = icc_oneway(scores[perm], np.array([f"x{99 - t}" for t in tasks])[perm])
    for name in ("icc", "ci_low", "ci_high", "icc_plugin", "statistic", "between_query_se"):
        a, b = getattr(res, name), getattr(other, name)
        assert (np.isnan(a) and np.isnan(b)) or a == pytest.approx(b, rel=1e-9, abs=1e-12)
    if np.isfinite(res.icc):
        assert res.icc <= 1.0 + 1e-12
        assert res.icc >= -1.0 / (res.n0 - 1.0) - 1e-9
        if np.isfinite(res.ci_low):
            assert res.ci_low - 1e-12 <= res.icc <= res.ci_high + 1e-12
    if np.isfinite(res.icc_plugin):
        assert 0.0 <= res.icc_plugin <= 1.0
