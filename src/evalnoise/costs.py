"""What a group's trials cost: the drivers every trial records, and their price.

Cost drivers are columns of the trial and score tables (:mod:`evalnoise.schema`), counted per
*trial attempt* (one row, one container run: a retried trial's every attempt was paid for):

=========================== ================================== ===============================
driver                      column                             price (config ``prices``)
=========================== ================================== ===============================
``container_seconds``       ``duration_s``                     ``per_container_second``
``prompt_tokens``           ``prompt_tokens`` (the agent's)    ``per_million_prompt_tokens``
``completion_tokens``       ``completion_tokens``              ``per_million_completion_tokens``
``model_calls``             ``model_calls``                    (shown, not priced)
``judge_calls``             ``judge_calls``                    ``per_judge_call``
``judge_cached``            ``judge_cached``                   (free: answered by the cache)
``judge_prompt_tokens``     ``judge_prompt_tokens``            (shown; the judge is priced
``judge_completion_tokens`` ``judge_completion_tokens``        per call, its model may differ)
=========================== ================================== ===============================

A null driver is *not reported* — never 0. For driver *k* over a group's *N* attempts, *n_k*
reported it (*m_k = N − n_k* did not), ``total_k`` is the sum of the reported values and
``mean_k = total_k / n_k``. With prices *p_k* per unit (a price per million tokens is
*p / 10⁶* per token)::

    cost per trial = Σ_k p_k · mean_k
    total          = Σ_k p_k · total_k        (the sum over the trials that reported k)

over the priced drivers only. When a priced driver went unreported by *m_k > 0* trials, the
estimate is *incomplete*: the total is a lower bound (those trials are counted as missing,
never priced as 0) and the cost per trial is the mean over the trials that reported it; when
no trial reported a priced driver the cost per trial is unknown (None). A price whose driver
the group has no record of at all (``per_judge_call`` in a run without an LLM judge) does not
apply and is listed as such.

Everything here is a pure function of its arguments.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from typing import Any

import numpy as np

__all__ = [
    "DRIVERS",
    "JUDGE_DRIVERS",
    "TRIAL_DRIVERS",
    "CostEstimate",
    "CostLine",
    "CostPart",
    "Driver",
    "DriverTotal",
    "PilotTrialCost",
    "Prices",
    "column_total",
    "combine_costs",
    "cost_drivers",
    "driver_label",
    "driver_total",
    "estimate_cost",
    "pilot_trial_cost",
]


@dataclass(frozen=True)
class Driver:
    """One cost driver: its name, the table column it is read from, how it reads in
    text, and the ``prices`` key that prices it (None: not priced) with its unit size."""

    name: str
    column: str
    label: str
    price_key: str | None = None
    #: units per price: 1 (per second, per call) or 1e6 (per million tokens)
    per: float = 1.0


TRIAL_DRIVERS = (
    Driver("container_seconds", "duration_s", "container seconds", "per_container_second"),
    Driver("prompt_tokens", "prompt_tokens", "prompt tokens", "per_million_prompt_tokens", 1e6),
    Driver(
        "completion_tokens",
        "completion_tokens",
        "completion tokens",
        "per_million_completion_tokens",
        1e6,
    ),
    Driver("model_calls", "model_calls", "model calls"),
)
JUDGE_DRIVERS = (
    Driver("judge_calls", "judge_calls", "judge calls", "per_judge_call"),
    Driver("judge_cached", "judge_cached", "judge samples from the cache"),
    Driver("judge_prompt_tokens", "judge_prompt_tokens", "judge prompt tokens"),
    Driver("judge_completion_tokens", "judge_completion_tokens", "judge completion tokens"),
)
DRIVERS = TRIAL_DRIVERS + JUDGE_DRIVERS
_BY_NAME = {d.name: d for d in DRIVERS}


# -------------------------------------------------------------------------------- drivers


@dataclass(frozen=True)
class DriverTotal:
    """One driver over a group's attempts: ``n`` reported it, ``missing`` did not;
    ``total`` = Σ reported values and ``mean`` = total / n (both None when n = 0)."""

    n: int
    missing: int
    total: float | None
    mean: float | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> DriverTotal:
        return cls(**{f.name: data.get(f.name) for f in fields(cls)})


def _known(value: Any) -> float | None:
    # only a number is a measurement (None, NaN, pandas' NA are "not reported"); a bool,
    # a string, a negative or non-finite value is none either (the tables never hold one)
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    f = float(value)
    return f if math.isfinite(f) and f >= 0 else None


def _exact_sum(values: list[float]) -> float:
    """Σ values, correctly rounded (``math.fsum``); +inf when the true sum of these
    non-negative values exceeds the largest float, where ``fsum`` raises instead."""
    try:
        return math.fsum(values)
    except OverflowError:
        return math.inf


def driver_total(values: Iterable[Any]) -> DriverTotal:
    """:class:`DriverTotal` of one driver's values over the attempts (None, NaN: not
    reported)::

        n = #reported, missing = #values − n, total = Σ reported, mean = total / n
    """
    values = list(values)
    known = [f for f in map(_known, values) if f is not None]
    if not known:
        return DriverTotal(0, len(values), None, None)
    total = _exact_sum(known)
    return DriverTotal(len(known), len(values) - len(known), total, total / len(known))


def column_total(frame: Any, name: str) -> DriverTotal:
    """:func:`driver_total` of a table's column (absent: not reported on any row).

    A numeric column (NumPy, nullable or Arrow-backed; not bool) is summed without a Python
    call per value: n = #(finite and ≥ 0), total = fsum of those, as :func:`driver_total`
    counts them; any other column goes through :func:`driver_total` value by value."""
    if name not in frame.columns:
        return DriverTotal(0, len(frame), None, None)
    column = frame[name]
    if column.dtype.kind not in "iuf":
        return driver_total(column.tolist())
    values = column.to_numpy(dtype=float, na_value=np.nan)
    known = values[np.isfinite(values) & (values >= 0)]
    if not known.size:
        return DriverTotal(0, values.size, None, None)
    total = _exact_sum(known.tolist())
    return DriverTotal(known.size, values.size - known.size, total, total / known.size)


def _judge_scored(frame: Any) -> bool:
    """Whether an LLM judge scored these rows: it fills ``judge_calls`` on every row it
    scores (0 for a trial it did not ask about); older judge shards say so in ``scorer``."""
    if "judge_calls" in frame.columns and frame["judge_calls"].notna().any():
        return True
    return "scorer" in frame.columns and frame["scorer"].astype(str).str.startswith("judge").any()


def cost_drivers(frame: Any, drivers: Sequence[Driver] | None = None) -> dict[str, Any]:
    """The cost drivers of one group's attempts (a trial or score table, one row per
    attempt) as JSON-ready ``{"trials": N, "drivers": {name: DriverTotal.to_dict()}}``.

    ``drivers`` defaults to :data:`TRIAL_DRIVERS`, plus :data:`JUDGE_DRIVERS` when an LLM
    judge scored the rows (a deterministic scorer asks no judge: no judge driver then, which
    is not the same as a judge that reported nothing). A driver whose column is absent
    (a table older than the column) counts as not reported on every row.
    """
    if drivers is None:
        drivers = TRIAL_DRIVERS + (JUDGE_DRIVERS if _judge_scored(frame) else ())
    return {
        "trials": len(frame),
        "drivers": {d.name: column_total(frame, d.column).to_dict() for d in drivers},
    }


def combine_costs(
    trials: Mapping[str, Any] | None, judge: Mapping[str, Any] | None
) -> dict[str, Any] | None:
    """A group's drivers from the analysis (``trials``: :func:`cost_drivers` of the scores
    it read) and from the judge stage (``judge``: :func:`cost_drivers` of its shards with
    :data:`JUDGE_DRIVERS`). The judge stage's judge drivers replace the analysis's, never add
    to them: when the analysis reads the judge stage's scores both count the same calls."""
    if not trials and not judge:
        return None
    out = {"trials": (trials or judge or {}).get("trials"), "drivers": {}}
    out["drivers"].update(dict((trials or {}).get("drivers") or {}))
    judged = dict((judge or {}).get("drivers") or {})
    if judged:
        for name in [n for n in out["drivers"] if n.startswith("judge_")]:
            del out["drivers"][name]
        out["drivers"].update(judged)
    return out


