"""A regression gate between a baseline and a candidate: non-inferiority, regression, or
not enough data, and the design that would decide it.

Sign convention: ``diff = candidate − baseline`` (B − A), so a negative difference is a
regression. With a (1 − α) interval [L, U] of the difference and a margin M ≥ 0 (the largest
drop the user accepts):

- a **regression** is shown when U < 0: the whole interval lies below zero;
- **non-inferiority** is shown when L > −M and no regression is shown: the candidate may be
  worse, but by less than M (the usual non-inferiority test at level α/2 one-sided,
  e.g. Wellek 2010, ch. 1);
- otherwise the interval is too wide to tell: **inconclusive**.

A shown regression wins over non-inferiority (an interval inside (−M, 0) shows both): a
gate that lets a demonstrated drop through would hide it; ``within_margin`` says when the drop
is known to be smaller than M.

How much more data: a design whose minimum detectable difference (paper eq. 9 with the
paired correlation; :func:`evalnoise.stats.minimum_detectable_difference`) equals M shows
non-inferiority with probability ``power`` when the true difference is 0. With
V = 2(1 − r)(σ²_b + σ²_w/T) and z = z_{1−α/2} + z_{1−β},

    n* = z² V / M²   tasks at the current T trials per task,
    T* = σ²_w / (n (M²/(2(1 − r) z²) − σ²_b/n))   trials per task at the current n tasks

(T* is infinite when σ²_b/n alone is too large: more trials cannot reach M).

References
----------
Wellek, S. (2010). *Testing Statistical Hypotheses of Equivalence and Noninferiority*,
2nd ed. Chapman & Hall/CRC.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from evalnoise.stats._checks import check_finite_number, check_probability
from evalnoise.stats._distributions import norm_ppf
from evalnoise.stats._results import DictResult

__all__ = ["DesignForMargin", "GateResult", "design_for_margin", "regression_gate"]

Decision = Literal["non_inferior", "regression", "inconclusive"]


@dataclass(frozen=True)
class GateResult(DictResult):
    """The regression gate's decision on one difference (candidate − baseline).

    Attributes
    ----------
    decision : ``"non_inferior"``, ``"regression"`` or ``"inconclusive"`` (module docstring).
    margin : M, the largest accepted drop (≥ 0).
    diff : the estimated difference.
    ci_low, ci_high : the interval the decision was made on.
    within_margin : whether the whole interval lies above −M (true for ``non_inferior``,
        and for a regression smaller than M).
    """

    decision: Decision
    margin: float
    diff: float
    ci_low: float
    ci_high: float
    within_margin: bool


def regression_gate(diff: float, ci_low: float, ci_high: float, margin: float) -> GateResult:
    """The gate's decision for a difference B − A with interval [L, U] and margin M ≥ 0:

    regression      if U < 0,
    non_inferior    if L > −M (and U ≥ 0),
    inconclusive    otherwise (also when L or U is undefined).
    """
    m = check_finite_number(margin, "margin")
    lo, hi = float(ci_low), float(ci_high)
    defined = math.isfinite(lo) and math.isfinite(hi)
    within = defined and lo > -m
    if defined and hi < 0:
        decision: Decision = "regression"
    elif within:
        decision = "non_inferior"
    else:
        decision = "inconclusive"
    return GateResult(decision, m, float(diff), lo, hi, bool(within))


@dataclass(frozen=True)
class DesignForMargin(DictResult):
    """The design whose minimum detectable difference equals a margin.

    Attributes
    ----------
    margin : M.
    n_tasks, trials : the current design (common tasks, harmonic-mean trials per task).
    tasks_needed : n*, tasks at the current trials per task (rounded up; at least n_tasks
        when the current design already reaches M).
    more_tasks : tasks_needed − n_tasks, ≥ 0.
    trials_needed : T*, trials per task at the current tasks (rounded up); None when more
        trials alone cannot reach M.
    more_trials : trials_needed − ceil(trials), ≥ 0; None with ``trials_needed``.
    alpha, power : of the minimum detectable difference.
    """

    margin: float
    n_tasks: int
    trials: float
    tasks_needed: int
    more_tasks: int
    trials_needed: int | None
    more_trials: int | None
    alpha: float
    power: float


def design_for_margin(
    margin: float,
    n_tasks: int,
    trials: float,
    sigma2_between: float,
    sigma2_within: float,
    *,
    paired_correlation: float = 0.0,
    alpha: float = 0.05,
    power: float = 0.8,
) -> DesignForMargin:
    """Tasks (at the current trials per task) and trials per task (at the current tasks) at
    which the minimum detectable difference reaches ``margin`` (module docstring):

        n* = z² · 2(1 − r)(σ²_b + σ²_w/T) / M²,
        T* = σ²_w / (n · (M² / (2(1 − r) z²) − σ²_b / n)),   z = z_{1−α/2} + z_{1−β}.
    """
    m = check_finite_number(margin, "margin", positive=True)
    a = check_probability(alpha, "alpha")
    pw = check_probability(power, "power")
    s2b = check_finite_number(sigma2_between, "sigma2_between")
    s2w = check_finite_number(sigma2_within, "sigma2_within")
    t = check_finite_number(trials, "trials", positive=True)
    n = int(n_tasks)
    if n < 1:
        raise ValueError(f"n_tasks must be >= 1, got {n_tasks!r}")
    r = float(paired_correlation)
    if not -1.0 <= r < 1.0:
        raise ValueError("paired_correlation must lie in [-1, 1)")
    z = float(norm_ppf(1 - a / 2)) + float(norm_ppf(pw))
    scale = 2.0 * (1.0 - r) * z * z
    tasks_needed = max(n, math.ceil(scale * (s2b + s2w / t) / (m * m) - 1e-9))
    room = m * m / scale - s2b / n  # what the within-task term may still take
    current = math.ceil(t - 1e-9)
    if s2w == 0.0:
        trials_needed: int | None = current if room >= 0 else None
    elif room > 0:
        trials_needed = max(current, math.ceil(s2w / (n * room) - 1e-9))
    else:
        trials_needed = None
    return DesignForMargin(
        margin=m,
        n_tasks=n,
        trials=t,
        tasks_needed=int(tasks_needed),
        more_tasks=int(tasks_needed - n),
        trials_needed=trials_needed,
        more_trials=None if trials_needed is None else int(trials_needed - current),
        alpha=a,
        power=pw,
    )
