"""Comparing two agents run on the same tasks: paired difference, McNemar, paired bootstrap.

Sign convention, everywhere in this module: ``diff = mean_a − mean_b``, so a positive
difference means agent A scores higher. McNemar's ``n10`` counts pairs where A is right and B
wrong, ``n01`` the reverse.

The paper ("Testing Agent Differences with Dependent Samples") recommends McNemar's test on
discordant outcomes (eq. 5) and a paired bootstrap over items (Efron and Tibshirani 1994);
the paired t interval on task means is the analytic counterpart of that bootstrap.
"""

from __future__ import annotations

import math
import numbers
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from evalnoise.stats._checks import check_probability, finite_scores
from evalnoise.stats._distributions import binom_cdf, chi2_sf, t_ppf, t_sf
from evalnoise.stats._results import DictResult, renamed
from evalnoise.stats._tasks import TaskSums, task_sums
from evalnoise.stats.planning import MDDResult, minimum_detectable_difference

__all__ = [
    "ComparisonResult",
    "McNemarResult",
    "PairedBootstrapResult",
    "PairedDifferenceResult",
    "benjamini_hochberg",
    "compare",
    "holm",
    "mcnemar",
    "mcnemar_exact_p",
    "paired_bootstrap",
    "paired_difference",
]

# Bounds the (resamples × tasks) index block, or the (resamples × distinct values) count
# block, of the bootstrap to about 32 MB of int64.
_BOOTSTRAP_BLOCK = 1 << 22
# Counts of distinct values are drawn when there are at most n / this many of them: one
# multinomial category costs about as much as this many uniform indices with their gather
# (benchmarks/bench_stats.py times both).
_MULTINOMIAL_RATIO = 8


@dataclass(frozen=True)
class PairedDifferenceResult(DictResult):
    """Task-level paired difference of two agents' accuracies.

    Attributes
    ----------
    tasks : labels of the tasks both agents ran, in A's order of first appearance.
    task_means_a, task_means_b : Ȳ_i for each agent on those tasks.
    n_tasks : number of common tasks.
    n_dropped_a, n_dropped_b : tasks only A (only B) ran, left out of every statistic.
    mean_a, mean_b : means of the task means (each task weighs 1).
    diff : mean_a − mean_b.
    se : sd(d_i) / sqrt(n), d_i = Ȳ_i^A − Ȳ_i^B.
    statistic, df, pvalue : the paired t statistic diff / se on df = n − 1, its two-sided
        p-value (``scipy.stats.ttest_rel`` on the task means).
    ci_low, ci_high : diff ± t_{df, 1−α/2} · se.
    confidence : the CI level.
    """

    tasks: np.ndarray
    task_means_a: np.ndarray
    task_means_b: np.ndarray
    n_tasks: int
    n_dropped_a: int
    n_dropped_b: int
    mean_a: float
    mean_b: float
    diff: float
    se: float
    statistic: float
    df: int
    pvalue: float
    ci_low: float
    ci_high: float
    confidence: float

    # the names up to 0.1.0, before scipy.stats' vocabulary: deprecated, kept one release
    t = renamed("statistic", "t")
    p = renamed("pvalue", "p")


@dataclass(frozen=True)
class McNemarResult(DictResult):
    """McNemar's test on paired binary outcomes.

    Attributes
    ----------
    n01 : pairs with A wrong and B right.
    n10 : pairs with A right and B wrong.
    n_pairs : all pairs, concordant ones included.
    statistic : χ² = (|n01 − n10| − 1)² / (n01 + n10), continuity-corrected (paper eq. 5);
        NaN when there are no discordant pairs. Reported whichever test gives ``pvalue`` (the
        exact test's own statistic is n10 of n01 + n10).
    pvalue_chi2 : P(χ²₁ ≥ statistic).
    pvalue_exact : two-sided exact binomial p of n10 out of n01 + n10 at 1/2.
    pvalue : ``pvalue_exact`` when n01 + n10 < ``exact_threshold``, else ``pvalue_chi2``.
    method : ``"exact"`` or ``"chi2"``, whichever ``pvalue`` is.
    """

    n01: int
    n10: int
    n_pairs: int
    statistic: float
    pvalue_chi2: float
    pvalue_exact: float
    pvalue: float
    method: str

    # the names up to 0.1.0, before scipy.stats' vocabulary: deprecated, kept one release
    chi2 = renamed("statistic", "chi2")
    p = renamed("pvalue", "p")
    p_chi2 = renamed("pvalue_chi2", "p_chi2")
    p_exact = renamed("pvalue_exact", "p_exact")


