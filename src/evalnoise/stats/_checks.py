"""Argument checks and input coercion shared by the estimators and planners.

Each check returns the value as the type the caller computes with and raises ``ValueError``
naming the argument; none copies more than it must.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np
import pandas as pd

__all__ = [
    "check_finite_number",
    "check_positive_int",
    "check_probability",
    "finite_scores",
    "float_array",
    "judge_and_reference",
    "optional_positive_int",
    "scalar_or_array",
    "task_codes",
]


def check_probability(value: float, name: str = "confidence") -> float:
    """``value`` as a float strictly between 0 and 1 (a confidence level, alpha, power)."""
    v = float(value)
    if not 0.0 < v < 1.0:
        raise ValueError(f"{name} must lie strictly between 0 and 1, got {value!r}")
    return v


def check_finite_number(value: float, name: str, *, positive: bool = False) -> float:
    """``value`` as a finite float ≥ 0 (> 0 with ``positive``): a variance, a cost, a budget."""
    v = float(value)
    if not math.isfinite(v) or v < 0 or (positive and v == 0):
        need = "> 0" if positive else ">= 0"
        raise ValueError(f"{name} must be a finite number {need}, got {value!r}")
    return v


def check_positive_int(value: object, name: str) -> int:
    """``value`` as an int ≥ 1; bools and non-integral numbers are refused."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def optional_positive_int(value: object, name: str) -> int | None:
    """None (no cap), or :func:`check_positive_int`."""
    return None if value is None else check_positive_int(value, name)


def finite_scores(scores: Any, name: str, *, unit: bool = False) -> np.ndarray:
    """A 1-D float array of finite scores; with ``unit``, every score in [0, 1]."""
    y = np.asarray(scores, dtype=float)
    if y.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional")
    if not np.all(np.isfinite(y)):
        raise ValueError(f"{name} must be finite")
    if unit and y.size and (y.min() < 0.0 or y.max() > 1.0):
        raise ValueError(f"{name} must lie in [0, 1]")
    return y


def float_array(x: Any) -> np.ndarray:
    """1-D float array; None, pd.NA and NaN become NaN (bools become 0/1)."""
    try:
        return np.asarray(x, dtype=float).ravel()
    except TypeError:
        obj = pd.Series(np.asarray(x, dtype=object).ravel())
        return obj.astype("Float64").to_numpy(dtype=float, na_value=np.nan)


def _unit_scores(x: Any, name: str, *, binary: bool) -> np.ndarray:
    arr = float_array(x)
    if np.any(np.isinf(arr)):
        raise ValueError(f"{name} must be finite or NaN")
    fin = arr[np.isfinite(arr)]
    if binary and np.any((fin != 0.0) & (fin != 1.0)):
        raise ValueError(f"{name} must hold 0/1 (or bool) verdicts, NaN for missing")
    if not binary and np.any((fin < 0.0) | (fin > 1.0)):
        raise ValueError(f"{name} must hold scores in [0, 1], NaN for missing")
    return arr


def judge_and_reference(
    judge: Any, reference: Any, tasks: Any = None, *, binary: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Judge and reference scores on the same trials as float arrays, and the task ids.

    Both are 0/1 verdicts (``binary``) or scores in [0, 1], NaN/None where missing; ``tasks``
    (optional, one id per trial) comes back as a 1-D array, or None.
    """
    f = _unit_scores(judge, "judge", binary=binary)
    y = _unit_scores(reference, "reference", binary=binary)
    if f.shape != y.shape:
        raise ValueError(f"judge has {f.size} rows but reference has {y.size}")
    if tasks is None:
        return f, y, None
    t = np.asarray(tasks).ravel()
    if t.shape != f.shape:
        raise ValueError(f"tasks has {t.size} rows but judge has {f.size}")
    return f, y, t


def task_codes(tasks: np.ndarray, used: np.ndarray | None = None) -> tuple[np.ndarray, Any]:
    """``pd.factorize`` codes (order of first appearance) and labels of task ids.

    A missing id (NaN/None, code −1) on a row in ``used`` (default: every row) is an error.
    """
    codes, labels = pd.factorize(tasks, sort=False)
    if np.any(codes < 0 if used is None else codes[used] < 0):
        raise ValueError("tasks must not be missing (NaN/None) on scored trials")
    return codes, labels


def scalar_or_array(x: Any, kind: type = float) -> float | int | np.ndarray:
    """``x`` as ``kind`` when it is 0-d, else as an array: scalars in, scalars out, so a
    caller printing one plan need not unwrap 0-d arrays."""
    x = np.asarray(x)
    return kind(x) if x.ndim == 0 else x