# --------------------------------------------------------------------------------- prices


@dataclass(frozen=True)
class Prices:
    """Prices per unit of the priced drivers (None: not priced) and the currency label.

    The config's ``prices`` section, with the same keys; :meth:`from_config` checks it.
    """

    currency: str | None = None
    per_container_second: float | None = None
    per_million_prompt_tokens: float | None = None
    per_million_completion_tokens: float | None = None
    per_judge_call: float | None = None

    @classmethod
    def from_config(cls, section: Mapping[str, Any] | None) -> Prices:
        """Prices from the config's ``prices`` section (None or {}: no prices). Raises
        ``ValueError`` naming the key (``prices.per_judge_call``) for an unknown key or a
        price that is not a finite number ≥ 0."""
        if not section:
            return cls()
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(section) - known)
        if unknown:
            raise ValueError(
                f"config key prices.{unknown[0]}: unknown key (allowed: {', '.join(sorted(known))})"
            )
        values: dict[str, Any] = {}
        for key, value in section.items():
            if key == "currency":
                if value is not None and not isinstance(value, str):
                    raise ValueError(f"config key prices.currency: {value!r} is not a string")
                values[key] = value
                continue
            if value is None:
                values[key] = None
                continue
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ValueError(f"config key prices.{key}: {value!r} is not a number")
            if not math.isfinite(value) or value < 0:
                raise ValueError(
                    f"config key prices.{key}: {value!r} is not a price (a finite number >= 0)"
                )
            values[key] = float(value)
        return cls(**values)

    @property
    def priced(self) -> bool:
        """Whether any driver has a price."""
        return any(getattr(self, d.price_key) is not None for d in DRIVERS if d.price_key)

    def of(self, driver: Driver) -> float | None:
        """The price of one unit of ``driver`` (None: not priced)."""
        if driver.price_key is None:
            return None
        price = getattr(self, driver.price_key)
        return None if price is None else price / driver.per

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# ------------------------------------------------------------------------------- estimate


