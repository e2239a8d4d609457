"""Anytime-valid confidence sequences (Waudby-Smith & Ramdas 2024) and the stopping rule."""

from __future__ import annotations

import math

import numpy as np
import pytest

from evalnoise.stats import (
    AgentTrials,
    StoppingRule,
    accuracy,
    confidence_sequence,
    icc_oneway,
    mean_confidence_sequence,
    paired_confidence_sequence,
    stopping_decision,
)
from evalnoise.stopping_text import decision_text


def _units(rng, shape, mu, icc, trials):
    """Task means of `trials` Bernoulli trials, task success p ~ Beta with mean mu and ICC."""
    s = 1.0 / icc - 1.0
    p = rng.beta(mu * s, (1.0 - mu) * s, size=shape)
    return rng.binomial(trials, p) / trials


def _trial_table(rng, n_tasks, trials, mu, icc, round_size, start=0):
    """Long table (scores, tasks, rounds) of n_tasks new tasks, round_size per round."""
    s = 1.0 / icc - 1.0
    p = rng.beta(mu * s, (1.0 - mu) * s, size=n_tasks)
    task = np.repeat(np.arange(start, start + n_tasks), trials)
    score = (rng.random(task.size) < p[task - start]).astype(float)
    round = (task - start) // round_size
    return score, task, round


# --- the betting sequence against independent implementations ---------------------------------


def _grid_hedged(x, alpha, checks, *, c=0.5, tune=None, grid=20001):
    """The hedged capital CS on a grid of m, written out step by step (running intersection)."""
    m = np.linspace(0.0, 1.0, grid)
    log_plus = np.zeros(grid)
    log_minus = np.zeros(grid)
    total = sq = 0.0
    sig2_prev = 0.25
    lo, hi = 0.0, 1.0
    out = {}
    thr = math.log(2.0 / alpha)
    for i, xi in enumerate(x, start=1):
        if tune is None:
            lam = math.sqrt(2.0 * math.log(2.0 / alpha) / (sig2_prev * i * math.log(1.0 + i)))
        else:
            lam = tune / (sig2_prev + tune**2)
        with np.errstate(divide="ignore"):
            bet_plus = np.minimum(lam, c / m)
            bet_minus = np.minimum(lam, c / (1.0 - m))
        log_plus += np.log1p(bet_plus * (xi - m))
        log_minus += np.log1p(-bet_minus * (xi - m))
        total += xi
        mu_i = (0.5 + total) / (i + 1)
        sq += (xi - mu_i) ** 2
        sig2_prev = (0.25 + sq) / (i + 1)
        if i in checks:
            keep = (log_plus < thr) & (log_minus < thr)
            lo, hi = max(lo, m[keep].min()), min(hi, m[keep].max())
            out[i] = (lo, hi)
    return out, 1.0 / (grid - 1)


@pytest.mark.parametrize("tune", [None, 0.08])
@pytest.mark.parametrize(("mu", "icc"), [(0.5, 0.3), (0.1, 0.8)])
def test_betting_bounds_match_a_grid_evaluation(tune, mu, icc):
    rng = np.random.default_rng(11)
    x = _units(rng, 240, mu, icc, 4)
    checks = [5, 20, 60, 120, 240]
    res = mean_confidence_sequence(x, times=checks, tuning_half_width=tune)
    ref, step = _grid_hedged(x, 0.05, set(checks), tune=tune)
    for j, t in enumerate(checks):
        g_lo, g_hi = ref[t]
        # The true end lies within one grid step outside the grid's accepted set; bisection
        # rounds outwards by less than its tolerance.
        assert g_lo - step - 1e-5 <= res.lower[j] <= g_lo
        assert g_hi <= res.upper[j] <= g_hi + step + 1e-5
    assert res.lower[-1] < x.mean() < res.upper[-1]


