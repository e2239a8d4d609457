"""Budgets in money: a cost per task and a cost per trial, and how to spend them.

How many trials per task minimise the variance of the accuracy estimate for what they cost
(:func:`optimal_trials_per_task`, Cochran's optimum), the best whole allocation of a budget
(:func:`cost_allocation`) and a two-stage plan from a pilot (:func:`plan_from_pilot`). Budgets
in runs are :mod:`evalnoise.stats.planning`'s. Closed-form calculations on variance
components; inputs broadcast like numpy ufuncs where noted.

References
----------
Mustahsan et al., "Stochasticity in Agentic Evaluations: Quantifying Inconsistency with
Intraclass Correlation" (the paper): eq. 9–10, variance of the accuracy estimate.
Cochran, W. G. (1977). Sampling Techniques, 3rd ed., Wiley, §10.6: optimum subsample size in
two-stage sampling under a cost function c₁n + c₂nm.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ._checks import (
    check_finite_number,
    check_probability,
    optional_positive_int,
    scalar_or_array,
)
from ._distributions import norm_ppf
from ._results import DictResult

__all__ = [
    "CostAllocation",
    "CostAllocationResult",
    "OptimalTrialsResult",
    "PilotPlan",
    "affordable_count",
    "cost_allocation",
    "optimal_trials_per_task",
    "plan_from_pilot",
]

# Beyond this many candidate allocations the frontier search would need gigabytes; a budget
# that large relative to its unit costs is better expressed in coarser units.
_MAX_FRONTIER = 10_000_000
# Relative slack when checking n·(c_task + T·c_trial) <= B in floating point, so a plan that
# spends the budget exactly (0.1 + 0.2 …) is not rejected for a rounding error.
_COST_RTOL = 1e-9


@dataclass(frozen=True)
class OptimalTrialsResult(DictResult):
    """Cost-optimal trials per task (Cochran 1977, §10.6), continuous and whole.

    Attributes
    ----------
    trials_exact : T* = sqrt((c_task / c_trial) · (σ²_w / σ²_b)), unrounded and uncapped;
        inf when σ²_b = 0 < c_task·σ²_w, NaN when the cost-weighted variance does not depend
        on T (σ²_b = 0 and c_task·σ²_w = 0).
    trials : the whole T in 1..max_trials minimizing (σ²_b + σ²_w/T)(c_task + T·c_trial);
        ties go to the smaller T (more tasks for the money).
    unit_variance : σ²_b + σ²_w/T at ``trials``, the variance of one task's mean score.
    unit_cost : c_task + T·c_trial at ``trials``, the cost of one task.
    """

    trials: int | np.ndarray
    trials_exact: float | np.ndarray
    unit_variance: float | np.ndarray
    unit_cost: float | np.ndarray


@dataclass(frozen=True)
class CostAllocation(DictResult):
    """One way to spend a budget in money: ``n_tasks`` tasks × ``trials`` trials each."""

    n_tasks: int
    trials: int
    cost: float
    variance: float
    se: float


@dataclass(frozen=True)
class CostAllocationResult(DictResult):
    """The allocations on a money budget's frontier, and the one with the smallest variance.

    Attributes
    ----------
    budget : B, in money (or any unit both costs share).
    cost_per_task, cost_per_trial : c_task (fixed cost of adding a task: environment setup,
        image pull, task-level judge) and c_trial (container seconds × price, tokens × price,
        judge calls).
    sigma2_between, sigma2_within : the variance components the plan was computed from.
    max_tasks, max_trials : the caps (None: unlimited).
    trials_exact : Cochran's continuous optimum T* (see :class:`OptimalTrialsResult`); may
        be below 1 (0 when c_task = 0) or above ``max_trials``.
    n_tasks_exact : B / (c_task + T_c·c_trial) with T_c = T* clipped to [1, max_trials]: the
        tasks of the continuous optimum (NaN when T_c is infinite).
    variance_exact : Var(μ̂) at that continuous optimum, (σ²_b + σ²_w/T_c)(c_task +
        T_c·c_trial)/B; (σ_b·sqrt(c_task) + σ_w·sqrt(c_trial))²/B when T* lies in range. A
        lower bound: whole numbers and ``max_tasks`` can only add to it.
    n_tasks, trials : integer arrays, one row per allocation on the frontier (for each T the
        most tasks the budget buys, for each n the most trials), sorted by ``n_tasks``
        descending.
    cost : n·(c_task + T·c_trial) per row, at most ``budget``.
    variance : Var(μ̂) = σ²_b/n + σ²_w/(nT) (paper eq. 9).
    se : sqrt(variance).
    recommended : the row with the smallest variance (ties: the one with more tasks).
    tasks_without_cap : the recommended tasks with no ``max_tasks`` (``max_trials`` kept).
    pool_bound : whether the task pool binds: ``tasks_without_cap`` > ``max_tasks``.
    """

    budget: float
    cost_per_task: float
    cost_per_trial: float
    sigma2_between: float
    sigma2_within: float
    max_tasks: int | None
    max_trials: int | None
    trials_exact: float
    n_tasks_exact: float
    variance_exact: float
    n_tasks: np.ndarray
    trials: np.ndarray
    cost: np.ndarray
    variance: np.ndarray
    se: np.ndarray
    recommended: CostAllocation
    tasks_without_cap: int
    pool_bound: bool


@dataclass(frozen=True)
class PilotPlan(DictResult):
    """A two-stage design: variance components from a pilot, then the budget's best plan.

    Attributes
    ----------
    sigma2_between : σ̂²_b used for planning: the pilot's ANOVA component, floored at 0.
    sigma2_between_raw : the pilot's ANOVA component as estimated (may be negative).
    sigma2_within : σ̂²_w, the pilot's pooled within-task variance (MSW).
    icc : the pilot's ICC(1,1).
    pilot_tasks, pilot_trials : tasks and trials in the pilot.
    allocation : the plan, :func:`cost_allocation` on the pilot's components.
    se : SE of the accuracy estimate under the recommended plan, if the pilot's components
        are the truth.
    ci_half_width : z_{1−α/2}·se, the expected half-width of a fixed-n clustered CI.
    confidence : the level of ``ci_half_width``.
    warnings : reasons to distrust the plan (negative component, tiny pilot).
    """

    sigma2_between: float
    sigma2_between_raw: float
    sigma2_within: float
    icc: float
    pilot_tasks: int
    pilot_trials: int
    allocation: CostAllocationResult
    se: float
    ci_half_width: float
    confidence: float
    warnings: tuple[str, ...] = ()


def optimal_trials_per_task(
    sigma2_between: float | np.ndarray,
    sigma2_within: float | np.ndarray,
    cost_per_task: float | np.ndarray,
    cost_per_trial: float | np.ndarray,
    *,
    max_trials: int | None = None,
) -> OptimalTrialsResult:
    r"""Trials per task that minimize Var(μ̂) for the money (two-stage sampling optimum).

    A task costs c_task + T·c_trial and its mean score has variance σ²_b + σ²_w/T, so n
    tasks bought with a budget B = n(c_task + T·c_trial) give (paper eq. 9)

    .. math::

        \mathrm{Var}(\hat\mu) = \frac{\sigma_b^2}{n} + \frac{\sigma_w^2}{nT}
        = \frac{(\sigma_b^2 + \sigma_w^2/T)(c_{task} + T c_{trial})}{B},

    whose minimum over T > 0 is at

    .. math::

        T^* = \sqrt{\frac{c_{task}}{c_{trial}} \cdot \frac{\sigma_w^2}{\sigma_b^2}},\qquad
        \mathrm{Var}^* = \frac{(\sigma_b\sqrt{c_{task}} + \sigma_w\sqrt{c_{trial}})^2}{B}

    (Cochran 1977, *Sampling Techniques*, 3rd ed., §10.6, optimum subsample size in two-stage
    sampling with cost C = c₁n + c₂nm; Snedecor & Cochran, *Statistical Methods*, the same
    result for nested designs). The paper's eq. 10 is the case c_task = 0: T* = 0, i.e. one
    trial per task and as many tasks as the budget buys. The product is convex in T, so the
    best whole T is floor(T*) or ceil(T*), clipped to 1..max_trials. Arguments broadcast.

    Equivalently, T < T* exactly when one more trial on every task lowers Var(μ̂) more per
    unit of money than one more task does (compare ∂Var/∂T / (n·c_trial) with
    ∂Var/∂n / (c_task + T·c_trial)).

    Parameters
    ----------
    sigma2_between, sigma2_within : σ²_b and σ²_w (>= 0).
    cost_per_task : c_task >= 0.
    cost_per_trial : c_trial > 0.
    max_trials : the largest T allowed (None: no cap).

    Returns
    -------
    OptimalTrialsResult
    """
    s2b = np.asarray(sigma2_between, dtype=float)
    s2w = np.asarray(sigma2_within, dtype=float)
    c1 = np.asarray(cost_per_task, dtype=float)
    c2 = np.asarray(cost_per_trial, dtype=float)
    if not np.all(np.isfinite(s2b) & np.isfinite(s2w) & (s2b >= 0) & (s2w >= 0)):
        raise ValueError("variance components must be finite and >= 0")
    if not np.all(np.isfinite(c1) & (c1 >= 0)):
        raise ValueError("cost_per_task must be finite and >= 0")
    if not np.all(np.isfinite(c2) & (c2 > 0)):
        raise ValueError("cost_per_trial must be finite and > 0")
    cap = optional_positive_int(max_trials, "max_trials")
    with np.errstate(divide="ignore", invalid="ignore"):
        exact = np.sqrt((c1 * s2w) / (c2 * s2b))
    hi_cap = np.inf if cap is None else float(cap)
    # Candidates floor(T*) and ceil(T*), clipped to [1, cap]; a non-finite T* means "as many
    # as allowed" (inf) or "any" (NaN: take 1, the most tasks).
    finite = np.isfinite(exact)
    unbounded = np.where(np.isnan(exact), 1.0, hi_cap)
    lo = np.where(finite, np.floor(np.where(finite, exact, 1.0)), unbounded)
    lo = np.clip(lo, 1.0, hi_cap)
    hi = np.clip(np.where(finite, lo + 1.0, lo), 1.0, hi_cap)
    if not np.all(np.isfinite(hi)):
        raise ValueError(
            "σ²_between = 0 makes the optimal number of trials per task infinite: give max_trials"
        )

    def unit(t):
        return (s2b + s2w / t) * (c1 + t * c2)

    u_lo, u_hi = unit(lo), unit(hi)
    best = np.where(u_hi < u_lo, hi, lo)
    return OptimalTrialsResult(
        trials=scalar_or_array(best.astype(np.int64), int),
        trials_exact=scalar_or_array(exact),
        unit_variance=scalar_or_array(s2b + s2w / best),
        unit_cost=scalar_or_array(c1 + best * c2),
    )


def affordable_count(
    money: float | np.ndarray, price: float | np.ndarray, *, rtol: float = _COST_RTOL
) -> np.ndarray:
    """How many units ``money`` buys at ``price``: ⌊money / price · (1 + rtol)⌋, so rounding
    does not lose one (0.3 / 0.1 buys 3, not 2); 0 where ``money`` is not positive.
    Vectorized; int64."""
    money = np.asarray(money, dtype=float)
    q = np.floor(money / price * (1 + rtol))
    return np.where(money > 0, q, 0).astype(np.int64)


def cost_allocation(
    budget: float,
    sigma2_between: float,
    sigma2_within: float,
    *,
    cost_per_task: float,
    cost_per_trial: float,
    max_tasks: int | None = None,
    max_trials: int | None = None,
) -> CostAllocationResult:
    r"""Split a budget in money between tasks and trials: minimize Var(μ̂) at a given cost.

    Minimizes Var(μ̂) = σ²_b/n + σ²_w/(nT) (paper eq. 9) subject to

        n·c_task + n·T·c_trial <= B,  1 <= n <= max_tasks,  1 <= T <= max_trials,

    over whole numbers n and T. The continuous optimum is Cochran's (1977, §10.6)
    T* = sqrt((c_task/c_trial)(σ²_w/σ²_b)) with n* = B/(c_task + T*·c_trial) and
    Var* = (σ_b·sqrt(c_task) + σ_w·sqrt(c_trial))²/B (see :func:`optimal_trials_per_task`);
    it is reported as ``trials_exact``, ``n_tasks_exact`` and ``variance_exact`` (the last
    two with T* clipped to [1, max_trials], since a task has at least one trial).

    The integer optimum is found by exhaustive search of the frontier: Var falls in both n
    and T, so the best plan spends as much as it can — for each T the most tasks the budget
    buys, and for each n the most trials. Enumerating the smaller of the two ranges covers
    every frontier point, like :func:`allocation_table`'s divisor pairs: at most about
    sqrt(B/c_trial) candidates. A cap changes the answer the way the paper says it does after
    eq. 10: once every task is in (n = max_tasks), the rest of the budget buys trials.

    With c_task = 0 and c_trial = 1 the budget counts runs and the result agrees with
    :func:`allocation_table` (whose rows spend the budget exactly; this frontier also keeps
    plans that leave a remainder).

    Parameters
    ----------
    budget : B > 0.
    sigma2_between, sigma2_within : σ²_b and σ²_w, e.g. from a pilot (:func:`plan_from_pilot`).
    cost_per_task : c_task >= 0, paid once per task.
    cost_per_trial : c_trial > 0, paid per trial.
    max_tasks : tasks available (None: unlimited).
    max_trials : largest number of trials per task (None: unlimited).

    Returns
    -------
    CostAllocationResult

    Raises
    ------
    ValueError
        When the budget does not buy one task with one trial, or an argument is out of range.

    References
    ----------
    Cochran, W. G. (1977). *Sampling Techniques*, 3rd ed., Wiley, §10.6.
    Snedecor, G. W. & Cochran, W. G. (1989). *Statistical Methods*, 8th ed., Iowa State.
    """
    b = check_finite_number(budget, "budget", positive=True)
    c1 = check_finite_number(cost_per_task, "cost_per_task")
    c2 = check_finite_number(cost_per_trial, "cost_per_trial", positive=True)
    s2b = check_finite_number(sigma2_between, "sigma2_between")
    s2w = check_finite_number(sigma2_within, "sigma2_within")
    n_cap = optional_positive_int(max_tasks, "max_tasks")
    t_cap = optional_positive_int(max_trials, "max_trials")

    n_hi = int(affordable_count(np.float64(b), np.float64(c1 + c2)))
    t_hi = int(affordable_count(np.float64(b - c1), np.float64(c2))) if b > c1 else 0
    if n_hi < 1 or t_hi < 1:
        raise ValueError(f"budget {b:g} does not buy one task with one trial (cost {c1 + c2:g})")
    if n_cap is not None:
        n_hi = min(n_hi, n_cap)
    if t_cap is not None:
        t_hi = min(t_hi, t_cap)
    if min(n_hi, t_hi) > _MAX_FRONTIER:
        raise ValueError(
            "the budget buys too many candidate allocations to search; express budget and "
            "costs in a coarser unit"
        )

    if n_hi <= t_hi:
        n = np.arange(1, n_hi + 1, dtype=np.int64)
        trials = np.minimum(affordable_count((b / n - c1), np.float64(c2)), t_hi)
    else:
        trials = np.arange(1, t_hi + 1, dtype=np.int64)
        n = np.minimum(affordable_count(np.float64(b), c1 + trials * c2), n_hi)
    keep = (n >= 1) & (trials >= 1)
    n, trials = n[keep], trials[keep]
    # The frontier: drop rows another row dominates (as many tasks and as many trials).
    order = np.lexsort((-trials, -n))  # n descending, then T descending
    n, trials = n[order], trials[order]
    best_t_so_far = np.maximum.accumulate(trials)
    front = np.ones(n.size, dtype=bool)
    front[1:] = trials[1:] > best_t_so_far[:-1]
    n, trials = n[front], trials[front]

    cost = n * (c1 + trials * c2)
    variance = s2b / n + s2w / (n * trials)
    se = np.sqrt(variance)
    best = int(np.lexsort((-n, variance))[0])
    rec = CostAllocation(
        int(n[best]), int(trials[best]), float(cost[best]), float(variance[best]), float(se[best])
    )

    with np.errstate(divide="ignore", invalid="ignore"):
        t_exact = float(np.sqrt(np.float64(c1 * s2w) / np.float64(c2 * s2b)))
    # The continuous relaxation over T in [1, max_trials] (n unbounded): convex in T, so its
    # minimum is at T* clipped to that range; NaN T* means any T does (take 1).
    t_c = 1.0 if math.isnan(t_exact) else min(max(t_exact, 1.0), t_cap or math.inf)
    if math.isinf(t_c):
        n_exact, var_exact = float("nan"), s2w * c2 / b
    else:
        n_exact = b / (c1 + t_c * c2)
        var_exact = (s2b + s2w / t_c) * (c1 + t_c * c2) / b
    free = rec.n_tasks
    if n_cap is not None:
        free = cost_allocation(
            b, s2b, s2w, cost_per_task=c1, cost_per_trial=c2, max_trials=t_cap
        ).recommended.n_tasks
    return CostAllocationResult(
        budget=b,
        cost_per_task=c1,
        cost_per_trial=c2,
        sigma2_between=s2b,
        sigma2_within=s2w,
        max_tasks=n_cap,
        max_trials=t_cap,
        trials_exact=t_exact,
        n_tasks_exact=n_exact,
        variance_exact=var_exact,
        n_tasks=n,
        trials=trials,
        cost=cost,
        variance=variance,
        se=se,
        recommended=rec,
        tasks_without_cap=int(free),
        pool_bound=n_cap is not None and free > n_cap,
    )


def plan_from_pilot(
    scores: np.ndarray,
    tasks: np.ndarray,
    *,
    budget: float,
    cost_per_task: float = 0.0,
    cost_per_trial: float = 1.0,
    max_tasks: int | None = None,
    max_trials: int | None = None,
    confidence: float = 0.95,
) -> PilotPlan:
    """Two-stage design: estimate σ²_b and σ²_w from a pilot, then plan the main run.

    Stage 1 is a small pilot (a few tasks, at least two trials on some of them); its one-way
    ANOVA (:func:`evalnoise.stats.icc_oneway`) gives σ̂²_w = MSW and σ̂²_b = (MSB − MSW)/n0.
    Stage 2 spends ``budget`` as :func:`cost_allocation` says for those components
    (Cochran 1977, §10.6). A negative σ̂²_b (task means vary less than trial noise predicts)
    is planned as 0 and said so in ``warnings``.

    The plan treats the pilot's components as the truth; with a pilot of a handful of tasks
    σ̂²_b is rough (its relative SE is about sqrt(2/(a − 1)) for a tasks), so the expected
    ``ci_half_width`` is a forecast, not a promise. For a precision guarantee, run the main
    stage adaptively with :func:`evalnoise.stats.stopping.stopping_decision`. The pilot's
    own trials are not counted in the plan; ``budget`` is for stage 2.

    Parameters
    ----------
    scores, tasks : the pilot's long table, one row per trial.
    budget, cost_per_task, cost_per_trial, max_tasks, max_trials : as :func:`cost_allocation`.
    confidence : level of the forecast ``ci_half_width``.

    Returns
    -------
    PilotPlan

    Raises
    ------
    ValueError
        When the pilot cannot estimate both components (one task, or one trial per task).
    """
    from evalnoise.stats.icc import icc_oneway

    conf = check_probability(confidence, "confidence")
    res = icc_oneway(np.asarray(scores, dtype=float), np.asarray(tasks), confidence=conf)
    if not (math.isfinite(res.sigma2_between) and math.isfinite(res.sigma2_within)):
        raise ValueError(
            "the pilot cannot estimate both variance components: it needs at least two tasks "
            "and at least two trials of some task"
        )
    warnings: list[str] = []
    s2b = res.sigma2_between
    if s2b < 0:
        warnings.append(
            f"the pilot's between-task component is negative ({s2b:.4g}); planned as 0, which "
            "favours few tasks with many trials — check with a larger pilot"
        )
        s2b = 0.0
    if res.n_tasks < 10:
        warnings.append(
            f"the pilot has only {res.n_tasks} tasks: σ²_between is rough, and so is the plan"
        )
    if s2b == 0 and max_trials is None and res.sigma2_within > 0 and cost_per_task > 0:
        raise ValueError(
            "with σ²_between = 0 the optimal number of trials per task is unbounded: "
            "give max_trials"
        )
    alloc = cost_allocation(
        budget,
        s2b,
        res.sigma2_within,
        cost_per_task=cost_per_task,
        cost_per_trial=cost_per_trial,
        max_tasks=max_tasks,
        max_trials=max_trials,
    )
    z = float(norm_ppf(0.5 + conf / 2))
    return PilotPlan(
        sigma2_between=s2b,
        sigma2_between_raw=float(res.sigma2_between),
        sigma2_within=float(res.sigma2_within),
        icc=float(res.icc),
        pilot_tasks=res.n_tasks,
        pilot_trials=res.n_obs,
        allocation=alloc,
        se=alloc.recommended.se,
        ci_half_width=z * alloc.recommended.se,
        confidence=conf,
        warnings=tuple(warnings),
    )
