"""One-way random-effects intraclass correlation, ICC(1,1), for trials nested in tasks.

Model (paper eq. 12): Y_ij = μ + α_i + ε_ij with task effects α_i ~ (0, σ_b²) and trial noise
ε_ij ~ (0, σ_w²); ICC = σ_b² / (σ_b² + σ_w²) (paper eq. 6). Two estimators are reported:

* the ANOVA (method-of-moments) estimator of Shrout & Fleiss (1979) case 1 / McGraw & Wong
  (1996) ICC(1), extended to unbalanced designs with Snedecor & Cochran's n0; it is the
  headline ``icc``;
* the paper's plug-in estimator (eqs. 6–7 with eqs. 13–14): variance of the task means over
  variance of the task means plus the pooled within-task variance. The variance of a task
  mean over T trials is σ_b² + σ_w²/T, so this estimator is biased upwards at small T; it is
  reported as ``icc_plugin`` so the paper's tables can be reproduced and the bias seen.

Everything is computed from per-task sufficient statistics (T_i, S_i, Q_i), so the same
code serves one data set (:func:`icc_oneway`) and thousands of subsamples at once
(:func:`icc_batch`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._checks import check_probability
from ._distributions import f_ppf, f_sf
from ._results import DictResult, renamed
from ._tasks import task_sums

__all__ = ["ICCBatch", "ICCResult", "bonett_se", "icc_batch", "icc_oneway", "interpret_icc"]

# Sums-of-squares obtained as differences of raw moments (Q − S²/T) carry absolute rounding
# error of order eps·ΣQ. Anything below this fraction of ΣQ is that noise, not variance: the
# smallest genuine within-task sum of squares of binary data is 1/2, and partial-credit
# scores would need differences of ~1e-6 across a whole task to fall under it.
_MOMENT_ZERO_RTOL = 1e-12

# Sums of squares of residuals computed from data carry error of order (eps·|y|)² each.
_RESID_ZERO_RTOL = (64 * np.finfo(float).eps) ** 2


@dataclass(frozen=True)
class ICCResult(DictResult):
    """One-way random-effects ICC(1,1) of trials nested in tasks.

    Attributes
    ----------
    icc : ANOVA estimator (MSB − MSW) / (MSB + (n0 − 1)·MSW). May be negative.
    ci_low, ci_high : F-based confidence interval (McGraw & Wong 1996, case 1).
    confidence : confidence level of the intervals.
    statistic, df1, df2, pvalue : the F test of ICC = 0: F = MSB/MSW on (a − 1, N − a) df,
        pvalue = P(F' ≥ F) (``scipy.stats.f_oneway``'s statistic and pvalue on the same data).
    se : Bonett (2002) large-sample SE of ``icc`` with k = n0 trials, n = a tasks.
    icc_k, icc_k_ci_low, icc_k_ci_high : ICC(1,k) = (MSB − MSW)/MSB, the reliability of the
        mean of k = n0 trials, and its F-based interval.
    icc_plugin : the paper's estimator (eqs. 6–7, 13–14): s²(task means) / (s²(task means)
        + pooled within-task variance). Biased upwards at small trial counts.
    sigma2_between : ANOVA variance component (MSB − MSW)/n0; negative when MSB < MSW.
    sigma2_within : pooled within-task variance MSW (paper eqs. 13–14).
    var_task_means : s²(task means) with n − 1 divisor (paper eq. 7, its "Between Var").
    between_query_se : sqrt(var_task_means / a), the paper's "between-query SE" (eq. 11).
    interpretation : Koo & Li (2016) band of ``icc``: poor / moderate / good / excellent.
    n_tasks, n_obs, n0 : a, N and the effective trials per task n0.
    ms_between, ms_within : MSB and MSW.
    warnings : reasons for NaN fields and approximations in use.
    """

    icc: float
    ci_low: float
    ci_high: float
    confidence: float
    statistic: float
    df1: float
    df2: float
    pvalue: float
    se: float
    icc_k: float
    icc_k_ci_low: float
    icc_k_ci_high: float
    icc_plugin: float
    sigma2_between: float
    sigma2_within: float
    var_task_means: float
    between_query_se: float
    interpretation: str
    n_tasks: int
    n_obs: int
    n0: float
    ms_between: float
    ms_within: float
    warnings: tuple[str, ...] = ()

    # the names up to 0.1.0, before scipy.stats' vocabulary: deprecated, kept one release
    f_stat = renamed("statistic", "f_stat")
    p_value = renamed("pvalue", "p_value")
    se_bonett = renamed("se", "se_bonett")


@dataclass(frozen=True, eq=False)
class ICCBatch(DictResult):
    """ICC point estimates over a batch of data sets; every field has the batch shape.

    Attributes
    ----------
    icc, icc_k, icc_plugin : as in :class:`ICCResult`.
    ms_between, ms_within : MSB and MSW.
    sigma2_between, sigma2_within, var_task_means : variance components, as in
        :class:`ICCResult`.
    n0 : effective trials per task.
    n_tasks, n_obs : tasks with at least one trial, and trials, per data set.
    """

    icc: np.ndarray
    icc_k: np.ndarray
    icc_plugin: np.ndarray
    ms_between: np.ndarray
    ms_within: np.ndarray
    sigma2_between: np.ndarray
    sigma2_within: np.ndarray
    var_task_means: np.ndarray
    n0: np.ndarray
    n_tasks: np.ndarray
    n_obs: np.ndarray


def interpret_icc(value: float) -> str:
    """Koo & Li (2016) reliability band of an ICC.

    ``< 0.5`` poor, ``0.5–0.75`` moderate, ``0.75–0.9`` good, ``> 0.9`` excellent;
    ``"undefined"`` for NaN.
    """
    if not np.isfinite(value):
        return "undefined"
    if value < 0.5:
        return "poor"
    if value < 0.75:
        return "moderate"
    if value <= 0.9:
        return "good"
    return "excellent"


def bonett_se(icc: np.ndarray | float, k: np.ndarray | float, n: np.ndarray | float):
    r"""Bonett (2002) large-sample standard error of the one-way ICC estimator.

    .. math:: SE(\hat\rho) = \sqrt{\frac{2(1-\rho)^2(1+(k-1)\rho)^2}{k(k-1)(n-1)}}

    with k trials per task and n tasks. This is the variance behind Bonett's sample-size
    formula :math:`n = 8 z^2 (1-\rho)^2 (1+(k-1)\rho)^2 / (k(k-1)w^2) + 1` for a CI of
    full width w (his eq. 3, reproduced e.g. by ``ICC::Nest`` in R: ρ = 0.7, k = 2,
    w = 0.2 → n = 101).

    The paper prints this SE as its eq. 8 with n(n − 1)(T − 1)F² in the denominator.
    That is not Bonett's expression: it shrinks like 1/n instead of 1/√n and is divided by
    the observed F², which makes it one to two orders of magnitude too small (ρ = 0.7,
    k = 2, n = 101, F ≈ 5.7: 0.0013 against Bonett's 0.051, which matches the spread of the
    estimator in simulation). The form implied by Bonett's own sample-size formula is used
    instead. Returns NaN where k ≤ 1 or n ≤ 1.
    """
    rho = np.asarray(icc, dtype=float)
    k = np.asarray(k, dtype=float)
    n = np.asarray(n, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        var = 2.0 * (1.0 - rho) ** 2 * (1.0 + (k - 1.0) * rho) ** 2 / (k * (k - 1.0) * (n - 1.0))
        se = np.where((k > 1.0) & (n > 1.0), np.sqrt(var), np.nan)
    return se[()] if se.ndim == 0 else se


def _estimates(ssb, ssw, n_tasks, n_obs, n0, var_means):
    """Mean squares, both ICC estimators and variance components from sums of squares.

    Works elementwise on arrays of any (common, broadcastable) shape.
    """
    df1 = n_tasks - 1.0
    df2 = n_obs - n_tasks
    with np.errstate(divide="ignore", invalid="ignore"):
        msb = np.where(df1 > 0, ssb / np.where(df1 > 0, df1, 1.0), np.nan)
        msw = np.where(df2 > 0, ssw / np.where(df2 > 0, df2, 1.0), np.nan)
        icc = (msb - msw) / (msb + (n0 - 1.0) * msw)
        # ICC(1,k) = (MSB − MSW)/MSB is −∞ when MSB = 0 < MSW; report it as undefined.
        icc_k = np.where(msb > 0, (msb - msw) / msb, np.nan)
        icc_plugin = var_means / (var_means + msw)
        sigma2_between = (msb - msw) / n0
    return msb, msw, icc, icc_k, icc_plugin, sigma2_between


def icc_from_moments(n_tasks, n_obs, sum_t2, s, q, s2_t, m, m2) -> ICCBatch:
    """ICC estimates from per-data-set moments of the per-task sums.

    Arguments are arrays of the batch shape: a (tasks), N (trials), ΣT_i², ΣS_i, ΣQ_i,
    ΣS_i²/T_i, Σ Ȳ_i and Σ Ȳ_i².
    """
    n_tasks = np.asarray(n_tasks, dtype=float)
    n_obs = np.asarray(n_obs, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        ssb = s2_t - s * s / n_obs
        ssw = q - s2_t
        tol = _MOMENT_ZERO_RTOL * np.abs(q)
        ssb = np.where(ssb <= tol, 0.0, ssb)
        ssw = np.where(ssw <= tol, 0.0, ssw)
        n0 = (n_obs - sum_t2 / n_obs) / (n_tasks - 1.0)
        var_means = (m2 - m * m / n_tasks) / (n_tasks - 1.0)
        var_means = np.where(var_means <= _MOMENT_ZERO_RTOL * np.abs(m2), 0.0, var_means)
        var_means = np.where(n_tasks > 1, var_means, np.nan)
    msb, msw, icc, icc_k, icc_plugin, s2b = _estimates(ssb, ssw, n_tasks, n_obs, n0, var_means)
    return ICCBatch(
        icc=icc,
        icc_k=icc_k,
        icc_plugin=icc_plugin,
        ms_between=msb,
        ms_within=msw,
        sigma2_between=s2b,
        sigma2_within=msw,
        var_task_means=var_means,
        n0=n0,
        n_tasks=n_tasks,
        n_obs=n_obs,
    )


def icc_batch(count: np.ndarray, total: np.ndarray, total_sq: np.ndarray) -> ICCBatch:
    r"""Vectorized ICC(1,1) point estimates for a batch of data sets given per-task sums.

    Parameters
    ----------
    count : T_i, trials per task, shape (..., a) broadcastable against ``total``. A 1-D
        ``count`` shared by the whole batch takes a faster matrix-product path.
    total : S_i = Σ_j Y_ij, shape (..., a).
    total_sq : Q_i = Σ_j Y_ij², same shape as ``total``.

    Returns
    -------
    ICCBatch
        Every field has the batch shape ``total.shape[:-1]``.

    Notes
    -----
    Tasks with T_i = 0 are ignored. With a tasks and N trials:

    .. math::

        SSB = \sum_i S_i^2/T_i - (\sum_i S_i)^2/N,\qquad
        SSW = \sum_i Q_i - \sum_i S_i^2/T_i,

        MSB = SSB/(a-1),\quad MSW = SSW/(N-a),\quad n_0 = \frac{N - \sum_i T_i^2/N}{a-1},

        \widehat{ICC} = \frac{MSB - MSW}{MSB + (n_0-1)MSW},\qquad
        ICC_{plugin} = \frac{s^2(\bar Y_i)}{s^2(\bar Y_i) + MSW}

    (Shrout & Fleiss 1979 case 1; n0 from Snedecor & Cochran for unbalanced designs; the
    plug-in is paper eqs. 6–7). Sums of squares below 1e-12·ΣQ are rounding error of the
    moment differences and are set to 0. No intervals are computed; use
    :func:`icc_oneway` for inference on one data set.
    """
    t = np.asarray(count, dtype=float)
    s = np.asarray(total, dtype=float)
    q = np.asarray(total_sq, dtype=float)
    present = t > 0
    inv = np.divide(1.0, t, out=np.zeros_like(t), where=present)
    if t.ndim == 1:
        # One design shared by the batch: reductions over tasks become matrix-vector products.
        a = np.full(s.shape[:-1], float(present.sum()))
        n_obs = np.full(s.shape[:-1], float(t.sum()))
        sum_t2 = float(t @ t)
        ss = s * s
        s2_t = ss @ inv
        m = s @ inv
        m2 = ss @ (inv * inv)
        s_sum = s.sum(axis=-1)
        q_sum = q.sum(axis=-1)
    else:
        t, s, q, inv, present = np.broadcast_arrays(t, s, q, inv, present)
        a = present.sum(axis=-1).astype(float)
        n_obs = t.sum(axis=-1)
        sum_t2 = (t * t).sum(axis=-1)
        means = s * inv
        s2_t = (s * means).sum(axis=-1)
        m = means.sum(axis=-1)
        m2 = (means * means).sum(axis=-1)
        s_sum = s.sum(axis=-1)
        q_sum = q.sum(axis=-1)
    return icc_from_moments(a, n_obs, sum_t2, s_sum, q_sum, s2_t, m, m2)


def _f_intervals(
    msb: float, msw: float, df1: float, df2: float, n0: float, alpha: float, warnings: list[str]
) -> tuple[float, float, float, float, float, float]:
    """The F test of MSB/MSW and the F-based intervals of ICC(1,1) and ICC(1,k) (McGraw &
    Wong 1996, case 1): with F_L = F / F_{1−α/2}(df1, df2) and F_U = F · F_{1−α/2}(df2, df1),
    ICC ∈ [(F_L − 1)/(F_L + n0 − 1), (F_U − 1)/(F_U + n0 − 1)] and, when MSB > 0,
    ICC_k ∈ [1 − 1/F_L, 1 − 1/F_U]."""
    k_low = k_high = float("nan")
    f_stat = msb / msw
    pvalue = float(f_sf(f_stat, df1, df2))
    f_lower = f_stat / float(f_ppf(1.0 - alpha / 2.0, df1, df2))
    f_upper = f_stat * float(f_ppf(1.0 - alpha / 2.0, df2, df1))
    ci_low = (f_lower - 1.0) / (f_lower + n0 - 1.0)
    ci_high = (f_upper - 1.0) / (f_upper + n0 - 1.0)
    if msb > 0.0:
        k_low, k_high = 1.0 - 1.0 / f_lower, 1.0 - 1.0 / f_upper
    else:
        warnings.append(
            "task means are all equal (MSB = 0): icc_k = (MSB − MSW)/MSB and its "
            "interval are undefined (NaN)"
        )
    return f_stat, pvalue, ci_low, ci_high, k_low, k_high


def icc_oneway(scores: np.ndarray, tasks: np.ndarray, *, confidence: float = 0.95) -> ICCResult:
    r"""One-way random-effects ICC(1,1) with F test, F-based CI and Bonett SE.

    Parameters
    ----------
    scores : 1-D array of floats in [0, 1] (binary or partial credit).
    tasks : 1-D array of task labels; any number of trials per task (unbalanced allowed).
    confidence : two-sided confidence level of the intervals, in (0, 1).

    Returns
    -------
    ICCResult

    Notes
    -----
    With a tasks, N trials, T_i trials and mean :math:`\bar Y_i` for task i and grand mean
    :math:`\bar Y`:

    .. math::

        MSB = \frac{\sum_i T_i(\bar Y_i - \bar Y)^2}{a-1},\qquad
        MSW = \frac{\sum_i\sum_j (Y_{ij}-\bar Y_i)^2}{N-a},\qquad
        n_0 = \frac{N - \sum_i T_i^2/N}{a-1}

        \widehat{ICC} = \frac{MSB-MSW}{MSB+(n_0-1)MSW}
        \quad\text{(Shrout \& Fleiss 1979, ICC(1,1); McGraw \& Wong 1996, ICC(1))}

    F = MSB/MSW on (a − 1, N − a) df tests ICC = 0. The interval is McGraw & Wong's case 1
    (Shrout & Fleiss eq. 6): :math:`F_L = F/F_{1-\alpha/2}(a-1, N-a)`,
    :math:`F_U = F\cdot F_{1-\alpha/2}(N-a, a-1)`, limits
    :math:`(F_L-1)/(F_L+n_0-1)` and :math:`(F_U-1)/(F_U+n_0-1)`; for ICC(1,k) they are
    :math:`1-1/F_L` and :math:`1-1/F_U`. Both are exact for balanced normal data and, with
    n0 in place of T, the customary approximation for unbalanced designs.

    ``se`` is :func:`bonett_se` with k = n0 and n = a (see there for why the paper's
    printed eq. 8 is not used). ``sigma2_within`` = MSW is the paper's pooled within-task
    variance (eqs. 13–14, weights T_i − 1); ``sigma2_between`` = (MSB − MSW)/n0 is the ANOVA
    variance component and is kept raw when negative, as is a negative ICC (both mean the
    task means vary less than trial noise alone predicts). ``icc_plugin`` and
    ``var_task_means`` are the paper's eqs. 6–7; ``between_query_se`` is eq. 11's
    "between-query SE", sqrt(s²(task means)/a).

    Degenerate inputs never raise and never return a silent 0: one task (df1 = 0), one
    trial per task (df2 = 0) and all-equal scores (0/0) give NaN in the affected fields
    with the reason in ``warnings``. When every task is deterministic but tasks differ
    (MSW = 0 < MSB) the ICC is exactly 1 and its interval collapses to [1, 1].
    """
    check_probability(confidence)
    y = np.asarray(scores, dtype=float)
    ts = task_sums(y, tasks)
    a, n = ts.n_tasks, ts.n_obs
    warnings: list[str] = []

    if n == 0:
        floats = [f for f, spec in ICCResult.__dataclass_fields__.items() if spec.type == "float"]
        return ICCResult(
            **{**dict.fromkeys(floats, float("nan")), "confidence": float(confidence)},
            interpretation="undefined",
            n_tasks=0,
            n_obs=0,
            warnings=("no observations: every field is NaN",),
        )

    means = ts.means
    grand = ts.total.sum() / n
    # Sums of squares from residuals rather than from raw moments: no cancellation.
    resid = y - means[ts.codes]
    scale = float(y @ y)
    ssw = float(resid @ resid)
    dev = means - grand
    ssb = float(ts.count @ (dev * dev))
    if ssw <= _RESID_ZERO_RTOL * scale:
        ssw = 0.0
    if ssb <= _RESID_ZERO_RTOL * scale:
        ssb = 0.0
    sum_t2 = float(ts.count @ ts.count)
    with np.errstate(divide="ignore", invalid="ignore"):
        n0 = (n - sum_t2 / n) / (a - 1.0) if a > 1 else float("nan")
        var_means = float(dev @ dev - (dev.sum() ** 2) / a) / (a - 1.0) if a > 1 else np.nan
    if a > 1 and var_means <= _RESID_ZERO_RTOL * float(means @ means):
        var_means = 0.0

    msb, msw, icc, icc_k, icc_plugin, s2b = (
        float(v) for v in _estimates(ssb, ssw, float(a), float(n), n0, var_means)
    )
    df1, df2 = float(a - 1), float(n - a)

    f_stat = pvalue = ci_low = ci_high = k_low = k_high = float("nan")
    if a < 2:
        warnings.append(
            "only one task: between-task mean square has df1 = 0; icc, F test, intervals, "
            "icc_k, icc_plugin, sigma2_between, var_task_means and between_query_se are NaN"
        )
    if df2 <= 0:
        warnings.append(
            "one trial per task: within-task mean square has df2 = N − a = 0; icc, F test, "
            "intervals, icc_k, icc_plugin, sigma2_within and sigma2_between are NaN"
        )
    if a >= 2 and df2 > 0:
        alpha = 1.0 - confidence
        if msb == 0.0 and msw == 0.0:
            warnings.append(
                "every score is equal: MSB = MSW = 0, so icc, icc_plugin and the F test "
                "are 0/0 and reported as NaN"
            )
        elif msw == 0.0:
            warnings.append(
                "within-task variance is zero (every task gives the same score on every "
                "trial) while tasks differ: icc = icc_k = 1, F = inf and the intervals "
                "collapse to [1, 1]"
            )
            f_stat, pvalue = float("inf"), 0.0
            ci_low = ci_high = k_low = k_high = 1.0
        else:
            f_stat, pvalue, ci_low, ci_high, k_low, k_high = _f_intervals(
                msb, msw, df1, df2, n0, alpha, warnings
            )
        if np.isfinite(s2b) and s2b < 0:
            warnings.append(
                "MSB < MSW: the between-task variance component and the ICC are negative; "
                "they are kept raw (task means vary less than trial noise alone predicts)"
            )
        if np.ptp(ts.count) > 0:
            warnings.append(
                f"unbalanced design: the F-based intervals, icc_k and se use "
                f"n0 = {n0:.4g} trials per task and are approximations"
            )

    se_b = float(bonett_se(icc, n0, a)) if np.isfinite(icc) else float("nan")
    between_se = float(np.sqrt(var_means / a)) if a > 1 else float("nan")

    return ICCResult(
        icc=icc,
        ci_low=float(ci_low),
        ci_high=float(ci_high),
        confidence=float(confidence),
        statistic=float(f_stat),
        df1=df1,
        df2=df2,
        pvalue=float(pvalue),
        se=se_b,
        icc_k=icc_k,
        icc_k_ci_low=float(k_low),
        icc_k_ci_high=float(k_high),
        icc_plugin=icc_plugin,
        sigma2_between=s2b,
        sigma2_within=msw,
        var_task_means=float(var_means),
        between_query_se=between_se,
        interpretation=interpret_icc(icc),
        n_tasks=a,
        n_obs=n,
        n0=float(n0),
        ms_between=msb,
        ms_within=msw,
        warnings=tuple(warnings),
    )
