"""A group's numbers in words: the paper's reporting line and the labelled readings.

The text that ``summary.txt`` (:mod:`evalnoise.pipeline.summary`), the Evaluation Cards
(:mod:`evalnoise.report.cards`, :mod:`evalnoise.report.card_text`) and ``evalnoise analyze``
print for one group record (:func:`evalnoise.analysis.group_record`,
:func:`evalnoise.analysis.failure_readings`). It is
kept out of the modules that compute the numbers: the numeric jobs' code version
(``code_version("analysis")``) does not hash it, so rewording a line reruns the summary,
never a statistic. Pure functions of the records, no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evalnoise.analysis import READINGS
from evalnoise.formatting import fmt, pct
from evalnoise.group_records import GroupRecord

__all__ = ["READING_LABELS", "readings_text", "reporting_line"]

#: What each reading (:data:`evalnoise.analysis.READINGS`) is, for the summary, cards and report.
READING_LABELS = {
    "answered": "over the trials that answered",
    "failures_as_incorrect": "failures as incorrect",
    "verified_as_failures": "verdicts after agent failures as incorrect",
}


def _value(rec: Any, name: str) -> Any:
    """A field of a typed record (:class:`evalnoise.group_records.GroupRecord`,
    :class:`~evalnoise.group_records.Reading`) or the same key of its serialised form."""
    return rec.get(name) if isinstance(rec, Mapping) else getattr(rec, name, None)


def readings_text(readings: Mapping[str, Any] | None) -> str | None:
    """``over the trials that answered 51.0% [26.6%, 75.4%] (48 trials) | failures as
    incorrect 25.5% [...] (96 trials)``, or None without readings: each reading's μ̂ and its
    task-clustered CI (:func:`evalnoise.analysis.failure_readings`), in the order of
    :data:`evalnoise.analysis.READINGS`."""
    if not readings:
        return None
    parts = []
    for name in READINGS:
        r = readings.get(name)
        if r is None:
            continue
        parts.append(
            f"{READING_LABELS[name]} {pct(_value(r, 'mean'))} "
            f"[{pct(_value(r, 'ci_low'))}, {pct(_value(r, 'ci_high'))}] "
            f"({_value(r, 'n_trials') or 0} trials)"
        )
    return " | ".join(parts) or None


def reporting_line(rec: GroupRecord | Mapping[str, Any], confidence: float = 0.95) -> str:
    """The paper's reporting line (eq. 11): Accuracy ± 95% CI | ICC | between-query SE.

    The ± is half the width of the task-clustered CI, (ci_high − ci_low) / 2; the
    between-query SE is the task-clustered SE of accuracy (eq. 6). A withheld record
    (:meth:`evalnoise.group_records.GroupRecord.with_estimates_withheld`: not a measurement
    of the agent) prints why instead of a number. ``rec`` is the typed record or its
    serialised form.
    """

    def v(name: str) -> Any:
        return _value(rec, name)

    if v("withheld"):
        return f"no accuracy: {v('withheld')}"
    lo, hi = v("ci_low"), v("ci_high")
    half = (hi - lo) / 2 if lo is not None and hi is not None else float("nan")
    return (
        f"{pct(v('mean'))} ± {pct(half)} ({confidence:.0%} CI "
        f"[{pct(lo)}, {pct(hi)}]) | ICC {fmt(v('icc'))} "
        f"[{fmt(v('icc_ci_low'), '.2f')}, {fmt(v('icc_ci_high'), '.2f')}] "
        f"{v('interpretation')} | between-query SE {fmt(v('se_clustered'))}"
    )
