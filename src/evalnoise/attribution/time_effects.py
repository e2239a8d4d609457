"""Time and host as factors: how much of the score variance is the infrastructure's?

The infrastructure-noise article observes that pass rates fluctuate with the time of day
("likely because API latency varies with traffic patterns and incidents") without
quantifying it, and recommends running evals at several times. With a run's trials spread
over its duration, time is a factor that can be measured: this module splits the variance of
the trial scores into a task component (what the benchmark should measure), time-block and
host components and their interaction with tasks (what the infrastructure adds), and a
residual (the agent's own trial-to-trial variation), and tests for a drift of success over
the run within tasks.

Why a linear model on 0/1 scores, and which estimator
------------------------------------------------------

The quantities a report needs are *variance shares of the score itself*: the variance of an
accuracy is a sum of exactly these components divided by the numbers of tasks, blocks and
trials, so components on the probability scale add up to what the confidence interval sees.
A logit-scale GLMM gives latent-scale components whose shares depend on the π²/3
convention for the residual and do not map back onto the score's variance without a further
approximation. The linear model on 0/1 data is heteroscedastic (Var = p(1 − p) per trial),
which does not bias moment estimators — they only use first and second moments — but makes
normal-theory likelihoods (REML) only a working model.

The components are those of the project's one variance model, the G study
(:func:`evalnoise.stats.gstudy`): the design is task × time block [× host] with the
task × time-block interaction, trials replicated within the cells. Trials fall into time
blocks by their start times, so the design is unbalanced as a rule and the estimates are
REML (ANOVA when it happens to be balanced), every component ≥ 0. Each component has a
modified large-sample (MLS) interval from the design's Henderson III mean squares (Ting et
al. 1990), cut at 0.25 (the largest variance of a score in [0, 1]): the interval gives the
component's *magnitude*.

Whether an infrastructure component is *detected* is decided by a test whose size is right
by construction: with no time or host effect a task's trials are exchangeable over their
time-block and host labels, so :func:`evalnoise.stats.permutation.factor_permutation_test`
shuffles those labels within tasks (within task × prompt variant × sampling when the run
varied them) and tests time block, host and task × time block as one family (F ratios of
the two-way random model, Westfall–Young min-p). The MLS intervals are normal-theory
approximations, which on 0/1 scores with few trials per cell and tasks near 0 and 1 exclude
0 more often than their level says; the permutation family's false-detection rate and power
over task mixes and trial orders are in ``benchmarks/results/
infra_detection_calibration.md``. The share is reported by the one rule of
:func:`evalnoise.stats.shares.share_decision`: detected when the family's test (of the sum
of its components) rejects, which is exactly when one of its components is detected.

Drift (a change of success over the run within tasks) is :mod:`evalnoise.attribution.drift`'s.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from evalnoise.runner.infra_policies import InfraPolicy, apply_infra_policy, infra_policy
from evalnoise.stats._checks import check_probability
from evalnoise.stats.permutation import FactorPermutationResult, factor_permutation_test
from evalnoise.stats.shares import ShareDecision, share_decision

from ._json import records
from ._trial_frame import (
    one_group,
    require_columns,
    run_seconds,
    score_values,
    time_blocks,
    trial_key,
)
from .drift import DriftResult, drift_test

if TYPE_CHECKING:
    from evalnoise.stats.gstudy import GStudyResult

__all__ = [
    "INFRA_COMPONENTS",
    "TimeEffectsResult",
    "VarianceComponentsResult",
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


@dataclass(frozen=True)
class VarianceComponentsResult:
    """Crossed variance components of the scores (see :func:`variance_components`).

    Arrays are aligned with ``components`` (the estimable ones, residual last).

    Attributes
    ----------
    components : names: ``task``, ``time_block``, ``host``, ``task:time_block``,
        ``residual``.
    sigma2 : the estimates (REML, or ANOVA on a balanced design), every one ≥ 0.
    sigma2_raw : before truncation (REML: the same).
    share : sigma2 / total_variance.
    ci_low, ci_high : MLS interval of each sigma2 (the magnitude), upper end cut at the
        largest variance the scores' range allows.
    detected : the infrastructure components (``detected_by`` ``"permutation"``): the
        permutation family's adjusted p-value ≤ 1 − confidence, under the share rule
        (:func:`evalnoise.stats.shares.share_decision`); the others: ci_low > 0.
    pvalue : each infrastructure component's adjusted permutation p-value (NaN for the
        others).
    detected_by : per component, ``"permutation"`` or the interval's method.
    min_pvalue : per permutation-tested component the smallest adjusted p-value its design
        can give (:attr:`~evalnoise.stats.permutation.FactorPermutationResult.
        min_pvalue_adjusted`; above 1 − confidence: not testable at this design), NaN for
        the others.
    share_ci_low, share_ci_high : the interval of each sigma2 over total_variance.
    df : the degrees of freedom of each component's mean square.
    n_levels : levels of each factor (trials for the residual).
    total_variance : Σ sigma2.
    infra_share : Σ sigma2 over ``infra_components`` / total_variance.
    infra_share_ci_low, infra_share_ci_high : the MLS interval of that sum (a linear
        combination of the mean squares) over total_variance, clipped to [0, 1].
    infra_detected : the permutation family of the share's components rejects "every one
        is 0" (the test of their sum): exactly when one of them is detected; when False the
        share is reported as not detected.
    infra_components : the components summed in ``infra_share`` (those of the requested
        ones that were fitted; by default :data:`INFRA_COMPONENTS`).
    n_obs : trials used.
    confidence : interval level.
    method : the G study's estimator (``"reml"`` or ``"anova"``); ``ci_method`` ``"mls"``.
    gstudy : the :class:`~evalnoise.stats.gstudy.GStudyResult` behind it.
    warnings : dropped components, truncations and degenerate cases.
    infra_pvalue : the family's p-value (NaN when nothing was tested).
    permutation : the :class:`~evalnoise.stats.permutation.FactorPermutationResult`.
    share_rule : the :class:`~evalnoise.stats.shares.ShareDecision` of the share.
    """

    components: tuple[str, ...]
    sigma2: np.ndarray
    sigma2_raw: np.ndarray
    share: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    detected: np.ndarray
    share_ci_low: np.ndarray
    share_ci_high: np.ndarray
    df: np.ndarray
    n_levels: np.ndarray
    total_variance: float
    infra_share: float
    infra_share_ci_low: float
    infra_share_ci_high: float
    infra_detected: bool
    infra_components: tuple[str, ...]
    n_obs: int
    confidence: float
    method: str
    ci_method: str
    gstudy: GStudyResult | None = None
    warnings: tuple[str, ...] = field(default=())
    pvalue: np.ndarray | None = None
    detected_by: tuple[str, ...] = field(default=())
    infra_pvalue: float = float("nan")
    permutation: FactorPermutationResult | None = None
    share_rule: ShareDecision | None = None
    min_pvalue: np.ndarray | None = None

    def __getitem__(self, component: str) -> float:
        """The estimate of one component, by name."""
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
                "detected": self.detected,
                "detected_by": list(self.detected_by) or None,
                "pvalue": self.pvalue,
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
            "ci_method": self.ci_method,
            "n_obs": self.n_obs,
            "total_variance": float(self.total_variance),
            "infra_share": float(self.infra_share),
            "infra_share_ci_low": float(self.infra_share_ci_low),
            "infra_share_ci_high": float(self.infra_share_ci_high),
            "infra_detected": bool(self.infra_detected),
            "infra_pvalue": float(self.infra_pvalue),
            "n_permutations": None if self.permutation is None else self.permutation.n_permutations,
            "infra_components": list(self.infra_components),
            "confidence": float(self.confidence),
            "components": records(self.to_frame()),
            "warnings": list(self.warnings),
        }


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
    #: the task-clustered SE of the same scores' mean of task means
    #: (:func:`evalnoise.stats.accuracy`), beside which the total-error SE is read
    se_clustered: float | None = None

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


def _codes(x: Any) -> np.ndarray:
    codes, _ = pd.factorize(np.asarray(x), sort=True)
    return codes.astype(np.int64)


def _design(
    n: int,
    t: np.ndarray,
    b: np.ndarray,
    host: Any,
    extra_facets: Mapping[str, Any] | None,
    interaction: bool,
) -> tuple[dict[str, np.ndarray], list[tuple[str, ...]], list[str]]:
    """The G study's facets (label codes), its effects, and a warning for each effect the
    data cannot identify (a facet with one level adds none; an interaction needs a cell of
    two trials)."""
    warnings: list[str] = []
    facets: dict[str, np.ndarray] = {TASK: t, BLOCK: b}
    effects: list[tuple[str, ...]] = [(TASK,), (BLOCK,)]
    if host is not None:
        h = _codes(host)
        if h.size != n:
            raise ValueError("host must have the same length as y")
        if h.max(initial=0) > 0:
            facets[HOST] = h
            effects.append((HOST,))
    for name, labels in (extra_facets or {}).items():
        if name in (TASK, BLOCK, HOST):
            raise ValueError(f"facet {name!r} clashes with a facet of the model")
        codes = _codes(labels)
        if codes.size != n:
            raise ValueError(f"facet {name!r} must have the same length as y")
        if codes.max(initial=0) > 0:  # a facet with one level is no source of variance
            facets[name] = codes
            effects.append((name,))
    crossed = [n for n in facets if n not in (TASK, BLOCK, HOST)]
    if interaction:
        crossed.append(BLOCK)
    for name in crossed:
        cells = t * (facets[name].max(initial=0) + 1) + facets[name]
        if np.bincount(cells).max(initial=0) >= 2:
            effects.append((TASK, name))
        else:
            warnings.append(
                f"no task × {name.replace('_', '-') if name == BLOCK else name} cell holds two "
                f"trials: the task:{name} component cannot be told from the residual and is "
                "not fitted"
            )
    return facets, effects, warnings


def variance_components(
    y: Any,
    task: Any,
    block: Any,
    host: Any = None,
    *,
    interaction: bool = True,
    infra_components: tuple[str, ...] = INFRA_COMPONENTS,
    confidence: float = 0.95,
    method: str = "auto",
    extra_facets: Mapping[str, Any] | None = None,
    n_permutations: int = 999,
    seed: int = 0,
) -> VarianceComponentsResult:
    """Crossed random-effects variance components of one group's trials, by the G study.

    Model, one row per trial i:

        y_i = μ + a_task(i) + b_block(i) [+ h_host(i)] [+ c_task×block(i)]
              [+ p_f(i) + d_task×f(i), for each facet f of ``extra_facets``] + e_i,

    every effect an independent zero-mean random effect with its own variance, e_i the
    residual: :func:`evalnoise.stats.gstudy` with the design task × time_block [× host] and
    the effects task, time_block, host, task × time_block (no host interaction), trials
    replicated in the cells. See the module docstring for the estimator and the interval.

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
    confidence : interval level.
    method : the G study's ``method`` (``"auto"``: REML, or ANOVA on a balanced design).
    extra_facets : other random facets the run varied, name → labels (the prompt variant and the
        sampling settings of :mod:`evalnoise.pipeline.variants`), crossed with the rest:
        each with more than one level adds its main effect and its interaction with the
        task (``task:<name>``), never counted as infrastructure. Without them, a variant's
        variance would sit in the residual — or, in a run grown by a variant, in the time
        block its trials ran in. The permutations stay within task × these facets.
    n_permutations, seed : of the permutation test that decides detection
        (:func:`evalnoise.stats.permutation.factor_permutation_test`); the same seed, the
        same decision.

    Returns
    -------
    VarianceComponentsResult

    Notes
    -----
    Components that the design cannot identify (a factor with one level, or confounded with
    the others, e.g. every host used in only one block) are dropped with a warning.
    ``infra_share`` = (σ²_block + σ²_host + σ²_task×block) / Σσ² by default, over the
    components present: variance that depends on when or where a trial ran rather than on
    which task it was or on the agent's own trial-to-trial variation. Its interval is the MLS
    interval of the summed components (a linear combination of mean squares, Ting et al.
    1990; upper end cut at the largest variance of the scores) divided by the estimated total
    variance. Detection is the permutation family's: the time block, host and task × time
    block components fitted are tested by shuffling their labels within tasks, the share's
    components as one Westfall–Young family (``infra_detected``: the family rejects), any
    other of them on its own; the share rule (:func:`evalnoise.stats.shares.share_decision`)
    keeps the share's and the components' lines from disagreeing.
    """
    from evalnoise.stats.gdesign import Design, Facet
    from evalnoise.stats.gstudy import gstudy

    conf = check_probability(confidence)
    unknown = set(infra_components) - {TASK, BLOCK, HOST, TASK_BLOCK}
    if unknown:
        raise ValueError(f"unknown infra components: {sorted(unknown)}")
    yv = np.asarray(y, dtype=float)
    if yv.ndim != 1 or not np.isfinite(yv).all():
        raise ValueError("y must be a 1-D array of finite scores")
    t, b = _codes(task), _codes(block)
    if not (t.size == b.size == yv.size):
        raise ValueError("y, task and block must have the same length")
    if t.max(initial=0) < 1:
        raise ValueError("need at least two tasks")
    facets, effects, warnings = _design(yv.size, t, b, host, extra_facets, interaction)
    design = Design(tuple(Facet(n) for n in facets), effects=tuple(effects), replicate="trial")
    g = gstudy(yv, facets, design, method=method, confidence=conf)
    # the engine names an interaction in Brennan's notation (task×time_block), we with ":"
    engine_names = {f"{TASK}×{n}": f"{TASK}:{n}" for n in facets if n != TASK}
    names = tuple(engine_names.get(n, n) for n in g.effects)
    for w in g.warnings:
        for engine, ours in engine_names.items():
            w = w.replace(engine, ours)
        if "one score per cell" not in w:
            warnings.append(w)
    total = float(g.total_variance)
    infra = tuple(n for n in names if n in infra_components)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = g.sigma2 / total if total > 0 else np.full(len(names), np.nan)
        share_lo = np.minimum(g.ci_low / total, 1.0) if total > 0 else np.full(len(names), np.nan)
        share_hi = np.minimum(g.ci_high / total, 1.0) if total > 0 else np.full(len(names), np.nan)
    infra_share, ilo, ihi = _infra_share(g, share, [names.index(n) for n in infra], total, conf)
    # detection: the permutation family of the share's components, the rest on their own
    family, others = _permutation_tests(
        yv, t, facets, names, infra, conf, n_permutations=n_permutations, seed=seed
    )
    pvalues, least, detected_all, detected_by, rule = _detections(
        g, names, infra, family, others, total
    )
    detected = rule.detected
    warnings.extend(family.warnings)
    levels = np.array([*g.n_levels[:-1], int(yv.size)], dtype=np.int64)
    return VarianceComponentsResult(
        components=names,
        sigma2=np.asarray(g.sigma2, dtype=float),
        sigma2_raw=np.asarray(g.sigma2_raw, dtype=float),
        share=share,
        ci_low=np.asarray(g.ci_low, dtype=float) if total > 0 else np.full(len(names), np.nan),
        ci_high=np.asarray(g.ci_high, dtype=float) if total > 0 else np.full(len(names), np.nan),
        detected=detected_all,
        share_ci_low=share_lo,
        share_ci_high=share_hi,
        df=np.asarray(g.df, dtype=float),
        n_levels=levels,
        total_variance=total,
        infra_share=infra_share,
        infra_share_ci_low=float(ilo),
        infra_share_ci_high=float(ihi),
        infra_detected=bool(detected),
        infra_components=infra,
        n_obs=int(yv.size),
        confidence=conf,
        method=g.method,
        ci_method=g.ci_method,
        gstudy=g,
        warnings=tuple(warnings),
        pvalue=pvalues,
        detected_by=tuple(detected_by),
        infra_pvalue=float(family.family_pvalue) if family.components else float("nan"),
        permutation=family,
        share_rule=rule,
        min_pvalue=least,
    )


def _infra_share(
    g: GStudyResult, share: np.ndarray, idx: list[int], total: float, conf: float
) -> tuple[float, float, float]:
    """The infrastructure's share of the variance (the components at ``idx``) with the MLS
    interval of their sum (Ting et al. 1990), cut at the largest variance of the scores."""
    from evalnoise.stats._gmoments import mls_interval

    if total > 0 and idx:
        infra_share = float(share[idx].sum())
        lo, hi = mls_interval(g.ms_coefficients[idx].sum(axis=0), g.ms, g.df, 1.0 - conf)
        lo, hi = max(lo, 0.0), min(max(hi, 0.0), max(g.variance_bound, infra_share * total))
        return infra_share, min(lo / total, 1.0), min(hi / total, 1.0)
    if total > 0:
        return 0.0, 0.0, 0.0
    return float("nan"), float("nan"), float("nan")


def _detections(
    g: GStudyResult,
    names: tuple[str, ...],
    infra: tuple[str, ...],
    family: FactorPermutationResult,
    others: FactorPermutationResult,
    total: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str], ShareDecision]:
    """Each component's p, the smallest p its design can give, whether it is detected and by
    what: the permutation tests for the time and host components, the G study's interval
    for the rest, and the share rule over the share's components."""
    pvalues = np.full(len(names), np.nan)
    least = np.full(len(names), np.nan)
    detected_all = np.asarray(g.detected, dtype=bool).copy()
    detected_by = [g.ci_method] * len(names)
    own = {}
    for res in (family, others):
        for j, comp in enumerate(res.components):
            i = names.index(comp)
            pvalues[i] = res.pvalue_adjusted[j]
            least[i] = res.min_pvalue_adjusted[j]
            detected_all[i] = bool(res.detected[j])
            detected_by[i] = "permutation"
            if res is family:
                own[comp] = bool(res.detected[j])
    rule = share_decision(
        family.family_detected and total > 0, {c: own.get(c, False) for c in infra}
    )
    for comp, flag in zip(rule.components, rule.component_detected, strict=True):
        detected_all[names.index(comp)] = flag
    return pvalues, least, detected_all, detected_by, rule


