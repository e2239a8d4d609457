"""Adaptive evaluation: anytime-valid confidence sequences for accuracy, and when to stop.

An adaptive evaluation runs in blocks — after each block of trials it looks at the data and
decides to stop or to run another block (new tasks, more trials). A fixed-n confidence
interval recomputed after every block and stopped "when narrow enough" is no longer a 95 %
interval at the time it is reported: each look is another chance to stop on a lucky draw.
A *confidence sequence* (CS; Howard et al. 2021) is a sequence of intervals C_1, C_2, …
that covers the estimand at every time simultaneously, P(∀t: μ ∈ C_t) ≥ 1 − α, so the
interval at any data-dependent time — the first block where it is narrow enough, the block
where the money ran out — still covers with probability ≥ 1 − α. Checking after every block
costs nothing.

Method
------
The hedged betting CS of Waudby-Smith & Ramdas (2024), "Estimating means of bounded random
variables by betting", JRSS-B 86(1), 1–27 (arXiv:2010.09686), Theorem 3 (the hedged
capital process), with their predictable plug-in bets. For each candidate mean m two
gamblers bet on unit values X_i ∈ [0, 1]:

    K⁺_t(m) = Π_{i≤t} (1 + λ⁺_i(m)(X_i − m)),   K⁻_t(m) = Π_{i≤t} (1 − λ⁻_i(m)(X_i − m)),

    λ⁺_i(m) = min(λ̇_i, c/m),   λ⁻_i(m) = min(λ̇_i, c/(1 − m)),   c = 1/2,

    λ̇_i = sqrt(2 log(2/α) / (σ̂²_{i−1} · i · log(1 + i))),

    μ̂_i = (1/2 + Σ_{j≤i} X_j)/(i + 1),   σ̂²_i = (1/4 + Σ_{j≤i} (X_j − μ̂_j)²)/(i + 1),

and C_t = {m : max(½K⁺_t(m), ½K⁻_t(m)) < 1/α}. At the true mean both capital processes are
nonnegative martingales starting at 1 (every bet is chosen before X_i is seen, and the
truncation keeps every factor >= 1 − c > 0), so is ½K⁺ + ½K⁻ >= max(½K⁺, ½K⁻), and by
Ville's inequality P(∃t: μ ∉ C_t) ≤ α. K⁺ falls and K⁻ rises in m, so C_t is an
interval whose ends are found by bisection (ends rounded outwards, tolerance ``tol``). The
running intersection ∩_{s≤t} C_s is reported: it is a CS as well, and never widens.

Any predictable bets keep the guarantee; they only decide *when* the sequence is tight.
The bets above (the default) spread power over all times. An evaluation that stops at a
target half-width h chosen in advance does better with ``tuning_half_width=h``:

    λ̇_i = h / (σ̂²_{i−1} + h²),

the growth-rate-optimal (Kelly) bet against a mean at distance h, with the predictable
variance estimate. A candidate m = μ̂ ± h is then rejected once
t·h²/(2(σ² + h²)) ≥ log(2/α), i.e. after about 2 log(2/α)(σ² + h²)/h² units, against
z²σ²/h² for a fixed-n interval: a factor 2 log(40)/1.96² ≈ 1.9 at α = 0.05. In the
simulations of ``benchmarks/bench_sequential.py`` (results in ``benchmarks/results/``) the
tuned sequence stops after 1.6–2.2 times the tasks of the fixed design that knows σ² in
advance (up to 3.3 where σ² is small next to h²), the default bets after 2.3–4.6 times;
both cover at least 0.968 at the stopping block, where a fixed-n CI checked after every
block covers as little as 0.72. h must be fixed before the first block: changing it midway
would recompute past bets with hindsight.

The closed-form predictable-mixture empirical-Bernstein CS (PrPl-EB, their Theorem 2) is
available as ``method="empirical_bernstein"``; it is faster and wider.

What is i.i.d., and why coverage holds at any stopping time
-----------------------------------------------------------
The estimand is the benchmark accuracy μ = E[p_i], the mean over the task population of a
task's success probability (or mean score) p_i — the one-way random-effects model of the
paper (Mustahsan et al., assumptions 1–2: tasks are random draws from a population, trials
are independent given the task). The *unit* of the sequence is a task together with the
trials it was given in the block in which it entered:

    X_i = mean of the m_i trials task i received in its entry block.

The number m_i is fixed before that block runs, from earlier blocks only, and task i is a
fresh draw whose trials are fresh, so E[X_i | everything observed before unit i] =
E[p_i] = μ, and X_i ∈ [0, 1]. The X_i need not be identically distributed (m_i may change
between blocks as the plan adapts); a constant conditional mean and boundedness are all
Theorem 3 needs. Trials given to a task in *later* blocks are left out of X_i: a task topped
up because of what its first trials showed has a mean over a data-dependent number of trials,
whose expectation is not p_i, and the capital process would be recomputed with hindsight.
Those trials still count for the variance components that :func:`stopping_decision` plans
with (planning needs no coverage guarantee).

Because the guarantee is uniform over time, it holds at *any* random time τ, not only at
stopping times of the units' filtration: P(μ ∈ C_τ) ≥ P(∀t: μ ∈ C_t) ≥ 1 − α.

Requirements this cannot check: new tasks are drawn independently of the data (e.g. in a
random order of the task pool fixed beforehand); a unit's entry trials are all kept
(failed trials scored by a declared policy, not dropped after being seen); and the order of
units within a block is the order of the rows, which must not depend on the scores. Tasks
drawn without replacement from a finite benchmark are treated as draws from the population
it samples, as :func:`evalnoise.stats.accuracy` does (no finite-population correction).

References
----------
Waudby-Smith, I. & Ramdas, A. (2024). Estimating means of bounded random variables by
betting. JRSS-B 86(1), 1–27. arXiv:2010.09686.
Howard, S. R., Ramdas, A., McAuliffe, J. & Sekhon, J. (2021). Time-uniform, nonparametric,
nonasymptotic confidence sequences. Annals of Statistics 49(2), 1055–1080.
Cochran, W. G. (1977). Sampling Techniques, 3rd ed., §10.6 (trials per task for the money).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd

from evalnoise.stats._checks import (
    check_finite_number,
    check_probability,
    finite_scores,
    optional_positive_int,
)
from evalnoise.stats._results import DictResult
from evalnoise.stats.icc import icc_oneway
from evalnoise.stats.planning import _max_count, optimal_trials_per_task

__all__ = [
    "ConfidenceSequenceResult",
    "MeanCSResult",
    "StoppingDecision",
    "confidence_sequence",
    "mean_confidence_sequence",
    "paired_confidence_sequence",
    "stopping_decision",
]

Method = Literal["betting", "empirical_bernstein"]
Target = Literal["accuracy", "icc", "difference"]

# Hedged capital process weights (θ, 1 − θ): the paper's symmetric choice.
_THETA = 0.5


@dataclass(frozen=True, eq=False)
class MeanCSResult(DictResult):
    """A confidence sequence for the mean of bounded values, evaluated at check times.

    Every array has the batch shape of the input (all axes but the last) followed by
    ``(len(times),)``, except ``times`` itself and the ``final_*``/``stop_index`` fields,
    which have the batch shape.

    Attributes
    ----------
    times : the numbers of units at which the sequence was evaluated (the checks).
    estimate : mean of the first t units.
    lower, upper : the running intersection of the CS up to each check. After a series
        stopped (``target_half_width``) its later entries are NaN. Should the intersection
        ever come out empty (lower > upper: probability <= α under the model), the data
        contradict a constant conditional mean.
    stop_index : index of the check at which the half-width first reached the target; −1 if
        it never did (or no target was given).
    final_time, final_estimate, final_lower, final_upper : at the stopping check, or at the
        last check for series that never stopped.
    confidence, method, truncation : the options used.
    """

    times: np.ndarray
    estimate: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    stop_index: np.ndarray
    final_time: np.ndarray
    final_estimate: np.ndarray
    final_lower: np.ndarray
    final_upper: np.ndarray
    confidence: float
    method: str
    truncation: float


@dataclass(frozen=True)
class ConfidenceSequenceResult(DictResult):
    """An anytime-valid confidence sequence over blocks of an adaptive evaluation.

    Attributes
    ----------
    estimand : ``"accuracy"`` (mean over tasks of the task's mean score) or
        ``"difference"`` (accuracy of A minus accuracy of B, paired by task).
    blocks : the block labels, sorted; one entry per block in the per-block arrays.
    n_tasks : units (tasks) in the sequence after each block.
    n_trials : trials in those units after each block.
    estimate : mean of the unit values after each block.
    lower, upper : the running intersection of the CS after each block.
    mean, ci_low, ci_high, half_width : the same after the last block; half_width is
        (ci_high − ci_low)/2.
    tasks : the units' task labels, in sequence order.
    unit_values : X_i, the mean score (or difference of mean scores) over the unit's entry
        trials.
    unit_trials : m_i, the entry trials per unit (for a difference: A's, then B's in
        ``unit_trials_b``).
    unit_trials_b : B's entry trials per unit (difference only, else None).
    entry_block : the block in which each unit entered.
    n_trials_excluded : trials run on a task after its entry block; they are not in the
        sequence (see the module docstring).
    n_tasks_dropped : tasks left out because one agent had no trial in the entry block
        (difference only; 0 for accuracy).
    confidence, method : the options used.
    warnings : anything that limits what the interval says.
    """

    estimand: str
    blocks: np.ndarray
    n_tasks: np.ndarray
    n_trials: np.ndarray
    estimate: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    mean: float
    ci_low: float
    ci_high: float
    half_width: float
    tasks: np.ndarray
    unit_values: np.ndarray
    unit_trials: np.ndarray
    unit_trials_b: np.ndarray | None
    entry_block: np.ndarray
    n_trials_excluded: int
    n_tasks_dropped: int
    confidence: float
    method: str
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class StoppingDecision(DictResult):
    """Stop or continue an adaptive evaluation, what to run next, and why.

    Attributes
    ----------
    stop : True when the evaluation should stop.
    status : ``"target_met"``, ``"budget_spent"``, ``"limit_reached"`` or ``"continue"``.
    action : ``"stop"``, ``"more_tasks"`` or ``"more_trials"``.
    reason : the decision in words, with the numbers behind it.
    target : ``"accuracy"``, ``"icc"`` or ``"difference"``.
    goal : the target half-width (accuracy, difference) or SE (icc).
    achieved : the current half-width of the anytime-valid interval, or the current
        Bonett SE of the ICC.
    estimate, ci_low, ci_high : the current estimate and interval (anytime-valid CS for
        accuracy and difference; the F-based ICC interval for icc).
    n_tasks, n_trials : tasks and trials so far (both agents' trials for a difference).
    spent, remaining : money spent (given, or counted from the costs) and budget − spent.
    sigma2_between, sigma2_within : the variance components planned with (σ²_between
        floored at 0; for a difference, the components of the per-task difference).
    icc : the current ICC(1,1) (of agent A for a difference).
    trials_per_task : the current design's trials per task (the last entry block's; n0 for
        the icc target).
    optimal_trials : Cochran's T* = sqrt((c_task/c_trial)(σ²_w/σ²_b)) (accuracy and
        difference targets).
    gain_per_cost_task, gain_per_cost_trial : the marginal reduction of the target's
        variance per unit of money from one more task, and from one more trial on every task.
    next_new_tasks : new tasks to draw in the next block (0 if none).
    next_trials_per_task : trials each new task gets in the next block, or (action
        ``"more_trials"`` with the icc target) the trial count to top every task up to.
    next_block_cost : the cost of that block.
    warnings : caveats (e.g. the icc target is not anytime-valid).
    """

    stop: bool
    status: str
    action: str
    reason: str
    target: str
    goal: float
    achieved: float
    estimate: float
    ci_low: float
    ci_high: float
    n_tasks: int
    n_trials: int
    spent: float
    remaining: float
    sigma2_between: float
    sigma2_within: float
    icc: float
    trials_per_task: float
    optimal_trials: float
    gain_per_cost_task: float
    gain_per_cost_trial: float
    next_new_tasks: int
    next_trials_per_task: int
    next_block_cost: float
    warnings: tuple[str, ...] = ()


# --- the confidence sequence on unit values ---------------------------------------------------


def _plugins(
    x: np.ndarray, alpha: float, half_width: float | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Predictable bets λ̇_i and centres μ̂_{i−1} (Waudby-Smith & Ramdas 2024, plug-ins).

    λ̇_i = sqrt(2 log(2/α) / (σ̂²_{i−1} i log(1 + i))), or h/(σ̂²_{i−1} + h²) when tuned to a
    half-width h, with the regularized running mean and variance μ̂_i = (1/2 + Σ X)/(i + 1),
    σ̂²_i = (1/4 + Σ (X_j − μ̂_j)²)/(i + 1), σ̂²_0 = 1/4. Both outputs at position i use
    X_1..X_{i−1} only.
    """
    n = x.shape[-1]
    t = np.arange(1, n + 1, dtype=float)
    mu = (0.5 + np.cumsum(x, axis=-1)) / (t + 1.0)
    sig2 = (0.25 + np.cumsum((x - mu) ** 2, axis=-1)) / (t + 1.0)
    first = np.full((*x.shape[:-1], 1), 0.25)
    sig2_prev = np.concatenate([first, sig2[..., :-1]], axis=-1)
    mu_prev = np.concatenate([first * 2.0, mu[..., :-1]], axis=-1)  # μ̂_0 = 1/2
    if half_width is None:
        lam = np.sqrt(2.0 * math.log(2.0 / alpha) / (sig2_prev * t * np.log1p(t)))
    else:
        lam = half_width / (sig2_prev + half_width**2)
    return lam, mu_prev


