"""Accuracy corrected for the judge's errors, from a subset of trials with reference labels.

An LLM judge grades every trial; a reference (human label, exact checker) exists for some of
them. The judge's mean verdict q is not the agent's accuracy p: a lenient judge inflates it,
a strict one deflates it. Two estimators correct it, under different assumptions:

* **Rogan–Gladen** (Rogan & Gladen 1978) models the judge by its sensitivity Se (P(judge 1 |
  reference 1)) and specificity Sp (P(judge 0 | reference 0)), estimated on the labelled
  trials, and inverts q = p·Se + (1 − p)(1 − Sp). It assumes binary verdicts and that the
  judge's error rates given the truth are the same on labelled and unlabelled trials
  (nondifferential, transportable misclassification). Because Se and Sp are conditional on
  the truth, the labelled trials may have a different prevalence from the unlabelled ones
  (a separate validation pool, or a subset sampled stratified on the reference label); the
  estimate is then the accuracy of the population the unlabelled trials represent. It needs
  Se + Sp > 1 and becomes unstable as Se + Sp → 1.
* **Prediction-powered inference** (PPI; Angelopoulos et al. 2023) estimates the mean as
  the judge's mean on the unlabelled trials minus the judge's average error (the
  "rectifier") on the labelled ones. It assumes nothing about the judge — any scores, any
  error structure — but needs the labelled trials to be a uniform random sample of the same
  population as the unlabelled ones. It is always defined, and works for partial credit.

Under a uniformly random labelled subset both are consistent for the same p — the run's
accuracy — and their intervals both reach nominal coverage. They part when the labelled
subset is not a uniform sample: selected on the reference label, RG still estimates the
unlabelled trials' accuracy and PPI is biased. Selected on the judge's verdict (e.g. as many
judge-TRUE as judge-FALSE trials), both are biased; that design needs the predictive-value
(double-sampling) estimator, not implemented here.

References
----------
Rogan, W. J. & Gladen, B. (1978). Estimating prevalence from the results of a screening test.
*American Journal of Epidemiology* 107(1): 71–76.
Greenland, S. (1988). Variance estimation for epidemiologic effect estimates under
misclassification. *Statistics in Medicine* 7(7): 745–757.
Lang, Z. & Reiczigel, J. (2014). Confidence limits for prevalence of disease adjusted for
estimated sensitivity and specificity. *Preventive Veterinary Medicine* 113(1): 13–22.
Angelopoulos, A. N., Bates, S., Fannjiang, C., Jordan, M. I. & Zrnic, T. (2023).
Prediction-powered inference. *Science* 382(6671): 669–674.
Angelopoulos, A. N., Duchi, J. C. & Zrnic, T. (2023). PPI++: Efficient prediction-powered
inference. arXiv:2311.01453.
"""

from __future__ import annotations

import math
import warnings as _warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._checks import check_probability, float_array, judge_and_reference, task_codes
from ._distributions import norm_ppf
from ._results import DictResult
from .proportion import wilson_or_nan

__all__ = [
    "CorrectedAccuracyResult",
    "PPIResult",
    "RoganGladenResult",
    "corrected_accuracy",
    "ppi_mean",
    "rogan_gladen",
]


