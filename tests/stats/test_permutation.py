"""The within-task permutation test of factors (evalnoise.stats.permutation): its p-values
against a brute-force enumeration of every arrangement with statsmodels' ANOVA sums of
squares, its size by simulation on 0/1 scores of tasks near 0 and 1, and its invariants."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalnoise.stats.permutation import factor_permutation_test
from evalnoise.stats.shares import max_variance, share_decision

# --- against a full enumeration -----------------------------------------------------------------


def _anova_f(y: np.ndarray, task: np.ndarray, block: np.ndarray) -> tuple[float, float]:
    """The two-way random model's F ratios on a balanced table, from statsmodels' sums of
    squares: block against task × block, task × block against the residual."""
    import statsmodels.formula.api as smf
    from statsmodels.stats.anova import anova_lm

    df = pd.DataFrame({"y": y, "t": task, "b": block})
    table = anova_lm(smf.ols("y ~ C(t) * C(b)", df).fit(), typ=2)
    ss = table["sum_sq"]
    return ss["C(b)"] / ss["C(t):C(b)"], ss["C(t):C(b)"] / ss["Residual"]


def _arrangements(n_tasks: int, per_task: list[int]) -> list[np.ndarray]:
    """Every distinct assignment of the block labels ``per_task`` to each task's trials (each
    as likely as the others under within-task permutation)."""
    one = sorted(set(itertools.permutations(per_task)))
    return [np.concatenate(c) for c in itertools.product(one, repeat=n_tasks)]


def test_pvalues_agree_with_a_full_enumeration():
    """3 tasks × 4 trials, 2 per block: all 6³ = 216 arrangements of the block labels. The
    exact permutation p-values of both statistics and the Westfall–Young adjusted ones,
    computed from statsmodels' ANOVA, against the function's Monte Carlo values."""
    y = np.array([1, 1, 1, 0, 1, 1, 0, 0, 0, 1, 0, 0], dtype=float)
    task = np.repeat([0, 1, 2], 4)
    observed = np.array([0, 0, 1, 1] * 3)
    arrangements = _arrangements(3, [0, 0, 1, 1])
    assert len(arrangements) == 216
    stats = np.array([_anova_f(y, task, a) for a in arrangements])
    t0 = np.array(_anova_f(y, task, observed))
    tol = 1e-9 * (1 + np.abs(stats))
    exact = (stats >= t0 - tol).mean(axis=0)
    # Westfall-Young over the enumeration: p of every arrangement, its min over components
    p_all = np.array([[(stats[:, k] >= s[k] - 1e-9 * (1 + abs(s[k]))).mean() for k in (0, 1)]
                      for s in stats])  # fmt: skip
    exact_adjusted = np.array([(p_all.min(axis=1) <= p + 1e-12).mean() for p in exact])

    b = 20_000
    res = factor_permutation_test(
        y, task, {"time_block": observed}, interactions=["time_block"], n_permutations=b, seed=3
    )
    assert res.components == ("time_block", "task:time_block")
    np.testing.assert_allclose(res.statistic, t0, rtol=1e-9)
    for got, want in ((res.pvalue, exact), (res.pvalue_adjusted, exact_adjusted)):
        se = np.sqrt(want * (1 - want) / b)
        assert np.all(np.abs(got - want) <= 4 * se + 1.0 / b), (got, want)
    assert res.family_pvalue == pytest.approx(res.pvalue_adjusted.min())


def test_a_main_effect_only_test_agrees_with_enumeration_of_an_unbalanced_table():
    """Unequal cells (task 0: 3 trials in block 0, 1 in block 1; task 1: 2 and 2): the main
    effect against the residual, S_B / (Q − S_B), by enumeration."""
    y = np.array([1, 0, 1, 0, 1, 1, 0, 0], dtype=float)
    task = np.repeat([0, 1], 4)
    observed = np.array([0, 0, 0, 1, 0, 0, 1, 1])

    def stat(block):
        r = y - pd.Series(y).groupby(task).transform("mean").to_numpy()
        sums = pd.Series(r).groupby(block).agg(["sum", "size"])
        s_b = float((sums["sum"] ** 2 / sums["size"]).sum())
        return s_b / (float(r @ r) - s_b)

    arrangements = [
        np.concatenate([a, b])
        for a in set(itertools.permutations([0, 0, 0, 1]))
        for b in set(itertools.permutations([0, 0, 1, 1]))
    ]
    stats = np.array([stat(np.array(a)) for a in arrangements])
    exact = float((stats >= stat(observed) - 1e-9).mean())
    res = factor_permutation_test(y, task, {"block": observed}, n_permutations=20_000, seed=1)
    assert res.components == ("block",)
    assert res.pvalue[0] == pytest.approx(exact, abs=4 * np.sqrt(exact * (1 - exact) / 20_000))


# --- size -----------------------------------------------------------------------------------------


def test_size_is_at_most_alpha_on_tasks_near_0_and_1():
    """No time effect, difficulties Beta(0.5, 0.5), trials in random order over 4 blocks: the
    family rejects at most α of the time (within 3 Monte Carlo SE), at α = 0.05 and 0.20."""
    rng = np.random.default_rng(11)
    runs, n_tasks, trials = 400, 8, 4
    task = np.repeat(np.arange(n_tasks), trials)
    family = []
    for i in range(runs):
        p = rng.beta(0.5, 0.5, n_tasks)
        y = (rng.random(task.size) < p[task]).astype(float)
        block = np.argsort(rng.permutation(task.size)) * 4 // task.size
        res = factor_permutation_test(
            y, task, {"time_block": block}, interactions=["time_block"], n_permutations=199, seed=i
        )
        family.append(res.family_pvalue)
    family = np.array(family)
    for alpha in (0.05, 0.20):
        rate = float((family <= alpha).mean())
        assert rate <= alpha + 3 * np.sqrt(alpha * (1 - alpha) / runs), (alpha, rate)
    assert (family <= 0.20).mean() > 0.05  # not a test that never rejects


def test_a_block_shift_is_found():
    rng = np.random.default_rng(2)
    task = np.repeat(np.arange(12), 8)
    block = np.tile(np.repeat(np.arange(4), 2), 12)
    p = np.clip(rng.uniform(0.2, 0.8, 12)[task] + np.array([0.3, -0.3, 0.3, -0.3])[block], 0, 1)
    y = (rng.random(task.size) < p).astype(float)
    res = factor_permutation_test(y, task, {"time_block": block}, interactions=["time_block"])
    assert res.test("time_block").pvalue_adjusted <= 0.01
    assert res.family_detected and res.detected[0]


@pytest.mark.parametrize("effect", ["interaction", "main"])
def test_one_component_alone_does_not_make_the_other_look_detected(effect):
    """Task-specific block effects with no common one: the main effect's test (against the
    interaction) rejects at most α; a common block shift alone: the interaction's test
    rejects at most α (0/1 scores, 12 tasks × 8 trials, 2 per block)."""
    rng = np.random.default_rng(3)
    runs, n_tasks = 300, 12
    task = np.repeat(np.arange(n_tasks), 8)
    block = np.tile(np.repeat(np.arange(4), 2), n_tasks)
    other = 0 if effect == "interaction" else 1
    rejected = 0
    for i in range(runs):
        if effect == "interaction":
            gamma = rng.choice([-0.2, 0.2], (n_tasks, 4))
            gamma -= gamma.mean(axis=0, keepdims=True)
        else:
            gamma = np.broadcast_to(rng.permutation([0.2, 0.2, -0.2, -0.2]), (n_tasks, 4))
        p = np.clip(rng.uniform(0.3, 0.7, n_tasks)[task] + gamma[task, block], 0, 1)
        y = (rng.random(task.size) < p).astype(float)
        res = factor_permutation_test(
            y, task, {"time_block": block}, interactions=["time_block"], n_permutations=99, seed=i
        )
        rejected += res.pvalue[other] <= 0.05
    assert rejected / runs <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / runs)


# --- invariants ---------------------------------------------------------------------------------


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n_tasks=st.integers(2, 6),
    trials=st.integers(2, 6),
    levels=st.integers(2, 4),
)
def test_pvalues_lie_in_0_1_and_do_not_depend_on_the_labels_names(seed, n_tasks, trials, levels):
    rng = np.random.default_rng(seed)
    task = np.repeat(np.arange(n_tasks), trials)
    y = (rng.random(task.size) < rng.random(n_tasks)[task]).astype(float)
    block = rng.integers(0, levels, task.size)
    host = rng.integers(0, 2, task.size)
    kw = {"interactions": ["time_block"], "n_permutations": 99, "seed": seed % 1000}
    res = factor_permutation_test(y, task, {"time_block": block, "host": host}, **kw)
    for p in (res.pvalue, res.pvalue_adjusted):
        assert np.all((p > 0) & (p <= 1))
    assert np.all(res.pvalue_adjusted >= res.pvalue - 1e-12)
    assert res.family_detected == bool(res.detected.any())
    # the blocks renamed (any bijection), the hosts renamed, a task's scores shifted: the same
    names = rng.permutation(levels) * 7 + 3
    other = factor_permutation_test(
        y + 2.0 * (task == 0),
        task,
        {"time_block": names[block].astype(str), "host": np.where(host == 1, "a", "b")},
        **kw,
    )
    assert other.components == res.components
    np.testing.assert_allclose(other.statistic, res.statistic, rtol=1e-7, atol=1e-9)
    np.testing.assert_array_equal(other.pvalue, res.pvalue)
    np.testing.assert_array_equal(other.pvalue_adjusted, res.pvalue_adjusted)


def test_constant_scores_are_never_detected_and_inputs_are_checked():
    task = np.repeat([0, 1, 2], 4)
    block = np.tile([0, 0, 1, 1], 3)
    res = factor_permutation_test(np.ones(12), task, {"b": block}, interactions=["b"])
    assert np.all(res.pvalue == 1.0) and not res.family_detected
    one = factor_permutation_test(np.arange(12.0), task, {"b": np.zeros(12)})
    assert one.components == () and one.family_pvalue == 1.0 and "one level" in one.warnings[0]
    with pytest.raises(ValueError, match="same length"):
        factor_permutation_test(np.ones(3), [0, 1], {"b": [0, 1, 0]})
    with pytest.raises(ValueError, match="nested in tasks"):
        factor_permutation_test(np.ones(4), [0, 0, 1, 1], {"b": [0, 1, 0, 1]}, strata=[0] * 4)
    with pytest.raises(ValueError, match="n_permutations"):
        factor_permutation_test(np.ones(4), [0, 0, 1, 1], {"b": [0, 1, 0, 1]}, n_permutations=0)


def test_strata_keep_a_variants_effect_out_of_the_time_test():
    """A prompt variant that ran in the later blocks and halves the success rate: permuted
    within task only, the time block looks detected; within task × variant it is not."""
    rng = np.random.default_rng(5)
    task = np.repeat(np.arange(10), 8)
    block = np.tile(np.repeat(np.arange(4), 2), 10)
    variant = (block >= 2).astype(int)
    y = (rng.random(task.size) < np.where(variant == 1, 0.2, 0.8)).astype(float)
    plain = factor_permutation_test(y, task, {"time_block": block}, n_permutations=499)
    strata = task * 2 + variant
    within = factor_permutation_test(
        y, task, {"time_block": block}, strata=strata, n_permutations=499
    )
    assert plain.family_detected and not within.family_detected


# --- the share rule and the variance bound -------------------------------------------------


def test_the_share_rule_never_leaves_a_component_detected_under_an_undetected_share():
    d = share_decision(False, {"judge": True, "task×judge": False})
    assert not d.detected and d.component_detected == (False, False)
    assert d.withdrawn == ("judge",) and d["judge"] is False
    d = share_decision(True, {"judge": True, "task×judge": False})
    assert d.detected and d.component_detected == (True, False) and d.withdrawn == ()


def test_the_largest_variance_of_a_score_range():
    assert max_variance([0.0, 1.0, 1.0]) == 0.25
    assert max_variance(score_range=(0, 10)) == 25.0
    assert np.isnan(max_variance([]))
    # Popoviciu: no sample of scores in [0, 1] has a larger (population) variance
    rng = np.random.default_rng(0)
    assert max(np.var(rng.random(rng.integers(2, 9))) for _ in range(200)) <= 0.25
    with pytest.raises(ValueError, match="score_range"):
        max_variance(score_range=(1, 0))


# --- what the design can detect at all ----------------------------------------------------------


def test_the_smallest_attainable_pvalue_agrees_with_enumeration_and_bounds_detection():
    """4 tasks × 4 trials, 2 per block, three tasks' trials differ: of the 6⁴ arrangements
    of the block labels, the one with the largest F (statsmodels' ANOVA, block against the
    residual) has the smallest p any outcome of this design can give, exactly the share of
    arrangements reaching that F; the function's estimate agrees, it is above alpha, so the
    block is not testable here, and no arrangement is detected — with the interaction in the
    family too."""
    import statsmodels.formula.api as smf
    from statsmodels.stats.anova import anova_lm

    y = np.array([1, 0, 0, 0, 1, 1, 0, 0, 1, 1, 1, 0, 0, 0, 0, 0], dtype=float)
    task = np.repeat([0, 1, 2, 3], 4)
    arrangements = _arrangements(4, [0, 0, 1, 1])

    def f_statsmodels(block: np.ndarray) -> float:
        df = pd.DataFrame({"y": y, "t": task, "b": block})
        ss = anova_lm(smf.ols("y ~ C(t) + C(b)", df).fit(), typ=2)["sum_sq"]
        return ss["C(b)"] / ss["Residual"]

    tasks = (task[:, None] == np.arange(4)[None, :]).astype(float)
    rss_tasks = np.sum((y - tasks @ np.linalg.lstsq(tasks, y, rcond=None)[0]) ** 2)

    def f_block(block: np.ndarray) -> float:
        # the same type-II ratio by least squares: RSS without the block over RSS with it
        full = np.column_stack([tasks, block == 1])
        rss = np.sum((y - full @ np.linalg.lstsq(full, y, rcond=None)[0]) ** 2)
        return (rss_tasks - rss) / rss

    for arrangement in arrangements[::259]:  # the least-squares ratio is statsmodels' ANOVA
        assert f_block(arrangement) == pytest.approx(f_statsmodels(arrangement), rel=1e-9)
    stats = np.array([f_block(a) for a in arrangements])
    least = float((stats >= stats.max() - 1e-9 * (1 + stats.max())).mean())
    assert least == pytest.approx(1 / 12) and least > 0.05

    b = 20_000
    observed = np.array([0, 0, 1, 1] * 4)
    res = factor_permutation_test(y, task, {"time_block": observed}, n_permutations=b, seed=5)
    se = np.sqrt(least * (1 - least) / b)
    assert abs(res.min_pvalue_adjusted[0] - least) <= 4 * se + 1.0 / b
    assert not res.testable[0] and not res.detected[0]
    for arrangement in arrangements[::130]:
        again = factor_permutation_test(
            y, task, {"time_block": arrangement}, interactions=["time_block"],
            n_permutations=999, seed=1,
        )  # fmt: skip
        assert not again.testable.any() and not again.detected.any()
        # the observed table is one arrangement: its p is never below the smallest one
        assert np.all(again.pvalue_adjusted >= again.min_pvalue_adjusted - 1e-12)


def test_a_design_with_enough_varying_tasks_is_testable():
    rng = np.random.default_rng(0)
    task = np.repeat(np.arange(30), 8)
    block = np.tile(np.arange(4), 60)
    y = (rng.random(task.size) < np.where(block < 2, 0.2, 0.8)).astype(float)
    res = factor_permutation_test(y, task, {"time_block": block}, interactions=["time_block"])
    assert res.testable.all() and res.detected[0]
    assert np.all(res.min_pvalue_adjusted <= res.pvalue_adjusted + 1e-12)
    constant = factor_permutation_test(np.ones(task.size), task, {"time_block": block})
    assert not constant.testable.any()  # nothing varies within a task: nothing can be tested
