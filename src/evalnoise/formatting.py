"""Shared output helpers: JSON with NaN as null, and plain-text tables."""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np


def _is_missing(value: Any) -> bool:
    """pandas' missing markers (``pd.NA``, ``pd.NaT``); pandas is not imported for this: a
    process that never imported it holds none of them."""
    pandas = sys.modules.get("pandas")
    return pandas is not None and (value is pandas.NA or value is pandas.NaT)


def finite_or_none(value: Any) -> float | None:
    """``float(value)`` when that is a finite number, else None (None, NaN, ±inf, pd.NA,
    text): how a report shows a number that may be missing."""
    try:
        f = float(value)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def jsonable(value: Any) -> Any:
    """The one rule for values that leave the process (JSON files, task files, journals):
    numpy scalars and arrays become Python values, and NaN, ±inf, ``pd.NA`` and ``pd.NaT``
    become null, recursively."""
    # the exact built-in types first: a large record (5,000 per-task rows) is mostly these,
    # and the checks below cost several calls each
    kind = type(value)
    if kind is str or kind is int or kind is bool:
        return value
    if kind is float:
        return value if math.isfinite(value) else None
    if kind is dict:
        return {str(k): jsonable(v) for k, v in value.items()}
    if kind is list or kind is tuple:
        return [jsonable(v) for v in value]
    if value is None or _is_missing(value):
        return None
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        # tolist() of a 0-d array is its scalar, of any other a (nested) list.
        return jsonable(value.tolist())
    if isinstance(value, (np.bool_, bool)):
        return bool(value)
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        f = float(value)
        return f if math.isfinite(f) else None
    return value


def dumps(value: Any) -> str:
    """``json.dumps(jsonable(value), indent=2, allow_nan=False)``, character for character.

    With an indent the standard library encodes in Python, a generator per container (its C
    encoder only writes compact JSON); :func:`_indented` writes the same text with one call
    per container and the C string escaper, which is faster
    (``benchmarks/results/comment-measurements.md``)."""
    out: list[str] = []
    _indented(jsonable(value), "\n", out)
    return "".join(out)


_escape = json.encoder.encode_basestring_ascii  # the escaper json.dumps uses (ensure_ascii)


def _indented(value: Any, newline: str, out: list[str]) -> None:
    """Append ``value`` (JSON-ready: :func:`jsonable`'s output) as ``json.dumps(value,
    indent=2)`` writes it at the nesting ``newline`` ("\\n" and the indentation)."""
    kind = type(value)
    if kind is str:
        out.append(_escape(value))
    elif value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif kind is int:
        out.append(int.__repr__(value))
    elif kind is float:
        if not math.isfinite(value):
            raise ValueError(f"Out of range float values are not JSON compliant: {value!r}")
        out.append(float.__repr__(value))
    elif kind is dict or kind is list:
        opening, closing = ("{", "}") if kind is dict else ("[", "]")
        if not value:
            out.append(opening + closing)
            return
        inner = newline + "  "
        items = (
            ((_escape(key) + ": ", item) for key, item in value.items())
            if kind is dict
            else (("", item) for item in value)
        )
        out.append(opening)
        separator = inner
        for prefix, item in items:
            out.append(separator + prefix)
            separator = "," + inner
            _indented(item, inner, out)
        out.append(newline + closing)
    else:  # not JSON-ready: the standard library says what is wrong with it
        out.append(json.dumps(value, allow_nan=False))


def fmt(value: Any, spec: str = ".3f") -> str:
    """Format a number, printing NaN/None as an em dash."""
    if value is None:
        return "—"
    try:
        f = float(value)
    except (TypeError, ValueError):
        return str(value)
    if not math.isfinite(f):
        return "—"
    return format(f, spec)


def pct(value: Any, digits: int = 1) -> str:
    if value is None or not math.isfinite(float(value)):
        return "—"
    return f"{100 * float(value):.{digits}f}%"


def table(rows: Sequence[Sequence[str]], header: Sequence[str]) -> str:
    """A left-aligned plain-text table."""
    cells = [list(map(str, header)), *[list(map(str, r)) for r in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
