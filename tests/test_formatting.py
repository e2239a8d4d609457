"""evalnoise.formatting: finite_or_none, the report's one reading of a maybe-missing number;
jsonable and dumps, the one JSON text of a record (checked against the standard library's)."""

import json
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalnoise.formatting import dumps, finite_or_none, jsonable


@pytest.mark.parametrize(
    "value", [None, float("nan"), math.inf, -math.inf, np.nan, pd.NA, pd.NaT, "x", "", [1]]
)
def test_what_is_no_finite_number_is_none(value):
    assert finite_or_none(value) is None


@pytest.mark.parametrize(
    ("value", "expected"), [(0, 0.0), (1, 1.0), (np.float32(0.5), 0.5), ("2.5", 2.5), (True, 1.0)]
)
def test_a_finite_number_is_its_float(value, expected):
    got = finite_or_none(value)
    assert type(got) is float and got == expected


_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**20), 10**20),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(),
    st.sampled_from([np.float64(0.1), np.int64(-3), np.bool_(True), np.float32(1.5), pd.NA]),
)
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.tuples(inner, inner),
        st.dictionaries(st.one_of(st.text(), st.integers(0, 9)), inner, max_size=4),
        st.builds(np.array, st.lists(st.floats(allow_nan=True), max_size=3)),
    ),
    max_leaves=25,
)


@settings(max_examples=300, deadline=None)
@given(value=_values)
def test_dumps_is_the_standard_librarys_indented_json(value):
    # the independent implementation: json.dumps with the same options, on jsonable's value
    assert dumps(value) == json.dumps(jsonable(value), indent=2, allow_nan=False)


def test_dumps_of_a_record_of_many_rows():
    rows = [
        {"task": f"t{i}", "n": i, "mean": i / 7, "low": None, "ok": i % 2 == 0} for i in range(500)
    ]
    record = {"per_task": rows, "empty": {}, "none": [], "nested": {"a": [[], {}, [1.5e-300]]}}
    assert dumps(record) == json.dumps(record, indent=2, allow_nan=False)
    assert json.loads(dumps(record)) == record
