"""How good is the judge: agreement of binary judge verdicts with reference labels.

A judge (an LLM grading an agent's answer) and a reference (a human label, or an exact
checker) each give a 0/1 verdict on the same trials. The 2×2 table of the two verdicts gives

* raw agreement p_o and Cohen's (1960) κ, the agreement beyond what two raters with these
  marginal rates would reach by chance, with the asymptotic standard error of Fleiss, Cohen &
  Everitt (1969) and, when task ids are given, a cluster bootstrap over tasks (trials of one
  task share the task's answer pattern and are not independent);
* the judge's two error rates against the reference: the false-accept rate (judge TRUE where
  the reference says FALSE) and the false-reject rate (judge FALSE where the reference says
  TRUE), each with a Wilson interval (:func:`evalnoise.stats.wilson_interval`);
* a flag for a judge that gives one verdict to (nearly) everything, where κ is undefined or
  uninformative (the "κ paradox": high agreement, κ near 0).

The error rates are the judge's specificity and sensitivity complements
(FAR = 1 − Sp, FRR = 1 − Se) that :mod:`evalnoise.stats.misclassification` uses to correct
accuracy for the judge's errors.

References
----------
Cohen, J. (1960). A coefficient of agreement for nominal scales. *Educational and
Psychological Measurement* 20(1): 37–46.
Fleiss, J. L., Cohen, J. & Everitt, B. S. (1969). Large sample standard errors of kappa and
weighted kappa. *Psychological Bulletin* 72(5): 323–327.
Feinstein, A. R. & Cicchetti, D. V. (1990). High agreement but low kappa: I. The problems of
two paradoxes. *Journal of Clinical Epidemiology* 43(6): 543–549.
Kish, L. (1965). *Survey Sampling*. Wiley (design effect; variance of a ratio estimator).
Davison, A. C. & Hinkley, D. V. (1997). *Bootstrap Methods and their Application*. Cambridge
University Press, ch. 3 (resampling hierarchical data: resample the top-level clusters).
Korn, E. L. & Graubard, B. I. (1998). Confidence intervals for proportions with small
expected number of positive counts estimated from survey data. *Survey Methodology* 24(2).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ._checks import check_probability, judge_and_reference, task_codes
from ._distributions import norm_ppf, norm_sf
from ._results import DictResult, plain, renamed
from .proportion import wilson_or_nan

__all__ = ["AgreementResult", "judge_agreement", "judge_agreement_by_level"]


@dataclass(frozen=True)
class AgreementResult(DictResult):
    """Agreement of judge verdicts with reference labels on the same trials.

    Attributes
    ----------
    n : trials with both a judge verdict and a reference label.
    n_dropped : trials left out because either verdict was missing (NaN).
    n_tasks : distinct tasks among the ``n`` trials (0 when no task ids were given).
    n_true_accept, n_false_accept, n_false_reject, n_true_reject : the 2×2 table —
        (judge 1, reference 1), (judge 1, reference 0), (judge 0, reference 1),
        (judge 0, reference 0).
    judge_positive_rate, reference_positive_rate : the two marginal TRUE rates; their
        difference is the judge's bias (leniency when positive).
    agreement : p_o, the share of trials where the verdicts agree.
    agreement_ci_low, agreement_ci_high : Wilson interval of p_o (on the effective sample
        size n / design_effect_agreement when tasks are given).
    kappa : Cohen's κ = (p_o − p_e)/(1 − p_e); NaN when p_e = 1 (both raters constant).
    kappa_se : Fleiss–Cohen–Everitt (1969) asymptotic SE of κ̂ (non-null).
    kappa_ci_low, kappa_ci_high : κ̂ ∓ z·kappa_se, truncated to [−1, 1].
    kappa_se0 : FCE (1969) SE under H0: κ = 0; kappa_pvalue the two-sided z test with it.
    kappa_max : the largest κ the two marginal distributions allow (Cohen 1960).
    kappa_cluster_se, kappa_cluster_ci_low, kappa_cluster_ci_high : SD and percentile
        interval of κ over a bootstrap that resamples whole tasks; NaN without task ids.
    n_resamples, seed : the bootstrap's size and seed (used only with task ids).
    n_resamples_undefined : bootstrap resamples with κ undefined (left out of the interval).
    false_accept_rate : FAR = #(judge 1, ref 0) / #(ref 0); NaN when no reference is FALSE.
    far_ci_low, far_ci_high : its Wilson interval.
    n_reference_false : #(ref 0), the FAR's denominator.
    false_reject_rate : FRR = #(judge 0, ref 1) / #(ref 1); NaN when no reference is TRUE.
    frr_ci_low, frr_ci_high : its Wilson interval.
    n_reference_true : #(ref 1), the FRR's denominator.
    design_effect_agreement, design_effect_far, design_effect_frr : task-clustered design
        effects (Kish 1965, ratio estimator) applied to the three Wilson intervals, floored at
        1; NaN without task ids (the intervals then treat trials as independent).
    degenerate : True when κ is undefined or one judge verdict covers ≥ the threshold share.
    degenerate_reason : why (empty when not degenerate).
    confidence : two-sided level of every interval.
    warnings : reasons for NaN fields and approximations in use.
    """

    n: int
    n_dropped: int
    n_tasks: int
    n_true_accept: int
    n_false_accept: int
    n_false_reject: int
    n_true_reject: int
    judge_positive_rate: float
    reference_positive_rate: float
    agreement: float
    agreement_ci_low: float
    agreement_ci_high: float
    kappa: float
    kappa_se: float
    kappa_ci_low: float
    kappa_ci_high: float
    kappa_se0: float
    kappa_pvalue: float
    kappa_max: float
    kappa_cluster_se: float
    kappa_cluster_ci_low: float
    kappa_cluster_ci_high: float
    n_resamples: int
    seed: int
    n_resamples_undefined: int
    false_accept_rate: float
    far_ci_low: float
    far_ci_high: float
    n_reference_false: int
    false_reject_rate: float
    frr_ci_low: float
    frr_ci_high: float
    n_reference_true: int
    design_effect_agreement: float
    design_effect_far: float
    design_effect_frr: float
    degenerate: bool
    degenerate_reason: str
    confidence: float
    warnings: tuple[str, ...] = ()

    # the names up to 0.1.0, before scipy.stats' vocabulary: deprecated, kept one release
    kappa_p_value = renamed("kappa_pvalue", "kappa_p_value")


def _cell_counts(j: np.ndarray, r: np.ndarray) -> np.ndarray:
    """Counts (n11, n10, n01, n00) of (judge, reference) = (1,1), (1,0), (0,1), (0,0)."""
    code = (1 - j.astype(np.int64)) * 2 + (1 - r.astype(np.int64))
    return np.bincount(code, minlength=4)


def _kappa_from_counts(c: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """κ, p_o and p_e from cell counts of shape (..., 4) (vectorized; NaN where p_e = 1)."""
    c = np.asarray(c, dtype=float)
    n = c.sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        p11, p10, p01, p00 = (c[..., i] / n for i in range(4))
        pj1, pr1 = p11 + p10, p11 + p01
        po = p11 + p00
        pe = pj1 * pr1 + (1.0 - pj1) * (1.0 - pr1)
        kappa = np.where(pe < 1.0, (po - pe) / (1.0 - pe), np.nan)
    return kappa, po, pe


def _fce_variances(c: np.ndarray) -> tuple[float, float]:
    r"""Fleiss, Cohen & Everitt (1969) large-sample variances of κ̂ (non-null and null).

    With cell proportions p_ij (i: judge, j: reference), margins p_i. and p_.j:

    .. math::

        \mathrm{Var}(\hat\kappa) = \frac{\sum_i p_{ii}[(1-p_e) - (p_{i.}+p_{.i})(1-p_o)]^2
            + (1-p_o)^2 \sum_{i\ne j} p_{ij}(p_{.i}+p_{j.})^2 - (p_o p_e - 2p_e + p_o)^2}
            {N (1-p_e)^4}

        \mathrm{Var}_0(\hat\kappa) = \frac{p_e + p_e^2 - \sum_i p_{i.}p_{.i}(p_{i.}+p_{.i})}
            {N (1-p_e)^2}
    """
    n = float(c.sum())
    p = np.array([[c[0], c[1]], [c[2], c[3]]], dtype=float) / n  # rows judge 1/0, cols ref 1/0
    row, col = p.sum(axis=1), p.sum(axis=0)
    po = float(np.trace(p))
    pe = float(row @ col)
    diag = np.diag(p) * ((1.0 - pe) - (row + col) * (1.0 - po)) ** 2
    off = p * (col[:, None] + row[None, :]) ** 2
    off_sum = float(off.sum() - np.trace(off))
    num = diag.sum() + (1.0 - po) ** 2 * off_sum - (po * pe - 2.0 * pe + po) ** 2
    var = max(float(num), 0.0) / (n * (1.0 - pe) ** 4)
    var0 = (pe + pe**2 - float(np.sum(row * col * (row + col)))) / (n * (1.0 - pe) ** 2)
    return var, max(var0, 0.0)


def _ratio_design_effect(num_g: np.ndarray, den_g: np.ndarray) -> float:
    r"""Design effect of the ratio R = Σ_g a_g / Σ_g m_g over clusters g (Kish 1965).

    Linearized cluster variance :math:`\frac{G}{G-1}\sum_g (a_g - R m_g)^2 / M^2` over the
    binomial variance R(1 − R)/M; NaN when either is 0 or fewer than two clusters carry
    denominator weight. G counts every cluster, as in domain estimation: a task without
    trials in the denominator contributes a residual of 0.
    """
    g = int(den_g.size)
    m = float(den_g.sum())
    if int((den_g > 0).sum()) < 2 or m == 0:
        return float("nan")
    r = float(num_g.sum()) / m
    if r <= 0.0 or r >= 1.0:
        return float("nan")
    resid = num_g - r * den_g
    v_cluster = g / (g - 1.0) * float(resid @ resid) / m**2
    return v_cluster / (r * (1.0 - r) / m)


def _cluster_bootstrap(
    task_cells: np.ndarray | None,
    kappa: float,
    n_resamples: int,
    seed: int,
    confidence: float,
    notes: list[str],
) -> tuple[float, float, float, int]:
    """κ's cluster bootstrap over tasks: resample tasks with replacement, κ of the summed
    cells; its SE, percentile interval and the resamples where κ is undefined."""
    nan = float("nan")
    c_se = c_low = c_high = nan
    n_undef = 0
    if task_cells is None:
        return c_se, c_low, c_high, n_undef
    n_tasks = int(task_cells.shape[0])
    if n_tasks < 2:
        notes.append("one task: no cluster bootstrap for κ")
    elif np.isfinite(kappa):
        rng = np.random.default_rng(seed)
        draws = rng.multinomial(n_tasks, np.full(n_tasks, 1.0 / n_tasks), size=n_resamples)
        k_boot = _kappa_from_counts(draws @ task_cells)[0]
        ok = np.isfinite(k_boot)
        n_undef = int((~ok).sum())
        if n_undef:
            notes.append(
                f"{n_undef} of {n_resamples} bootstrap resamples had κ undefined and were "
                "left out of the cluster interval"
            )
        if ok.sum() >= 2:
            alpha = 1.0 - confidence
            c_low, c_high = (float(v) for v in np.quantile(k_boot[ok], [alpha / 2, 1 - alpha / 2]))
            c_se = float(np.std(k_boot[ok], ddof=1))
    return c_se, c_low, c_high, n_undef


def _degenerate_reason(
    n: int, kappa: float, pj1: float, m1: int, m0: int, degenerate_threshold: float
) -> str:
    """Why the judge's κ says little ("" when it does): κ undefined, the judge or the
    reference giving (nearly) one verdict to every trial, or no trial at all."""
    if n and not np.isfinite(kappa):
        return "κ is undefined: judge and reference both give one verdict to every trial"
    elif n and max(pj1, 1.0 - pj1) >= degenerate_threshold:
        verdict, share = ("TRUE", pj1) if pj1 >= 0.5 else ("FALSE", 1.0 - pj1)
        return (
            f"the judge says {verdict} to {share:.1%} of trials (threshold "
            f"{degenerate_threshold:.0%}): κ and agreement rest on the few other verdicts"
        )
    elif n and max(m1 / n, m0 / n) >= degenerate_threshold:
        # the same rule for the other rater: against a (nearly) constant reference, e.g. an
        # always-right or always-wrong agent, κ is (nearly) 0 whatever the judge does
        verdict, share = ("TRUE", m1 / n) if m1 >= m0 else ("FALSE", m0 / n)
        return (
            f"the reference says {verdict} to {share:.1%} of trials (threshold "
            f"{degenerate_threshold:.0%}): κ rests on the few other trials (it is 0 when the "
            "reference is constant, however good the judge); read the false-"
            + ("reject" if verdict == "TRUE" else "accept")
            + " rate instead"
        )
    elif n == 0:
        return "no trial has both a judge verdict and a reference label"
    return ""


def _error_rates(
    counts: np.ndarray, task_cells: np.ndarray | None, confidence: float, notes: list[str]
) -> tuple[float, ...]:
    """The false-accept and false-reject rates, and Wilson intervals of the agreement and of
    both rates (with the tasks' cluster design effects when there are tasks), and those design
    effects."""
    nan = float("nan")
    n11, n10, n01, n00 = (int(v) for v in counts)
    m1, m0 = n11 + n01, n10 + n00
    n = n11 + n10 + n01 + n00
    far = n10 / m0 if m0 else nan
    frr = n01 / m1 if m1 else nan
    if n and not m0:
        notes.append("no trial has reference FALSE: the false-accept rate is undefined (NaN)")
    if n and not m1:
        notes.append("no trial has reference TRUE: the false-reject rate is undefined (NaN)")
    d_agree = d_far = d_frr = nan
    if task_cells is not None:
        tc = task_cells.astype(float)
        d_agree = _ratio_design_effect(tc[:, 0] + tc[:, 3], tc.sum(axis=1))
        d_far = _ratio_design_effect(tc[:, 1], tc[:, 1] + tc[:, 3])
        d_frr = _ratio_design_effect(tc[:, 2], tc[:, 0] + tc[:, 2])
    a_low, a_high = wilson_or_nan((n11 + n00) / n if n else nan, n, confidence, d_agree)
    far_low, far_high = wilson_or_nan(far, m0, confidence, d_far)
    frr_low, frr_high = wilson_or_nan(frr, m1, confidence, d_frr)

    return far, frr, a_low, a_high, far_low, far_high, frr_low, frr_high, d_agree, d_far, d_frr


def judge_agreement(
    judge: np.ndarray,
    reference: np.ndarray,
    *,
    tasks: np.ndarray | None = None,
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
    degenerate_threshold: float = 0.95,
) -> AgreementResult:
    r"""Agreement, Cohen's κ and error rates of judge verdicts against reference labels.

    Parameters
    ----------
    judge, reference : 1-D arrays of 0/1 (or bool) verdicts on the same trials, NaN/None for
        missing; trials missing either are dropped (counted in ``n_dropped``).
    tasks : optional task id per trial. When given, κ also gets a cluster bootstrap interval
        over tasks and the three Wilson intervals use task-clustered design effects.
    confidence : two-sided level of every interval, in (0, 1).
    n_resamples, seed : size and seed of the cluster bootstrap (``numpy.random.default_rng``).
    degenerate_threshold : share of trials with one judge verdict at or above which the judge
        is flagged degenerate.

    Returns
    -------
    AgreementResult

    Notes
    -----
    With cell proportions p_ij (i = judge, j = reference verdict) and margins
    :math:`p_{i.}, p_{.j}`:

    .. math::

        p_o = p_{11} + p_{00},\qquad p_e = p_{1.}p_{.1} + p_{0.}p_{.0},\qquad
        \hat\kappa = \frac{p_o - p_e}{1 - p_e}\quad\text{(Cohen 1960)}

        FAR = \frac{n_{10}}{n_{.0}},\qquad FRR = \frac{n_{01}}{n_{.1}}

    **κ interval.** ``kappa_se`` is the large-sample SE of Fleiss, Cohen & Everitt (1969,
    non-null case); the interval is :math:`\hat\kappa \pm z\,SE` truncated to
    [−1, 1]. ``kappa_se0`` is their SE under κ = 0, used for ``kappa_pvalue``. Both
    treat trials as independent. Trials of one task are not: a task whose answers the judge
    always misgrades contributes many correlated disagreements. With ``tasks``, the cluster
    bootstrap draws G tasks with replacement ``n_resamples`` times (every trial of a drawn
    task comes along), recomputes κ from the resampled table and reports the SD and the
    percentile interval (Davison & Hinkley 1997, ch. 3, hierarchical data). Resamples in
    which κ is undefined are left out and counted.

    **Error-rate intervals.** FAR, FRR and p_o are ratios of sums over trials; their Wilson
    interval (Wilson 1927, via :func:`evalnoise.stats.wilson_interval`) is computed on the
    plain count, or — with ``tasks`` — on the effective count n/D, where D is the
    task-clustered design effect of the ratio estimator (Kish 1965: linearized cluster
    variance over binomial variance), floored at 1 as Korn & Graubard (1998) advise so that
    chance under-dispersion never narrows an interval. D cannot be estimated when the rate is
    0 or 1 or only one task contributes; the interval is then the plain one.

    **Degenerate judge.** ``degenerate`` is True with a reason when κ is undefined (p_e = 1:
    judge and reference both constant and equal) or one verdict of *either* rater covers at
    least ``degenerate_threshold`` of the trials (the judge's: it says one thing to nearly
    everything; the reference's: an always-right or always-wrong agent, against which κ is 0
    when the reference is constant, since p_o = p_e). κ is then at the mercy of a handful of
    trials, and high raw agreement says only that the reference is as unbalanced as the
    judge (Feinstein & Cicchetti 1990).

    Perfect agreement with both verdicts present gives κ = 1 (SE 0), FAR = FRR = 0.
    """
    confidence = check_probability(confidence)
    if not 0.5 < degenerate_threshold <= 1.0:
        raise ValueError("degenerate_threshold must lie in (0.5, 1]")
    if isinstance(n_resamples, bool) or int(n_resamples) != n_resamples or n_resamples < 1:
        raise ValueError(f"n_resamples must be a positive integer, got {n_resamples!r}")
    j_all, r_all, task_arr = judge_and_reference(judge, reference, tasks, binary=True)

    keep = np.isfinite(j_all) & np.isfinite(r_all)
    j, r = j_all[keep], r_all[keep]
    n, n_dropped = int(j.size), int((~keep).sum())
    notes: list[str] = []
    nan = float("nan")
    if n_dropped:
        notes.append(f"{n_dropped} trial(s) without both a judge verdict and a reference label")

    counts = _cell_counts(j, r) if n else np.zeros(4, dtype=np.int64)
    n11, n10, n01, n00 = (int(v) for v in counts)
    m1, m0 = n11 + n01, n10 + n00

    # Task-level cells: one row of (n11, n10, n01, n00) per task.
    task_cells = None
    if task_arr is not None and n:
        codes, labels = task_codes(task_arr[keep])
        cell = (1 - j.astype(np.int64)) * 2 + (1 - r.astype(np.int64))
        task_cells = np.bincount(codes * 4 + cell, minlength=labels.size * 4).reshape(-1, 4)
    n_tasks = 0 if task_cells is None else int(task_cells.shape[0])

    if n == 0:
        notes.append("no trial has both verdicts: every statistic is NaN")
        kappa = po = pe = nan
    else:
        k_arr, po_arr, pe_arr = _kappa_from_counts(counts)
        kappa, po, pe = float(k_arr), float(po_arr), float(pe_arr)

    z = float(norm_ppf(0.5 + confidence / 2.0))
    kappa_se = kappa_se0 = pvalue = k_low = k_high = kappa_max = nan
    if np.isfinite(kappa):
        var, var0 = _fce_variances(counts)
        kappa_se, kappa_se0 = math.sqrt(var), math.sqrt(var0)
        k_low = max(kappa - z * kappa_se, -1.0)
        k_high = min(kappa + z * kappa_se, 1.0)
        pvalue = float(2.0 * norm_sf(abs(kappa) / kappa_se0)) if kappa_se0 > 0 else nan
        pj1, pr1 = (n11 + n10) / n, m1 / n
        kappa_max = (min(pj1, pr1) + min(1 - pj1, 1 - pr1) - pe) / (1.0 - pe)
    elif n:
        notes.append(
            "κ is undefined: judge and reference give the same single verdict to every trial "
            "(chance agreement p_e = 1)"
        )

    c_se, c_low, c_high, n_undef = _cluster_bootstrap(
        task_cells, kappa, n_resamples, seed, confidence, notes
    )

    rates = _error_rates(counts, task_cells, confidence, notes)
    far, frr, a_low, a_high, far_low, far_high, frr_low, frr_high, d_agree, d_far, d_frr = rates

    pj1 = (n11 + n10) / n if n else nan
    reason = _degenerate_reason(n, kappa, pj1, m1, m0, degenerate_threshold)
    if reason:
        notes.append(f"degenerate judge: {reason}")

    return AgreementResult(
        n=n,
        n_dropped=n_dropped,
        n_tasks=n_tasks,
        n_true_accept=n11,
        n_false_accept=n10,
        n_false_reject=n01,
        n_true_reject=n00,
        judge_positive_rate=float(pj1),
        reference_positive_rate=m1 / n if n else nan,
        agreement=float(po),
        agreement_ci_low=a_low,
        agreement_ci_high=a_high,
        kappa=float(kappa),
        kappa_se=float(kappa_se),
        kappa_ci_low=float(k_low),
        kappa_ci_high=float(k_high),
        kappa_se0=float(kappa_se0),
        kappa_pvalue=float(pvalue),
        kappa_max=float(kappa_max),
        kappa_cluster_se=c_se,
        kappa_cluster_ci_low=c_low,
        kappa_cluster_ci_high=c_high,
        n_resamples=int(n_resamples),
        seed=int(seed),
        n_resamples_undefined=n_undef,
        false_accept_rate=float(far),
        far_ci_low=far_low,
        far_ci_high=far_high,
        n_reference_false=m0,
        false_reject_rate=float(frr),
        frr_ci_low=frr_low,
        frr_ci_high=frr_high,
        n_reference_true=m1,
        design_effect_agreement=float(d_agree),
        design_effect_far=float(d_far),
        design_effect_frr=float(d_frr),
        degenerate=bool(reason),
        degenerate_reason=reason,
        confidence=float(confidence),
        warnings=tuple(notes),
    )


def judge_agreement_by_level(
    judge: np.ndarray,
    reference: np.ndarray,
    levels: np.ndarray,
    *,
    tasks: np.ndarray | None = None,
    **kwargs: Any,
) -> dict[Any, AgreementResult]:
    """:func:`judge_agreement` within each level (e.g. GAIA difficulty level).

    Parameters
    ----------
    judge, reference, tasks : as in :func:`judge_agreement`.
    levels : 1-D array, one level label per trial; NaN/None levels are left out.
    **kwargs : passed on to :func:`judge_agreement` (confidence, n_resamples, seed,
        degenerate_threshold); every level uses the same seed.

    Returns
    -------
    dict
        Level label → :class:`AgreementResult`, in sorted label order (order of first
        appearance when labels do not sort).
    """
    lv = np.asarray(levels, dtype=object).ravel()
    j = np.asarray(judge, dtype=object).ravel()
    r = np.asarray(reference, dtype=object).ravel()
    if not (lv.shape == j.shape == r.shape):
        raise ValueError("judge, reference and levels must have the same length")
    t = None if tasks is None else np.asarray(tasks).ravel()
    if t is not None and t.shape != lv.shape:
        raise ValueError("tasks must have the same length as levels")
    codes, labels = pd.factorize(lv, sort=False)
    order = list(range(labels.size))
    try:
        order.sort(key=lambda i: labels[i])
    except TypeError:
        pass
    out: dict[Any, AgreementResult] = {}
    for i in order:
        mask = codes == i
        out[plain(labels[i])] = judge_agreement(
            j[mask], r[mask], tasks=None if t is None else t[mask], **kwargs
        )
    return out
