"""Designs of a generalizability study: facets, nesting, the effects they imply, the data's cells.

A *facet* is a factor whose levels were sampled (task, trial, judge sample, prompt variant,
resource profile, time block, host, any grouping column). Facets are crossed unless one is
declared *nested* in others (``trial:task``: each task has its own trials). The effects of a
design are Brennan's (2001, ch. 3): every non-empty set of facets that holds, with each nested
facet, the facets it is nested in — for p × (r:t) the effects p, t, r:t, p×t and p×r:t. The
effect with every facet is confounded with the residual when each cell of the design holds
one score (Brennan's "pr:t,e"); with replicated cells (several scores per combination of
facet levels, e.g. trials within task × time block) it is a component of its own and the
residual is the within-cell variance.

An effect is named from its facets as Brennan writes it, with the facet names in full: the
*primary* facets (those no other facet of the effect is nested in) joined by ``×``, then
``:`` and the facets they are nested in — ``task``, ``task×prompt``, ``trial:task``,
``task×judge:prompt``.

A facet may be *fixed* (e.g. an agent, when several are analysed together): its main effect is
a fixed effect of the model (not a component), its interactions with random facets are random
components (the unrestricted mixed model; Searle, Casella & McCulloch 1992, ch. 4; Brennan
2001, ch. 4 on fixed facets).

:func:`code_design` turns a table of facet columns into integer codes, the design's cells
(the distinct combinations of facet levels) and their sufficient statistics (count, sum and
within-cell sum of squares), from which every estimator of this package works.

References
----------
Brennan, R. L. (2001). *Generalizability Theory*. Springer: ch. 3 (multifacet G-study
designs, effects and their notation, Venn diagrams), ch. 7 (unbalanced designs).
Cronbach, L. J., Gleser, G. C., Nanda, H. & Rajaratnam, N. (1972). *The Dependability of
Behavioral Measurements*. Wiley.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

__all__ = [
    "RESIDUAL",
    "CodedDesign",
    "Design",
    "Facet",
    "code_design",
    "parse_facets",
]

#: the name of the residual component (within-cell variance, or the highest-order interaction
#: with which it is confounded when cells hold one score each)
RESIDUAL = "residual"


@dataclass(frozen=True)
class Facet:
    """One facet of a design.

    Attributes
    ----------
    name : the facet's name (the column it is read from).
    nested_in : the facets it is nested in (each level of this facet belongs to one level of
        each of them); nesting is transitive (:meth:`Design.ancestors`).
    fixed : a fixed facet: its levels are the whole universe (its main effect is a fixed
        effect, its interactions with random facets are random components).
    """

    name: str
    nested_in: tuple[str, ...] = ()
    fixed: bool = False


@dataclass(frozen=True)
class Design:
    """Facets, their nesting, and the random effects to estimate.

    Attributes
    ----------
    facets : the facets, in the order effects are named and reported.
    effects : the random effects to fit, each a tuple of facet names; None (default) fits
        every effect the facets imply (:meth:`all_effects`). Effects left out are assumed to
        be 0 (their variance pools into the residual), e.g. a task × time block × host design
        without the host interactions.
    replicate : what a score within a cell is, for D-study sizes and costs (``"trial"``,
        ``"judge_sample"``; the residual is its variance when cells are replicated).
    """

    facets: tuple[Facet, ...]
    effects: tuple[tuple[str, ...], ...] | None = None
    replicate: str = "replicate"
    _order: dict[str, int] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        names = [f.name for f in self.facets]
        if not names:
            raise ValueError("a design needs at least one facet")
        if len(set(names)) != len(names):
            raise ValueError(f"facet names repeat: {names}")
        if RESIDUAL in names or self.replicate in names:
            raise ValueError(f"{RESIDUAL!r} and the replicate's name cannot name a facet")
        for f in self.facets:
            unknown = set(f.nested_in) - set(names)
            if unknown:
                raise ValueError(
                    f"facet {f.name!r} is nested in unknown facet(s) {sorted(unknown)}"
                )
            if f.name in f.nested_in:
                raise ValueError(f"facet {f.name!r} cannot be nested in itself")
        self._order.update({n: i for i, n in enumerate(names)})
        for f in self.facets:
            if f.name in self.ancestors(f.name):
                raise ValueError(f"nesting of {f.name!r} is circular")
        if self.effects is not None:
            valid = set(self.all_effects())
            for e in self.effects:
                key = self.canonical(e)
                if key not in valid:
                    raise ValueError(
                        f"effect {'×'.join(e)!r} is not an effect of this design (a nested "
                        "facet needs the facets it is nested in, and fixed main effects are "
                        "not random components)"
                    )

    # --- structure ------------------------------------------------------------------------

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.facets)

    def facet(self, name: str) -> Facet:
        return self.facets[self._order[name]]

    def ancestors(self, name: str) -> frozenset[str]:
        """Every facet ``name`` is nested in, directly or through another facet."""
        seen: set[str] = set()
        todo = list(self.facet(name).nested_in)
        while todo:
            n = todo.pop()
            if n not in seen:
                seen.add(n)
                todo.extend(self.facet(n).nested_in)
        return frozenset(seen)

    def canonical(self, effect: Iterable[str]) -> tuple[str, ...]:
        """An effect's facets in declaration order."""
        return tuple(sorted(set(effect), key=self._order.__getitem__))

    def is_fixed(self, effect: Sequence[str]) -> bool:
        """Every facet of the effect fixed: a fixed effect, not a variance component."""
        return all(self.facet(n).fixed for n in effect)

    def all_effects(self) -> tuple[tuple[str, ...], ...]:
        """Every random effect the facets imply: non-empty facet sets closed under nesting
        (a nested facet appears with all its ancestors), not made of fixed facets alone;
        ordered by size, then by the facets' declaration order."""
        names = self.names
        out = []
        for size in range(1, len(names) + 1):
            for combo in itertools.combinations(names, size):
                s = set(combo)
                if all(self.ancestors(n) <= s for n in s) and not self.is_fixed(combo):
                    out.append(combo)
        return tuple(out)

    def fixed_effects(self) -> tuple[tuple[str, ...], ...]:
        """The effects made of fixed facets alone (fixed effects of the model)."""
        names = [f.name for f in self.facets if f.fixed]
        out = []
        for size in range(1, len(names) + 1):
            for combo in itertools.combinations(names, size):
                s = set(combo)
                if all(self.ancestors(n) <= s for n in s):
                    out.append(combo)
        return tuple(out)

    def random_effects(self) -> tuple[tuple[str, ...], ...]:
        """The effects to fit: ``effects`` if given, else :meth:`all_effects`."""
        if self.effects is None:
            return self.all_effects()
        return tuple(self.canonical(e) for e in self.effects)

    def primary(self, effect: Sequence[str]) -> tuple[str, ...]:
        """The effect's primary facets: those no other facet of the effect is nested in."""
        parents = set().union(*(self.ancestors(n) for n in effect)) if effect else set()
        return tuple(n for n in effect if n not in parents)

    def effect_name(self, effect: Sequence[str]) -> str:
        """Brennan's notation with full names: ``task×judge:prompt``."""
        effect = self.canonical(effect)
        prim = self.primary(effect)
        nest = [n for n in effect if n not in prim]
        return "×".join(prim) + (":" + "×".join(nest) if nest else "")

    def describe(self) -> str:
        """The design in Brennan's notation, e.g. ``task × prompt × (judge:prompt)``."""
        parts = []
        for f in self.facets:
            anc = self.canonical(self.ancestors(f.name))
            text = f"{f.name}:{'×'.join(anc)}" if anc else f.name
            if f.fixed:
                text += " (fixed)"
            parts.append(f"({text})" if anc else text)
        return " × ".join(parts)


