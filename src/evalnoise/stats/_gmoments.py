"""Moment estimators of variance components and their intervals, for any design.

Three sets of quadratic forms, each with expectations linear in the components:

* :func:`anova_mean_squares` — balanced designs: Brennan's (2001, ch. 3) T terms,
  SS(α) = Σ_{S ⊆ primary(α)} (−1)^{|S|} T(α \\ S), df(α) = Π_{primary}(n_f − 1)·Π_{nesting} n_f,
  and the expected mean squares of random models (Cornfield–Tukey rules; Brennan ch. 3):
  E[MS(α)] = Σ_{β ⊇ α} π(β̄) σ²(β), π(β̄) the product of the sample sizes of the facets
  (and replicates) not in β.
* :func:`henderson3_mean_squares` — any design: for each effect α the reduction in the
  residual sum of squares when α is added to the model of every effect that does not
  contain it (fitting constants, Henderson 1953 method III; Searle, Casella & McCulloch 1992,
  ch. 5), with E[R] = Σ_h σ²_h (tr Z_h'M_S Z_h − tr Z_h'M_{S∪α} Z_h) + σ²_e·rank. On a
  balanced design these are the ANOVA mean squares; on a nested design the Type I ones.
* :func:`henderson1_t_terms` — Henderson's method I, Brennan's "analogous T terms" for
  unbalanced random designs (Brennan 2001, ch. 7): T(α) = Σ_a n_a ȳ_a², with
  E[T(α)] = Nμ² + Σ_β σ²_β Σ_a Σ_b n_ab²/n_a + (levels of α)·σ²_e.

Every component is then a linear combination Σ_j c_j MS_j, and its interval the modified
large-sample (MLS) interval of Ting et al. (1990) (Burdick & Graybill 1992, ch. 3; Brennan
2001, ch. 6), or Satterthwaite's (1946) interval (Brennan ch. 6).

References
----------
Brennan, R. L. (2001). *Generalizability Theory*. Springer: ch. 3, 6 and 7.
Burdick, R. K. & Graybill, F. A. (1992). *Confidence Intervals on Variance Components*.
Marcel Dekker: ch. 3.
Henderson, C. R. (1953). Estimation of variance and covariance components. *Biometrics* 9:
226–252.
Satterthwaite, F. E. (1946). An approximate distribution of estimates of variance components.
*Biometrics Bulletin* 2(6): 110–114.
Searle, S. R., Casella, G. & McCulloch, C. E. (1992). *Variance Components*. Wiley: ch. 4–5.
Ting, N., Burdick, R. K., Graybill, F. A., Jeyaratnam, S. & Lu, T.-F. C. (1990). Confidence
intervals on linear combinations of variance components that are unrestricted in sign.
*Journal of Statistical Computation and Simulation* 35: 135–143.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import sparse

from ._distributions import chi2_ppf, f_ppf
from .gdesign import CodedDesign

__all__ = [
    "MeanSquares",
    "anova_mean_squares",
    "henderson1_t_terms",
    "henderson3_mean_squares",
    "mls_interval",
    "satterthwaite_df",
    "satterthwaite_interval",
]


@dataclass(frozen=True)
class MeanSquares:
    """Quadratic forms of a design and their expectations.

    ``ms[j]`` has ``df[j]`` degrees of freedom and E[ms[j]] = Σ_k ems[j, k] σ²_k, the
    columns k being the random effects of the :class:`CodedDesign` then the residual; the
    rows the same effects then the residual, so ``ems`` is square and the moment estimates
    are ``solve(ems, ms)``.
    """

    ms: np.ndarray
    df: np.ndarray
    ems: np.ndarray
    method: str

    def estimates(self) -> np.ndarray:
        return np.linalg.solve(self.ems, self.ms)

    def coefficients(self) -> np.ndarray:
        """C with σ̂² = C·ms (row k: component k as a combination of mean squares)."""
        return np.linalg.inv(self.ems)


# --- balanced designs: T terms -----------------------------------------------------------


def _t_term(cd: CodedDesign, effect: Sequence[str]) -> float:
    """T(α) = Σ_a (Σ y over level a)² / n_a; T(∅) = (Σy)²/N."""
    if not effect:
        return float(cd.total.sum() ** 2 / cd.count.sum())
    codes, n = cd.effect_codes(effect)
    s = np.bincount(codes, weights=cd.total, minlength=n)
    c = np.bincount(codes, weights=cd.count, minlength=n)
    return float(np.sum(s * s / c))


def anova_mean_squares(cd: CodedDesign) -> MeanSquares:
    """Mean squares and expected mean squares of a balanced design (Brennan 2001, ch. 3).

    The model's effects are the fixed effects and the random effects of ``cd``; any effect
    of the full factorial left out (and the top effect when confounded) pools into the
    residual. Raises ValueError if ``cd`` is not balanced.
    """
    if not cd.balanced:
        raise ValueError("the ANOVA mean squares need a balanced design")
    d = cd.design
    n = dict(cd.sizes)
    rep = cd.replicates
    cache: dict[tuple[str, ...], float] = {}

    def t(e: tuple[str, ...]) -> float:
        if e not in cache:
            cache[e] = _t_term(cd, e)
        return cache[e]

    def ss_df(effect: tuple[str, ...]) -> tuple[float, float]:
        prim = d.primary(effect)
        ss = 0.0
        for size in range(len(prim) + 1):
            for drop in itertools.combinations(prim, size):
                rest = tuple(f for f in effect if f not in drop)
                ss += (-1) ** size * t(rest)
        df = math.prod(n[f] - 1 for f in prim) * math.prod(n[f] for f in effect if f not in prim)
        return ss, df

    model = [*d.fixed_effects(), *cd.effects]
    parts = {e: ss_df(e) for e in model}
    ss_res = cd.sum_sq - t(()) - sum(v[0] for v in parts.values())
    df_res = cd.n_obs - 1 - sum(v[1] for v in parts.values())
    ss_res = _zero_if_rounding(ss_res, cd.sum_sq)
    m = len(cd.effects)
    ms = np.empty(m + 1)
    df = np.empty(m + 1)
    ems = np.zeros((m + 1, m + 1))
    for j, e in enumerate(cd.effects):
        ss, dfe = parts[e]
        ms[j] = _zero_if_rounding(ss, cd.sum_sq) / dfe if dfe > 0 else np.nan
        df[j] = dfe
        for k, b in enumerate(cd.effects):
            if set(e) <= set(b):
                ems[j, k] = rep * math.prod(n[f] for f in d.names if f not in b)
        ems[j, m] = 1.0
    ms[m] = ss_res / df_res if df_res > 0 else np.nan
    df[m] = df_res
    ems[m, m] = 1.0
    return MeanSquares(ms, df, ems, "anova")


def _zero_if_rounding(ss: float, scale: float) -> float:
    """Sums of squares from differences of raw moments carry rounding error ~eps·Σy²."""
    return 0.0 if ss <= 1e-12 * max(scale, 1.0) else float(ss)


# --- Henderson's method I (analogous T terms) --------------------------------------------


def henderson1_t_terms(cd: CodedDesign) -> tuple[np.ndarray, np.ndarray]:
    """(A, r): Henderson's method I equations A σ² = r (Brennan 2001, ch. 7).

    Rows: T(α) − T(μ) for every random effect α, then Σy² − T(μ); columns: the random
    effects then the residual. E[T(α)] − E[T(μ)] = Σ_β σ²_β (k_αβ − k_μβ) + (L_α − 1) σ²_e,
    k_αβ = Σ_a Σ_b n_ab²/n_a, k_μβ = Σ_b n_b²/N, L_α the levels of α.
    """
    if len(cd.fixed_columns[0]) > 1:
        raise ValueError("Henderson's method I is for random models (no fixed facet)")
    m = len(cd.effects)
    n_obs = float(cd.n_obs)
    t_mu = _t_term(cd, ())
    k_mu = np.array(
        [np.sum(np.bincount(c, weights=cd.count, minlength=L) ** 2) / n_obs
         for c, L in zip(cd.cell_codes, cd.n_levels, strict=True)]
    )  # fmt: skip
    a = np.zeros((m + 1, m + 1))
    r = np.zeros(m + 1)
    for i, (ci, li) in enumerate(zip(cd.cell_codes, cd.n_levels, strict=True)):
        n_a = np.bincount(ci, weights=cd.count, minlength=li)
        s_a = np.bincount(ci, weights=cd.total, minlength=li)
        r[i] = float(np.sum(s_a * s_a / n_a)) - t_mu
        for j, (cj, lj) in enumerate(zip(cd.cell_codes, cd.n_levels, strict=True)):
            ab = ci * lj + cj
            uniq, inv = np.unique(ab, return_inverse=True)
            n_ab = np.bincount(inv, weights=cd.count)
            k = float(np.sum(n_ab**2 / n_a[uniq // lj]))
            a[i, j] = k - k_mu[j]
        a[i, m] = li - 1.0
    r[m] = cd.sum_sq - t_mu
    a[m, :m] = n_obs - k_mu
    a[m, m] = n_obs - 1.0
    return a, r


# --- Henderson's method III (fitting constants) ------------------------------------------


class _Space:
    """Column space of a fixed-effects model at the cells (weights n_c): the groups of its
    finest random effect (absorbed by weighted demeaning) plus an orthonormal basis of the
    rest, demeaned within those groups. Models are constant within cells, so a residual sum
    of squares is W + ‖M (√n ∘ ȳ)‖²."""

    def __init__(self, cd: CodedDesign, members: Sequence[int], with_fixed: bool) -> None:
        n = cd.count
        sq = np.sqrt(n)
        c = cd.n_cells
        if members:
            big = max(members, key=lambda k: cd.n_levels[k])
            self.groups, self.n_groups = cd.cell_codes[big], cd.n_levels[big]
            absorbed = set(cd.effects[big])
        else:
            self.groups, self.n_groups = np.zeros(c, dtype=np.int64), 1
            absorbed = set()
        self.group_n = np.bincount(self.groups, weights=n, minlength=self.n_groups)
        cols = []
        if with_fixed and cd.fixed_columns.shape[1] > 1:
            cols.append(cd.fixed_columns[:, 1:])
        for k in members:
            if not set(cd.effects[k]) <= absorbed:
                z = np.zeros((c, cd.n_levels[k]))
                z[np.arange(c), cd.cell_codes[k]] = 1.0
                cols.append(z)
        self.sq = sq
        if cols:
            w = np.hstack(cols)
            gm = np.vstack(
                [np.bincount(self.groups, weights=n * w[:, i], minlength=self.n_groups)
                 for i in range(w.shape[1])]
            ).T / self.group_n[:, None]  # fmt: skip
            wd = sq[:, None] * (w - gm[self.groups])
            # an orthonormal basis of the demeaned columns from the eigenvectors of their Gram
            # matrix (C·p² + p³ work, against an SVD's larger constant): indicator columns
            # are either independent, with eigenvalues of the order of the counts, or exactly
            # dependent, so squaring the condition number costs no rank decision
            lam, vec = np.linalg.eigh(wd.T @ wd)
            # relative to the columns before demeaning: when every one lies in the absorbed
            # span, what is left is rounding, however its largest eigenvalue compares
            keep = lam > max(float(n.max()), lam.max(initial=0.0)) * 1e-10
            self.u = (wd @ vec[:, keep]) / np.sqrt(lam[keep])
        else:
            self.u = np.zeros((c, 0))
        self.rank = self.n_groups + self.u.shape[1]

    def rss(self, cd: CodedDesign) -> float:
        """Residual sum of squares of the scores under this model."""
        v = self.sq * cd.mean
        g = np.bincount(self.groups, weights=cd.total, minlength=self.n_groups)
        fit = float(np.sum(g * g / self.group_n)) + float(np.sum((self.u.T @ v) ** 2))
        return cd.within_ss + float(np.sum(cd.total * cd.mean)) - fit

    def trace(self, cd: CodedDesign, k: int | None) -> float:
        """tr(Z' M Z) for the indicator Z of random effect k (None: the identity, the
        residual), at the level of the scores."""
        if k is None:
            return float(cd.n_obs - self.rank)
        codes, levels = cd.cell_codes[k], cd.n_levels[k]
        n = cd.count
        pair = self.groups * levels + codes
        uniq, inv = np.unique(pair, return_inverse=True)
        n_gj = np.bincount(inv, weights=n)
        within = float(np.sum(n_gj**2 / self.group_n[uniq // levels]))
        if self.u.shape[1]:
            su = self.sq[:, None] * self.u
            ind = sparse.csr_matrix((np.ones(codes.size), (codes, np.arange(codes.size))),
                                    shape=(levels, codes.size))  # fmt: skip
            along = float(np.sum((ind @ su) ** 2))
        else:
            along = 0.0
        return float(cd.n_obs) - within - along


class _BlockSpace:
    """Column space of a model that holds effects containing one *cluster* facet (the task):
    those columns live within one task each, so their span is block-diagonal — one small
    orthonormal basis per task, from the eigenvectors of each task's Gram matrix, computed
    for every task at once — plus an orthonormal basis of the other columns (few: prompt
    variants, judges, time blocks, the intercept) with the blocks projected out. The work is
    O(C·s² + T·s³ + C·g²) for T tasks of s local columns and g global ones, where one dense
    basis of every column would cost O(C·(T·s)²)."""

    def __init__(
        self,
        cd: CodedDesign,
        members: Sequence[int],
        facet: str,
        cluster: tuple[np.ndarray, int],
    ) -> None:
        n = cd.count
        sq = np.sqrt(n)
        c = cd.n_cells
        cl, t = cluster
        self.cl = cl
        order = np.argsort(cl, kind="stable")
        counts = np.bincount(cl, minlength=t)
        start = np.concatenate([[0], np.cumsum(counts)[:-1]])
        cpos = np.empty(c, dtype=np.int64)
        cpos[order] = np.arange(c) - start[cl[order]]
        self.cpos = cpos
        c_max = int(counts.max(initial=1))
        local = [k for k in members if facet in cd.effects[k]]
        glob = [k for k in members if k not in local]
        # local columns: each effect's levels numbered within their task
        pos = []
        offset = np.zeros(t, dtype=np.int64)
        for k in local:
            codes, levels = cd.cell_codes[k], cd.n_levels[k]
            lev_cl = np.zeros(levels, dtype=np.int64)
            lev_cl[codes] = cl
            first = np.zeros(levels, dtype=np.int64)
            # number the levels within each task, after the previous effects' levels
            lev_order = np.lexsort((np.arange(levels), lev_cl))
            lev_counts = np.bincount(lev_cl, minlength=t)
            lev_start = np.concatenate([[0], np.cumsum(lev_counts)[:-1]])
            first[lev_order] = np.arange(levels) - lev_start[lev_cl[lev_order]]
            pos.append(offset[cl] + first[codes])
            offset = offset + lev_counts
        s_max = int(offset.max(initial=0))
        x = np.zeros((t, c_max, max(s_max, 1)))
        for p_k in pos:
            x[cl, cpos, p_k] = sq
        gram = np.einsum("tcs,tcr->tsr", x, x)
        lam, vec = np.linalg.eigh(gram)
        keep = lam > np.maximum(lam.max(axis=1, keepdims=True), 1.0) * 1e-10
        scale = np.where(keep, 1.0 / np.sqrt(np.where(keep, lam, 1.0)), 0.0)
        self.q = (x @ vec) * scale[:, None, :]  # (T, c_max, s): zero columns where dropped
        rank = int(keep.sum())
        # global columns: intercept, fixed effects, the other effects' indicators
        cols = [np.ones((c, 1))]
        if cd.fixed_columns.shape[1] > 1:
            cols.append(cd.fixed_columns[:, 1:])
        for k in glob:
            z = np.zeros((c, cd.n_levels[k]))
            z[np.arange(c), cd.cell_codes[k]] = 1.0
            cols.append(z)
        w = np.hstack(cols)
        wp = np.zeros((t, c_max, w.shape[1]))
        wp[cl, cpos] = sq[:, None] * w
        wp -= self.q @ np.einsum("tcs,tcg->tsg", self.q, wp)
        flat = wp[cl, cpos]
        lam_g, vec_g = np.linalg.eigh(flat.T @ flat)
        # relative to the columns before projection (see _Space)
        keep_g = lam_g > max(float(n.max()), lam_g.max(initial=0.0)) * 1e-10
        self.u = (flat @ vec_g[:, keep_g]) / np.sqrt(lam_g[keep_g])  # (C, r) cell rows
        self.q_rows = self.q[cl, cpos]  # (C, s) each cell's row of its task's basis
        self.rank = rank + int(keep_g.sum())
        self.sq = sq

    def rss(self, cd: CodedDesign) -> float:
        v = self.sq * cd.mean
        # ‖Q_A' v‖²: per task, the local basis applied to that task's cells
        proj = _group_rows(self.cl, self.q_rows * v[:, None])
        fit = float(np.sum(proj**2)) + float(np.sum((self.u.T @ v) ** 2))
        return cd.within_ss + float(np.sum(cd.total * cd.mean)) - fit

    def trace(self, cd: CodedDesign, k: int | None) -> float:
        if k is None:
            return float(cd.n_obs - self.rank)
        codes, levels = cd.cell_codes[k], cd.n_levels[k]
        pair = self.cl * levels + codes
        _, inv = np.unique(pair, return_inverse=True)
        along_a = float(np.sum(_group_rows(inv, self.q_rows * self.sq[:, None]) ** 2))
        ind = sparse.csr_matrix((np.ones(codes.size), (codes, np.arange(codes.size))),
                                shape=(levels, codes.size))  # fmt: skip
        along_g = float(np.sum((ind @ (self.u * self.sq[:, None])) ** 2))
        return float(cd.n_obs) - along_a - along_g


def _group_rows(groups: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Row sums of ``rows`` (n × k) per group code (n,): (groups × k)."""
    g = int(groups.max(initial=-1)) + 1
    return np.column_stack(
        [np.bincount(groups, weights=rows[:, i], minlength=g) for i in range(rows.shape[1])]
        or [np.zeros(g)]
    )


