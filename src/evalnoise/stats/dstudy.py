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
* :func:`best_design` and :func:`cheapest_design` — the design of least variance within a
  budget, and the cheapest design reaching a target SE, by exhaustive search over the sizes of
  every facet but one (the *free* facet, the task as a rule, whose best size has a closed
  form because the variance is a + b/n and the cost c₀ + c₁·n in its size n).

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
from typing import Any, Literal

import numpy as np

from ._checks import check_finite_number, check_probability
from ._distributions import t_ppf
from ._results import DictResult, plain
from .gdesign import RESIDUAL, Design, parse_facets
from .gstudy import GStudyResult

__all__ = [
    "DStudyResult",
    "DesignChoice",
    "DesignStatus",
    "OptimalDesignResult",
    "TotalErrorResult",
    "VarianceModel",
    "best_design",
    "cheapest_design",
    "dstudy",
    "model_of",
    "nested_optimum",
    "total_error",
    "variance_model",
]

#: the cost key that means "per score" (the replicate)
OBSERVATION = "observation"
# largest number of grid points searched at once (arrays of this many floats)
_MAX_GRID = 4_000_000

#: What bounded an optimal-design search (:attr:`OptimalDesignResult.status`).
DesignStatus = Literal["met", "pool_bound", "unreachable", "unaffordable"]


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


def _as_model(model: GStudyResult | VarianceModel) -> VarianceModel:
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


def _grid_variance(model: VarianceModel, sizes: Mapping[str, np.ndarray], reps: np.ndarray):
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


