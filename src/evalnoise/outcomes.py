"""Outcome accounting: what became of every trial, and whether a group measured the agent.

A trial ends in one of the runner's statuses (:data:`evalnoise.schema.STATUSES`). For
reporting, ``agent_error`` is split by *how* the agent failed:

- ``crashed`` — the agent's process was killed by a fault signal (SIGSEGV, SIGILL, SIGBUS,
  SIGABRT, SIGFPE): a broken runtime (e.g. a native library built for another CPU), not an
  answer. Exit code ``128 + signal`` (an init process or shell reports it so) or
  ``-signal`` (Python's :mod:`subprocess` reports it so).
- ``no_answer`` — any other agent failure: a non-zero exit, or exit 0 without an answer.

a trial of an environment task whose verifier left no valid reward is ``verifier_error``
(the grader failed, not the agent: no score, never a 0, run again by a plain rerun), and a
trial that ended ``ok`` but whose scorer could not decide (``judge_error``: the score is null)
is ``unscored`` rather than ``ok``. An environment trial whose agent could not be set up in the
task's container (an installed agent that cannot download itself offline) is
``agent_setup_error``: the agent never ran — no score, never a 0, not a failure of its
skill. The outcomes partition the trials; :data:`OUTCOMES` is the order every output prints
them in.

:func:`outcome_counts` counts them (vectorized, over the *final* attempt of each trial);
:func:`assess_health` decides whether a group's numbers are a measurement of the agent at
all: a group with any crash, or with more than ``max_failure_rate`` of its trials not
``ok``-and-scored, is **not a measurement of the agent** — unless the config declares those
failures to be the experiment (``health.expected_failures``).
"""

from __future__ import annotations

import signal
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from evalnoise.outcome_table import FLAG_LABELS, FLAGS, OUTCOME_HEADERS, OUTCOMES, UNDECIDED
from evalnoise.outcome_table import OUTCOME_LABELS as OUTCOME_LABELS
from evalnoise.outcome_table import outcome as outcome_row
from evalnoise.schema import TRIAL_KEY

__all__ = [
    "CRASH_SIGNALS",
    "FLAGS",
    "OUTCOMES",
    "OUTCOME_LABELS",
    "UNDECIDED",
    "AttemptOrder",
    "Health",
    "assess_health",
    "attempt_order",
    "crash_signal",
    "crash_signal_name",
    "crashed_mask",
    "failed_trials",
    "final_attempts",
    "flag_counts",
    "flags_text",
    "outcome_counts",
    "outcome_line",
    "outcome_of",
]

#: fault signals: a process killed by one of these crashed (it did not give up or time out)
CRASH_SIGNALS = {
    int(signal.SIGSEGV): "SIGSEGV",
    int(signal.SIGILL): "SIGILL",
    int(signal.SIGBUS): "SIGBUS",
    int(signal.SIGABRT): "SIGABRT",
    int(signal.SIGFPE): "SIGFPE",
}
# Every outcome in print order (OUTCOMES; they partition the trials), those that wait for a
# grader's verdict (UNDECIDED: no score, never a 0, decided by a rerun), their words
# (OUTCOME_LABELS) and the flags a trial can carry beside its outcome (FLAGS) are views of
# the one outcome table, :mod:`evalnoise.outcome_table`.


def crash_signal(exit_code: Any) -> int | None:
    """The fault signal that killed a process with exit status ``exit_code``, or None.

    ``128 + s`` (container init, shells) and ``-s`` (:class:`subprocess.Popen`) both mean
    "killed by signal s"; only the signals in :data:`CRASH_SIGNALS` count as a crash. A
    missing value (None, NaN, ``pd.NA`` of a nullable column) or one that is no integer is
    no crash, as in :func:`outcome_counts`.
    """
    try:
        if exit_code is None or pd.isna(exit_code):
            return None
        value = float(exit_code)
    except (TypeError, ValueError):  # not a number (or not a scalar)
        return None
    if not value.is_integer():
        return None
    code = int(value)
    sig = code - 128 if code > 128 else -code if code < 0 else None
    return sig if sig in CRASH_SIGNALS else None


def crash_signal_name(exit_code: Any) -> str | None:
    """``"SIGSEGV"`` etc. for a crash exit status, else None."""
    sig = crash_signal(exit_code)
    return None if sig is None else CRASH_SIGNALS[sig]


