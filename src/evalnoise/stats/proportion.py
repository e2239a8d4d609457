"""Score (Wilson) interval for a proportion, on a plain or an effective sample size.

The Wald interval p ± z·sqrt(p(1−p)/n) collapses to a point at p = 0 or 1 and leaves [0, 1]
near them; with few trials per task, or a group that never (or always) succeeds, both happen
often. Wilson's score interval does neither.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ._checks import check_probability
from ._distributions import norm_ppf

__all__ = ["ProportionInterval", "wilson_interval"]


class ProportionInterval(NamedTuple):
    """Lower and upper ends of a confidence interval for a proportion.

    A named tuple, like scipy's ``ConfidenceInterval``: ``low, high = wilson_interval(...)``
    unpacks it. Each end is an array shaped like the broadcast of the inputs (0-d for scalars).
    """

    low: np.ndarray
    high: np.ndarray


def wilson_interval(
    mean: np.ndarray | float,
    n: np.ndarray | float,
    confidence: float = 0.95,
    *,
    design_effect: np.ndarray | float = 1.0,
) -> ProportionInterval:
    r"""Wilson score interval for a proportion ``mean`` observed over ``n`` trials (vectorized).

    With :math:`p` = ``mean``, :math:`z = \Phi^{-1}((1 + \text{confidence})/2)` and the
    effective sample size :math:`n_{eff} = n / \text{design\_effect}`:

    .. math::

        \frac{p + \frac{z^2}{2n_{eff}} \pm z\sqrt{\frac{p(1-p)}{n_{eff}}
        + \frac{z^2}{4n_{eff}^2}}}{1 + \frac{z^2}{n_{eff}}}

    (Wilson 1927: the set of proportions π whose score test |p − π| / sqrt(π(1−π)/n) ≤ z
    does not reject). Unlike the Wald interval it stays inside [0, 1], always contains p, and
    has positive width at p = 0 and p = 1; Agresti & Coull (1998) recommend it over both the
    Wald and the "exact" Clopper–Pearson interval for its coverage.

    Clustered data (trials of one task are correlated) carry less information than their
    count: a mean over N trials with design effect D (Kish 1965: its variance divided by the
    variance under simple random sampling of N) is as precise as one over
    :math:`n_{eff} = N / D` independent trials. Passing ``design_effect=D`` (or ``n = N / D``
    directly) applies the score interval on that effective sample size, as Korn & Graubard
    (1998) do for proportions estimated from complex survey data. ``n_eff`` need not be an
    integer.

    For partial-credit scores in [0, 1] the same formula is applied to the mean score; since
    a variable bounded in [0, 1] with mean p has variance at most p(1−p), the interval is then
    conservative (at least as wide as the binomial case).

    Parameters
    ----------
    mean : proportion(s) (or mean scores) in [0, 1].
    n : number(s) of trials, > 0.
    confidence : two-sided level, strictly between 0 and 1.
    design_effect : design effect(s) D > 0 dividing ``n`` (default 1: independent trials).

    Returns
    -------
    ProportionInterval
        ``(low, high)`` with ``0 ≤ low ≤ mean ≤ high ≤ 1`` and ``low < high`` (unless n_eff is
        so large that the half-width is below rounding); arrays broadcast from the inputs.

    References
    ----------
    Wilson, E. B. (1927). Probable inference, the law of succession, and statistical
    inference. *JASA* 22(158): 209–212.
    Agresti, A. & Coull, B. A. (1998). Approximate is better than "exact" for interval
    estimation of binomial proportions. *The American Statistician* 52(2): 119–126.
    Kish, L. (1965). *Survey Sampling*. Wiley (design effect, effective sample size).
    Korn, E. L. & Graubard, B. I. (1998). Confidence intervals for proportions with small
    expected number of positive counts estimated from survey data. *Survey Methodology*
    24(2): 193–201.
    """
    confidence = check_probability(confidence)
    p = np.asarray(mean, dtype=float)
    deff = np.asarray(design_effect, dtype=float)
    n = np.asarray(n, dtype=float)
    if not np.all((n > 0) & np.isfinite(n)):
        raise ValueError("every n must be positive and finite")
    if not np.all((deff > 0) & np.isfinite(deff)):
        raise ValueError("every design_effect must be positive and finite")
    if not np.all((p >= 0) & (p <= 1)):
        raise ValueError("every mean must lie in [0, 1]")
    n_eff = n / deff
    z = float(norm_ppf(0.5 + confidence / 2))
    z2 = z * z
    denom = 1.0 + z2 / n_eff
    center = (p + z2 / (2 * n_eff)) / denom
    half = z * np.sqrt(p * (1 - p) / n_eff + z2 / (4 * n_eff * n_eff)) / denom
    # The interval always contains p (its score statistic is 0); clipping to [0, p] and
    # [p, 1] only removes rounding error, so p = 0 gives exactly 0 and p = 1 exactly 1.
    return ProportionInterval(np.clip(center - half, 0.0, p), np.clip(center + half, p, 1.0))


def wilson_or_nan(
    mean: float, n: int, confidence: float, design_effect: float = 1.0
) -> tuple[float, float]:
    """:func:`wilson_interval` of one proportion as two floats; (NaN, NaN) when n = 0.

    The design effect is floored at 1, as Korn & Graubard (1998) advise, so that chance
    under-dispersion of clusters never narrows the interval below the plain one; NaN (a
    design effect that could not be estimated) counts as 1.
    """
    if n == 0:
        return float("nan"), float("nan")
    d = design_effect if np.isfinite(design_effect) else 1.0
    low, high = wilson_interval(mean, n, confidence, design_effect=max(d, 1.0))
    return float(low), float(high)
