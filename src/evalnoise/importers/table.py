"""Any CSV/TSV, JSONL or Parquet table with one row per trial, through a column mapping.

The mapping names, for each TRIALS field, the column of the user's file that holds it:
``task`` and ``score`` are required; ``trial``, ``agent``, ``status``, ``prediction``,
``error``, ``started_at``, ``ended_at`` and ``duration_s`` are optional. A field left out of
the mapping is taken from the column of the schema's own name when the file has one
(``task`` → ``task_id``, the others by their name; the score from the first of ``score``,
``correct`` with values — the same defaults ``evalnoise analyze`` uses,
:func:`evalnoise.trial_table.default_score_column`).

- ``score``: a number in [0, 1], a boolean, or true/false, yes/no, correct/incorrect. It may
  be empty only on a row whose status is not ``ok``.
- ``trial``: any values that order the trials of one task (numbers by value, text in
  natural order); trials are renumbered from 0 in that order. Without a trial column, the
  order is the order of the rows (files in the order given).
- ``agent``: a column, else the ``--agent`` option.
- ``started_at``/``ended_at``: ISO-8601 text or timestamps; without an offset they are UTC.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd

from evalnoise.errors import InputError
from evalnoise.importers._trial_records import Trial, Where, expand_paths, natural_key
from evalnoise.schema import STATUSES
from evalnoise.trial_table import column_list, default_score_column, read_any

FORMAT = "table"
OPTIONS = ("agent", "column_mapping")
PATTERNS = ("*.csv", "*.tsv", "*.jsonl", "*.ndjson", "*.parquet")

#: mapping key → the TRIALS column it fills (and the default source column name).
FIELDS = {
    "task": "task_id",
    "score": "score",
    "trial": "trial",
    "agent": "agent",
    "status": "status",
    "prediction": "prediction",
    "error": "error",
    "started_at": "started_at",
    "ended_at": "ended_at",
    "duration_s": "duration_s",
}
REQUIRED = ("task", "score")
_TRUE = {"true", "yes", "correct", "t", "y"}
_FALSE = {"false", "no", "incorrect", "f", "n"}


def parse_mapping(spec: str | dict[str, str] | None) -> dict[str, str]:
    """``"task=question_id,score=correct"`` (or a dict) → ``{key: column}``, validated."""
    if spec is None:
        return {}
    if isinstance(spec, dict):
        pairs = list(spec.items())
    else:
        pairs = []
        for part in spec.split(","):
            if not part.strip():
                continue
            key, sep, column = part.partition("=")
            if not sep or not key.strip() or not column.strip():
                raise InputError(
                    f"column mapping {part.strip()!r} is not KEY=COLUMN (e.g. "
                    "task=question_id,trial=epoch,score=correct)"
                )
            pairs.append((key.strip(), column.strip()))
    out: dict[str, str] = {}
    for key, column in pairs:
        if key not in FIELDS:
            raise InputError(f"unknown column-mapping key {key!r} (keys: {', '.join(FIELDS)})")
        if key in out:
            raise InputError(f"column-mapping key {key!r} given twice")
        out[key] = column
    return out


def _missing(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    if value is pd.NaT:
        return True
    return isinstance(value, str) and value.strip() == ""


def _score(value: Any, where: Where, column: str) -> float | None:
    if _missing(value):
        return None
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        text = value.strip().lower()
        if text in _TRUE:
            return 1.0
        if text in _FALSE:
            return 0.0
        try:
            x = float(text)
        except ValueError:
            raise where.error(f"score {value!r} is not a number or true/false", column) from None
    else:
        try:
            x = float(value)
        except (TypeError, ValueError):
            raise where.error(f"score {value!r} is not a number", column) from None
    if not math.isfinite(x) or not 0.0 <= x <= 1.0:
        raise where.error(f"score {value!r} is outside [0, 1]", column)
    return x


def _trial_key(value: Any, where: Where, column: str) -> tuple:
    if _missing(value):
        raise where.error("trial is missing", column)
    if isinstance(value, bool):
        raise where.error(f"trial {value!r} is not a number or label", column)
    if isinstance(value, int | float):
        if not math.isfinite(float(value)):
            raise where.error(f"trial {value!r} is not finite", column)
        return (0, float(value), "")
    text = str(value).strip()
    try:
        return (0, float(text), "")
    except ValueError:
        return (1, 0.0, natural_key(text))


def _timestamp(value: Any, where: Where, column: str):
    if _missing(value):
        return None
    try:
        ts = pd.Timestamp(value)
    except (ValueError, TypeError) as exc:
        raise where.error(f"not a timestamp: {value!r}", column) from exc
    if ts is pd.NaT:
        return None
    ts = ts.tz_localize("UTC") if ts.tzinfo is None else ts.tz_convert("UTC")
    return ts.to_pydatetime()


def _text(value: Any) -> str | None:
    return None if _missing(value) else str(value)


def _columns_of(
    frame: pd.DataFrame, mapping: dict[str, str], agent: str | None, path: Path
) -> dict[str, str]:
    """Field → column of one file: the mapping's, else the default names (the score column
    as a trial table's); a missing required column, or no agent (or two), is an error
    naming the file."""
    have = [str(c) for c in frame.columns]
    cols: dict[str, str] = {}
    for key, default in FIELDS.items():
        if key in mapping:
            if mapping[key] not in have:
                raise InputError(
                    f"no such column (the file has: {column_list(frame)})",
                    path=str(path),
                    column=mapping[key],
                )
            cols[key] = mapping[key]
        elif key == "score":
            found = default_score_column(frame)
            if found is not None:
                cols[key] = found
        elif default in have:
            cols[key] = default
    for key in REQUIRED:
        if key not in cols:
            raise InputError(
                f"no {key} column: name it with --column-mapping {key}=COLUMN (the file "
                f"has: {column_list(frame)})",
                path=str(path),
            )
    if "agent" not in cols and agent is None:
        raise InputError(
            "no agent column: give --agent NAME or --column-mapping agent=COLUMN",
            path=str(path),
        )
    if "agent" in cols and agent is not None:
        raise InputError(
            f"both --agent and an agent column ({cols['agent']!r}) are given: drop one",
            path=str(path),
        )
    return cols


def _duration(rec: dict[str, Any], cols: dict[str, str], where: Where) -> float | None:
    """The trial's duration in seconds, None without one; not a number ≥ 0 is an error."""
    if "duration_s" not in cols or _missing(rec[cols["duration_s"]]):
        return None
    try:
        duration = float(rec[cols["duration_s"]])
    except (TypeError, ValueError):
        raise where.error(
            f"duration {rec[cols['duration_s']]!r} is not a number", cols["duration_s"]
        ) from None
    if not math.isfinite(duration) or duration < 0:
        raise where.error(f"duration {duration} is not ≥ 0", cols["duration_s"])
    return duration


