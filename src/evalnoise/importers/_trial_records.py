"""Shared machinery of the importers: finding files, numbering trials, building the table.

Every importer turns its source records into :class:`Trial` records, each carrying an
``order`` key (the stated numbering rule, made concrete) and ``where`` (the file and record it
came from). :func:`build_table` numbers trials from 0 within (agent, resource_profile,
task_id) by that key, refuses ties (two records claiming the same trial), and conforms the
result to :data:`evalnoise.schema.TRIALS`.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa

from evalnoise.errors import InputError
from evalnoise.schema import STATUSES, TRIALS, conform

DEFAULT_RESOURCE_PROFILE = "imported"


@dataclass(frozen=True)
class Where:
    """The record a trial came from: a file, a 1-based record number, and what to call it."""

    path: str
    row: int | None = None
    label: str = ""

    def error(self, message: str, column: str | None = None) -> InputError:
        text = f"{self.label}: {message}" if self.label else message
        return InputError(text, path=self.path, row=self.row, column=column)


@dataclass
class Trial:
    """One imported trial before numbering. ``order`` sorts trials within a task; ``extra``
    holds further columns (see :func:`build_table`)."""

    agent: str
    task_id: str
    order: tuple
    where: Where
    status: str = "ok"
    score: float | None = None
    prediction: str | None = None
    error: str | None = None
    duration_s: float | None = None
    started_at: datetime | None = None
    ended_at: datetime | None = None
    time_limit_s: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def natural_key(text: str) -> tuple:
    """Sort key that orders digit runs by value: ``run2`` before ``run10``."""
    parts = re.split(r"(\d+)", str(text))
    return tuple((0, int(p), p) if p.isdigit() else (1, 0, p) for p in parts if p != "")


def path_key(path: str | Path) -> tuple:
    """Natural sort key of a path, component by component: ``run2/x`` before ``run10/x``,
    and ``a/x`` before ``a2/x``."""
    return tuple(natural_key(part) for part in Path(path).parts)


def expand_paths(
    paths: Sequence[str | Path],
    patterns: Sequence[str],
    what: str,
    accept: Callable[[Path], bool] | None = None,
) -> list[Path]:
    """Files named by ``paths``: a file as given; a directory searched recursively for
    ``patterns`` (hidden entries skipped, and files ``accept`` refuses, when given), in
    natural order of their paths."""
    if isinstance(paths, str | Path):
        paths = [paths]
    if not paths:
        raise InputError(f"no input files: give one or more {what}")
    out: list[Path] = []
    seen: dict[Path, str] = {}
    for given in paths:
        p = Path(given)
        if not p.exists():
            raise InputError("no such file or directory", path=str(p))
        if p.is_dir():
            found = sorted(
                {
                    f
                    for pattern in patterns
                    for f in p.rglob(pattern)
                    if f.is_file()
                    and not any(part.startswith(".") for part in f.relative_to(p).parts)
                    and (accept is None or accept(f))
                },
                key=path_key,
            )
            if not found:
                raise InputError(
                    f"no {what} found in this directory (looked for {', '.join(patterns)})",
                    path=str(p),
                )
        else:
            found = [p]
        for f in found:
            key = f.resolve()
            if key in seen:
                raise InputError(f"given twice (also as {seen[key]})", path=str(f))
            seen[key] = str(f)
            out.append(f)
    return out


def load_json(path: Path) -> Any:
    from evalnoise.trial_table import read_text_utf8

    try:
        # a byte that is no UTF-8 is named by its line and file offset (read_text_utf8)
        return json.loads(read_text_utf8(path))
    except json.JSONDecodeError as exc:
        raise InputError(
            f"not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})", path=str(path)
        ) from exc
    except OSError as exc:
        raise InputError(f"cannot be read: {exc.strerror or exc}", path=str(path)) from exc


def parse_timestamp(value: Any, where: Where, column: str) -> datetime | None:
    """An ISO-8601 string (with offset, or naive meaning UTC) as an aware UTC datetime."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise where.error(f"expected an ISO-8601 timestamp string, got {value!r}", column)
    text = value.strip()
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    try:
        ts = datetime.fromisoformat(text)
    except ValueError as exc:
        raise where.error(f"not an ISO-8601 timestamp: {value!r}", column) from exc
    if ts.tzinfo is None:
        ts = ts.replace(tzinfo=UTC)
    return ts.astimezone(UTC)


def from_epoch_ms(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000.0, tz=UTC)


def check_score(value: Any, where: Where, column: str) -> float:
    """A finite number (or bool) in [0, 1] as float."""
    if isinstance(value, bool):
        return float(value)
    if not isinstance(value, int | float):
        raise where.error(f"score must be a number in [0, 1], got {value!r}", column)
    x = float(value)
    if not math.isfinite(x) or x < 0.0 or x > 1.0:
        raise where.error(f"score {value!r} is outside [0, 1]", column)
    return x


def require(record: Any, key: str, where: Where, types: type | tuple[type, ...], what: str) -> Any:
    """``record[key]``, which must exist and have one of ``types`` (bool is not an int)."""
    if not isinstance(record, dict):
        raise where.error(f"expected a JSON object, got {type(record).__name__}")
    if key not in record:
        raise where.error("field is missing", key)
    value = record[key]
    allowed = types if isinstance(types, tuple) else (types,)
    if isinstance(value, bool) and bool not in allowed:
        raise where.error(f"expected {what}, got {value!r}", key)
    if not isinstance(value, allowed):
        raise where.error(f"expected {what}, got {value!r}", key)
    return value


