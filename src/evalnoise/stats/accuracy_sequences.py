"""Anytime-valid confidence sequences for accuracy over the rounds of an adaptive evaluation.

An adaptive evaluation runs in rounds — after each round of trials it looks at the data and
decides to stop or to run another round (new tasks, more trials). :func:`confidence_sequence`
(one agent's accuracy) and :func:`paired_confidence_sequence` (the paired difference of two
agents) turn its trial table into units and run the confidence sequence of
:func:`evalnoise.stats.confidence_sequences.mean_confidence_sequence` over them, evaluated
after each round; the interval after the last round is valid at whatever round the evaluation
stopped, for whatever reason.

What is i.i.d., and why coverage holds at any stopping time
-----------------------------------------------------------
The estimand is the benchmark accuracy μ = E[p_i], the mean over the task population of a
task's success probability (or mean score) p_i — the one-way random-effects model of the
paper (Mustahsan et al., assumptions 1–2: tasks are random draws from a population, trials
are independent given the task). The *unit* of the sequence is a task together with the
trials it was given in the round in which it entered:

    X_i = mean of the m_i trials task i received in its entry round.

The number m_i is fixed before that round runs, from earlier rounds only, and task i is a
fresh draw whose trials are fresh, so E[X_i | everything observed before unit i] =
E[p_i] = μ, and X_i ∈ [0, 1]. The X_i need not be identically distributed (m_i may change
between rounds as the plan adapts); a constant conditional mean and boundedness are all
Theorem 3 of Waudby-Smith & Ramdas needs. Trials given to a task in *later* rounds are left
out of X_i: a task topped up because of what its first trials showed has a mean over a
data-dependent number of trials, whose expectation is not p_i, and the capital process would
be recomputed with hindsight. Those trials still count for the variance components that
:func:`evalnoise.stats.stopping.stopping_decision` plans with (planning needs no coverage
guarantee).

Because the guarantee is uniform over time, it holds at *any* random time τ, not only at
stopping times of the units' filtration: P(μ ∈ C_τ) ≥ P(∀t: μ ∈ C_t) ≥ 1 − α.

Requirements this cannot check: new tasks are drawn independently of the data (e.g. in a
random order of the task pool fixed beforehand); a unit's entry trials are all kept
(failed trials scored by a declared policy, not dropped after being seen); and the order of
units within a round is the order of the rows, which must not depend on the scores. Tasks
drawn without replacement from a finite benchmark are treated as draws from the population
it samples, as :func:`evalnoise.stats.accuracy` does (no finite-population correction).

References
----------
Waudby-Smith, I. & Ramdas, A. (2024). Estimating means of bounded random variables by
betting. JRSS-B 86(1), 1–27. arXiv:2010.09686.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from evalnoise.stats._checks import check_probability, finite_scores
from evalnoise.stats._results import DictResult
from evalnoise.stats.confidence_sequences import MeanCSResult, Method, mean_confidence_sequence

__all__ = ["ConfidenceSequenceResult", "confidence_sequence", "paired_confidence_sequence"]


@dataclass(frozen=True)
class ConfidenceSequenceResult(DictResult):
    """An anytime-valid confidence sequence over rounds of an adaptive evaluation.

    Attributes
    ----------
    estimand : ``"accuracy"`` (mean over tasks of the task's mean score) or
        ``"difference"`` (accuracy of A minus accuracy of B, paired by task).
    rounds : the round labels, sorted; one entry per round in the per-round arrays.
    n_tasks : units (tasks) in the sequence after each round.
    n_trials : trials in those units after each round.
    estimate : mean of the unit values after each round.
    lower, upper : the running intersection of the CS after each round.
    mean, ci_low, ci_high, half_width : the same after the last round; half_width is
        (ci_high − ci_low)/2.
    tasks : the units' task labels, in sequence order.
    unit_values : X_i, the mean score (or difference of mean scores) over the unit's entry
        trials.
    unit_trials : m_i, the entry trials per unit (for a difference: A's, then B's in
        ``unit_trials_b``).
    unit_trials_b : B's entry trials per unit (difference only, else None).
    entry_round : the round in which each unit entered.
    n_trials_excluded : trials run on a task after its entry round; they are not in the
        sequence (see the module docstring).
    n_tasks_dropped : tasks left out because one agent had no trial in the entry round
        (difference only; 0 for accuracy).
    confidence, method : the options used.
    warnings : anything that limits what the interval says.
    """

    estimand: str
    rounds: np.ndarray
    n_tasks: np.ndarray
    n_trials: np.ndarray
    estimate: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    mean: float
    ci_low: float
    ci_high: float
    half_width: float
    tasks: np.ndarray
    unit_values: np.ndarray
    unit_trials: np.ndarray
    unit_trials_b: np.ndarray | None
    entry_round: np.ndarray
    n_trials_excluded: int
    n_tasks_dropped: int
    confidence: float
    method: str
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class EntryUnits:
    """The units of an adaptive run's sequences: each task with the trials of the round it
    entered in (:func:`entry_units`), in the order the run met them."""

    labels: np.ndarray  # task label per unit, sequence order
    entry: np.ndarray  # entry round code per unit
    total: np.ndarray  # Σ scores in the entry round, per unit (and per agent for pairs)
    count: np.ndarray  # entry trials per unit
    round_labels: np.ndarray
    n_excluded: int
    n_task_rows: np.ndarray  # trials per task (all rounds) for every task, not only units


def entry_units(frames: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> EntryUnits:
    """The units of one agent's (or two agents') rows: each task's entry round, entry sums
    and counts.

    ``frames`` holds (scores, tasks, rounds) per agent. A task's entry round is the first
    round in which any agent ran it; its unit holds each agent's trials in that round.
    Units are ordered by entry round, then by the first row at which the task appears.
    """
    sizes = [f[0].size for f in frames]
    for (y, t, b), name in zip(frames, ("_a", "_b") if len(frames) > 1 else ("",), strict=True):
        if not (y.shape == np.shape(t) == np.shape(b)):
            raise ValueError(
                f"scores{name}, tasks{name} and rounds{name} must have the same length, got "
                f"{y.shape[0]}, {np.shape(t)[0] if np.ndim(t) else 0}, "
                f"{np.shape(b)[0] if np.ndim(b) else 0}"
            )
    if sum(sizes) == 0:
        raise ValueError("no trials")
    y = np.concatenate([f[0] for f in frames])
    tasks = np.concatenate([np.asarray(f[1]) for f in frames])
    rounds = np.concatenate([np.asarray(f[2]) for f in frames])
    agent = np.repeat(np.arange(len(frames)), sizes)
    if pd.isna(pd.Series(rounds)).any() or pd.isna(pd.Series(tasks)).any():
        raise ValueError("tasks and rounds must not be missing")
    codes, labels = pd.factorize(tasks, sort=False)
    rcodes, rlabels = pd.factorize(rounds, sort=True)
    g = labels.size
    entry = np.full(g, np.iinfo(np.int64).max)
    np.minimum.at(entry, codes, rcodes)
    first_row = np.full(g, np.iinfo(np.int64).max)
    np.minimum.at(first_row, codes, np.arange(codes.size))
    in_entry = rcodes == entry[codes]
    na = len(frames)
    idx = codes * na + agent
    total = np.bincount(idx[in_entry], weights=y[in_entry], minlength=g * na).reshape(g, na)
    count = np.bincount(idx[in_entry], minlength=g * na).reshape(g, na)
    order = np.lexsort((first_row, entry))
    return EntryUnits(
        labels=np.asarray(labels)[order],
        entry=entry[order],
        total=total[order],
        count=count[order],
        round_labels=np.asarray(rlabels),
        n_excluded=int((~in_entry).sum()),
        n_task_rows=np.bincount(codes, minlength=g),
    )


def _sequence_from_units(
    values: np.ndarray,
    entry: np.ndarray,
    n_rounds: int,
    confidence: float,
    method: Method,
    tune: float | None,
) -> tuple[np.ndarray, MeanCSResult | None]:
    """Cumulative unit counts after each round, and the CS at those counts."""
    counts = np.cumsum(np.bincount(entry, minlength=n_rounds))
    if values.size == 0:
        return counts, None
    uniq = np.unique(counts[counts > 0])
    cs = mean_confidence_sequence(
        values, times=uniq, confidence=confidence, method=method, tuning_half_width=tune
    )
    return counts, cs


def _per_round(counts: np.ndarray, cs: MeanCSResult | None, field: str) -> np.ndarray:
    out = np.full(counts.size, np.nan)
    if cs is None:
        return out
    pos = np.searchsorted(cs.times, counts)
    ok = counts > 0
    out[ok] = getattr(cs, field)[pos[ok]]
    return out


def confidence_sequence(
    scores: Any,
    tasks: Any,
    rounds: Any,
    *,
    confidence: float = 0.95,
    method: Method = "betting",
    tuning_half_width: float | None = None,
) -> ConfidenceSequenceResult:
    """Anytime-valid confidence sequence for accuracy over the rounds of an adaptive run.

    Parameters
    ----------
    scores : 1-D array of trial scores in [0, 1] (binary or partial credit).
    tasks : task label per trial.
    rounds : round label per trial: the round of the evaluation in which the trial ran
        (sortable: integers, or ISO timestamps). A task enters the sequence in the first
        round it appears in, with the trials it got there.
    confidence : 1 − α, the probability that every interval in the sequence covers μ.
    method : ``"betting"`` (default) or ``"empirical_bernstein"``, see
        :func:`mean_confidence_sequence`.
    tuning_half_width : the target half-width the bets are tuned to, fixed before the first
        round (see :func:`mean_confidence_sequence`);
        :func:`evalnoise.stats.stopping.stopping_decision` uses its goal.

    Returns
    -------
    ConfidenceSequenceResult
        One entry per round; the last is the interval to report, valid at whatever round the
        evaluation stopped, for whatever reason.

    Notes
    -----
    The unit of the sequence is a task with the trials of its entry round (module
    docstring): X_i = S_i/m_i over those m_i trials, whose conditional mean given all earlier
    data is μ. Trials a task gets in later rounds are counted in ``n_trials_excluded`` and
    left out. Units entering in the same round follow the order of their first row. The
    estimate (mean of the X_i) weighs every task once, as :func:`evalnoise.stats.accuracy`
    does; with every task run only in its entry round it equals that function's ``mean``.
    """
    conf = check_probability(confidence)
    y = finite_scores(scores, "scores", unit=True)
    u = entry_units([(y, np.asarray(tasks), np.asarray(rounds))])
    values = u.total[:, 0] / u.count[:, 0]
    nb = u.round_labels.size
    counts, cs = _sequence_from_units(values, u.entry, nb, conf, method, tuning_half_width)
    trials = np.cumsum(np.bincount(u.entry, weights=u.count[:, 0], minlength=nb)).astype(int)
    warnings: list[str] = []
    if u.n_excluded:
        warnings.append(
            f"{u.n_excluded} trials ran on tasks after their entry round and are not in the "
            "anytime-valid sequence (they would make a task's mean depend on when it was "
            "topped up); they still inform the variance components"
        )
    return _result(
        "accuracy", u, values, counts, trials, cs, conf, method, 0, None, tuple(warnings)
    )


def _result(estimand, u, values, counts, trials, cs, conf, method, dropped, trials_b, warns):
    est = _per_round(counts, cs, "estimate")
    lo = _per_round(counts, cs, "lower")
    hi = _per_round(counts, cs, "upper")
    if estimand == "difference":
        est, lo, hi = 2.0 * est - 1.0, 2.0 * lo - 1.0, 2.0 * hi - 1.0
        values = 2.0 * values - 1.0
    return ConfidenceSequenceResult(
        estimand=estimand,
        rounds=u.round_labels,
        n_tasks=counts.astype(int),
        n_trials=trials,
        estimate=est,
        lower=lo,
        upper=hi,
        mean=float(est[-1]),
        ci_low=float(lo[-1]),
        ci_high=float(hi[-1]),
        half_width=float((hi[-1] - lo[-1]) / 2.0),
        tasks=u.labels,
        unit_values=values,
        unit_trials=u.count[:, 0].astype(int),
        unit_trials_b=trials_b,
        entry_round=u.round_labels[u.entry],
        n_trials_excluded=u.n_excluded,
        n_tasks_dropped=dropped,
        confidence=conf,
        method=method,
        warnings=warns,
    )


def paired_confidence_sequence(
    scores_a: Any,
    tasks_a: Any,
    rounds_a: Any,
    scores_b: Any,
    tasks_b: Any,
    rounds_b: Any,
    *,
    confidence: float = 0.95,
    method: Method = "betting",
    tuning_half_width: float | None = None,
) -> ConfidenceSequenceResult:
    """Anytime-valid confidence sequence for the paired difference of two agents' accuracy.

    Both agents run the same new tasks in each round. The unit is a task with both agents'
    trials in its entry round (the first round either agent ran it in):
    D_i = Ȳ_i^A − Ȳ_i^B ∈ [−1, 1], with conditional mean μ_A − μ_B given earlier data. The
    sequence is the CS of :func:`mean_confidence_sequence` on (D_i + 1)/2 ∈ [0, 1], mapped
    back; its half-width is the half-width for the difference (``tuning_half_width`` too is
    on the difference's scale, and halved for the shifted values). Sign convention as in
    :mod:`evalnoise.stats.paired`: positive means A scores higher.

    A task where one agent has no trial in the entry round is dropped (``n_tasks_dropped``).
    If such gaps depend on the outcome (e.g. a crash that is excluded rather than scored),
    the dropped tasks can bias the difference: score failures by a declared policy instead.

    Returns
    -------
    ConfidenceSequenceResult
        ``estimand == "difference"``; ``unit_trials`` are A's entry trials, ``unit_trials_b``
        B's.
    """
    conf = check_probability(confidence)
    ya = finite_scores(scores_a, "scores_a", unit=True)
    yb = finite_scores(scores_b, "scores_b", unit=True)
    u = entry_units(
        [
            (ya, np.asarray(tasks_a), np.asarray(rounds_a)),
            (yb, np.asarray(tasks_b), np.asarray(rounds_b)),
        ]
    )
    both = (u.count > 0).all(axis=1)
    dropped = int((~both).sum())
    u = EntryUnits(
        labels=u.labels[both],
        entry=u.entry[both],
        total=u.total[both],
        count=u.count[both],
        round_labels=u.round_labels,
        n_excluded=u.n_excluded,
        n_task_rows=u.n_task_rows,
    )
    diff = u.total[:, 0] / np.maximum(u.count[:, 0], 1) - u.total[:, 1] / np.maximum(
        u.count[:, 1], 1
    )
    shifted = np.clip((diff + 1.0) / 2.0, 0.0, 1.0)
    nb = u.round_labels.size
    tune = None if tuning_half_width is None else float(tuning_half_width) / 2.0
    counts, cs = _sequence_from_units(shifted, u.entry, nb, conf, method, tune)
    trials = np.cumsum(np.bincount(u.entry, weights=u.count.sum(axis=1), minlength=nb))
    warnings: list[str] = []
    if dropped:
        warnings.append(
            f"{dropped} tasks were run by only one agent in their entry round and are not in "
            "the sequence; if that depends on the outcome it biases the difference"
        )
    if u.n_excluded:
        warnings.append(
            f"{u.n_excluded} trials ran on tasks after their entry round and are not in the "
            "anytime-valid sequence"
        )
    if cs is None:
        raise ValueError("the two agents have no task in common in any entry round")
    return _result(
        "difference",
        u,
        shifted,
        counts,
        trials.astype(int),
        cs,
        conf,
        method,
        dropped,
        u.count[:, 1].astype(int),
        tuple(warnings),
    )
