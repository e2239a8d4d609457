"""The D-study: the error of the benchmark score under the design that ran and under others.

From the components of a G-study (:func:`evalnoise.stats.gstudy.gstudy`), or components
given by hand (:func:`variance_model`):

* :func:`total_error` — the SE of the benchmark score counting every facet that varied,
  Var(μ̂) = Σ_α c_α σ²(α) for the design that ran (``GStudyResult.mean_coefficients``),
  with a Satterthwaite t interval, beside the part the task-clustered SE sees (the
  components that contain the task facet) and the part it misses (those that do not: prompt
  variants, judges, time blocks, hosts shared by every task).
* :func:`dstudy` — the same variance for balanced designs of any sizes (Brennan 2001, ch. 4:
  each component divided by the number of levels of its effect in the D-study design,
  σ²(X̄) = Σ_α σ²(α)/π(α), π(α) the product of the D-study sample sizes n' of the facets in
  α, times the replicates for the residual), and what each design costs.

The search for the best design within a budget, or the cheapest reaching a target SE, is
:mod:`evalnoise.stats.optimal_design`.

**Costs** are per level of each facet's own effect — the facet with the facets it is nested
in — so a cost per ``trial`` nested in task is paid for every trial of every task, a cost
per ``prompt`` once per prompt variant, a cost per ``host`` once per host; the replicate's
cost (a judge sample, a trial when trials are the replicates) is paid per score, and
``observation`` is a synonym for it. cost(n') = Σ_f c_f Π_{g ∈ {f} ∪ ancestors(f)} n'_g.

References
----------
Brennan, R. L. (2001). *Generalizability Theory*. Springer: ch. 4 (D studies: sample sizes,
error variances of means), ch. 6 (Satterthwaite's procedure).
Cochran, W. G. (1977). *Sampling Techniques*, 3rd ed. Wiley: ch. 10 (optimum allocation in
multi-stage sampling).
Satterthwaite, F. E. (1946). An approximate distribution of estimates of variance components.
*Biometrics Bulletin* 2(6): 110–114.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._checks import check_finite_number, check_probability
from ._distributions import t_ppf
from ._results import DictResult, plain
from .gdesign import RESIDUAL, Design, parse_facets
from .gstudy import GStudyResult

__all__ = [
    "DStudyResult",
    "TotalErrorResult",
    "VarianceModel",
    "dstudy",
    "model_of",
    "total_error",
    "variance_model",
]

#: the cost key that means "per score" (the replicate)
OBSERVATION = "observation"


# --- the model -----------------------------------------------------------------------------


@dataclass(frozen=True)
class VarianceModel(DictResult):
    """Variance components with the structure a D study needs.

    Attributes
    ----------
    effects : component names, the residual last.
    facets_of : each component's facets (the residual: every facet).
    sigma2 : the components (≥ 0).
    facets : the facets, in order; ``nesting`` maps each to its ancestors.
    fixed : fixed facets (their sizes cannot change in a D study).
    sizes : the sizes of the design that ran (levels per level of the ancestors).
    replicate : the name of a score within a cell (its count multiplies the residual's
        divisor when ``replicated``).
    replicated : the residual is the within-cell variance (cells held several scores);
        False when the residual is confounded with the top interaction.
    replicates : scores per cell in the design that ran.
    """

    effects: tuple[str, ...]
    facets_of: tuple[tuple[str, ...], ...]
    sigma2: np.ndarray
    facets: tuple[str, ...]
    nesting: Mapping[str, tuple[str, ...]]
    fixed: tuple[str, ...]
    sizes: Mapping[str, float]
    replicate: str
    replicated: bool
    replicates: float

    def own(self, facet: str) -> tuple[str, ...]:
        """The facet with the facets it is nested in: the unit its cost is paid per."""
        return (facet, *self.nesting.get(facet, ()))


def model_of(g: GStudyResult, replicate: str = "replicate") -> VarianceModel:
    """The :class:`VarianceModel` of a G study (its components as estimated, ≥ 0)."""
    return VarianceModel(
        effects=g.effects,
        facets_of=g.facets_of,
        sigma2=np.asarray(g.sigma2, dtype=float),
        facets=tuple(g.sizes),
        nesting=dict(g.nesting),
        fixed=g.fixed,
        sizes=dict(g.sizes),
        replicate=replicate,
        replicated=g.residual_includes is None,
        replicates=float(g.replicates),
    )


def variance_model(
    design: Design | Sequence[str],
    sigma2: Mapping[str, float],
    *,
    replicate: str = "replicate",
    replicated: bool = True,
    sizes: Mapping[str, float] | None = None,
    replicates: float = 1.0,
) -> VarianceModel:
    """Components given by hand, named as :func:`~evalnoise.stats.gstudy.gstudy` names
    them (``{"task": .04, "trial:task": .16, "residual": .16}``); effects of the design not
    given are 0.

    ``replicated``: the residual is a within-cell variance of ``replicate`` scores (judge
    samples of a trial); False: the residual is the top interaction (one score per cell).
    """
    if not isinstance(design, Design):
        design = parse_facets(list(design))
    effects = list(design.random_effects())
    top = design.canonical(design.names)
    if not replicated and top in effects:
        effects.remove(top)
    names = [design.effect_name(e) for e in effects]
    unknown = set(sigma2) - {*names, RESIDUAL}
    if unknown:
        raise ValueError(f"no effect {sorted(unknown)} in this design; its effects: {names}")
    if RESIDUAL not in sigma2:
        raise ValueError("give the residual variance ('residual')")
    values = []
    for n in [*names, RESIDUAL]:
        values.append(check_finite_number(sigma2.get(n, 0.0), f"sigma2[{n!r}]"))
    return VarianceModel(
        effects=(*names, RESIDUAL),
        facets_of=(*effects, top),
        sigma2=np.array(values),
        facets=design.names,
        nesting={n: design.canonical(design.ancestors(n)) for n in design.names},
        fixed=tuple(f.name for f in design.facets if f.fixed),
        sizes=dict(sizes or dict.fromkeys(design.names, 1.0)),
        replicate=replicate,
        replicated=replicated,
        replicates=float(replicates),
    )


def as_variance_model(model: GStudyResult | VarianceModel) -> VarianceModel:
    """The variance model of a G study's result (:func:`model_of`), or ``model`` itself."""
    return model_of(model) if isinstance(model, GStudyResult) else model


