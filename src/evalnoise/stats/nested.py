"""The judge's noise as a variance component: tasks, trials within tasks, judge samples.

When the judge grades each trial's answer K times (K judge samples), a score y_ijk (task i,
trial j of task i, judge sample k of that trial) follows the two-way nested random model

    y_ijk = μ + a_i + b_ij + e_ijk,
    a_i ~ (0, σ²_task),  b_ij ~ (0, σ²_trial),  e_ijk ~ (0, σ²_judge),

which splits the paper's within-task variance σ²_w (its eq. 9) into the agent's own
trial-to-trial noise σ²_trial and the judge's noise σ²_judge. The mean over n tasks × T trials
× K judge samples has

    Var(μ̂) = σ²_task/n + σ²_trial/(n T) + σ²_judge/(n T K),

the three-level form of the paper's eq. 9, and a budget can buy more tasks, more trials or
more judge samples (:func:`nested_allocation`).

References
----------
Searle, S. R., Casella, G. & McCulloch, C. E. (1992). *Variance Components*. Wiley: ch. 4
(ANOVA estimation, balanced data, nested classifications), ch. 5 (unbalanced data,
Henderson's Method I).
Sahai, H. & Ojeda, M. M. (2004, 2005). *Analysis of Variance for Random Models*, Vols. I
(balanced) and II (unbalanced data), Birkhäuser: two-way nested classification.
Ting, N., Burdick, R. K., Graybill, F. A., Jeyaratnam, S. & Lu, T.-F. C. (1990). Confidence
intervals on linear combinations of variance components that are unrestricted in sign.
*Journal of Statistical Computation and Simulation* 35: 135–143.
Burdick, R. K. & Graybill, F. A. (1992). *Confidence Intervals on Variance Components*.
Marcel Dekker: ch. 3 (modified large-sample intervals), ch. 5 (nested designs).
Satterthwaite, F. E. (1946). An approximate distribution of estimates of variance components.
*Biometrics Bulletin* 2(6): 110–114.
Cochran, W. G. (1977). *Sampling Techniques*, 3rd ed. Wiley: ch. 10 (optimum subsampling in
two- and three-stage sampling).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ._checks import (
    check_finite_number,
    check_probability,
    optional_positive_int,
    task_codes,
)
from ._distributions import chi2_ppf, f_ppf
from ._results import DictResult
from .planning import _max_count

__all__ = [
    "NestedAllocation",
    "NestedAllocationResult",
    "NestedComponentsResult",
    "nested_allocation",
    "nested_components",
    "nested_mean_variance",
]

_COMPONENTS = ("task", "trial", "judge")


@dataclass(frozen=True)
class NestedComponentsResult(DictResult):
    """Three-level nested variance decomposition: task, trial(task), judge(trial).

    Attributes
    ----------
    sigma2_task, sigma2_trial, sigma2_judge : ANOVA estimates truncated at 0.
    sigma2_task_raw, sigma2_trial_raw, sigma2_judge_raw : the same before truncation.
    sigma2_*_ci_low, sigma2_*_ci_high : confidence intervals; exact χ² for σ²_judge, modified
        large-sample (MLS, Ting et al. 1990) for σ²_trial and σ²_task; clipped at 0.
    share_task, share_trial, share_judge : each truncated component over their sum (sum to 1;
        NaN when the sum is 0 or a component is not identified).
    icc_task : σ²_task/(σ²_task + σ²_trial + σ²_judge), the share of a single judged trial's
        variance due to the task (= share_task).
    mean : grand mean of the scores (every observation weighs 1).
    ms_task, ms_trial, ms_judge : Type I mean squares (task; trial within task; judge
        samples within trial).
    df_task, df_trial, df_judge : their degrees of freedom a − 1, B − a, N − B.
    k_trial, k_task_trial, k_task : expected-mean-square coefficients
        E[MS_trial] = σ²_judge + k_trial σ²_trial,
        E[MS_task] = σ²_judge + k_task_trial σ²_trial + k_task σ²_task
        (K, K and TK for a balanced design).
    n_tasks, n_trials, n_obs : a, B (trials over all tasks), N (judge samples).
    balanced : every task has the same number of trials and every trial the same number of
        judge samples.
    method : ``"anova"`` (balanced: ANOVA / expected mean squares) or ``"henderson1"``
        (unbalanced: Henderson's Method I, Type I sums of squares).
    ci_method : ``"mls"``.
    confidence : two-sided level.
    warnings : truncations, non-identified components, approximations.
    """

    sigma2_task: float
    sigma2_trial: float
    sigma2_judge: float
    sigma2_task_raw: float
    sigma2_trial_raw: float
    sigma2_judge_raw: float
    sigma2_task_ci_low: float
    sigma2_task_ci_high: float
    sigma2_trial_ci_low: float
    sigma2_trial_ci_high: float
    sigma2_judge_ci_low: float
    sigma2_judge_ci_high: float
    share_task: float
    share_trial: float
    share_judge: float
    icc_task: float
    mean: float
    ms_task: float
    ms_trial: float
    ms_judge: float
    df_task: int
    df_trial: int
    df_judge: int
    k_trial: float
    k_task_trial: float
    k_task: float
    n_tasks: int
    n_trials: int
    n_obs: int
    balanced: bool
    method: str
    ci_method: str
    confidence: float
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class NestedAllocation:
    """One way to spend a budget: n tasks × T trials × K judge samples."""

    n_tasks: int
    trials: int
    judge_samples: int
    cost: float
    variance: float
    se: float


@dataclass(frozen=True)
class NestedAllocationResult(DictResult):
    """Best allocation of a budget over tasks, trials and judge samples.

    Attributes
    ----------
    budget, cost_per_task, cost_per_trial, cost_per_judge_sample : the budget and unit costs.
    sigma2_task, sigma2_trial, sigma2_judge : the components the plan uses.
    max_tasks : n_max, tasks available (None: unlimited).
    trials_opt, judge_samples_opt : the continuous optimum T* and K* (Cochran 1977, ch. 10);
        inf or NaN where a component or cost is 0 (see :func:`nested_allocation`).
    n_tasks_opt : n* = budget / (c_task + T* c_trial + T* K* c_judge), ignoring
        ``max_tasks``; inf when T* = 0 (no cost per task: as many tasks as possible), NaN if
        T* or K* is not finite.
    recommended : the integer allocation with the smallest variance.
    judge_samples, n_tasks, trials, cost, variance, se : for each K in the searched range, the
        best integer (n, T) at that K — the answer to "how many judge samples are worth buying".
    variance_ratio : variance / variance at K = 1 (NaN when that is 0).
    warnings : notes on the search (e.g. optimum at the edge of the searched grid).
    """

    budget: float
    cost_per_task: float
    cost_per_trial: float
    cost_per_judge_sample: float
    sigma2_task: float
    sigma2_trial: float
    sigma2_judge: float
    max_tasks: int | None
    trials_opt: float
    judge_samples_opt: float
    n_tasks_opt: float
    recommended: NestedAllocation
    judge_samples: np.ndarray
    n_tasks: np.ndarray
    trials: np.ndarray
    cost: np.ndarray
    variance: np.ndarray
    se: np.ndarray
    variance_ratio: np.ndarray
    warnings: tuple[str, ...] = ()


# --- estimation ---------------------------------------------------------------------------


def _mls_difference(
    c1: float, s1: float, n1: float, c2: float, s2: float, n2: float, alpha: float
) -> tuple[float, float]:
    r"""MLS interval for θ = c1·S1² − c2·S2² (c1, c2 ≥ 0; S_q² on n_q df, independent).

    Ting et al. (1990); Burdick & Graybill (1992, ch. 3), two-sided level 1 − alpha:

    .. math::

        G_q = 1 - \frac{n_q}{\chi^2_{1-\alpha/2;\,n_q}},\quad
        H_q = \frac{n_q}{\chi^2_{\alpha/2;\,n_q}} - 1,\quad
        F_1 = F_{1-\alpha/2;\,n_1,n_2},\quad F_2 = F_{\alpha/2;\,n_1,n_2}

        G_{12} = \frac{(F_1-1)^2 - G_1^2F_1^2 - H_2^2}{F_1},\qquad
        H_{12} = \frac{(1-F_2)^2 - H_1^2F_2^2 - G_2^2}{F_2}

        L = \hat\theta - \sqrt{G_1^2c_1^2S_1^4 + H_2^2c_2^2S_2^4 + G_{12}c_1c_2S_1^2S_2^2},\quad
        U = \hat\theta + \sqrt{H_1^2c_1^2S_1^4 + G_2^2c_2^2S_2^4 + H_{12}c_1c_2S_1^2S_2^2}

    (F quantiles are lower-tail: F_{1−α/2} is the upper α/2 point). With c2 = 0 it is the
    exact χ² interval for c1·σ²_1. Ends are not clipped here.
    """
    lo_q, hi_q = alpha / 2.0, 1.0 - alpha / 2.0
    g1 = 1.0 - n1 / chi2_ppf(hi_q, n1)
    h1 = n1 / chi2_ppf(lo_q, n1) - 1.0
    a1, b1 = c1 * s1, c2 * s2
    theta = a1 - b1
    if b1 == 0.0:
        return theta - g1 * a1, theta + h1 * a1
    g2 = 1.0 - n2 / chi2_ppf(hi_q, n2)
    h2 = n2 / chi2_ppf(lo_q, n2) - 1.0
    f1 = f_ppf(hi_q, n1, n2)
    f2 = f_ppf(lo_q, n1, n2)
    g12 = ((f1 - 1.0) ** 2 - g1**2 * f1**2 - h2**2) / f1
    h12 = ((1.0 - f2) ** 2 - h1**2 * f2**2 - g2**2) / f2
    v_l = g1**2 * a1**2 + h2**2 * b1**2 + g12 * a1 * b1
    v_u = h1**2 * a1**2 + g2**2 * b1**2 + h12 * a1 * b1
    return theta - math.sqrt(max(v_l, 0.0)), theta + math.sqrt(max(v_u, 0.0))


def _satterthwaite(coefs: list[float], ms: list[float], dfs: list[float]) -> tuple[float, float]:
    """Σ c_q MS_q (c_q > 0) and its Satterthwaite (1946) df."""
    total = sum(c * m for c, m in zip(coefs, ms, strict=True))
    denom = sum((c * m) ** 2 / d for c, m, d in zip(coefs, ms, dfs, strict=True))
    df = total**2 / denom if denom > 0 else float(sum(dfs))
    return total, df


def _mls_combination(terms: list[tuple[float, float, float]], alpha: float) -> tuple[float, float]:
    """MLS interval for Σ c_q MS_q with coefficients of either sign.

    Each side (positive, negative coefficients) with more than one term is merged into one
    mean square with Satterthwaite df before :func:`_mls_difference`; exact MLS when each side
    has one term (every balanced design here).
    """
    pos = [(c, m, d) for c, m, d in terms if c > 0]
    neg = [(-c, m, d) for c, m, d in terms if c < 0]
    s1, n1 = _satterthwaite(*map(list, zip(*pos, strict=True))) if pos else (0.0, 1.0)
    s2, n2 = _satterthwaite(*map(list, zip(*neg, strict=True))) if neg else (0.0, 1.0)
    return _mls_difference(1.0, s1, n1, 1.0, s2, n2, alpha)


def nested_components(
    scores: np.ndarray,
    tasks: np.ndarray,
    trials: np.ndarray,
    *,
    confidence: float = 0.95,
) -> NestedComponentsResult:
    r"""Variance components of scores nested as judge samples within trials within tasks.

    Parameters
    ----------
    scores : 1-D array, one row per judge sample: y_ijk (0/1 verdicts or partial credit).
        NaN rows (unscored) are left out.
    tasks : task label per row.
    trials : trial label per row, identifying the trial within its task (e.g. the trial
        index); rows with the same (task, trial) are judge samples of one trial.
    confidence : two-sided level of the intervals, in (0, 1).

    Returns
    -------
    NestedComponentsResult

    Notes
    -----
    **Estimators (ANOVA / expected mean squares).** With a tasks, B trials in all, N rows,
    :math:`n_{ij}` judge samples of trial j of task i, :math:`n_{i.} = \sum_j n_{ij}`:

    .. math::

        SS_{task} = \sum_i n_{i.}(\bar y_{i..}-\bar y)^2,\quad
        SS_{trial} = \sum_{ij} n_{ij}(\bar y_{ij.}-\bar y_{i..})^2,\quad
        SS_{judge} = \sum_{ijk}(y_{ijk}-\bar y_{ij.})^2

    on a − 1, B − a and N − B df, and

    .. math::

        E[MS_{judge}] = \sigma^2_{judge},\quad
        E[MS_{trial}] = \sigma^2_{judge} + k_1\sigma^2_{trial},\quad
        E[MS_{task}] = \sigma^2_{judge} + k_2\sigma^2_{trial} + k_3\sigma^2_{task}

        k_1 = \frac{N - \sum_{ij} n_{ij}^2/n_{i.}}{B-a},\quad
        k_2 = \frac{\sum_{ij} n_{ij}^2/n_{i.} - \sum_{ij} n_{ij}^2/N}{a-1},\quad
        k_3 = \frac{N - \sum_i n_{i.}^2/N}{a-1}.

    Equating mean squares to their expectations gives
    :math:`\hat\sigma^2_{judge} = MS_{judge}`,
    :math:`\hat\sigma^2_{trial} = (MS_{trial}-MS_{judge})/k_1` and
    :math:`\hat\sigma^2_{task} = (MS_{task} - \tfrac{k_2}{k_1}MS_{trial}
    - (1-\tfrac{k_2}{k_1})MS_{judge})/k_3`. For a balanced design (T trials per task, K judge
    samples per trial) k1 = k2 = K and k3 = TK, the classic estimators
    :math:`(MS_{task}-MS_{trial})/(TK)` and :math:`(MS_{trial}-MS_{judge})/K` (Searle,
    Casella & McCulloch 1992, ch. 4; Sahai & Ojeda 2004). **Unbalanced data** are not
    discarded: the same equations with the coefficients above are Henderson's Method I
    (Type I sums of squares of the nested classification; Searle et al. 1992, ch. 5), which
    stays unbiased. The estimators are unbiased for any distribution, binary scores
    included. A negative estimate is truncated to 0 (``*_raw`` keeps it) with a warning;
    shares use the truncated values.

    **Intervals.** σ²_judge: the exact interval
    :math:`[df\,MS/\chi^2_{1-\alpha/2}, df\,MS/\chi^2_{\alpha/2}]`. σ²_trial and σ²_task are
    differences of mean squares; their intervals are the modified large-sample (MLS)
    intervals of Ting et al. (1990) (Burdick & Graybill 1992, ch. 3, recommended there over
    Satterthwaite's, which can badly under-cover for differences). Both ends are clipped at
    0. In the unbalanced case, the mean squares are no longer independent scaled χ², and
    σ²_task is a combination of three of them: the subtracted ones are merged into one with
    Satterthwaite (1946) df and the two-term MLS applied — an approximation, flagged in
    ``warnings``. All intervals assume normal effects; for 0/1 scores they are
    approximations (the point estimates are not).

    Components that the design cannot identify are NaN with a warning: σ²_judge with one
    judge sample per trial (N = B: judge noise is then inseparable from trial noise; use
    :func:`evalnoise.stats.icc_oneway`), σ²_trial with one trial per task, σ²_task with one
    task.
    """
    check_probability(confidence)
    y_all = np.asarray(scores, dtype=float).ravel()
    t_all = np.asarray(tasks).ravel()
    r_all = np.asarray(trials).ravel()
    if not (y_all.shape == t_all.shape == r_all.shape):
        raise ValueError("scores, tasks and trials must have the same length")
    if np.any(np.isinf(y_all)):
        raise ValueError("scores must be finite (NaN for missing)")
    notes: list[str] = []
    keep = np.isfinite(y_all)
    if not keep.all():
        notes.append(f"{int((~keep).sum())} row(s) without a score were left out")
    y, t_lab, r_lab = y_all[keep], t_all[keep], r_all[keep]
    nan = float("nan")
    alpha = 1.0 - confidence

    task_code, task_labels = task_codes(t_lab)
    if np.any(pd.isna(r_lab)):
        raise ValueError("trials must not be missing (NaN/None) on scored rows")
    cell = pd.DataFrame({"t": task_code, "r": r_lab}).groupby(["t", "r"], sort=False).ngroup()
    cell = cell.to_numpy()
    a = int(task_labels.size)
    n_cells = int(cell.max()) + 1 if cell.size else 0
    n_obs = int(y.size)

    n_ij = np.bincount(cell, minlength=n_cells).astype(float)
    s_ij = np.bincount(cell, weights=y, minlength=n_cells)
    cell_task = np.zeros(n_cells, dtype=np.int64)
    cell_task[cell] = task_code
    n_i = np.bincount(cell_task, weights=n_ij, minlength=a)
    s_i = np.bincount(cell_task, weights=s_ij, minlength=a)
    b_i = np.bincount(cell_task, minlength=a)

    mean = float(y.mean()) if n_obs else nan
    with np.errstate(divide="ignore", invalid="ignore"):
        m_ij = s_ij / n_ij
        m_i = s_i / n_i
    ss_judge = float(np.sum((y - m_ij[cell]) ** 2)) if n_obs else 0.0
    ss_trial = float(np.sum(n_ij * (m_ij - m_i[cell_task]) ** 2)) if n_obs else 0.0
    ss_task = float(np.sum(n_i * (m_i - mean) ** 2)) if n_obs else 0.0
    # Differences of equal floats are rounding noise, not variance (cf. icc.py).
    tiny = (64 * np.finfo(float).eps) ** 2 * max(float(np.sum(y * y)), 1.0)
    ss_judge, ss_trial, ss_task = (0.0 if v <= tiny else v for v in (ss_judge, ss_trial, ss_task))

    df_task, df_trial, df_judge = a - 1, n_cells - a, n_obs - n_cells
    balanced = bool(n_obs and np.ptp(n_ij) == 0 and np.ptp(b_i) == 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        ms_task = ss_task / df_task if df_task > 0 else nan
        ms_trial = ss_trial / df_trial if df_trial > 0 else nan
        ms_judge = ss_judge / df_judge if df_judge > 0 else nan
        sum_nij2_ni = float(np.sum(n_ij**2 / n_i[cell_task])) if n_obs else nan
        k1 = (n_obs - sum_nij2_ni) / df_trial if df_trial > 0 else nan
        k2 = (sum_nij2_ni - float(np.sum(n_ij**2)) / n_obs) / df_task if df_task > 0 else nan
        k3 = (n_obs - float(np.sum(n_i**2)) / n_obs) / df_task if df_task > 0 else nan
    if balanced and df_task > 0 and df_trial > 0:
        kk, tt = float(n_ij[0]), float(b_i[0])
        k1, k2, k3 = kk, kk, tt * kk  # exact, free of rounding

    if df_judge <= 0:
        notes.append(
            "one judge sample per trial: judge noise cannot be separated from trial noise; "
            "sigma2_judge and sigma2_trial are NaN (icc_oneway gives their sum)"
        )
    if df_trial <= 0:
        notes.append("one trial per task: sigma2_trial and sigma2_task are not identified (NaN)")
    if df_task <= 0:
        notes.append("fewer than two tasks: sigma2_task is not identified (NaN)")

    # Raw estimates.
    s2_judge = ms_judge
    s2_trial = (ms_trial - ms_judge) / k1 if df_trial > 0 and df_judge > 0 else nan
    if df_task > 0 and df_trial > 0:
        ratio = 1.0 if balanced else k2 / k1
        if df_judge > 0:
            s2_task = (ms_task - ratio * ms_trial - (1.0 - ratio) * ms_judge) / k3
        elif math.isclose(ratio, 1.0):
            # Without judge replication, σ²_task is still (MS_task − MS_trial)/k3 when k1 = k2.
            s2_task = (ms_task - ms_trial) / k3
        else:
            s2_task = nan
    else:
        s2_task = nan

    # Intervals.
    nan2 = (nan, nan)
    ci_judge = nan2
    if df_judge > 0:
        ci_judge = (
            df_judge * ms_judge / chi2_ppf(1.0 - alpha / 2.0, df_judge),
            df_judge * ms_judge / chi2_ppf(alpha / 2.0, df_judge),
        )
    ci_trial = nan2
    if np.isfinite(s2_trial):
        lo, hi = _mls_combination([(1.0, ms_trial, df_trial), (-1.0, ms_judge, df_judge)], alpha)
        ci_trial = (lo / k1, hi / k1)
    ci_task = nan2
    if np.isfinite(s2_task):
        ratio = 1.0 if balanced else k2 / k1
        terms = [(1.0, ms_task, df_task), (-ratio, ms_trial, df_trial)]
        if df_judge > 0 and not math.isclose(ratio, 1.0, rel_tol=1e-12):
            terms.append((-(1.0 - ratio), ms_judge, df_judge))
        lo, hi = _mls_combination(terms, alpha)
        ci_task = (lo / k3, hi / k3)
    if not balanced and n_obs:
        notes.append(
            "unbalanced design: Henderson Method I estimates (unbiased); the MLS intervals "
            "of sigma2_trial and sigma2_task are approximations"
        )

    raw = {"task": s2_task, "trial": s2_trial, "judge": s2_judge}
    est = {}
    for name in _COMPONENTS:
        v = raw[name]
        if np.isfinite(v) and v < 0.0:
            notes.append(f"sigma2_{name} estimate {v:.4g} < 0 truncated to 0")
        est[name] = max(v, 0.0) if np.isfinite(v) else nan
    total = sum(est.values())
    if np.isfinite(total) and total > 0:
        shares = {k: v / total for k, v in est.items()}
    else:
        shares = dict.fromkeys(_COMPONENTS, nan)
        if np.isfinite(total):
            notes.append("every component is 0: shares are undefined (NaN)")

    def _clip(ci):
        return tuple(max(float(v), 0.0) if np.isfinite(v) else nan for v in ci)

    ci_task, ci_trial, ci_judge = _clip(ci_task), _clip(ci_trial), _clip(ci_judge)
    return NestedComponentsResult(
        sigma2_task=float(est["task"]),
        sigma2_trial=float(est["trial"]),
        sigma2_judge=float(est["judge"]),
        sigma2_task_raw=float(s2_task),
        sigma2_trial_raw=float(s2_trial),
        sigma2_judge_raw=float(s2_judge),
        sigma2_task_ci_low=ci_task[0],
        sigma2_task_ci_high=ci_task[1],
        sigma2_trial_ci_low=ci_trial[0],
        sigma2_trial_ci_high=ci_trial[1],
        sigma2_judge_ci_low=ci_judge[0],
        sigma2_judge_ci_high=ci_judge[1],
        share_task=float(shares["task"]),
        share_trial=float(shares["trial"]),
        share_judge=float(shares["judge"]),
        icc_task=float(shares["task"]),
        mean=mean,
        ms_task=float(ms_task),
        ms_trial=float(ms_trial),
        ms_judge=float(ms_judge),
        df_task=int(df_task),
        df_trial=int(df_trial),
        df_judge=int(df_judge),
        k_trial=float(k1),
        k_task_trial=float(k2),
        k_task=float(k3),
        n_tasks=a,
        n_trials=n_cells,
        n_obs=n_obs,
        balanced=balanced,
        method="anova" if balanced else "henderson1",
        ci_method="mls",
        confidence=float(confidence),
        warnings=tuple(notes),
    )


# --- planning -----------------------------------------------------------------------------


def nested_mean_variance(
    n_tasks: float | np.ndarray,
    trials: float | np.ndarray,
    judge_samples: float | np.ndarray,
    sigma2_task: float | np.ndarray,
    sigma2_trial: float | np.ndarray,
    sigma2_judge: float | np.ndarray,
) -> float | np.ndarray:
    """Var(μ̂) = σ²_task/n + σ²_trial/(n T) + σ²_judge/(n T K); arguments broadcast.

    The three-level extension of the paper's eq. 9 for a balanced design of n tasks, T
    trials per task and K judge samples per trial. Scalars in, a float out.
    """
    n, t, k = (np.asarray(v, dtype=float) for v in (n_tasks, trials, judge_samples))
    s_a, s_b, s_e = (np.asarray(v, dtype=float) for v in (sigma2_task, sigma2_trial, sigma2_judge))
    var = s_a / n + s_b / (n * t) + s_e / (n * t * k)
    return float(var) if var.ndim == 0 else var


def nested_allocation(
    budget: float,
    sigma2_task: float,
    sigma2_trial: float,
    sigma2_judge: float,
    *,
    cost_per_trial: float,
    cost_per_judge_sample: float,
    cost_per_task: float = 0.0,
    max_tasks: int | None = None,
    max_trials: int | None = None,
    max_judge_samples: int | None = None,
) -> NestedAllocationResult:
    r"""Spend a budget on tasks, trials per task and judge samples per trial.

    Parameters
    ----------
    budget : C, total cost units available.
    sigma2_task, sigma2_trial, sigma2_judge : variance components, e.g. from
        :func:`nested_components` on a pilot run.
    cost_per_trial : cost of one agent trial, judging excluded (> 0).
    cost_per_judge_sample : cost of one judge sample of one trial (≥ 0).
    cost_per_task : fixed cost per task, whatever its trials (≥ 0; default 0 as in the paper,
        where only runs cost).
    max_tasks : n_max, tasks available (None: unlimited).
    max_trials, max_judge_samples : upper ends of the integer search over T and K; defaults
        are what the budget allows, capped at 4096 trials and 64 judge samples.

    Returns
    -------
    NestedAllocationResult

    Notes
    -----
    A design of n tasks, T trials and K judge samples costs
    :math:`C = n(c_{task} + T c_{trial} + T K c_{judge})` (c_task, c_trial, c_judge =
    ``cost_per_task``, ``cost_per_trial``, ``cost_per_judge_sample``) and gives

    .. math::

        \mathrm{Var}(\hat\mu) = \frac{\sigma^2_{task}}{n} + \frac{\sigma^2_{trial}}{nT}
            + \frac{\sigma^2_{judge}}{nTK}.

    Var·C = (σ²_task + σ²_trial/T + σ²_judge/(TK))(c_task + T c_trial + TK c_judge) does
    not depend on n; by Cauchy–Schwarz it is smallest when each variance term is
    proportional to its cost term, which gives the classic multi-stage optimum (Cochran
    1977, ch. 10: optimum subsampling for two- and three-stage sampling, infinite populations):

    .. math::

        T^* = \sqrt{\frac{\sigma^2_{trial}\,c_{task}}{\sigma^2_{task}\,c_{trial}}},\qquad
        K^* = \sqrt{\frac{\sigma^2_{judge}\,c_{trial}}{\sigma^2_{trial}\,c_{judge}}},\qquad
        n^* = \frac{C}{c_{task} + T^*c_{trial} + T^*K^*c_{judge}}.

    K* does not depend on the task level: a second judge sample is worth buying roughly
    when σ²_judge/σ²_trial > c_judge/c_trial (K* > 1). With c_task = 0, T* = 0: more tasks
    with one trial each always win (the paper's eq. 10), until ``max_tasks`` binds.

    The continuous optimum is reported as ``trials_opt``, ``judge_samples_opt`` and
    ``n_tasks_opt`` (inf or NaN where a component or a cost is 0). The recommendation comes
    from an integer search: every T ≤ T_max and K ≤ K_max, with
    n = min(⌊C/(c_task + T c_trial + TK c_judge)⌋, n_max); smallest variance wins, ties going
    to more tasks, then fewer judge samples, then fewer trials. For each K the best (n, T) is
    kept in the result's arrays, with the variance relative to K = 1.
    """
    c_budget = check_finite_number(budget, "budget")
    s_a = check_finite_number(sigma2_task, "sigma2_task")
    s_b = check_finite_number(sigma2_trial, "sigma2_trial")
    s_e = check_finite_number(sigma2_judge, "sigma2_judge")
    c_a = check_finite_number(cost_per_task, "cost_per_task")
    c_b = check_finite_number(cost_per_trial, "cost_per_trial", positive=True)
    c_e = check_finite_number(cost_per_judge_sample, "cost_per_judge_sample")
    n_max = optional_positive_int(max_tasks, "max_tasks")
    t_cap = optional_positive_int(max_trials, "max_trials")
    k_cap = optional_positive_int(max_judge_samples, "max_judge_samples")
    unit = c_a + c_b + c_e
    if c_budget < unit:
        raise ValueError(f"budget {c_budget:g} cannot buy one task × one trial × one judge sample")
    notes: list[str] = []

    with np.errstate(all="ignore"):
        f64 = np.float64
        t_opt = float(np.sqrt(f64(s_b) * f64(c_a) / (f64(s_a) * f64(c_b))))
        k_opt = float(np.sqrt(f64(s_e) * f64(c_b) / (f64(s_b) * f64(c_e))))
        n_opt = float(f64(c_budget) / (c_a + t_opt * c_b + t_opt * k_opt * c_e))
        if not (np.isfinite(t_opt) and np.isfinite(k_opt)):
            n_opt = float("nan")

    t_afford = int((c_budget - c_a) // (c_b + c_e))
    k_afford = (c_budget - c_a - c_b) // c_e if c_e > 0 else math.inf
    k_afford = None if k_afford > 1e6 else int(k_afford)
    t_max = max(min(t_afford, 4096 if t_cap is None else t_cap), 1)
    k_max = 64 if k_cap is None else k_cap
    k_max = max(k_max if k_afford is None else min(k_max, k_afford), 1)
    # The default caps, not the budget or the caller, ended the search.
    t_default_cap = t_cap is None and t_afford > t_max
    k_default_cap = k_cap is None and (k_afford is None or k_afford > k_max)

    t_grid = np.arange(1, t_max + 1, dtype=np.int64)[:, None]
    k_grid = np.arange(1, k_max + 1, dtype=np.int64)[None, :]
    per_task = c_a + t_grid * c_b + t_grid * k_grid * c_e
    # Shave rounding before flooring so that an exactly affordable n is not lost.
    n = _max_count(c_budget, per_task, rtol=1e-12)
    if n_max is not None:
        n = np.minimum(n, n_max)
    n_safe = np.maximum(n, 1)
    var = s_a / n_safe + s_b / (n_safe * t_grid) + s_e / (n_safe * t_grid * k_grid)
    var = np.where(n >= 1, var, np.inf)
    cost = n * per_task

    # Per K: the best T (ties: more tasks, then fewer trials).
    tt = np.broadcast_to(t_grid, var.shape)
    best_t = np.empty(k_max, dtype=np.int64)
    for kk in range(k_max):
        order = np.lexsort((tt[:, kk], -n[:, kk], var[:, kk]))
        best_t[kk] = order[0]
    cols = np.arange(k_max)
    k_var = var[best_t, cols]
    k_n = n[best_t, cols]
    k_t = best_t + 1
    k_cost = cost[best_t, cols]
    k_vals = cols + 1
    best_k = int(np.lexsort((k_vals, -k_n, k_var))[0])
    rec = NestedAllocation(
        n_tasks=int(k_n[best_k]),
        trials=int(k_t[best_k]),
        judge_samples=int(k_vals[best_k]),
        cost=float(k_cost[best_k]),
        variance=float(k_var[best_k]),
        se=float(np.sqrt(k_var[best_k])),
    )
    if rec.trials == t_max and t_default_cap:
        notes.append(f"the best T is the largest searched ({t_max}); raise max_trials")
    if rec.judge_samples == k_max and k_default_cap:
        notes.append(f"the best K is the largest searched ({k_max}); raise max_judge_samples")
    return NestedAllocationResult(
        budget=c_budget,
        cost_per_task=c_a,
        cost_per_trial=c_b,
        cost_per_judge_sample=c_e,
        sigma2_task=s_a,
        sigma2_trial=s_b,
        sigma2_judge=s_e,
        max_tasks=n_max,
        trials_opt=t_opt,
        judge_samples_opt=k_opt,
        n_tasks_opt=float(n_opt),
        recommended=rec,
        judge_samples=k_vals,
        n_tasks=k_n,
        trials=k_t,
        cost=k_cost.astype(float),
        variance=k_var,
        se=np.sqrt(k_var),
        variance_ratio=np.divide(
            k_var, k_var[0], out=np.full(k_var.shape, np.nan), where=k_var[0] > 0
        ),
        warnings=tuple(notes),
    )