@dataclass(frozen=True)
class RoganGladenResult(DictResult):
    """Rogan–Gladen accuracy corrected for the judge's sensitivity and specificity.

    Attributes
    ----------
    estimate : p̂ truncated to [0, 1].
    estimate_raw : (q̂ + Ŝp − 1)/(Ŝe + Ŝp − 1) before truncation.
    se : delta-method standard error of ``estimate_raw``.
    ci_low, ci_high : estimate_raw ∓ z·se, truncated to [0, 1].
    truncated : True when estimate_raw fell outside [0, 1].
    judge_mean : q̂, the judge's mean verdict on the unlabelled trials.
    sensitivity, sensitivity_ci_low, sensitivity_ci_high : Ŝe on the labelled trials with a
        Wilson interval (trials treated as independent).
    specificity, specificity_ci_low, specificity_ci_high : Ŝp likewise.
    youden : J = Ŝe + Ŝp − 1, the denominator; the correction needs J > 0.
    n_unlabelled, n_labelled, n_labelled_true, n_labelled_false : trial counts.
    n_tasks : clusters used for the SE (0: trials treated as independent).
    confidence : two-sided level.
    warnings : reasons for NaN fields, truncation and approximations.
    """

    estimate: float
    estimate_raw: float
    se: float
    ci_low: float
    ci_high: float
    truncated: bool
    judge_mean: float
    sensitivity: float
    sensitivity_ci_low: float
    sensitivity_ci_high: float
    specificity: float
    specificity_ci_low: float
    specificity_ci_high: float
    youden: float
    n_unlabelled: int
    n_labelled: int
    n_labelled_true: int
    n_labelled_false: int
    n_tasks: int
    confidence: float
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class PPIResult(DictResult):
    """Prediction-powered estimate of the mean score.

    Attributes
    ----------
    estimate : θ̂, truncated to [0, 1].
    estimate_raw : θ̂ before truncation.
    se : its standard error.
    ci_low, ci_high : estimate_raw ∓ z·se, truncated to [0, 1].
    truncated : True when estimate_raw fell outside [0, 1].
    judge_mean : mean judge score on the unlabelled trials.
    rectifier : mean of (judge − reference) on the labelled trials: the judge's bias there.
    lam : the weight λ on the judge (1 for plain PPI; estimated with ``power_tuning``).
    classical : mean reference score on the labelled trials alone, for comparison.
    classical_se : its standard error.
    n_unlabelled, n_labelled, n_tasks : counts (n_tasks 0: trials treated as independent).
    confidence : two-sided level.
    warnings : reasons for NaN fields, truncation and approximations.
    """

    estimate: float
    estimate_raw: float
    se: float
    ci_low: float
    ci_high: float
    truncated: bool
    judge_mean: float
    rectifier: float
    lam: float
    classical: float
    classical_se: float
    n_unlabelled: int
    n_labelled: int
    n_tasks: int
    confidence: float
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class CorrectedAccuracyResult(DictResult):
    """Judge-based accuracy, raw and corrected for the judge's errors two ways.

    Attributes
    ----------
    naive : mean judge verdict over every trial (what the pipeline reports uncorrected).
    reference_mean, reference_ci_low, reference_ci_high : mean reference label on the
        labelled trials with a Wilson interval (the labelled subset alone, no judge).
    rogan_gladen : :class:`RoganGladenResult` (NaN fields for non-binary scores).
    ppi : :class:`PPIResult`.
    n_trials, n_labelled : counts.
    warnings : notes not already in the two sub-results.

    ``to_dict()`` nests the two estimators' dicts under ``rogan_gladen`` and ``ppi``.
    """

    naive: float
    reference_mean: float
    reference_ci_low: float
    reference_ci_high: float
    rogan_gladen: RoganGladenResult
    ppi: PPIResult
    n_trials: int
    n_labelled: int
    warnings: tuple[str, ...] = ()


def _split(judge, reference, tasks, confidence: float, *, binary: bool):
    """Validate and split into (judge, reference, task code) of unlabelled and labelled trials.

    Trials without a judge score are dropped (counted); a NaN reference means unlabelled.
    """
    check_probability(confidence)
    f, y, t = judge_and_reference(judge, reference, tasks, binary=binary)
    scored = np.isfinite(f)
    clustered = t is not None
    codes = task_codes(t, scored)[0] if clustered else np.arange(f.size)
    # Clusters are the tasks with at least one scored trial; unscored rows carry no weight.
    codes = np.where(scored, codes, 0)
    n_dropped = int((~scored).sum())
    lab = scored & np.isfinite(y)
    unl = scored & ~np.isfinite(y)
    notes = []
    if n_dropped:
        notes.append(f"{n_dropped} trial(s) without a judge score were left out")
    if n_dropped and np.any(~scored & np.isfinite(y)):
        notes.append("some labelled trials had no judge score and were left out")
    return f, y, codes, unl, lab, clustered, notes