def _crashed_mask(exit_codes: pd.Series) -> np.ndarray:
    codes = pd.to_numeric(exit_codes, errors="coerce").to_numpy(dtype=float)
    sigs = np.where(codes > 128, codes - 128, np.where(codes < 0, -codes, np.nan))
    return np.isin(sigs, list(CRASH_SIGNALS))


def crashed_mask(trials: pd.DataFrame) -> np.ndarray:
    """Which rows are crashes: ``status == "agent_error"`` and an ``exit_code`` that means a
    fault signal (:func:`crash_signal`). All False when the table has no ``exit_code``
    (imported results that record none cannot tell a crash from another agent error)."""
    if "exit_code" not in trials.columns or "status" not in trials.columns:
        return np.zeros(len(trials), dtype=bool)
    signalled = _crashed_mask(trials["exit_code"])
    if not signalled.any():  # no fault signal at all (the usual case): no status to read
        return signalled
    status = trials["status"].astype(str).to_numpy()
    return signalled & (status == "agent_error")


def _sort_codes(values: pd.Series) -> np.ndarray:
    """Integers that sort as ``values`` sort in ``DataFrame.sort_values`` (missing last) and
    are equal where ``DataFrame.duplicated`` finds them equal (missing equals missing)."""
    if pd.api.types.is_integer_dtype(values.dtype) and not values.hasnans:
        return values.to_numpy(dtype=np.int64)
    if _constant(values):  # one group's agent, profile or unused variant: one code
        return np.zeros(len(values), dtype=np.int64)
    codes, uniques = pd.factorize(values, sort=True, use_na_sentinel=True)
    codes = codes.astype(np.int64, copy=False)
    codes[codes < 0] = len(uniques)
    return codes


def _constant(values: pd.Series) -> bool:
    """Whether every value is the same non-missing value, or every value is missing (one
    code either way). Ends at the first and last values when they differ: a sorted key
    column that varies costs two lookups, not a comparison of every row."""
    if len(values) == 0:
        return False
    first, last = values.iloc[0], values.iloc[-1]
    if pd.isna(first) or pd.isna(last):
        return bool(pd.isna(first) and pd.isna(last) and values.isna().all())
    return bool(first == last and (values == first).all())


@dataclass(frozen=True)
class AttemptOrder:
    """What :func:`attempt_order` returns.

    order : row positions of the table sorted by its trial key, then ``attempt``.
    first, last : over the sorted rows, whether a row is its trial's first (last) attempt.
    """

    order: np.ndarray
    first: np.ndarray
    last: np.ndarray

    @property
    def in_order(self) -> bool:
        """Whether the table is already in trial order (``order`` is 0, 1, …, n − 1): taking
        its rows in ``order`` would copy it as it is."""
        return bool((self.order[1:] > self.order[:-1]).all())

    @property
    def most_attempts(self) -> int:
        """The most attempts any trial has (0 for no rows)."""
        starts = np.flatnonzero(self.first)
        return int(np.diff(np.append(starts, self.order.size)).max()) if starts.size else 0


def attempt_order(trials: pd.DataFrame, key: Iterable[str]) -> AttemptOrder:
    """The table's rows in trial order, and each trial's first and last attempt.

    The order is ``trials.sort_values([*key, "attempt"], kind="mergesort")``'s (stable,
    missing values last; a table without ``attempt`` is one attempt a row) and ``last`` is
    ``~sorted.duplicated(subset=key, keep="last")`` (``first``: ``keep="first"``), computed
    as pandas computes them — one stable ``numpy.lexsort`` of each column's sorted
    factorization codes — without building the sorted table or a categorical per column.
    """
    key = list(key)
    codes = [_sort_codes(trials[c]) for c in key]
    attempt = (
        _sort_codes(trials["attempt"])
        if "attempt" in trials.columns
        else np.zeros(len(trials), dtype=np.int64)
    )
    order = np.lexsort([attempt, *codes[::-1]])
    n = order.size
    in_order = bool((order[1:] > order[:-1]).all())
    # a row starts a new trial where any key column differs from the row before it
    change = np.zeros(max(n - 1, 0), dtype=bool)
    for c in codes:
        ranked = c if in_order else c[order]
        change |= ranked[1:] != ranked[:-1]
    first = np.concatenate([[True], change]) if n else np.zeros(0, dtype=bool)
    last = np.concatenate([change, [True]]) if n else np.zeros(0, dtype=bool)
    return AttemptOrder(order=order, first=first, last=last)


