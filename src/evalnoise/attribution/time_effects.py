"""Time and host as factors: how much of the score variance is the infrastructure's?

The infrastructure-noise article observes that pass rates fluctuate with the time of day
("likely because API latency varies with traffic patterns and incidents") without
quantifying it, and recommends running evals at several times. With a run's trials spread
over its duration, time is a factor that can be measured: this module splits the variance of
the trial scores into a task component (what the benchmark should measure), time-block and
host components and their interaction with tasks (what the infrastructure adds), and a
residual (the agent's own trial-to-trial variation), and tests for a drift of success over
the run within tasks.

Why a linear model on 0/1 scores, and why Henderson's method III
-------------------------------------------------------------------

The quantities a report needs are *variance shares of the score itself*: the variance of an
accuracy is a sum of exactly these components divided by the numbers of tasks, blocks and
trials, so components on the probability scale add up to what the confidence interval sees.
A logit-scale GLMM gives latent-scale components whose shares depend on the π²/3
convention for the residual and do not map back onto the score's variance without a further
approximation. The linear model on 0/1 data is heteroscedastic (Var = p(1 − p) per trial),
which does not bias moment estimators — they only use first and second moments — but makes
normal-theory likelihoods (REML) only a working model.

The estimator is Henderson's (1953) method III, the "fitting constants" method for crossed
random effects: each component's sum of squares is the reduction it brings when fitted after
the other main effects, R(f | μ, others), and the interaction's after all main effects; the
expectation of each reduction is linear in the variance components,

    E[R(f | S)] = Σ_h σ²_h · (tr(Z_h' M_S Z_h) − tr(Z_h' M_{S∪f} Z_h))
                  + σ²_e · (rank(S ∪ f) − rank(S)),

with M_S the residual projector of the fixed-effects model S and Z_h the indicator matrix
of factor h, and the estimates solve that linear system together with
E[RSS_full] = σ²_e (N − rank_full). It is unbiased for any distribution, exact in closed form
(no iterations, no convergence failures, fast for tens of thousands of trials with hundreds
of tasks since only the task factor is high-dimensional and it is absorbed by demeaning),
and for balanced designs equal to the classical ANOVA estimators — which are the REML
estimates whenever those are positive. The test suite checks it against statsmodels'
REML ``MixedLM`` with crossed variance components and against the textbook balanced EMS
formulas. Negative estimates are truncated at 0 (the raw values are kept).

Interval: parametric bootstrap (as lme4's ``bootMer``) — data are simulated from the
fitted crossed model with normal effects and errors at the estimated (truncated)
components, the components re-estimated on the same design, and the percentile interval
taken. It carries the dominant uncertainty — the few time blocks (with B blocks the
time-block component has B − 1 degrees of freedom, so its interval is wide, honestly) — at
the cost of treating 0/1 errors as normal; Bernoulli errors are lighter-tailed than normal
ones, so this errs on the wide side for the residual. Every model's fitted values are
constant within a design cell (the trials sharing task, block and host), so the reductions
depend on the data only through the cell sums S_c and the within-cell sum of squares W; the
bootstrap draws those — S_c = n_c·(Σ_f u_f) + N(0, n_c σ²_e), W = σ²_e·χ²(N − C) for N
trials in C cells, independent of the sums — at a cost in cells, not trials.

Drift: a linear probability model with task fixed effects, y_gi = α_g + β t_gi + e_gi, with t
the start time scaled to [0, 1] over the run, so β is the change in success probability from
the run's first trial to its last within a task. β̂ by within-task demeaning
(Frisch–Waugh–Lovell), SE task-clustered (CR1, G/(G − 1)), Wald t test on G − 1 degrees of
freedom.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import sparse

from evalnoise.runner.policy import InfraPolicy, apply_infra_policy, infra_policy
from evalnoise.stats._checks import check_probability
from evalnoise.stats._distributions import t_ppf, t_sf
from evalnoise.stats._results import DictResult

from ._common import (
    one_group,
    require_columns,
    run_seconds,
    score_values,
    time_blocks,
    trial_key,
)
from ._json import records

__all__ = [
    "INFRA_COMPONENTS",
    "DriftResult",
    "TimeEffectsResult",
    "VarianceComponentsResult",
    "drift_test",
    "time_effects",
    "variance_components",
]

TASK, BLOCK, HOST, TASK_BLOCK, RESIDUAL = (
    "task",
    "time_block",
    "host",
    "task:time_block",
    "residual",
)
#: components attributed to the infrastructure: every one involving time or host
INFRA_COMPONENTS = (BLOCK, HOST, TASK_BLOCK)
# bound on the (design cells × bootstrap replicates) block held in memory at once
_BOOT_BLOCK = 1 << 22


@dataclass(frozen=True)
class VarianceComponentsResult:
    """Crossed variance components of the scores (see :func:`variance_components`).

    Arrays are aligned with ``components`` (the estimable ones, residual last).

    Attributes
    ----------
    components : names: ``task``, ``time_block``, ``host``, ``task:time_block``,
        ``residual``.
    sigma2 : the estimates, truncated at 0.
    sigma2_raw : the untruncated Henderson III solutions.
    share : sigma2 / total_variance.
    ci_low, ci_high : parametric-bootstrap percentile CI of each sigma2.
    share_ci_low, share_ci_high : the same for each share.
    df : the rank of each component's reduction (its degrees of freedom).
    n_levels : levels of each factor (trials for the residual).
    total_variance : Σ sigma2.
    infra_share : Σ sigma2 over ``infra_components`` / total_variance.
    infra_share_ci_low, infra_share_ci_high : its bootstrap percentile CI.
    infra_components : the components summed in ``infra_share`` (those of the requested
        ones that were fitted; by default :data:`INFRA_COMPONENTS`).
    n_obs : trials used.
    n_boot, seed, confidence : bootstrap settings.
    method : ``"henderson3"``.
    warnings : dropped components, truncations and degenerate cases.
    """

    components: tuple[str, ...]
    sigma2: np.ndarray
    sigma2_raw: np.ndarray
    share: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    share_ci_low: np.ndarray
    share_ci_high: np.ndarray
    df: np.ndarray
    n_levels: np.ndarray
    total_variance: float
    infra_share: float
    infra_share_ci_low: float
    infra_share_ci_high: float
    infra_components: tuple[str, ...]
    n_obs: int
    n_boot: int
    seed: int
    confidence: float
    method: str = "henderson3"
    warnings: tuple[str, ...] = field(default=())

    def __getitem__(self, component: str) -> float:
        """The (truncated) estimate of one component, by name."""
        return float(self.sigma2[self.components.index(component)])

    def to_frame(self) -> pd.DataFrame:
        """One row per component."""
        return pd.DataFrame(
            {
                "component": list(self.components),
                "sigma2": self.sigma2,
                "sigma2_raw": self.sigma2_raw,
                "ci_low": self.ci_low,
                "ci_high": self.ci_high,
                "share": self.share,
                "share_ci_low": self.share_ci_low,
                "share_ci_high": self.share_ci_high,
                "df": self.df,
                "n_levels": self.n_levels,
                "infrastructure": [c in self.infra_components for c in self.components],
            }
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "n_obs": self.n_obs,
            "total_variance": float(self.total_variance),
            "infra_share": float(self.infra_share),
            "infra_share_ci_low": float(self.infra_share_ci_low),
            "infra_share_ci_high": float(self.infra_share_ci_high),
            "infra_components": list(self.infra_components),
            "confidence": float(self.confidence),
            "n_boot": self.n_boot,
            "seed": self.seed,
            "components": records(self.to_frame()),
            "warnings": list(self.warnings),
        }


@dataclass(frozen=True)
class DriftResult(DictResult):
    """Linear drift of the score over the run within tasks (see :func:`drift_test`).

    Attributes
    ----------
    slope : β̂, change in mean score from the run's start (t = 0) to its end (t = 1).
    se : task-clustered (CR1) standard error.
    t : slope / se; df : G − 1; p : two-sided.
    ci_low, ci_high : slope ∓ t_{df} · se.
    n_obs, n_tasks : trials and tasks used (tasks with one trial carry no information).
    confidence : the CI level.
    warnings : why a field is NaN.
    """

    slope: float
    se: float
    t: float
    df: float
    p: float
    ci_low: float
    ci_high: float
    n_obs: int
    n_tasks: int
    confidence: float
    warnings: tuple[str, ...] = field(default=())

    def to_frame(self) -> pd.DataFrame:
        d = self.to_dict()
        d.pop("warnings")
        return pd.DataFrame([d])


@dataclass(frozen=True)
class TimeEffectsResult:
    """Variance components and drift of one group's scores (see :func:`time_effects`).

    Attributes
    ----------
    components : the :class:`VarianceComponentsResult`.
    drift : the :class:`DriftResult`.
    n_time_blocks : blocks of ``started_at`` used.
    n_hosts : hosts in the data (the host component is fitted when > 1).
    policy : the infra policy applied.
    n_trials : counted, scored trials with a start time.
    warnings : rows left out and the like.
    """

    components: VarianceComponentsResult
    drift: DriftResult
    n_time_blocks: int
    n_hosts: int
    policy: str
    n_trials: int
    warnings: tuple[str, ...] = field(default=())

    @property
    def infra_share(self) -> float:
        return self.components.infra_share

    def to_frame(self) -> pd.DataFrame:
        """The variance components, one row per component."""
        return self.components.to_frame()

    def to_dict(self) -> dict[str, Any]:
        return {
            "n_trials": self.n_trials,
            "n_time_blocks": self.n_time_blocks,
            "n_hosts": self.n_hosts,
            "policy": self.policy,
            "variance_components": self.components.to_dict(),
            "drift": self.drift.to_dict(),
            "warnings": list(self.warnings),
        }


class _Model:
    """Residual projector M_S of the fixed-effects model S = μ + absorbed factor + W.

    The one high-dimensional factor (task, or the task × block cells) is absorbed by
    within-group demeaning D_A; the few remaining dummy columns W (blocks, hosts) are
    handled by an orthonormal basis Q of D_A W, so that M_S = D_A − QQ' (Q ⊂ range D_A).
    """

    def __init__(self, absorb: np.ndarray, w: np.ndarray) -> None:
        n = absorb.size
        self.absorb = absorb
        self.n_groups = int(absorb.max()) + 1 if n else 0
        self.counts = np.bincount(absorb, minlength=self.n_groups).astype(float)
        self.indicator = sparse.csr_matrix(
            (np.ones(n), (absorb, np.arange(n))), shape=(self.n_groups, n)
        )
        if w.shape[1]:
            dw = w - (self.indicator @ w / self.counts[:, None])[absorb]
            u, s, _ = np.linalg.svd(dw, full_matrices=False)
            tol = s.max(initial=0.0) * max(dw.shape) * np.finfo(float).eps
            self.q = u[:, s > tol]
        else:
            self.q = np.zeros((n, 0))
        self.rank = self.n_groups + self.q.shape[1]

    def rss(self, y: np.ndarray) -> np.ndarray:
        """‖M_S y‖² for every column of y (N × R)."""
        sums = self.indicator @ y
        between = (sums**2 / self.counts[:, None]).sum(axis=0)
        along = (self.q.T @ y) ** 2
        return (y**2).sum(axis=0) - between - along.sum(axis=0)

    def on_cells(self, first: np.ndarray) -> None:
        """Prepare :meth:`rss_cells` for the design cells whose first rows are ``first``
        (every absorbed group and every column of Q is constant within a cell)."""
        absorb = self.absorb[first]
        self.cell_indicator = sparse.csr_matrix(
            (np.ones(first.size), (absorb, np.arange(first.size))),
            shape=(self.n_groups, first.size),
        )
        self.cell_q = self.q[first]

    def rss_cells(self, sums: np.ndarray, tss: np.ndarray) -> np.ndarray:
        """‖M_S y‖² from the cell sums (C × R) and Σy² (R,) of every column of y:
        Σy² − Σ_g (Σ_{c∈g} S_c)² / n_g − ‖Q_C' S‖², Q_C the rows of Q at the cells."""
        groups = self.cell_indicator @ sums
        # einsum sums the squares without building (groups × R) temporaries: ~3× faster
        between = np.einsum("gr,gr,g->r", groups, groups, 1.0 / self.counts)
        along = ((self.cell_q.T @ sums) ** 2).sum(axis=0)
        return tss - between - along

    def trace(self, codes: np.ndarray | None) -> float:
        """tr(Z' M_S Z) = ‖M_S Z‖²_F for the indicator Z of ``codes`` (None: Z = I)."""
        n = self.absorb.size
        if codes is None:
            return float(n - self.rank)
        n_levels = int(codes.max()) + 1
        pair = self.absorb.astype(np.int64) * n_levels + codes
        _, inverse, cnt = np.unique(pair, return_inverse=True, return_counts=True)
        first = np.zeros(cnt.size, dtype=np.int64)
        first[inverse] = np.arange(n)
        within = float(np.sum(cnt.astype(float) ** 2 / self.counts[self.absorb[first]]))
        if self.q.shape[1]:
            ind = sparse.csr_matrix((np.ones(n), (codes, np.arange(n))), shape=(n_levels, n))
            qz = ind @ self.q
            along = float(np.sum(qz**2))
        else:
            along = 0.0
        return float(n - within - along)