def test_empirical_bernstein_matches_the_written_out_formula():
    rng = np.random.default_rng(3)
    x = rng.beta(0.7, 1.3, size=150)
    alpha, c = 0.1, 0.5
    res = mean_confidence_sequence(
        x, confidence=1 - alpha, method="empirical_bernstein", truncation=c
    )
    lo_run, hi_run = 0.0, 1.0
    s_lam = s_lx = s_v = total = sq = 0.0
    sig2_prev, mu_prev = 0.25, 0.5
    for i, xi in enumerate(x, start=1):
        lam = min(c, math.sqrt(2 * math.log(2 / alpha) / (sig2_prev * i * math.log(1 + i))))
        s_lam += lam
        s_lx += lam * xi
        # v_i ψ_E(λ_i) with v_i = 4(X_i − μ̂_{i−1})² and ψ_E(λ) = (−log(1 − λ) − λ)/4.
        s_v += 4 * (xi - mu_prev) ** 2 * (-math.log(1 - lam) - lam) / 4
        center, margin = s_lx / s_lam, (math.log(2 / alpha) + s_v) / s_lam
        lo_run = max(lo_run, max(center - margin, 0.0))
        hi_run = min(hi_run, min(center + margin, 1.0))
        assert res.lower[i - 1] == pytest.approx(lo_run, abs=1e-12)
        assert res.upper[i - 1] == pytest.approx(hi_run, abs=1e-12)
        total += xi
        mu_prev = (0.5 + total) / (i + 1)
        sq += (xi - mu_prev) ** 2
        sig2_prev = (0.25 + sq) / (i + 1)


# --- coverage under optional stopping ----------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "tuned"), [("betting", True), ("betting", False), ("empirical_bernstein", True)]
)
def test_coverage_when_stopping_the_first_time_the_interval_is_narrow(method, tuned):
    rng = np.random.default_rng(20240601)
    mu, target = 0.3, 0.08
    x = _units(rng, (300, 1500), mu, 0.5, 4)
    res = mean_confidence_sequence(
        x,
        times=np.arange(10, 1501, 10),
        method=method,
        target_half_width=target,
        tuning_half_width=target if tuned else None,
    )
    assert np.all(res.stop_index >= 0)  # every replication reached the target
    assert np.all((res.final_upper - res.final_lower) / 2 <= target)
    covered = (res.final_lower <= mu) & (mu <= res.final_upper)
    assert covered.mean() >= 0.93


def test_table_coverage_with_adaptive_trials_and_outcome_driven_top_ups():
    """Trials per new task change with the data, and failing tasks get extra trials later:
    the sequence leaves the top-ups out and still covers at its stopping round."""
    rng = np.random.default_rng(7)
    mu, icc, target, reps, n_rounds, size = 0.3, 0.5, 0.1, 300, 30, 10
    s = 1 / icc - 1
    covered, stopped = [], 0
    for _ in range(reps):
        p = rng.beta(mu * s, (1 - mu) * s, size=n_rounds * size)
        parts = []  # (scores, tasks, rounds) per round and kind
        total = count = 0.0
        zero_tasks = np.array([], dtype=int)
        for b in range(n_rounds):
            t_new = 2 if count and total / count < 0.3 else 4  # a data-dependent design
            new = np.repeat(np.arange(b * size, (b + 1) * size), t_new)
            y = (rng.random(new.size) < p[new]).astype(float)
            parts.append((y, new, np.full(new.size, b)))
            # Last round's tasks that never succeeded get 4 more trials: kept in the units,
            # such top-ups would bias the estimate upwards.
            top = np.repeat(zero_tasks, 4)
            parts.append(((rng.random(top.size) < p[top]).astype(float), top, np.full(top.size, b)))
            wins = np.bincount(new - b * size, weights=y, minlength=size)
            zero_tasks = b * size + np.flatnonzero(wins == 0)
            total, count = total + y.sum(), count + y.size
        scores, tasks, rounds = (np.concatenate([q[i] for q in parts]) for i in range(3))
        res = confidence_sequence(scores, tasks, rounds, tuning_half_width=target)
        hit = np.flatnonzero((res.upper - res.lower) / 2 <= target)
        j = hit[0] if hit.size else -1
        stopped += hit.size > 0
        covered.append(res.lower[j] <= mu <= res.upper[j])
    assert res.n_trials_excluded > 0
    assert stopped >= 0.95 * reps
    assert np.mean(covered) >= 0.93


# --- shape of the sequence ---------------------------------------------------------------------


