"""The few distribution functions the statistics need, from ``scipy.special``.

``scipy.stats`` builds every distribution's docstring when it is imported, a cost paid by
every process again, by every pipeline job (analysis, compare, convergence, budget, summary,
report), while the statistics use nine functions of five distributions. These are the same
special functions ``scipy.stats`` calls for them (its ``_ppf``/``_sf``/``_cdf`` methods, scipy
1.17), so the values agree to round-off; ``tests/stats/test_distributions.py`` checks them
against ``scipy.stats`` over grids of arguments. Arguments broadcast like NumPy ufuncs.
"""

from __future__ import annotations

import numpy as np
from scipy import special

__all__ = [
    "binom_cdf",
    "chi2_ppf",
    "chi2_sf",
    "f_ppf",
    "f_sf",
    "norm_ppf",
    "norm_sf",
    "t_ppf",
    "t_sf",
]


def _quantile(raw, q, lower: float, upper: float, valid=True):
    """``raw`` where 0 < q < 1; the support's ends at q = 0 and 1; NaN for q outside [0, 1]
    or invalid shape parameters: the boundary rules of ``rv_continuous.ppf``, which the
    special functions alone do not all follow (``stdtrit(df, 0)`` is +inf, not −inf)."""
    q = np.asarray(q, dtype=float)
    out = np.where(q == 0, lower, np.where(q == 1, upper, raw))
    return np.where((q >= 0) & (q <= 1) & valid, out, np.nan)[()]


def _survival(raw, x, lower: float, valid=True):
    """``raw`` inside the support, 1 at or below its lower end, 0 at +∞, NaN for a NaN x or
    invalid shape parameters (``rv_continuous.sf``)."""
    x = np.asarray(x, dtype=float)
    out = np.where(x <= lower, 1.0, np.where(x == np.inf, 0.0, raw))
    return np.where(~np.isnan(x) & valid, out, np.nan)[()]


def _positive(*df) -> np.ndarray:
    return np.logical_and.reduce([np.asarray(v, dtype=float) > 0 for v in df])


def norm_ppf(q):
    """Standard normal quantile: Φ⁻¹(q) (``scipy.stats.norm.ppf``)."""
    return _quantile(special.ndtri(q), q, -np.inf, np.inf)


def norm_sf(x):
    """Standard normal survival function: 1 − Φ(x) = Φ(−x) (``scipy.stats.norm.sf``)."""
    return _survival(special.ndtr(np.negative(x)), x, -np.inf)


def t_ppf(q, df):
    """Student's t quantile with ``df`` degrees of freedom (``scipy.stats.t.ppf``)."""
    return _quantile(special.stdtrit(df, q), q, -np.inf, np.inf, _positive(df))


def t_sf(x, df):
    """Student's t survival function: P(T > x) = F_df(−x) (``scipy.stats.t.sf``)."""
    return _survival(special.stdtr(df, np.negative(x)), x, -np.inf, _positive(df))


def f_ppf(q, dfn, dfd):
    """Quantile of the F(dfn, dfd) distribution (``scipy.stats.f.ppf``)."""
    return _quantile(special.fdtri(dfn, dfd, q), q, 0.0, np.inf, _positive(dfn, dfd))


def f_sf(x, dfn, dfd):
    """Survival function of F(dfn, dfd): P(F > x) (``scipy.stats.f.sf``)."""
    raw = special.fdtrc(dfn, dfd, np.maximum(x, 0.0))
    return _survival(raw, x, 0.0, _positive(dfn, dfd))


def chi2_ppf(q, df):
    """χ² quantile: 2 · P⁻¹(df/2, q), P the regularized lower incomplete gamma
    (``scipy.stats.chi2.ppf``)."""
    raw = 2.0 * special.gammaincinv(np.multiply(df, 0.5), q)
    return _quantile(raw, q, 0.0, np.inf, _positive(df))


def chi2_sf(x, df):
    """χ² survival function: Q(df/2, x/2), the regularized upper incomplete gamma
    (``scipy.stats.chi2.sf``)."""
    return _survival(special.chdtrc(df, np.maximum(x, 0.0)), x, 0.0, _positive(df))


def binom_cdf(k, n, p):
    """Binomial CDF: P(X ≤ ⌊k⌋) for X ~ Bin(n, p) = I_{1−p}(n − ⌊k⌋, ⌊k⌋ + 1)
    (``scipy.stats.binom.cdf``): 0 below the support, 1 from n on, NaN for an n that is not
    a non-negative integer or a p outside [0, 1]."""
    k = np.floor(np.asarray(k, dtype=float))
    n = np.asarray(n, dtype=float)
    p = np.asarray(p, dtype=float)
    valid = (n >= 0) & (n == np.floor(n)) & (p >= 0) & (p <= 1) & ~np.isnan(k)
    # bdtr wants integer counts (a float one is deprecated): clip into the support first
    n_int = np.where(valid, n, 0).astype(np.int64)
    k_int = np.clip(np.where(valid, k, 0), 0, n_int).astype(np.int64)
    raw = special.bdtr(k_int, n_int, np.where(valid, p, 0.5))
    out = np.where(k < 0, 0.0, np.where(k >= n, 1.0, raw))
    return np.where(valid, out, np.nan)[()]