# --- the design that ran -------------------------------------------------------------------


@dataclass(frozen=True)
class TotalErrorResult(DictResult):
    """The benchmark score's SE counting every facet that varied.

    Attributes
    ----------
    mean : the estimand of the G study (the mean of task means, as a rule).
    variance, se : Var(μ̂) = Σ_α c_α σ̂²(α) and its root (the total-error SE).
    df : Satterthwaite degrees of freedom of ``variance`` (from the mean squares).
    ci_low, ci_high : mean ∓ t_{df} · se.
    components : the components, the residual last.
    contribution : c_α σ̂²(α) of each component; ``share_of_error`` their shares.
    in_clustered : the component contains the cluster facet, so a cluster-robust SE (which
        treats the clusters as the only sampled units) counts it.
    variance_clustered_part, variance_missed : Σ of ``contribution`` over the components the
        clustered SE counts, and over those it does not.
    cluster : the cluster facet (``task``).
    se_clustered : the task-clustered SE given by the caller (None if not given), and
        ``ci_clustered_low``/``ci_clustered_high`` its normal interval.
    se_ratio : se / se_clustered.
    confidence : the intervals' level.
    warnings : notes.
    """

    mean: float
    variance: float
    se: float
    df: float
    ci_low: float
    ci_high: float
    components: tuple[str, ...]
    contribution: np.ndarray
    share_of_error: np.ndarray
    in_clustered: np.ndarray
    variance_clustered_part: float
    variance_missed: float
    cluster: str | None
    se_clustered: float | None
    ci_clustered_low: float | None
    ci_clustered_high: float | None
    se_ratio: float | None
    confidence: float
    warnings: tuple[str, ...] = field(default=())