@dataclass(frozen=True)
class CostLine:
    """One priced driver of an estimate: its configured ``price`` (per ``per`` units), the
    driver's totals, ``per_trial`` = price/per · mean (None when no trial reported it) and
    ``total`` = price/per · Σ reported."""

    driver: str
    price_key: str
    price: float
    per: float
    n: int
    missing: int
    mean: float | None
    per_trial: float | None
    total: float


@dataclass(frozen=True)
class CostEstimate:
    """What a group's trials cost (module docstring): ``per_trial`` = Σ_k p_k · mean_k,
    ``total`` = Σ_k p_k · total_k, over the priced drivers in ``lines``.

    ``complete`` is False when a priced driver went unreported by some trials
    (``missing``: driver → trials): ``total`` is then a lower bound. ``per_trial`` is None
    when some priced driver was reported by no trial. ``not_applicable`` names the prices
    whose driver the group has no record of (``per_judge_call`` without a judge). When no
    price applies, or no trial reported any priced driver, ``per_trial`` and ``total`` are
    None: nothing was measured to price.
    """

    currency: str | None
    trials: int
    per_trial: float | None
    total: float | None
    complete: bool
    lines: tuple[CostLine, ...]
    missing: dict[str, int]
    not_applicable: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["lines"] = [asdict(line) for line in self.lines]
        out["not_applicable"] = list(self.not_applicable)
        return out


def estimate_cost(
    drivers: Mapping[str, DriverTotal | Mapping[str, Any]], trials: int, prices: Prices
) -> CostEstimate | None:
    """Price a group's drivers (``drivers``: name → :class:`DriverTotal` or its dict, over
    ``trials`` attempts) at ``prices``; None when no driver has a price.

    ::

        per_trial = Σ_k p_k · mean_k      total = Σ_k p_k · total_k

    with p_k the price of one unit of driver k, over the priced drivers the group has a
    record of; see :class:`CostEstimate` for unreported drivers.
    """
    if not prices.priced:
        return None
    lines: list[CostLine] = []
    missing: dict[str, int] = {}
    not_applicable: list[str] = []
    for driver in DRIVERS:
        unit_price = prices.of(driver)
        if unit_price is None:
            continue
        assert driver.price_key is not None
        if driver.name not in drivers:
            not_applicable.append(driver.price_key)
            continue
        d = drivers[driver.name]
        d = d if isinstance(d, DriverTotal) else DriverTotal.from_dict(d)
        n, absent = int(d.n or 0), int(d.missing or 0)
        if absent:
            missing[driver.name] = absent
        lines.append(
            CostLine(
                driver=driver.name,
                price_key=driver.price_key,
                price=getattr(prices, driver.price_key),
                per=driver.per,
                n=n,
                missing=absent,
                mean=d.mean,
                per_trial=None if d.mean is None else unit_price * d.mean,
                total=unit_price * (d.total or 0.0) if n else 0.0,
            )
        )
    per_trial = (
        None
        if not lines or any(line.per_trial is None for line in lines)
        else math.fsum(line.per_trial for line in lines)  # type: ignore[misc]
    )
    return CostEstimate(
        currency=prices.currency,
        trials=int(trials),
        per_trial=per_trial,
        # nothing measured to price (no line, or no trial reported any priced driver):
        # unknown, not a total of 0
        total=math.fsum(line.total for line in lines) if any(x.n for x in lines) else None,
        complete=not missing,
        lines=tuple(lines),
        missing=missing,
        not_applicable=tuple(not_applicable),
    )


