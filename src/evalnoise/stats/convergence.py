"""How the ICC estimate settles as trials per task grow (the paper's convergence analysis).

For each T' on a grid, R random subsamples of T' trials per task are drawn without
replacement and the ICC is recomputed on each. The mean over subsamples, with a percentile
band, shows how far an evaluation run with only T' trials would have been from the value
reached with every trial, and from which T' on it stays within a tolerance of it.

Subsamples of one replicate are nested (the T'_1 trials are among the T'_2 trials, ...), as
in the paper's prefix-of-trials table, so each replicate traces one path a run could have
taken as trials accumulated.
"""

from __future__ import annotations

import functools
import warnings as _warnings
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import pandas as pd
from scipy import special

from ._results import DictResult
from ._tasks import task_sums
from .icc import ICCBatch, icc_batch, icc_from_moments

__all__ = ["ConvergenceResult", "icc_convergence"]

Method = Literal["auto", "hypergeometric", "permutation"]

# Upper bound on the elements of one (replicates × tasks × trials) block of the permutation
# path, to keep its memory at a few tens of MB whatever the data size.
_PERMUTATION_BLOCK = 1_000_000

# Largest CDF table (rows × columns) the exact table sampler builds for one nested step (a
# few MB with its guide table, and at most 16 steps' tables are cached); beyond it
# (hundreds of distinct trial counts, or thousands of trials per task) numpy's own
# hypergeometric sampler is used.
_TABLE_LIMIT = 500_000

# Entries per block of replicates × tasks in the hypergeometric path: small enough that its
# temporaries are reused from the heap and stay in cache.
_DRAW_BLOCK = 32_768


@dataclass(frozen=True, eq=False)
class ConvergenceResult(DictResult):
    """ICC as a function of the number of trials per task.

    Array attributes have one entry per grid point, in increasing ``trials`` order.

    Attributes
    ----------
    trials : T', trials per task in the subsample (tasks with fewer trials use all).
    n_obs : trials in each subsample, Σ_i min(T_i, T').
    icc_mean, icc_low, icc_high : mean and ``band`` percentiles over subsamples of the
        ANOVA estimator ICC(1,1).
    icc_plugin_mean, icc_plugin_low, icc_plugin_high : the same for the paper's plug-in
        estimator (eqs. 6–7).
    icc_prefix, icc_plugin_prefix : both estimators on the first T' trials of every task in
        ``trials`` order (the paper's own convergence table); NaN when ``trials`` is None.
    n_valid : subsamples whose ANOVA ICC is finite (the others are excluded from the
        mean and band, e.g. when every sampled score is equal).
    full_icc, full_icc_plugin : both estimators on all the data.
    converged_at, converged_at_plugin : smallest grid T' below the full-data point from
        which the mean estimate stays within ``tolerance`` of the full-data value at every
        larger grid point; None if only the full data themselves qualify.
    tolerance, band, n_subsamples, seed : the options used.
    method : "hypergeometric" (binary scores) or "permutation".
    warnings : reasons for NaN values and dropped grid points.
    """

    trials: np.ndarray
    n_obs: np.ndarray
    icc_mean: np.ndarray
    icc_low: np.ndarray
    icc_high: np.ndarray
    icc_plugin_mean: np.ndarray
    icc_plugin_low: np.ndarray
    icc_plugin_high: np.ndarray
    icc_prefix: np.ndarray
    icc_plugin_prefix: np.ndarray
    n_valid: np.ndarray
    full_icc: float
    full_icc_plugin: float
    converged_at: int | None
    converged_at_plugin: int | None
    tolerance: float
    band: tuple[float, float]
    n_subsamples: int
    seed: object
    method: str
    warnings: tuple[str, ...] = field(default=())

    def to_frame(self) -> pd.DataFrame:
        """The per-grid-point table as a DataFrame, one row per T'."""
        return pd.DataFrame(
            {
                "trials": self.trials,
                "n_obs": self.n_obs,
                "icc_mean": self.icc_mean,
                "icc_low": self.icc_low,
                "icc_high": self.icc_high,
                "icc_plugin_mean": self.icc_plugin_mean,
                "icc_plugin_low": self.icc_plugin_low,
                "icc_plugin_high": self.icc_plugin_high,
                "icc_prefix": self.icc_prefix,
                "icc_plugin_prefix": self.icc_plugin_prefix,
                "n_valid": self.n_valid,
            }
        )


