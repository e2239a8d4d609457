"""What became of a group's trials and whether its numbers measure the agent, for display.

The pipeline's group records (``groups.json``) carry

- ``outcomes``: counts of every outcome in :data:`evalnoise.outcomes.OUTCOMES` plus
  ``trials`` and ``attempts`` (:func:`evalnoise.outcomes.outcome_counts`);
- ``health``: ``valid``, ``failure_rate``, ``reasons``, ``expected``
  (:class:`evalnoise.outcomes.Health`);
- ``crash_signals``: fault signal name → count (may be empty).

Records written before outcome accounting have none of these: their outcomes and health
are *unknown* (``None``), never assumed good or bad. Everything here is a pure function of
one record.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from evalnoise.outcome_table import FLAGS, OUTCOME_HEADERS, OUTCOME_LABELS, OUTCOMES

__all__ = [
    "EXPECTED_NOTE",
    "NOT_A_MEASUREMENT",
    "NOT_A_MEASUREMENT_LABEL",
    "NOT_A_MEASUREMENT_SUFFIX",
    "OUTCOMES",
    "OUTCOME_HEADERS",
    "OUTCOME_LABELS",
    "OUTCOME_LEGEND",
    "banner_text",
    "crash_signals_text",
    "expected_text",
    "health_of",
    "is_invalid",
    "machine_of",
    "outcomes_of",
    "status_text",
]

#: What an invalid group's numbers are not.
NOT_A_MEASUREMENT = "Not a measurement of the agent"
#: What follows a struck statistic (cards, sections): the same words, mid-sentence.
NOT_A_MEASUREMENT_LABEL = NOT_A_MEASUREMENT[0].lower() + NOT_A_MEASUREMENT[1:]
#: How an invalid group is labelled in charts.
NOT_A_MEASUREMENT_SUFFIX = " — NOT A MEASUREMENT"
#: The neutral note of a group whose failures the config declared to be the experiment.
EXPECTED_NOTE = "failures declared as the experiment (health.expected_failures)"
#: Under every outcome table (a card's Markdown, the page's "Outcomes"): what the outcomes mean.
OUTCOME_LEGEND = (
    "crashed and no answer are the two kinds of agent_error (crashed: killed by a fault "
    "signal); unscored: trials that ended ok but the scorer could not decide (judge_error); "
    "ok: answered and scored. The outcomes partition the trials."
)


def _count(value: Any) -> int | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        f = float(value)
    except (TypeError, ValueError):
        return None
    return int(f) if math.isfinite(f) else None


def _flag(value: Any) -> bool | None:
    """A boolean from JSON, CSV text or numpy; None when missing or unreadable."""
    if value is None:
        return None
    if isinstance(value, str):
        text = value.strip().lower()
        if text in ("true", "1", "yes"):
            return True
        if text in ("false", "0", "no"):
            return False
        return None
    try:
        if isinstance(value, float) and math.isnan(value):
            return None
        return bool(value)
    except (TypeError, ValueError):
        return None


def outcomes_of(record: Mapping[str, Any]) -> dict[str, int | None] | None:
    """The record's outcome counts (every key of :data:`OUTCOMES`, ``trials``, ``attempts``,
    and the flags of :data:`evalnoise.outcome_table.FLAGS` the record counts), or None when
    the record has none (an input older than outcome accounting).

    A count the record lacks is None; a missing ``trials`` is the sum of the outcomes that
    partition the trials (every outcome but ``unscored``) when all of them are known.
    """
    raw = record.get("outcomes")
    if not isinstance(raw, Mapping):
        return None
    out = {key: _count(raw.get(key)) for key in (*OUTCOMES, "trials", "attempts")}
    out.update({key: _count(raw[key]) for key in FLAGS if key in raw})
    if "verifier_error" not in raw:  # a record from before environment tasks: none could be
        out["verifier_error"] = 0
    if "agent_setup_error" not in raw:  # a record from before Harbor's agents ran here
        out["agent_setup_error"] = 0
    if out["trials"] is None:
        parts = [out[k] for k in OUTCOMES if k != "unscored"]
        if all(p is not None for p in parts):
            out["trials"] = sum(p for p in parts if p is not None)
    return out


def health_of(record: Mapping[str, Any]) -> dict[str, Any]:
    """The record's health as ``valid`` (True, False, or None = not assessed),
    ``expected``, ``failure_rate``, ``reasons`` and ``crash_signals`` (sorted by name)."""
    raw = record.get("health")
    signals = record.get("crash_signals")
    crash_signals = {}
    if isinstance(signals, Mapping):
        crash_signals = {
            str(k): c for k, v in sorted(signals.items()) if (c := _count(v)) is not None and c
        }
    if not isinstance(raw, Mapping):
        return {
            "valid": None,
            "expected": False,
            "failure_rate": None,
            "reasons": [],
            "incomplete": [],
            "crash_signals": crash_signals,
        }
    rate = raw.get("failure_rate")
    try:
        rate = float(rate) if rate is not None and math.isfinite(float(rate)) else None
    except (TypeError, ValueError):
        rate = None
    return {
        "valid": _flag(raw.get("valid")),
        "expected": bool(_flag(raw.get("expected"))),
        "failure_rate": rate,
        "reasons": [str(r) for r in raw.get("reasons") or ()],
        "incomplete": [str(r) for r in raw.get("incomplete") or ()],
        "crash_signals": crash_signals,
    }


def is_invalid(record: Mapping[str, Any]) -> bool:
    """Whether the record's health says it is not a measurement of the agent."""
    return health_of(record)["valid"] is False


