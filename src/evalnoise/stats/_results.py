"""JSON-ready conversion of results: one helper for every ``to_dict()`` in the package.

Results keep NaN as NaN (``json.dumps`` writes it as ``NaN``; :func:`evalnoise.formatting.jsonable`
turns it into ``null`` where strict JSON is wanted).
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["DictResult", "plain"]


def plain(value: Any) -> Any:
    """JSON-friendly builtins, recursively: tuples and arrays to lists, numpy scalars to Python
    numbers, ``None`` and ``pd.NA`` to None; dicts keep their keys, NaN stays NaN."""
    if value is None or value is pd.NA:
        return None
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return [plain(v) for v in value.tolist()]
    if isinstance(value, np.generic):
        return value.item()
    return value


class DictResult:
    """Mixin for frozen result dataclasses: ``to_dict()`` from the fields."""

    __slots__ = ()

    def to_dict(self) -> dict[str, Any]:
        """Every field as JSON-friendly builtins (:func:`plain`): NaN stays NaN, warnings and
        arrays become lists, nested results become nested dicts."""
        return plain(asdict(self))  # type: ignore[call-overload]
