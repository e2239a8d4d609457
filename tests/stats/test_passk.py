"""pass^k (tau-bench) and unbiased pass@k (Chen et al. 2021)."""

from __future__ import annotations

import csv
from fractions import Fraction
from math import comb
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalnoise.stats.passk import pass_at_k, pass_hat_k, pass_k

TAU_CSV = Path(__file__).resolve().parents[1] / "data" / "tau-bench" / "gpt-4o-airline.csv"


def _read_tau():
    with TAU_CSV.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    return (
        np.array([int(r["task_id"]) for r in rows]),
        np.array([int(r["trial"]) for r in rows]),
        np.array([float(r["reward"]) for r in rows]),
    )


def _tau_bench_display_metrics(task_ids, trials, rewards):
    """tau-bench's ``display_metrics`` (tau_bench/run.py), transcribed loop for loop."""

    def is_successful(reward):
        return (1 - 1e-6) <= reward <= (1 + 1e-6)

    num_trials = len(set(trials.tolist()))
    c_per_task_id = {}
    for task_id, reward in zip(task_ids.tolist(), rewards.tolist(), strict=True):
        c_per_task_id[task_id] = c_per_task_id.get(task_id, 0) + (1 if is_successful(reward) else 0)
    pass_hat_ks = {}
    for k in range(1, num_trials + 1):
        total = 0
        for c in c_per_task_id.values():
            total += comb(c, k) / comb(num_trials, k)
        pass_hat_ks[k] = total / len(c_per_task_id)
    return pass_hat_ks


def test_tau_bench_gpt4o_airline_matches_published_leaderboard():
    tasks, trials, rewards = _read_tau()
    assert tasks.size == 200 and np.unique(tasks).size == 50
    res = pass_k(rewards, tasks)
    assert res.k.tolist() == [1, 2, 3, 4]
    # tau-bench README leaderboard, τ-airline, "TC (gpt-4o)": 0.420, 0.273, 0.220, 0.200.
    np.testing.assert_allclose(res.pass_hat, [0.420, 0.273, 0.220, 0.200], atol=5e-4)
    # Exactly: 84 of 200 trials succeed; pass^2 = 0.27333…
    assert res.pass_hat[0] == pytest.approx(84 / 200, rel=1e-15)
    reference = _tau_bench_display_metrics(tasks, trials, rewards)
    np.testing.assert_allclose(res.pass_hat, [reference[k] for k in (1, 2, 3, 4)], rtol=1e-14)
    assert np.all(res.n_trials == 4)


def test_pass_hat_and_pass_at_match_binomial_coefficients_exhaustively():
    for n in range(1, 13):
        for c in range(n + 1):
            for k in range(1, n + 1):
                hat = Fraction(comb(c, k), comb(n, k))
                at = 1 - Fraction(comb(n - c, k), comb(n, k))
                assert pass_hat_k(n, c, k) == pytest.approx(float(hat), abs=1e-15)
                assert pass_at_k(n, c, k) == pytest.approx(float(at), abs=1e-15)


def test_pass_at_k_matches_chen_et_al_reference_form():
    # Chen et al. (2021), Fig. 3: 1 − prod(1 − k / arange(n − c + 1, n + 1)).
    rng = np.random.default_rng(0)
    n = rng.integers(1, 200, 300)
    c = rng.integers(0, n + 1)
    k = rng.integers(1, n + 1)
    ours = pass_at_k(n, c, k)
    for i in range(n.size):
        ni, ci, ki = int(n[i]), int(c[i]), int(k[i])
        ref = 1.0 if ni - ci < ki else 1.0 - np.prod(1.0 - ki / np.arange(ni - ci + 1, ni + 1))
        assert ours[i] == pytest.approx(ref, rel=1e-10, abs=1e-12)


def test_large_n_does_not_overflow():
    n, c, k = 20_000, 15_000, 300
    hat = Fraction(comb(c, k), comb(n, k))
    at = 1 - Fraction(comb(n - c, k), comb(n, k))
    assert pass_hat_k(n, c, k) == pytest.approx(float(hat), rel=1e-10)
    assert pass_at_k(n, c, k) == pytest.approx(float(at), rel=1e-12)


def test_broadcasting_and_input_checks():
    out = pass_hat_k(np.array([[4], [8]]), np.array([[2], [6]]), np.array([1, 2, 3]))
    assert out.shape == (2, 3)
    np.testing.assert_allclose(out[1], [6 / 8, comb(6, 2) / comb(8, 2), comb(6, 3) / comb(8, 3)])
    with pytest.raises(ValueError):
        pass_hat_k(4, 5, 1)
    with pytest.raises(ValueError):
        pass_hat_k(4, 2, 5)
    with pytest.raises(ValueError):
        pass_at_k(4, 2, 0)
    with pytest.raises(ValueError):
        pass_at_k(4.0, 2, 1)


def test_unbalanced_trials_use_each_tasks_own_n():
    tasks = np.array(["a"] * 3 + ["b"] * 5)
    scores = np.array([1, 1, 0, 1, 1, 1, 1, 0], dtype=float)
    res = pass_k(scores, tasks)
    assert res.k.tolist() == [1, 2, 3]
    np.testing.assert_array_equal(res.n_trials, [3, 5])
    np.testing.assert_array_equal(res.n_success, [2, 4])
    expected = [np.mean([comb(2, k) / comb(3, k), comb(4, k) / comb(5, k)]) for k in (1, 2, 3)]
    np.testing.assert_allclose(res.pass_hat, expected, rtol=1e-14)
    with pytest.raises(ValueError, match="fewest trials"):
        pass_k(scores, tasks, k_max=4)
    assert pass_k(scores, tasks, k_max=2).pass_hat.shape == (2,)


