"""A trial table as the attribution analyses read it: outcomes, scores, the trial key, time blocks.

Pure functions of a trial frame; no I/O. A *time block* is a stretch of the run's wall-clock
time (:func:`time_blocks`), a factor of the attribution's G study.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from evalnoise.schema import TRIAL_KEY

__all__ = [
    "binary_outcome",
    "one_group",
    "require_columns",
    "run_seconds",
    "score_values",
    "time_blocks",
    "trial_key",
]


def run_seconds(started_at: Any) -> np.ndarray:
    """Seconds since the earliest start, NaN where unknown.

    ``started_at``: datetimes (naive are taken as UTC, aware are converted) or numbers
    (taken as seconds already).
    """
    s = pd.Series(started_at).reset_index(drop=True)
    if s.size == 0:
        return np.zeros(0)
    if pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s):
        v = s.to_numpy(dtype=float, na_value=np.nan)
    else:
        dt = pd.to_datetime(s, utc=True)
        v = (dt - dt.min()).dt.total_seconds().to_numpy(dtype=float, na_value=np.nan)
    if np.isfinite(v).any():
        v = v - np.nanmin(v)
    return v


def time_blocks(started_at: Any, n_blocks: int = 4) -> np.ndarray:
    """Equal-count time blocks of a run: block b ∈ {0, …, n_blocks − 1} per row, −1 if unknown.

    Rows are ranked by start time; with r the 0-based rank ("min" rank: tied starts share
    it, so ties stay in one block) among the N rows with a start time,

        block = ⌊r · n_blocks / N⌋.

    Every block then holds about N / n_blocks rows (exactly, when N is a multiple and no
    ties straddle a boundary), and block 0 is the start of the run.
    """
    if isinstance(n_blocks, bool) or not isinstance(n_blocks, numbers.Integral) or n_blocks < 1:
        raise ValueError("n_blocks must be a positive integer")
    t = run_seconds(started_at)
    out = np.full(t.shape, -1, dtype=np.int64)
    ok = np.isfinite(t)
    n = int(ok.sum())
    if n:
        v = t[ok]
        r = np.searchsorted(np.sort(v), v, side="left")  # rankdata(v, method="min") − 1
        out[ok] = (r * int(n_blocks)) // n
    return out


def binary_outcome(frame: pd.DataFrame) -> np.ndarray:
    """Correct (1.0) / wrong (0.0) / unknown (NaN) per row.

    ``correct`` where the column exists and is set; otherwise ``score >= 0.5`` (the rule the
    ``recorded`` scorer uses for imported scores); NaN where neither is known.
    """
    out = np.full(len(frame), np.nan)
    if "score" in frame.columns:
        score = pd.to_numeric(frame["score"], errors="coerce").to_numpy(
            dtype=float, na_value=np.nan
        )
        known = ~np.isnan(score)
        out[known] = (score[known] >= 0.5).astype(float)
    if "correct" in frame.columns:
        correct = frame["correct"].astype("boolean")
        known = ~correct.isna().to_numpy()
        out[known] = correct[known].to_numpy(dtype=bool).astype(float)
    return out


def score_values(frame: pd.DataFrame) -> np.ndarray:
    """Each row's score as a float; ``correct`` fills a missing ``score``; NaN = unscored."""
    y = np.full(len(frame), np.nan)
    if "score" in frame.columns:
        y = pd.to_numeric(frame["score"], errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    if "correct" in frame.columns:
        c = frame["correct"].astype("boolean")
        fill = np.isnan(y) & ~c.isna().to_numpy()
        y = y.copy()
        y[fill] = c[fill].to_numpy(dtype=bool).astype(float)
    return y


def trial_key(frame: pd.DataFrame) -> list[str]:
    """The trial key columns (:data:`TRIAL_KEY`) present in ``frame``."""
    key = [c for c in TRIAL_KEY if c in frame.columns]
    for needed in ("task_id", "trial"):
        if needed not in key:
            raise ValueError(f"the table has no {needed!r} column")
    return key


def require_columns(frame: pd.DataFrame, *columns: str) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(f"the table lacks column(s): {', '.join(missing)}")


def one_group(frame: pd.DataFrame, columns: Sequence[str] = ("agent", "resource_profile")) -> None:
    """Raise unless ``frame`` holds at most one value of each of ``columns`` (when present)."""
    for col in columns:
        if col in frame.columns:
            values = pd.unique(frame[col].dropna())
            if len(values) > 1:
                shown = ", ".join(sorted(map(str, values))[:5])
                raise ValueError(
                    f"expected one group's trials, but column {col!r} holds {len(values)} "
                    f"values ({shown}); split the table by group first"
                )
