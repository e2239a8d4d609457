"""Result tables as records of plain Python values (in memory: NaN stays NaN).

What leaves the process goes through :func:`evalnoise.formatting.dumps` /
:func:`evalnoise.formatting.jsonable`, the one rule there is for that: NaN → null.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from evalnoise.stats._results import plain

__all__ = ["records"]


def records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """One dict per row, every value :func:`evalnoise.stats._results.plain` (``pd.NA`` →
    None, NaN stays NaN until it leaves the process)."""
    return [
        {str(k): plain(v) for k, v in row.items()}
        for row in frame.astype(object).to_dict("records")
    ]