def test_running_intersection_never_widens_and_shrinks_like_root_n():
    rng = np.random.default_rng(5)
    x = _units(rng, (200, 1600), 0.4, 0.6, 4)
    times = np.array([25, 50, 100, 200, 400, 800, 1600])
    for method in ("betting", "empirical_bernstein"):
        res = mean_confidence_sequence(x, times=times, method=method, tuning_half_width=0.05)
        assert np.all(np.diff(res.lower, axis=-1) >= 0)
        assert np.all(np.diff(res.upper, axis=-1) <= 0)
        width = (res.upper - res.lower).mean(axis=0)
        assert np.all(np.diff(width) < 0)
        # Quadrupling the data roughly halves the width once the bets have settled.
        assert 0.35 < width[-1] / width[-3] < 0.7


def test_low_variance_agent_stops_earlier():
    rng = np.random.default_rng(9)
    reps, n, target = 100, 2000, 0.06
    times = np.arange(10, n + 1, 10)
    # Same accuracy 0.5: every task a coin flip (low variance of task means over 8 trials)
    # against tasks that always or never succeed (variance 1/4).
    steady = rng.binomial(8, 0.5, size=(reps, n)) / 8
    split = (rng.random((reps, n)) < 0.5).astype(float)
    r_low = mean_confidence_sequence(steady, times=times, target_half_width=target)
    r_high = mean_confidence_sequence(split, times=times, target_half_width=target)
    assert np.all(r_low.stop_index >= 0) and np.all(r_high.stop_index >= 0)
    assert np.all(r_low.final_time < r_high.final_time)


def test_low_variance_agent_stops_earlier_through_the_stopping_rule():
    def rounds_until_stop(icc, seed):
        rng = np.random.default_rng(seed)
        scores, tasks, rounds = [], [], []
        for b in range(60):
            y, t, _ = _trial_table(rng, 10, 4, 0.5, icc, 10, start=10 * b)
            scores.append(y)
            tasks.append(t)
            rounds.append(np.full(y.size, b))
            d = stopping_decision(
                AgentTrials(np.concatenate(scores), np.concatenate(tasks), np.concatenate(rounds)),
                StoppingRule(half_width=0.1, budget=1e9, max_trials_per_task=4),
            )
            if d.stop:
                assert d.status == "target_met"
                return b + 1
        raise AssertionError("never stopped")

    # ICC 0.95: task means near 0 or 1 (variance ≈ 0.24); ICC 0.05 with 4 trials: ≈ 0.07.
    assert rounds_until_stop(0.05, 1) < rounds_until_stop(0.95, 1)


# --- the trial-table front end -----------------------------------------------------------------


def test_units_are_tasks_with_their_entry_round_trials():
    scores = np.array([1, 0, 1, 1, 0, 0, 1, 1, 1, 0], dtype=float)
    tasks = np.array(["a", "a", "b", "b", "a", "a", "c", "c", "b", "d"])
    rounds = np.array([0, 0, 0, 0, 1, 1, 1, 1, 1, 2])
    res = confidence_sequence(scores, tasks, rounds)
    assert res.tasks.tolist() == ["a", "b", "c", "d"]
    assert res.unit_values.tolist() == [0.5, 1.0, 1.0, 0.0]
    assert res.unit_trials.tolist() == [2, 2, 2, 1]
    assert res.entry_round.tolist() == [0, 0, 1, 2]
    assert res.n_trials_excluded == 3  # a's and b's trials in round 1
    assert res.n_tasks.tolist() == [2, 3, 4]
    assert res.n_trials.tolist() == [4, 6, 7]
    assert res.estimate.tolist() == pytest.approx([0.75, 2.5 / 3, 2.5 / 4])
    assert res.mean == pytest.approx(0.625)
    assert res.half_width == pytest.approx((res.ci_high - res.ci_low) / 2)
    assert any("after their entry round" in w for w in res.warnings)


def test_estimate_is_the_mean_of_task_means_and_prefixes_agree():
    rng = np.random.default_rng(2)
    scores, tasks, rounds = _trial_table(rng, 60, 3, 0.6, 0.4, 12)
    res = confidence_sequence(scores, tasks, rounds, tuning_half_width=0.1)
    assert res.mean == pytest.approx(accuracy(scores, tasks).mean, abs=1e-12)
    # What a run that stopped after round 2 would have reported is the full run's entry 2.
    early = rounds <= 2
    part = confidence_sequence(scores[early], tasks[early], rounds[early], tuning_half_width=0.1)
    assert part.ci_low == res.lower[2] and part.ci_high == res.upper[2]


