"""Exact tests shared by the attribution analyses: Fisher's one-sided and 2×r tests.

Pure and vectorized where the computation allows; no I/O. The exact McNemar p and the
Benjamini–Hochberg adjustment live in :mod:`evalnoise.stats.paired` (next to McNemar's test and
Holm's adjustment) and are re-exported here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy import special

from evalnoise.stats.paired import benjamini_hochberg, mcnemar_exact_p

__all__ = [
    "benjamini_hochberg",
    "fisher_exact_2xr",
    "fisher_greater",
    "mcnemar_exact_p",
]

#: above this many candidate tables the exact 2×r test falls back to Monte Carlo
_MAX_TABLES = 2_000_000
#: relative tolerance when comparing table probabilities (as scipy's fisher_exact does)
_REL_TOL = 1e-7


def fisher_greater(x: Any, n: Any, x_total: int, n_total: int) -> np.ndarray:
    """One-sided Fisher exact p that a unit's rate exceeds the rest's, elementwise.

    Unit g has ``x[g]`` events in ``n[g]`` trials; all units together ``x_total`` in
    ``n_total``. The 2×2 table [[x, n − x], [X − x, N − n − X + x]] conditioned on its margins
    is hypergeometric, so

        p_g = P(H ≥ x_g),  H ~ Hypergeometric(N, X, n_g),

    the p of ``scipy.stats.fisher_exact(table, alternative="greater")``.
    """
    # imported here, not with the module: importing scipy.stats is slow
    # (evalnoise.stats._distributions), and only this test needs it
    from scipy import stats

    x = np.asarray(x)
    n = np.asarray(n)
    return np.asarray(stats.hypergeom.sf(x - 1, n_total, x_total, n), dtype=float)


def _log_choose(n: np.ndarray, k: np.ndarray) -> np.ndarray:
    return special.gammaln(n + 1) - special.gammaln(k + 1) - special.gammaln(n - k + 1)


def fisher_exact_2xr(
    successes: Sequence[int] | np.ndarray,
    totals: Sequence[int] | np.ndarray,
    *,
    max_tables: int = _MAX_TABLES,
    n_resamples: int = 20_000,
    seed: int = 0,
) -> tuple[float, float, str]:
    """Fisher's exact test of a binary outcome across r groups (Freeman–Halton for r > 2).

    Group k has ``successes[k]`` of ``totals[k]`` trials. Conditioned on both margins the
    table is multivariate hypergeometric:
    P(x) = Π_k C(n_k, x_k) / C(N, S). The two-sided p is the probability of every table no
    more probable than the observed one (Freeman and Halton 1951; for r = 2 it is scipy's
    ``fisher_exact`` two-sided p, and for any r scipy ≥ 1.15's r×c ``fisher_exact``).

    Tables are enumerated exactly; if there would be more than ``max_tables`` candidates the
    p is estimated from ``n_resamples`` tables drawn from the null distribution
    (``Generator.multivariate_hypergeometric``), as ``(1 + #{P(x*) ≤ P(x)}) / (1 + B)``.

    Returns
    -------
    (statistic, p, method) : the statistic is the observed table's null probability P(x),
        the method ``"fisher_exact"`` or ``"fisher_monte_carlo"``. Groups with no trials are
        dropped first.
    """
    s = np.asarray(successes, dtype=np.int64)
    n = np.asarray(totals, dtype=np.int64)
    if s.shape != n.shape or s.ndim != 1:
        raise ValueError("successes and totals must be 1-D arrays of the same length")
    if np.any(s < 0) or np.any(s > n):
        raise ValueError("need 0 <= successes <= totals")
    keep = n > 0
    s, n = s[keep], n[keep]
    big_s, big_n = int(s.sum()), int(n.sum())
    log_denom = float(_log_choose(np.float64(big_n), np.float64(big_s)))
    log_obs = float(_log_choose(n.astype(float), s.astype(float)).sum()) - log_denom
    if s.size < 2 or big_s in (0, big_n):
        return float(np.exp(log_obs)), 1.0, "fisher_exact"
    bound = log_obs + np.log1p(_REL_TOL)
    n_candidates = float(np.prod(np.minimum(n, big_s) + 1.0))
    if n_candidates <= max_tables:
        sums = np.zeros(1, dtype=np.int64)
        logw = np.zeros(1)
        remaining = big_n
        for nk in n:
            remaining -= int(nk)
            xs = np.arange(0, min(int(nk), big_s) + 1)
            new_sums = (sums[:, None] + xs[None, :]).ravel()
            new_logw = (logw[:, None] + _log_choose(float(nk), xs.astype(float))[None, :]).ravel()
            # keep partial tables that can still reach exactly S successes
            ok = (new_sums <= big_s) & (new_sums + remaining >= big_s)
            sums, logw = new_sums[ok], new_logw[ok]
        logp = logw - log_denom
        p = float(np.exp(logp[logp <= bound]).sum())
        return float(np.exp(log_obs)), min(1.0, p), "fisher_exact"
    rng = np.random.default_rng(seed)
    draws = rng.multivariate_hypergeometric(n, big_s, size=n_resamples)
    logp = _log_choose(n[None, :].astype(float), draws.astype(float)).sum(axis=1) - log_denom
    hits = int(np.count_nonzero(logp <= bound))
    return float(np.exp(log_obs)), (1 + hits) / (1 + n_resamples), "fisher_monte_carlo"
