"""Planning an evaluation: how to spend a budget of runs, how many tasks, what difference is
detectable.

Every function here is a closed-form calculation on variance components or an expected ICC; none
looks at trial data. Budgets in money (a cost per task and per trial) are
:mod:`evalnoise.stats.cost_allocation`'s. Inputs broadcast like numpy ufuncs where noted, so a
whole planning grid is one call.

References
----------
Mustahsan et al., "Stochasticity in Agentic Evaluations: Quantifying Inconsistency with
Intraclass Correlation" (the paper): eq. 9–10, variance of the accuracy estimate.
Bonett, D. G. (2002). Sample size requirements for estimating intraclass correlations with
desired precision. Statistics in Medicine 21(9), 1331–1335.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ._checks import (
    check_finite_number,
    check_positive_int,
    check_probability,
    optional_positive_int,
    scalar_or_array,
)
from ._distributions import norm_ppf
from ._results import DictResult

__all__ = [
    "Allocation",
    "AllocationResult",
    "MDDResult",
    "SampleSizeResult",
    "allocation_table",
    "minimum_detectable_difference",
    "tasks_for_icc_precision",
]


@dataclass(frozen=True)
class Allocation(DictResult):
    """One way to spend a budget: ``n_tasks`` tasks × ``trials`` trials each."""

    n_tasks: int
    trials: int
    variance: float
    se: float


@dataclass(frozen=True)
class AllocationResult(DictResult):
    """Every candidate allocation of a budget, and the one with the smallest variance.

    Attributes
    ----------
    budget : B, the number of (task, trial) runs available.
    sigma2_between, sigma2_within : the variance components the table was computed from.
    max_tasks : n_max, the number of tasks that exist (None: unlimited).
    n_tasks, trials : integer arrays, one row per candidate, sorted by ``n_tasks`` descending.
    trials_used : n·T per row; equals ``budget`` except where ``max_tasks`` or a trials grid
        makes the budget not divide evenly.
    variance : Var(μ̂) = σ²_b/n + σ²_w/(nT) (paper eq. 9).
    se : sqrt(variance).
    recommended : the row with the smallest variance (ties: the one with more tasks).
    tasks_without_cap : the recommended tasks with no ``max_tasks``.
    pool_bound : whether the task pool binds: ``tasks_without_cap`` > ``max_tasks``, so the
        recommendation spends the rest on more trials per task.
    """

    budget: int
    sigma2_between: float
    sigma2_within: float
    max_tasks: int | None
    n_tasks: np.ndarray
    trials: np.ndarray
    trials_used: np.ndarray
    variance: np.ndarray
    se: np.ndarray
    recommended: Allocation
    tasks_without_cap: int
    pool_bound: bool


@dataclass(frozen=True)
class SampleSizeResult(DictResult):
    """Tasks needed to estimate ICC(1,1) with a target precision (Bonett 2002).

    Attributes
    ----------
    n_tasks_needed : the smallest whole number of tasks meeting the target (at least 2).
    n_exact : the unrounded solution of the formula.
    icc, trials, confidence : the planning values.
    ci_width : the target full width of the CI (given, or implied by ``se``).
    se : the target standard error (given, or implied by ``ci_width``).
    """

    n_tasks_needed: int | np.ndarray
    n_exact: float | np.ndarray
    icc: float | np.ndarray
    trials: int | np.ndarray
    ci_width: float | np.ndarray
    se: float | np.ndarray
    confidence: float


@dataclass(frozen=True)
class MDDResult(DictResult):
    """Minimum detectable difference in mean accuracy between two agents.

    Attributes
    ----------
    mdd : the smallest true difference detected with probability ``power`` by a two-sided
        level-``alpha`` z-test.
    se_diff : SE of the difference of the two accuracy estimates, sqrt(2·Var(μ̂)·(1 − r)).
    variance : Var(μ̂) of one agent's accuracy estimate (paper eq. 9).
    z_alpha, z_power : z_{1−α/2} and z_{power}.
    """

    mdd: float | np.ndarray
    se_diff: float | np.ndarray
    variance: float | np.ndarray
    z_alpha: float
    z_power: float
    n_tasks: float | np.ndarray
    trials: float | np.ndarray
    sigma2_between: float | np.ndarray
    sigma2_within: float | np.ndarray
    alpha: float
    power: float
    paired_correlation: float | np.ndarray


def allocation_table(
    budget: int,
    sigma2_between: float,
    sigma2_within: float,
    *,
    max_tasks: int | None = None,
    trials_grid: np.ndarray | list[int] | None = None,
) -> AllocationResult:
    """Enumerate ways to split a budget of B runs into n tasks × T trials.

    The variance of the accuracy estimate (paper eq. 9) is

        Var(μ̂) = σ²_b / n + σ²_w / (n T),

    and with n T = B fixed it is σ²_b / n + σ²_w / B (eq. 10): only the first term depends on
    the split, so more tasks is always better until the task pool n_max is exhausted; past that
    point only more trials per task help.

    Parameters
    ----------
    budget : B, total (task, trial) runs.
    sigma2_between, sigma2_within : σ²_b and σ²_w, e.g. from a pilot run's one-way ANOVA.
    max_tasks : n_max, tasks available. Allocations with n > n_max are left out, and the
        saturated allocation (n_max, floor(B / n_max)) is added when n_max < B, because that
        is the paper's "then increase T" option even when n_max does not divide B.
    trials_grid : if given, the candidate T values instead of the divisors of B; each gets
        n = min(floor(B / T), n_max), and rows with n < 1 are dropped.

    Returns
    -------
    AllocationResult
        Candidates sorted by ``n_tasks`` descending and the minimum-variance ``recommended``.

    Examples
    --------
    The paper's example (σ²_b/σ²_w = 5, B = 400): n = 100, T = 4 gives an SE 67.7 % lower
    than n = 10, T = 40 (the paper rounds to 68 %).
    """
    b = check_positive_int(budget, "budget")
    s2b = check_finite_number(sigma2_between, "sigma2_between")
    s2w = check_finite_number(sigma2_within, "sigma2_within")
    n_max = optional_positive_int(max_tasks, "max_tasks")
    cap = b if n_max is None else min(n_max, b)

    if trials_grid is None:
        # Divisors come in pairs (d, B/d) with d <= sqrt(B): O(sqrt B) instead of O(B).
        d = np.arange(1, math.isqrt(b) + 1, dtype=np.int64)
        d = d[b % d == 0]
        n = np.unique(np.concatenate([d, b // d]))
        n = n[n <= cap]
        if cap not in n:
            n = np.append(n, cap)
        trials = b // n
    else:
        t = np.unique(np.asarray(trials_grid))
        if t.size == 0 or not np.issubdtype(t.dtype, np.integer) or t[0] < 1:
            raise ValueError("trials_grid must be a non-empty set of positive integers")
        t = t.astype(np.int64)
        n = np.minimum(b // t, cap)
        keep = n >= 1
        n, trials = n[keep], t[keep]
        if n.size == 0:
            raise ValueError(f"every T in trials_grid exceeds the budget {b}")

    order = np.argsort(-n, kind="stable")
    n, trials = n[order], trials[order]
    used = n * trials
    # Integer n·T first, so allocations that spend the same budget get bit-identical variance
    # and ties resolve on n alone.
    variance = s2b / n + s2w / used
    se = np.sqrt(variance)
    best = int(np.lexsort((-n, variance))[0])
    rec = Allocation(int(n[best]), int(trials[best]), float(variance[best]), float(se[best]))
    free = rec.n_tasks
    if n_max is not None:
        free = allocation_table(b, s2b, s2w, trials_grid=trials_grid).recommended.n_tasks
    bound = n_max is not None and free > n_max
    return AllocationResult(b, s2b, s2w, n_max, n, trials, used, variance, se, rec, free, bound)


def tasks_for_icc_precision(
    icc: float | np.ndarray,
    trials: int | np.ndarray,
    *,
    ci_width: float | np.ndarray | None = None,
    se: float | np.ndarray | None = None,
    confidence: float = 0.95,
) -> SampleSizeResult:
    """Tasks needed so that ICC(1,1) is estimated with a given CI width or standard error.

    Bonett's (2002) large-sample variance of the one-way ICC estimate with n subjects (here:
    tasks) and k ratings each (here: trials) is

        SE²(ρ̂) ≈ 2 (1 − ρ)² (1 + (k − 1) ρ)² / (k (k − 1) (n − 1)),

    so a Wald CI of full width w = 2 z_{α/2} SE needs (Bonett 2002)

        n = 8 z²_{α/2} (1 − ρ)² (1 + (k − 1) ρ)² / (k (k − 1) w²) + 1,

    and a target SE s needs n = 2 (1 − ρ)² (1 + (k − 1) ρ)² / (k (k − 1) s²) + 1. The paper
    cites this SE for its precision guideline (SE(ICC) ≤ 0.03, next to eq. 8). Arguments
    broadcast.

    Parameters
    ----------
    icc : planning value of ρ, in [0, 1].
    trials : k ≥ 2, trials per task.
    ci_width, se : exactly one target: full CI width w, or standard error s.
    confidence : CI level for ``ci_width`` (and for the implied width when ``se`` is given).

    Returns
    -------
    SampleSizeResult
        ``n_tasks_needed`` is ``ceil(n_exact)``, and never below 2 (the ANOVA needs two tasks).

    Notes
    -----
    The formula is a large-sample approximation and is least accurate for k = 2 with large ρ,
    where it undersizes slightly. Worked values (95 %): ρ = 0.7, k = 2, w = 0.2 gives 101, as
    the R package ``ICC``'s ``Nest()`` does; ρ = 0.8, k = 2, w = 0.2 gives 51.
    """
    if (ci_width is None) == (se is None):
        raise ValueError("give exactly one of ci_width or se")
    conf = check_probability(confidence, "confidence")
    rho = np.asarray(icc, dtype=float)
    k = np.asarray(trials)
    if not np.issubdtype(k.dtype, np.integer) or np.any(k < 2):
        raise ValueError("trials must be integers >= 2")
    if not np.all((rho >= 0) & (rho <= 1)):
        raise ValueError("icc must lie in [0, 1]")
    z = float(norm_ppf(0.5 + conf / 2))
    if ci_width is not None:
        w = np.asarray(ci_width, dtype=float)
        if not np.all(np.isfinite(w) & (w > 0)):
            raise ValueError("ci_width must be finite and > 0")
        s = w / (2 * z)
    else:
        s = np.asarray(se, dtype=float)
        if not np.all(np.isfinite(s) & (s > 0)):
            raise ValueError("se must be finite and > 0")
        w = 2 * z * s
    kf = k.astype(float)
    n_exact = 2 * (1 - rho) ** 2 * (1 + (kf - 1) * rho) ** 2 / (kf * (kf - 1) * s**2) + 1
    # Shave a few ulps before rounding up so an exact integer solution computed as
    # 51.00000000000001 stays 51.
    n_needed = np.maximum(np.ceil(n_exact * (1 - 1e-12)), 2).astype(np.int64)
    return SampleSizeResult(
        n_tasks_needed=scalar_or_array(n_needed, int),
        n_exact=scalar_or_array(n_exact),
        icc=scalar_or_array(rho),
        trials=scalar_or_array(k, int),
        ci_width=scalar_or_array(w),
        se=scalar_or_array(s),
        confidence=conf,
    )


def minimum_detectable_difference(
    n_tasks: float | np.ndarray,
    trials: float | np.ndarray,
    sigma2_between: float | np.ndarray,
    sigma2_within: float | np.ndarray,
    *,
    alpha: float = 0.05,
    power: float = 0.8,
    paired_correlation: float | np.ndarray = 0.0,
) -> MDDResult:
    """Smallest accuracy difference between two agents detectable at level α with given power.

    Each agent's accuracy estimate has Var(μ̂) = σ²_b/n + σ²_w/(nT) (paper eq. 9). The
    difference of two such estimates whose task means correlate r has variance
    2 Var(μ̂)(1 − r), and a two-sided z-test at level α reaches power 1 − β at

        MDD = (z_{1−α/2} + z_{1−β}) · sqrt(2 Var(μ̂) (1 − r)),

    ignoring the negligible chance of rejecting in the wrong direction. Arguments broadcast.

    Parameters
    ----------
    n_tasks : n, tasks both agents run (may be fractional when planning on averages).
    trials : T, trials per task (for unbalanced designs, the harmonic mean of T_i).
    sigma2_between, sigma2_within : σ²_b and σ²_w, assumed equal for both agents.
    alpha : two-sided significance level.
    power : 1 − β.
    paired_correlation : r, correlation of the two agents' task means over tasks. 0 treats the
        agents as run on independent task samples; agents run on the same tasks usually have
        r > 0 (shared task difficulty), which shrinks the MDD. Must lie in [−1, 1).

    Returns
    -------
    MDDResult
    """
    a = check_probability(alpha, "alpha")
    pw = check_probability(power, "power")
    n = np.asarray(n_tasks, dtype=float)
    t = np.asarray(trials, dtype=float)
    s2b = np.asarray(sigma2_between, dtype=float)
    s2w = np.asarray(sigma2_within, dtype=float)
    r = np.asarray(paired_correlation, dtype=float)
    if not np.all(n > 0) or not np.all(t > 0):
        raise ValueError("n_tasks and trials must be > 0")
    if not np.all((s2b >= 0) & (s2w >= 0) & np.isfinite(s2b) & np.isfinite(s2w)):
        raise ValueError("variance components must be finite and >= 0")
    if not np.all((r >= -1) & (r < 1)):
        raise ValueError("paired_correlation must lie in [-1, 1)")
    z_a = float(norm_ppf(1 - a / 2))
    z_p = float(norm_ppf(pw))
    variance = s2b / n + s2w / (n * t)
    se_diff = np.sqrt(2 * variance * (1 - r))
    mdd = (z_a + z_p) * se_diff
    return MDDResult(
        mdd=scalar_or_array(mdd),
        se_diff=scalar_or_array(se_diff),
        variance=scalar_or_array(variance),
        z_alpha=z_a,
        z_power=z_p,
        n_tasks=scalar_or_array(n),
        trials=scalar_or_array(t),
        sigma2_between=scalar_or_array(s2b),
        sigma2_within=scalar_or_array(s2w),
        alpha=a,
        power=pw,
        paired_correlation=scalar_or_array(r),
    )