def _cluster_variance(
    influence: np.ndarray,
    codes: np.ndarray,
    clustered: bool,
    used: np.ndarray,
    notes: list[str],
) -> tuple[float, int]:
    """Σ_g (Σ_{i∈g} h_i)², times G/(G − 1) when clustered (CR1); and the cluster count G.

    Only rows in ``used`` (scored trials) define clusters; unclustered, every trial is one.
    With fewer than two clusters the variance is NaN and a note says so.
    """
    if not clustered:
        return float(influence @ influence), 0
    sums = np.bincount(codes[used], weights=influence[used])
    g = int(np.unique(codes[used]).size)
    if g < 2:
        notes.append("one task: the clustered SE is undefined")
        return float("nan"), g
    return g / (g - 1.0) * float(sums @ sums), g


def _finish(
    raw: float,
    se: float,
    confidence: float,
    notes: list[str],
    what: str,
    **counts: int,
) -> dict[str, Any]:
    """The fields both results share: the estimate and its interval truncated to [0, 1], the
    trial ``counts``, the level and the warnings (``notes``, this function's included)."""
    z = float(norm_ppf(0.5 + confidence / 2.0))
    low, high = raw - z * se, raw + z * se
    truncated = bool(np.isfinite(raw) and (raw < 0.0 or raw > 1.0))
    if truncated:
        notes.append(
            f"the {what} estimate {raw:.4g} lies outside [0, 1] and is truncated to it "
            "(sampling error in the judge's error rates, or the model does not hold)"
        )
    elif np.isfinite(low) and (low < 0.0 or high > 1.0):
        notes.append(f"the {what} interval reached beyond [0, 1] and is truncated to it")
    clip = (lambda v: float(min(max(v, 0.0), 1.0))) if np.isfinite(raw) else float
    return {
        "estimate": clip(raw),
        "estimate_raw": float(raw),
        "se": float(se),
        "ci_low": clip(low),
        "ci_high": clip(high),
        "truncated": truncated,
        **counts,
        "confidence": float(confidence),
        "warnings": tuple(notes),
    }


