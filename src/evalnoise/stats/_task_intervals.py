"""The interval of a mean over tasks of per-task statistics, with the task as the unit.

Used by the statistics that average one number per task (pass^k, pass@k, outcome and
trajectory consistency): tasks are independent draws, so the mean of G per-task values h_g
has the CR1 task-clustered standard error

    SE = sqrt(Σ_g (h_g − h̄)² / (G (G − 1))) = s(h) / sqrt(G),

the same as :func:`evalnoise.stats.accuracy`'s ``se_clustered`` when h_g is a task's mean
score, and the Wald interval h̄ ∓ z_{1−α/2} SE truncated to the statistic's range. When every
h_g is equal the SE is 0 and the Wald interval one point, a certainty G tasks cannot give; a
statistic on [0, 1] then takes the Wilson interval on n_eff = G, as
:func:`evalnoise.stats.accuracy` does (``ci_method`` ``wilson_effective_n``), and one on
[a, b] the same interval of (h̄ − a)/(b − a), mapped back: a + (b − a) × Wilson.

The pooled mean over trials μ̂_p = Σ S_g / N (paper eq. 2) is a ratio of cluster totals; its
cluster-robust SE (the CR1 sandwich of an intercept-only regression clustered by task) is

    SE = sqrt(c Σ_g (S_g − T_g μ̂_p)²) / N,   c = G/(G − 1) (CR1) or 1 (Miller),

which for a balanced design is :func:`evalnoise.stats.accuracy`'s clustered SE.
"""

from __future__ import annotations

import numpy as np

from evalnoise.stats._distributions import norm_ppf
from evalnoise.stats._tasks import task_sums
from evalnoise.stats.proportion import wilson_interval


def task_mean_interval(
    values: np.ndarray, confidence: float, *, low: float = 0.0, high: float = 1.0
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(mean, SE, ci_low, ci_high) over axis 0 of ``values`` (tasks × anything), CR1 SE,
    normal quantile, the interval truncated to [``low``, ``high``] (the Wilson interval on
    n_eff = G, rescaled to the range, where every task's value is equal); SE and interval NaN
    with fewer than two tasks."""
    v = np.asarray(values, dtype=float)
    g = v.shape[0]
    mean = v.mean(axis=0)
    if g < 2:
        nan = np.full(mean.shape, np.nan)
        return mean, nan, nan.copy(), nan.copy()
    se = v.std(axis=0, ddof=1) / np.sqrt(g)
    z = float(norm_ppf(0.5 + confidence / 2.0))
    lo, hi = np.clip(mean - z * se, low, high), np.clip(mean + z * se, low, high)
    flat = np.ptp(v, axis=0) == 0
    if high > low and np.any(flat):
        width = high - low
        w_lo, w_hi = wilson_interval(np.clip((mean - low) / width, 0.0, 1.0), g, confidence)
        lo = np.where(flat, low + width * np.asarray(w_lo), lo)
        hi = np.where(flat, low + width * np.asarray(w_hi), hi)
    return mean, se, lo, hi


def pooled_mean_interval(
    scores: np.ndarray, tasks: np.ndarray, confidence: float, *, cluster_se: str = "cr1"
) -> tuple[float, float, float, float]:
    """(μ̂_p, SE, ci_low, ci_high) of the pooled mean over trials with the task-clustered SE
    of the module docstring (``cluster_se`` ``"cr1"`` or ``"miller"``), normal quantile, the
    interval truncated to [0, 1] (the Wilson interval on n_eff = G when every task mean is
    equal); SE and interval NaN with fewer than two tasks."""
    ts = task_sums(np.asarray(scores, dtype=float), np.asarray(tasks))
    n, g = ts.n_obs, ts.n_tasks
    mean = float(ts.total.sum() / n)
    if g < 2:
        return mean, float("nan"), float("nan"), float("nan")
    c = g / (g - 1) if cluster_se == "cr1" else 1.0
    resid = ts.total - ts.count * mean
    se = float(np.sqrt(c * float(resid @ resid)) / n)
    if np.ptp(ts.means) == 0:
        lo, hi = wilson_interval(mean, g, confidence)
        return mean, se, float(lo), float(hi)
    z = float(norm_ppf(0.5 + confidence / 2.0))
    return mean, se, max(0.0, mean - z * se), min(1.0, mean + z * se)