def total_error(
    g: GStudyResult,
    *,
    cluster: str | None = None,
    se_clustered: float | None = None,
    confidence: float | None = None,
) -> TotalErrorResult:
    r"""The total-error SE of the G study's estimand under the design that ran.

    .. math::

        \widehat{\mathrm{Var}}(\hat\mu) = \sum_\alpha c_\alpha \hat\sigma^2(\alpha),\qquad
        c_\alpha = \sum_{l \in \alpha}\Big(\sum_{i\in l} a_i\Big)^2

    (``g.mean_coefficients``; for a balanced design c_α = 1/π(α), Brennan 2001 ch. 4). Its
    degrees of freedom are Satterthwaite's (1946) for the estimate written in the mean
    squares, V̂ = Σ_j w_j MS_j with w = c'C (C: ``g.ms_coefficients``),
    ν = V̂² / Σ_j (w_j MS_j)²/df_j, and the interval is μ̂ ∓ t_{1−α/2;ν}·√V̂. With one
    task facet and replicates it is the task-clustered t interval (ν = G − 1).

    The clustered SE counts the components that contain ``cluster`` (default: the facet the
    estimand averages over, ``g.mean_of``, the task as a rule): they differ between tasks;
    the others (e.g. a prompt variant's main effect, shared by every task) it treats as
    fixed: ``variance_missed`` is what it leaves out.
    """
    conf = g.confidence if confidence is None else check_probability(confidence)
    contrib = np.asarray(g.mean_coefficients) * np.asarray(g.sigma2)
    var = float(contrib.sum())
    w = np.asarray(g.mean_coefficients) @ np.asarray(g.ms_coefficients)
    terms = w * np.asarray(g.ms)
    denom = float(np.nansum(terms**2 / np.asarray(g.df)))
    notes: list[str] = []
    if denom > 0 and var > 0:
        df = max(var**2 / denom, 1.0)
    else:
        df = math.inf
    se = math.sqrt(var)
    q = float(t_ppf(0.5 + conf / 2, df)) if math.isfinite(df) else float(t_ppf(0.5 + conf / 2, 1e9))
    if cluster is None:
        cluster = g.mean_of
    if cluster is not None and cluster not in g.sizes:
        raise ValueError(f"cluster {cluster!r} is not a facet of the G study")
    inside = np.array([cluster is not None and cluster in f for f in g.facets_of])
    inside[-1] = True  # the residual differs between tasks
    with np.errstate(invalid="ignore", divide="ignore"):
        share = contrib / var if var > 0 else np.full(contrib.size, np.nan)
    cl_lo = cl_hi = ratio = None
    if se_clustered is not None:
        z = float(t_ppf(0.5 + conf / 2, 1e9))
        cl_lo, cl_hi = g.mean - z * se_clustered, g.mean + z * se_clustered
        ratio = se / se_clustered if se_clustered > 0 else math.nan
    if var == 0:
        notes.append("every component is 0: the total-error SE is 0")
    return TotalErrorResult(
        mean=float(g.mean),
        variance=var,
        se=se,
        df=float(df),
        ci_low=float(g.mean - q * se),
        ci_high=float(g.mean + q * se),
        components=g.effects,
        contribution=contrib,
        share_of_error=share,
        in_clustered=inside,
        variance_clustered_part=float(contrib[inside].sum()),
        variance_missed=float(contrib[~inside].sum()),
        cluster=cluster,
        se_clustered=None if se_clustered is None else float(se_clustered),
        ci_clustered_low=cl_lo,
        ci_clustered_high=cl_hi,
        se_ratio=ratio,
        confidence=conf,
        warnings=tuple(notes),
    )


# --- projections ---------------------------------------------------------------------------


def grid_variance(model: VarianceModel, sizes: Mapping[str, np.ndarray], reps: np.ndarray):
    """Σ_α σ²(α)/π(α) for arrays of sizes (broadcast), in the components' order."""
    var = 0.0
    for s2, facets, name in zip(model.sigma2, model.facets_of, model.effects, strict=True):
        div = 1.0
        for f in facets:
            div = div * sizes[f]
        if name == RESIDUAL and model.replicated:
            div = div * reps
        var = var + s2 / div
    return var


def grid_cost(
    model: VarianceModel,
    sizes: Mapping[str, np.ndarray],
    reps: np.ndarray,
    costs: Mapping[str, float],
):
    """Σ_f c_f · (levels of f's own effect) + c_replicate · (scores)."""
    total = 0.0
    for key, c in costs.items():
        if c == 0:
            continue
        if key in (model.replicate, OBSERVATION):
            units = reps if model.replicated else 1.0
            for f in model.facets:
                units = units * sizes[f]
        else:
            units = 1.0
            for f in model.own(key):
                units = units * sizes[f]
        total = total + c * units
    return total


def check_costs(model: VarianceModel, costs: Mapping[str, float] | None) -> dict[str, float]:
    """``costs`` checked against ``model``: each key a facet, the replicate or the
    observation, each cost finite and >= 0; ``{}`` for None. Raises ValueError naming the key."""
    if costs is None:
        return {}
    out = {}
    for key, c in costs.items():
        if key not in (*model.facets, model.replicate, OBSERVATION):
            raise ValueError(
                f"cost of {key!r}: not a facet ({', '.join(model.facets)}), "
                f"{model.replicate!r} or {OBSERVATION!r}"
            )
        out[key] = check_finite_number(c, f"cost of {key!r}")
    return out


