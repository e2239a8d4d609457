"""Which tasks an evaluation runs: the benchmark section of the config → a TASKS table.

Rows come out in *sampling order*, and the pipeline shards tasks by position in that order
(chunks of ``task_chunk_size`` rows). The order is prefix-stable where the source allows it,
so asking for more tasks appends rows and leaves existing chunks as they were:

- ``generated``: task *i* is task ``i // L`` of level ``levels[i % L]`` (levels interleaved);
  every generated task is a pure function of (seed, level, index).
- ``file`` with ``stratify_by_level``: each level is sampled in proportion to its share of
  the file (largest remainder), each with ``DataFrame.sample(random_state=seed)``, and the
  levels are interleaved by rank. Without stratification, one ``DataFrame.sample``.
- ``frames``: :func:`evalnoise.tasks.load_frames` (``DataFrame.sample(n, random_state=seed)``,
  as the paper sampled FRAMES).
- ``harbor``: environment tasks (:func:`evalnoise.tasks.harbor_folders.load_harbor_tasks`), every
  task folder in name order, or a sample of ``n`` like a task file's; a task the runner
  cannot honour is rejected here, when the DAG is built, with every problem of the set.

Tasks that declare no resources get :data:`DEFAULT_RESOURCES`; the config's
``benchmark.cpus`` / ``memory_mb`` / ``time_limit_s`` override every task's.

:func:`generated_rows` gives the generated benchmark's table as plain rows, without pandas:
Snakemake's DAG build needs only the rows' count and per-chunk digests, and importing
pandas (with pyarrow) would be a large part of every Snakemake start that needs nothing else
of it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from evalnoise.column_names import ENVIRONMENT_TASK_COLUMNS

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "DEFAULT_RESOURCES",
    "benchmark_name",
    "benchmark_warnings",
    "generated_rows",
    "sample_tasks",
    "task_pool_size",
]

#: What a task that declares nothing gets.
DEFAULT_RESOURCES = {"cpus": 1.0, "memory_mb": 512, "time_limit_s": 120.0}


def _generated_tasks(bench: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Task i is task ``i // L`` of level ``levels[i % L]``: id, question, answer, level and
    the level's declared resources."""
    from evalnoise.tasks.generated import LEVEL_RESOURCES, generate_task

    levels = [int(level) for level in bench["levels"]]
    rows = []
    for i in range(int(bench["n"])):
        level, index = levels[i % len(levels)], i // len(levels)
        task = generate_task(int(bench["seed"]), level, index)
        rows.append(
            {
                "task_id": task.task_id,
                "question": task.question,
                "answer": str(task.answer),
                "level": str(level),
                **LEVEL_RESOURCES[level],
            }
        )
    return rows


def _generated(bench: Mapping[str, Any]) -> pd.DataFrame:
    import pandas as pd

    return pd.DataFrame.from_records(_generated_tasks(bench))


#: How :func:`sample_tasks` types each TASKS column of a question task (the environment
#: tasks' columns, :data:`~evalnoise.column_names.ENVIRONMENT_TASK_COLUMNS`, are null).
_PLAIN_TYPES = {
    "task_id": str,
    "question": str,
    "answer": str,
    "level": str,
    "cpus": float,
    "memory_mb": int,
    "time_limit_s": float,
    "sampling_seed": int,
}