@dataclass(frozen=True)
class PairedBootstrapResult(DictResult):
    """Paired bootstrap over tasks of diff = mean_a − mean_b.

    Attributes
    ----------
    diff : the observed difference.
    ci_low, ci_high : percentile CI.
    se : standard deviation (ddof = 1) of the bootstrap differences.
    n_resamples, seed, confidence : as given.
    """

    diff: float
    ci_low: float
    ci_high: float
    se: float
    n_resamples: int
    seed: int
    confidence: float


@dataclass(frozen=True)
class ComparisonResult(DictResult):
    """Everything ``evalnoise compare`` reports for agents A and B (see :func:`compare`).

    ``to_dict()`` is the CLI's JSON record: every field, the nested results as dicts.

    Attributes
    ----------
    a, b : the agents' names.
    n_tasks, n_dropped_a, n_dropped_b, mean_a, mean_b, diff : as in
        :class:`PairedDifferenceResult` (diff = mean_a − mean_b).
    se_paired, ci_low, ci_high, pvalue : the paired t's SE, CI and p-value
        (:class:`PairedDifferenceResult`'s ``se``, ``ci_low``, ``ci_high``, ``pvalue``).
    mcnemar : McNemar on trial-aligned pairs; None (null in ``to_dict()``) when it does not
        apply.
    bootstrap : the paired bootstrap over tasks.
    mdd : minimum detectable difference of this design (NaN with one common task).
    power_analysis : the full :class:`MDDResult` behind ``mdd`` (None with one common task).
    sigma2_between, sigma2_within : the pooled variance components used for ``mdd``.
    confidence : CI level.
    warnings : why something was left out, also issued as ``RuntimeWarning``.
    """

    a: str
    b: str
    n_tasks: int
    n_dropped_a: int
    n_dropped_b: int
    mean_a: float
    mean_b: float
    diff: float
    se_paired: float
    ci_low: float
    ci_high: float
    pvalue: float
    mcnemar: McNemarResult | None
    bootstrap: PairedBootstrapResult
    mdd: float
    power_analysis: MDDResult | None
    sigma2_between: float
    sigma2_within: float
    confidence: float
    warnings: tuple[str, ...] = field(default=())

    # the names up to 0.1.0, before scipy.stats' vocabulary: deprecated, kept one release
    p_paired = renamed("pvalue", "p_paired")


def _align(ts_a: TaskSums, ts_b: TaskSums) -> tuple[np.ndarray, np.ndarray]:
    """Indices into A's and B's task arrays of the tasks both have, in A's order."""
    in_b = pd.Index(ts_b.labels).get_indexer(ts_a.labels)
    ia = np.flatnonzero(in_b >= 0)
    return ia, in_b[ia]


def _paired_t(
    d: np.ndarray, confidence: float
) -> tuple[float, float, float, int, float, float, float]:
    """(diff, se, t, df, p, ci_low, ci_high) of the paired t on differences ``d``."""
    n = d.size
    diff = float(d.mean())
    if n < 2:
        nan = float("nan")
        return diff, nan, nan, 0, nan, nan, nan
    df = n - 1
    se = float(d.std(ddof=1) / math.sqrt(n))
    if se == 0.0:
        # Every task differs by exactly the same amount: the t statistic is ±inf (p = 0) for a
        # non-zero difference, and for a zero difference there is no evidence of one (p = 1).
        t = math.copysign(math.inf, diff) if diff != 0 else float("nan")
        p = 0.0 if diff != 0 else 1.0
    else:
        t = diff / se
        p = float(2 * t_sf(abs(t), df))
    half = float(t_ppf(0.5 + confidence / 2, df)) * se
    return diff, se, t, df, p, diff - half, diff + half


