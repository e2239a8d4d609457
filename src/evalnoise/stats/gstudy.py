"""The G-study: one variance component per effect of a design, with an interval each.

Every source of noise an evaluation varies — task, trial within task, judge sample, prompt
variant, resource profile, time block, host, any grouping column — is a *facet* of one
random-effects model (generalizability theory: Cronbach et al. 1972; Brennan 2001). For the
facets of a :class:`~evalnoise.stats.gdesign.Design`, a score is

.. math::

    y = \\mu + \\sum_{\\alpha} \\nu_\\alpha + e,\\qquad
    \\nu_\\alpha \\sim (0, \\sigma^2(\\alpha)),

one effect ν_α for every effect α of the design (Brennan 2001, ch. 3 for the
linear models of multifacet designs; a fixed facet's main effect is a constant instead), all
uncorrelated. :func:`gstudy` estimates every σ²(α):

* **balanced designs** (every combination of facet levels, the same number of scores in
  each): the ANOVA estimators — mean squares equated to their expectations (Brennan ch. 3,
  the "EMS" procedure) — unbiased for any distribution of the scores (0/1 included). When
  all are positive they are also the REML estimates (Searle, Casella & McCulloch 1992,
  ch. 6); a negative one is set to 0 and reported as truncated (Brennan ch. 3).
* **unbalanced designs** (missing cells, unequal counts — e.g. trials spread over time
  blocks by their start times): REML (:mod:`evalnoise.stats._greml`), every component
  constrained to ≥ 0; Henderson's methods I (Brennan's "analogous T terms", ch. 7) and III
  are available as ``method=``.

**Intervals.** Every component σ̂²(α) is a linear combination Σ_j c_j MS_j of mean squares
(the ANOVA ones for a balanced design, Henderson III's fitting-constants reductions
otherwise, :mod:`evalnoise.stats._gmoments`). Its interval is the modified large-sample
(MLS) interval of Ting et al. (1990) (Burdick & Graybill 1992, ch. 3; Brennan ch. 6), the
default, or Satterthwaite's (Brennan ch. 6, ``ci_method="satterthwaite"``). The MLS lower
end is above 0 exactly when the F test of the component is significant at α/2 (for a
difference of two mean squares; approximately otherwise), so a component whose interval
reaches 0 is **not detected** and reported as such, never as a share of the variance. The
Satterthwaite interval never reaches 0 for a positive estimate, so it is not used for
detection. An upper end above (b − a)²/4, the largest variance of a score in [a, b] (0.25 for
scores in [0, 1]; :mod:`evalnoise.stats.shares`), is cut to it and the cut is said. Both
assume normal effects: for 0/1 scores they are approximations (the point estimates are
not); the calibration of both under the null and their coverage are measured in
``benchmarks/gstudy_calibration.py``.

**What the design that ran says about the benchmark score.** The score the pipeline reports
is a weighted mean of the scores, μ̂ = Σ_i a_i y_i (the mean of task means: a_i = 1/(G n_g)).
Under the model its variance is

.. math::

    \\mathrm{Var}(\\hat\\mu) = \\sum_\\alpha \\sigma^2(\\alpha) \\sum_{l \\in \\alpha}
    \\Big(\\sum_{i \\in l} a_i\\Big)^2 + \\sigma^2(e)\\sum_i a_i^2,

(``mean_coefficients`` hold the inner sums) which for a balanced design is Brennan's
σ²(X̄) = Σ_α σ²(α)/π(α), π(α) the product of the sample sizes of the facets in α (Brennan
ch. 4 on D-study error variances). :func:`evalnoise.stats.dstudy.total_error`
turns it into the total-error SE and its projections.

References
----------
Brennan, R. L. (2001). *Generalizability Theory*. Springer: ch. 3 (G-study designs, EMS),
ch. 4 (D studies), ch. 6 (variability of estimated variance components), ch. 7 (unbalanced
random effects designs).
Burdick, R. K. & Graybill, F. A. (1992). *Confidence Intervals on Variance Components*.
Marcel Dekker.
Cronbach, L. J., Gleser, G. C., Nanda, H. & Rajaratnam, N. (1972). *The Dependability of
Behavioral Measurements*. Wiley.
Searle, S. R., Casella, G. & McCulloch, C. E. (1992). *Variance Components*. Wiley.
Ting, N., Burdick, R. K., Graybill, F. A., Jeyaratnam, S. & Lu, T.-F. C. (1990). Confidence
intervals on linear combinations of variance components that are unrestricted in sign.
*Journal of Statistical Computation and Simulation* 35: 135–143.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

from ._checks import check_probability
from ._gmoments import (
    anova_mean_squares,
    henderson1_t_terms,
    henderson3_mean_squares,
    mls_interval,
    satterthwaite_interval,
)
from ._greml import reml
from ._results import DictResult
from .gdesign import RESIDUAL, CodedDesign, Design, code_design, parse_facets
from .shares import max_variance

__all__ = ["GStudyResult", "NotEstimable", "gstudy"]

Method = Literal["auto", "anova", "reml", "henderson1", "henderson3"]
CIMethod = Literal["mls", "satterthwaite"]


class NotEstimable(ValueError):
    """The data cannot estimate the design: too few scores for its parameters."""


@dataclass(frozen=True)
class GStudyResult(DictResult):
    """Variance components of one design, one per effect, the residual last.

    Attributes
    ----------
    design : the design in Brennan's notation.
    effects : component names (Brennan's notation with the facet names; ``residual`` last).
    facets_of : the facets of each effect (the residual: every facet).
    sigma2 : the estimates, every one ≥ 0 (moment estimates truncated at 0; REML
        constrained to ≥ 0).
    sigma2_raw : before truncation (REML: the same as ``sigma2``).
    sigma2_moments : the unbiased moment estimates behind the intervals (ANOVA when
        balanced, Henderson III otherwise), untruncated.
    truncated : the estimate is 0 because it was negative (moments) or at the boundary
        (REML).
    ci_low, ci_high : the ``ci_method`` interval of each σ², clipped at 0 and at
        ``variance_bound``; when the estimate is not the mean squares' own (REML, Henderson I)
        and falls outside it, the interval is widened to contain it.
    detected : ``ci_low > 0``: the interval excludes 0.
    share : σ² / Σσ² for detected components, NaN for components not detected.
    share_estimate : σ² / Σσ² for every component (they sum to 1; what the D study uses).
    total_variance : Σσ², the variance of one score.
    ms, df : the mean square behind each component (its own effect's) and its df.
    ms_coefficients : C with σ̂²_moments = C · ms (rows: components; columns: mean squares).
    ems : the expected mean squares, E[ms] = ems · σ² (C⁻¹).
    n_levels : levels of each effect in the data (the residual: the number of scores).
    mean : the estimand, Σ a_i y_i (see ``estimand``).
    estimand : ``"mean of <facet> means"`` or ``"grand mean"``.
    mean_of : the facet whose level means the estimand averages (None: the grand mean).
    mean_coefficients : c_α with Var(mean) = Σ_α c_α σ²(α) for the design that ran.
    sizes : per facet, levels per level of the facets it is nested in (mean if unbalanced).
    nesting : per facet, the facets it is nested in.
    replicates : scores per cell (mean if unbalanced); 1 when the top effect is confounded.
    residual_includes : the top effect the residual is confounded with (one score per
        cell), or None.
    fixed : the fixed facets.
    method : ``"anova"``, ``"reml"``, ``"henderson1"`` or ``"henderson3"``.
    ms_method : ``"anova"`` or ``"henderson3"`` (the mean squares of the intervals).
    ci_method : ``"mls"`` or ``"satterthwaite"``.
    balanced : the design is balanced.
    n_obs, n_cells : scores and design cells used.
    confidence : the intervals' two-sided level.
    converged : REML converged (always True for moment methods).
    warnings : dropped components, truncations, approximations, upper ends cut.
    variance_bound : (b − a)²/4, the largest variance a score in its scale [a, b] can have
        (:func:`evalnoise.stats.shares.max_variance`; 0.25 for scores in [0, 1]; inf for a
        scale not known): no interval's upper end exceeds it (unless the estimate does).
    ci_high_cut : the components whose interval's upper end was cut to ``variance_bound``.
    """

    design: str
    effects: tuple[str, ...]
    facets_of: tuple[tuple[str, ...], ...]
    sigma2: np.ndarray
    sigma2_raw: np.ndarray
    sigma2_moments: np.ndarray
    truncated: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    detected: np.ndarray
    share: np.ndarray
    share_estimate: np.ndarray
    total_variance: float
    ms: np.ndarray
    df: np.ndarray
    ms_coefficients: np.ndarray
    ems: np.ndarray
    n_levels: np.ndarray
    mean: float
    estimand: str
    mean_of: str | None
    mean_coefficients: np.ndarray
    sizes: dict[str, float]
    nesting: dict[str, tuple[str, ...]]
    replicates: float
    residual_includes: str | None
    fixed: tuple[str, ...]
    method: str
    ms_method: str
    ci_method: str
    balanced: bool
    n_obs: int
    n_cells: int
    confidence: float
    converged: bool = True
    warnings: tuple[str, ...] = field(default=())
    variance_bound: float = math.inf
    ci_high_cut: tuple[str, ...] = field(default=())

    def index(self, effect: str) -> int:
        """Position of a component by name."""
        try:
            return self.effects.index(effect)
        except ValueError:
            raise KeyError(f"no component {effect!r}; the components are {self.effects}") from None

    def __getitem__(self, effect: str) -> float:
        """The estimate of one component, by name."""
        return float(self.sigma2[self.index(effect)])

    def component(self, effect: str) -> dict[str, Any]:
        """One component's row of :meth:`to_frame` as a dict."""
        return self.to_frame().iloc[self.index(effect)].to_dict()

    def to_frame(self) -> pd.DataFrame:
        """One row per component: estimate, interval, detection, share, df, levels."""
        return pd.DataFrame(
            {
                "component": list(self.effects),
                "sigma2": self.sigma2,
                "ci_low": self.ci_low,
                "ci_high": self.ci_high,
                "detected": self.detected,
                "share": self.share,
                "share_estimate": self.share_estimate,
                "truncated": self.truncated,
                "sigma2_raw": self.sigma2_raw,
                "sigma2_moments": self.sigma2_moments,
                "ms": self.ms,
                "df": self.df,
                "n_levels": self.n_levels,
                "mean_coefficient": self.mean_coefficients,
            }
        )

    def _record(self) -> dict[str, Any]:
        """``to_dict()``'s shape: the settings, then ``components``, one record per component
        (:meth:`to_frame`'s rows with the component's facets)."""
        out = {
            k: getattr(self, k)
            for k in (
                "design",
                "method",
                "ms_method",
                "ci_method",
                "confidence",
                "balanced",
                "n_obs",
                "n_cells",
                "mean",
                "estimand",
                "mean_of",
                "total_variance",
                "sizes",
                "nesting",
                "replicates",
                "residual_includes",
                "fixed",
                "converged",
                "variance_bound",
                "ci_high_cut",
            )
        }
        frame = self.to_frame()
        out["components"] = [
            row | {"facets": list(f)}
            for row, f in zip(frame.to_dict(orient="records"), self.facets_of, strict=True)
        ]
        out["warnings"] = list(self.warnings)
        return out


def _drop(cd: CodedDesign, drop: Sequence[int]) -> CodedDesign:
    keep = [k for k in range(len(cd.effects)) if k not in set(drop)]
    return dataclasses.replace(
        cd,
        effects=tuple(cd.effects[k] for k in keep),
        names=tuple(cd.names[k] for k in keep),
        cell_codes=tuple(cd.cell_codes[k] for k in keep),
        n_levels=tuple(cd.n_levels[k] for k in keep),
    )


def _mean_weights(cd: CodedDesign, mean_of: str | None) -> tuple[np.ndarray, str]:
    """Per-cell weight a_c of each score in the estimand Σ a_i y_i."""
    if mean_of is None:
        return np.full(cd.n_cells, 1.0 / cd.n_obs), "grand mean"
    if mean_of not in cd.design.names:
        raise ValueError(f"mean_of={mean_of!r} is not a facet of the design")
    codes, levels = cd.effect_codes((mean_of, *cd.design.ancestors(mean_of)))
    per_level = np.bincount(codes, weights=cd.count, minlength=levels)
    return 1.0 / (levels * per_level[codes]), f"mean of {mean_of} means"


def _identified(cd: CodedDesign, design: Design, notes: list[str]) -> tuple[CodedDesign, Any]:
    """The design without the components it cannot identify, and its mean squares: a
    reduction of rank 0 (Henderson III), or an ANOVA df of 0 when balanced (where the
    Henderson III mean squares are the ANOVA ones and need not be computed)."""
    while True:
        if cd.balanced:
            msq = anova_mean_squares(cd)
            dropped = [k for k in range(len(cd.effects)) if not msq.df[k] > 0]
        else:
            msq, dropped = henderson3_mean_squares(cd)
        if not dropped:
            break
        for k in dropped:
            notes.append(
                f"component {cd.names[k]!r} is not estimable from this design (a facet with "
                "one level, or confounded with other facets) and is dropped"
            )
        cd = _drop(cd, dropped)
    if cd.top_confounded:
        notes.append(
            f"one score per cell: the residual includes the "
            f"{design.effect_name(design.names)!r} interaction"
        )
    return cd, msq


def _fit(
    cd: CodedDesign,
    m: int,
    method: str,
    moments: np.ndarray,
    constant: bool,
    notes: list[str],
) -> tuple[str, np.ndarray, bool]:
    """The raw estimates by ``method`` (ANOVA / Henderson III: the moment estimates;
    Henderson I; REML, falling back to Henderson III where the restricted likelihood has no
    maximum or the design is numerically singular), the method used and whether it
    converged."""
    converged = True
    if method in ("anova", "henderson3"):
        raw = moments.copy()
    elif method == "henderson1":
        a_mat, r_vec = henderson1_t_terms(cd)
        raw = np.linalg.solve(a_mat, r_vec) if not constant else np.zeros(m + 1)
    else:  # reml
        flat_cells = cd.n_obs > cd.n_cells and cd.within_ss <= 1e-12 * max(cd.sum_sq, 1.0)
        if constant:
            raw = np.zeros(m + 1)
        elif flat_cells:
            # replicated cells, every one's scores equal: W = 0 on N − C > 0 df, so the
            # restricted likelihood grows without bound as σ²_e → 0 and has no maximum
            notes.append(
                "every cell's scores are equal (no within-cell variance), where the "
                "restricted likelihood has no maximum: Henderson III estimates instead of REML"
            )
            method, raw = "henderson3", moments.copy()
        else:
            try:
                fit = reml(cd, range(m), np.maximum(moments, 0.0))
                raw, converged = fit.sigma2, fit.converged
            except np.linalg.LinAlgError:  # numerically singular at every point tried
                raw, converged = np.zeros(m + 1), False
                fit = None
            if fit is None or (not converged and not np.all(np.isfinite(raw))):
                notes.append("REML failed (a numerically singular design): Henderson III estimates")
                method, raw, converged = "henderson3", moments.copy(), True
            elif not raw[-1] > 1e-6 * max(float(raw.sum()), 1e-300):
                # no residual variance (e.g. every cell's 0/1 scores equal): the restricted
                # likelihood grows without bound as σ²_e → 0, so it has no maximum
                notes.append(
                    "the residual variance is 0, where the restricted likelihood has no "
                    "maximum: Henderson III estimates instead of REML"
                )
                method, raw, converged = "henderson3", moments.copy(), True
            elif not converged:
                notes.append(f"REML did not converge: {fit.message}")
    return method, raw, converged


def _intervals(
    coef: np.ndarray,
    msq: Any,
    m: int,
    ci_method: str,
    alpha: float,
    constant: bool,
    method: str,
    sigma2: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Each component's interval from the mean squares: MLS, or Satterthwaite (MLS's upper
    end where Satterthwaite's is undefined), never below 0."""
    lo = np.zeros(m + 1)
    hi = np.zeros(m + 1)
    if not constant:
        for k in range(m + 1):
            if ci_method == "mls":
                lo[k], hi[k] = mls_interval(coef[k], msq.ms, msq.df, alpha)
            else:
                lo[k], hi[k] = satterthwaite_interval(coef[k], msq.ms, msq.df, alpha)
                if not np.isfinite(lo[k]):
                    lo[k], hi[k] = 0.0, mls_interval(coef[k], msq.ms, msq.df, alpha)[1]
    lo, hi = np.maximum(lo, 0.0), np.maximum(hi, 0.0)
    if method in ("reml", "henderson1"):
        # the interval comes from the mean squares, the estimate from another estimator: an
        # estimate outside it widens it (a wider interval only lowers false detections)
        lo, hi = np.minimum(lo, sigma2), np.maximum(hi, sigma2)
    return lo, hi


def _mean_coefficients(cd: CodedDesign, weights: np.ndarray, m: int) -> np.ndarray:
    """The coefficient of each component in the variance of the weighted mean score:
    Σ_levels (Σ_cell w·n)² per effect, Σ n·w² for the residual."""
    mean_coef = np.empty(m + 1)
    for k in range(m):
        sums = np.bincount(cd.cell_codes[k], weights=cd.count * weights, minlength=cd.n_levels[k])
        mean_coef[k] = float(sums @ sums)
    mean_coef[m] = float(np.sum(cd.count * weights**2))
    return mean_coef


def _estimate_notes(
    names: list[str],
    raw: np.ndarray,
    truncated: np.ndarray,
    constant: bool,
    method: str,
    balanced: bool,
    notes: list[str],
) -> None:
    """The notes on the estimates: each truncated at 0 (or at REML's boundary), and the
    approximation the intervals make on an unbalanced design."""
    for name, v, t in zip(names, raw, truncated, strict=True):
        if t and not constant:
            if method == "reml":
                notes.append(f"the {name} component is at the boundary 0 (REML)")
            else:
                notes.append(f"the {name} estimate {v:.3g} is negative and is truncated to 0")
    if not balanced and method != "reml":
        notes.append(
            f"unbalanced design: {method} estimates; the intervals use Henderson III mean "
            "squares as if they were independent scaled chi-squares (an approximation)"
        )
    elif not balanced:
        notes.append(
            "unbalanced design: REML estimates; the intervals use Henderson III mean squares "
            "as if they were independent scaled chi-squares (an approximation)"
        )


def _bounded(
    y: np.ndarray,
    score_range: tuple[float, float] | None,
    sigma2: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    names: list[str],
    notes: list[str],
) -> tuple[np.ndarray, np.ndarray, float, tuple[str, ...]]:
    """The intervals cut at the largest variance a score range allows, (b − a)²/4 (scores
    in [0, 1] when they all are), an estimate above it staying inside its own interval; the
    bound and the components cut."""
    finite = y[np.isfinite(y)]
    if score_range is None and finite.size and finite.min() >= 0.0 and finite.max() <= 1.0:
        score_range = (0.0, 1.0)  # the project's scores: 0/1 or partial credit
    bound = max_variance(score_range=score_range) if score_range is not None else math.inf
    # an estimate above the bound (a few scores) stays inside its own interval
    ceiling = np.maximum(bound, sigma2)
    over = hi > ceiling
    cut = tuple(n for n, o in zip(names, over, strict=True) if o)
    if cut:
        notes.append(
            f"upper end of the interval of {', '.join(cut)} cut to {bound:.4g}, the largest "
            f"variance of a score in [{score_range[0]:g}, {score_range[1]:g}] ((high − low)²/4)"
        )
    hi = np.minimum(hi, ceiling)
    lo = np.minimum(lo, hi)
    return lo, hi, bound, cut


def gstudy(
    scores: Any,
    facets: Mapping[str, Any] | pd.DataFrame,
    design: Design | Sequence[str],
    *,
    method: Method = "auto",
    ci_method: CIMethod = "mls",
    confidence: float = 0.95,
    fixed: Sequence[str] = (),
    mean_of: str | None = None,
    score_range: tuple[float, float] | None = None,
) -> GStudyResult:
    """Estimate every variance component of ``design`` from ``scores``, with intervals.

    Parameters
    ----------
    scores : one score per row: 0/1, partial credit or any real number; NaN rows are left
        out.
    facets : each facet's label per row (a mapping of arrays or a DataFrame with a column
        per facet). A nested facet's labels need only be unique within its parent (trial
        index 0…T−1 in every task).
    design : a :class:`~evalnoise.stats.gdesign.Design`, or facet specifications
        (``["task", "prompt", "judge:prompt"]``, see
        :func:`~evalnoise.stats.gdesign.parse_facets`), all effects fitted.
    method : ``"auto"`` (ANOVA when balanced, REML otherwise), ``"anova"`` (balanced
        designs only), ``"reml"``, ``"henderson1"`` (random models only) or
        ``"henderson3"``.
    ci_method : ``"mls"`` (default) or ``"satterthwaite"``.
    confidence : two-sided level of the intervals.
    fixed : facets to treat as fixed (with facet specifications).
    mean_of : the facet whose level means are averaged into the estimand (``"task"``: the
        benchmark score, every task weighing 1); None: the grand mean of the scores.
    score_range : the scale's (low, high); default (0, 1) when every score lies in [0, 1]
        (0/1 and partial credit), else none. Interval upper ends are cut at (high − low)²/4,
        the largest variance such scores can have (Popoviciu; never below the estimate
        itself), and the cut is said in ``warnings``.

    Returns
    -------
    GStudyResult

    Raises
    ------
    ValueError
        bad input (lengths, missing labels, unknown facets or options); its subclass
        :class:`NotEstimable` when the data are too few for the design.

    Notes
    -----
    A component whose Henderson III reduction has rank 0 is not estimable from the data (a
    facet with one level, a facet confounded with others such as hosts each used in one
    time block only): it is dropped with a warning and its variance is in the others.
    """
    conf = check_probability(confidence)
    alpha = 1.0 - conf
    if not isinstance(design, Design):
        design = parse_facets(list(design), fixed=fixed)
    elif fixed:
        raise ValueError("give fixed facets in the Design (Facet(fixed=True))")
    if method not in ("auto", "anova", "reml", "henderson1", "henderson3"):
        raise ValueError(f"unknown method {method!r}")
    if ci_method not in ("mls", "satterthwaite"):
        raise ValueError(f"unknown ci_method {ci_method!r}")
    if isinstance(facets, pd.DataFrame):
        facets = {c: facets[c].to_numpy() for c in design.names}
    cd = code_design(scores, facets, design)
    notes: list[str] = []
    y = np.asarray(scores, dtype=float).ravel()
    if np.isnan(y).any():
        notes.append(f"{int(np.isnan(y).sum())} row(s) without a score were left out")
    if cd.n_obs - cd.fixed_columns.shape[1] < 1:
        raise NotEstimable("too few scores for the fixed effects and a residual")

    cd, msq = _identified(cd, design, notes)
    m = len(cd.effects)
    if not msq.df[m] > 0:
        raise NotEstimable(
            "no residual degrees of freedom: the design has as many parameters as scores"
        )

    balanced = cd.balanced
    if method == "auto":
        method = "anova" if balanced else "reml"
    if method == "anova" and not balanced:
        raise ValueError(
            "method='anova' needs a balanced design (every combination of facet levels with "
            "the same number of scores); use 'reml' or 'henderson3'"
        )
    moments = msq.estimates()
    coef = msq.coefficients()
    constant = bool(np.all(msq.ms[np.isfinite(msq.ms)] == 0.0))
    if constant:
        notes.append("every score is equal: there is no variance to split")
        moments = np.zeros(m + 1)

    method, raw, converged = _fit(cd, m, method, moments, constant, notes)
    sigma2 = np.maximum(raw, 0.0)
    truncated = raw <= 0.0
    if constant:
        truncated = np.zeros(m + 1, dtype=bool)
    names = [*cd.names, RESIDUAL]
    _estimate_notes(names, raw, truncated, constant, method, balanced, notes)

    lo, hi = _intervals(coef, msq, m, ci_method, alpha, constant, method, sigma2)
    lo, hi, bound, cut = _bounded(y, score_range, sigma2, lo, hi, names, notes)
    detected = lo > 0.0
    total = float(sigma2.sum())
    with np.errstate(invalid="ignore", divide="ignore"):
        share_est = sigma2 / total if total > 0 else np.full(m + 1, np.nan)
    share = np.where(detected, share_est, np.nan)

    weights, estimand = _mean_weights(cd, mean_of)
    mean_coef = _mean_coefficients(cd, weights, m)
    mean = float(np.sum(cd.total * weights))

    all_facets = design.canonical(design.names)
    return GStudyResult(
        design=design.describe(),
        effects=tuple(names),
        facets_of=(*cd.effects, all_facets),
        sigma2=sigma2,
        sigma2_raw=raw,
        sigma2_moments=moments,
        truncated=truncated,
        ci_low=lo,
        ci_high=hi,
        detected=detected,
        share=share,
        share_estimate=share_est,
        total_variance=total,
        ms=msq.ms,
        df=msq.df,
        ms_coefficients=coef,
        ems=msq.ems,
        n_levels=np.array([*cd.n_levels, cd.n_obs], dtype=np.int64),
        mean=mean,
        estimand=estimand,
        mean_of=mean_of,
        mean_coefficients=mean_coef,
        sizes=dict(cd.sizes),
        nesting={n: design.canonical(design.ancestors(n)) for n in design.names},
        replicates=1.0 if cd.top_confounded else cd.replicates,
        residual_includes=design.effect_name(design.names) if cd.top_confounded else None,
        fixed=tuple(f.name for f in design.facets if f.fixed),
        method=method,
        ms_method=msq.method,
        ci_method=ci_method,
        balanced=balanced,
        n_obs=cd.n_obs,
        n_cells=cd.n_cells,
        confidence=conf,
        converged=converged,
        warnings=tuple(notes),
        variance_bound=float(bound),
        ci_high_cut=cut,
    )