def parse_facets(
    specs: Sequence[str], *, fixed: Iterable[str] = (), first: Sequence[str] = ()
) -> Design:
    """A design from facet specifications such as ``["task", "prompt", "judge:prompt"]``.

    ``inner:outer`` nests ``inner`` in ``outer`` (``a:b:c`` nests ``a`` in ``b`` and ``c``);
    every other pair of facets is crossed. ``first`` facets (e.g. the task column) come first.
    A facet named only as an outer one (``trial:task`` without ``task``) is added as a facet.
    """
    order: list[str] = []
    nesting: dict[str, tuple[str, ...]] = {}
    for spec in [*first, *specs]:
        parts = [p.strip() for p in str(spec).split(":")]
        if not all(parts):
            raise ValueError(f"facet specification {spec!r} has an empty name")
        inner, outer = parts[0], tuple(parts[1:])
        if inner in nesting and outer and nesting[inner] and nesting[inner] != outer:
            raise ValueError(f"facet {inner!r} is declared nested in two ways")
        for n in (inner, *outer):
            if n not in order:
                order.append(n)
        if outer or inner not in nesting:
            nesting[inner] = outer
    fixed = set(fixed)
    unknown = fixed - set(order)
    if unknown:
        raise ValueError(f"fixed facet(s) {sorted(unknown)} are not facets of the design")
    return Design(
        tuple(Facet(n, nesting.get(n, ()), n in fixed) for n in order),
    )