def paired_difference(
    scores_a: Any,
    tasks_a: Any,
    scores_b: Any,
    tasks_b: Any,
    *,
    confidence: float = 0.95,
) -> PairedDifferenceResult:
    """Paired difference of two agents' accuracies over the tasks both ran.

    Per task i both agents' trial scores are averaged (Ȳ_i^A, Ȳ_i^B); tasks only one agent
    ran are dropped and counted. With d_i = Ȳ_i^A − Ȳ_i^B over the n common tasks,

        diff = d̄,  SE = s_d / sqrt(n),  CI = diff ± t_{n−1, 1−α/2} SE,

    and p is the two-sided paired t test of diff = 0 on n − 1 degrees of freedom. Working at
    the task level keeps trials of one task, which are not independent, from inflating n
    (the paper's note under eq. 7; Miller 2024).

    Parameters
    ----------
    scores_a, tasks_a : A's long table, one row per trial: score and task label.
    scores_b, tasks_b : the same for B.
    confidence : CI level.

    Returns
    -------
    PairedDifferenceResult
        With one common task, se, statistic, pvalue and the CI are NaN. When every d_i is equal
        the SE is 0: the statistic is ±inf and pvalue 0 for a non-zero diff, the statistic is
        NaN and pvalue 1 when diff = 0.
    """
    conf = check_probability(confidence)
    ts_a = task_sums(finite_scores(scores_a, "scores_a"), np.asarray(tasks_a))
    ts_b = task_sums(finite_scores(scores_b, "scores_b"), np.asarray(tasks_b))
    ia, ib = _align(ts_a, ts_b)
    if ia.size == 0:
        raise ValueError("the two agents have no task in common")
    ma, mb = ts_a.means[ia], ts_b.means[ib]
    diff, se, t, df, p, lo, hi = _paired_t(ma - mb, conf)
    return PairedDifferenceResult(
        tasks=ts_a.labels[ia],
        task_means_a=ma,
        task_means_b=mb,
        n_tasks=int(ia.size),
        n_dropped_a=ts_a.n_tasks - int(ia.size),
        n_dropped_b=ts_b.n_tasks - int(ia.size),
        mean_a=float(ma.mean()),
        mean_b=float(mb.mean()),
        diff=diff,
        se=se,
        statistic=t,
        df=df,
        pvalue=p,
        ci_low=lo,
        ci_high=hi,
        confidence=conf,
    )


def _mcnemar_counts(n01: int, n10: int, n_pairs: int, exact_threshold: int) -> McNemarResult:
    n_disc = n01 + n10
    if n_disc == 0:
        # The agents never disagree: eq. 5 is 0/0, and the exact test of 0 successes in 0
        # trials has p = 1. No evidence of a difference either way.
        return McNemarResult(n01, n10, n_pairs, float("nan"), 1.0, 1.0, 1.0, "exact")
    chi2 = (abs(n01 - n10) - 1) ** 2 / n_disc
    p_chi2 = float(chi2_sf(chi2, 1))
    p_exact = float(mcnemar_exact_p(n01, n10))
    exact = n_disc < exact_threshold
    return McNemarResult(
        n01, n10, n_pairs, float(chi2), p_chi2, p_exact,
        p_exact if exact else p_chi2, "exact" if exact else "chi2",
    )  # fmt: skip


def mcnemar_exact_p(b: Any, c: Any) -> np.ndarray:
    """Exact (binomial) two-sided McNemar p-values, elementwise over discordant counts.

    Under H0 the b + c discordant pairs split Binomial(b + c, 1/2); the distribution is
    symmetric, so the two-sided p is

        p = min(1, 2 · P(X ≤ min(b, c))),  X ~ Binomial(b + c, 1/2),

    what ``scipy.stats.binomtest`` and statsmodels' ``mcnemar(exact=True)`` give (McNemar
    1947). With b + c = 0 the test has no data and p = 1. Arguments broadcast; the order of
    b and c does not matter.

    References
    ----------
    McNemar, Q. (1947). Note on the sampling error of the difference between correlated
    proportions or percentages. *Psychometrika* 12(2): 153–157.
    """
    b = np.asarray(b)
    c = np.asarray(c)
    if np.any(b < 0) or np.any(c < 0):
        raise ValueError("discordant counts must be non-negative")
    n = b + c
    p = np.minimum(1.0, 2.0 * binom_cdf(np.minimum(b, c), n, 0.5))
    return np.where(n == 0, 1.0, p)