def driver_label(name: str) -> str:
    """How a driver reads in text ("prompt tokens")."""
    return _BY_NAME[name].label if name in _BY_NAME else name.replace("_", " ")


# ------------------------------------------------------------------- a pilot's cost per trial


@dataclass(frozen=True)
class CostPart:
    """One term of a pilot's cost per trial (:func:`pilot_trial_cost`).

    ``source`` is ``"per_trial"`` (a price per trial given outright), a priced driver's name
    (``container_seconds``, ``prompt_tokens``, ``completion_tokens``, ``judge_calls``) or
    ``"cost_column"`` (a column of money per trial); ``column`` the column read (None for
    a price per trial); ``mean`` its mean over the ``n`` trials that reported it
    (``unreported`` did not, left out of the mean; None for a price per trial); ``price``
    the price as given (per million tokens for tokens; None for a cost column); ``cost``
    the term's cost per trial."""

    source: str
    column: str | None
    mean: float | None
    n: int
    unreported: int
    price: float | None
    cost: float


@dataclass(frozen=True)
class PilotTrialCost:
    """A pilot's cost per trial, ``total`` = Σ ``parts``' cost."""

    total: float
    parts: tuple[CostPart, ...]


def _column_mean(frame: Any, column: str, what: str, path: str | None) -> tuple[float, int, int]:
    """(mean, reported, unreported) of a column of numbers ≥ 0 (a null is unreported);
    ``InputError`` naming the file, row and column for a value that is not one."""
    import pandas as pd

    from evalnoise.errors import InputError

    if column not in frame.columns:
        have = ", ".join(map(str, frame.columns[:12]))
        raise InputError(
            f"no such column for {what} (the file has: {have})", path=path, column=column
        )
    values = pd.to_numeric(frame[column], errors="coerce")
    bad = values.isna() & frame[column].notna()
    if bad.any():
        i = int(np.flatnonzero(bad.to_numpy())[0])
        raise InputError(
            f"{what} {frame[column].iloc[i]!r} is not a number", path=path, row=i + 1, column=column
        )
    v = values.dropna().to_numpy(dtype=float)
    if v.size == 0:
        raise InputError(f"no {what} in the column", path=path, column=column)
    if not np.all(np.isfinite(v)) or v.min() < 0:
        raise InputError(f"{what} must be finite and >= 0", path=path, column=column)
    return float(v.mean()), int(v.size), int(len(frame) - v.size)


def pilot_trial_cost(
    frame: Any,
    *,
    per_trial: float | None = None,
    driver_prices: Mapping[str, float] | None = None,
    duration_column: str = "duration_s",
    cost_column: str | None = None,
    path: str | None = None,
) -> PilotTrialCost:
    """The cost of one trial from a pilot's trial rows (a DataFrame):

    cost per trial = c_fixed + Σ_k p_k · mean_k + mean(cost column),

    ``per_trial`` the fixed part, ``driver_prices`` the price of each priced driver by name
    (``container_seconds`` per second, read from ``duration_column``; ``prompt_tokens`` and
    ``completion_tokens`` per million tokens; ``judge_calls`` per call) with mean_k its
    column's mean over the trials that reported it (a trial that did not is left out of the
    mean, never priced as 0), and ``cost_column`` a column of money per trial, averaged. A
    bad column is an ``InputError`` naming ``path``, the row and the column."""
    parts = []
    if per_trial is not None:
        parts.append(CostPart("per_trial", None, None, len(frame), 0, float(per_trial),
                              float(per_trial)))  # fmt: skip
    for name, price in (driver_prices or {}).items():
        driver = _BY_NAME[name]
        column = duration_column if name == "container_seconds" else driver.column
        mean, n, unreported = _column_mean(frame, column, driver.label, path)
        cost = mean * float(price) / driver.per
        parts.append(CostPart(name, column, mean, n, unreported, float(price), cost))
    if cost_column is not None:
        mean, n, unreported = _column_mean(frame, cost_column, "cost per trial", path)
        parts.append(CostPart("cost_column", cost_column, mean, n, unreported, None, mean))
    return PilotTrialCost(sum(p.cost for p in parts), tuple(parts))