def banner_text(health: Mapping[str, Any]) -> str | None:
    """ "Not a measurement of the agent: <reasons>" for an invalid group, else None."""
    if health.get("valid") is not False:
        return None
    reasons = "; ".join(health.get("reasons") or ()) or "the group failed its health check"
    return f"{NOT_A_MEASUREMENT}: {reasons}"


def expected_text(health: Mapping[str, Any]) -> str | None:
    """The neutral note of an expected-failure group (with what happened), else None."""
    if health.get("valid") is False or not health.get("expected"):
        return None
    reasons = "; ".join(health.get("reasons") or ())
    note = EXPECTED_NOTE[0].upper() + EXPECTED_NOTE[1:]
    return note + (f": {reasons}" if reasons else "")


def status_text(health: Mapping[str, Any]) -> str:
    """One phrase: what the group's numbers are."""
    if health.get("valid") is None:
        return "not assessed (outcomes not recorded)"
    if health.get("valid") is False:
        return "NOT A MEASUREMENT of the agent"
    incomplete = health.get("incomplete") or ()
    base = EXPECTED_NOTE if health.get("expected") else "measurement"
    return base + (" — INCOMPLETE: " + "; ".join(incomplete) if incomplete else "")


def crash_signals_text(signals: Mapping[str, Any]) -> str:
    """``SIGSEGV × 96, SIGILL × 2``: each fault signal with its count, in the given order
    (:func:`health_of` sorts them by name)."""
    return ", ".join(f"{k} × {v}" for k, v in signals.items())


def machine_of(manifest: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The manifest's ``machine`` section with every documented key (None when missing),
    or None when the manifest has none."""
    if not isinstance(manifest, Mapping):
        return None
    raw = manifest.get("machine")
    if not isinstance(raw, Mapping):
        return None
    llama = raw.get("llama_cpp")
    llama_out = None
    if isinstance(llama, Mapping):
        llama_out = {
            k: (None if llama.get(k) in (None, "") else str(llama.get(k)))
            for k in ("version", "cpu_baseline", "wheel_key", "system_info")
        }
    out: dict[str, Any] = {
        k: (None if raw.get(k) in (None, "") else str(raw.get(k)))
        for k in ("host", "cpu_model", "cgroup_version")
    }
    out["llama_cpp"] = llama_out
    return out
