"""The report's table inputs as frames: records or a frame in, a frame out, None when empty.

``build_report`` and the attribution section read their tables through :func:`frame_or_none`,
so an empty table and a missing one take the same path.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

__all__ = ["frame_or_none"]


def frame_or_none(
    value: pd.DataFrame | Sequence[Mapping[str, Any]] | None,
) -> pd.DataFrame | None:
    """``value`` (a frame, or records) as a frame; None when it is None or has no rows."""
    if value is None:
        return None
    frame = value if isinstance(value, pd.DataFrame) else pd.DataFrame.from_records(list(value))
    return None if frame.empty else frame
