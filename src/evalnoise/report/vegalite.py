"""Vega-Lite JSON written as altair writes it: the pieces :mod:`evalnoise.report.specs` builds
the report's charts from, as plain dicts (no altair at report time).

Altair's ``to_dict`` puts a top-level chart's ``config`` first and its ``$schema`` and
``datasets`` last, sorts the properties of a field definition, of a mark and of an encoding,
and inlines a DataFrame by ``altair.utils.sanitize_pandas_dataframe`` (NaN and ±inf become
null, NumPy scalars Python ones) under the name ``data-`` + the first 32 hex digits of the
SHA-256 of its rows' JSON with sorted keys. The helpers here do the same, so a spec's JSON —
and the HTML and PNG files made from it — is byte for byte what altair gives
(``tests/report/test_report_specs.py``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

#: The Vega-Lite schema the specs declare: altair 6.3's (``alt.SCHEMA_URL``). A test checks
#: that the installed altair emits this one.
SCHEMA_URL = "https://vega.github.io/schema/vega-lite/v6.4.1.json"
#: The Vega-Lite version of the schema, as vl-convert names it (``v6_4``).
VL_VERSION = "v" + "_".join(SCHEMA_URL.rsplit("/v", 1)[1].removesuffix(".json").split(".")[:2])

#: Altair's default top-level config.
_CONFIG = {"view": {"continuousWidth": 300, "continuousHeight": 300}}
_TYPES = {"Q": "quantitative", "N": "nominal", "O": "ordinal", "T": "temporal"}
_NULLABLE = {"Int8", "Int16", "Int32", "Int64", "UInt8", "UInt16", "UInt32", "UInt64"}
_NULLABLE |= {"Float32", "Float64"}


# --- inline data ---------------------------------------------------------------------------


def values(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """The rows of ``frame`` as altair inlines them (``sanitize_pandas_dataframe`` then
    ``to_dict(orient="records")``): missing values and ±inf are ``None``, numbers Python's."""
    df = frame.copy()
    for name, dtype in df.dtypes.items():
        kind = str(dtype)
        if kind in ("category", "string", "str", "boolean") or kind in _NULLABLE:
            col = df[name].astype(object)
            df[name] = col.where(col.notnull(), None)
        elif kind == "bool" or np.issubdtype(dtype, np.integer):
            df[name] = df[name].astype(object)
        elif np.issubdtype(dtype, np.floating):
            col = df[name]
            df[name] = col.astype(object).where(~(col.isnull() | np.isinf(col)), None)
        elif kind == "object":
            col = df[name].map(lambda v: v.tolist() if isinstance(v, np.ndarray) else v)
            df[name] = col.where(col.notnull(), None)
        else:  # datetimes, timedeltas: no chart of the report draws one
            raise TypeError(f"chart data: column {name!r} of type {kind} is not supported")
    return df.to_dict(orient="records")


def dataset_name(rows: list[dict[str, Any]]) -> str:
    """Altair's name of an inline dataset: ``data-`` + SHA-256 of its sorted JSON, 32 hex."""
    text = json.dumps(rows, sort_keys=True, default=str)
    return "data-" + hashlib.sha256(text.encode()).hexdigest()[:32]


def top(body: dict[str, Any], rows: list[dict[str, Any]], *, data_at: int) -> dict[str, Any]:
    """A top-level spec: ``body`` with the data reference inserted as its ``data_at``-th key,
    the config first, then ``$schema`` and the dataset, as altair orders a top-level chart."""
    name = dataset_name(rows)
    items = list(body.items())
    items.insert(data_at, ("data", {"name": name}))
    return {
        "config": _CONFIG,
        **dict(items),
        "$schema": SCHEMA_URL,
        "datasets": {name: rows},
    }


# --- encodings and layers ------------------------------------------------------------------


def field(shorthand: str, **props: Any) -> dict[str, Any]:
    """A field definition: ``"name:Q"`` with properties, keys in altair's (sorted) order."""
    name, _, kind = shorthand.rpartition(":")
    out = {**props, "field": name, "type": _TYPES[kind]}
    return {k: out[k] for k in sorted(out)}


def second(shorthand: str) -> dict[str, Any]:
    """A secondary channel (``x2``, ``y2``): the field alone."""
    return {"field": shorthand.rpartition(":")[0]}


def tip(shorthand: str, title: str | None = None, fmt: str | None = None) -> dict[str, Any]:
    """A tooltip's field definition (``alt.Tooltip(shorthand, title=, format=)``)."""
    props: dict[str, Any] = {}
    if title is not None:
        props["title"] = title
    if fmt is not None:
        props["format"] = fmt
    return field(shorthand, **props)


def condition(test: str, yes: object, no: object) -> dict[str, Any]:
    """``alt.condition(test, alt.value(yes), alt.value(no))``."""
    return {"condition": {"test": test, "value": yes}, "value": no}


def _sorted(mapping: Mapping[str, Any]) -> dict[str, Any]:
    return {k: mapping[k] for k in sorted(mapping)}


def mark(kind: str, **props: Any) -> dict[str, Any]:
    """A mark definition: its type, then its properties sorted."""
    return {"type": kind, **_sorted(props)}


def layer(mark_: dict, encoding: Mapping[str, Any], filter_: str | None = None) -> dict:
    """One layer: a mark, its channels sorted, and optionally a filter transform."""
    out: dict[str, Any] = {"mark": mark_, "encoding": _sorted(encoding)}
    if filter_ is not None:
        out["transform"] = [{"filter": filter_}]
    return out