def _default_grid(t_max: int) -> np.ndarray:
    """2, 4, 8, … below ``t_max``, then ``t_max`` itself."""
    if t_max < 2:
        return np.zeros(0, dtype=np.int64)
    powers = 2 ** np.arange(1, int(np.log2(t_max)) + 1)
    return np.unique(np.append(powers[powers < t_max], t_max)).astype(np.int64)


def _hypergeometric_cdf(n_pop: int, n_draw: int) -> np.ndarray:
    """CDF table of HG(n_pop, K, n_draw): row K = 0..n_pop, column x = 0..n_draw.

    P(X = x) = C(K, x)·C(n_pop − K, n_draw − x) / C(n_pop, n_draw). Rows are renormalised
    so that the last column is exactly 1, which guarantees the inverse-CDF search stops.
    """
    k = np.arange(n_pop + 1, dtype=float)[:, None]
    x = np.arange(n_draw + 1, dtype=float)[None, :]
    feasible = (x <= k) & (n_draw - x <= n_pop - k)

    def log_choose(n, r):
        r = np.clip(r, 0.0, n)
        return special.gammaln(n + 1) - special.gammaln(r + 1) - special.gammaln(n - r + 1)

    log_p = log_choose(k, x) + log_choose(n_pop - k, n_draw - x) - log_choose(n_pop, n_draw)
    pmf = np.where(feasible, np.exp(log_p), 0.0)
    cdf = np.cumsum(pmf, axis=1)
    cdf /= cdf[:, -1:]
    cdf.setflags(write=False)
    return cdf


@functools.lru_cache(maxsize=16)
def _sampler_tables(pairs: tuple[tuple[int, int], ...]):
    """Flat CDF and guide tables for the (N, n) pairs of one nested step.

    Cached because every group of a balanced evaluation repeats the same pairs.
    Returns (cdf, guide, row offset of each pair, width, cells).
    """
    width = max(n for _, n in pairs) + 1
    cells = 2 * width
    blocks = []
    offsets = np.zeros(len(pairs), dtype=np.int64)
    rows = 0
    for j, (big_n, small_n) in enumerate(pairs):
        cdf = _hypergeometric_cdf(big_n, small_n)
        padded = np.ones((cdf.shape[0], width))
        padded[:, : cdf.shape[1]] = cdf
        blocks.append(padded)
        offsets[j] = rows
        rows += cdf.shape[0]
    table = np.concatenate(blocks)
    # Rows are made disjoint by adding 2·row, so one searchsorted serves every row.
    row_ids = np.arange(rows)
    shifted = (table + 2.0 * row_ids[:, None]).ravel()
    starts = np.arange(cells) / cells - 1e-9
    guide = np.searchsorted(shifted, starts[None, :] + 2.0 * row_ids[:, None], side="right")
    guide -= (row_ids * width)[:, None]
    guide = np.clip(guide, 0, width - 1).ravel()
    cdf_flat = table.ravel()
    for arr in (cdf_flat, guide, offsets):
        arr.setflags(write=False)
    return cdf_flat, guide, offsets, width, cells


