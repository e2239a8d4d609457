"""Permutation tests of factors within tasks: detection at its stated level on any task mix.

When a factor such as the time block a trial ran in, or the host it ran on, has no effect on
the score, a task's trials are exchangeable over the factor's labels: whatever the tasks'
difficulties (many near 0 and 1, or all near one value), shuffling the labels among a task's
trials gives tables exactly as likely as the one observed. A test that refers its statistic
to that shuffle distribution has its stated size by construction (Fisher 1935; Good 2005,
ch. 3), unlike the F tests and the MLS intervals of the variance components, which assume
normal scores and on 0/1 scores with few trials per cell reject too often.

The factors' labels are shuffled *together*, one permutation of the rows within each
stratum (the task, or the task × any other facet the run varied, so that the other facet's
effect stays with its rows), so every component's statistic is computed on the same
permutations and the family's tests are combined exactly (Westfall & Young 1993).

Statistics. With r_i = y_i − ȳ_s(i) the scores centred within their stratum (invariant
under the permutations), Q = Σ r_i², and for a factor f with levels l and a cell set c,

.. math::

    S_f = \\sum_l \\frac{R_l^2}{n_l},\\quad S_{tf} = \\sum_{g,l} \\frac{R_{gl}^2}{n_{gl}},
    \\qquad R_l = \\sum_{i: f(i)=l} r_i,\\ R_{gl} = \\sum_{i: t(i)=g, f(i)=l} r_i,

(the counts n are the same in every permutation: a shuffle within tasks keeps each task's
count of each label) the components are tested with the F ratios of the two-way random model
task × f (Brennan 2001, ch. 3; Searle, Casella & McCulloch 1992, ch. 4), constants dropped:

* the main effect of f, when the task × f interaction is fitted: F_f = S_f / (S_tf − S_f),
  the factor's mean square against the interaction's, because E[MS_f] = σ²_e + n σ²_tf +
  n G σ²_f: a task-specific effect alone does not make the main effect look detected (the
  main effect's test is then conservative: the shuffles spread the interaction over both);
  without the interaction, F_f = S_f / (Q − S_f);
* the interaction task × f: F_tf = (S_tf − S_f) / (Q − S_tf), against the within-cell
  variation (conservative in turn under a main effect alone).

S_f is the between-level sum of squares of the within-task-centred scores; S_tf − S_f is the
task × f interaction's sum of squares on a balanced design (on an unbalanced one it is the
variation of the cell means about the task and level means, still a valid statistic: the
permutation distribution, not a χ² approximation, gives its p-value).

p-values. With T_0 the observed statistic and T_1 … T_B those of B random permutations,
p = (1 + #{b : T_b ≥ T_0}) / (1 + B), exact under the null for any B (Phipson & Smyth 2010).
The family's components are combined by the single-step min-p procedure of Westfall & Young
(1993, Algorithm 2.8): with p_jk the p-value of T_jk among T_0k … T_Bk and m_j = min_k p_jk,
the adjusted p-value of component k is #{j : m_j ≤ p_0k} / (1 + B); the family's p-value —
the test that *every* component is 0, the test of their sum — is min_k of them. A component
is detected when its adjusted p-value is at most α, and the family is detected exactly when
one of its components is: the two can never disagree.

Power. The test conditions on each stratum's scores: only their arrangements over the labels
vary. A task whose trials all scored alike has one arrangement and adds nothing; with few
tasks whose trials differ (an agent that always or never solves most tasks) the arrangements
are few, and even the one with the largest statistic, T_max, is reached by a share of them:
its p-value, #{j : T_j ≥ T_max} / (1 + B), is the smallest any outcome of this design can
give (estimated on the same permutations; the adjusted one likewise, #{j : m_j ≤ that
count} / (1 + B)). When it exceeds α the component is *not testable at this design*: p = 1
then says nothing about the factor, and the result says so (``testable``).

Exchangeability is what the test needs and all it needs: the trials of a task independent
and identically distributed when the factor has no effect (hosts assigned to trials without
regard to the trial's outcome, e.g. at random). Under a partial null (a host effect but no
time effect, with hosts and time blocks associated) a shuffle of both labels is not exact
for the component that is null; the family's test of "no effect at all" always is.

References
----------
Fisher, R. A. (1935). *The Design of Experiments*. Oliver & Boyd.
Good, P. (2005). *Permutation, Parametric and Bootstrap Tests of Hypotheses*, 3rd ed. Springer.
Phipson, B. & Smyth, G. K. (2010). Permutation p-values should never be zero. *Statistical
Applications in Genetics and Molecular Biology* 9(1): 39.
Westfall, P. H. & Young, S. S. (1993). *Resampling-Based Multiple Testing*. Wiley.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ._checks import check_positive_int, check_probability
from ._results import DictResult

__all__ = ["FactorPermutationResult", "PermutationTestResult", "factor_permutation_test"]

#: permuted label values held at once (rows × permutations): the memory of one batch
_BATCH_CELLS = 1 << 21
#: ties: statistics closer than this (relative to 1 + |T|) are equal; the sums behind them are
#: the same numbers added in another order
_TIE = 1e-9


@dataclass(frozen=True)
class PermutationTestResult(DictResult):
    """One permutation test (see :func:`factor_permutation_test`).

    Attributes
    ----------
    statistic : the observed statistic.
    pvalue : (1 + #{T_b ≥ T_0}) / (1 + B).
    n_permutations : B.
    method : what was permuted and how the statistic is formed.
    pvalue_adjusted : the Westfall–Young single-step min-p adjusted p-value within its family
        (``pvalue`` for a family of one).
    """

    statistic: float
    pvalue: float
    n_permutations: int
    method: str
    pvalue_adjusted: float


@dataclass(frozen=True)
class FactorPermutationResult(DictResult):
    """A family of permutation tests of factors within tasks (:func:`factor_permutation_test`).

    Arrays are aligned with ``components``.

    Attributes
    ----------
    components : the tested components: a factor's name (its main effect) or
        ``task:<factor>`` (its interaction with the task).
    statistic : the observed F ratio of each (see the module docstring).
    pvalue : each component's own permutation p-value.
    pvalue_adjusted : Westfall–Young single-step min-p adjusted p-values.
    detected : ``pvalue_adjusted ≤ alpha``.
    family_pvalue : min of ``pvalue_adjusted``: the test that every component is 0 (1.0 for
        an empty family).
    family_detected : ``family_pvalue ≤ alpha``, which holds exactly when some component is
        detected.
    n_permutations : B, the random permutations (the observed table not counted).
    alpha : the level of ``detected``.
    seed : the permutations' seed.
    method : what was permuted, within what.
    warnings : components left out and why.
    min_pvalue_adjusted : the smallest adjusted p-value any arrangement of these scores could
        get: that of the arrangement with the largest statistic (module docstring, "Power").
    testable : ``min_pvalue_adjusted ≤ alpha``: the design can detect the component at all.
        False: whatever the factor does, these scores cannot give p ≤ alpha (too few tasks
        whose trials differ, too few distinct arrangements): "not testable at this design",
        not "no effect".
    """

    components: tuple[str, ...]
    statistic: np.ndarray
    pvalue: np.ndarray
    pvalue_adjusted: np.ndarray
    detected: np.ndarray
    family_pvalue: float
    family_detected: bool
    n_permutations: int
    alpha: float
    seed: int
    method: str
    warnings: tuple[str, ...] = field(default=())
    min_pvalue_adjusted: np.ndarray = field(default_factory=lambda: np.zeros(0))
    testable: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))

    def test(self, component: str) -> PermutationTestResult:
        """One component's test."""
        try:
            k = self.components.index(component)
        except ValueError:
            raise KeyError(f"no tested component {component!r}: {self.components}") from None
        return PermutationTestResult(
            statistic=float(self.statistic[k]),
            pvalue=float(self.pvalue[k]),
            n_permutations=self.n_permutations,
            method=self.method,
            pvalue_adjusted=float(self.pvalue_adjusted[k]),
        )


def _codes(x: Any) -> np.ndarray:
    codes, _ = pd.factorize(np.asarray(x), sort=True)
    return codes.astype(np.int64)


def _ratio(num: np.ndarray, den: np.ndarray, scale: float) -> np.ndarray:
    """num / den for sums of squares: a denominator that is rounding (≤ 1e-12 · scale) is 0,
    and then the ratio is +inf for a real numerator and 0 for none."""
    eps = 1e-12 * scale
    num = np.where(num > eps, num, 0.0)
    big = np.where(num > 0, np.inf, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > eps, num / np.where(den > eps, den, 1.0), big)


def _tail_counts(stats: np.ndarray) -> np.ndarray:
    """For a column of statistics T_0 … T_B (rows), #{j : T_j ≥ T_i} for every i (ties within
    :data:`_TIE` count as equal)."""
    n = stats.shape[0]
    out = np.empty(stats.shape, dtype=np.int64)
    for k in range(stats.shape[1]):
        col = stats[:, k]
        ordered = np.sort(col)
        with np.errstate(invalid="ignore"):  # inf − inf where the statistic is inf
            lower = np.where(np.isfinite(col), col - _TIE * (1.0 + np.abs(col)), col)
        out[:, k] = n - np.searchsorted(ordered, lower, side="left")
    return out


def _within_strata_shuffler(
    r: np.ndarray, s: np.ndarray, counts: np.ndarray, rng: np.random.Generator
) -> Any:
    """A function m → (m, n): m independent uniform shuffles of ``r`` within its strata (rows
    sorted by stratum ``s``, ``counts`` rows each). With strata of near-equal size, each is a
    row of a (strata × largest) table, padded, shuffled along its row (linear time); else an
    argsort of stratum + a uniform key."""
    n, n_strata, widest = r.size, counts.size, int(counts.max(initial=0))
    if n_strata * widest > 2 * n:

        def by_sort(m: int) -> np.ndarray:
            return r[np.argsort(rng.random((m, n)) + s[None, :], axis=1)]

        return by_sort
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    table = np.full((n_strata, widest), np.nan)
    table[s, np.arange(n) - starts[s]] = r
    padded = n_strata * widest > n

    def by_rows(m: int) -> np.ndarray:
        shuffled = rng.permuted(np.broadcast_to(table, (m, n_strata, widest)), axis=2)
        if not padded:
            return shuffled.reshape(m, n)
        # each (permutation, stratum) row keeps its count of values: dropping the padding
        # leaves every stratum's values, shuffled, in its own rows' places
        return shuffled[~np.isnan(shuffled)].reshape(m, n)

    return by_rows


def _factor_labels(
    factors: Mapping[str, Any], n: int, warnings: list[str]
) -> dict[str, np.ndarray]:
    """Each factor's label codes; a factor with one level is not tested (a warning)."""
    labels: dict[str, np.ndarray] = {}
    for name, values in factors.items():
        codes = _codes(values)
        if codes.size != n:
            raise ValueError(f"factor {name!r} must have the same length as y")
        if codes.max(initial=0) < 1:
            warnings.append(f"factor {name!r} has one level: not tested")
            continue
        labels[name] = codes
    return labels


def _components(
    labels: Mapping[str, np.ndarray],
    t: np.ndarray,
    n_tasks: int,
    interactions: Sequence[str],
    main_effects: Sequence[str] | None,
    factors: Mapping[str, Any],
    warnings: list[str],
) -> tuple[list[tuple[str, str, str]], set[str]]:
    """The components tested, as (name, factor, kind) with kind "main" or "interaction", and
    the factors whose task interaction is tested (it needs a cell of two trials and a degree
    of freedom)."""
    with_interaction: set[str] = set()
    for name in interactions:
        if name not in labels:
            continue
        k = int(labels[name].max()) + 1
        cell_n = np.bincount(t * k + labels[name], minlength=n_tasks * k)
        used = int(np.count_nonzero(cell_n))
        if cell_n.max(initial=0) < 2:
            warnings.append(f"no task × {name} cell holds two trials: task:{name} is not tested")
        elif used - n_tasks - k + 1 < 1:
            warnings.append(f"task:{name} has no degrees of freedom here: not tested")
        else:
            with_interaction.add(name)
    mains = set(labels if main_effects is None else main_effects)
    if mains - set(factors):
        raise ValueError(f"main_effects name factors not given: {sorted(mains - set(factors))}")
    tested = [(name, name, "main") for name in labels if name in mains]
    tested += [(f"task:{name}", name, "interaction") for name in labels if name in with_interaction]
    return tested, with_interaction


def _westfall_young(stats: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """From the statistics (row 0 observed, B permuted rows): each component's permutation
    p, (1 + #{b : T_b ≥ T_obs}) / (B + 1), its Westfall–Young min-p adjusted p,
    (1 + #{b : min_k p_bk ≤ p_k}) / (B + 1) over the family, the smallest adjusted p any
    arrangement of these scores reaches (that of the largest statistic, the module's
    "Power"), and the family's p."""
    tail = _tail_counts(stats)  # (B + 1, K): #{j : T_j ≥ T_i}
    total = stats.shape[0]
    k_range = range(stats.shape[1])
    pvalue = tail[0] / total
    m_j = tail.min(axis=1)
    adjusted = np.array([np.count_nonzero(m_j <= tail[0, k]) for k in k_range]) / total
    top = stats.max(axis=0)
    with np.errstate(invalid="ignore"):
        reach = np.where(np.isfinite(top), top - _TIE * (1.0 + np.abs(top)), top)
    at_top = (stats >= reach[None, :]).sum(axis=0)
    least = np.array([np.count_nonzero(m_j <= at_top[k]) for k in k_range]) / total
    return pvalue, adjusted, least, float(adjusted.min())


def _scores_tasks_strata(y: Any, task: Any, strata: Any) -> tuple[np.ndarray, ...]:
    """The scores, task codes and stratum codes (the tasks' without ``strata``), checked:
    finite scores, equal lengths, strata nested in tasks."""
    yv = np.asarray(y, dtype=float)
    if yv.ndim != 1 or not np.isfinite(yv).all():
        raise ValueError("y must be a 1-D array of finite scores")
    t = _codes(task)
    if t.size != yv.size:
        raise ValueError("y and task must have the same length")
    s = t if strata is None else _codes(strata)
    if s.size != yv.size:
        raise ValueError("strata must have the same length as y")
    if strata is not None:
        per_stratum = pd.Series(t).groupby(s).nunique()
        if (per_stratum > 1).any():
            raise ValueError("strata must be nested in tasks: a stratum holds trials of two tasks")
    return yv, t, s


def factor_permutation_test(
    y: Any,
    task: Any,
    factors: Mapping[str, Any],
    *,
    interactions: Sequence[str] = (),
    main_effects: Sequence[str] | None = None,
    strata: Any = None,
    n_permutations: int = 999,
    seed: int = 0,
    alpha: float = 0.05,
) -> FactorPermutationResult:
    """Permutation tests of factors' effects on the scores within tasks, as one family.

    H0 (of the family): within each stratum the scores are exchangeable over the factors'
    labels — no factor changes the score. The rows' labels (all factors together) are
    permuted within strata B times; each component's F ratio (module docstring) is referred
    to its permutation distribution, p = (1 + #{T_b ≥ T_0}) / (1 + B), and the components
    are combined by Westfall–Young single-step min-p: adjusted p_k = #{j : min_k' p_jk' ≤
    p_0k} / (1 + B), j over the observed table and the B permutations. The family's p-value
    is min_k of the adjusted ones; the family's size and every component's (under the
    family's null) is at most α exactly, for any score distribution and task mix.

    Parameters
    ----------
    y : scores, one per trial (0/1 or any real number), finite.
    task : task labels, same length.
    factors : name → labels (e.g. ``{"time_block": blocks, "host": hosts}``); a factor with
        one level is not tested (a warning says so).
    interactions : factors whose interaction with the task is tested too (named
        ``task:<factor>``); it needs a task × factor cell with two trials, and its main
        effect is then tested against it.
    main_effects : factors whose main effect is in the family (default: every factor); a
        factor left out still shapes its interaction's test.
    strata : labels within which rows are permuted and scores centred (default: the task).
        Must be nested in the task (each stratum within one task): e.g. task × prompt
        variant, so a variant's effect is not read as the factors'.
    n_permutations : B.
    seed : seed of the permutations (the same seed, the same p-values).
    alpha : level of ``detected``.

    Returns
    -------
    FactorPermutationResult
    """
    level = check_probability(alpha, "alpha")
    b_total = check_positive_int(n_permutations, "n_permutations")
    yv, t, s = _scores_tasks_strata(y, task, strata)
    unknown = set(interactions) - set(factors)
    if unknown:
        raise ValueError(f"interactions name factors not given: {sorted(unknown)}")
    warnings: list[str] = []
    labels = _factor_labels(factors, yv.size, warnings)

    # rows sorted by stratum: a permutation within strata is then an argsort of
    # stratum + uniform key, each stratum's rows staying in its own slice
    order = np.argsort(s, kind="stable")
    s, t, yv = s[order], t[order], yv[order]
    labels = {k: v[order] for k, v in labels.items()}
    n = yv.size
    counts = np.bincount(s)
    r = yv - (np.bincount(s, weights=yv) / counts)[s]
    q = float(r @ r)
    n_tasks = int(t.max(initial=-1)) + 1

    tested, with_interaction = _components(
        labels, t, n_tasks, interactions, main_effects, factors, warnings
    )
    names = tuple(p[0] for p in tested)
    method = (
        f"permutation of {' and '.join(labels) or 'no factor'} labels within "
        f"{'tasks' if strata is None else 'strata'}; F ratios; Westfall-Young min-p"
    )
    if not tested:
        empty = np.zeros(0)
        return FactorPermutationResult(
            components=(), statistic=empty, pvalue=empty, pvalue_adjusted=empty,
            detected=np.zeros(0, dtype=bool), family_pvalue=1.0, family_detected=False,
            n_permutations=b_total, alpha=level, seed=int(seed), method=method,
            warnings=tuple(warnings), min_pvalue_adjusted=empty, testable=empty.astype(bool),
        )  # fmt: skip

    levels = {k: int(v.max()) + 1 for k, v in labels.items()}
    n_level = {k: np.bincount(v, minlength=levels[k]).astype(float) for k, v in labels.items()}
    cell_of = {k: t * levels[k] + labels[k] for k in with_interaction}
    n_cell = {
        k: np.bincount(cell_of[k], minlength=n_tasks * levels[k]).astype(float)
        for k in with_interaction
    }
    scale = max(q, 1e-300)
    batch = max(1, min(b_total, _BATCH_CELLS // max(n, 1)))
    # shuffling the scores among a stratum's rows is shuffling its labels: the codes of the
    # cells stay fixed and are laid out once for a whole batch of permutations
    offsets = np.arange(batch)[:, None]
    main_codes = {k: (offsets * levels[k] + v[None, :]).ravel() for k, v in labels.items()}
    cell_codes = {
        k: (offsets * (n_tasks * levels[k]) + cell_of[k][None, :]).ravel() for k in with_interaction
    }

    def statistics(rp: np.ndarray) -> np.ndarray:
        """F ratios of every component for a batch of permuted scores (rows of ``rp``)."""
        m = rp.shape[0]
        w = rp.ravel()
        ss_main, ss_cell = {}, {}
        for k in labels:
            nl = levels[k]
            sums = np.bincount(main_codes[k][: m * n], weights=w, minlength=m * nl)
            ss_main[k] = (sums.reshape(m, nl) ** 2 / n_level[k]).sum(axis=1)
            if k in with_interaction:
                cells = n_tasks * nl
                sums = np.bincount(cell_codes[k][: m * n], weights=w, minlength=m * cells)
                nc = n_cell[k]
                keep = nc > 0
                ss_cell[k] = (sums.reshape(m, cells)[:, keep] ** 2 / nc[keep]).sum(axis=1)
        out = np.empty((m, len(tested)))
        for j, (_, k, kind) in enumerate(tested):
            if kind == "main":
                den = ss_cell[k] - ss_main[k] if k in with_interaction else q - ss_main[k]
                out[:, j] = _ratio(ss_main[k], den, scale)
            else:
                out[:, j] = _ratio(ss_cell[k] - ss_main[k], q - ss_cell[k], scale)
        return out

    rng = np.random.default_rng(seed)
    shuffle = _within_strata_shuffler(r, s, counts, rng)
    parts = [statistics(r[None, :])]
    done = 0
    while done < b_total:
        m = min(batch, b_total - done)
        parts.append(statistics(shuffle(m)))
        done += m
    stats = np.vstack(parts)  # row 0: observed
    if q <= 1e-12 * max(float(yv @ yv), 1e-300):
        # every stratum's scores equal: nothing varies, nothing to detect
        stats[:] = 0.0
    pvalue, adjusted, least, family = _westfall_young(stats)
    detected = adjusted <= level
    return FactorPermutationResult(
        components=names,
        statistic=stats[0].copy(),
        pvalue=pvalue.astype(float),
        pvalue_adjusted=adjusted.astype(float),
        detected=detected,
        family_pvalue=family,
        family_detected=bool(family <= level),
        n_permutations=b_total,
        alpha=level,
        seed=int(seed),
        method=method,
        warnings=tuple(warnings),
        min_pvalue_adjusted=least.astype(float),
        testable=least <= level,
    )
