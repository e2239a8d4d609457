"""Cost drivers and their price (evalnoise.costs): nulls are "not reported", never 0.

Every expected amount is written out by hand from the formula in the module docstring
(cost per trial = Σ_k p_k · mean_k, total = Σ_k p_k · Σ reported driver_k).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalnoise.costs import (
    JUDGE_DRIVERS,
    TRIAL_DRIVERS,
    DriverTotal,
    Prices,
    column_total,
    combine_costs,
    cost_drivers,
    driver_total,
    estimate_cost,
)


def test_driver_total_skips_what_was_not_reported():
    assert driver_total([1, None, 3, float("nan"), np.nan]) == DriverTotal(2, 3, 4.0, 2.0)
    assert driver_total([0, 0]) == DriverTotal(2, 0, 0.0, 0.0)  # a reported zero counts
    assert driver_total([None, None]) == DriverTotal(0, 2, None, None)
    assert driver_total([]) == DriverTotal(0, 0, None, None)
    # what no table holds is no measurement either: not silently a number
    assert driver_total([True, -1, "7", float("inf")]) == DriverTotal(0, 4, None, None)


def test_cost_drivers_of_a_trial_table():
    frame = pd.DataFrame(
        {
            "duration_s": [2.0, 4.0, None],
            "prompt_tokens": pd.array([100, None, 300], dtype="Int64"),
            "completion_tokens": [10.0, 20.0, 30.0],
            # model_calls: a table older than the column
        }
    )
    costs = cost_drivers(frame)
    assert costs["trials"] == 3
    d = costs["drivers"]
    assert set(d) == {x.name for x in TRIAL_DRIVERS}  # no judge scored these rows
    assert d["container_seconds"] == {"n": 2, "missing": 1, "total": 6.0, "mean": 3.0}
    assert d["prompt_tokens"] == {"n": 2, "missing": 1, "total": 400.0, "mean": 200.0}
    assert d["completion_tokens"] == {"n": 3, "missing": 0, "total": 60.0, "mean": 20.0}
    assert d["model_calls"] == {"n": 0, "missing": 3, "total": None, "mean": None}


def test_cost_drivers_add_the_judge_only_when_a_judge_scored():
    rows = {"duration_s": [1.0, 1.0], "scorer": ["numeric", "numeric"]}
    assert "judge_calls" not in cost_drivers(pd.DataFrame(rows))["drivers"]
    judged = pd.DataFrame({**rows, "scorer": ["judge:m", "judge:m"], "judge_calls": [2, 0]})
    d = cost_drivers(judged)["drivers"]
    assert d["judge_calls"] == {"n": 2, "missing": 0, "total": 2.0, "mean": 1.0}
    # a judge shard from before the cost columns: the judge ran, its calls are unknown
    old = pd.DataFrame({**rows, "scorer": ["judge:m", "judge:m"]})
    assert cost_drivers(old)["drivers"]["judge_calls"]["n"] == 0
    only = cost_drivers(judged, JUDGE_DRIVERS)["drivers"]
    assert set(only) == {x.name for x in JUDGE_DRIVERS}


def test_combine_costs_takes_the_judge_stage_calls_once():
    analysis = {
        "trials": 4,
        "drivers": {
            "container_seconds": {"n": 4, "missing": 0, "total": 8.0, "mean": 2.0},
            "judge_calls": {"n": 4, "missing": 0, "total": 8.0, "mean": 2.0},
        },
    }
    stage = {
        "trials": 4,
        "drivers": {"judge_calls": {"n": 4, "missing": 0, "total": 8.0, "mean": 2.0}},
    }
    both = combine_costs(analysis, stage)
    assert both["trials"] == 4
    assert both["drivers"]["judge_calls"]["total"] == 8.0  # replaced, not added up to 16
    assert both["drivers"]["container_seconds"]["total"] == 8.0
    assert combine_costs(analysis, None) == analysis
    assert combine_costs(None, None) is None


def test_prices_from_config_name_the_bad_key():
    assert not Prices.from_config(None).priced
    assert not Prices.from_config({"currency": "USD", "per_judge_call": None}).priced
    prices = Prices.from_config({"currency": "EUR", "per_container_second": 1})
    assert prices.priced and prices.per_container_second == 1.0
    with pytest.raises(ValueError, match=r"config key prices\.per_judge_call: -0\.5 is not"):
        Prices.from_config({"per_judge_call": -0.5})
    with pytest.raises(ValueError, match=r"prices\.per_container_second: nan"):
        Prices.from_config({"per_container_second": float("nan")})
    with pytest.raises(ValueError, match=r"prices\.per_million_prompt_tokens: '1' is not a"):
        Prices.from_config({"per_million_prompt_tokens": "1"})
    with pytest.raises(ValueError, match=r"prices\.per_call: unknown key"):
        Prices.from_config({"per_call": 1})


DRIVERS = {
    "container_seconds": {"n": 10, "missing": 0, "total": 50.0, "mean": 5.0},
    "prompt_tokens": {"n": 10, "missing": 0, "total": 4_000_000.0, "mean": 400_000.0},
    "completion_tokens": {"n": 10, "missing": 0, "total": 500_000.0, "mean": 50_000.0},
    "model_calls": {"n": 10, "missing": 0, "total": 30.0, "mean": 3.0},
    "judge_calls": {"n": 10, "missing": 0, "total": 20.0, "mean": 2.0},
}
PRICES = Prices(
    currency="USD",
    per_container_second=0.001,
    per_million_prompt_tokens=0.15,
    per_million_completion_tokens=0.6,
    per_judge_call=0.01,
)


def test_estimate_cost_totals():
    est = estimate_cost(DRIVERS, 10, PRICES)
    # per trial: 5 s × 0.001 + 0.4 M × 0.15 + 0.05 M × 0.6 + 2 calls × 0.01
    assert est.per_trial == pytest.approx(0.005 + 0.06 + 0.03 + 0.02)
    # total: 50 s × 0.001 + 4 M × 0.15 + 0.5 M × 0.6 + 20 × 0.01
    assert est.total == pytest.approx(0.05 + 0.6 + 0.3 + 0.2)
    assert est.total == pytest.approx(10 * est.per_trial)  # complete: N × per trial
    assert est.complete and est.missing == {} and est.not_applicable == ()
    assert [line.driver for line in est.lines] == [
        "container_seconds",
        "prompt_tokens",
        "completion_tokens",
        "judge_calls",
    ]  # model calls are shown, not priced
    assert est.currency == "USD" and est.to_dict()["lines"][1]["per"] == 1e6


def test_missing_prices_price_only_what_has_a_price():
    assert estimate_cost(DRIVERS, 10, Prices()) is None
    est = estimate_cost(DRIVERS, 10, Prices(per_container_second=2.0))
    assert (est.per_trial, est.total, est.currency) == (10.0, 100.0, None)


def test_unreported_drivers_are_missing_never_zero():
    drivers = {
        **DRIVERS,
        # 4 of 10 trials did not report their tokens (say, they timed out)
        "prompt_tokens": {"n": 6, "missing": 4, "total": 2_400_000.0, "mean": 400_000.0},
    }
    est = estimate_cost(drivers, 10, Prices(per_million_prompt_tokens=0.15))
    assert not est.complete and est.missing == {"prompt_tokens": 4}
    assert est.per_trial == pytest.approx(0.06)  # the mean of the 6 that reported
    assert est.total == pytest.approx(0.36)  # 2.4 M × 0.15: a lower bound, not 10 × 0.06
    nobody = {**DRIVERS, "prompt_tokens": {"n": 0, "missing": 10, "total": None, "mean": None}}
    est = estimate_cost(nobody, 10, Prices(per_container_second=1.0, per_million_prompt_tokens=1))
    assert est.per_trial is None  # unknown, not 5.0
    assert est.total == 50.0 and est.missing == {"prompt_tokens": 10} and not est.complete
    est = estimate_cost(nobody, 10, Prices(per_million_prompt_tokens=1))
    assert (est.per_trial, est.total) == (None, None)  # nothing measured: unknown, not 0


def test_a_judge_price_without_a_judge_does_not_apply():
    no_judge = {k: v for k, v in DRIVERS.items() if not k.startswith("judge")}
    est = estimate_cost(no_judge, 10, Prices(per_judge_call=0.01, per_container_second=0.001))
    assert est.not_applicable == ("per_judge_call",)
    assert est.per_trial == pytest.approx(0.005) and est.complete
    only = estimate_cost(no_judge, 10, Prices(per_judge_call=0.01))
    assert only.per_trial is None and only.total is None and only.lines == ()


def test_estimate_reads_driver_dicts_and_objects_alike():
    objects = {k: DriverTotal(**v) for k, v in DRIVERS.items()}
    assert estimate_cost(objects, 10, PRICES) == estimate_cost(DRIVERS, 10, PRICES)
    assert math.isfinite(estimate_cost(objects, 10, PRICES).total)


_VALUES = st.one_of(
    st.none(),
    st.floats(allow_nan=True, allow_infinity=True, width=64),
    st.integers(-5, 10**6).map(float),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_VALUES, max_size=40), st.sampled_from(["float64", "Float64", "f8[pyarrow]"]))
def test_a_numeric_column_totals_as_its_values_one_by_one(values, dtype):
    """The vectorized sum of a numeric column (200,000 Python calls at 100,000 trials,
    before) counts exactly what driver_total counts value by value."""
    if dtype == "f8[pyarrow]":
        dtype = pd.ArrowDtype(pa.float64())
    column = (
        pd.Series(values, dtype=dtype)
        if dtype != "float64"
        else pd.Series([np.nan if v is None else v for v in values], dtype="float64")
    )
    frame = pd.DataFrame({"duration_s": column})
    fast = column_total(frame, "duration_s")
    slow = driver_total(column.tolist())
    assert (fast.n, fast.missing) == (slow.n, slow.missing)
    assert fast.total == slow.total and fast.mean == slow.mean


def test_integer_bool_and_text_columns_and_an_absent_one():
    frame = pd.DataFrame(
        {
            "calls": pd.array([1, None, 4], dtype="Int64"),
            "flag": [True, False, True],
            "text": ["7", None, "x"],
            "ints": np.array([2, -1, 3], dtype=np.int64),
        }
    )
    assert column_total(frame, "calls") == DriverTotal(2, 1, 5.0, 2.5)
    assert column_total(frame, "flag") == DriverTotal(0, 3, None, None)
    assert column_total(frame, "text") == DriverTotal(0, 3, None, None)
    assert column_total(frame, "ints") == DriverTotal(2, 1, 5.0, 2.5)
    assert column_total(frame, "absent") == DriverTotal(0, 3, None, None)


def test_a_total_beyond_the_largest_float_is_infinite_not_an_error():
    """fsum raises OverflowError on an intermediate overflow (hypothesis found it); the
    true sum of these non-negative values is beyond every float, so +inf, both paths."""
    frame = pd.DataFrame({"duration_s": [1e308, 1e308, None]})
    fast = column_total(frame, "duration_s")
    slow = driver_total(frame["duration_s"].tolist())
    assert fast == slow
    assert (fast.n, fast.missing, fast.total) == (2, 1, math.inf)