def number_trials(trials: list[Trial]) -> list[tuple[int, Trial]]:
    """Give each trial its number: its 0-based rank by ``order`` within (agent, task_id).

    Two trials of one task with equal ``order`` are an error: the source claims the same
    trial twice.
    """
    groups: dict[tuple[str, str], list[Trial]] = defaultdict(list)
    for t in trials:
        groups[(t.agent, t.task_id)].append(t)
    out: list[tuple[int, Trial]] = []
    for (agent, task), members in groups.items():
        members.sort(key=lambda t: t.order)
        for i in range(1, len(members)):
            if members[i].order == members[i - 1].order:
                first, second = members[i - 1].where, members[i].where
                raise second.error(
                    f"duplicate trial: agent {agent!r}, task {task!r} has two records at the "
                    f"same place in the trial order (the other: {_describe(first)})"
                )
        out.extend(enumerate(members))
    out.sort(key=lambda it: (it[1].agent, natural_key(it[1].task_id), it[0]))
    return out


def _describe(where: Where) -> str:
    parts = [where.path]
    if where.row is not None:
        parts.append(f"row {where.row}")
    if where.label:
        parts.append(where.label)
    return ", ".join(parts)


def build_table(
    trials: list[Trial],
    resource_profile: str,
    extra_types: dict[str, pa.DataType] | None = None,
) -> pa.Table:
    """The TRIALS table of ``trials``, numbered, sorted by (agent, task_id, trial).

    ``Trial.extra`` fills TRIALS columns the common fields do not (e.g. ``seed``) and adds
    any other key as a column after the schema's (e.g. Inspect's ``temperature``), of the
    type ``extra_types`` gives it (else inferred; all null: string), so a column's type
    does not depend on whether this import happened to have a value.
    """
    for t in trials:
        if t.status not in STATUSES:
            raise t.where.error(f"status {t.status!r} is not one of {', '.join(STATUSES)}")
    numbered = number_trials(trials)
    columns: dict[str, list[Any]] = {
        "agent": [],
        "resource_profile": [],
        "task_id": [],
        "trial": [],
        "attempt": [],
        "status": [],
        "prediction": [],
        "error": [],
        "duration_s": [],
        "time_limit_s": [],
        "started_at": [],
        "ended_at": [],
        "score": [],
    }
    for trial_no, t in numbered:
        columns["agent"].append(t.agent)
        columns["resource_profile"].append(resource_profile)
        columns["task_id"].append(t.task_id)
        columns["trial"].append(trial_no)
        columns["attempt"].append(1)
        columns["status"].append(t.status)
        columns["prediction"].append(t.prediction)
        columns["error"].append(t.error)
        columns["duration_s"].append(t.duration_s)
        columns["time_limit_s"].append(t.time_limit_s)
        columns["started_at"].append(t.started_at)
        columns["ended_at"].append(t.ended_at)
        columns["score"].append(t.score)
    extras = _extra_columns([t for _, t in numbered])
    for name in [n for n in extras if TRIALS.get_field_index(n) >= 0]:
        columns[name] = extras.pop(name)  # e.g. an Inspect log's generation seed
    arrays = {
        name: pa.array(values, type=TRIALS.field(name).type) for name, values in columns.items()
    }
    table = conform(pa.table(arrays), TRIALS)
    for name, values in extras.items():
        if extra_types and name in extra_types:
            array = pa.array(values, type=extra_types[name])
        else:
            array = pa.array(values)
            array = array.cast(pa.string()) if _all_null(array) else array
        table = table.append_column(name, array)
    return table


def _extra_columns(trials: list[Trial]) -> dict[str, list[Any]]:
    """``Trial.extra`` as columns (null where a trial lacks the key), in first-seen order."""
    names = list(dict.fromkeys(k for t in trials for k in t.extra))
    return {name: [t.extra.get(name) for t in trials] for name in names}


def _all_null(array: pa.Array) -> bool:
    return pa.types.is_null(array.type)


def counts(table: pa.Table, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """What was imported, for the metadata: rows, agents, tasks, trials per task, statuses."""
    agents = table.column("agent").to_pylist()
    tasks = table.column("task_id").to_pylist()
    statuses = table.column("status").to_pylist()
    per_task = Counter(zip(agents, tasks, strict=True))
    by_agent: dict[str, dict[str, Any]] = {}
    for agent in sorted(set(agents)):
        sizes = [n for (a, _), n in per_task.items() if a == agent]
        by_agent[agent] = {
            "rows": sum(sizes),
            "tasks": len(sizes),
            "trials_min": min(sizes),
            "trials_max": max(sizes),
        }
    out: dict[str, Any] = {
        "rows": table.num_rows,
        "agents": len(by_agent),
        "tasks": len(set(tasks)),
        "status": dict(sorted(Counter(statuses).items())),
        "score_null": table.column("score").null_count,
        "by_agent": by_agent,
    }
    if extra:
        out.update(extra)
    return out


def check_options(fmt: str, options: dict[str, Any], accepted: Iterable[str]) -> dict[str, Any]:
    """Drop options left at None; refuse any the format does not take."""
    accepted = set(accepted)
    given = {k: v for k, v in options.items() if v is not None and v is not False}
    unknown = sorted(set(given) - accepted)
    if unknown:
        raise InputError(
            f"option {', '.join(repr(u) for u in unknown)} does not apply to format {fmt!r} "
            f"(it takes: {', '.join(sorted(accepted)) or 'no options'})"
        )
    return given