@dataclass(frozen=True)
class DStudyResult(DictResult):
    """Projected error of the benchmark score for a grid of designs.

    Attributes
    ----------
    facets : the facets (columns of ``sizes``).
    sizes : one row per design: n' of each facet (levels per level of its ancestors).
    replicates : scores per cell of each design.
    variance, se : Σ_α σ²(α)/π(α) and its root.
    cost : the design's cost (NaN without costs).
    components : the components; ``contribution`` (designs × components) σ²(α)/π(α).
    """

    facets: tuple[str, ...]
    sizes: np.ndarray
    replicates: np.ndarray
    variance: np.ndarray
    se: np.ndarray
    cost: np.ndarray
    components: tuple[str, ...]
    contribution: np.ndarray

    def to_records(self) -> list[dict[str, Any]]:
        """One dict per design (JSON-ready)."""
        return [
            {
                **{f: plain(v) for f, v in zip(self.facets, row, strict=True)},
                "replicates": plain(r),
                "variance": plain(v),
                "se": plain(s),
                "cost": plain(c),
            }
            for row, r, v, s, c in zip(
                self.sizes, self.replicates, self.variance, self.se, self.cost, strict=True
            )
        ]


def dstudy(
    model: GStudyResult | VarianceModel,
    sizes: Mapping[str, float | Sequence[float]] | None = None,
    *,
    replicates: float | Sequence[float] | None = None,
    costs: Mapping[str, float] | None = None,
) -> DStudyResult:
    r"""Error variance of the benchmark score for D-study designs.

    Parameters
    ----------
    model : a G study or a :class:`VarianceModel`.
    sizes : n' for facets to change (a number, or a sequence to tabulate); the others stay
        as they ran. Every combination is tabulated.
    replicates : scores per cell (default: as ran).
    costs : per level of each facet's own effect (see the module docstring).

    Notes
    -----
    For a balanced D-study design with n' levels of each facet (per level of the facets it
    is nested in) and r' replicates,

    .. math::

        \sigma^2(\bar X) = \sum_\alpha \frac{\sigma^2(\alpha)}{\pi(\alpha)},\qquad
        \pi(\alpha) = \prod_{f \in \alpha} n'_f\ (\times r' \text{ for the residual}),

    the error variance of a mean over every facet (Brennan 2001, ch. 4). A fixed facet keeps
    its size (its levels are the universe).
    """
    m = as_variance_model(model)
    cst = check_costs(m, costs)
    sizes = dict(sizes or {})
    for f in sizes:
        if f not in m.facets:
            raise ValueError(f"{f!r} is not a facet ({', '.join(m.facets)})")
        if f in m.fixed:
            raise ValueError(f"{f!r} is a fixed facet: its size cannot change")
    axes = [np.atleast_1d(np.asarray(sizes.get(f, m.sizes[f]), dtype=float)) for f in m.facets]
    axes.append(np.atleast_1d(np.asarray(m.replicates if replicates is None else replicates,
                                         dtype=float)))  # fmt: skip
    for a in axes:
        if np.any(a < 1):
            raise ValueError("sizes and replicates must be ≥ 1")
    mesh = np.meshgrid(*axes, indexing="ij")
    flat = [x.ravel() for x in mesh]
    grid = dict(zip(m.facets, flat[:-1], strict=True))
    reps = flat[-1]
    contrib = []
    for s2, facets, name in zip(m.sigma2, m.facets_of, m.effects, strict=True):
        div = np.ones_like(reps)
        for f in facets:
            div = div * grid[f]
        if name == RESIDUAL and m.replicated:
            div = div * reps
        contrib.append(s2 / div)
    contrib_arr = np.column_stack(contrib)
    var = grid_variance(m, grid, reps) * np.ones_like(reps)
    cost = grid_cost(m, grid, reps, cst) * np.ones_like(reps) if cst else np.full(reps.size, np.nan)
    return DStudyResult(
        facets=m.facets,
        sizes=np.column_stack(flat[:-1]),
        replicates=reps,
        variance=var,
        se=np.sqrt(var),
        cost=cost,
        components=m.effects,
        contribution=contrib_arr,
    )
