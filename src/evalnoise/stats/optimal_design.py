"""The best D-study design: least variance within a budget, or least cost reaching a target SE.

* :func:`best_design` and :func:`cheapest_design` — by exhaustive search over the sizes of
  every facet but one (the *free* facet, the task as a rule, whose best size has a closed
  form because the variance is a + b/n and the cost c₀ + c₁·n in its size n), within the
  pool of the free facet (``max_free``: the tasks that exist).
* :func:`nested_optimum` — the continuous optimum of a fully nested design (Cochran 1977,
  ch. 10).
* :func:`judge_sample_plan` — tasks × trials × judge samples within a budget.

The variance and cost of a design are :mod:`evalnoise.stats.dstudy`'s (Brennan 2001, ch. 4).

References
----------
Brennan, R. L. (2001). *Generalizability Theory*. Springer: ch. 4.
Cochran, W. G. (1977). *Sampling Techniques*, 3rd ed. Wiley: ch. 10 (optimum allocation in
multi-stage sampling).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from ._checks import check_finite_number
from ._results import DictResult
from .dstudy import (
    OBSERVATION,
    VarianceModel,
    as_variance_model,
    check_costs,
    grid_cost,
    grid_variance,
    variance_model,
)
from .gstudy import GStudyResult

__all__ = [
    "DesignChoice",
    "DesignStatus",
    "JudgeSamplePlan",
    "OptimalDesignResult",
    "best_design",
    "cheapest_design",
    "judge_sample_plan",
    "nested_optimum",
]

# largest number of grid points searched at once (arrays of this many floats)
_MAX_GRID = 4_000_000

#: What bounded an optimal-design search (:attr:`OptimalDesignResult.status`).
DesignStatus = Literal["met", "pool_bound", "unreachable", "unaffordable"]


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
    floor_se : with ``closest``: the least SE any number of replicates (trials per cell)
        reaches within the cap and the searched sizes of the other facets — the target is
        out of reach below it.
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
    floor_se: float | None = None

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
            return float(np.asarray(grid_cost(m, b, r, cst)).ravel()[0] if cst else 0.0)

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
        return grid_variance(self.m, sizes, self.reps) * np.ones(self.npts)

    def cost(self, n: np.ndarray) -> np.ndarray:
        if not self.cst:
            return np.zeros(self.npts)
        sizes = dict(self.sizes)
        sizes[self.free] = n
        return grid_cost(self.m, sizes, self.reps, self.cst) * np.ones(self.npts)

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
    m = as_variance_model(model)
    cst = check_costs(m, costs)
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
        sizes = dict(grid.sizes)
        sizes[grid.free] = np.full(grid.npts, float(max_free))
        floor = grid_variance(grid.m, sizes, np.full(grid.npts, np.inf)) * np.ones(grid.npts)
        out["floor_se"] = float(math.sqrt(float(np.min(floor))))
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
    m = as_variance_model(model)
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


@dataclass(frozen=True)
class JudgeSamplePlan(DictResult):
    """The D study of tasks × trials × judge samples within a budget.

    Attributes
    ----------
    design : the search (:class:`OptimalDesignResult`); its ``recommended`` is the best
        design (sizes ``task`` and ``trial``, ``replicates`` the judge samples).
    tasks_optimum, trials_optimum, judge_samples_optimum : the continuous optimum n*, T*
        and K* (:func:`nested_optimum`).
    judge_samples : each judge-sample count searched, K = 1 … (the rows below).
    n_tasks, trials, cost, variance, se : the best design with each K.
    variance_ratio : its variance over the best design's with K = 1 (NaN when that is 0).
    """

    design: OptimalDesignResult
    tasks_optimum: float
    trials_optimum: float
    judge_samples_optimum: float
    judge_samples: np.ndarray
    n_tasks: np.ndarray
    trials: np.ndarray
    cost: np.ndarray
    variance: np.ndarray
    se: np.ndarray
    variance_ratio: np.ndarray


def judge_sample_plan(
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
) -> JudgeSamplePlan:
    r"""The D study of tasks × trials × judge samples within a budget.

    The design task / trial:task with judge samples as replicates (:func:`variance_model`),

    .. math:: \mathrm{Var}(\hat\mu) = \frac{\sigma^2_{task}}{n} + \frac{\sigma^2_{trial}}{nT}
              + \frac{\sigma^2_{judge}}{nTK},\qquad
              C = n\,c_{task} + nT\,c_{trial} + nTK\,c_{judge} \le B,

    searched by :func:`best_design` (T up to 4096 and K up to 64 unless capped, n the most
    the budget buys within ``max_tasks``), with the continuous optimum
    (:func:`nested_optimum`, Cochran 1977 ch. 10) and the best design for each K. Raises
    ValueError when c_trial ≤ 0 or the budget buys no task × trial × judge sample.
    """
    model = variance_model(
        ["task", "trial:task"],
        {"task": sigma2_task, "trial:task": sigma2_trial, "residual": sigma2_judge},
        replicate="judge_sample",
    )
    if not cost_per_trial > 0:
        raise ValueError(f"cost_per_trial must be > 0, got {cost_per_trial!r}")
    costs = {"task": cost_per_task, "trial": cost_per_trial, "judge_sample": cost_per_judge_sample}
    limits: dict[str, int] = {}
    if max_trials is not None:
        limits["trial"] = max_trials
    if max_judge_samples is not None:
        limits["judge_sample"] = max_judge_samples
    res = best_design(
        model,
        budget,
        costs,
        free="task",
        limits=limits,
        max_free=max_tasks,
        default_cap={"trial": 4096, "judge_sample": 64},
    )
    if res.recommended is None:
        raise ValueError(f"budget {budget:g} cannot buy one task × one trial × one judge sample")
    optimum = nested_optimum(model, costs, budget)
    per_k = res.best_by("judge_sample")
    base = per_k["variance"][0]
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = per_k["variance"] / base if base > 0 else np.full(per_k["variance"].size, np.nan)
    return JudgeSamplePlan(
        design=res,
        tasks_optimum=float(optimum["task"]),
        trials_optimum=float(optimum["trial"]),
        judge_samples_optimum=float(optimum["judge_sample"]),
        judge_samples=per_k["value"],
        n_tasks=per_k["n_free"],
        trials=per_k["trial"],
        cost=per_k["cost"],
        variance=per_k["variance"],
        se=per_k["se"],
        variance_ratio=ratio,
    )