def test_success_threshold():
    tasks = np.repeat([0, 1], 2)
    scores = np.array([1.0, 0.5, 0.999_9999, 0.0])
    # tau-bench's rule: within 1e-6 of 1 is a success, partial credit is not.
    np.testing.assert_array_equal(pass_k(scores, tasks).n_success, [1, 1])
    np.testing.assert_array_equal(pass_k(scores, tasks, success_threshold=0.5).n_success, [2, 1])


@settings(max_examples=80, deadline=None)
@given(data=st.data(), n_tasks=st.integers(1, 12), n_trials=st.integers(1, 8))
def test_pass_k_properties(data, n_tasks, n_trials):
    bits = data.draw(
        st.lists(st.booleans(), min_size=n_tasks * n_trials, max_size=n_tasks * n_trials)
    )
    scores = np.array(bits, dtype=float)
    tasks = np.repeat(np.arange(n_tasks), n_trials)
    res = pass_k(scores, tasks)
    # pass^1 = pass@1 = mean success (balanced trials make it the plain mean too).
    assert res.pass_hat[0] == pytest.approx(scores.mean(), abs=1e-12)
    assert res.pass_at[0] == pytest.approx(scores.mean(), abs=1e-12)
    assert np.all(np.diff(res.pass_hat) <= 1e-12)
    assert np.all(np.diff(res.pass_at) >= -1e-12)
    assert np.all(np.diff(res.pass_hat_per_task, axis=1) <= 1e-12)
    assert np.all(np.diff(res.pass_at_per_task, axis=1) >= -1e-12)
    assert np.all(res.pass_hat <= res.pass_at + 1e-12)
    # Relabelling tasks and shuffling rows changes nothing.
    perm = np.random.default_rng(n_tasks * 31 + n_trials).permutation(scores.size)
    names = np.array([f"t{(7 * i) % 101}" for i in range(n_tasks)])
    shuffled = pass_k(scores[perm], names[tasks][perm])
    np.testing.assert_allclose(shuffled.pass_hat, res.pass_hat, atol=1e-14)
    np.testing.assert_allclose(shuffled.pass_at, res.pass_at, atol=1e-14)


# --- by enumeration, and the task-clustered intervals ----------------------------------------


def _enumerated(scores, tasks, k):
    """pass^k and pass@k by listing every k-subset of each task's trials."""
    from itertools import combinations

    hats, ats = [], []
    for t in dict.fromkeys(tasks.tolist()):
        mine = scores[tasks == t]
        subsets = list(combinations(mine.tolist(), k))
        hats.append(np.mean([all(s == 1.0 for s in sub) for sub in subsets]))
        ats.append(np.mean([any(s == 1.0 for s in sub) for sub in subsets]))
    return np.array(hats), np.array(ats)


@pytest.mark.parametrize("seed", range(6))
def test_pass_k_equals_enumeration_of_every_subset_on_small_tables(seed):
    rng = np.random.default_rng(seed)
    counts = rng.integers(3, 7, size=4)  # unbalanced: 3–6 trials per task
    tasks = np.repeat(np.arange(4), counts)
    scores = (rng.random(tasks.size) < np.repeat(rng.random(4), counts)).astype(float)
    res = pass_k(scores, tasks)
    for k in res.k:
        hats, ats = _enumerated(scores, tasks, int(k))
        np.testing.assert_allclose(res.pass_hat_per_task[:, k - 1], hats, atol=1e-14)
        np.testing.assert_allclose(res.pass_at_per_task[:, k - 1], ats, atol=1e-14)
        # the interval's SE is that of a mean of independent per-task values
        assert res.pass_hat_se[k - 1] == pytest.approx(hats.std(ddof=1) / 2.0, abs=1e-14)
        assert res.pass_at_se[k - 1] == pytest.approx(ats.std(ddof=1) / 2.0, abs=1e-14)
        assert res.pass_hat_ci_low[k - 1] <= res.pass_hat[k - 1] <= res.pass_hat_ci_high[k - 1]


def test_pass_1_interval_is_the_task_clustered_accuracy_interval():
    from evalnoise.stats import accuracy

    tasks, _, rewards = _read_tau()
    res = pass_k(rewards, tasks)
    acc = accuracy((rewards >= 1 - 1e-6).astype(float), tasks, cluster_se="cr1")
    assert res.pass_hat[0] == pytest.approx(acc.mean, abs=1e-15)
    assert res.pass_hat_se[0] == pytest.approx(acc.se_clustered, rel=1e-12)
    assert res.pass_hat_ci_low[0] == pytest.approx(acc.ci_low, rel=1e-12)
    assert res.pass_hat_ci_high[0] == pytest.approx(acc.ci_high, rel=1e-12)
    # the intervals stay in [0, 1] and one task gives none
    assert np.all(res.pass_hat_ci_low >= 0) and np.all(res.pass_at_ci_high <= 1)
    one = pass_k(np.array([1.0, 0.0, 1.0]), np.zeros(3))
    assert np.isnan(one.pass_hat_se).all() and np.isnan(one.pass_hat_ci_low).all()


def test_equal_task_values_take_the_wilson_interval_as_accuracy_does():
    from evalnoise.stats import accuracy

    tasks = np.repeat(np.arange(9), 4)
    res = pass_k(np.zeros(36), tasks)
    acc = accuracy(np.zeros(36), tasks)
    assert acc.ci_method == "wilson_effective_n"
    assert (res.pass_hat_ci_low[0], res.pass_hat_ci_high[0]) == pytest.approx(
        (acc.ci_low, acc.ci_high)
    )
    assert np.all(res.pass_hat_ci_high > 0) and res.pass_hat_se[0] == 0