def test_a_round_without_new_tasks_repeats_the_interval():
    scores = np.array([1, 0, 1, 0, 1, 1, 0, 0], dtype=float)
    tasks = np.array([0, 0, 1, 1, 0, 1, 2, 2])
    rounds = np.array([0, 0, 0, 0, 1, 1, 2, 2])
    res = confidence_sequence(scores, tasks, rounds)
    assert res.n_tasks.tolist() == [2, 2, 3]
    assert res.lower[1] == res.lower[0] and res.upper[1] == res.upper[0]


def test_paired_sequence_covers_the_difference_and_counts_dropped_tasks():
    rng = np.random.default_rng(4)
    reps, covered = 150, 0
    for _ in range(reps):
        n, trials = 400, 2
        p_a = rng.beta(2, 2, n)
        p_b = np.clip(p_a - 0.1 + rng.normal(0, 0.05, n), 0, 1)
        task = np.repeat(np.arange(n), trials)
        ya = (rng.random(task.size) < p_a[task]).astype(float)
        yb = (rng.random(task.size) < p_b[task]).astype(float)
        round = task // 20
        res = paired_confidence_sequence(ya, task, round, yb, task, round, tuning_half_width=0.1)
        hit = np.flatnonzero((res.upper - res.lower) / 2 <= 0.1)
        j = hit[0] if hit.size else -1
        covered += res.lower[j] <= (p_a - p_b).mean() <= res.upper[j]
    assert covered / reps >= 0.93
    assert res.estimand == "difference"
    assert res.mean == pytest.approx(ya.mean() - yb.mean())
    # One agent missing a task's entry round drops that task from the sequence.
    keep = task != 3
    dropped = paired_confidence_sequence(ya[keep], task[keep], round[keep], yb, task, round)
    assert dropped.n_tasks_dropped == 1 and dropped.n_tasks[-1] == n - 1
    assert any("only one agent" in w for w in dropped.warnings)


def test_identical_agents_give_an_interval_around_zero():
    rng = np.random.default_rng(8)
    y, t, b = _trial_table(rng, 80, 3, 0.5, 0.5, 10)
    res = paired_confidence_sequence(y, t, b, y, t, b)
    assert res.mean == 0.0
    assert res.ci_low < 0 < res.ci_high
    assert res.ci_low == pytest.approx(-res.ci_high, abs=1e-5)


# --- the stopping rule -------------------------------------------------------------------------


def _decide(scores, tasks, rounds, *, spent=None, trials_b=None, **kw):
    args = {"half_width": 0.05, "budget": 1e6, "cost_per_task": 0.0, "cost_per_trial": 1.0}
    args.update(kw)
    rule = StoppingRule(**args)
    return stopping_decision(
        AgentTrials(scores, tasks, rounds), rule, spent=spent, trials_b=trials_b
    )


def test_stop_when_the_target_is_met():
    rng = np.random.default_rng(0)
    y, t, b = _trial_table(rng, 2000, 2, 0.9, 0.9, 100)
    d = _decide(y, t, b, half_width=0.05)
    assert d.stop and d.status == "target_met" and d.action == "stop"
    assert d.achieved <= 0.05 and "target met" in decision_text(d.to_dict())
    assert d.ci_low <= d.estimate <= d.ci_high
    assert d.next_new_tasks == 0


def test_stop_when_the_budget_is_spent_or_the_tasks_run_out():
    rng = np.random.default_rng(1)
    y, t, b = _trial_table(rng, 40, 4, 0.5, 0.5, 10)
    spent = 40 * 2.0 + 160 * 0.5
    # The cheapest new task (one trial) costs 2.5; the optimum here is 2 trials, 3.0.
    d = _decide(y, t, b, budget=spent + 3.0, cost_per_task=2.0, cost_per_trial=0.5)
    assert not d.stop and d.next_new_tasks == 1 and d.next_round_cost == pytest.approx(3.0)
    d = _decide(y, t, b, budget=spent + 2.9, cost_per_task=2.0, cost_per_trial=0.5)
    assert d.spent == pytest.approx(spent) and d.remaining == pytest.approx(2.9)
    assert d.stop and d.status == "budget_spent" and "budget spent" in decision_text(d.to_dict())
    d = _decide(y, t, b, max_tasks=40)
    assert d.stop and d.status == "limit_reached" and "cannot narrow" in decision_text(d.to_dict())
    d = _decide(y, t, b, budget=1e6, spent=1e6)
    assert d.stop and d.status == "budget_spent"