def _cluster_facet(cd: CodedDesign) -> str | None:
    """The random facet whose effects hold the most levels (the task, as a rule)."""
    best, best_levels = None, 0
    for f in cd.design.names:
        if cd.design.facet(f).fixed:
            continue
        tot = sum(lv for e, lv in zip(cd.effects, cd.n_levels, strict=True) if f in e)
        if tot > best_levels:
            best, best_levels = f, tot
    return best


def henderson3_mean_squares(cd: CodedDesign) -> tuple[MeanSquares, list[int]]:
    """Henderson III mean squares, and the random effects whose reduction has rank 0 (not
    estimable from this design: confounded with others).

    For effect α: R(α | S_α) = RSS(S_α) − RSS(S_α ∪ α), S_α the fixed effects and every
    random effect that does not contain α; the residual is the RSS of the full model.
    """
    m = len(cd.effects)
    spaces: dict[frozenset[int], _Space | _BlockSpace] = {}
    facet = _cluster_facet(cd)
    cluster = None
    if facet is not None:
        cluster = cd.effect_codes((facet, *cd.design.ancestors(facet)))

    def space(members: frozenset[int]) -> _Space | _BlockSpace:
        if members not in spaces:
            local = [k for k in members if facet is not None and facet in cd.effects[k]]
            if local and cluster is not None and cluster[1] > 1:
                spaces[members] = _BlockSpace(cd, sorted(members), facet, cluster)
            else:
                spaces[members] = _Space(cd, sorted(members), with_fixed=True)
        return spaces[members]

    ms = np.empty(m + 1)
    df = np.empty(m + 1)
    ems = np.zeros((m + 1, m + 1))
    dropped = []
    full = frozenset(range(m))
    for a in range(m):
        base = frozenset(
            k for k in range(m) if k != a and not set(cd.effects[a]) <= set(cd.effects[k])
        )
        s0, s1 = space(base), space(base | {a})
        rank = s1.rank - s0.rank
        if rank <= 0:
            dropped.append(a)
            continue
        red = s0.rss(cd) - s1.rss(cd)
        ms[a] = max(red, 0.0) / rank
        df[a] = rank
        for h in range(m):
            ems[a, h] = (s0.trace(cd, h) - s1.trace(cd, h)) / rank
        ems[a, m] = 1.0
    sf = space(full)
    df[m] = cd.n_obs - sf.rank
    ms[m] = sf.rss(cd) / df[m] if df[m] > 0 else np.nan
    ems[m, m] = 1.0
    scale = max(cd.sum_sq, 1.0)
    ms = np.where(ms * df <= 1e-12 * scale, 0.0, ms)
    return MeanSquares(ms, df, ems, "henderson3"), dropped