def _log_capital(x: np.ndarray, lam: np.ndarray, m: np.ndarray, c: float, sign: int):
    """log K⁺_t(m) (sign +1) or log K⁻_t(m) (sign −1) over the rows of x, one m per row."""
    mm = m[:, None]
    cap = c / (mm if sign > 0 else 1.0 - mm)  # c/0 = inf (caller silences it): bet λ̇ alone
    bet = np.minimum(lam, cap)
    return np.log1p(sign * bet * (x - mm)).sum(axis=-1)


def _hedged_update(x, lam, lo, hi, c, thr, iters):
    """Running-intersection update of the hedged CS at the end of the rows of ``x``.

    ``lo``/``hi`` are the bounds so far. Lower: the smallest m with log K⁺(m) < thr lies in
    [lo, 1] when K⁺(lo) is still too large (K⁺ is nonincreasing in m, and K⁺(1) <= 1);
    bisection keeps a point known to be rejected as the new bound, so rounding is outwards.
    Upper: the same for K⁻ (nondecreasing in m, K⁻(0) <= 1) on [0, hi].
    """
    lo, hi = lo.copy(), hi.copy()
    need = _log_capital(x, lam, lo, c, +1) >= thr
    if need.any():
        xs, ls = x[need], lam[need]
        a, b = lo[need], np.ones(int(need.sum()))
        for _ in range(iters):
            mid = 0.5 * (a + b)
            rej = _log_capital(xs, ls, mid, c, +1) >= thr
            a, b = np.where(rej, mid, a), np.where(rej, b, mid)
        lo[need] = a
    need = _log_capital(x, lam, hi, c, -1) >= thr
    if need.any():
        xs, ls = x[need], lam[need]
        a, b = np.zeros(int(need.sum())), hi[need]
        for _ in range(iters):
            mid = 0.5 * (a + b)
            rej = _log_capital(xs, ls, mid, c, -1) >= thr
            a, b = np.where(rej, a, mid), np.where(rej, mid, b)
        hi[need] = b
    return lo, hi