def rogan_gladen(
    judge: np.ndarray,
    reference: np.ndarray,
    *,
    tasks: np.ndarray | None = None,
    confidence: float = 0.95,
) -> RoganGladenResult:
    r"""Rogan–Gladen estimate of accuracy corrected for the judge's error rates.

    Parameters
    ----------
    judge : 1-D array of 0/1 judge verdicts on every trial (NaN: unscored, left out).
    reference : 1-D array, same length: 0/1 reference label where one exists, NaN elsewhere.
    tasks : optional task id per trial; the SE is then clustered by task (CR1).
    confidence : two-sided level, in (0, 1).

    Returns
    -------
    RoganGladenResult

    Notes
    -----
    On the unlabelled trials U the judge's mean is q̂; on the labelled trials L,
    :math:`\hat{Se} = \#(f=1, y=1)/\#(y=1)` and :math:`\hat{Sp} = \#(f=0, y=0)/\#(y=0)`.
    Since :math:`q = p\,Se + (1-p)(1-Sp)` (Rogan & Gladen 1978),

    .. math::

        \hat p = \frac{\hat q + \hat{Sp} - 1}{\hat{Se} + \hat{Sp} - 1}.

    **Assumptions.** Binary verdicts; the judge's Se and Sp are the same on U and L (its
    errors depend on the truth only, not on which trials were labelled); Se + Sp > 1. The
    estimand is the accuracy of the population U represents: the run's accuracy when the
    labelled trials are a uniform random subset. The labelled trials may also be chosen in
    any way that depends on the reference label only (Se and Sp are conditional on it); the
    estimate is then still U's accuracy, not the run's.

    **Variance (delta method).** With q̂, Ŝe, Ŝp from disjoint, independent trials
    (Greenland 1988; the Wald-type interval that Lang & Reiczigel 2014 start from):

    .. math::

        \mathrm{Var}(\hat p) \approx \frac{1}{J^2}\Big[\frac{\hat q(1-\hat q)}{n_U}
            + \hat p^2 \frac{\hat{Se}(1-\hat{Se})}{n_{L,1}}
            + (1-\hat p)^2 \frac{\hat{Sp}(1-\hat{Sp})}{n_{L,0}}\Big],
        \qquad J = \hat{Se}+\hat{Sp}-1,

    from :math:`\partial p/\partial q = 1/J`, :math:`\partial p/\partial Se = -p/J`,
    :math:`\partial p/\partial Sp = (1-p)/J`. It is computed as :math:`\sum_i h_i^2` over
    per-trial influence values :math:`h_i` (the three terms' linearizations), which gives
    exactly the formula above; with ``tasks`` the influence values are first summed within
    each task, :math:`\frac{G}{G-1}\sum_g (\sum_{i\in g} h_i)^2`, so that trials of one task
    in U and L are allowed to be correlated (the same linearization as the CR1 SE of
    :func:`evalnoise.stats.accuracy`). The interval :math:`\hat p \pm z\,SE` is computed on
    the untruncated :math:`\hat p` and then truncated to [0, 1]; a point estimate outside
    [0, 1] is truncated with a warning.

    Wilson intervals of Ŝe and Ŝp treat labelled trials as independent.
    """
    f, y, codes, unl, lab, clustered, notes = _split(
        judge, reference, tasks, confidence, binary=True
    )
    nan = float("nan")
    n_u, n_l = int(unl.sum()), int(lab.sum())
    pos, neg = lab & (y == 1.0), lab & (y == 0.0)
    m1, m0 = int(pos.sum()), int(neg.sum())

    q = float(f[unl].mean()) if n_u else nan
    se_hat = float(f[pos].mean()) if m1 else nan
    sp_hat = float(1.0 - f[neg].mean()) if m0 else nan
    if not n_u:
        notes.append("no unlabelled trial: nothing to correct (use the reference mean)")
    if not m1:
        notes.append("no labelled trial has reference TRUE: sensitivity is undefined")
    if not m0:
        notes.append("no labelled trial has reference FALSE: specificity is undefined")
    se_lo, se_hi = wilson_or_nan(se_hat, m1, confidence)
    sp_lo, sp_hi = wilson_or_nan(sp_hat, m0, confidence)
    youden = se_hat + sp_hat - 1.0

    raw = se = nan
    n_tasks = 0
    if np.isfinite(q) and np.isfinite(youden):
        if youden <= 0.0:
            notes.append(
                f"Se + Sp − 1 = {youden:.4g} ≤ 0 on the labelled trials: the judge is no better "
                "than chance and the Rogan–Gladen correction is undefined"
            )
        else:
            raw = (q + sp_hat - 1.0) / youden
            h = np.zeros(f.size)
            h[unl] = (f[unl] - q) / n_u
            h[pos] -= raw * (f[pos] - se_hat) / m1
            h[neg] += (1.0 - raw) * ((1.0 - f[neg]) - sp_hat) / m0
            h /= youden
            var, n_tasks = _cluster_variance(h, codes, clustered, unl | lab, notes)
            se = math.sqrt(var) if np.isfinite(var) else nan
            if youden < 0.2:
                notes.append(
                    f"Se + Sp − 1 = {youden:.3g} is small: the correction divides by it and "
                    "the delta-method interval is unreliable"
                )
    shared = _finish(
        raw,
        se,
        confidence,
        notes,
        "Rogan–Gladen",
        n_unlabelled=n_u,
        n_labelled=n_l,
        n_tasks=n_tasks,
    )
    return RoganGladenResult(
        **shared,
        judge_mean=q,
        sensitivity=se_hat,
        sensitivity_ci_low=se_lo,
        sensitivity_ci_high=se_hi,
        specificity=sp_hat,
        specificity_ci_low=sp_lo,
        specificity_ci_high=sp_hi,
        youden=float(youden),
        n_labelled_true=m1,
        n_labelled_false=m0,
    )