def final_attempts(trials: pd.DataFrame) -> pd.DataFrame:
    """The last attempt of every trial (every row when the table has no ``attempt`` or no
    trial key columns, :data:`evalnoise.schema.TRIAL_KEY`), in trial-key order."""
    key = [c for c in TRIAL_KEY if c in trials.columns]
    if not key or "attempt" not in trials.columns or not len(trials):
        return trials
    rows = attempt_order(trials, key)
    if rows.in_order and rows.last.all():  # one attempt a trial, in order: every row as it is
        return trials
    return trials.iloc[rows.order[rows.last]]


def outcome_of(trials: pd.DataFrame) -> np.ndarray:
    """The outcome (a name of :data:`OUTCOMES`) of every row, vectorized.

    Needs ``status``; ``exit_code`` tells a crash from another agent error and ``score``
    (null = not scored) an ``ok`` trial from an ``unscored`` one, when present.
    """
    status = trials["status"].astype(str).to_numpy()
    out = status.astype(object).copy()
    # agent_error and ok are refined below; every other outcome is its own status
    out[status == "agent_error"] = "no_answer"
    out[crashed_mask(trials)] = "crashed"
    if "score" in trials.columns:
        out[(status == "ok") & pd.isna(trials["score"]).to_numpy()] = "unscored"
    return out


def outcome_counts(trials: pd.DataFrame) -> dict[str, int]:
    """Count of each outcome in :data:`OUTCOMES` over the final attempt of every trial,
    plus ``trials`` (their number) and ``attempts`` (all rows).

    ``trials`` needs ``status``; ``exit_code`` (to tell a crash), ``score`` (null = not
    scored), ``attempt`` and the trial key columns are used when present. ``ok`` counts
    trials that ended ``ok`` *and* have a score; ``unscored`` those that ended ``ok``
    without one. The outcomes partition the trials: their counts sum to ``trials``. The
    counts of the flags whose columns the table has (:func:`flag_counts`, final attempts)
    come beside them.
    """
    last = final_attempts(trials)
    names, counted = np.unique(outcome_of(last).astype(str), return_counts=True)
    found = dict(zip(names.tolist(), counted.tolist(), strict=True))
    counts = {k: int(found.get(k, 0)) for k in OUTCOMES}
    counts["trials"] = len(last)
    counts["attempts"] = len(trials)
    counts.update(flag_counts(last))
    return counts


def flag_counts(trials: pd.DataFrame) -> dict[str, int]:
    """How many rows carry each flag of :data:`FLAGS` whose column the table has: a true
    boolean or a non-empty string (null, false and ``""`` are no flag). Flags whose column
    the table lacks are not counted (a table from before the flag)."""
    out = {}
    for name in FLAGS:
        if name not in trials.columns:
            continue
        values = trials[name]
        if pd.api.types.is_bool_dtype(values.dtype):
            flagged = values.fillna(False).astype(bool)
        else:
            flagged = values.notna() & values.astype(str).str.strip().ne("")
            flagged &= ~values.astype(str).str.lower().isin(("false", "0", "none", "nan"))
        out[name] = int(flagged.sum())
    return out


def outcome_line(outcomes: Mapping[str, Any] | None) -> str:
    """``96 trials: 90 ok, 0 crashed, 2 no answer, 0 timeout, 4 oom_killed, 0 infra_error,
    0 verifier_error, 0 unscored`` — every outcome, zeros included, so nothing is silently
    absent; an unknown count is ``?`` and a record without outcomes ``not recorded``; then
    ``; flagged: N <flag>`` for every flag (:data:`FLAGS`) with a count. The one text of a
    group's outcomes: the summary, the CLI and the cards print it."""
    if outcomes is None:
        return "not recorded"

    def count(key: str) -> str:
        value = outcomes.get(key)
        return "?" if value is None else str(value)

    parts = [f"{count(k)} {OUTCOME_HEADERS[k]}" for k in OUTCOMES]
    attempts = outcomes.get("attempts")
    extra = (
        f" ({attempts} attempts)"
        if attempts is not None and attempts != outcomes.get("trials")
        else ""
    )
    line = f"{count('trials')} trials{extra}: " + ", ".join(parts)
    flags = flags_text(outcomes)
    return line + (f"; flagged: {flags}" if flags else "")


def flags_text(outcomes: Mapping[str, Any] | None) -> str:
    """``2 verified after an agent failure, 1 …``: every flag (:data:`FLAGS`) the counts
    hold a non-zero count of, in the table's order; ``""`` when none. The one text of a
    group's flags: the outcome line, the cards and the report print it."""
    return ", ".join(
        f"{outcomes[k]} {FLAG_LABELS[k]}" for k in FLAGS if outcomes and outcomes.get(k)
    )