@dataclass(frozen=True)
class CodedDesign:
    """A design applied to data: codes, cells and per-cell sufficient statistics.

    Attributes
    ----------
    design : the :class:`Design`.
    effects : the random effects kept, each a tuple of facet names (the top effect is left
        out when it is confounded with the residual).
    names : their names (:meth:`Design.effect_name`).
    cell_codes : for every kept effect, the level of each cell (C,) — cells are the distinct
        combinations of facet levels.
    n_levels : levels of each kept effect.
    fixed_columns : the fixed-effect design matrix at the cells, intercept first, full
        column rank (C × p).
    fixed_names : names of the fixed effects in it.
    count, total, mean : n_c, Σ y and ȳ_c of every cell.
    within_ss : W = Σ_c Σ_i (y_ci − ȳ_c)², on N − C degrees of freedom.
    sum_sq : Σ y² over all scores.
    n_obs : N.
    facet_codes : the integer code of every facet at each cell (C,), by facet name.
    obs_cell : the cell of every score (N,) (order of the scores given, missing ones dropped).
    top_confounded : the effect with every facet is confounded with the residual (every cell
        holds one score) and is not among ``effects``.
    balanced : every combination of facet levels present (nested facets: the same number of
        levels within each level of the facets they are nested in) with the same count.
    sizes : per facet, levels per level of its ancestors (their mean when unbalanced).
    replicates : scores per cell (their mean when unbalanced).
    """

    design: Design
    effects: tuple[tuple[str, ...], ...]
    names: tuple[str, ...]
    cell_codes: tuple[np.ndarray, ...]
    n_levels: tuple[int, ...]
    fixed_columns: np.ndarray
    fixed_names: tuple[str, ...]
    count: np.ndarray
    total: np.ndarray
    mean: np.ndarray
    within_ss: float
    sum_sq: float
    n_obs: int
    facet_codes: Mapping[str, np.ndarray]
    obs_cell: np.ndarray
    top_confounded: bool
    balanced: bool
    sizes: Mapping[str, float]
    replicates: float

    @property
    def n_cells(self) -> int:
        return int(self.count.size)

    def effect_codes(self, effect: Sequence[str]) -> tuple[np.ndarray, int]:
        """Codes of any effect (facet set) at the cells, and its number of levels."""
        return _combine([self.facet_codes[n] for n in self.design.canonical(effect)])


def _combine(codes: Sequence[np.ndarray]) -> tuple[np.ndarray, int]:
    """Dense codes of the combinations of several integer code arrays."""
    if not codes:
        raise ValueError("no codes to combine")
    key = np.zeros(codes[0].size, dtype=np.int64)
    for c in codes:
        key = key * (int(c.max(initial=0)) + 1) + c
    out, uniques = pd.factorize(key, sort=True)
    return out.astype(np.int64), int(uniques.size)


