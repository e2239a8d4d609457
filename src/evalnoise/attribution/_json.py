"""JSON-ready conversion of result tables: plain Python scalars, NaN for missing numbers."""

from __future__ import annotations

from typing import Any

import pandas as pd

from evalnoise.stats._results import plain as jsonable

__all__ = ["jsonable", "records"]


def records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """One dict per row, every value :func:`jsonable` (``pd.NA`` → None, NaN stays NaN)."""
    return [
        {str(k): jsonable(v) for k, v in row.items()}
        for row in frame.astype(object).to_dict("records")
    ]
