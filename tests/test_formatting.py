"""evalnoise.formatting.finite_or_none: the report's one reading of a maybe-missing number."""

import math

import numpy as np
import pandas as pd
import pytest

from evalnoise.formatting import finite_or_none


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
