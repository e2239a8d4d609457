"""Benchmarks as TASKS rows: task files, the embedded generated benchmark, FRAMES.

- :func:`load_task_file` — JSONL, CSV or Parquet with a column mapping, validated.
- :func:`generate_tasks` — the default arithmetic / word-problem benchmark, from a seed.
- :func:`load_frames` — FRAMES questions, sampled with a seed.

The names below are loaded on first access (PEP 562 ``__getattr__``): Snakemake's DAG build
reads the generated benchmark (:mod:`evalnoise.tasks.generated`) as plain rows, and importing
it must not import pandas and pyarrow for the task files (a large part of a Snakemake start).
"""

from __future__ import annotations

from typing import Any

from evalnoise import _lazy

__all__ = ["generate_tasks", "load_frames", "load_task_file", "sample_tasks", "tasks_table"]

_MODULES = {
    "load_frames": "frames",
    "generate_tasks": "generated",
    "load_task_file": "taskfile",
    "sample_tasks": "taskfile",
    "tasks_table": "taskfile",
}


def __getattr__(name: str) -> Any:
    return _lazy.load(globals(), _MODULES, name)


def __dir__() -> list[str]:
    return _lazy.names(globals(), __all__)