class _HypergeometricSampler:
    """Exact inverse-CDF sampler for HG(N, K, n) when (N, n) take few distinct values.

    All (N, n) pairs of one nested step share one flat CDF table (a row per (pair, K)) and
    a guide table (Chen & Asau 1974): for u in [c/Q, (c+1)/Q) the search starts at the
    smallest x whose CDF exceeds c/Q (less a margin, so the start never overshoots), and
    walks up while CDF(x) ≤ u. With Q = 2·width cells the walk averages under one step, so
    a draw costs a few gathers instead of numpy's per-variate rejection loop.
    """

    def __init__(self, pairs: np.ndarray, pair_of: np.ndarray):
        self.cdf, self.guide, offsets, self.width, self.cells = _sampler_tables(
            tuple(map(tuple, pairs.T.tolist()))
        )
        self.row_offset = offsets[pair_of]

    @classmethod
    def build(cls, n_pop: np.ndarray, n_draw: np.ndarray) -> _HypergeometricSampler | None:
        """Sampler for per-task parameters (n_pop, n_draw), or None if its table is too big."""
        key = n_pop.astype(np.int64) * (int(n_draw.max()) + 1) + n_draw
        if key.min() == key.max():  # balanced designs: one pair, no sort needed
            first = np.array([[n_pop[0]], [n_draw[0]]], dtype=np.int64)
            pairs, pair_of = first, np.zeros(key.size, dtype=np.int64)
        else:
            _, first_idx, pair_of = np.unique(key, return_index=True, return_inverse=True)
            pairs = np.stack([n_pop[first_idx], n_draw[first_idx]]).astype(np.int64)
        if (pairs[0] + 1).sum() * (pairs[1].max() + 1) > _TABLE_LIMIT:
            return None
        return cls(pairs, pair_of.ravel())

    def draw(self, good: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """One draw per entry of ``good`` (shape (R, tasks)); column j uses task j's (N, n)."""
        row = good + self.row_offset
        row = row.reshape(-1)
        u = rng.random(row.size)
        start = row * self.cells
        start += (u * self.cells).astype(np.intp)
        x = np.take(self.guide, start)
        flat = row * self.width
        flat += x
        pending = np.flatnonzero(np.take(self.cdf, flat) <= u)
        while pending.size:
            x[pending] += 1
            flat[pending] += 1
            pending = pending[np.take(self.cdf, flat[pending]) <= u[pending]]
        return x.reshape(good.shape)


def _nested_hypergeometric(
    count: np.ndarray,
    successes: np.ndarray,
    lengths: np.ndarray,
    n_subsamples: int,
    rng: np.random.Generator,
):
    """Success counts of nested random subsamples of binary trials.

    For each row g of ``lengths`` (shape (G, a), non-decreasing in g and at most
    ``count``) the successes among the first ``lengths[g]`` trials of a uniformly random
    permutation of each task's trials. The first prefix is hypergeometric; each extension
    draws the extra successes hypergeometrically from the trials not yet used, which is the
    same joint law as nested prefixes of one permutation.

    Yields ``(r0, r1, g, drawn)`` with ``drawn`` of shape (r1 − r0, a) for replicates
    r0..r1−1 at grid point g. Replicates are processed in blocks small enough to stay in
    cache (fresh multi-megabyte temporaries cost more in page faults than in arithmetic);
    ``drawn`` is updated in place by the next step, so copy it to keep it.
    """
    a = count.size
    plans = []
    used = np.zeros(a, dtype=np.int64)
    for length in lengths:
        step = length - used
        left = count - used
        # Taking every remaining trial is deterministic; zero steps draw nothing.
        take_all = (step == left) & (step > 0)
        cols = np.flatnonzero((step > 0) & ~take_all)
        sampler = _HypergeometricSampler.build(left[cols], step[cols]) if cols.size else None
        every = cols.size == a
        plans.append((take_all, cols, every, left[cols], step[cols], sampler))
        used = length

    block = max(1, _DRAW_BLOCK // max(a, 1))
    for r0 in range(0, n_subsamples, block):
        r1 = min(n_subsamples, r0 + block)
        drawn = np.zeros((r1 - r0, a), dtype=np.int64)
        for g, (take_all, cols, every, left, step, sampler) in enumerate(plans):
            if take_all.any():
                drawn[:, take_all] = successes[take_all]
            if cols.size:
                current = drawn if every else drawn[:, cols]
                good_left = successes[cols] - current
                if sampler is not None:
                    extra = sampler.draw(good_left, rng)
                else:
                    extra = rng.hypergeometric(
                        good_left, left - good_left, np.broadcast_to(step, good_left.shape)
                    )
                if every:
                    drawn += extra
                else:
                    drawn[:, cols] = current + extra
            yield r0, r1, g, drawn


def _binary_subsamples(ts, grid, n_subsamples, rng) -> list[ICCBatch]:
    """ICC batches (one per grid point) from hypergeometric draws of success counts."""
    count = ts.count.astype(np.int64)
    succ = np.rint(ts.total).astype(np.int64)
    lengths = np.minimum(count[None, :], grid[:, None])
    # Tasks that always or never succeed give the same subsample counts in every replicate:
    # their share of each moment is computed once, and only the others are drawn.
    mixed = (succ > 0) & (succ < count)
    fixed_len = lengths[:, ~mixed].astype(float)
    fixed_x = fixed_len * (succ[~mixed] == count[~mixed])
    fixed_means = np.divide(fixed_x, fixed_len, out=np.zeros_like(fixed_x), where=fixed_len > 0)
    n_grid = grid.size
    # Moments per (grid point, replicate): ΣS, ΣS²/T, ΣȲ, ΣȲ² (for 0/1 scores ΣQ = ΣS).
    s = np.empty((n_grid, n_subsamples))
    s2t = np.empty_like(s)
    m = np.empty_like(s)
    m2 = np.empty_like(s)
    s[:] = fixed_x.sum(axis=1)[:, None]
    s2t[:] = (fixed_x * fixed_means).sum(axis=1)[:, None]
    m[:] = fixed_means.sum(axis=1)[:, None]
    m2[:] = (fixed_means * fixed_means).sum(axis=1)[:, None]
    inv = 1.0 / lengths[:, mixed].astype(float)
    inv2 = inv * inv
    draws = _nested_hypergeometric(count[mixed], succ[mixed], lengths[:, mixed], n_subsamples, rng)
    for r0, r1, g, x_int in draws:
        x = x_int.astype(float)
        xx = x * x
        s[g, r0:r1] += x.sum(axis=1)
        s2t[g, r0:r1] += xx @ inv[g]
        m[g, r0:r1] += x @ inv[g]
        m2[g, r0:r1] += xx @ inv2[g]
    out = []
    for g in range(n_grid):
        len_all = lengths[g].astype(float)
        sizes = (float(ts.n_tasks), len_all.sum(), float(len_all @ len_all))
        out.append(icc_from_moments(*sizes, s[g], s[g], s2t[g], m[g], m2[g]))
    return out


def _padded(values: np.ndarray, codes: np.ndarray, count: np.ndarray, order_key=None):
    """Task-by-trial matrix (a, T_max) of ``values`` (0 where a task has fewer trials).

    Within a task, trials keep row order, or ``order_key`` order when given.
    """
    a = count.size
    t_max = int(count.max())
    if order_key is None:
        order = np.argsort(codes, kind="stable")
    else:
        order = np.lexsort((order_key, codes))
    starts = np.concatenate(([0], np.cumsum(count[:-1]))).astype(np.int64)
    sorted_codes = codes[order]
    pos = np.arange(codes.size) - starts[sorted_codes]
    mat = np.zeros((a, t_max))
    mat[sorted_codes, pos] = values[order]
    return mat


def _prefix_batches(mat: np.ndarray, lengths: np.ndarray) -> ICCBatch:
    """ICC of the first ``lengths[g, i]`` columns of each task row, for every grid row g.

    ``mat`` has shape (..., a, T_max); the result has batch shape (..., G).
    """
    cs = np.cumsum(mat, axis=-1)
    cs2 = np.cumsum(mat * mat, axis=-1)
    a = mat.shape[-2]
    task_idx = np.arange(a)
    end = lengths - 1  # (G, a)
    s = cs[..., task_idx[None, :], end]  # (..., G, a)
    q = cs2[..., task_idx[None, :], end]
    return icc_batch(lengths.astype(float), s, q)


def _permutation_subsamples(y, ts, grid, n_subsamples, rng) -> list[ICCBatch]:
    """ICC batches (one per grid point) from random permutations of each task's trials."""
    count = ts.count.astype(np.int64)
    mat = _padded(y, ts.codes, count)
    a, t_max = mat.shape
    pad = np.arange(t_max)[None, :] >= count[:, None]
    lengths = np.minimum(count[None, :], grid[:, None])
    block = max(1, _PERMUTATION_BLOCK // (a * t_max))
    parts = []
    for start in range(0, n_subsamples, block):
        r = min(block, n_subsamples - start)
        keys = rng.random((r, a, t_max))
        # Padding sorts last, so a permutation only reorders a task's real trials.
        keys[:, pad] = 2.0
        order = np.argsort(keys, axis=-1)
        shuffled = np.take_along_axis(np.broadcast_to(mat, keys.shape), order, axis=-1)
        parts.append(_prefix_batches(shuffled, lengths))  # batch shape (r, G)
    out = []
    for g in range(grid.size):
        out.append(
            ICCBatch(
                **{
                    name: np.concatenate([getattr(p, name)[:, g] for p in parts])
                    for name in ICCBatch.__dataclass_fields__
                }
            )
        )
    return out


def _band_stats(values: np.ndarray, band: tuple[float, float]):
    """Mean and percentile band over finite entries of each row; NaN rows stay NaN."""
    finite = np.isfinite(values)
    n_valid = finite.sum(axis=1)
    total = np.where(finite, values, 0.0).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = total / n_valid
    if values.shape[0] == 0:
        return mean, mean.copy(), mean.copy(), n_valid
    with _warnings.catch_warnings():
        _warnings.simplefilter("ignore", RuntimeWarning)
        low, high = np.nanquantile(values, band, axis=1)
    return mean, low, high, n_valid


def _converged_at(
    trials: np.ndarray, means: np.ndarray, full: float, tolerance: float, t_max: int
) -> int | None:
    """Smallest T' < t_max from which every later grid mean is within ``tolerance`` of full."""
    within = np.abs(means - full) <= tolerance  # NaN compares False
    holds_onwards = np.logical_and.accumulate(within[::-1])[::-1]
    candidates = holds_onwards & (trials < t_max)
    if not candidates.any():
        return None
    return int(trials[np.argmax(candidates)])


def icc_convergence(
    scores: np.ndarray,
    tasks: np.ndarray,
    trials: np.ndarray | None = None,
    *,
    grid=None,
    n_subsamples: int = 200,
    seed: int | np.random.Generator | None = 0,
    tolerance: float = 0.02,
    band: tuple[float, float] = (0.05, 0.95),
    method: Method = "auto",
) -> ConvergenceResult:
    r"""ICC estimates on random subsamples of T' trials per task, for T' on a grid.

    Parameters
    ----------
    scores : 1-D array of floats in [0, 1].
    tasks : 1-D array of task labels; any number of trials per task.
    trials : optional 1-D array of trial labels (epoch, run index, …). When given, the
        deterministic prefix curve ``icc_prefix`` is also computed: the ICC on the first T'
        trials of every task in trial order, as in the paper's convergence table.
    grid : increasing trial counts T' ≥ 2. Default: 2, 4, 8, … below the largest trial
        count per task, plus that count itself. Points above it are dropped.
    n_subsamples : R, random subsamples per grid point (nested across grid points).
    seed : seed or ``numpy.random.Generator`` for the subsampling.
    tolerance : distance to the full-data value that counts as converged.
    band : lower and upper quantiles of the reported band.
    method : ``"auto"`` (hypergeometric for 0/1 scores, otherwise permutation),
        ``"hypergeometric"`` (0/1 scores only) or ``"permutation"``.

    Returns
    -------
    ConvergenceResult

    Notes
    -----
    Subsample r at grid point T' takes :math:`\min(T_i, T')` trials of task i, drawn
    without replacement; tasks with fewer than T' trials contribute all of theirs, so every
    subsample keeps every task and the between-task spread is always estimated over the
    same set of tasks (with unbalanced data the subsample itself is unbalanced once T'
    exceeds some T_i). At T' = max T_i the subsample is the full data. Both the ANOVA
    ICC(1,1) (:func:`evalnoise.stats.icc.icc_batch`) and the paper's plug-in estimator
    (eqs. 6–7) are computed on every subsample.

    Binary scores need only each task's success count in the subsample. For the first grid
    point it is hypergeometric, :math:`X_1 \sim \mathrm{HG}(T_i, S_i, L_1)`; each further
    point adds :math:`X_g - X_{g-1} \sim \mathrm{HG}(T_i - L_{g-1}, S_i - X_{g-1},
    L_g - L_{g-1})`, which is exactly the law of nested prefixes of one random permutation
    and costs R × tasks × grid draws instead of R × N permuted values. Tasks whose trials
    all agree are deterministic and drawn never. Other scores fall back to sorting random
    keys per (replicate, task) and taking prefix sums.

    ``converged_at`` follows the paper's reading of its convergence table ("ICC stabilizes
    by n ≈ 8–16"): the smallest T' from which the mean subsample ICC stays within
    ``tolerance`` of the full-data ICC at every larger grid point. The full-data point
    itself is excluded as a candidate, since it matches trivially.
    """
    if n_subsamples < 1:
        raise ValueError(f"n_subsamples must be at least 1, got {n_subsamples!r}")
    if not tolerance >= 0:
        raise ValueError(f"tolerance must be non-negative, got {tolerance!r}")
    lo_q, hi_q = (float(b) for b in band)
    if not 0.0 <= lo_q <= hi_q <= 1.0:
        raise ValueError(f"band must be two quantiles 0 ≤ low ≤ high ≤ 1, got {band!r}")
    if method not in ("auto", "hypergeometric", "permutation"):
        raise ValueError(f"unknown method {method!r}")

    y = np.asarray(scores, dtype=float)
    ts = task_sums(y, tasks)
    notes: list[str] = []
    count = ts.count.astype(np.int64)
    t_max = int(count.max()) if count.size else 0

    if grid is None:
        grid_arr = _default_grid(t_max)
    else:
        grid_arr = np.unique(np.asarray(grid, dtype=np.int64))
        if grid_arr.size and grid_arr[0] < 2:
            raise ValueError("grid values must be at least 2 (one trial has no within-task df)")
        if (grid_arr > t_max).any():
            notes.append(
                f"grid points above the largest trial count per task ({t_max}) were dropped: "
                f"{grid_arr[grid_arr > t_max].tolist()}"
            )
            grid_arr = grid_arr[grid_arr <= t_max]
    if grid_arr.size == 0:
        notes.append("no grid point: at least one task needs two or more trials")

    binary = bool(np.all((y == 0.0) | (y == 1.0)))
    if method == "hypergeometric" and not binary:
        raise ValueError("method='hypergeometric' needs scores that are all 0 or 1")
    use_hg = method == "hypergeometric" or (method == "auto" and binary)
    rng = np.random.default_rng(seed)

    if ts.n_obs:
        full = icc_batch(ts.count, ts.total, ts.total_sq)
        full_icc, full_plugin = float(full.icc), float(full.icc_plugin)
    else:
        full_icc = full_plugin = float("nan")
    if not np.isfinite(full_icc):
        notes.append("the full-data ICC is undefined (NaN), so convergence cannot be assessed")

    n_grid = grid_arr.size
    if n_grid:
        lengths = np.minimum(count[None, :], grid_arr[:, None])
        if use_hg:
            batches = _binary_subsamples(ts, grid_arr, n_subsamples, rng)
        else:
            batches = _permutation_subsamples(y, ts, grid_arr, n_subsamples, rng)
        icc_reps = np.stack([np.broadcast_to(b.icc, (n_subsamples,)) for b in batches])
        plug_reps = np.stack([np.broadcast_to(b.icc_plugin, (n_subsamples,)) for b in batches])
        n_obs = lengths.sum(axis=1)
    else:
        icc_reps = plug_reps = np.zeros((0, n_subsamples))
        n_obs = np.zeros(0, dtype=np.int64)
    icc_mean, icc_low, icc_high, n_valid = _band_stats(icc_reps, (lo_q, hi_q))
    plug_mean, plug_low, plug_high, _ = _band_stats(plug_reps, (lo_q, hi_q))
    if n_grid and (n_valid < n_subsamples).any():
        notes.append(
            "some subsamples have an undefined ICC (e.g. every sampled score equal) and are "
            "left out of the mean and band; see n_valid"
        )

    prefix = np.full(n_grid, np.nan)
    prefix_plugin = np.full(n_grid, np.nan)
    if trials is not None and n_grid:
        trial_rank, _ = pd.factorize(np.asarray(trials), sort=True)
        if trial_rank.shape != ts.codes.shape:
            raise ValueError("trials must have one label per score")
        mat = _padded(y, ts.codes, count, order_key=trial_rank)
        pb = _prefix_batches(mat, lengths)
        prefix, prefix_plugin = np.asarray(pb.icc, float), np.asarray(pb.icc_plugin, float)

    def _frozen(arr):
        arr = np.array(arr)
        arr.setflags(write=False)
        return arr

    return ConvergenceResult(
        trials=_frozen(grid_arr),
        n_obs=_frozen(n_obs),
        icc_mean=_frozen(icc_mean),
        icc_low=_frozen(icc_low),
        icc_high=_frozen(icc_high),
        icc_plugin_mean=_frozen(plug_mean),
        icc_plugin_low=_frozen(plug_low),
        icc_plugin_high=_frozen(plug_high),
        icc_prefix=_frozen(prefix),
        icc_plugin_prefix=_frozen(prefix_plugin),
        n_valid=_frozen(n_valid),
        full_icc=full_icc,
        full_icc_plugin=full_plugin,
        converged_at=_converged_at(grid_arr, icc_mean, full_icc, tolerance, t_max),
        converged_at_plugin=_converged_at(grid_arr, plug_mean, full_plugin, tolerance, t_max),
        tolerance=float(tolerance),
        band=(lo_q, hi_q),
        n_subsamples=int(n_subsamples),
        seed=seed,
        method="hypergeometric" if use_hg else "permutation",
        warnings=tuple(notes),
    )