def _permutation_tests(
    y: np.ndarray,
    task: np.ndarray,
    facets: Mapping[str, np.ndarray],
    names: tuple[str, ...],
    share: tuple[str, ...],
    confidence: float,
    *,
    n_permutations: int,
    seed: int,
) -> tuple[FactorPermutationResult, FactorPermutationResult]:
    """The permutation tests of the fitted time and host components: those of the share as
    one family, the others (left out of the share by ``infra_components``) as another.
    Labels are permuted within task × the extra facets (a variant's effect stays with its
    rows)."""
    extra = [n for n in facets if n not in (TASK, BLOCK, HOST)]
    strata = None
    if extra:
        strata = pd.MultiIndex.from_arrays([task, *(facets[n] for n in extra)]).factorize()[0]

    def run(components: tuple[str, ...]) -> FactorPermutationResult:
        needed = {*components, *((BLOCK,) if TASK_BLOCK in components else ())}
        factors = {f: facets[f] for f in (BLOCK, HOST) if f in facets and f in needed}
        return factor_permutation_test(
            y,
            task,
            factors,
            interactions=(BLOCK,) if TASK_BLOCK in components else (),
            main_effects=[f for f in factors if f in components],
            strata=strata,
            n_permutations=n_permutations,
            seed=seed,
            alpha=1.0 - confidence,
        )

    infra_like = tuple(n for n in names if n in (BLOCK, HOST, TASK_BLOCK))
    return run(share), run(tuple(n for n in infra_like if n not in share))


