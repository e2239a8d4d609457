"""JSON-ready conversion of result tables: plain Python scalars, NaN for missing numbers."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd


def jsonable(value: Any) -> Any:
    """A plain Python value: numpy scalars unwrapped, ``pd.NA`` → None, arrays → lists."""
    if value is None or value is pd.NA:
        return None
    if isinstance(value, np.bool_ | bool):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    if isinstance(value, np.ndarray):
        return [jsonable(v) for v in value.tolist()]
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    return value


def records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """One dict per row, every value :func:`jsonable`."""
    return [
        {str(k): jsonable(v) for k, v in row.items()}
        for row in frame.astype(object).to_dict("records")
    ]