def ppi_mean(
    judge: np.ndarray,
    reference: np.ndarray,
    *,
    tasks: np.ndarray | None = None,
    confidence: float = 0.95,
    power_tuning: bool = False,
) -> PPIResult:
    r"""Prediction-powered inference (PPI) for the mean score.

    Parameters
    ----------
    judge : 1-D array of judge scores in [0, 1] on every trial (NaN: unscored, left out).
    reference : 1-D array, same length: reference score in [0, 1] where one exists, NaN
        elsewhere.
    tasks : optional task id per trial; the SE is then clustered by task (CR1).
    confidence : two-sided level, in (0, 1).
    power_tuning : weight the judge by the estimated optimal λ (PPI++, Angelopoulos, Duchi &
        Zrnic 2023) instead of λ = 1. Never asymptotically worse than the labelled mean alone.

    Returns
    -------
    PPIResult

    Notes
    -----
    With judge scores f and reference scores Y, N unlabelled trials and n labelled ones
    (Angelopoulos et al. 2023, mean estimation):

    .. math::

        \hat\theta_{PP} = \frac1N\sum_{i\in U} f_i - \frac1n\sum_{i\in L}(f_i - Y_i),\qquad
        \widehat{SE}^2 = \frac{\hat\sigma^2_f}{N} + \frac{\hat\sigma^2_{f-Y}}{n}

    with :math:`\hat\sigma^2_f` the variance of f over U and :math:`\hat\sigma^2_{f-Y}` that
    of the rectifier f − Y over L (ddof = 1); the interval is
    :math:`\hat\theta_{PP} \pm z\,\widehat{SE}`. With ``power_tuning``,
    :math:`\hat\theta_\lambda = \bar Y_L + \lambda(\bar f_U - \bar f_L)` with
    :math:`\hat\lambda = \widehat{Cov}_L(Y, f) / ((1 + n/N)\widehat{Var}_{U\cup L}(f))`,
    clipped to [0, 1], and the variances of λf and Y − λf.

    **Assumptions.** The labelled trials are a uniform random sample of the same population
    as the unlabelled ones (i.i.d.; or, with ``tasks``, trials sampled at random across
    tasks). Nothing is assumed about the judge: any score, any error structure, any
    dependence on the task; a useless judge only costs width, never validity. A labelled
    subset selected on the reference label (or on anything else) biases PPI.

    With ``tasks``, the SE is :math:`\sqrt{\frac{G}{G-1}\sum_g(\sum_{i\in g}h_i)^2}` with
    per-trial influence :math:`h_i = \lambda(f_i - \bar f_U)/N` on U and
    :math:`-(d_i - \bar d_L)/n` on L, :math:`d = \lambda f - Y`, which allows trials of one
    task in U and L to be correlated. The estimand is the mean over trials (paper eq. 2), the
    mean of task means for a balanced design. Estimate and interval are truncated to [0, 1]
    with a warning.
    """
    f, y, codes, unl, lab, clustered, notes = _split(
        judge, reference, tasks, confidence, binary=False
    )
    nan = float("nan")
    n_u, n_l = int(unl.sum()), int(lab.sum())
    fu, fl, yl = f[unl], f[lab], y[lab]
    classical = float(yl.mean()) if n_l else nan
    classical_se = float(yl.std(ddof=1) / math.sqrt(n_l)) if n_l > 1 else nan
    raw = se = rect = nan
    lam = 1.0
    n_tasks = 0
    judge_mean = float(fu.mean()) if n_u else nan
    if not n_u:
        notes.append("no unlabelled trial: PPI reduces to the labelled mean (``classical``)")
    if n_l < 2:
        notes.append("fewer than two labelled trials: PPI's rectifier variance is undefined")
    if n_u and n_l >= 2:
        if power_tuning:
            all_f = np.concatenate([fu, fl])
            var_f = float(all_f.var(ddof=1)) if all_f.size > 1 else 0.0
            cov = float(np.cov(yl, fl, ddof=1)[0, 1])
            lam = cov / ((1.0 + n_l / n_u) * var_f) if var_f > 0 else 0.0
            lam = float(min(max(lam, 0.0), 1.0))
        d = lam * fl - yl
        rect = float((fl - yl).mean())
        raw = lam * judge_mean - float(d.mean())
        if clustered:
            h = np.zeros(f.size)
            h[unl] = lam * (fu - judge_mean) / n_u
            h[lab] = -(d - d.mean()) / n_l
            var, n_tasks = _cluster_variance(h, codes, True, unl | lab, notes)
        else:
            var_u = lam**2 * float(fu.var(ddof=1)) / n_u if n_u > 1 else 0.0
            var = var_u + float(d.var(ddof=1)) / n_l
        se = math.sqrt(var) if np.isfinite(var) else nan
    shared = _finish(
        raw, se, confidence, notes, "PPI", n_unlabelled=n_u, n_labelled=n_l, n_tasks=n_tasks
    )
    return PPIResult(
        **shared,
        judge_mean=judge_mean,
        rectifier=float(rect),
        lam=float(lam),
        classical=classical,
        classical_se=classical_se,
    )