def mcnemar(correct_a: Any, correct_b: Any, *, exact_threshold: int = 25) -> McNemarResult:
    """McNemar's test for paired binary outcomes of agents A and B.

    With n01 = #(A wrong, B right) and n10 = #(A right, B wrong) over aligned pairs (same task,
    same trial index), the continuity-corrected statistic (paper eq. 5) is

        χ² = (|n01 − n10| − 1)² / (n01 + n10),

    referred to χ² with 1 df (as R's ``mcnemar.test`` and statsmodels' ``mcnemar(exact=False)``
    compute it). The exact version is the two-sided binomial test of n10 successes in
    n01 + n10 trials with p = 1/2 (:func:`mcnemar_exact_p`).

    Parameters
    ----------
    correct_a, correct_b : equal-length arrays of 0/1 (or bool), element j of both being the
        same (task, trial) pair.
    exact_threshold : below this many discordant pairs ``p`` is the exact p, because the χ²
        approximation is poor with few discordant pairs (the usual rule of thumb is 25).

    Returns
    -------
    McNemarResult
        With no discordant pairs: chi2 is NaN and every p is 1.

    Notes
    -----
    The test assumes independent pairs. Trials of one task share that task's difficulty, so
    with several trials per task the pairs are clustered and the p-value is optimistic; the
    task-level :func:`paired_difference` and :func:`paired_bootstrap` do not have this problem.
    """
    a = np.asarray(correct_a)
    b = np.asarray(correct_b)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError("correct_a and correct_b must be 1-D arrays of the same length")
    if isinstance(exact_threshold, bool) or not isinstance(exact_threshold, numbers.Integral):
        raise ValueError("exact_threshold must be an integer")
    af, bf = a.astype(float), b.astype(float)
    if not (np.isin(af, (0.0, 1.0)).all() and np.isin(bf, (0.0, 1.0)).all()):
        raise ValueError("McNemar's test needs binary (0/1) outcomes")
    a1, b1 = af == 1.0, bf == 1.0
    n10 = int(np.count_nonzero(a1 & ~b1))
    n01 = int(np.count_nonzero(~a1 & b1))
    return _mcnemar_counts(n01, n10, int(a.size), int(exact_threshold))


