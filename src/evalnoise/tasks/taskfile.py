"""Task files: a benchmark as JSONL, CSV or Parquet, mapped onto the TASKS schema.

A task file has one row per task. Fields (the file's column names may differ: pass a
``columns`` mapping *field → column*):

=============== ========= =================================================================
field           required  value
=============== ========= =================================================================
``id``          yes       unique, non-empty; becomes ``task_id`` (numbers become text)
``question``    yes       non-empty text given to the agent
``answer``      yes       non-empty ground truth (numbers become text: ``42``, ``0.5``)
``level``       no        difficulty label (text; ``1`` and ``"1"`` are the same)
``cpus``        no        positive number: CPUs the task needs
``memory_mb``   no        positive whole number: memory the task needs, MiB
``time_limit_s`` no       positive number: wall-clock limit, seconds
=============== ========= =================================================================

Other columns are ignored. Every problem raises :class:`~evalnoise.errors.InputError`
naming the file, the row (1-based, counting data rows) and the field's column; a duplicate
id names both rows.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from numbers import Integral, Real
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa

from evalnoise.errors import InputError
from evalnoise.schema import TASKS, conform
from evalnoise.trial_table import read_any

__all__ = ["FIELDS", "REQUIRED", "load_task_file", "sample_tasks", "tasks_table", "validate_tasks"]

REQUIRED = ("id", "question", "answer")
OPTIONAL = ("level", "cpus", "memory_mb", "time_limit_s")
FIELDS = REQUIRED + OPTIONAL
#: TASKS column for each field
_COLUMN = {
    "id": "task_id",
    "question": "question",
    "answer": "answer",
    "level": "level",
    "cpus": "cpus",
    "memory_mb": "memory_mb",
    "time_limit_s": "time_limit_s",
}


def _missing(value: Any) -> bool:
    if value is None:
        return True
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):  # lists, dicts
        return False


def _text(value: Any, where: dict[str, Any], *, required: bool) -> str | None:
    if _missing(value):
        if required:
            raise InputError("value is missing", **where)
        return None
    if isinstance(value, bool):
        raise InputError(f"expected text, got a boolean {value!r}", **where)
    if isinstance(value, Integral):
        value = str(int(value))
    elif isinstance(value, Real):
        if not math.isfinite(float(value)):
            raise InputError(f"expected text, got {value!r}", **where)
        f = float(value)
        value = str(int(f)) if f.is_integer() else repr(f)
    elif not isinstance(value, str):
        raise InputError(f"expected text, got {type(value).__name__} {value!r}", **where)
    if not value.strip():
        if required:
            raise InputError("value is empty", **where)
        return None
    return value


def _number(value: Any, where: dict[str, Any], *, integer: bool) -> float | int | None:
    if _missing(value):
        return None
    if isinstance(value, bool):
        raise InputError(f"expected a number, got a boolean {value!r}", **where)
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return None
        try:
            number = float(text)
        except ValueError:
            raise InputError(f"{value!r} is not a number", **where) from None
    elif isinstance(value, Real):
        number = float(value)
    else:
        raise InputError(f"expected a number, got {type(value).__name__} {value!r}", **where)
    if not math.isfinite(number) or number <= 0:
        raise InputError(f"must be a positive number, got {value!r}", **where)
    if integer:
        if not number.is_integer():
            raise InputError(f"must be a whole number, got {value!r}", **where)
        return int(number)
    return number


def validate_tasks(
    frame: pd.DataFrame, *, path: str, columns: Mapping[str, str] | None = None
) -> pd.DataFrame:
    """Check a raw table and return it with the TASKS columns (``sampling_seed`` null)."""
    mapping = {f: f for f in FIELDS}
    if columns:
        unknown = sorted(set(columns) - set(FIELDS))
        if unknown:
            raise InputError(
                f"unknown task field(s) in the column mapping: {unknown}; "
                f"fields are {', '.join(FIELDS)}",
                path=path,
            )
        mapping.update(columns)
    for f in REQUIRED:
        if mapping[f] not in frame.columns:
            have = ", ".join(map(str, frame.columns[:12]))
            raise InputError(
                f"required column for field {f!r} is missing (the file has: {have})",
                path=path,
                column=mapping[f],
            )
    if frame.shape[0] == 0:
        raise InputError("the file has no tasks", path=path)
    present = [f for f in FIELDS if mapping[f] in frame.columns]
    records = []
    seen: dict[str, int] = {}
    for i, raw in enumerate(frame[[mapping[f] for f in present]].itertuples(index=False)):
        row = i + 1
        values = dict(zip(present, raw, strict=True))
        out: dict[str, Any] = {}
        for f in present:
            where = {"path": path, "row": row, "column": mapping[f]}
            if f in REQUIRED:
                out[f] = _text(values[f], where, required=True)
            elif f == "level":
                out[f] = _text(values[f], where, required=False)
            else:
                out[f] = _number(values[f], where, integer=f == "memory_mb")
        task_id = out["id"].strip()
        if task_id in seen:
            raise InputError(
                f"duplicate id {task_id!r} (first in row {seen[task_id]})",
                path=path,
                row=row,
                column=mapping["id"],
            )
        seen[task_id] = row
        out["id"] = task_id
        records.append({_COLUMN[f]: out.get(f) for f in FIELDS})
    tasks = pd.DataFrame.from_records(records, columns=[_COLUMN[f] for f in FIELDS])
    tasks["memory_mb"] = tasks["memory_mb"].astype("Int64")
    tasks["cpus"] = tasks["cpus"].astype("float64")
    tasks["time_limit_s"] = tasks["time_limit_s"].astype("float64")
    tasks["sampling_seed"] = pd.array([pd.NA] * len(tasks), dtype="Int64")
    return tasks


def load_task_file(path: str | Path, columns: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Read a JSONL, CSV/TSV or Parquet task file (by extension) and validate it.

    ``columns`` maps fields to the file's column names, e.g. FRAMES:
    ``{"question": "problem"}``. Returns a DataFrame with exactly the TASKS columns.
    """
    return validate_tasks(read_any(path), path=str(path), columns=columns)


def sample_tasks(tasks: pd.DataFrame, n: int | None, seed: int) -> pd.DataFrame:
    """``n`` tasks drawn without replacement with ``DataFrame.sample(random_state=seed)``
    (as the paper sampled FRAMES: 50 questions, random_state 42); ``n`` None or ≥ the
    number of tasks keeps all of them, in file order. Records ``sampling_seed``."""
    if n is not None and n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    if n is None or n >= len(tasks):
        picked = tasks.copy()
    else:
        picked = tasks.sample(n=n, random_state=seed).reset_index(drop=True)
    picked["sampling_seed"] = pd.array([seed] * len(picked), dtype="Int64")
    return picked


def tasks_table(tasks: pd.DataFrame) -> pa.Table:
    """The TASKS Parquet table of a validated task DataFrame."""
    return conform(pa.Table.from_pandas(tasks, preserve_index=False), TASKS)
