"""Import other projects' evaluation results as a TRIALS table (:data:`evalnoise.schema.TRIALS`).

Example::

    result = import_trials("terminal-bench", ["results/terminal-bench-core@0.1.1"])
    write_trials(result, "trials.parquet")

Formats (one module each): ``inspect`` (Inspect AI ``.eval``/``.json`` logs),
``terminal-bench`` (``results.json``), ``harbor`` (Harbor job folders: one ``result.json``
per trial), ``tau-bench`` (result JSON lists), ``metr``
(``runs.jsonl``) and ``table`` (any CSV/TSV/JSONL/Parquet with a column mapping).

Every row gets ``resource_profile`` = ``"imported"`` (or the ``resource_profile`` option),
``attempt`` = 1, and a ``trial`` numbered from 0 within (agent, task_id) by a deterministic
rule stated per format. The rule, the format, the source files and what was counted go into
:attr:`ImportResult.metadata` and, as JSON under the key ``b"evalnoise"``, into the written
Parquet file's schema metadata (:data:`METADATA_KEY`).

Keys of the metadata: ``columns`` (the column roles: ``task``, ``trial``, ``score``,
``agent``, ``resource_profile``, ``status``, and ``group``, the grouping the importer
suggests; ``evalnoise analyze``/``compare``/``plan`` read them as their defaults, so an
imported table needs no column flags), ``format``, ``sources`` (files read, in the order used),
``resource_profile``, ``options`` (as given), ``rule`` (trial numbering), ``agent_rule``,
``score_rule``, ``status_rule`` (plus ``task_rule`` or ``column_mapping`` where they apply),
and ``counts`` (``rows``, ``agents``, ``tasks``, ``status``, ``score_null``, ``by_agent``
with rows/tasks/trials per task, ``files``, and per-format counts such as
``dropped_human_runs``); ``warnings`` (only when there are any): one line for each thing the
import could not take as it was — a Harbor job holding fewer trials than it declared, folders
that are no trials — printed by ``evalnoise import`` and ``evalnoise analyze``.

A malformed input raises :class:`~evalnoise.errors.InputError` naming the file and, where
known, the record and the field; nothing is written.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from evalnoise.atomic import atomic_path
from evalnoise.errors import InputError
from evalnoise.importers import harbor_jobs, inspect_log, metr, table, tau_bench, terminal_bench
from evalnoise.importers._trial_records import (
    DEFAULT_RESOURCE_PROFILE,
    build_table,
    check_options,
    counts,
)
from evalnoise.trial_table import METADATA_KEY as TABLES_METADATA_KEY

#: the schema-metadata key (the same one :mod:`evalnoise.trial_table` reads the roles from)
METADATA_KEY = TABLES_METADATA_KEY

#: The TRIALS columns' roles, stored in every imported table: each imported row is one
#: trial of one agent (the resource profile is the same for all rows of one import), so
#: the suggested grouping is the agent.
COLUMN_ROLES = {
    "task": "task_id",
    "trial": "trial",
    "score": "score",
    "agent": "agent",
    "resource_profile": "resource_profile",
    "status": "status",
    "group": "agent",
}

#: format name → importer module (each has FORMAT, OPTIONS, read()).
FORMATS = {m.FORMAT: m for m in (inspect_log, terminal_bench, harbor_jobs, tau_bench, metr, table)}

__all__ = [
    "FORMATS",
    "METADATA_KEY",
    "ImportResult",
    "import_trials",
    "read_metadata",
    "write_trials",
]


@dataclass(frozen=True)
class ImportResult:
    """A TRIALS table and the metadata that says how it was made."""

    table: pa.Table
    metadata: dict[str, Any]

    def table_with_metadata(self) -> pa.Table:
        """``table`` with :attr:`metadata` as JSON under ``b"evalnoise"`` in its schema."""
        blob = json.dumps(self.metadata, sort_keys=True, ensure_ascii=False).encode()
        return self.table.replace_schema_metadata({METADATA_KEY: blob})


def import_trials(
    fmt: str, paths: Sequence[str | os.PathLike[str]] | str | os.PathLike[str], **options: Any
) -> ImportResult:
    """Read ``paths`` (files or directories) in format ``fmt`` into a TRIALS table.

    Options common to all formats: ``resource_profile`` (default ``"imported"``) and, except
    for ``metr``, ``agent``. Per format: ``include_humans`` and ``score`` ("binarized" or
    "raw") for ``metr``; ``scorer`` for ``inspect``; ``reward`` (the named reward that
    scores) for ``harbor``; ``column_mapping`` (``"task=COL,..."`` or a dict) for ``table``.
    An option a format does not take is an error; ``None``/``False`` values count as not
    given.
    """
    if fmt not in FORMATS:
        raise InputError(f"unknown format {fmt!r} (formats: {', '.join(FORMATS)})")
    module = FORMATS[fmt]
    resource_profile = options.pop("resource_profile", None) or DEFAULT_RESOURCE_PROFILE
    if not isinstance(resource_profile, str) or not resource_profile.strip():
        raise InputError(f"resource_profile must be a non-empty name, got {resource_profile!r}")
    given = check_options(fmt, options, module.OPTIONS)
    if isinstance(paths, str | os.PathLike):
        paths = [paths]
    trials, info = module.read(list(paths), **given)
    if not trials:
        raise InputError(f"no trials found in {', '.join(map(str, paths))}")
    tbl = build_table(trials, resource_profile, info.get("extra_types"))
    rules = dict(info["rules"])
    metadata: dict[str, Any] = {
        "columns": dict(COLUMN_ROLES),
        "format": fmt,
        "sources": info["sources"],
        "resource_profile": resource_profile,
        "options": {k: v for k, v in given.items()},
        **rules,
        "counts": counts(tbl, info.get("counts")),
    }
    if info.get("warnings"):
        # what the import could not take as it was (an incomplete job, folders that are not
        # trials): one line each, printed by `evalnoise import` and `evalnoise analyze`
        metadata["warnings"] = list(info["warnings"])
    return ImportResult(table=tbl, metadata=metadata)


def write_trials(result: ImportResult, path: str | os.PathLike[str]) -> Path:
    """Write ``result`` as Parquet with its metadata, atomically (temp file + rename)."""
    target = Path(path)
    with atomic_path(target) as tmp:
        pq.write_table(result.table_with_metadata(), tmp)
    return target


def read_metadata(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The import metadata stored in a Parquet file's schema, or None if it has none."""
    meta = pq.read_schema(path).metadata or {}
    blob = meta.get(METADATA_KEY)
    return None if blob is None else json.loads(blob)
