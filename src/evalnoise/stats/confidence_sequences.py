"""Anytime-valid confidence sequences for the mean of values in [0, 1], by betting.

A fixed-n confidence interval recomputed after every look and stopped "when narrow enough"
is no longer a 95 % interval at the time it is reported: each look is another chance to stop
on a lucky draw. A *confidence sequence* (CS; Howard et al. 2021) is a sequence of intervals
C_1, C_2, … that covers the mean at every time simultaneously, P(∀t: μ ∈ C_t) ≥ 1 − α, so
the interval at any data-dependent time — the first look where it is narrow enough, the look
where the money ran out — still covers with probability ≥ 1 − α. Looking after every unit
costs nothing. This module is the machinery on unit values X_i ∈ [0, 1];
:mod:`evalnoise.stats.accuracy_sequences` forms the units from a trial table and
:mod:`evalnoise.stats.stopping` decides when to stop.

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
both cover at least 0.968 at the stopping round, where a fixed-n CI checked after every
round covers as little as 0.72. h must be fixed before the first round: changing it midway
would recompute past bets with hindsight.

The closed-form predictable-mixture empirical-Bernstein CS (PrPl-EB, their Theorem 2) is
available as ``method="empirical_bernstein"``; it is faster and wider.

References
----------
Waudby-Smith, I. & Ramdas, A. (2024). Estimating means of bounded random variables by
betting. JRSS-B 86(1), 1–27. arXiv:2010.09686.
Howard, S. R., Ramdas, A., McAuliffe, J. & Sekhon, J. (2021). Time-uniform, nonparametric,
nonasymptotic confidence sequences. Annals of Statistics 49(2), 1055–1080.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from evalnoise.stats._checks import check_probability
from evalnoise.stats._results import DictResult

__all__ = ["MeanCSResult", "Method", "mean_confidence_sequence"]

Method = Literal["betting", "empirical_bernstein"]

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
