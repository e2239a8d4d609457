"""Mean score with a naive and a task-clustered confidence interval.

The headline is the benchmark score: the mean over tasks of each task's mean score, every
task weighing the same however many of its trials were scored (Miller 2024, "Adding Error
Bars to Evals", §2; inspect_ai's epoch reduction; :func:`evalnoise.stats.compare`). For a
balanced design it is the paper's grand mean (Mustahsan et al., eq. 2), which is kept as
``mean_pooled``.

Repeated trials of one task are not independent observations: they share the task's
difficulty. The naive interval of the paper (eqs. 3–4) ignores that; the cluster-robust
interval (Miller 2024, eq. 4 / Appendix A) treats the task as the unit of independence. Both
are reported so the gap between them, the design effect, is visible.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from ._checks import check_probability
from ._distributions import norm_ppf, t_ppf
from ._results import DictResult
from ._tasks import TaskSums, task_sums
from .proportion import wilson_interval

ClusterSE = Literal["cr1", "miller"]
Quantile = Literal["normal", "t"]
CIMethod = Literal["clustered", "wilson_effective_n"]

__all__ = ["AccuracyResult", "accuracy"]


@dataclass(frozen=True)
class AccuracyResult(DictResult):
    """Mean score with naive and task-clustered confidence intervals.

    Attributes
    ----------
    mean : μ̂ = (1/G) Σ_g Ȳ_g, the mean over tasks of the per-task mean scores (each task
        weighs 1). Equals ``mean_pooled`` for a balanced design.
    mean_pooled : ΣΣ Y_gj / N, the mean over all trials (paper eq. 2); on an unbalanced
        design it weighs each task by its number of scored trials.
    n_obs : N, number of scored trials.
    n_tasks : G, number of distinct tasks (clusters).
    se_naive : sqrt(σ̂²/N), trials treated as independent (paper eq. 3; equals
        sqrt(μ̂(1−μ̂)/N) for binary scores).
    ci_naive_low, ci_naive_high : μ̂ ∓ z·se_naive (paper eq. 4, always the normal quantile).
    se_naive_pooled : sqrt(var_pop/N) about ``mean_pooled``: eq. 3 for the pooled mean.
    se_clustered : task-clustered standard error of μ̂ (CR1 or Miller's uncorrected form).
    ci_low, ci_high : μ̂ ∓ q·se_clustered, q from ``quantile``; when se_clustered is 0 (every
        task mean equal) the Wilson interval on n_eff = G instead (see ``ci_method``).
    ci_method : ``"clustered"`` (the Wald interval above) or ``"wilson_effective_n"``.
    design_effect : se_clustered² / se_naive²; ≈ 1 + (T−1)·ICC for T trials per task.
    df : degrees of freedom of the clustered quantile (G − 1 for "t", inf for "normal").
    confidence, cluster_se, quantile : the options used.
    warnings : reasons for any NaN field, truncated interval or Wilson fallback.
    """

    mean: float
    mean_pooled: float
    n_obs: int
    n_tasks: int
    se_naive: float
    ci_naive_low: float
    ci_naive_high: float
    se_naive_pooled: float
    se_clustered: float
    ci_low: float
    ci_high: float
    ci_method: str
    design_effect: float
    df: float
    confidence: float
    cluster_se: str
    quantile: str
    warnings: tuple[str, ...] = ()


def _moments(y: np.ndarray, ts: TaskSums) -> tuple[float, float, float, float, float, bool, bool]:
    """The mean of task means and the pooled mean, the weighted and the plain population
    variance of the scores, the clustered sum of squares Σ_g (w_g (S_g − T_g·mean))², and
    whether every score (``constant``) or every task mean (``flat``) is equal."""
    n, g = ts.n_obs, ts.n_tasks
    # Per-task weights w_g = N / (G·T_g): the weighted mean of the trials is the mean of the
    # task means. For a balanced design N = G·T exactly, so every w_g is exactly 1.0 and
    # every expression below reduces, bit for bit, to its unweighted (pooled) form.
    weight = n / (g * ts.count)
    mean_pooled = float(ts.total.sum() / n)
    mean = float((weight * ts.total).sum() / n)
    # Exact constancy check: sums of equal floats need not reproduce the value exactly, so
    # variances computed from them would be rounding noise rather than zero.
    constant = bool(y.min() == y.max())
    task_means = ts.means
    # Equal task means, up to the rounding of their sums (≤ T_g·eps each, for |Y| ≤ 1).
    flat = constant or bool(np.ptp(task_means) <= 4 * np.finfo(float).eps * ts.count.max())
    if constant:
        mean = mean_pooled = float(y[0])
        var_w = var_pop = 0.0
        cluster_ss = 0.0
    else:
        var_pop = float(np.var(y))
        w_trial = weight[ts.codes]
        # The weighted population variance; np.average with unit weights is np.var's own
        # arithmetic, so a balanced design gives var_w == var_pop exactly.
        center = np.average(y, weights=w_trial)
        var_w = float(np.average((y - center) ** 2, weights=w_trial))
        resid_sums = weight * (ts.total - ts.count * mean)
        cluster_ss = 0.0 if flat else float(resid_sums @ resid_sums)

    return mean, mean_pooled, var_w, var_pop, cluster_ss, constant, flat


def _intervals(
    mean: float,
    se_naive: float,
    se_cl: float,
    z: float,
    q: float,
    flat: bool,
    g: int,
    confidence: float,
    warnings: list[str],
) -> tuple[np.ndarray, np.ndarray, CIMethod]:
    """The naive and the clustered interval ends (mean ∓ z·SE, mean ∓ q·SE_cl), the latter
    the Wilson interval on n_eff = G when every task mean is equal, and how it was made."""
    # Scores lie in [0, 1], so does their expectation: an interval end beyond it carries no
    # information, only the normal approximation's failure, which the warning names.
    lows = np.array([mean - z * se_naive, mean - q * se_cl])
    highs = np.array([mean + z * se_naive, mean + q * se_cl])
    ci_method: CIMethod = "clustered"
    if flat and g >= 2:
        ci_method = "wilson_effective_n"
        p = min(max(mean, 0.0), 1.0)
        lows[1], highs[1] = wilson_interval(p, g, confidence)
        warnings.append(
            f"every task has the same mean score ({mean:.6g}): the clustered SE is 0 and the "
            "design effect cannot be estimated (NaN), so ci_low/ci_high are the Wilson score "
            f"interval on the conservative effective sample size n_eff = G = {g} tasks (one "
            "effective trial per task, the design effect's bound at ICC = 1)"
        )
    if np.any(lows < 0.0) or np.any(highs > 1.0):
        warnings.append(
            "a confidence interval reached beyond [0, 1] and is truncated to it: with few "
            "tasks or an accuracy near 0 or 1 the normal approximation is poor"
        )
    return lows, highs, ci_method


def accuracy(
    scores: np.ndarray,
    tasks: np.ndarray,
    *,
    confidence: float = 0.95,
    cluster_se: ClusterSE = "cr1",
    quantile: Quantile = "normal",
) -> AccuracyResult:
    r"""Mean of task means with a naive (paper eqs. 3–4) and a task-clustered interval.

    Parameters
    ----------
    scores : 1-D array of floats in [0, 1] (binary or partial credit).
    tasks : 1-D array of task labels, same length; any number of trials per task.
    confidence : two-sided confidence level, in (0, 1).
    cluster_se : ``"cr1"`` (default) or ``"miller"``.
    quantile : ``"normal"`` (z, default) or ``"t"`` (Student t with G − 1 df) for the
        clustered interval.

    Returns
    -------
    AccuracyResult

    Notes
    -----
    With G tasks, :math:`T_g` scored trials of task g, :math:`N = \sum_g T_g` and task means
    :math:`\bar Y_g`:

    * estimand: :math:`\hat\mu = \frac1G \sum_g \bar Y_g`, what a benchmark score means:
      each task weighs equally (Miller 2024, §2: the eval score is the mean of the question
      scores), a task run in several trials scoring the mean of its trials. The paper's eq. 2,
      :math:`\sum_g\sum_j Y_{gj}/N`, is the same number when every :math:`T_g = T`; on an
      unbalanced design (e.g. after infrastructure errors are excluded) it weighs tasks by
      their surviving trial counts, so it is reported apart, as ``mean_pooled``.
      Equivalently :math:`\hat\mu` is the weighted mean of the trials with weights
      :math:`w_g = N/(G T_g)` (which sum to N; all 1 when balanced).
    * ``cluster_se="cr1"``: :math:`SE = \sqrt{\frac{G}{G-1}\sum_g (\bar Y_g-\hat\mu)^2}\,/\,G
      = \sqrt{\sum_g (\bar Y_g-\hat\mu)^2 / (G(G-1))}`, the standard error of a mean of G
      independent task means; inspect_ai's default ``stderr()`` over epoch-reduced samples
      computes it. It is also the CR1 sandwich of the weighted intercept-only regression
      above, :math:`\sqrt{\frac{G}{G-1}\sum_g e_g^2}/N` with
      :math:`e_g = \sum_{j} w_g (Y_{gj}-\hat\mu)`, i.e. statsmodels'
      ``WLS(y, 1, weights=w).fit(cov_type="cluster")`` (its factor
      :math:`\frac{G}{G-1}\cdot\frac{N-1}{N-K}` is :math:`\frac{G}{G-1}` for K = 1). For a
      balanced design it is ``OLS(y, 1)``'s clustered SE, and inspect_ai's
      ``stderr(cluster=...)`` and evalconfidence's ``standard_error``.
    * ``cluster_se="miller"``: the same without :math:`\frac{G}{G-1}`:
      :math:`\sqrt{\sum_g (\bar Y_g-\hat\mu)^2}/G`, Miller (2024) eq. 4 without a
      finite-cluster correction.
    * naive (paper eq. 3): :math:`SE = \sqrt{\hat\sigma^2 / N}` with
      :math:`\hat\sigma^2 = \frac1N\sum_{g,j} w_g (Y_{gj}-\hat\mu)^2`, the variance of one
      trial when every task weighs equally. For binary scores
      :math:`\hat\sigma^2 = \hat\mu(1-\hat\mu)`, so this is exactly eq. 3; for partial credit
      it is its natural extension; for a balanced design it is the population variance of
      the scores. Interval: :math:`\hat\mu \pm z_{\alpha/2} SE` (eq. 4).
      ``se_naive_pooled`` is eq. 3 for ``mean_pooled``: the population variance of the
      scores about it, over N.

    For a balanced design (T trials per task) the CR1 variance equals
    :math:`s^2(\bar Y_g)/G`, the paper's "between-query SE" (eq. 11) squared, and
    ``quantile="t"`` reproduces the paper's tabulated 95% CIs (mean ± t_{G−1}·SE).

    ``design_effect`` is :math:`SE_{clustered}^2 / SE_{naive}^2` (Kish 1965); N divided by
    it is the effective number of independent trials.

    Both Wald intervals are truncated to [0, 1], the range of a mean of scores in [0, 1]; a
    truncation adds a warning (the normal approximation is poor there).

    When every task mean is equal (with G ≥ 2) — in particular when every score is 0, or
    every score is 1 — the clustered SE is 0 and its Wald interval a single point, which
    claims certainty that G tasks cannot give. The clustered interval is then the Wilson
    score interval (:func:`evalnoise.stats.proportion.wilson_interval`, z quantile) on an
    effective sample size; since the design effect cannot be estimated from such data, the
    conservative :math:`n_{eff} = G` is used: one effective observation per task, which is
    :math:`N/\bar T`, the design effect's upper bound :math:`\bar T` reached at ICC = 1.
    ``ci_method`` says ``"wilson_effective_n"`` and ``warnings`` says why; the interval
    contains :math:`\hat\mu`, lies in [0, 1] and has positive width. ``se_clustered``
    stays 0, the estimate the data give.

    Degenerate inputs: with one task the clustered SE (and so the clustered CI and the
    design effect) is NaN; when every task mean is equal the design effect is NaN (0/0 when
    every score is equal, and no estimate when only the task means are); when every score
    is equal both SEs are 0. Each case adds a reason to ``warnings``.

    References
    ----------
    Miller, E. (2024). Adding error bars to evals: a statistical approach to language model
    evaluations. arXiv:2411.00640.
    Kish, L. (1965). *Survey Sampling*. Wiley.
    """
    check_probability(confidence)
    if cluster_se not in ("cr1", "miller"):
        raise ValueError(f"cluster_se must be 'cr1' or 'miller', got {cluster_se!r}")
    if quantile not in ("normal", "t"):
        raise ValueError(f"quantile must be 'normal' or 't', got {quantile!r}")

    y = np.asarray(scores, dtype=float)
    ts = task_sums(y, tasks)
    n, g = ts.n_obs, ts.n_tasks
    warnings: list[str] = []
    nan = float("nan")
    z = float(norm_ppf(0.5 + confidence / 2.0))
    df = float(g - 1) if quantile == "t" else float("inf")

    if n == 0:
        warnings.append("no observations: every field is NaN")
        return AccuracyResult(
            **dict.fromkeys(("mean", "mean_pooled", "se_naive", "se_naive_pooled"), nan),
            **dict.fromkeys(("ci_naive_low", "ci_naive_high", "se_clustered"), nan),
            **dict.fromkeys(("ci_low", "ci_high", "design_effect"), nan),
            ci_method="clustered",
            n_obs=0,
            n_tasks=0,
            df=df,
            confidence=float(confidence),
            cluster_se=cluster_se,
            quantile=quantile,
            warnings=tuple(warnings),
        )

    mean, mean_pooled, var_w, var_pop, cluster_ss, constant, flat = _moments(y, ts)

    se_naive = float(np.sqrt(var_w / n))
    se_naive_pooled = float(np.sqrt(var_pop / n))

    if g < 2:
        warnings.append(
            "only one task: the clustered SE has G − 1 = 0 degrees of freedom; "
            "se_clustered, ci_low, ci_high and design_effect are NaN"
        )
        se_cl = nan
    else:
        factor = g / (g - 1.0) if cluster_se == "cr1" else 1.0
        se_cl = float(np.sqrt(factor * cluster_ss) / n)

    if g < 2:
        q = nan
    elif quantile == "normal":
        q = z
    else:
        q = float(t_ppf(0.5 + confidence / 2.0, g - 1))

    if constant:
        warnings.append(
            "every score is equal: both standard errors are 0 and the design effect (0/0) is NaN"
        )
        deff = nan
    elif flat and g >= 2:
        # se_cl = 0 < se_naive: a ratio of 0 would claim infinitely many effective trials.
        deff = nan
    else:
        deff = se_cl**2 / se_naive**2

    lows, highs, ci_method = _intervals(mean, se_naive, se_cl, z, q, flat, g, confidence, warnings)
    lows, highs = np.clip(lows, 0.0, 1.0), np.clip(highs, 0.0, 1.0)

    return AccuracyResult(
        mean=mean,
        mean_pooled=mean_pooled,
        n_obs=n,
        n_tasks=g,
        se_naive=se_naive,
        ci_naive_low=float(lows[0]),
        ci_naive_high=float(highs[0]),
        se_naive_pooled=se_naive_pooled,
        se_clustered=se_cl,
        ci_low=float(lows[1]),
        ci_high=float(highs[1]),
        ci_method=ci_method,
        design_effect=float(deff),
        df=df,
        confidence=float(confidence),
        cluster_se=cluster_se,
        quantile=quantile,
        warnings=tuple(warnings),
    )