def paired_bootstrap(
    task_means_a: Any,
    task_means_b: Any,
    *,
    n_resamples: int = 10_000,
    confidence: float = 0.95,
    seed: int = 0,
) -> PairedBootstrapResult:
    """Percentile bootstrap CI of diff = mean(a) − mean(b), resampling tasks in pairs.

    Each resample draws n tasks with replacement and applies the same draw to both agents
    (Efron and Tibshirani 1994), so the correlation between agents on a task is kept; the
    statistic is then the mean of d_i = a_i − b_i over the drawn tasks. The CI is the
    (α/2, 1 − α/2) quantiles (linear interpolation) of the resampled differences; the SE is
    their standard deviation with ddof = 1, as ``scipy.stats.bootstrap`` reports it.

    A resample's mean depends on the draw only through how often each distinct value
    v_1 … v_K of d was drawn: with m_k tasks of value v_k, those counts are
    C ~ Multinomial(n; m_1/n, …, m_K/n) and the resample's mean is C · v / n. When d takes
    few values (K ≤ n / :data:`_MULTINOMIAL_RATIO`: binary trials give at most 2T + 1
    values with T trials per task) the counts are drawn directly, B × K numbers instead of
    B × n indices; otherwise each resample draws n task indices uniformly. Both draw from
    the same bootstrap distribution exactly; which one ran follows from the data alone.

    Parameters
    ----------
    task_means_a, task_means_b : aligned per-task means (element i is the same task).
    n_resamples : number of bootstrap resamples.
    confidence : CI level.
    seed : seed of ``numpy.random.default_rng``; the result is a pure function of the inputs
        and the seed.

    Returns
    -------
    PairedBootstrapResult
    """
    conf = check_probability(confidence)
    a = finite_scores(task_means_a, "task_means_a")
    b = finite_scores(task_means_b, "task_means_b")
    if a.shape != b.shape:
        raise ValueError("task_means_a and task_means_b must have the same length")
    if a.size == 0:
        raise ValueError("no tasks to resample")
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, numbers.Integral):
        raise ValueError("n_resamples must be an integer")
    if n_resamples < 2:
        raise ValueError("n_resamples must be >= 2")
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise ValueError("seed must be a non-negative integer")
    d = a - b
    n = d.size
    rng = np.random.default_rng(int(seed))
    boot = np.empty(int(n_resamples))
    values, tally = np.unique(d, return_counts=True)
    # Blocks of resamples bound memory for large n. Generator.integers and .multinomial fill
    # blocks from the same stream as one big draw would, so the result does not depend on
    # the block size.
    if values.size * _MULTINOMIAL_RATIO <= n:
        p = tally / n
        block = max(1, _BOOTSTRAP_BLOCK // values.size)
        for start in range(0, boot.size, block):
            stop = min(start + block, boot.size)
            counts = rng.multinomial(n, p, size=stop - start)
            # a row sum, not a matrix product: BLAS may sum a row in an order that
            # depends on the block's shape, and the result must not
            boot[start:stop] = (counts * values).sum(axis=1) / n
    else:
        block = max(1, _BOOTSTRAP_BLOCK // n)
        for start in range(0, boot.size, block):
            stop = min(start + block, boot.size)
            idx = rng.integers(0, n, size=(stop - start, n))
            boot[start:stop] = d[idx].mean(axis=1)
    alpha = 1 - conf
    lo, hi = np.quantile(boot, [alpha / 2, 1 - alpha / 2])
    return PairedBootstrapResult(
        diff=float(d.mean()),
        ci_low=float(lo),
        ci_high=float(hi),
        se=float(boot.std(ddof=1)),
        n_resamples=int(n_resamples),
        seed=int(seed),
        confidence=conf,
    )


def _adjust_family(pvalues: Any, adjust_sorted) -> np.ndarray:
    """Apply ``adjust_sorted`` (ascending p-values in, adjusted ones out) to a family.

    The result has the input's order and shape; NaN entries stay NaN and are not members of
    the family (they do not count toward m).
    """
    p = np.asarray(pvalues, dtype=float)
    flat = p.ravel()
    ok = ~np.isnan(flat)
    if np.any((flat[ok] < 0) | (flat[ok] > 1)):
        raise ValueError("p-values must lie in [0, 1]")
    out = np.full(flat.shape, np.nan)
    where = np.flatnonzero(ok)
    order = where[np.argsort(flat[where], kind="stable")]
    out[order] = adjust_sorted(flat[order])
    return out.reshape(p.shape)


def _holm_sorted(p: np.ndarray) -> np.ndarray:
    scaled = p * np.arange(p.size, 0, -1)
    return np.minimum(1.0, np.maximum.accumulate(scaled))


def _bh_sorted(p: np.ndarray) -> np.ndarray:
    m = p.size
    scaled = p * m / np.arange(1, m + 1)
    return np.minimum(1.0, np.minimum.accumulate(scaled[::-1])[::-1])


def holm(pvalues: Any) -> np.ndarray:
    """Holm (1979) step-down adjusted p-values for a family of tests.

    With the m p-values sorted ascending, p_(1) ≤ … ≤ p_(m),

        p̃_(j) = min(1, max_{i ≤ j} (m − i + 1) p_(i)),

    returned in the input's order and shape. Rejecting where p̃ ≤ α controls the family-wise
    error rate at α under any dependence. NaN entries stay NaN and do not count toward m. It
    is statsmodels' ``multipletests(method="holm")``.
    """
    return _adjust_family(pvalues, _holm_sorted)


def benjamini_hochberg(pvalues: Any) -> np.ndarray:
    """Benjamini–Hochberg (1995) step-up adjusted p-values (q-values) for a family of tests.

    With the m p-values sorted ascending, p_(1) ≤ … ≤ p_(m),

        p̃_(j) = min(1, min_{i ≥ j} m · p_(i) / i),

    returned in the input's order and shape; rejecting where p̃ ≤ q controls the false
    discovery rate at q for independent or positively dependent (PRDS) tests. It is
    statsmodels' ``multipletests(method="fdr_bh")``. NaN entries stay NaN and do not count
    toward m (a test that was not run is no member of the family).
    """
    return _adjust_family(pvalues, _bh_sorted)


def _anova_parts(ts: TaskSums) -> tuple[float, float, float, float]:
    """(SSW, df_W, MSB, n0) of the one-way random-effects ANOVA of one agent."""
    k, big_n = ts.n_tasks, float(ts.count.sum())
    means = ts.means
    grand = ts.total.sum() / big_n
    ssw = float(np.sum(ts.total_sq - ts.total * means))
    dfw = big_n - k
    msb = float(np.sum(ts.count * (means - grand) ** 2) / (k - 1))
    # n0: the effective trials per task of an unbalanced one-way ANOVA (T when balanced).
    n0 = float((big_n - np.sum(ts.count**2) / big_n) / (k - 1))
    return max(ssw, 0.0), dfw, msb, n0


def _pooled_components(parts: list[tuple[float, float, float, float]]) -> tuple[float, float]:
    """σ²_b and σ²_w pooled over agents: MSW pooled by df, σ²_b averaged, both ≥ 0."""
    ssw = sum(p[0] for p in parts)
    dfw = sum(p[1] for p in parts)
    if dfw == 0:
        # One trial per task: σ²_b and σ²_w cannot be told apart, but Var(μ̂) only needs their
        # sum, which MSB estimates; carry it all as σ²_b.
        return float(np.mean([p[2] for p in parts])), 0.0
    msw = ssw / dfw
    s2b = float(np.mean([(p[2] - msw) / p[3] for p in parts]))
    return max(s2b, 0.0), msw


def compare(
    tasks_a: Any,
    trials_a: Any,
    scores_a: Any,
    tasks_b: Any,
    trials_b: Any,
    scores_b: Any,
    *,
    names: tuple[str, str] = ("a", "b"),
    confidence: float = 0.95,
    n_resamples: int = 10_000,
    seed: int = 0,
    alpha: float = 0.05,
    power: float = 0.8,
    exact_threshold: int = 25,
) -> ComparisonResult:
    """Compare agents A and B on the tasks both ran: every test the paper recommends.

    - paired t on task means (:func:`paired_difference`): diff = mean_a − mean_b, its SE, CI
      and p;
    - McNemar (:func:`mcnemar`) on trial-aligned pairs, the (task, trial) keys present for
      both agents; it needs binary scores, and is left out (``mcnemar`` None, NaN in
      ``to_dict()``) with a warning when scores are not 0/1 or no pair aligns;
    - paired bootstrap over the common tasks (:func:`paired_bootstrap`);
    - minimum detectable difference (:func:`.minimum_detectable_difference`)
      for this design: n common tasks, T the harmonic mean of trials per task over both
      agents (Var of a mean of task means is σ²_b/n + σ²_w/(n T_h)), σ²_w the MSW pooled over
      both agents' one-way ANOVAs, σ²_b the mean of each agent's (MSB − MSW)/n0 (clipped at
      0), and r the observed correlation of the two agents' task means (0 when undefined).

    Parameters
    ----------
    tasks_a, trials_a, scores_a : A's long table, one row per trial.
    tasks_b, trials_b, scores_b : B's.
    names : labels of A and B for the report.
    confidence : level of the paired-t and bootstrap CIs.
    n_resamples, seed : for the bootstrap.
    alpha, power : for the minimum detectable difference.
    exact_threshold : see :func:`mcnemar`.

    Returns
    -------
    ComparisonResult
    """
    conf = check_probability(confidence)
    ya = finite_scores(scores_a, "scores_a")
    yb = finite_scores(scores_b, "scores_b")
    ka, kb = np.asarray(tasks_a), np.asarray(tasks_b)
    ra, rb = np.asarray(trials_a), np.asarray(trials_b)
    if not (ka.shape == ra.shape == ya.shape) or not (kb.shape == rb.shape == yb.shape):
        raise ValueError("tasks, trials and scores of one agent must have the same length")
    notes: list[str] = []

    pd_res = paired_difference(ya, ka, yb, kb, confidence=conf)
    boot = paired_bootstrap(
        pd_res.task_means_a, pd_res.task_means_b,
        n_resamples=n_resamples, confidence=conf, seed=seed,
    )  # fmt: skip

    frame_a = pd.DataFrame({"task": ka, "trial": ra, "y": ya})
    frame_b = pd.DataFrame({"task": kb, "trial": rb, "y": yb})
    for name, frame in zip(names, (frame_a, frame_b), strict=True):
        if frame.duplicated(["task", "trial"]).any():
            raise ValueError(f"agent {name!r} has a (task, trial) pair more than once")
    pairs = frame_a.merge(frame_b, on=["task", "trial"], how="inner", suffixes=("_a", "_b"))
    pa, pb = pairs["y_a"].to_numpy(), pairs["y_b"].to_numpy()
    mc: McNemarResult | None = None
    if pairs.shape[0] == 0:
        notes.append("McNemar skipped: no (task, trial) pair is present for both agents")
    elif not (np.isin(pa, (0.0, 1.0)).all() and np.isin(pb, (0.0, 1.0)).all()):
        notes.append("McNemar skipped: scores are not binary (0/1)")
    else:
        mc = mcnemar(pa, pb, exact_threshold=exact_threshold)

    # Restrict both ANOVAs to the common tasks: the MDD is about this comparison's design.
    ts_a = task_sums(ya, ka)
    ts_b = task_sums(yb, kb)
    ia, ib = _align(ts_a, ts_b)
    keep_a = np.isin(ts_a.codes, ia)
    keep_b = np.isin(ts_b.codes, ib)
    common_a = task_sums(ya[keep_a], ka[keep_a])
    common_b = task_sums(yb[keep_b], kb[keep_b])
    n = pd_res.n_tasks
    if n >= 2:
        s2b, s2w = _pooled_components([_anova_parts(common_a), _anova_parts(common_b)])
        counts = np.concatenate([common_a.count, common_b.count])
        t_h = float(counts.size / np.sum(1.0 / counts))
        ma, mb = pd_res.task_means_a, pd_res.task_means_b
        r = 0.0
        if ma.std() > 0 and mb.std() > 0:
            r = float(np.corrcoef(ma, mb)[0, 1])
        # r = 1 would claim a zero-variance difference; keep the MDD finite and honest.
        r = min(r, 1 - 1e-12)
        power_res = minimum_detectable_difference(
            n, t_h, s2b, s2w, alpha=alpha, power=power, paired_correlation=r
        )
        mdd = float(power_res.mdd)
    else:
        s2b = s2w = mdd = float("nan")
        power_res = None
        notes.append("one common task: no paired SE, p or minimum detectable difference")

    for note in notes:
        warnings.warn(note, RuntimeWarning, stacklevel=2)
    return ComparisonResult(
        a=str(names[0]),
        b=str(names[1]),
        n_tasks=n,
        n_dropped_a=pd_res.n_dropped_a,
        n_dropped_b=pd_res.n_dropped_b,
        mean_a=pd_res.mean_a,
        mean_b=pd_res.mean_b,
        diff=pd_res.diff,
        se_paired=pd_res.se,
        ci_low=pd_res.ci_low,
        ci_high=pd_res.ci_high,
        pvalue=pd_res.pvalue,
        mcnemar=mc,
        bootstrap=boot,
        mdd=mdd,
        power_analysis=power_res,
        sigma2_between=s2b,
        sigma2_within=s2w,
        confidence=conf,
        warnings=tuple(notes),
    )