def time_effects(
    trials: pd.DataFrame,
    *,
    n_time_blocks: int = 4,
    policy: str | Mapping[str, Any] | InfraPolicy = "as_incorrect",
    interaction: bool = True,
    infra_components: tuple[str, ...] = INFRA_COMPONENTS,
    confidence: float = 0.95,
    n_permutations: int = 999,
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
    interaction, infra_components, confidence, n_permutations, seed : see
        :func:`variance_components`.

    Returns
    -------
    TimeEffectsResult

    Notes
    -----
    The counted trials (last attempt, ``policy`` applied) with a score and a start time are
    analysed: :func:`variance_components` of the scores on task, time block and host (rows
    without a host form their own level) and, when the group varied them, the prompt
    variant and the sampling settings (the columns ``prompt_variant`` and ``sampling``), and
    :func:`drift_test` on the start times.
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
    from evalnoise.runner.variant import VARIANT_COLUMNS

    varied = {
        name: counted[name].astype(object).where(counted[name].notna(), "(none)").to_numpy()
        for name in VARIANT_COLUMNS
        if name in counted.columns and counted[name].notna().any()
    }
    comp = variance_components(
        y,
        counted["task_id"].to_numpy(),
        blocks,
        None if host is None else host.to_numpy(),
        interaction=interaction,
        infra_components=infra_components,
        confidence=confidence,
        extra_facets=varied,
        n_permutations=n_permutations,
        seed=seed,
    )
    drift = drift_test(
        y, counted["task_id"].to_numpy(), counted["started_at"], confidence=confidence
    )
    from evalnoise.stats.accuracy import accuracy

    clustered = accuracy(y, counted["task_id"].to_numpy(), confidence=confidence).se_clustered
    return TimeEffectsResult(
        components=comp,
        drift=drift,
        n_time_blocks=int(n_time_blocks),
        n_hosts=n_hosts,
        policy=pol.describe(),
        n_trials=int(y.size),
        warnings=tuple(warnings),
        se_clustered=float(clustered),
    )