def _codes(x: Any) -> np.ndarray:
    codes, _ = pd.factorize(np.asarray(x), sort=True)
    return codes.astype(np.int64)


def _dummies(codes: np.ndarray) -> np.ndarray:
    out = np.zeros((codes.size, int(codes.max()) + 1))
    out[np.arange(codes.size), codes] = 1.0
    return out


def _build(factors: Mapping[str, np.ndarray], terms: frozenset[str]) -> _Model:
    n = next(iter(factors.values())).size
    if TASK_BLOCK in terms:
        absorb, absorbed = factors[TASK_BLOCK], {TASK, BLOCK, TASK_BLOCK}
    elif TASK in terms:
        absorb, absorbed = factors[TASK], {TASK}
    else:
        absorb, absorbed = np.zeros(n, dtype=np.int64), set()
    rest = [t for t in (BLOCK, HOST) if t in terms and t not in absorbed]
    w = np.hstack([_dummies(factors[t]) for t in rest]) if rest else np.zeros((n, 0))
    return _Model(absorb, w)


class _Henderson:
    """The Henderson III system of one design; solves it for any number of responses."""

    def __init__(self, factors: Mapping[str, np.ndarray]) -> None:
        self.factors = factors
        mains = [t for t in (TASK, BLOCK, HOST) if t in factors]
        main_terms = frozenset(mains)
        self.models: dict[frozenset[str], _Model] = {}
        # reduction for component f: R(f | S_f) = RSS(S_f) − RSS(S_f ∪ f)
        self.reductions: list[tuple[str, frozenset[str], frozenset[str]]] = []
        for f in factors:
            base = main_terms - {f} if f != TASK_BLOCK else main_terms
            self.reductions.append((f, base, base | {f}))
        self.full = main_terms | ({TASK_BLOCK} if TASK_BLOCK in factors else frozenset())
        for _, a, b in self.reductions:
            self._model(a)
            self._model(b)
        self._model(self.full)

    def _model(self, terms: frozenset[str]) -> _Model:
        if terms not in self.models:
            self.models[terms] = _build(self.factors, terms)
        return self.models[terms]

    def system(self) -> tuple[list[str], np.ndarray, np.ndarray]:
        """(components, A, df): E[r] = A σ², rows = reductions then RSS_full."""
        names = [*self.factors, RESIDUAL]
        codes = [*self.factors.values(), None]
        rows, df = [], []
        for _, a, b in self.reductions:
            ma, mb = self.models[a], self.models[b]
            rows.append([ma.trace(c) - mb.trace(c) for c in codes])
            df.append(mb.rank - ma.rank)
        full = self.models[self.full]
        rows.append([0.0] * len(self.factors) + [full.trace(None)])
        df.append(full.absorb.size - full.rank)
        return names, np.array(rows), np.array(df, dtype=np.int64)

    def reduce(self, y: np.ndarray) -> np.ndarray:
        """The reductions (rows) of every response column of y."""
        return self._stack({t: m.rss(y) for t, m in self.models.items()})

    def cells(self) -> tuple[np.ndarray, np.ndarray]:
        """(first row, size) of every design cell: the trials sharing every factor's level."""
        codes = np.column_stack(list(self.factors.values()))
        _, first, sizes = np.unique(codes, axis=0, return_index=True, return_counts=True)
        for m in self.models.values():
            m.on_cells(first)
        return first, sizes

    def reduce_cells(self, sums: np.ndarray, tss: np.ndarray) -> np.ndarray:
        """:meth:`reduce` from the cell sums (C × R, cells as :meth:`cells`) and Σy² (R,)."""
        return self._stack({t: m.rss_cells(sums, tss) for t, m in self.models.items()})

    def _stack(self, rss: dict[frozenset[str], np.ndarray]) -> np.ndarray:
        out = [rss[a] - rss[b] for _, a, b in self.reductions]
        out.append(rss[self.full])
        return np.vstack(out)


