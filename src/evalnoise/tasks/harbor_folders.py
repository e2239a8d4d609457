"""Harbor task folders as environment tasks: one folder or a set of them loaded, and their
rows of the tasks table.

:func:`load_harbor_tasks` reads one task folder, or a folder of task folders, into frozen
:class:`~evalnoise.tasks.harbor_task.HarborTask` records (each folder read by
:func:`evalnoise.tasks.harbor_toml.read_task_folder`); :func:`environment_task_rows` turns
them into tasks-table rows.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalnoise.column_names import ENVIRONMENT_TASK_COLUMNS
from evalnoise.tasks.harbor_task import (
    CONFIG_FILE,
    DEFAULTS,
    PUBLIC_NETWORK_CHOICES,
    HarborDefaults,
    HarborTask,
    HarborTaskError,
    TaskProblem,
)
from evalnoise.tasks.harbor_toml import read_task_folder

__all__ = [
    "ENVIRONMENT_TASK_COLUMNS",
    "KIND",
    "FolderLoad",
    "environment_task_rows",
    "is_task_folder",
    "load_harbor_task",
    "load_harbor_tasks",
    "load_task_folders",
]

#: kind of a tasks-table row made by :func:`environment_task_rows`
KIND = "environment"
#: folders of a task set that are not tasks: hidden folders and Python caches
_SKIPPED_DIRS = re.compile(r"^(\..*|__pycache__)$")


def _check_choice(public_network: str) -> None:
    if public_network not in PUBLIC_NETWORK_CHOICES:
        raise ValueError(
            f"public_network must be one of {PUBLIC_NETWORK_CHOICES}, got {public_network!r}"
        )


def load_harbor_task(
    folder: str | os.PathLike[str],
    *,
    public_network: str = "as_declared",
    defaults: HarborDefaults = DEFAULTS,
) -> HarborTask:
    """One Harbor task folder; raises :class:`HarborTaskError` with all its problems."""
    _check_choice(public_network)
    path = Path(folder).resolve()
    task, problems = read_task_folder(path, public_network, defaults)
    if problems:
        raise HarborTaskError(problems, path=path)
    assert task is not None
    return task


def is_task_folder(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is one task (it holds ``task.toml``) rather than a set of tasks."""
    return (Path(path) / CONFIG_FILE).is_file()


@dataclass(frozen=True)
class FolderLoad:
    """One folder of a task set as the loader read it: its task (None when refused) and
    every problem found in it."""

    folder: Path
    task: HarborTask | None
    problems: tuple[TaskProblem, ...]


def load_task_folders(
    path: str | os.PathLike[str],
    *,
    public_network: str = "as_declared",
    defaults: HarborDefaults = DEFAULTS,
) -> list[FolderLoad]:
    """Every folder of ``path`` loaded on its own: one task folder (it holds ``task.toml``),
    or each sub-folder of a set (sorted by name; hidden folders and ``__pycache__`` are not
    tasks; files beside them are ignored). A folder whose task id an earlier folder already
    has is refused with that problem. Raises :class:`HarborTaskError` only when ``path`` is
    not a directory or holds no folder at all."""
    _check_choice(public_network)
    root = Path(path).resolve()
    if not root.is_dir():
        raise HarborTaskError([TaskProblem(root.name, "folder", "not a directory")], path=root)
    if is_task_folder(root):
        folders = [root]
    else:
        folders = sorted(
            p for p in root.iterdir() if p.is_dir() and not _SKIPPED_DIRS.match(p.name)
        )
    if not folders:
        raise HarborTaskError(
            [TaskProblem(root.name, "folder", "no task folders in it")], path=root
        )
    loads: list[FolderLoad] = []
    seen: dict[str, str] = {}
    for folder in folders:
        task, found = read_task_folder(folder, public_network, defaults)
        if task is not None and task.name in seen:
            found = [
                TaskProblem(
                    f"{task.name} ({folder.name})",
                    "[task].name",
                    f"duplicate task id: folder {seen[task.name]!r} has the same",
                )
            ]
            task = None
        elif task is not None:
            seen[task.name] = folder.name
        loads.append(FolderLoad(folder, task, tuple(found)))
    return loads


def load_harbor_tasks(
    path: str | os.PathLike[str],
    *,
    public_network: str = "as_declared",
    defaults: HarborDefaults = DEFAULTS,
) -> list[HarborTask]:
    """The tasks of ``path`` (:func:`load_task_folders`: one task folder, or a folder of
    task folders).

    Every problem of every task — and a sub-folder without ``task.toml``, two tasks with
    the same id, a set without tasks — is raised at once in one :class:`HarborTaskError`.
    """
    root = Path(path).resolve()
    if is_task_folder(root):
        return [load_harbor_task(root, public_network=public_network, defaults=defaults)]
    loads = load_task_folders(root, public_network=public_network, defaults=defaults)
    problems = [p for load in loads for p in load.problems]
    if problems:
        raise HarborTaskError(problems, path=root)
    return [load.task for load in loads if load.task is not None]


def environment_task_rows(tasks: Iterable[HarborTask]) -> list[dict[str, Any]]:
    """Tasks-table rows: the TASKS columns (``question`` = the instruction, ``answer`` = ""
    since the verifier, not a reference answer, decides; ``time_limit_s`` = the agent
    timeout; ``sampling_seed`` null) plus :data:`ENVIRONMENT_TASK_COLUMNS`: ``kind`` =
    "environment", ``task_dir`` (absolute path of the task folder), ``verifier_time_limit_s``
    and ``task_digest`` (:func:`folder_digest`, so a trial can tell that the folder changed
    after the table was made)."""
    return [
        {
            "task_id": task.name,
            "question": task.instruction,
            "answer": "",
            "level": task.level,
            "cpus": task.cpus,
            "memory_mb": task.memory_mb,
            "time_limit_s": task.agent_timeout_s,
            "sampling_seed": None,
            "kind": KIND,
            "task_dir": str(task.folder),
            "verifier_time_limit_s": task.verifier_timeout_s,
            "task_digest": task.digest,
        }
        for task in tasks
    ]