def _eb_bounds(x: np.ndarray, alpha: float, c: float, tune: float | None):
    """PrPl-EB CS (Waudby-Smith & Ramdas 2024, Theorem 2) at every t, before intersection."""
    lam_dot, mu_prev = _plugins(x, alpha, tune)
    lam = np.minimum(lam_dot, c)
    psi = -np.log1p(-lam) - lam  # 4·ψ_E(λ); v_i ψ_E(λ_i) = (X_i − μ̂_{i−1})² · 4ψ_E(λ_i)
    s_lam = np.cumsum(lam, axis=-1)
    center = np.cumsum(lam * x, axis=-1) / s_lam
    margin = (math.log(2.0 / alpha) + np.cumsum((x - mu_prev) ** 2 * psi, axis=-1)) / s_lam
    return np.clip(center - margin, 0.0, 1.0), np.clip(center + margin, 0.0, 1.0)


def mean_confidence_sequence(
    x: Any,
    *,
    times: Any = None,
    confidence: float = 0.95,
    method: Method = "betting",
    truncation: float = 0.5,
    target_half_width: float | None = None,
    tuning_half_width: float | None = None,
    tol: float = 1e-6,
) -> MeanCSResult:
    """Anytime-valid confidence sequence for the mean of values in [0, 1], vectorized.

    Parameters
    ----------
    x : array (..., n) of unit values in [0, 1] along the last axis, in the order they
        arrived; leading axes are independent series (e.g. simulation replications). Each
        value must have the same conditional mean given the ones before it.
    times : the checks: increasing numbers of units 1..n at which to evaluate the sequence
        (default: every unit). The running intersection is taken over these checks.
    confidence : 1 − α.
    method : ``"betting"`` (hedged capital process, Waudby-Smith & Ramdas 2024, Theorem 3;
        the default) or ``"empirical_bernstein"`` (their closed-form PrPl-EB, Theorem 2).
    truncation : c in (0, 1), the largest fraction of capital bet (the paper's 1/2 or 3/4).
    target_half_width : if given, a series stops at the first check where its interval's
        half-width is at most this; its later checks are NaN and are not computed.
    tuning_half_width : h in (0, 1/2]: bet λ̇_i = h/(σ̂²_{i−1} + h²), so the sequence
        reaches half-width h with the fewest units (module docstring). None (default): the
        time-spread bets of Waudby-Smith & Ramdas. Usually the same as
        ``target_half_width``; must not depend on the data.
    tol : bisection tolerance of the betting bounds (rounded outwards).

    Returns
    -------
    MeanCSResult

    Notes
    -----
    See the module docstring for the formulas and the validity argument. The cost of the
    betting method is O(n · len(times) · log2(1/tol)) per series; stopping series early
    (``target_half_width``) saves the rest.
    """
    conf = check_probability(confidence)
    alpha = 1.0 - conf
    if method not in ("betting", "empirical_bernstein"):
        raise ValueError(f"method must be 'betting' or 'empirical_bernstein', got {method!r}")
    c = float(truncation)
    if not 0.0 < c < 1.0:
        raise ValueError(f"truncation must lie in (0, 1), got {truncation!r}")
    if target_half_width is not None and not float(target_half_width) > 0:
        raise ValueError("target_half_width must be > 0")
    if not 0.0 < float(tol) < 1.0:
        raise ValueError(f"tol must lie in (0, 1), got {tol!r}")
    if not 0.0 < float(tol) < 1.0:
        raise ValueError(f"tol must lie in (0, 1), got {tol!r}")
    tune = None if tuning_half_width is None else float(tuning_half_width)
    if tune is not None and not (math.isfinite(tune) and 0 < tune <= 0.5):
        raise ValueError("tuning_half_width must lie in (0, 1/2]")
    arr = np.asarray(x, dtype=float)
    if arr.ndim == 0 or arr.shape[-1] == 0:
        raise ValueError("x needs at least one value along its last axis")
    if not np.all(np.isfinite(arr)) or arr.min() < 0.0 or arr.max() > 1.0:
        raise ValueError("values must be finite and lie in [0, 1]")
    batch, n = arr.shape[:-1], arr.shape[-1]
    flat = arr.reshape(-1, n)
    r = flat.shape[0]
    if times is None:
        tt = np.arange(1, n + 1)
    else:
        tt = np.asarray(times)
        if (
            tt.ndim != 1
            or tt.size == 0
            or not np.issubdtype(tt.dtype, np.integer)
            or tt[0] < 1
            or tt[-1] > n
            or np.any(np.diff(tt) <= 0)
        ):
            raise ValueError(f"times must be increasing integers in 1..{n}")
        tt = tt.astype(np.int64)
    k = tt.size
    estimate = np.cumsum(flat, axis=-1)[:, tt - 1] / tt
    lower = np.full((r, k), np.nan)
    upper = np.full((r, k), np.nan)
    stop = np.full(r, -1, dtype=np.int64)
    goal = None if target_half_width is None else float(target_half_width)

    if method == "empirical_bernstein":
        lo_all, hi_all = _eb_bounds(flat, alpha, c, tune)
        lo_run = np.maximum.accumulate(lo_all[:, tt - 1], axis=-1)
        hi_run = np.minimum.accumulate(hi_all[:, tt - 1], axis=-1)
        lower[:], upper[:] = lo_run, hi_run
        if goal is not None:
            hit = (hi_run - lo_run) / 2.0 <= goal
            any_hit = hit.any(axis=-1)
            stop = np.where(any_hit, hit.argmax(axis=-1), -1)
            after = np.arange(k)[None, :] > stop[:, None]
            after &= any_hit[:, None]
            lower[after] = upper[after] = np.nan
    else:
        lam, _ = _plugins(flat, alpha, tune)
        thr = math.log(1.0 / (_THETA * alpha))  # θ = 1/2 on both sides: log(2/α)
        iters = max(1, math.ceil(math.log2(1.0 / tol)))
        lo = np.zeros(r)
        hi = np.ones(r)
        active = np.arange(r)
        for j, t in enumerate(tt):
            if active.size == 0:
                break
            with np.errstate(divide="ignore"):
                lo_a, hi_a = _hedged_update(
                    flat[active, :t], lam[active, :t], lo[active], hi[active], c, thr, iters
                )
            lo[active], hi[active] = lo_a, hi_a
            lower[active, j], upper[active, j] = lo_a, hi_a
            if goal is not None:
                done = (hi_a - lo_a) / 2.0 <= goal
                stop[active[done]] = j
                active = active[~done]

    last = np.where(stop >= 0, stop, k - 1)
    rows = np.arange(r)
    shape = (*batch, k)
    return MeanCSResult(
        times=tt,
        estimate=estimate.reshape(shape),
        lower=lower.reshape(shape),
        upper=upper.reshape(shape),
        stop_index=stop.reshape(batch),
        final_time=tt[last].reshape(batch),
        final_estimate=estimate[rows, last].reshape(batch),
        final_lower=lower[rows, last].reshape(batch),
        final_upper=upper[rows, last].reshape(batch),
        confidence=conf,
        method=method,
        truncation=c,
    )