def test_more_tasks_when_tasks_cost_nothing_extra():
    # The paper's eq. 10: with c_task = 0 the optimum is one trial per task.
    rng = np.random.default_rng(2)
    y, t, b = _trial_table(rng, 40, 4, 0.5, 0.3, 10)
    d = _decide(y, t, b)
    assert not d.stop and d.status == "continue" and d.action == "more_tasks"
    assert d.optimal_trials == 0.0 and d.next_trials_per_task == 1
    assert d.next_new_tasks == 10
    assert d.gain_per_cost_task > d.gain_per_cost_trial
    assert "fewer than the current 4" in decision_text(d.to_dict())


def test_more_trials_when_tasks_are_expensive_and_trials_are_noisy():
    rng = np.random.default_rng(3)
    y, t, b = _trial_table(rng, 40, 2, 0.5, 0.15, 10)
    d = _decide(y, t, b, cost_per_task=40.0, cost_per_trial=1.0, max_trials_per_task=16)
    res = icc_oneway(y, t)
    t_star = math.sqrt(40.0 * res.sigma2_within / res.sigma2_between)
    assert d.optimal_trials == pytest.approx(t_star)
    assert d.action == "more_trials" and d.next_trials_per_task > 2
    assert d.next_trials_per_task in (min(math.floor(t_star), 16), min(math.ceil(t_star), 16))
    assert d.gain_per_cost_trial > d.gain_per_cost_task  # T = 2 < T*
    assert "keep their entry trials" in decision_text(d.to_dict())
    assert d.next_round_cost == pytest.approx(10 * (40.0 + d.next_trials_per_task))
    capped = _decide(y, t, b, cost_per_task=40.0, cost_per_trial=1.0, max_trials_per_task=3)
    assert capped.next_trials_per_task == 3


def test_marginal_gains_agree_with_cochrans_optimum():
    rng = np.random.default_rng(4)
    y, t, b = _trial_table(rng, 60, 4, 0.4, 0.5, 20)
    for c_task in (0.0, 1.0, 5.0, 25.0, 100.0):
        d = _decide(y, t, b, cost_per_task=c_task, cost_per_trial=1.0, max_trials_per_task=64)
        assert (d.gain_per_cost_trial > d.gain_per_cost_task) == (
            d.trials_per_task < d.optimal_trials
        )


def test_icc_target():
    rng = np.random.default_rng(5)
    y, t, b = _trial_table(rng, 30, 1, 0.5, 0.5, 10)
    d = _decide(y, t, b, target="icc", half_width=None, se=0.03)
    assert d.action == "more_trials" and d.next_trials_per_task == 2  # ICC needs 2 trials
    y, t, b = _trial_table(rng, 30, 4, 0.5, 0.5, 10)
    d = _decide(y, t, b, target="icc", half_width=None, se=0.03, cost_per_task=0.0)
    assert not d.stop and d.action in ("more_tasks", "more_trials")
    assert d.achieved == pytest.approx(icc_oneway(y, t).se)
    assert any("not an anytime-valid" in w for w in d.warnings)
    y, t, b = _trial_table(rng, 3000, 4, 0.5, 0.5, 500)
    d = _decide(y, t, b, target="icc", half_width=None, se=0.03)
    assert d.stop and d.status == "target_met"


def test_icc_target_with_no_variation_and_no_task_left_tops_up_and_says_why():
    # every score equal: the ICC is undefined; with the task cap reached only trials remain
    y = np.zeros(24 * 2)
    t = np.repeat(np.arange(24), 2)
    d = _decide(y, t, np.zeros_like(t), target="icc", half_width=None, se=0.1, max_tasks=24)
    assert d.action == "more_trials" and d.next_trials_per_task == 3
    assert "no task can be added" in decision_text(d.to_dict())
    assert "a second trial per task is needed" not in decision_text(d.to_dict())