def failed_trials(outcomes: Mapping[str, Any]) -> int:
    """Trials that ended in a failure: not ``ok`` and not merely waiting for a grader's
    verdict (:data:`UNDECIDED`): ``trials − ok − Σ undecided``."""
    waiting = sum(int(outcomes.get(k) or 0) for k in UNDECIDED)
    return int(outcomes.get("trials") or 0) - int(outcomes.get("ok") or 0) - waiting


@dataclass(frozen=True)
class Health:
    """Whether a group's numbers measure the agent.

    valid : False when the group crashed or failed too often (and that was not declared):
        its numbers are not a measurement of the agent.
    failure_rate : share of trials that did not end ``ok`` with a score.
    reasons : why the group is not valid (or would not be, for expected failures).
    expected : the config declared this group's failures to be the experiment.
    incomplete : trials a scorer left without a verdict (``unscored``: the headline's
        scorer; ``unjudged``: the judge stage): the numbers that need them are missing
        those trials until a rerun decides them. Not a reason to withhold the headline
        (a measurement of the agent can be incomplete), but the group is not ``complete``.
    """

    valid: bool
    failure_rate: float
    reasons: tuple[str, ...] = field(default_factory=tuple)
    expected: bool = False
    incomplete: tuple[str, ...] = field(default_factory=tuple)

    @property
    def complete(self) -> bool:
        """No trial is waiting for a scorer's verdict."""
        return not self.incomplete

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["reasons"] = list(self.reasons)
        out["incomplete"] = list(self.incomplete)
        out["complete"] = self.complete
        return out


def assess_health(
    counts: Mapping[str, int],
    *,
    max_failure_rate: float = 0.5,
    expected: bool = False,
    crash_examples: Iterable[str] = (),
) -> Health:
    """A group is *not a measurement of the agent* when any trial crashed or when more than
    ``max_failure_rate`` of its trials did not end ``ok`` with a score:
    ``(trials − ok) / trials > max_failure_rate``. It is *incomplete* while a scorer left
    trials without a verdict: ``unscored`` (the headline's scorer) or ``unjudged`` (the judge
    stage; a count ``counts`` may carry beside the outcomes).

    ``expected`` (the group is listed in ``health.expected_failures``) keeps it valid and
    records the reasons, so the report can say the failures are the experiment.
    """
    trials = int(counts.get("trials", 0))
    good = int(counts.get("ok", 0))
    rate = (trials - good) / trials if trials else 1.0
    reasons = []
    if trials == 0:
        reasons.append("no trials")
    crashed = int(counts.get("crashed", 0))
    if crashed:
        examples = ", ".join(dict.fromkeys(crash_examples))
        reasons.append(
            f"{crashed} of {trials} trials crashed" + (f" ({examples})" if examples else "")
        )
    if trials and rate > max_failure_rate:
        parts = [f"{counts.get(k, 0)} {k}" for k in OUTCOMES if k != "ok" and counts.get(k, 0)]
        reasons.append(
            f"{trials - good} of {trials} trials ({rate:.0%}) did not end ok with a score "
            f"(more than the allowed {max_failure_rate:.0%}): {', '.join(parts)}"
        )
    incomplete = []
    if int(counts.get("verifier_error", 0)):
        incomplete.append(
            f"{counts['verifier_error']} of {trials} trials have no verdict from the verifier "
            "(verifier_error); rerun to run them again"
        )
    if int(counts.get("unscored", 0)):
        incomplete.append(
            f"{counts['unscored']} of {trials} trials unscored (judge_error); rerun to score them"
        )
    for name in UNDECIDED:
        if name not in ("verifier_error", "unscored") and int(counts.get(name, 0)):
            incomplete.append(
                f"{counts[name]} of {trials} trials without a verdict "
                f"({outcome_row(name).label}); rerun to decide them"
            )
    if int(counts.get("unjudged", 0)):
        incomplete.append(
            f"{counts['unjudged']} of {trials} trials unjudged by the judge stage "
            "(judge_error); the judge's numbers leave them out until a rerun judges them"
        )
    valid = expected or not reasons
    return Health(
        valid=valid,
        failure_rate=float(rate),
        reasons=tuple(reasons),
        expected=expected,
        incomplete=tuple(incomplete),
    )
