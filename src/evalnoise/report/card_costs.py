"""What an Evaluation Card says about cost: the group's cost drivers and, with prices, their
price.

A card's ``costs`` (:func:`card_costs`) hold the group's cost drivers as recorded — mean
container seconds, model calls, tokens and judge calls per trial attempt, with how many
attempts lacked each (:func:`evalnoise.costs.combine_costs`) — and, with prices in the config
(``prices``), the estimate of :func:`evalnoise.costs.estimate_cost`: per trial and in total,
a lower bound when attempts lacked a priced driver. A driver no attempt reported is "not
reported", never priced as 0. :func:`cost_drivers_text` and :func:`cost_text` are the card's
"Cost drivers" and "Cost" lines (the page's summary shows the second). Cost is no statistic of
the agent's quality: these lines are never struck through, also on an invalid card.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evalnoise.costs import DRIVERS, Prices, driver_label, estimate_cost
from evalnoise.formatting import finite_or_none as _finite
from evalnoise.formatting import fmt

__all__ = ["card_costs", "cost_drivers_text", "cost_text"]


def card_costs(
    costs: Mapping[str, Any] | None, prices: Mapping[str, Any] | Prices | None
) -> dict[str, Any]:
    """A card's ``costs``: the group's cost drivers as recorded (``drivers``: name →
    ``{n, missing, total, mean}`` per attempt, None when the input has no cost record),
    ``trials`` (attempts), the ``prices`` that apply (None: none configured) and the
    ``estimate`` (:func:`evalnoise.costs.estimate_cost`: per trial = Σ_k p_k · mean_k,
    total = Σ_k p_k · total_k; None without prices or drivers)."""
    prices = prices if isinstance(prices, Prices) else Prices.from_config(prices)
    drivers = None if not costs else costs.get("drivers")
    trials = None if not costs else costs.get("trials")
    estimate = None
    if drivers is not None and prices.priced:
        found = estimate_cost(drivers, int(trials or 0), prices)
        estimate = None if found is None else found.to_dict()
    return {
        "trials": trials,
        "drivers": None if drivers is None else {k: dict(v) for k, v in drivers.items()},
        "prices": prices.to_dict() if prices.priced else None,
        "estimate": estimate,
    }


def _amount(value: float | None, currency: str | None) -> str:
    if value is None:
        return "unknown"
    text = f"{value:,.2f}" if abs(value) >= 1 else f"{value:.3g}"
    return f"{text} {currency}" if currency else f"{text} (no currency given)"


def _quantity(value: Any) -> str:
    f = _finite(value)
    if f is None:
        return "—"
    return f"{f:,.0f}" if abs(f) >= 1000 else f"{f:.3g}"


def _per(per: float) -> str:
    return "per 1M" if per == 1e6 else "each"


def cost_drivers_text(costs: Mapping[str, Any]) -> str:
    """The mean of each cost driver per trial attempt, "not reported" where no attempt
    reported it, and how many attempts lacked it where some did."""
    drivers = costs.get("drivers")
    if drivers is None:
        return "not recorded (these results predate cost accounting)"
    trials = costs.get("trials")
    parts = []
    for driver in DRIVERS:
        d = drivers.get(driver.name)
        if d is None:
            continue
        n, missing = int(d.get("n") or 0), int(d.get("missing") or 0)
        if not n:
            parts.append(f"{driver.label} not reported")
            continue
        text = f"{driver.label} {_quantity(d.get('mean'))}"
        if missing:
            text += f" (not reported by {missing} of {n + missing})"
        parts.append(text)
    if not any(name.startswith("judge_") for name in drivers):
        parts.append("no LLM judge")
    # one fixed opening for every measured cost line ("per trial attempt"): what a card
    # measured of the run, next to the statistics that do not depend on it
    return f"per trial attempt (mean of {trials}): " + "; ".join(parts)


def cost_text(costs: Mapping[str, Any]) -> str:
    """What the trials cost at the configured prices: per trial, in total over every
    attempt, the prices applied, and what could not be priced (never as 0)."""
    prices, estimate = costs.get("prices"), costs.get("estimate")
    if prices is None:
        return "not priced (no prices in the config section prices)"
    if estimate is None:
        return "not computable: no cost drivers recorded"
    cur = estimate.get("currency")
    lines = estimate.get("lines") or []
    if not lines:
        return "no price applies to this group: " + "; ".join(
            _not_applied(key) for key in estimate.get("not_applicable") or ()
        )
    # a total over the trials that reported the priced drivers: a lower bound when some
    # trials did not (those are missing, not free)
    bound = "" if estimate.get("complete") or estimate.get("total") is None else "at least "
    text = (
        f"per trial attempt {_amount(estimate.get('per_trial'), cur)}; total {bound}"
        f"{_amount(estimate.get('total'), cur)} over {estimate.get('trials')} attempts"
    )
    text += "; prices: " + ", ".join(
        f"{driver_label(line['driver'])} {fmt(line['price'], 'g')} {_per(line['per'])}"
        for line in lines
    )
    missing = estimate.get("missing") or {}
    if missing:
        text += "; not priced where not reported (total is a lower bound): " + ", ".join(
            f"{driver_label(name)} missing in {count} of {estimate.get('trials')}"
            for name, count in missing.items()
        )
    for key in estimate.get("not_applicable") or ():
        text += f"; {_not_applied(key)}"
    return text


def _not_applied(price_key: str) -> str:
    if price_key == "per_judge_call":
        return "per_judge_call not applied: no LLM judge scored these trials"
    return f"{price_key} not applied: its driver is not in this group's record"
