"""Read and validate a long trial table: one row per (group, task, trial) with a score.
(Writing one from another project's results is :mod:`evalnoise.importers`; scoring one,
:mod:`evalnoise.scorers.score_table`.)

This is the edge where user files enter; everything past it may assume clean arrays.
Every problem is reported as an :class:`~evalnoise.errors.InputError` naming the file, the
row (1-based, counting data rows, as a spreadsheet user would) and the column.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from evalnoise.column_names import DEFAULT_TASK, DEFAULT_TRIAL, ROLES, SCORE_COLUMNS
from evalnoise.errors import InputError

_TRUE = {"true", "t", "yes", "y", "correct", "c"}
_FALSE = {"false", "f", "no", "n", "incorrect", "i"}

#: The Parquet schema-metadata key under which evalnoise stores JSON about a table it wrote
#: (``evalnoise import``: the import's rules and, under ``"columns"``, the column roles).
METADATA_KEY = b"evalnoise"


@dataclass(frozen=True)
class Columns:
    """Which columns of the user's file hold the task, trial, score and (optional) group.

    ``None`` means "not given": :func:`resolve_columns` takes the role the file stores in
    its metadata, else the default (:data:`DEFAULT_TASK`, :data:`DEFAULT_TRIAL`, the first
    of :data:`SCORE_COLUMNS` with values, and no group: one group ``"all"``).
    """

    task: str | None = None
    trial: str | None = None
    score: str | None = None
    group: str | None = None


def stored_roles(frame: pd.DataFrame) -> dict[str, str]:
    """The column roles the file stored (``{"task": ..., "group": ...}``), or ``{}``."""
    meta = frame.attrs.get("evalnoise")
    roles = meta.get("columns") if isinstance(meta, dict) else None
    if not isinstance(roles, dict):
        return {}
    return {k: v for k, v in roles.items() if k in ROLES and isinstance(v, str) and v}


def resolve_columns(
    frame: pd.DataFrame, columns: Columns, *, path: str
) -> tuple[Columns, dict[str, str]]:
    """``columns`` with every role filled, and where each came from.

    A role given (not None) wins; else the role the file stores (written by ``evalnoise
    import``); else the default. The second value maps each role to ``"given"``,
    ``"stored"`` or ``"default"``. A stored role naming a column the file lacks, or no score
    column at all, is an :class:`InputError` listing the file's columns.
    """
    stored = stored_roles(frame)
    sources: dict[str, str] = {}
    values: dict[str, str | None] = {}
    defaults = {"task": DEFAULT_TASK, "trial": DEFAULT_TRIAL, "score": None, "group": None}
    for role in ROLES:
        given = getattr(columns, role)
        if given is not None:
            values[role], sources[role] = given, "given"
        elif role in stored:
            values[role], sources[role] = _stored_column(frame, role, stored[role], path), "stored"
        else:
            values[role], sources[role] = defaults[role], "default"
    if values["score"] is None:
        values["score"] = _default_score(frame, path)
    return replace(columns, **values), sources


def _stored_column(frame: pd.DataFrame, role: str, name: str, path: str) -> str:
    """A stored role's column, which the file must still have."""
    if name not in frame.columns:
        raise InputError(
            f"the file's stored metadata names {role} column {name!r}, which the file does "
            f"not have (the file has: {column_list(frame)}); name the {role} column with "
            f"--{role}",
            path=path,
            column=name,
        )
    return name


def default_score_column(frame: pd.DataFrame) -> str | None:
    """The score column a table has by default: the first of :data:`SCORE_COLUMNS` with a
    value, else the first present at all, else None. Every command uses this one rule."""
    present = [c for c in SCORE_COLUMNS if c in frame.columns]
    with_values = [c for c in present if frame[c].notna().any()]
    return (with_values or present or [None])[0]


def _default_score(frame: pd.DataFrame, path: str) -> str:
    """:func:`default_score_column`, or an error listing the file's columns."""
    found = default_score_column(frame)
    if found is not None:
        return found
    raise InputError(
        f"no score column: the file has neither {' nor '.join(map(repr, SCORE_COLUMNS))} "
        f"(the file has: {column_list(frame)}); name it with --score",
        path=path,
    )


def describe_columns(columns: Columns, sources: dict[str, str]) -> str:
    """One line saying which columns were used and why, for the CLI's stderr."""
    used = ", ".join(f"{role}={getattr(columns, role) or '(none: one group)'}" for role in ROLES)
    why = {
        "given": "given by flags",
        "stored": "stored in the file by evalnoise",
        "default": "defaults",
    }
    parts = []
    for source, text in why.items():
        roles = [r for r in ROLES if sources.get(r) == source]
        if roles:
            parts.append(f"{', '.join(roles)}: {text}")
    return f"columns: {used} ({'; '.join(parts)})"


