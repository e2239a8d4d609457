"""A group's infra policy sensitivity as the report shows it: the attribution stage's record
(:func:`evalnoise.attribution.policy_sensitivity.policy_sensitivity`) read into the form the
cards and the "Where the noise comes from" section take (:func:`policy_sensitivity_of`), and
its line on a card (:func:`policy_text`: the verdict only; the accuracy under each policy is
the infra policy column of the group's multiverse table,
:mod:`evalnoise.report.multiverse_section`).

Under each infra policy (as incorrect, exclude, retry) the group's accuracy with its CI
(kept in the card's JSON); a policy *moved* the result when its accuracy differs from the
reference's (as incorrect) by more than the reference CI's half-width, and the choice *moves
the result* when the largest difference between two policies does. A record that cannot be
read is said (``not_computed``), never raised.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evalnoise.formatting import finite_or_none as _finite

__all__ = ["points_text", "policy_sensitivity_of", "policy_text"]


def policy_sensitivity_of(attribution: Mapping[str, Any]) -> dict[str, Any]:
    """The policy-sensitivity part of a group's attribution summary, for cards and the
    report: per policy (as incorrect, exclude, retry) the accuracy and its CI, whether it
    applies, and ``moved`` — it differs from the reference (as incorrect) by more than the
    reference CI's half-width; ``moves_result`` is the same for the largest difference
    between any two policies. A group the stage could not analyse has ``not_computed``."""
    if "not_computed" in attribution or "policy" not in attribution:
        why = attribution.get("not_computed") or "no policy-sensitivity record for this group"
        return {"not_computed": str(why)}
    try:
        return _policy_sensitivity(attribution)
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        # a record that parses but does not hold what the stage writes: said, never raised
        return {"not_computed": f"invalid attribution record ({type(exc).__name__}: {exc})"}


def _policy_sensitivity(attribution: Mapping[str, Any]) -> dict[str, Any]:
    half = _finite(attribution.get("policy_half_width"))
    rows = list(attribution["policy"])
    ref = _finite(rows[0].get("mean")) if rows else None
    policies = []
    for row in rows:
        mean = _finite(row.get("mean"))
        moved = (
            bool(row.get("applicable")) and None not in (mean, ref, half) and abs(mean - ref) > half  # type: ignore[operator]
        )
        policies.append(
            {
                "policy": row["policy"],
                "applicable": bool(row.get("applicable")),
                "accuracy": mean,
                "ci_low": _finite(row.get("ci_low")),
                "ci_high": _finite(row.get("ci_high")),
                "n_counted": row.get("n_counted"),
                "n_excluded": row.get("n_excluded"),
                "note": row.get("note"),
                "moved": moved,
            }
        )
    return {
        "not_computed": None,
        "declared_policy": attribution.get("declared_policy"),
        "policies": policies,
        "moves_result": bool(attribution.get("policy_moves_result")),
        "max_shift": _finite(attribution.get("policy_max_shift")),
        "half_width": half,
    }


def policy_text(ps: Mapping[str, Any]) -> str:
    """One line: whether the choice of infra policy moves the result (the largest shift
    between two policies against the reference CI's half-width). The accuracy under each
    policy is not restated: it is the infra policy column of the group's multiverse
    (:mod:`evalnoise.report.multiverse_section`; the card's "Reliability" row gives its
    range)."""
    if ps.get("not_computed"):
        return f"not computed ({ps['not_computed']})"
    shift, half = ps.get("max_shift"), ps.get("half_width")
    size = f"largest shift {points_text(shift)} vs CI half-width {points_text(half)}"
    verdict = (
        f"YES — the policy moves the result ({size})" if ps["moves_result"] else f"no ({size})"
    )
    return (
        f"the choice moves the result: {verdict}; the accuracy under each policy: the infra "
        "policy column of the group's multiverse table"
    )


def points_text(value: Any) -> str:
    """A difference of accuracies in percentage points, ``100 · value`` to one decimal
    (``3.1 pts``); an em dash when it is missing."""
    f = _finite(value)
    return "—" if f is None else f"{100 * f:.1f} pts"