def test_difference_target():
    rng = np.random.default_rng(6)
    ya, t, b = _trial_table(rng, 100, 2, 0.6, 0.5, 20)
    yb = np.clip(ya - (rng.random(ya.size) < 0.2), 0, 1)
    d = _decide(ya, t, b, target="difference", half_width=0.05, trials_b=AgentTrials(yb, t, b))
    assert not d.stop and d.target == "difference"
    assert d.estimate == pytest.approx(ya.mean() - yb.mean())
    assert d.n_trials == ya.size + yb.size
    assert d.spent == pytest.approx(ya.size + yb.size)  # c_task = 0, c_trial = 1 per agent
    assert "difference A − B" in decision_text(d.to_dict())


@pytest.mark.parametrize(
    "kwargs",
    [
        {"target": "icc"},  # needs se
        {"target": "accuracy", "half_width": None, "se": 0.1},
        {"target": "difference"},  # needs B's data
        {"target": "nope"},
        {"half_width": 0.0},
        {"budget": 0.0},
        {"cost_per_trial": 0.0},
        {"cost_per_task": -1.0},
        {"max_tasks": 0},
        {"trials_b": AgentTrials([1.0], [0], [0])},
    ],
)
def test_stopping_decision_rejects_bad_input(kwargs):
    with pytest.raises(ValueError):
        _decide(np.array([1.0, 0.0]), np.array([0, 1]), np.array([0, 0]), **kwargs)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"target": "icc"}, "the icc target takes se= (and no half_width)"),
        ({"half_width": None, "se": 0.1}, "the accuracy target takes half_width= (and no se)"),
        ({"target": "nope"}, "target must be 'accuracy', 'icc' or 'difference', got 'nope'"),
        ({"half_width": math.inf}, "the target must be a finite number > 0"),
        ({"budget": 0.0}, "budget must be a finite number > 0, got 0.0"),
        ({"cost_per_task": -1.0}, "cost_per_task must be a finite number >= 0, got -1.0"),
        ({"max_trials_per_task": 2.5}, "max_trials_per_task must be a positive integer"),
        ({"confidence": 1.0}, "confidence must lie strictly between 0 and 1, got 1.0"),
        ({"method": "hoeffding"}, "method must be 'betting' or 'empirical_bernstein'"),
    ],
)
def test_the_rule_is_checked_when_made(kwargs, message):
    args = {"half_width": 0.05, "budget": 100.0} | kwargs
    with pytest.raises(ValueError) as info:
        StoppingRule(**args)
    assert str(info.value).startswith(message)


def test_the_rule_stores_checked_numbers_and_its_goal():
    rule = StoppingRule(target="icc", se=np.float32(0.25), budget=10, max_tasks=np.int64(5))
    assert rule.goal == 0.25 and type(rule.se) is float and rule.half_width is None
    assert type(rule.budget) is float and type(rule.max_tasks) is int
    assert StoppingRule(half_width=0.1, budget=1.0).goal == 0.1
    with pytest.raises(AttributeError):
        rule.budget = 20.0  # frozen: a rule is fixed before the first round
    # the same rule decides the same way whether the trials come as lists or arrays
    y, t, b = [1.0, 0.0, 1.0, 1.0], [0, 0, 1, 1], [0, 0, 0, 0]
    listed = stopping_decision(AgentTrials(y, t, b), StoppingRule(half_width=0.1, budget=50.0))
    arrays = stopping_decision(
        AgentTrials(np.array(y), np.array(t), np.array(b)),
        StoppingRule(half_width=0.1, budget=50.0),
    )
    assert listed.to_dict() == arrays.to_dict()


@pytest.mark.parametrize(
    "kwargs",
    [
        {"times": [0, 2]},
        {"times": [3, 2]},
        {"times": [1.5]},
        {"times": [11]},
        {"confidence": 1.0},
        {"truncation": 1.0},
        {"method": "hoeffding"},
        {"target_half_width": 0.0},
        {"tuning_half_width": 0.7},
        {"tol": 0.0},
    ],
)
def test_mean_confidence_sequence_rejects_bad_input(kwargs):
    with pytest.raises(ValueError):
        mean_confidence_sequence(np.full(10, 0.5), **kwargs)
    with pytest.raises(ValueError):
        mean_confidence_sequence(np.array([0.5, 1.2]))
    with pytest.raises(ValueError):
        confidence_sequence(np.array([1.0, 0.0]), np.array([0, 1]), np.array([0]))
