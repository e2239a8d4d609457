"""``to_dict()`` of every result class: one shape rule and one conversion rule.

Shape: a result's fields by name, nested results as nested dicts (a class may choose another
shape with ``_record``, as :class:`~evalnoise.stats.GStudyResult` does with its table of
components). Conversion: :func:`evalnoise.formatting.jsonable`, the package's one rule for
values that leave the process — numpy to Python values, tuples and arrays to lists, and NaN,
±inf and ``pd.NA`` to None, so ``json.dumps(result.to_dict(), allow_nan=False)`` holds. The
result objects themselves keep NaN: ``to_dict()`` is the way out of the process, not the way
to compute with a result.

Field vocabulary (``scipy.stats``): ``statistic`` is a test's statistic and ``pvalue`` its
p-value, ``df`` its degrees of freedom; ``ci_low``/``ci_high`` bound the result's headline
estimate; a second test or interval in the same result carries a prefix or suffix naming it
(``kappa_pvalue``, ``pvalue_exact``, ``icc_k_ci_low``).
"""

from __future__ import annotations

import warnings
from dataclasses import fields
from typing import Any

import numpy as np
import pandas as pd

from evalnoise.formatting import jsonable

__all__ = ["DictResult", "plain", "renamed"]


def plain(value: Any) -> Any:
    """Builtins for records that stay in memory (tables handed between modules), recursively:
    tuples and arrays to lists, numpy scalars to Python numbers, ``None`` and ``pd.NA`` to
    None; NaN stays NaN. Not for ``to_dict()`` or anything leaving the process
    (:func:`evalnoise.formatting.jsonable` is)."""
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


def _unfold(value: Any) -> Any:
    """Nested results as their records, through dicts, lists and tuples."""
    if isinstance(value, DictResult):
        return _unfold(value._record())
    if isinstance(value, dict):
        return {k: _unfold(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_unfold(v) for v in value]
    return value


class DictResult:
    """Mixin for frozen result dataclasses: ``to_dict()`` from the fields."""

    __slots__ = ()

    def _record(self) -> dict[str, Any]:
        """The result's shape before conversion: every field by name (override to reshape)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}  # type: ignore[arg-type]

    def to_dict(self) -> dict[str, Any]:
        """The result as JSON-ready builtins (:func:`evalnoise.formatting.jsonable`): nested
        results as dicts, arrays and tuples as lists, NaN and ±inf as None."""
        return jsonable(_unfold(self._record()))


def renamed(new: str, old: str) -> property:
    """A read-only alias ``old`` of the field ``new``, warning ``DeprecationWarning``: the
    names results had up to 0.1.0, before scipy.stats' vocabulary, kept for one release.
    Not a field: ``to_dict()`` and ``dataclasses.fields`` know only the new name."""

    def get(self: Any) -> Any:
        warnings.warn(
            f"{type(self).__name__}.{old} is deprecated and will be removed; use .{new}",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(self, new)

    return property(get, doc=f"Deprecated alias of ``{new}``.")