# --- units from a trial table -----------------------------------------------------------------


@dataclass(frozen=True)
class _Units:
    labels: np.ndarray  # task label per unit, sequence order
    entry: np.ndarray  # entry block code per unit
    total: np.ndarray  # Σ scores in the entry block, per unit (and per agent for pairs)
    count: np.ndarray  # entry trials per unit
    block_labels: np.ndarray
    n_excluded: int
    n_task_rows: np.ndarray  # trials per task (all blocks) for every task, not only units


def _entry_units(frames: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> _Units:
    """Units from one agent's (or two agents') rows: entry block, entry sums and counts.

    ``frames`` holds (scores, tasks, blocks) per agent. A task's entry block is the first
    block in which any agent ran it; its unit holds each agent's trials in that block.
    Units are ordered by entry block, then by the first row at which the task appears.
    """
    sizes = [f[0].size for f in frames]
    for (y, t, b), name in zip(frames, ("_a", "_b") if len(frames) > 1 else ("",), strict=True):
        if not (y.shape == np.shape(t) == np.shape(b)):
            raise ValueError(
                f"scores{name}, tasks{name} and blocks{name} must have the same length, got "
                f"{y.shape[0]}, {np.shape(t)[0] if np.ndim(t) else 0}, "
                f"{np.shape(b)[0] if np.ndim(b) else 0}"
            )
    if sum(sizes) == 0:
        raise ValueError("no trials")
    y = np.concatenate([f[0] for f in frames])
    tasks = np.concatenate([np.asarray(f[1]) for f in frames])
    blocks = np.concatenate([np.asarray(f[2]) for f in frames])
    agent = np.repeat(np.arange(len(frames)), sizes)
    if pd.isna(pd.Series(blocks)).any() or pd.isna(pd.Series(tasks)).any():
        raise ValueError("tasks and blocks must not be missing")
    codes, labels = pd.factorize(tasks, sort=False)
    bcodes, blabels = pd.factorize(blocks, sort=True)
    g = labels.size
    entry = np.full(g, np.iinfo(np.int64).max)
    np.minimum.at(entry, codes, bcodes)
    first_row = np.full(g, np.iinfo(np.int64).max)
    np.minimum.at(first_row, codes, np.arange(codes.size))
    in_entry = bcodes == entry[codes]
    na = len(frames)
    idx = codes * na + agent
    total = np.bincount(idx[in_entry], weights=y[in_entry], minlength=g * na).reshape(g, na)
    count = np.bincount(idx[in_entry], minlength=g * na).reshape(g, na)
    order = np.lexsort((first_row, entry))
    return _Units(
        labels=np.asarray(labels)[order],
        entry=entry[order],
        total=total[order],
        count=count[order],
        block_labels=np.asarray(blabels),
        n_excluded=int((~in_entry).sum()),
        n_task_rows=np.bincount(codes, minlength=g),
    )


def _sequence_from_units(
    values: np.ndarray,
    entry: np.ndarray,
    n_blocks: int,
    confidence: float,
    method: Method,
    tune: float | None,
) -> tuple[np.ndarray, MeanCSResult | None]:
    """Cumulative unit counts after each block, and the CS at those counts."""
    counts = np.cumsum(np.bincount(entry, minlength=n_blocks))
    if values.size == 0:
        return counts, None
    uniq = np.unique(counts[counts > 0])
    cs = mean_confidence_sequence(
        values, times=uniq, confidence=confidence, method=method, tuning_half_width=tune
    )
    return counts, cs


def _per_block(counts: np.ndarray, cs: MeanCSResult | None, field: str) -> np.ndarray:
    out = np.full(counts.size, np.nan)
    if cs is None:
        return out
    pos = np.searchsorted(cs.times, counts)
    ok = counts > 0
    out[ok] = getattr(cs, field)[pos[ok]]
    return out


def confidence_sequence(
    scores: Any,
    tasks: Any,
    blocks: Any,
    *,
    confidence: float = 0.95,
    method: Method = "betting",
    tuning_half_width: float | None = None,
) -> ConfidenceSequenceResult:
    """Anytime-valid confidence sequence for accuracy over the blocks of an adaptive run.

    Parameters
    ----------
    scores : 1-D array of trial scores in [0, 1] (binary or partial credit).
    tasks : task label per trial.
    blocks : block label per trial: the round of the evaluation in which the trial ran
        (sortable: integers, or ISO timestamps). A task enters the sequence in the first
        block it appears in, with the trials it got there.
    confidence : 1 − α, the probability that every interval in the sequence covers μ.
    method : ``"betting"`` (default) or ``"empirical_bernstein"``, see
        :func:`mean_confidence_sequence`.
    tuning_half_width : the target half-width the bets are tuned to, fixed before the first
        block (see :func:`mean_confidence_sequence`); :func:`stopping_decision` uses its goal.

    Returns
    -------
    ConfidenceSequenceResult
        One entry per block; the last is the interval to report, valid at whatever block the
        evaluation stopped, for whatever reason.

    Notes
    -----
    The unit of the sequence is a task with the trials of its entry block (module
    docstring): X_i = S_i/m_i over those m_i trials, whose conditional mean given all earlier
    data is μ. Trials a task gets in later blocks are counted in ``n_trials_excluded`` and
    left out. Units entering in the same block follow the order of their first row. The
    estimate (mean of the X_i) weighs every task once, as :func:`evalnoise.stats.accuracy`
    does; with every task run only in its entry block it equals that function's ``mean``.
    """
    conf = check_probability(confidence)
    y = finite_scores(scores, "scores", unit=True)
    u = _entry_units([(y, np.asarray(tasks), np.asarray(blocks))])
    values = u.total[:, 0] / u.count[:, 0]
    nb = u.block_labels.size
    counts, cs = _sequence_from_units(values, u.entry, nb, conf, method, tuning_half_width)
    trials = np.cumsum(np.bincount(u.entry, weights=u.count[:, 0], minlength=nb)).astype(int)
    warnings: list[str] = []
    if u.n_excluded:
        warnings.append(
            f"{u.n_excluded} trials ran on tasks after their entry block and are not in the "
            "anytime-valid sequence (they would make a task's mean depend on when it was "
            "topped up); they still inform the variance components"
        )
    return _result(
        "accuracy", u, values, counts, trials, cs, conf, method, 0, None, tuple(warnings)
    )


def _result(estimand, u, values, counts, trials, cs, conf, method, dropped, trials_b, warns):
    est = _per_block(counts, cs, "estimate")
    lo = _per_block(counts, cs, "lower")
    hi = _per_block(counts, cs, "upper")
    if estimand == "difference":
        est, lo, hi = 2.0 * est - 1.0, 2.0 * lo - 1.0, 2.0 * hi - 1.0
        values = 2.0 * values - 1.0
    return ConfidenceSequenceResult(
        estimand=estimand,
        blocks=u.block_labels,
        n_tasks=counts.astype(int),
        n_trials=trials,
        estimate=est,
        lower=lo,
        upper=hi,
        mean=float(est[-1]),
        ci_low=float(lo[-1]),
        ci_high=float(hi[-1]),
        half_width=float((hi[-1] - lo[-1]) / 2.0),
        tasks=u.labels,
        unit_values=values,
        unit_trials=u.count[:, 0].astype(int),
        unit_trials_b=trials_b,
        entry_block=u.block_labels[u.entry],
        n_trials_excluded=u.n_excluded,
        n_tasks_dropped=dropped,
        confidence=conf,
        method=method,
        warnings=warns,
    )


def paired_confidence_sequence(
    scores_a: Any,
    tasks_a: Any,
    blocks_a: Any,
    scores_b: Any,
    tasks_b: Any,
    blocks_b: Any,
    *,
    confidence: float = 0.95,
    method: Method = "betting",
    tuning_half_width: float | None = None,
) -> ConfidenceSequenceResult:
    """Anytime-valid confidence sequence for the paired difference of two agents' accuracy.

    Both agents run the same new tasks in each block. The unit is a task with both agents'
    trials in its entry block (the first block either agent ran it in):
    D_i = Ȳ_i^A − Ȳ_i^B ∈ [−1, 1], with conditional mean μ_A − μ_B given earlier data. The
    sequence is the CS of :func:`mean_confidence_sequence` on (D_i + 1)/2 ∈ [0, 1], mapped
    back; its half-width is the half-width for the difference (``tuning_half_width`` too is
    on the difference's scale, and halved for the shifted values). Sign convention as in
    :mod:`evalnoise.stats.paired`: positive means A scores higher.

    A task where one agent has no trial in the entry block is dropped (``n_tasks_dropped``).
    If such gaps depend on the outcome (e.g. a crash that is excluded rather than scored),
    the dropped tasks can bias the difference: score failures by a declared policy instead.

    Returns
    -------
    ConfidenceSequenceResult
        ``estimand == "difference"``; ``unit_trials`` are A's entry trials, ``unit_trials_b``
        B's.
    """
    conf = check_probability(confidence)
    ya = finite_scores(scores_a, "scores_a", unit=True)
    yb = finite_scores(scores_b, "scores_b", unit=True)
    u = _entry_units(
        [
            (ya, np.asarray(tasks_a), np.asarray(blocks_a)),
            (yb, np.asarray(tasks_b), np.asarray(blocks_b)),
        ]
    )
    both = (u.count > 0).all(axis=1)
    dropped = int((~both).sum())
    u = _Units(
        labels=u.labels[both],
        entry=u.entry[both],
        total=u.total[both],
        count=u.count[both],
        block_labels=u.block_labels,
        n_excluded=u.n_excluded,
        n_task_rows=u.n_task_rows,
    )
    diff = u.total[:, 0] / np.maximum(u.count[:, 0], 1) - u.total[:, 1] / np.maximum(
        u.count[:, 1], 1
    )
    shifted = np.clip((diff + 1.0) / 2.0, 0.0, 1.0)
    nb = u.block_labels.size
    tune = None if tuning_half_width is None else float(tuning_half_width) / 2.0
    counts, cs = _sequence_from_units(shifted, u.entry, nb, conf, method, tune)
    trials = np.cumsum(np.bincount(u.entry, weights=u.count.sum(axis=1), minlength=nb))
    warnings: list[str] = []
    if dropped:
        warnings.append(
            f"{dropped} tasks were run by only one agent in their entry block and are not in "
            "the sequence; if that depends on the outcome it biases the difference"
        )
    if u.n_excluded:
        warnings.append(
            f"{u.n_excluded} trials ran on tasks after their entry block and are not in the "
            "anytime-valid sequence"
        )
    if cs is None:
        raise ValueError("the two agents have no task in common in any entry block")
    return _result(
        "difference",
        u,
        shifted,
        counts,
        trials.astype(int),
        cs,
        conf,
        method,
        dropped,
        u.count[:, 1].astype(int),
        tuple(warnings),
    )


# --- when to stop -----------------------------------------------------------------------------


def _n(k: int, word: str) -> str:
    return f"{k} {word}" if k == 1 else f"{k} {word}s"


def _money(x: float) -> str:
    return f"{x:,.4g}" if abs(x) < 1e4 else f"{x:,.0f}"


def _last_block_design(entry: np.ndarray, count: np.ndarray) -> tuple[int, int]:
    """(new tasks, trials per new task) of the last block in which tasks entered."""
    sel = entry == entry.max()
    return int(sel.sum()), max(1, round(float(np.median(count[sel]))))


def _stop(base: dict, status: str, reason: str, warnings: list[str]) -> StoppingDecision:
    return StoppingDecision(
        stop=True,
        status=status,
        action="stop",
        reason=reason,
        next_new_tasks=0,
        next_trials_per_task=0,
        next_block_cost=0.0,
        warnings=tuple(warnings),
        **base,
    )


def _go(
    base: dict, action: str, reason: str, new: int, trials: int, cost: float, warnings: list[str]
) -> StoppingDecision:
    return StoppingDecision(
        stop=False,
        status="continue",
        action=action,
        reason=reason,
        next_new_tasks=new,
        next_trials_per_task=trials,
        next_block_cost=cost,
        warnings=tuple(warnings),
        **base,
    )


def stopping_decision(
    scores: Any,
    tasks: Any,
    blocks: Any,
    *,
    target: Target = "accuracy",
    half_width: float | None = None,
    se: float | None = None,
    budget: float,
    cost_per_task: float = 0.0,
    cost_per_trial: float = 1.0,
    spent: float | None = None,
    max_trials_per_task: int | None = None,
    max_tasks: int | None = None,
    confidence: float = 0.95,
    scores_b: Any = None,
    tasks_b: Any = None,
    blocks_b: Any = None,
    method: Method = "betting",
) -> StoppingDecision:
    r"""Decide after a block: stop, or continue with more tasks or more trials per task.

    Targets
    -------
    ``target="accuracy"``, ``half_width=h``: stop when the anytime-valid interval for
    accuracy (:func:`confidence_sequence` with bets tuned to h, ``tuning_half_width=h``) has
    half-width <= h. Its coverage holds at the block where this rule (or the budget) stops,
    however often it was checked — provided h is the same at every check.

    ``target="difference"``, ``half_width=h``: the same for the paired difference of two
    agents (:func:`paired_confidence_sequence`; B's trials in ``scores_b``, ``tasks_b``,
    ``blocks_b``). Costs are per agent: a new paired task costs both agents' share.

    ``target="icc"``, ``se=s``: stop when Bonett's SE of ICC(1,1)
    (:func:`evalnoise.stats.icc_oneway`, all trials) is <= s — the paper's guideline is
    SE(ICC) <= 0.03. This is a precision rule on a fixed-sample SE, not an anytime-valid
    interval; the decision says so in ``warnings``.

    Order of the checks: target met → limits (``max_tasks`` reached for the accuracy and
    difference targets; both caps reached for icc) → budget (the remaining money buys no
    further block) → continue.

    More tasks or more trials (paper eq. 9–10 with costs)
    -----------------------------------------------------
    With n tasks of T trials, Var = (σ²_b + σ²_w/T)/n. One more task costs
    c_task + T·c_trial and lowers Var by −∂Var/∂n = (σ²_b + σ²_w/T)/n²; one more trial on
    every task costs n·c_trial and lowers it by −∂Var/∂T = σ²_w/(nT²). Per unit of money
    the trial wins exactly when T < T* = sqrt((c_task/c_trial)(σ²_w/σ²_b)) (Cochran 1977,
    §10.6): within-task variance dominates relative to what a task costs. With c_task = 0
    (the paper's eq. 10, a budget counted in runs) T* = 0 and more tasks always win. The
    variance components are :func:`evalnoise.stats.icc_oneway`'s, from every trial so far
    (σ²_between floored at 0).

    For the accuracy and difference targets "more trials" means the *next new tasks* get
    more trials each: the anytime-valid sequence is over tasks with their entry trials, so
    trials added to tasks already in it cannot narrow it. ``next_trials_per_task`` is the
    whole T minimizing (σ²_b + σ²_w/T)(c_task + T·c_trial) within ``max_trials_per_task``
    (:func:`evalnoise.stats.planning.optimal_trials_per_task`), and the action is
    ``"more_trials"`` when it exceeds the current T, else ``"more_tasks"`` (with fewer
    trials each if the current T is past the optimum). The next block draws as many new
    tasks as the last block did, fewer if the budget or ``max_tasks`` says so.

    For the icc target every trial counts, so "more trials" tops every task up by one
    trial; the gains use Bonett's variance f(k, n) = 2(1−ρ)²(1+(k−1)ρ)²/(k(k−1)(n−1)):
    −∂f/∂n = f/(n−1) per task, −∂f/∂k = f·(1/k + 1/(k−1) − 2ρ/(1+(k−1)ρ)) per trial on all
    n tasks.

    Parameters
    ----------
    scores, tasks, blocks : the trials so far (agent A for a difference), one row each.
    target : ``"accuracy"``, ``"icc"`` or ``"difference"``.
    half_width : target half-width (accuracy, difference).
    se : target SE of the ICC (icc).
    budget : total money for the evaluation, including what is spent.
    cost_per_task : c_task, paid once per task (per agent).
    cost_per_trial : c_trial > 0, paid per trial.
    spent : money spent so far; default n_tasks·c_task + n_trials·c_trial.
    max_trials_per_task, max_tasks : caps (None: unlimited).
    confidence : level of the intervals.
    scores_b, tasks_b, blocks_b : agent B's trials (difference only).
    method : the CS method, see :func:`mean_confidence_sequence`.

    Returns
    -------
    StoppingDecision
    """
    conf = check_probability(confidence)
    if target not in ("accuracy", "icc", "difference"):
        raise ValueError(f"target must be 'accuracy', 'icc' or 'difference', got {target!r}")
    if target == "icc":
        if se is None or half_width is not None:
            raise ValueError("the icc target takes se= (and no half_width)")
        goal = float(se)
    else:
        if half_width is None or se is not None:
            raise ValueError(f"the {target} target takes half_width= (and no se)")
        goal = float(half_width)
    if not (math.isfinite(goal) and goal > 0):
        raise ValueError("the target must be a finite number > 0")
    paired = target == "difference"
    given_b = [v is not None for v in (scores_b, tasks_b, blocks_b)]
    if paired and not all(given_b):
        raise ValueError("the difference target needs scores_b, tasks_b and blocks_b")
    if not paired and any(given_b):
        raise ValueError("scores_b, tasks_b and blocks_b are for the difference target only")
    b_total = check_finite_number(budget, "budget", positive=True)
    c1 = check_finite_number(cost_per_task, "cost_per_task")
    c2 = check_finite_number(cost_per_trial, "cost_per_trial", positive=True)
    t_cap = optional_positive_int(max_trials_per_task, "max_trials_per_task")
    n_cap = optional_positive_int(max_tasks, "max_tasks")

    y = finite_scores(scores, "scores", unit=True)
    agents = [(y, np.asarray(tasks), np.asarray(blocks))]
    if paired:
        yb = finite_scores(scores_b, "scores_b", unit=True)
        agents.append((yb, np.asarray(tasks_b), np.asarray(blocks_b)))
    n_trials = sum(a[0].size for a in agents)
    if spent is None:
        spent_v = c1 * sum(pd.unique(a[1]).size for a in agents) + c2 * n_trials
    else:
        spent_v = check_finite_number(spent, "spent")
    remaining = b_total - spent_v

    u = _entry_units(agents)
    n_tasks = int(u.labels.size)
    last_new, t_cur = _last_block_design(u.entry, u.count[:, 0])
    icc_res = icc_oneway(y, agents[0][1], confidence=conf)
    ctx = dict(
        goal=goal, budget=b_total, c1=c1, c2=c2, remaining=remaining, t_cap=t_cap, n_cap=n_cap,
        n_tasks=n_tasks, last_new=last_new, level=f"{100 * conf:g}%",
    )  # fmt: skip
    base = dict(
        target=target, goal=goal, n_tasks=n_tasks, n_trials=n_trials, spent=spent_v,
        remaining=remaining, icc=float(icc_res.icc),
    )  # fmt: skip
    if target == "icc":
        return _icc_decision(icc_res, u, ctx, base)
    return _sequence_decision(agents, icc_res, u, t_cur, conf, method, ctx, base)


def _sequence_decision(agents, icc_res, u, t_cur, conf, method, ctx, base) -> StoppingDecision:
    """The accuracy and difference targets: the anytime-valid sequence over new tasks."""
    paired = len(agents) == 2
    c1, c2, t_cap, n_cap, goal = ctx["c1"], ctx["c2"], ctx["t_cap"], ctx["n_cap"], ctx["goal"]
    warnings: list[str] = []
    if paired:
        cs = paired_confidence_sequence(
            *agents[0], *agents[1], confidence=conf, method=method, tuning_half_width=goal
        )
        s2b, s2w = _difference_components(cs, agents)
    else:
        cs = confidence_sequence(*agents[0], confidence=conf, method=method, tuning_half_width=goal)
        s2b, s2w = float(icc_res.sigma2_between), float(icc_res.sigma2_within)
    warnings.extend(cs.warnings)
    if math.isfinite(s2b) and s2b < 0:
        warnings.append(f"the between-task variance estimate is negative ({s2b:.3g}); planned as 0")
        s2b = 0.0
    n_agents = len(agents)
    n_units = int(cs.n_tasks[-1])
    achieved = cs.half_width

    components_ok = math.isfinite(s2b) and math.isfinite(s2w)
    flat = components_ok and s2b == 0 and s2w == 0
    if flat:
        t_next, t_star = (t_cur if t_cap is None else min(t_cur, t_cap)), float("nan")
    elif components_ok and (s2b > 0 or s2w == 0 or c1 == 0 or t_cap is not None):
        opt = optimal_trials_per_task(s2b, s2w, c1, c2, max_trials=t_cap)
        t_next, t_star = int(opt.trials), float(opt.trials_exact)
    elif components_ok:
        # σ²_b = 0 < c_task·σ²_w and no cap: T* is infinite; grow T geometrically instead.
        t_next, t_star = 2 * t_cur, math.inf
        warnings.append("σ²_between is 0: T* is unbounded; doubling the trials per new task")
    else:
        t_next, t_star = (t_cur if t_cap is None else min(t_cur, t_cap)), float("nan")
        warnings.append(
            "the variance components are not estimable yet (one task, or one trial per task): "
            "keeping the current trials per task"
        )
    gain_task, gain_trial = _accuracy_gains(s2b, s2w, n_units, t_cur, c1, c2, n_agents)
    base = dict(
        base, achieved=achieved, estimate=cs.mean, ci_low=cs.ci_low, ci_high=cs.ci_high,
        sigma2_between=s2b, sigma2_within=s2w, trials_per_task=float(t_cur),
        optimal_trials=t_star, gain_per_cost_task=gain_task, gain_per_cost_trial=gain_trial,
    )  # fmt: skip
    what = "the difference A − B" if paired else "accuracy"
    now = (
        f"the {ctx['level']} anytime-valid interval for {what} is "
        f"[{cs.ci_low:.4f}, {cs.ci_high:.4f}], half-width {achieved:.4f}"
    )
    if achieved <= goal:
        return _stop(
            base, "target_met", f"target met: {now} <= {goal:g} ({_n(n_units, 'task')})", warnings
        )
    if n_cap is not None and ctx["n_tasks"] >= n_cap:
        reason = (
            f"task limit reached: all {n_cap} tasks are in, and trials added to tasks already in "
            f"the sequence cannot narrow an anytime-valid interval over tasks; {now} > {goal:g}"
        )
        return _stop(base, "limit_reached", reason, warnings)
    unit_cost = n_agents * (c1 + t_next * c2)
    remaining = ctx["remaining"]
    k = min(ctx["last_new"], int(_max_count(remaining, unit_cost)))
    if n_cap is not None:
        k = min(k, n_cap - ctx["n_tasks"])
    if k < 1:
        reason = (
            f"budget spent: {_money(max(remaining, 0.0))} left of {_money(ctx['budget'])}, and "
            f"one more task with {t_next} trials costs {_money(unit_cost)}; {now} > {goal:g}"
        )
        return _stop(base, "budget_spent", reason, warnings)

    action = "more_trials" if t_next > t_cur else "more_tasks"
    if not components_ok:
        why = "The variance components cannot be estimated yet (one task, or one trial each)"
    elif flat:
        why = "No variance observed yet (every task mean is equal): keeping the design"
    else:
        dom = "Within-task" if t_star > t_cur else "Between-task"
        why = (
            f"{dom} variance dominates for the cost (σ²_b = {s2b:.4g}, σ²_w = {s2w:.4g} per "
            f"trial, c_task = {_money(c1)}, c_trial = {_money(c2)}): one more task cuts Var by "
            f"{gain_task:.3g} per unit of money, one more trial on every task by "
            f"{gain_trial:.3g}; Cochran's optimum is T* = {t_star:.3g} trials per task"
        )
    if t_next > t_cur:
        change = f"raise the trials per new task from {t_cur} to {t_next}"
    elif t_next < t_cur:
        change = f"add tasks with {_n(t_next, 'trial')} each (fewer than the current {t_cur})"
    else:
        change = f"add tasks with {_n(t_next, 'trial')} each"
    label = "more trials per task" if action == "more_trials" else "more tasks"
    reason = (
        f"continue with {label}: {now} > {goal:g} after {_n(n_units, 'task')}. {why}. Next "
        f"block: {change} — {_n(k, 'new task')} (cost {_money(k * unit_cost)}, "
        f"{_money(remaining)} left)"
    )
    if action == "more_trials":
        reason += "; tasks already in the sequence keep their entry trials"
    return _go(base, action, reason, k, t_next, k * unit_cost, warnings)


def _accuracy_gains(s2b, s2w, n, t, c1, c2, n_agents) -> tuple[float, float]:
    """−∂Var/∂n per cost of a task, −∂Var/∂T per cost of a trial on every task."""
    if not (math.isfinite(s2b) and math.isfinite(s2w)) or n < 1:
        return float("nan"), float("nan")
    per_task = (s2b + s2w / t) / n**2 / (n_agents * (c1 + t * c2))
    per_trial = s2w / (n * t * t) / (n_agents * n * c2)
    return float(per_task), float(per_trial)


def _difference_components(cs: ConfidenceSequenceResult, agents) -> tuple[float, float]:
    """σ²_b and σ²_w of the per-task difference D_i = Ȳ^A_i − Ȳ^B_i.

    σ²_w(D) = MSW_A + MSW_B (the noise of a pair of trials, one per agent, independent given
    the task); σ²_b(D) = s²(D_i) − mean_i(MSW_A/m^A_i + MSW_B/m^B_i).
    """
    s2w = sum(float(icc_oneway(y, t).sigma2_within) for y, t, _ in agents)
    d = cs.unit_values
    if d.size < 2 or not math.isfinite(s2w):
        return float("nan"), s2w
    msw_a = float(icc_oneway(*agents[0][:2]).sigma2_within)
    noise = float(np.mean(msw_a / cs.unit_trials + (s2w - msw_a) / cs.unit_trials_b))
    return float(np.var(d, ddof=1) - noise), s2w


def _icc_decision(res, u: _Units, ctx: dict, base: dict) -> StoppingDecision:
    """The icc target: Bonett's SE of ICC(1,1) from every trial."""
    warnings = [
        "the icc target compares Bonett's fixed-sample SE with the goal after each block: a "
        "precision rule, not an anytime-valid interval"
    ]
    c1, c2, t_cap, n_cap, goal = ctx["c1"], ctx["c2"], ctx["t_cap"], ctx["n_cap"], ctx["goal"]
    remaining = ctx["remaining"]
    n = ctx["n_tasks"]
    k = float(res.n0) if math.isfinite(res.n0) else float(u.n_task_rows.mean())
    achieved = float(res.se)
    rho = float(np.clip(res.icc, 0.0, 0.999)) if math.isfinite(res.icc) else math.nan
    s2b = float(res.sigma2_between)
    max_t = int(u.n_task_rows.max())
    t_top = max_t + 1
    t_new = max(2, round(k)) if t_cap is None else min(max(2, round(k)), t_cap)
    cost_trials = float(np.maximum(t_top - u.n_task_rows, 0).sum() * c2)
    task_cost = c1 + t_new * c2
    if math.isfinite(rho) and k > 1 and n > 1:
        f = 2 * (1 - rho) ** 2 * (1 + (k - 1) * rho) ** 2 / (k * (k - 1) * (n - 1))
        g_task = f / (n - 1) / task_cost
        g_trial = f * (1 / k + 1 / (k - 1) - 2 * rho / (1 + (k - 1) * rho)) / (n * c2)
    else:
        g_task = g_trial = math.nan
    base = dict(
        base, achieved=achieved, estimate=float(res.icc), ci_low=float(res.ci_low),
        ci_high=float(res.ci_high), sigma2_between=max(s2b, 0.0) if math.isfinite(s2b) else s2b,
        sigma2_within=float(res.sigma2_within), trials_per_task=k, optimal_trials=math.nan,
        gain_per_cost_task=g_task, gain_per_cost_trial=g_trial,
    )  # fmt: skip
    now = f"SE(ICC) = {achieved:.4f}" if math.isfinite(achieved) else "SE(ICC) is not estimable"
    short = f"{now} > {goal:g}" if math.isfinite(achieved) else now
    if math.isfinite(achieved) and achieved <= goal:
        reason = (
            f"target met: {now} <= {goal:g} (ICC = {res.icc:.3f}, {n} tasks, {k:.3g} trials "
            "per task)"
        )
        return _stop(base, "target_met", reason, warnings)
    can_trials = t_cap is None or t_top <= t_cap
    can_tasks = n_cap is None or n < n_cap
    if not (can_trials or can_tasks):
        reason = (
            f"limits reached: {n} tasks (max {n_cap}) with up to {max_t} trials each (max "
            f"{t_cap}); {short}"
        )
        return _stop(base, "limit_reached", reason, warnings)
    if math.isfinite(g_task):
        prefer_trials = g_trial > g_task
        cmp_trials = (
            f"one more trial on every task cuts Var(ICC) by {g_trial:.3g} per unit of money, "
            f"one more task by {g_task:.3g}"
        )
        cmp_tasks = (
            f"one more task cuts Var(ICC) by {g_task:.3g} per unit of money, one more trial on "
            f"every task by {g_trial:.3g}"
        )
    else:
        # Too little data for Bonett's SE: a second trial per task first, else more tasks
        # (with two trials per task an undefined ICC means no variation between tasks yet).
        prefer_trials = k < 2
        cmp_tasks = "the ICC is undefined so far (no variation yet): more tasks are needed"
        cmp_trials = (
            "a second trial per task is needed to estimate the ICC"
            if prefer_trials
            else "the ICC is undefined so far (no variation yet) and no task can be added: "
            "more trials per task instead"
        )
    order = ("more_trials", "more_tasks") if prefer_trials else ("more_tasks", "more_trials")
    for action in order:
        if action == "more_trials" and can_trials and int(_max_count(remaining, cost_trials)):
            reason = (
                f"continue with more trials per task: {short}; {cmp_trials}. Next "
                f"block: top every task up to {t_top} trials (cost {_money(cost_trials)}, "
                f"{_money(remaining)} left)"
            )
            return _go(base, action, reason, 0, t_top, cost_trials, warnings)
        if action == "more_tasks" and can_tasks and int(_max_count(remaining, task_cost)):
            kk = min(ctx["last_new"], int(_max_count(remaining, task_cost)))
            if n_cap is not None:
                kk = min(kk, n_cap - n)
            reason = (
                f"continue with more tasks: {short}; {cmp_tasks}. Next block: "
                f"{_n(kk, 'new task')} with {_n(t_new, 'trial')} each (cost "
                f"{_money(kk * task_cost)}, "
                f"{_money(remaining)} left)"
            )
            return _go(base, action, reason, kk, t_new, kk * task_cost, warnings)
    reason = (
        f"budget spent: {_money(max(remaining, 0.0))} left of {_money(ctx['budget'])} buys "
        f"neither a new task ({_money(task_cost)}) nor a trial on every task "
        f"({_money(cost_trials)}); {short}"
    )
    return _stop(base, "budget_spent", reason, warnings)