def _grid_cost(
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


def _check_costs(model: VarianceModel, costs: Mapping[str, float] | None) -> dict[str, float]:
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
    m = _as_model(model)
    cst = _check_costs(m, costs)
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
    var = _grid_variance(m, grid, reps) * np.ones_like(reps)
    cost = (
        _grid_cost(m, grid, reps, cst) * np.ones_like(reps) if cst else np.full(reps.size, np.nan)
    )
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


# --- optimal designs -----------------------------------------------------------------------


@dataclass(frozen=True)
class DesignChoice(DictResult):
    """One design: sizes per facet, replicates, its variance, SE and cost."""

    sizes: dict[str, int]
    replicates: int
    variance: float
    se: float
    cost: float


@dataclass(frozen=True)
class OptimalDesignResult(DictResult):
    """The best design found, and the best design for every point of the searched grid.

    Attributes
    ----------
    goal : ``"budget"`` (least variance within ``budget``) or ``"target_se"`` (least cost
        reaching ``target_se``).
    budget, target_se : the goal's number (the other is None).
    free : the facet whose size is solved for at each grid point.
    recommended : the best :class:`DesignChoice`, or None when no design qualifies.
    grid_facets : the facets searched over (the replicate included, under its name).
    grid : one row per grid point: the sizes of ``grid_facets``.
    n_free : the best size of the free facet at each grid point (0: none qualifies).
    variance, se, cost : of each grid point's best design (inf / NaN where none).
    costs : the costs used.
    warnings : the optimum on the edge of the searched grid, infeasible goals.
    status : what bounded the search (:data:`DesignStatus`): ``"met"`` — ``recommended``
        meets the goal and the cap on the free facet (``max_free``, the task pool) did not
        change it; ``"pool_bound"`` — the cap binds: without it the goal's best design would
        have ``free_needed`` levels of the free facet (the budget buys more, or the target
        needs more), and ``recommended`` is the best design within the cap — None for a
        target no design within it reaches, when ``closest`` is the design of least SE
        within it (ties: the cheaper); ``"unreachable"`` — no design within the searched
        sizes reaches the target, however many free levels (the components without the
        free facet exceed it); ``"unaffordable"`` — the budget buys no design.
    max_free : the cap on the free facet's size (None: none).
    free_needed : the free facet's size of the best design without the cap (``pool_bound``;
        None when unbounded).
    closest : see ``status``.
    """

    goal: str
    budget: float | None
    target_se: float | None
    free: str
    recommended: DesignChoice | None
    grid_facets: tuple[str, ...]
    grid: np.ndarray
    n_free: np.ndarray
    variance: np.ndarray
    se: np.ndarray
    cost: np.ndarray
    costs: dict[str, float]
    warnings: tuple[str, ...] = field(default=())
    status: DesignStatus = "met"
    max_free: int | None = None
    free_needed: int | None = None
    closest: DesignChoice | None = None

    def best_by(self, facet: str) -> dict[str, np.ndarray]:
        """For each searched value of ``facet``, the best grid point with it (same ordering
        as the recommendation): arrays ``value``, ``n_free``, every grid facet, ``variance``,
        ``se``, ``cost``."""
        j = self.grid_facets.index(facet)
        values = np.unique(self.grid[:, j])
        rows = []
        order = self._order()
        rank = np.empty(order.size, dtype=np.int64)
        rank[order] = np.arange(order.size)
        for v in values:
            idx = np.flatnonzero(self.grid[:, j] == v)
            rows.append(idx[np.argmin(rank[idx])])
        rows_arr = np.array(rows, dtype=np.int64)
        out = {"value": values, "n_free": self.n_free[rows_arr]}
        for i, f in enumerate(self.grid_facets):
            out[f] = self.grid[rows_arr, i]
        out |= {
            "variance": self.variance[rows_arr],
            "se": self.se[rows_arr],
            "cost": self.cost[rows_arr],
        }
        return out

    def _order(self) -> np.ndarray:
        """Grid points best first: least variance (budget) or cost (target), then more of the
        free facet, then fewer of the grid facets, the last one first."""
        keys = [self.grid[:, i] for i in range(self.grid.shape[1])]
        if self.goal == "budget":
            return np.lexsort((*keys, -self.n_free, self.variance))
        return np.lexsort((*keys, -self.n_free, self.variance, self.cost))


def _search_axes(
    m: VarianceModel,
    free: str,
    limits: Mapping[str, int | tuple[int, int]] | None,
    default_cap: int | Mapping[str, int],
) -> tuple[list[str], list[np.ndarray], list[bool]]:
    limits = dict(limits or {})
    names, axes, capped = [], [], []
    keys = [f for f in m.facets if f != free] + ([m.replicate] if m.replicated else [])
    for key in limits:
        if key not in keys:
            raise ValueError(f"limit for {key!r}: not a facet to search ({', '.join(keys)})")
    for f in keys:
        if f in m.fixed:
            continue
        if f in limits:
            lim = limits[f]
            lo, hi = (1, int(lim)) if np.isscalar(lim) else (int(lim[0]), int(lim[1]))
            by_default = False
        else:
            cap = default_cap.get(f, 64) if isinstance(default_cap, Mapping) else default_cap
            lo, hi, by_default = 1, int(cap), True
        if lo < 1 or hi < lo:
            raise ValueError(f"limits of {f!r} must satisfy 1 <= low <= high")
        names.append(f)
        axes.append(np.arange(lo, hi + 1, dtype=np.int64))
        capped.append(by_default)
    return names, axes, capped


def _shorten_to_budget(
    m: VarianceModel,
    cst: dict[str, float],
    free: str,
    names: list[str],
    axes: list[np.ndarray],
    capped: list[bool],
    budget: float,
) -> None:
    """Shorten the axes in place: a facet's size is affordable only if the design with every
    other size at its lower end costs no more than the budget."""
    for i, f in enumerate(names):
        base = {g: np.ones(1) for g in m.facets}
        for j, g in enumerate(names):
            if g != m.replicate:
                base[g] = np.array([float(axes[j][0])])
        reps = np.array([float(axes[names.index(m.replicate)][0])]) if (
            m.replicate in names) else np.ones(1)  # fmt: skip
        for g in m.fixed:
            base[g] = np.array([m.sizes[g]])
        base[free] = np.ones(1)

        def at(v: float, f: str = f, base: dict = base, reps: np.ndarray = reps) -> float:
            b = dict(base)
            r = reps
            if f == m.replicate:
                r = np.array([v])
            else:
                b[f] = np.array([v])
            return float(np.asarray(_grid_cost(m, b, r, cst)).ravel()[0] if cst else 0.0)

        c0, c1 = at(0.0), at(1.0) - at(0.0)
        if c1 > 0:
            afford = math.floor((budget - c0) / c1 * (1 + 1e-12))
            if afford < axes[i][-1]:
                axes[i] = axes[i][axes[i] <= max(afford, int(axes[i][0]))]
                capped[i] = False


def _free_sizes(
    a: np.ndarray,
    b: np.ndarray,
    c0: np.ndarray,
    c1: np.ndarray,
    budget: float | None,
    target_se: float | None,
) -> np.ndarray:
    """The free facet's size at each grid point, uncapped (0: none qualifies): the most the
    budget buys, n = ⌊(B − c₀)/c₁⌋ (inf when a level costs nothing), or the fewest reaching
    the target, n = ⌈b/(SE² − a)⌉ (none when a ≥ SE²)."""
    if budget is not None:
        spend = budget - c0
        with np.errstate(divide="ignore", invalid="ignore"):
            n = np.where(c1 > 0, np.floor(spend / c1 * (1 + 1e-12)), np.inf)
        return np.where(spend >= 0, n, 0.0)
    target_var = float(target_se) ** 2  # type: ignore[arg-type]
    with np.errstate(divide="ignore", invalid="ignore"):
        need = np.where(b > 0, np.ceil(b / (target_var - a) * (1 - 1e-12)), 1.0)
    return np.where(a < target_var * (1 + 1e-12), np.maximum(need, 1.0), 0.0)


class _Grid:
    """The searched grid of the facets other than the free one: their sizes at each point,
    and the variance a + b/n and cost c₀ + c₁·n of each point in the free facet's size n."""

    def __init__(self, m: VarianceModel, cst: dict[str, float], free: str, names, axes):
        self.m, self.cst, self.free, self.names = m, cst, free, names
        mesh = [x.ravel() for x in np.meshgrid(*axes, indexing="ij")] if axes else []
        self.npts = npts = mesh[0].size if mesh else 1
        self.sizes = {f: np.full(npts, float(m.sizes[f])) for f in m.facets}
        self.reps = np.ones(npts)
        for f, col in zip(names, mesh, strict=True):
            if f == m.replicate:
                self.reps = col.astype(float)
            else:
                self.sizes[f] = col.astype(float)
        self.array = np.column_stack(mesh) if mesh else np.zeros((1, 0), dtype=np.int64)
        self.a = self.variance(np.full(npts, np.inf))
        self.b = self.variance(np.ones(npts)) - self.a
        self.c0 = self.cost(np.zeros(npts))
        self.c1 = self.cost(np.ones(npts)) - self.c0

    def variance(self, n: np.ndarray) -> np.ndarray:
        sizes = dict(self.sizes)
        sizes[self.free] = n
        return _grid_variance(self.m, sizes, self.reps) * np.ones(self.npts)

    def cost(self, n: np.ndarray) -> np.ndarray:
        if not self.cst:
            return np.zeros(self.npts)
        sizes = dict(self.sizes)
        sizes[self.free] = n
        return _grid_cost(self.m, sizes, self.reps, self.cst) * np.ones(self.npts)

    def at(self, n: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(whole n, variance, cost, qualifies) of every point with n levels of the free
        facet (inf variance and NaN cost where n < 1)."""
        ok = n >= 1
        n_int = np.where(ok, n, 0).astype(np.int64)
        n_safe = np.maximum(n_int, 1).astype(float)
        var = np.where(ok, self.variance(n_safe), np.inf)
        cost = np.where(ok, self.cost(n_safe) if self.cst else 0.0, np.nan)
        return n_int, var, cost, ok

    def choice(self, i: int, n: int, var: float, cost: float) -> DesignChoice:
        """The design of grid point ``i`` with ``n`` levels of the free facet."""
        m = self.m
        chosen = {f: round(m.sizes[f]) for f in m.facets}
        chosen[self.free] = int(n)
        r = 1
        for j, f in enumerate(self.names):
            if f == m.replicate:
                r = int(self.array[i, j])
            else:
                chosen[f] = int(self.array[i, j])
        if not m.replicated:
            r = 1
        return DesignChoice(chosen, r, float(var), float(math.sqrt(var)), float(cost))


def _optimize(
    model: GStudyResult | VarianceModel,
    costs: Mapping[str, float],
    *,
    budget: float | None,
    target_se: float | None,
    free: str,
    limits: Mapping[str, int | tuple[int, int]] | None,
    max_free: int | None,
    default_cap: int | Mapping[str, int],
) -> OptimalDesignResult:
    m = _as_model(model)
    cst = _check_costs(m, costs)
    if free not in m.facets or free in m.fixed:
        raise ValueError(f"free facet {free!r} must be a random facet of the model")
    if max_free is not None and (isinstance(max_free, bool) or int(max_free) < 1):
        raise ValueError("max_free must be a positive integer")
    max_free = None if max_free is None else int(max_free)
    names, axes, capped = _search_axes(m, free, limits, default_cap)
    if budget is not None:
        _shorten_to_budget(m, cst, free, names, axes, capped, budget)
    total = math.prod(a.size for a in axes)
    if total > _MAX_GRID:
        raise ValueError(
            f"the search grid has {total:,} points (more than {_MAX_GRID:,}): give smaller limits"
        )
    grid = _Grid(m, cst, free, names, axes)
    uncapped = _free_sizes(grid.a, grid.b, grid.c0, grid.c1, budget, target_se)
    if max_free is None:
        if budget is not None and np.any(np.isinf(uncapped)):
            raise ValueError(f"the {free} facet costs nothing: give max_free")
        n = uncapped
    elif budget is not None:
        n = np.minimum(uncapped, max_free)
    else:
        n = np.where(uncapped > max_free, 0.0, uncapped)
    n_int, var, cost, ok = grid.at(n)
    res = OptimalDesignResult(
        goal="budget" if budget is not None else "target_se",
        budget=None if budget is None else float(budget),
        target_se=None if target_se is None else float(target_se),
        free=free,
        recommended=None,
        grid_facets=tuple(names),
        grid=grid.array,
        n_free=n_int,
        variance=var,
        se=np.sqrt(var),
        cost=cost,
        costs=cst,
        max_free=max_free,
    )
    rec, notes = None, []
    if ok.any():
        best = int(res._order()[0])
        rec = grid.choice(best, n_int[best], var[best], cost[best])
        for j, f in enumerate(names):
            if capped[j] and grid.array[best, j] == axes[j][-1]:
                notes.append(
                    f"the best {f} is the largest searched ({axes[j][-1]}); raise its limit"
                )
    elif budget is not None:
        notes.append("the budget buys no design with one level of every facet")
    elif not (uncapped >= 1).any():
        notes.append(
            "no design within the limits reaches the target SE (the components that do not "
            f"shrink with more {free} levels already exceed it)"
        )
    bound = _pool_bound(res, grid, uncapped, max_free, rec)
    return OptimalDesignResult(
        **{**res.__dict__, "recommended": rec, "warnings": tuple(notes), **bound}
    )


def _pool_bound(
    res: OptimalDesignResult,
    grid: _Grid,
    uncapped: np.ndarray,
    max_free: int | None,
    rec: DesignChoice | None,
) -> dict[str, Any]:
    """The status of a search, and what the cap on the free facet cost it: the free
    facet's size of the best design without the cap, and (a target the capped search does
    not reach) the design of least variance within the cap."""
    target = res.goal == "target_se"
    if rec is None and not (uncapped >= 1).any():
        return {"status": "unreachable" if target else "unaffordable"}
    if max_free is None or np.all(uncapped[uncapped >= 1] <= max_free):
        return {"status": "met"}
    free_needed = None
    if np.all(np.isfinite(uncapped)):
        n_int, var, cost, _ = grid.at(uncapped)
        free_res = OptimalDesignResult(**{**res.__dict__, "n_free": n_int, "variance": var,
                                          "cost": cost})  # fmt: skip
        free_needed = int(n_int[free_res._order()[0]])
    if free_needed is not None and free_needed <= max_free:
        return {"status": "met"}  # the best design without the cap fits in it
    out: dict[str, Any] = {"status": "pool_bound", "free_needed": free_needed}
    if rec is None:
        n_int, var, cost, _ = grid.at(np.full(grid.npts, float(max_free)))
        i = int(np.lexsort((cost, var))[0])
        out["closest"] = grid.choice(i, n_int[i], var[i], cost[i])
    return out


def best_design(
    model: GStudyResult | VarianceModel,
    budget: float,
    costs: Mapping[str, float],
    *,
    free: str = "task",
    limits: Mapping[str, int | tuple[int, int]] | None = None,
    max_free: int | None = None,
    default_cap: int | Mapping[str, int] = 64,
) -> OptimalDesignResult:
    """The design of least variance that the budget buys.

    For every point of the grid of the other facets' sizes (``limits``: per facet a maximum
    or a (min, max); default 1 … ``default_cap`` (a number, or one per facet), shortened to
    what the budget affords), the
    free facet gets n = ⌊(B − c₀)/c₁⌋ levels (capped by ``max_free``), the most the budget
    buys; the least variance wins, ties going to more levels of the free facet, then fewer
    of the others (the last grid facet first). ``max_free`` is the pool of the free facet
    (the benchmark's tasks): when the budget would buy more, the status says
    ``"pool_bound"`` and how many (:class:`OptimalDesignResult`).
    """
    check_finite_number(budget, "budget")
    return _optimize(model, costs, budget=budget, target_se=None, free=free, limits=limits,
                     max_free=max_free, default_cap=default_cap)  # fmt: skip


def cheapest_design(
    model: GStudyResult | VarianceModel,
    target_se: float,
    costs: Mapping[str, float],
    *,
    free: str = "task",
    limits: Mapping[str, int | tuple[int, int]] | None = None,
    max_free: int | None = None,
    default_cap: int | Mapping[str, int] = 64,
) -> OptimalDesignResult:
    """The cheapest design whose SE is at most ``target_se``.

    At every grid point, the variance is a + b/n in the free facet's size n (a: the
    components without the free facet), so the fewest levels reaching the target are
    n = ⌈b/(SE² − a)⌉ (none if a ≥ SE²: more tasks cannot help; buy more of another facet);
    the least cost wins, ties going to less variance, then more of the free facet. With
    ``max_free`` (the pool: the tasks that exist) a point needing more levels does not
    qualify; when that is what keeps the target out of reach the status is
    ``"pool_bound"``, with the levels needed and the design of least SE within the pool
    (:class:`OptimalDesignResult`).
    """
    check_finite_number(target_se, "target_se", positive=True)
    return _optimize(model, costs, budget=None, target_se=target_se, free=free, limits=limits,
                     max_free=max_free, default_cap=default_cap)  # fmt: skip


def nested_optimum(
    model: GStudyResult | VarianceModel, costs: Mapping[str, float], budget: float
) -> dict[str, float]:
    r"""The continuous optimum of a fully nested design (a chain f₁ ⊃ f₂ ⊃ … ⊃ replicate).

    With σ²_i the component of stage i (its facet with every facet above it) and c_i the
    cost per unit of stage i, Var·C = (Σ_i σ²_i/N_i)(Σ_i c_i N_i) over the cumulative counts
    N_i = n₁⋯n_i is smallest when σ²_i/N_i ∝ c_i N_i (Cauchy–Schwarz): N_i ∝ √(σ²_i/c_i), so

    .. math:: n_i^* = \sqrt{\frac{\sigma^2_i\, c_{i-1}}{\sigma^2_{i-1}\, c_i}}\quad(i \ge 2),
              \qquad n_1^* = \frac{C}{\sum_i c_i \prod_{j\le i} n_j^*},

    Cochran's (1977, ch. 10) multistage optimum. inf or NaN where a component or cost is 0.
    Returns the sizes by facet (and the replicate).
    """
    m = _as_model(model)
    chain = sorted(m.facets, key=lambda f: len(m.nesting.get(f, ())))
    for i, f in enumerate(chain):
        if tuple(sorted(m.nesting.get(f, ()))) != tuple(sorted(chain[:i])):
            raise ValueError("nested_optimum needs a fully nested design (a chain of facets)")
    stages = [*chain, m.replicate] if m.replicated else chain
    s2 = []
    for i, _ in enumerate(stages):
        if i < len(chain):
            key = tuple(sorted(chain[: i + 1]))
            idx = [k for k, fs in enumerate(m.facets_of) if tuple(sorted(fs)) == key]
            if i == len(chain) - 1 and not m.replicated:
                idx = [len(m.effects) - 1]
            s2.append(float(m.sigma2[idx[0]]) if idx else 0.0)
        else:
            s2.append(float(m.sigma2[-1]))
    c = [float(costs.get(f, 0.0)) + (float(costs.get(OBSERVATION, 0.0)) if f == m.replicate
         else 0.0) for f in stages]  # fmt: skip
    out: dict[str, float] = {}
    with np.errstate(all="ignore"):
        ratios = [
            float(np.sqrt(np.float64(s2[i]) * np.float64(c[i - 1])
                          / (np.float64(s2[i - 1]) * np.float64(c[i]))))
            for i in range(1, len(stages))
        ]  # fmt: skip
        cum, per = 1.0, 0.0
        per = c[0]
        for i in range(1, len(stages)):
            cum = cum * ratios[i - 1]
            per = per + c[i] * cum
        n1 = float(np.float64(budget) / per) if all(np.isfinite(ratios)) else math.nan
    out[stages[0]] = n1
    for i in range(1, len(stages)):
        out[stages[i]] = ratios[i - 1]
    return out