def column_list(frame: pd.DataFrame) -> str:
    """All of a table's column names, for an error message."""
    return ", ".join(map(str, frame.columns))


def shown_group(name: Any) -> str:
    """A group name as the user reads it: a key made of several columns joined by NUL
    (the pipeline's import keys groups by agent and resource profile) shown joined by ' / '."""
    return " / ".join(str(name).split("\x00"))


def read_any(path: str | Path) -> pd.DataFrame:
    """Read CSV, JSONL (or JSON lines in .json) or Parquet into a DataFrame, by extension.

    A Parquet file's evalnoise metadata (:data:`METADATA_KEY`), when it has one, is in
    ``frame.attrs["evalnoise"]``; :func:`resolve_columns` takes column roles from it.
    """
    p = Path(path)
    if not p.exists():
        raise InputError("no such file", path=str(p))
    if p.is_dir():
        raise InputError("is a directory, expected a CSV, JSONL or Parquet file", path=str(p))
    suffix = "".join(s for s in p.suffixes[-2:] if s != ".gz").lower() or p.suffix.lower()
    try:
        if suffix.endswith(".parquet") or suffix.endswith(".pq"):
            return _read_parquet(p)
        if suffix.endswith(".csv") or suffix.endswith(".tsv"):
            if p.stat().st_size == 0:
                raise InputError("the file is empty", path=str(p))
            sep = "\t" if suffix.endswith(".tsv") else ","
            return pd.read_csv(
                io.StringIO(read_text_utf8(p)),
                sep=sep,
                dtype=str,
                keep_default_na=False,
                na_values=[""],
            )
        if suffix.endswith(".jsonl") or suffix.endswith(".ndjson") or suffix.endswith(".json"):
            return _read_jsonl(p)
    except InputError:
        raise
    except (ValueError, OSError, pd.errors.ParserError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise InputError(f"cannot be read: {first}", path=str(p)) from exc
    raise InputError(
        f"unknown file type {p.suffix!r}: expected .csv, .tsv, .jsonl, .json or .parquet",
        path=str(p),
    )


def _read_parquet(p: Path) -> pd.DataFrame:
    """A Parquet file, with its evalnoise schema metadata (if any) in ``attrs``."""
    import pyarrow.parquet as pq

    frame = pd.read_parquet(p)
    blob = (pq.read_schema(p).metadata or {}).get(METADATA_KEY)
    if blob is not None:
        try:
            meta = json.loads(blob)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise InputError(
                f"the schema metadata {METADATA_KEY.decode()!r} is not valid JSON: {exc}",
                path=str(p),
            ) from exc
        if isinstance(meta, dict):
            frame.attrs["evalnoise"] = meta
    return frame


def read_text_utf8(p: Path) -> str:
    """The file's text as UTF-8 (a leading byte-order mark dropped). A byte that is no
    UTF-8 is an :class:`InputError` naming its line (1-based, as an editor counts) and its
    byte offset in the file, never the offset inside some buffer."""
    data = p.read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError(
            f"line {line}: byte 0x{data[exc.start]:02x} at offset {exc.start} of the file is "
            f"not UTF-8 ({exc.reason}); save the file as UTF-8",
            path=str(p),
        ) from None


def _read_jsonl(p: Path) -> pd.DataFrame:
    records = []
    for lineno, line in enumerate(read_text_utf8(p).split("\n"), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"line {lineno} is not valid JSON: {exc.msg}", path=str(p)) from exc
        if not isinstance(obj, dict):
            raise InputError(f"line {lineno} is not a JSON object", path=str(p))
        records.append(obj)
    return pd.DataFrame.from_records(records)


def to_scores(raw: pd.Series, path: str, column: str, *, allow_missing: bool = False) -> np.ndarray:
    """A score column as floats: numbers, booleans, or true/false words (true = 1.0, false =
    0.0); anything else is an :class:`~evalnoise.errors.InputError` naming ``path``, the row
    and ``column``. A missing score is an error too, unless ``allow_missing`` (then NaN)."""
    if pd.api.types.is_bool_dtype(raw):
        return raw.to_numpy(dtype=float)
    if pd.api.types.is_numeric_dtype(raw):
        values = raw.to_numpy(dtype=float)
    else:
        text = raw.astype("string").str.strip().str.lower()
        values = pd.to_numeric(text, errors="coerce").to_numpy(dtype=float)
        words = text.isin(_TRUE | _FALSE).to_numpy(dtype=bool)
        values[words & text.isin(_TRUE).to_numpy(dtype=bool)] = 1.0
        values[words & text.isin(_FALSE).to_numpy(dtype=bool)] = 0.0
        bad = ~np.isfinite(values) & raw.notna().to_numpy()
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise InputError(
                f"score {raw.iloc[i]!r} is not a number", path=path, row=i + 1, column=column
            )
    missing = np.isnan(values)
    if missing.any() and not allow_missing:
        i = int(np.flatnonzero(missing)[0])
        raise InputError("score is missing", path=path, row=i + 1, column=column)
    if np.isinf(values).any():
        i = int(np.flatnonzero(np.isinf(values))[0])
        raise InputError(f"score {values[i]} is not finite", path=path, row=i + 1, column=column)
    out = (values < 0) | (values > 1)
    if out.any():
        i = int(np.flatnonzero(out)[0])
        raise InputError(
            f"score {values[i]:g} is outside [0, 1]", path=path, row=i + 1, column=column
        )
    return values


def trial_labels(values: pd.Series) -> np.ndarray:
    """Trial labels as text, numbers written one way: ``1``, ``1.0`` and ``"01"`` are all
    ``"1"`` and ``"1.50"`` is ``"1.5"``, so one trial read from CSV text, JSON floats or
    Parquet integers is one label. Other text is kept (stripped), and so are numbers too
    large for a float to hold exactly (two such labels must not collapse into one)."""
    text = values.astype("string").str.strip()
    num = pd.to_numeric(text, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    out = text.astype(object).to_numpy(copy=True)
    exact = np.isfinite(num) & (np.abs(num) < 2**53)
    integral = exact & (np.mod(num, 1.0) == 0)
    out[integral] = num[integral].astype(np.int64).astype(str)
    fraction = exact & ~integral
    out[fraction] = [repr(float(x)) for x in num[fraction]]
    return out.astype(str)


def validate_trials(frame: pd.DataFrame, columns: Columns, *, path: str) -> pd.DataFrame:
    """Check a raw table and return it as columns ``group, task, trial, score``.

    Roles left None in ``columns`` are filled by :func:`resolve_columns`. ``group`` is
    ``"all"`` when there is no group column. Raises :class:`InputError` on an empty table,
    a missing column, a missing task or trial, a score that is not a number in [0, 1], or a
    duplicated (group, task, trial). Trial labels are normalised by :func:`trial_labels`.
    """
    if frame.shape[0] == 0:
        raise InputError("the file has no rows", path=path)
    columns, _ = resolve_columns(frame, columns, path=path)
    wanted = [columns.task, columns.trial, columns.score]
    if columns.group is not None:
        wanted.append(columns.group)
    for name in wanted:
        if name not in frame.columns:
            raise InputError(
                f"no such column (the file has: {column_list(frame)})", path=path, column=name
            )
    for name in [columns.task, columns.trial] + ([columns.group] if columns.group else []):
        null = frame[name].isna().to_numpy()
        if null.any():
            i = int(np.flatnonzero(null)[0])
            raise InputError("value is missing", path=path, row=i + 1, column=name)

    scores = to_scores(frame[columns.score], path, columns.score)
    group = (
        frame[columns.group].astype(str) if columns.group else pd.Series("all", index=frame.index)
    )
    out = pd.DataFrame(
        {
            "group": group.to_numpy(),
            "task": frame[columns.task].astype(str).to_numpy(),
            "trial": trial_labels(frame[columns.trial]),
            "score": scores,
        }
    )
    _refuse_duplicates(out, columns, path)
    return out


def _refuse_duplicates(out: pd.DataFrame, columns: Columns, path: str) -> None:
    """Name the first (group, task, trial) that appears twice, and both of its rows."""
    dup = out.duplicated(["group", "task", "trial"], keep=False).to_numpy()
    if not dup.any():
        return
    rows = np.flatnonzero(dup)
    first = out.iloc[rows[0]]
    same = rows[
        (out["group"].to_numpy()[rows] == first["group"])
        & (out["task"].to_numpy()[rows] == first["task"])
        & (out["trial"].to_numpy()[rows] == first["trial"])
    ]
    where = f"group {shown_group(first['group'])!r}, " if columns.group else ""
    raise InputError(
        f"duplicate trial: {where}task {first['task']!r}, trial {first['trial']!r} "
        f"also appears in row {int(same[0]) + 1}",
        path=path,
        row=int(same[1]) + 1,
        column=columns.trial,
    )


def read_trials(path: str | Path, columns: Columns = Columns()) -> pd.DataFrame:
    """Read ``path`` and validate it with :func:`validate_trials`."""
    return validate_trials(read_any(path), columns, path=str(path))