def corrected_accuracy(
    judge: np.ndarray,
    reference: np.ndarray,
    *,
    tasks: np.ndarray | None = None,
    confidence: float = 0.95,
    power_tuning: bool = False,
) -> CorrectedAccuracyResult:
    """Judge accuracy, the reference mean, and both corrections (:func:`rogan_gladen`,
    :func:`ppi_mean`) in one result.

    Parameters are those of :func:`ppi_mean`. Rogan–Gladen needs 0/1 scores; for partial
    credit its fields are NaN and a warning says so. Warnings of the two estimators are also
    issued as ``RuntimeWarning`` so a pipeline log shows them.
    """
    f, y = float_array(judge), float_array(reference)
    ppi = ppi_mean(f, y, tasks=tasks, confidence=confidence, power_tuning=power_tuning)
    notes: list[str] = []
    binary = all(np.all(np.isin(a[np.isfinite(a)], (0.0, 1.0))) for a in (f, y))
    if binary:
        rg = rogan_gladen(f, y, tasks=tasks, confidence=confidence)
    else:
        msg = "scores are not all 0/1: Rogan–Gladen does not apply (its fields are NaN)"
        notes.append(msg)
        nan = float("nan")
        rg = RoganGladenResult(
            **dict.fromkeys(("estimate", "estimate_raw", "se", "ci_low", "ci_high"), nan),
            truncated=False,
            **dict.fromkeys(("judge_mean", "sensitivity", "sensitivity_ci_low"), nan),
            **dict.fromkeys(("sensitivity_ci_high", "specificity"), nan),
            **dict.fromkeys(("specificity_ci_low", "specificity_ci_high", "youden"), nan),
            n_unlabelled=ppi.n_unlabelled,
            n_labelled=ppi.n_labelled,
            n_labelled_true=0,
            n_labelled_false=0,
            n_tasks=0,
            confidence=float(confidence),
            warnings=(msg,),
        )
    scored = np.isfinite(f)
    lab = scored & np.isfinite(y)
    n_l = int(lab.sum())
    ref_mean = float(y[lab].mean()) if n_l else float("nan")
    ref_lo, ref_hi = wilson_or_nan(ref_mean, n_l, confidence)
    for note in dict.fromkeys((*rg.warnings, *ppi.warnings)):
        _warnings.warn(note, RuntimeWarning, stacklevel=2)
    return CorrectedAccuracyResult(
        naive=float(f[scored].mean()) if scored.any() else float("nan"),
        reference_mean=ref_mean,
        reference_ci_low=ref_lo,
        reference_ci_high=ref_hi,
        rogan_gladen=rg,
        ppi=ppi,
        n_trials=int(scored.sum()),
        n_labelled=n_l,
        warnings=tuple(notes),
    )