def variance_components(
    y: Any,
    task: Any,
    block: Any,
    host: Any = None,
    *,
    interaction: bool = True,
    infra_components: tuple[str, ...] = INFRA_COMPONENTS,
    n_boot: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> VarianceComponentsResult:
    """Crossed random-effects variance components by Henderson's method III.

    Model, one row per trial i:

        y_i = μ + a_task(i) + b_block(i) [+ h_host(i)] [+ c_task×block(i)] + e_i,

    every effect an independent zero-mean random effect with its own variance, e_i the
    residual. See the module docstring for why this estimator and this interval.

    Parameters
    ----------
    y : scores (0/1 or partial credit), one per trial.
    task, block : task labels and time-block labels (e.g. :func:`time_blocks`), same length.
    host : host labels, or None; fitted only with more than one host.
    interaction : fit the task × time-block component (tasks whose success depends on when
        they ran: flaky tasks); needs task × block cells with more than one trial, else it is
        dropped with a warning.
    infra_components : the components whose variance is attributed to the infrastructure.
        Default: time block, host and task × time block. ``("time_block", "host")`` leaves
        the task-specific time effects (flaky tasks) out of the share.
    n_boot : parametric bootstrap replicates (0: no intervals).
    confidence : interval level.
    seed : of ``numpy.random.default_rng``; the result is a pure function of the inputs.

    Returns
    -------
    VarianceComponentsResult

    Notes
    -----
    Components whose reduction has rank 0 (a factor with one level, or confounded with the
    others, e.g. every host used in only one block) are not estimable and are dropped with a
    warning. ``infra_share`` = (σ²_block + σ²_host + σ²_task×block) / Σσ² by default, over the
    components present: variance that depends on when or where a trial ran rather than on
    which task it was or on the agent's own trial-to-trial variation. The task × block part
    is included because a task whose success depends on when it ran (a flaky task) is noise
    the infrastructure adds, not the agent; pass ``infra_components=("time_block", "host")``
    for the common-to-all-tasks part alone.
    """
    conf = check_probability(confidence)
    unknown = set(infra_components) - {TASK, BLOCK, HOST, TASK_BLOCK}
    if unknown:
        raise ValueError(f"unknown infra components: {sorted(unknown)}")
    if isinstance(n_boot, bool) or not isinstance(n_boot, numbers.Integral) or n_boot < 0:
        raise ValueError("n_boot must be a non-negative integer")
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise ValueError("seed must be a non-negative integer")
    yv = np.asarray(y, dtype=float)
    if yv.ndim != 1 or not np.isfinite(yv).all():
        raise ValueError("y must be a 1-D array of finite scores")
    t, b = _codes(task), _codes(block)
    if not (t.size == b.size == yv.size):
        raise ValueError("y, task and block must have the same length")
    if t.max(initial=0) < 1:
        raise ValueError("need at least two tasks")
    warnings: list[str] = []
    factors: dict[str, np.ndarray] = {TASK: t, BLOCK: b}
    if host is not None:
        h = _codes(host)
        if h.size != yv.size:
            raise ValueError("host must have the same length as y")
        if h.max(initial=0) > 0:
            factors[HOST] = h
    if interaction:
        cells = _codes(t * (b.max(initial=0) + 1) + b)
        if np.bincount(cells).max(initial=0) >= 2:
            factors[TASK_BLOCK] = cells
        else:
            warnings.append(
                "no task × time-block cell holds two trials: the task:time_block component "
                "cannot be told from the residual and is not fitted"
            )

    # Drop components that are not estimable (reduction of rank 0), then re-solve.
    while True:
        hend = _Henderson(factors)
        names, a_mat, df = hend.system()
        bad = [n for n, d in zip(names[:-1], df[:-1], strict=True) if d == 0]
        if not bad:
            break
        for n in bad:
            warnings.append(f"component {n!r} is not estimable from this design and is dropped")
            factors.pop(n)
    if df[-1] <= 0:
        raise ValueError("no residual degrees of freedom: need replicated trials")

    r = hend.reduce(yv[:, None])[:, 0]
    raw = np.linalg.solve(a_mat, r)
    if np.ptp(yv) == 0:
        # every score equal (an agent right, or wrong, every time): the solutions are round-off
        # of 0, and a share of nothing is undefined — never 100% of a rounding error
        raw = np.zeros_like(raw)
        warnings.append("every score is equal: there is no variance to split")
    est = np.maximum(raw, 0.0)
    for name, v in zip(names, raw, strict=True):
        if v < 0:
            warnings.append(f"the {name} estimate {v:.3g} is negative and is truncated to 0")
    total = float(est.sum())
    share = est / total if total > 0 else np.full(est.size, np.nan)
    infra = tuple(n for n in names if n in infra_components)
    infra_idx = [names.index(n) for n in infra]
    infra_share = float(share[infra_idx].sum()) if total > 0 else float("nan")

    k = len(names)
    nan = np.full(k, np.nan)
    lo, hi, slo, shi = nan.copy(), nan.copy(), nan.copy(), nan.copy()
    ilo = ihi = float("nan")
    if n_boot and total > 0:
        boot = _bootstrap(hend, factors, est, a_mat, int(n_boot), int(seed))
        alpha = 1 - conf
        q = [alpha / 2, 1 - alpha / 2]
        lo, hi = np.quantile(boot, q, axis=0)
        tot = boot.sum(axis=1, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            shares = np.where(tot > 0, boot / tot, np.nan)
        slo, shi = np.nanquantile(shares, q, axis=0)
        ilo, ihi = (float(v) for v in np.nanquantile(shares[:, infra_idx].sum(axis=1), q))

    levels = [int(factors[n].max()) + 1 for n in names[:-1]] + [int(yv.size)]
    return VarianceComponentsResult(
        components=tuple(names),
        sigma2=est,
        sigma2_raw=raw,
        share=share,
        ci_low=lo,
        ci_high=hi,
        share_ci_low=slo,
        share_ci_high=shi,
        df=df,
        n_levels=np.array(levels, dtype=np.int64),
        total_variance=total,
        infra_share=infra_share,
        infra_share_ci_low=ilo,
        infra_share_ci_high=ihi,
        infra_components=infra,
        n_obs=int(yv.size),
        n_boot=int(n_boot),
        seed=int(seed),
        confidence=conf,
        warnings=tuple(warnings),
    )


def _bootstrap(
    hend: _Henderson,
    factors: Mapping[str, np.ndarray],
    sigma2: np.ndarray,
    a_mat: np.ndarray,
    n_boot: int,
    seed: int,
) -> np.ndarray:
    """n_boot × components truncated estimates from data simulated at ``sigma2``.

    Simulated at the cells (module docstring): for cell c of n_c trials with factor levels
    f(c), S_c = n_c Σ_f u_f,f(c) + √n_c σ_e z_c, u_f ~ N(0, σ²_f), z_c ~ N(0, 1), and
    Σy² = W + Σ_c S_c² / n_c with W = σ²_e χ²(N − C), the same joint law of the reductions as
    simulating every trial.
    """
    rng = np.random.default_rng(seed)
    first, sizes = hend.cells()
    codes = [c[first] for c in factors.values()]
    n_cells, df_within = first.size, int(sizes.sum()) - first.size
    n_c = sizes.astype(float)[:, None]
    sd = np.sqrt(sigma2)
    out = np.empty((n_boot, sigma2.size))
    block = max(1, _BOOT_BLOCK // max(n_cells, 1))
    for start in range(0, n_boot, block):
        m = min(block, n_boot - start)
        effects = np.zeros((n_cells, m))
        for c, s in zip(codes, sd[:-1], strict=True):
            effects += (rng.standard_normal((int(c.max()) + 1, m)) * s)[c]
        sums = n_c * effects + np.sqrt(n_c) * sd[-1] * rng.standard_normal((n_cells, m))
        within = sigma2[-1] * rng.chisquare(df_within, m) if df_within else np.zeros(m)
        tss = within + np.einsum("cr,cr,c->r", sums, sums, 1.0 / n_c[:, 0])
        r = hend.reduce_cells(sums, tss)
        out[start : start + m] = np.maximum(np.linalg.solve(a_mat, r).T, 0.0)
    return out


def drift_test(y: Any, task: Any, time: Any, *, confidence: float = 0.95) -> DriftResult:
    """Within-task linear drift of the scores over the run, with a task-clustered Wald test.

    Model: y_gi = α_g + β·t_gi + e_gi, task fixed effects α_g, t ∈ [0, 1] the start time
    scaled over the run (``(time − min) / (max − min)``). With ỹ, t̃ demeaned within task
    (Frisch–Waugh–Lovell),

        β̂ = Σ t̃ ỹ / Σ t̃²,   V̂ = G/(G − 1) · Σ_g (Σ_i t̃_gi ê_gi)² / (Σ t̃²)²,

    ê = ỹ − β̂ t̃ (Liang–Zeger sandwich clustered by task, CR1 factor G/(G−1) — the fixed
    effects are nested in the clusters and not counted, as Cameron and Miller 2015 advise;
    statsmodels' ``OLS(ỹ, t̃).fit(cov_type="cluster")`` gives the same SE). The Wald
    statistic β̂ / SE is referred to t with G − 1 df.

    β is the change in success probability from the first trial of the run to the last,
    within a task; H0: no linear change. A time-block pattern with a linear component (a
    degrading API over the afternoon) shows up here; one without (a dip mid-run) shows up in
    the time-block variance component instead.

    Parameters
    ----------
    y : scores; task : task labels; time : start times (datetimes or seconds).
    confidence : CI level.
    """
    conf = check_probability(confidence)
    yv = np.asarray(y, dtype=float)
    tv = run_seconds(time)
    codes = _codes(task)
    if not (yv.shape == tv.shape == codes.shape):
        raise ValueError("y, task and time must have the same length")
    ok = np.isfinite(yv) & np.isfinite(tv)
    yv, tv, codes = yv[ok], tv[ok], codes[ok]
    warnings: list[str] = []
    nan = float("nan")
    span = float(tv.max() - tv.min()) if tv.size else 0.0
    g_all = np.bincount(codes) if codes.size else np.zeros(0, dtype=np.int64)
    n_tasks = int(np.count_nonzero(g_all >= 2))
    if span <= 0:
        warnings.append("every trial started at the same time: no drift can be estimated")
        return DriftResult(
            nan, nan, nan, nan, nan, nan, nan, int(yv.size), n_tasks, conf, tuple(warnings)
        )
    ts = (tv - tv.min()) / span
    cnt = np.bincount(codes).astype(float)
    yd = yv - (np.bincount(codes, weights=yv) / cnt)[codes]
    td = ts - (np.bincount(codes, weights=ts) / cnt)[codes]
    sxx = float(td @ td)
    if sxx <= 0:
        warnings.append("no task has trials at different times: no drift can be estimated")
        return DriftResult(
            nan, nan, nan, nan, nan, nan, nan, int(yv.size), n_tasks, conf, tuple(warnings)
        )
    slope = float(td @ yd / sxx)
    resid = yd - slope * td
    score = np.bincount(codes, weights=td * resid)
    g = int(cnt.size)
    df = float(g - 1)
    if g < 2:
        warnings.append("only one task: the clustered SE has no degrees of freedom")
        se = nan
    else:
        se = float(np.sqrt(g / (g - 1.0) * float(score @ score)) / sxx)
    if np.isfinite(se) and se > 0:
        t = slope / se
        p = float(2 * t_sf(abs(t), df))
        half = float(t_ppf(0.5 + conf / 2, df)) * se
    else:
        t = p = half = nan
        if se == 0:
            warnings.append("the clustered SE is 0 (every residual is 0)")
    return DriftResult(
        slope=slope,
        se=se,
        t=float(t),
        df=df,
        p=p,
        ci_low=slope - half,
        ci_high=slope + half,
        n_obs=int(yv.size),
        n_tasks=n_tasks,
        confidence=conf,
        warnings=tuple(warnings),
    )


def time_effects(
    trials: pd.DataFrame,
    *,
    n_time_blocks: int = 4,
    policy: str | Mapping[str, Any] | InfraPolicy = "as_incorrect",
    interaction: bool = True,
    infra_components: tuple[str, ...] = INFRA_COMPONENTS,
    n_boot: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> TimeEffectsResult:
    """Time and host as factors of one group's scores: variance shares and drift.

    Parameters
    ----------
    trials : one group's trial or score table, every attempt a row: ``task_id``,
        ``trial``, ``status``, ``score`` (or ``correct``), ``started_at``; ``host`` and
        ``attempt`` when present.
    n_time_blocks : equal-count blocks of ``started_at`` over the run (:func:`time_blocks`).
    policy : the infra policy giving each trial its score (default ``as_incorrect``: an
        outage in one part of the run is part of that part's score).
    interaction, infra_components, n_boot, confidence, seed : see
        :func:`variance_components`.

    Returns
    -------
    TimeEffectsResult

    Notes
    -----
    The counted trials (last attempt, ``policy`` applied) with a score and a start time are
    analysed: :func:`variance_components` of the scores on task, time block and host (rows
    without a host form their own level), and :func:`drift_test` on the start times.
    """
    require_columns(trials, "task_id", "trial", "status", "started_at")
    if "score" not in trials.columns and "correct" not in trials.columns:
        raise ValueError("the table has neither a 'score' nor a 'correct' column")
    one_group(trials)
    pol = infra_policy(policy)
    key = trial_key(trials)
    counted = apply_infra_policy(trials, pol, key=tuple(key)).counted
    y = score_values(counted)
    t = run_seconds(counted["started_at"])
    ok = np.isfinite(y) & np.isfinite(t)
    warnings: list[str] = []
    if (~ok).any():
        warnings.append(
            f"{int((~ok).sum())} counted trial(s) without a score or a start time are left out"
        )
    counted = counted[ok]
    y = y[ok]
    blocks = time_blocks(counted["started_at"], n_time_blocks)
    host = None
    n_hosts = 0
    if "host" in counted.columns:
        host = counted["host"].astype(object).where(counted["host"].notna(), "(unknown)")
        n_hosts = int(host.nunique())
    comp = variance_components(
        y,
        counted["task_id"].to_numpy(),
        blocks,
        None if host is None else host.to_numpy(),
        interaction=interaction,
        infra_components=infra_components,
        n_boot=n_boot,
        confidence=confidence,
        seed=seed,
    )
    drift = drift_test(
        y, counted["task_id"].to_numpy(), counted["started_at"], confidence=confidence
    )
    return TimeEffectsResult(
        components=comp,
        drift=drift,
        n_time_blocks=int(n_time_blocks),
        n_hosts=n_hosts,
        policy=pol.describe(),
        n_trials=int(y.size),
        warnings=tuple(warnings),
    )