def code_design(
    scores: Any,
    facets: Mapping[str, Any],
    design: Design,
) -> CodedDesign:
    """Integer codes, cells and sufficient statistics of ``scores`` under ``design``.

    Parameters
    ----------
    scores : one score per row (0/1, partial credit, any real number); NaN rows are dropped.
    facets : for every facet of the design, its label per row (any hashable labels; a
        nested facet's labels need only be unique within the facets it is nested in, e.g.
        trial indices 0…T−1 in every task).
    design : the :class:`Design`.

    Raises
    ------
    ValueError
        lengths differ, a facet is missing, a label is missing on a scored row, a score is
        infinite, or no score is left.
    """
    y_all = np.asarray(scores, dtype=float).ravel()
    if np.any(np.isinf(y_all)):
        raise ValueError("scores must be finite (NaN for missing)")
    missing = [n for n in design.names if n not in facets]
    if missing:
        raise ValueError(f"no labels for facet(s) {missing}")
    keep = np.isfinite(y_all)
    y = y_all[keep]
    if y.size == 0:
        raise ValueError("no score to analyse")
    raw_codes: dict[str, np.ndarray] = {}
    for name in design.names:
        labels = np.asarray(facets[name]).ravel()
        if labels.shape != y_all.shape:
            raise ValueError(f"facet {name!r} has {labels.size} labels for {y_all.size} scores")
        codes, _ = pd.factorize(labels[keep], sort=True)
        if np.any(codes < 0):
            raise ValueError(f"facet {name!r} has a missing label (NaN/None) on a scored row")
        raw_codes[name] = codes.astype(np.int64)
    # a nested facet's levels are its labels within its ancestors' levels
    obs_codes: dict[str, np.ndarray] = {}
    for name in design.names:
        anc = design.canonical(design.ancestors(name))
        obs_codes[name] = _combine([*(raw_codes[a] for a in anc), raw_codes[name]])[0]
    cell, n_cells = _combine([obs_codes[n] for n in design.names])
    count = np.bincount(cell, minlength=n_cells).astype(float)
    total = np.bincount(cell, weights=y, minlength=n_cells)
    mean = total / count
    within = float(np.sum((y - mean[cell]) ** 2))
    first = np.zeros(n_cells, dtype=np.int64)
    first[cell[::-1]] = np.arange(y.size)[::-1]
    facet_codes = {n: obs_codes[n][first] for n in design.names}

    all_names = design.names
    effects = list(design.random_effects())
    top = design.canonical(all_names)
    replicated = bool(y.size > n_cells)
    top_confounded = False
    if not replicated and top in effects:
        effects.remove(top)
        top_confounded = True
    cell_codes, n_levels = [], []
    for e in effects:
        c, n = _combine([facet_codes[f] for f in e])
        cell_codes.append(c)
        n_levels.append(n)

    # fixed part: intercept + dummies of the fixed effects (reference coding), full rank
    cols = [np.ones(n_cells)]
    fixed_names = ["(intercept)"]
    for e in design.fixed_effects():
        c, n = _combine([facet_codes[f] for f in e])
        if n > 1:
            dummies = np.zeros((n_cells, n - 1))
            rows = np.flatnonzero(c > 0)
            dummies[rows, c[rows] - 1] = 1.0
            cols.append(dummies)
            fixed_names.extend(f"{design.effect_name(e)}[{j}]" for j in range(1, n))
    x = np.column_stack(cols)
    x, fixed_names = _full_rank(x, fixed_names)

    sizes, balanced = _sizes(design, facet_codes, count, n_cells)
    return CodedDesign(
        design=design,
        effects=tuple(effects),
        names=tuple(design.effect_name(e) for e in effects),
        cell_codes=tuple(cell_codes),
        n_levels=tuple(n_levels),
        fixed_columns=x,
        fixed_names=tuple(fixed_names),
        count=count,
        total=total,
        mean=mean,
        within_ss=within,
        sum_sq=float(y @ y),
        n_obs=int(y.size),
        facet_codes=facet_codes,
        obs_cell=cell,
        top_confounded=top_confounded,
        balanced=balanced,
        sizes=sizes,
        replicates=float(count.mean()),
    )


def _full_rank(x: np.ndarray, names: list[str]) -> tuple[np.ndarray, list[str]]:
    """Drop columns that are linear combinations of earlier ones (pivoted QR)."""
    if x.shape[1] <= 1:
        return x, names
    from scipy.linalg import qr

    _, r, piv = qr(x, mode="economic", pivoting=True)
    d = np.abs(np.diag(r))
    rank = int(np.sum(d > d.max() * max(x.shape) * np.finfo(float).eps))
    keep = np.sort(piv[:rank])
    if 0 not in keep:  # keep the intercept
        keep = np.sort(np.concatenate([[0], keep[:-1]]))
    return x[:, keep], [names[i] for i in keep]


def _sizes(
    design: Design, codes: Mapping[str, np.ndarray], count: np.ndarray, n_cells: int
) -> tuple[dict[str, float], bool]:
    """Levels of each facet per level of its ancestors, and whether the design is balanced."""
    sizes: dict[str, float] = {}
    balanced = bool(np.ptp(count) == 0)
    product = 1.0
    for name in design.names:
        anc = design.canonical(design.ancestors(name))
        parent, n_parent = (
            _combine([codes[a] for a in anc])
            if anc
            else (
                np.zeros(n_cells, dtype=np.int64),
                1,
            )
        )
        own, n_own = _combine([*(codes[a] for a in anc), codes[name]])
        # distinct (parent, own) pairs per parent
        pairs = pd.unique(parent * n_own + own)
        per_parent = np.bincount(pairs // n_own, minlength=n_parent)
        sizes[name] = float(per_parent.mean())
        if np.ptp(per_parent) != 0:
            balanced = False
        product *= float(per_parent[0])
    if balanced and round(product) != n_cells:
        balanced = False  # some combination of crossed facets is missing
    return sizes, balanced