# --- intervals ---------------------------------------------------------------------------


def satterthwaite_df(coefs: np.ndarray, ms: np.ndarray, df: np.ndarray) -> float:
    """ν = (Σ c_j MS_j)² / Σ (c_j MS_j)²/df_j (Satterthwaite 1946)."""
    terms = coefs * ms
    denom = float(np.sum(terms**2 / df))
    total = float(np.sum(terms))
    return total**2 / denom if denom > 0 else math.inf


def satterthwaite_interval(
    coefs: np.ndarray, ms: np.ndarray, df: np.ndarray, alpha: float
) -> tuple[float, float]:
    """[ν θ̂ / χ²_{1−α/2;ν}, ν θ̂ / χ²_{α/2;ν}] for θ̂ = Σ c_j MS_j > 0 (Brennan 2001, ch. 6);
    NaN when θ̂ ≤ 0. It never reaches 0: for detection use :func:`mls_interval`."""
    theta = float(np.sum(coefs * ms))
    if not theta > 0:
        return (math.nan, math.nan)
    nu = satterthwaite_df(coefs, ms, df)
    return (nu * theta / float(chi2_ppf(1 - alpha / 2, nu)),
            nu * theta / float(chi2_ppf(alpha / 2, nu)))  # fmt: skip


def mls_interval(
    coefs: np.ndarray, ms: np.ndarray, df: np.ndarray, alpha: float
) -> tuple[float, float]:
    r"""MLS interval for θ = Σ c_j MS_j, coefficients of either sign (ends not clipped).

    Ting et al. (1990); Burdick & Graybill (1992, ch. 3). With P the terms of positive and N
    those of negative coefficient, a_q = |c_q| MS_q, G_q = 1 − n_q/χ²_{1−α/2;n_q},
    H_q = n_q/χ²_{α/2;n_q} − 1 and, for q ∈ P, r ∈ N, F₁ = F_{1−α/2;n_q,n_r},
    F₂ = F_{α/2;n_q,n_r}:

    .. math::

        G_{qr} = \frac{(F_1-1)^2 - G_q^2F_1^2 - H_r^2}{F_1},\qquad
        H_{qr} = \frac{(1-F_2)^2 - H_q^2F_2^2 - G_r^2}{F_2}

        L = \hat\theta - \sqrt{\textstyle\sum_P G_q^2a_q^2 + \sum_N H_r^2a_r^2
            + \sum_{P\times N} G_{qr}a_qa_r},\qquad
        U = \hat\theta + \sqrt{\textstyle\sum_P H_q^2a_q^2 + \sum_N G_r^2a_r^2
            + \sum_{P\times N} H_{qr}a_qa_r}

    The small corrections for pairs of same-signed terms (Ting et al.'s G*, H*) are left out,
    as in Graybill & Wang's (1980) interval for a sum of components, which this is when N is
    empty. With one term on each side it is the two-term MLS interval, whose lower end is
    above 0 exactly when MS_q/MS_r > F_{1−α/2;n_q,n_r} (the F test at level α/2); with one
    positive term alone the exact χ² interval.
    """
    coefs = np.asarray(coefs, dtype=float)
    coefs = np.where(np.abs(coefs) <= 1e-12 * np.abs(coefs).max(initial=0.0), 0.0, coefs)
    a = np.abs(coefs) * ms
    keep = (coefs != 0) & (ms > 0)
    pos = np.flatnonzero(keep & (coefs > 0))
    neg = np.flatnonzero(keep & (coefs < 0))
    if pos.size == 0 and neg.size == 0:
        return 0.0, 0.0
    lo_q, hi_q = alpha / 2.0, 1.0 - alpha / 2.0
    n = np.asarray(df, dtype=float)
    g = 1.0 - n / chi2_ppf(hi_q, n)
    h = n / chi2_ppf(lo_q, n) - 1.0
    theta = float(a[pos].sum() - a[neg].sum())
    v_l = float(np.sum(g[pos] ** 2 * a[pos] ** 2) + np.sum(h[neg] ** 2 * a[neg] ** 2))
    v_u = float(np.sum(h[pos] ** 2 * a[pos] ** 2) + np.sum(g[neg] ** 2 * a[neg] ** 2))
    for q in pos:
        for r in neg:
            f1 = float(f_ppf(hi_q, n[q], n[r]))
            f2 = float(f_ppf(lo_q, n[q], n[r]))
            g_qr = ((f1 - 1.0) ** 2 - g[q] ** 2 * f1**2 - h[r] ** 2) / f1
            h_qr = ((1.0 - f2) ** 2 - h[q] ** 2 * f2**2 - g[r] ** 2) / f2
            v_l += g_qr * a[q] * a[r]
            v_u += h_qr * a[q] * a[r]
    return theta - math.sqrt(max(v_l, 0.0)), theta + math.sqrt(max(v_u, 0.0))