def generated_rows(benchmark: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The rows of ``sample_tasks(benchmark)`` for the ``generated`` source, as plain dicts of
    Python values (str, float, int, None for the environment tasks' columns), without pandas.

    The same tasks (:func:`_generated_tasks`), with the config's resource overrides and the
    sampling seed, typed as :func:`sample_tasks` types its columns; a test holds the two equal.
    """
    if benchmark["source"] != "generated":
        raise ValueError(f"generated_rows: the source is {benchmark['source']!r}")
    overrides = {c: benchmark[c] for c in DEFAULT_RESOURCES if benchmark.get(c) is not None}
    seed = int(benchmark["seed"])
    rows = []
    for task in _generated_tasks(benchmark):
        row = {**task, **overrides, "sampling_seed": seed}
        typed = {column: kind(row[column]) for column, kind in _PLAIN_TYPES.items()}
        rows.append(typed | dict.fromkeys(ENVIRONMENT_TASK_COLUMNS))
    return rows


def _largest_remainder(sizes: Mapping[str, int], n: int) -> dict[str, int]:
    total = sum(sizes.values())
    quotas = {k: n * v / total for k, v in sizes.items()}
    alloc = {k: min(int(q), sizes[k]) for k, q in quotas.items()}
    order = sorted(sizes, key=lambda k: (-(quotas[k] - int(quotas[k])), k))
    while sum(alloc.values()) < n:
        for k in order:
            if alloc[k] < sizes[k] and sum(alloc.values()) < n:
                alloc[k] += 1
    return alloc


def _stratified(tasks: pd.DataFrame, n: int, seed: int) -> pd.DataFrame:
    import pandas as pd

    strata = tasks["level"].fillna("").astype(str)
    sizes = strata.value_counts().to_dict()
    alloc = _largest_remainder(sizes, n)
    parts = []
    for level, k in sorted(alloc.items()):
        if k == 0:
            continue
        part = tasks[strata == level].sample(n=k, random_state=seed).copy()
        part["_key"] = [(rank + 0.5) / k for rank in range(k)]
        part["_level"] = level
        parts.append(part)
    picked = pd.concat(parts).sort_values(["_key", "_level"], kind="mergesort")
    return picked.drop(columns=["_key", "_level"]).reset_index(drop=True)


def _from_file(bench: Mapping[str, Any]) -> pd.DataFrame:
    from evalnoise.tasks import load_task_file
    from evalnoise.tasks.taskfile import sample_tasks as sample_frame

    tasks = load_task_file(bench["path"], columns=bench["columns"] or None)
    n, seed = bench["n"], int(bench["seed"])
    if n is None or n >= len(tasks):
        return tasks.reset_index(drop=True)
    if bench["stratify_by_level"] and tasks["level"].notna().any():
        return _stratified(tasks, int(n), seed)
    return sample_frame(tasks, int(n), seed)


def _relative_dir(path: str) -> str:
    """A task folder relative to the working directory (the checkout) when inside it: the
    tasks table then names no machine's paths, and a moved checkout reads the same table."""
    from pathlib import Path

    try:
        return Path(path).resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return str(Path(path).resolve())


def _harbor(bench: Mapping[str, Any]) -> pd.DataFrame:
    """Environment tasks (:mod:`evalnoise.tasks.harbor_task`): every task folder under ``path``,
    by name; with ``n``, a sample like a task file's (stratified by level when asked)."""
    import pandas as pd

    from evalnoise.tasks.harbor_folders import environment_task_rows, load_harbor_tasks
    from evalnoise.tasks.taskfile import sample_tasks as sample_frame

    tasks = load_harbor_tasks(bench["path"], public_network=bench.get("network", "as_declared"))
    frame = pd.DataFrame.from_records(environment_task_rows(tasks))
    frame["task_dir"] = [_relative_dir(d) for d in frame["task_dir"]]
    frame = frame.sort_values("task_id", kind="mergesort").reset_index(drop=True)
    n, seed = bench["n"], int(bench["seed"])
    if n is None or n >= len(frame):
        return frame
    if bench["stratify_by_level"] and frame["level"].notna().any():
        return _stratified(frame, int(n), seed)
    return sample_frame(frame, int(n), seed)


def sample_tasks(benchmark: Mapping[str, Any]) -> pd.DataFrame:
    """The sampled tasks as a DataFrame with exactly the TASKS columns, in sampling order.

    ``benchmark`` is the config's (defaulted) ``benchmark`` section.
    """
    from evalnoise.schema import TASKS

    source = benchmark["source"]
    if source == "generated":
        tasks = _generated(benchmark)
    elif source == "file":
        tasks = _from_file(benchmark)
    elif source == "frames":
        from evalnoise.tasks import load_frames

        tasks = load_frames(benchmark["path"], n=benchmark["n"], seed=int(benchmark["seed"]))
    elif source == "harbor":
        tasks = _harbor(benchmark)
    else:
        raise ValueError(f"unknown benchmark source {source!r}")
    tasks = tasks.copy()
    for column, fallback in DEFAULT_RESOURCES.items():
        override = benchmark.get(column)
        if override is not None:
            tasks[column] = override
        elif column not in tasks.columns:
            tasks[column] = fallback
        else:
            tasks[column] = tasks[column].where(tasks[column].notna(), fallback)
    tasks["sampling_seed"] = int(benchmark["seed"])
    if "level" not in tasks.columns:
        tasks["level"] = None
    for column in ("kind", "task_dir", "verifier_time_limit_s", "task_digest"):
        if column not in tasks.columns:  # a question task: none of the environment's columns
            tasks[column] = None
    out = tasks[[f.name for f in TASKS]].reset_index(drop=True)
    out["task_id"] = out["task_id"].astype(str)
    out["cpus"] = out["cpus"].astype("float64")
    out["memory_mb"] = out["memory_mb"].astype("int64")
    out["time_limit_s"] = out["time_limit_s"].astype("float64")
    out["sampling_seed"] = out["sampling_seed"].astype("int64")
    out["level"] = out["level"].astype("string")
    out["verifier_time_limit_s"] = out["verifier_time_limit_s"].astype("float64")
    return out


def task_pool_size(benchmark: Mapping[str, Any]) -> int | None:
    """How many tasks the source holds (None: unlimited, the generated benchmark)."""
    if benchmark["source"] == "generated":
        return None
    if benchmark["source"] == "harbor":
        from evalnoise.tasks.harbor_folders import load_harbor_tasks

        network = benchmark.get("network", "as_declared")
        return len(load_harbor_tasks(benchmark["path"], public_network=network))
    from evalnoise.trial_table import read_any

    return len(read_any(benchmark["path"]))


def benchmark_warnings(benchmark: Mapping[str, Any]) -> tuple[str, ...]:
    """What the run should say when it is built about its tasks: with ``source: harbor`` and
    ``network: offline``, the public-network tasks whose verifier fetches from the network
    (:func:`evalnoise.tasks.check.offline_fetch_warning`); nothing otherwise."""
    if benchmark["source"] != "harbor" or benchmark.get("network") != "offline":
        return ()
    from evalnoise.tasks.check import offline_fetch_warning
    from evalnoise.tasks.harbor_folders import load_harbor_tasks

    tasks = load_harbor_tasks(benchmark["path"], public_network="offline")
    warning = offline_fetch_warning(tasks, "offline")
    return () if warning is None else (warning,)


def benchmark_name(benchmark: Mapping[str, Any]) -> str:
    """The benchmark's name on reports."""
    if benchmark.get("name"):
        return str(benchmark["name"])
    source = benchmark["source"]
    if source == "generated":
        levels = ",".join(str(level) for level in benchmark["levels"])
        return f"evalnoise generated arithmetic (levels {levels}, seed {benchmark['seed']})"
    if source == "frames":
        return "FRAMES"
    if source == "harbor":
        from pathlib import Path

        return f"{Path(benchmark['path']).resolve().name} (Harbor tasks)"
    from pathlib import Path

    return Path(benchmark["path"]).stem