def read(
    paths: list[str | Path],
    *,
    agent: str | None = None,
    column_mapping: str | dict[str, str] | None = None,
) -> tuple[list[Trial], dict]:
    mapping = parse_mapping(column_mapping)
    files = expand_paths(paths, PATTERNS, "CSV, TSV, JSONL or Parquet tables")
    trials: list[Trial] = []
    used: dict[str, str] = {}
    for file_index, path in enumerate(files):
        frame = read_any(path)
        if frame.shape[0] == 0:
            raise InputError("the file has no rows", path=str(path))
        cols = _columns_of(frame, mapping, agent, path)
        used.update({k: v for k, v in cols.items() if k not in used})
        records = frame.to_dict(orient="records")
        for i, rec in enumerate(records):
            where = Where(str(path), i + 1)
            task = rec[cols["task"]]
            if _missing(task):
                raise where.error("task is missing", cols["task"])
            name = agent
            if "agent" in cols:
                name = _text(rec[cols["agent"]])
                if name is None:
                    raise where.error("agent is missing", cols["agent"])
            status = "ok"
            if "status" in cols:
                status = _text(rec[cols["status"]]) or "ok"
                if status not in STATUSES:
                    raise where.error(
                        f"status {status!r} is not one of {', '.join(STATUSES)}",
                        cols["status"],
                    )
            score = _score(rec[cols["score"]], where, cols["score"])
            if score is None and status == "ok":
                raise where.error(
                    "score is missing (allowed only when status is not ok)", cols["score"]
                )
            order = (
                _trial_key(rec[cols["trial"]], where, cols["trial"])
                if "trial" in cols
                else (file_index, i)
            )
            duration = _duration(rec, cols, where)
            trials.append(
                Trial(
                    agent=str(name),
                    task_id=str(task).strip() if isinstance(task, str) else _task_text(task),
                    order=order,
                    where=where,
                    status=status,
                    score=score,
                    prediction=_text(rec[cols["prediction"]]) if "prediction" in cols else None,
                    error=_text(rec[cols["error"]]) if "error" in cols else None,
                    started_at=_timestamp(rec[cols["started_at"]], where, cols["started_at"])
                    if "started_at" in cols
                    else None,
                    ended_at=_timestamp(rec[cols["ended_at"]], where, cols["ended_at"])
                    if "ended_at" in cols
                    else None,
                    duration_s=duration,
                )
            )
    rule = (
        f"within (agent, task_id), trials are numbered from 0 in the order of column "
        f"{used['trial']!r} (numbers by value, text in natural order)"
        if "trial" in used
        else "within (agent, task_id), trials are numbered from 0 in row order (files in "
        "the order given)"
    )
    rules = {
        "rule": rule,
        "agent_rule": f"column {used['agent']!r}" if "agent" in used else "the --agent option",
        "score_rule": f"column {used['score']!r}: numbers in [0, 1], booleans, "
        "true/false, yes/no, correct/incorrect",
        "status_rule": f"column {used['status']!r}" if "status" in used else "all ok",
        "column_mapping": used,
    }
    return trials, {
        "rules": rules,
        "counts": {"files": len(files)},
        "sources": [str(f) for f in files],
    }


def _task_text(task: Any) -> str:
    """A numeric task id read from JSONL/Parquet: 7.0 → '7', not '7.0'."""
    if isinstance(task, float) and task.is_integer():
        return str(int(task))
    return str(task)
