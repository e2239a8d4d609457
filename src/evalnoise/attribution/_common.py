"""Building blocks shared by the attribution analyses: exact tests, FDR control, time blocks.

All functions are pure and vectorized where the computation allows; none does I/O. The exact
McNemar p and the Benjamini–Hochberg adjustment live in :mod:`evalnoise.stats.paired` (next
to McNemar's test and Holm's adjustment) and are re-exported here.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy import special

from evalnoise.schema import TRIAL_KEY
from evalnoise.stats.paired import benjamini_hochberg, mcnemar_exact_p

__all__ = [
    "benjamini_hochberg",
    "binary_outcome",
    "fisher_exact_2xr",
    "fisher_greater",
    "mcnemar_exact_p",
    "run_seconds",
    "time_blocks",
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
    # imported here, not with the module: scipy.stats costs every process that imports the
    # attribution about a second (evalnoise.stats._distributions), and only this test needs it
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


def run_seconds(started_at: Any) -> np.ndarray:
    """Seconds since the earliest start, NaN where unknown.

    ``started_at``: datetimes (naive are taken as UTC, aware are converted) or numbers
    (taken as seconds already).
    """
    s = pd.Series(started_at).reset_index(drop=True)
    if s.size == 0:
        return np.zeros(0)
    if pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s):
        v = s.to_numpy(dtype=float, na_value=np.nan)
    else:
        dt = pd.to_datetime(s, utc=True)
        v = (dt - dt.min()).dt.total_seconds().to_numpy(dtype=float, na_value=np.nan)
    if np.isfinite(v).any():
        v = v - np.nanmin(v)
    return v


def time_blocks(started_at: Any, n_blocks: int = 4) -> np.ndarray:
    """Equal-count time blocks of a run: block b ∈ {0, …, n_blocks − 1} per row, −1 if unknown.

    Rows are ranked by start time; with r the 0-based rank ("min" rank: tied starts share
    it, so ties stay in one block) among the N rows with a start time,

        block = ⌊r · n_blocks / N⌋.

    Every block then holds about N / n_blocks rows (exactly, when N is a multiple and no
    ties straddle a boundary), and block 0 is the start of the run.
    """
    if isinstance(n_blocks, bool) or not isinstance(n_blocks, numbers.Integral) or n_blocks < 1:
        raise ValueError("n_blocks must be a positive integer")
    t = run_seconds(started_at)
    out = np.full(t.shape, -1, dtype=np.int64)
    ok = np.isfinite(t)
    n = int(ok.sum())
    if n:
        v = t[ok]
        r = np.searchsorted(np.sort(v), v, side="left")  # rankdata(v, method="min") − 1
        out[ok] = (r * int(n_blocks)) // n
    return out


def binary_outcome(frame: pd.DataFrame) -> np.ndarray:
    """Correct (1.0) / wrong (0.0) / unknown (NaN) per row.

    ``correct`` where the column exists and is set; otherwise ``score >= 0.5`` (the rule the
    ``recorded`` scorer uses for imported scores); NaN where neither is known.
    """
    out = np.full(len(frame), np.nan)
    if "score" in frame.columns:
        score = pd.to_numeric(frame["score"], errors="coerce").to_numpy(
            dtype=float, na_value=np.nan
        )
        known = ~np.isnan(score)
        out[known] = (score[known] >= 0.5).astype(float)
    if "correct" in frame.columns:
        correct = frame["correct"].astype("boolean")
        known = ~correct.isna().to_numpy()
        out[known] = correct[known].to_numpy(dtype=bool).astype(float)
    return out


def score_values(frame: pd.DataFrame) -> np.ndarray:
    """Each row's score as a float; ``correct`` fills a missing ``score``; NaN = unscored."""
    y = np.full(len(frame), np.nan)
    if "score" in frame.columns:
        y = pd.to_numeric(frame["score"], errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    if "correct" in frame.columns:
        c = frame["correct"].astype("boolean")
        fill = np.isnan(y) & ~c.isna().to_numpy()
        y = y.copy()
        y[fill] = c[fill].to_numpy(dtype=bool).astype(float)
    return y


def trial_key(frame: pd.DataFrame) -> list[str]:
    """The trial key columns (:data:`TRIAL_KEY`) present in ``frame``."""
    key = [c for c in TRIAL_KEY if c in frame.columns]
    for needed in ("task_id", "trial"):
        if needed not in key:
            raise ValueError(f"the table has no {needed!r} column")
    return key


def require_columns(frame: pd.DataFrame, *columns: str) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(f"the table lacks column(s): {', '.join(missing)}")


def one_group(frame: pd.DataFrame, columns: Sequence[str] = ("agent", "resource_profile")) -> None:
    """Raise unless ``frame`` holds at most one value of each of ``columns`` (when present)."""
    for col in columns:
        if col in frame.columns:
            values = pd.unique(frame[col].dropna())
            if len(values) > 1:
                shown = ", ".join(sorted(map(str, values))[:5])
                raise ValueError(
                    f"expected one group's trials, but column {col!r} holds {len(values)} "
                    f"values ({shown}); split the table by group first"
                )
