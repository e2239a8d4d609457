"""A task set checked as a run would load it: per folder, accepted or not, why, and warnings.

:func:`check_tasks` loads every folder of a Harbor task set (or one task folder) with
:func:`evalnoise.tasks.harbor_folders.load_task_folders` under the run's ``benchmark.network``
choice, and returns one :class:`FolderCheck` per folder: accepted or refused, every problem
(field and reason, exactly as a run would raise them) and every warning:

- ``offline``: a task that asks for the public network and whose verifier or Dockerfile
  visibly fetches from it (:func:`evalnoise.tasks.fetches.network_fetches`): run offline,
  its verifier can only fail;
- any choice: a Dockerfile that fetches (image builds here run without network, so the
  build fails unless the base image already has what it fetches);
- keys Harbor does not define (ignored by Harbor and here).

:func:`offline_fetch_warning` is the one line a run prints when it is built: the public tasks
whose verifier or Dockerfile fetches although the run is offline.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalnoise.tasks.fetches import network_fetches
from evalnoise.tasks.harbor_folders import load_task_folders
from evalnoise.tasks.harbor_task import HarborTask

__all__ = ["FolderCheck", "check_tasks", "offline_fetch_warning", "refusal_counts"]


@dataclass(frozen=True)
class FolderCheck:
    """One task folder checked: ``task`` is its id (``[task].name`` or the folder's name),
    ``problems`` the (field, reason) pairs that refuse it, ``warnings`` sentences."""

    path: str
    task: str
    accepted: bool
    problems: tuple[tuple[str, str], ...]
    warnings: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        """``{"path", "task", "accepted", "problems": [{"field", "reason"}], "warnings"}``."""
        return {
            "path": self.path,
            "task": self.task,
            "accepted": self.accepted,
            "problems": [{"field": f, "reason": r} for f, r in self.problems],
            "warnings": list(self.warnings),
        }


def _fetch_text(fetches: Sequence[Any], limit: int = 3) -> str:
    shown = ", ".join(str(f) for f in fetches[:limit])
    more = len(fetches) - limit
    return shown + (f" and {more} more" if more > 0 else "")


def task_warnings(task: HarborTask, network: str) -> list[str]:
    """The warnings of one accepted task under ``network`` (module docstring)."""
    warnings = []
    fetches = network_fetches(task.folder)
    verifier = [f for f in fetches if not f.file.startswith("environment/")]
    build = [f for f in fetches if f.file.startswith("environment/")]
    if network == "offline" and task.network_mode == "public" and verifier:
        warnings.append(
            "asks for the public network but runs offline (benchmark.network: offline), and "
            f"its verifier fetches from the network: {_fetch_text(verifier)}; those trials "
            "can only end as verifier errors"
        )
    if build and task.build_context is not None:
        warnings.append(
            f"its Dockerfile fetches from the network ({_fetch_text(build)}); image builds "
            "here have no network, so the build needs all of it in the base image"
        )
    if task.unknown:
        keys = ", ".join(sorted(task.unknown))
        warnings.append(f"keys Harbor does not define, ignored: {keys}")
    return warnings


def check_tasks(path: str | os.PathLike[str], *, network: str = "as_declared") -> list[FolderCheck]:
    """Every folder of ``path`` as a run with ``benchmark.network: network`` loads it.

    Raises :class:`evalnoise.tasks.harbor_task.HarborTaskError` when ``path`` is not a directory
    or holds no folder."""
    checks = []
    for load in load_task_folders(path, public_network=network):
        name = load.task.name if load.task is not None else load.folder.name
        problems = tuple((p.field, p.reason) for p in load.problems)
        if load.task is None and problems and load.problems[0].task:
            name = load.problems[0].task.split(" (")[0]
        warnings = task_warnings(load.task, network) if load.task is not None else []
        checks.append(
            FolderCheck(str(load.folder), name, load.task is not None, problems, tuple(warnings))
        )
    return checks


def refusal_counts(checks: Iterable[FolderCheck]) -> Counter[str]:
    """How many refused folders each field refuses (a folder with two problems in one field
    counts once there)."""
    counts: Counter[str] = Counter()
    for check in checks:
        counts.update({field for field, _ in check.problems})
    return counts


def offline_fetch_warning(tasks: Iterable[HarborTask], network: str) -> str | None:
    """One line naming the public-network tasks whose verifier (``tests/test.sh``) or
    Dockerfile visibly fetches from the network when the run is ``offline`` (None when there
    are none, or the run is not offline)."""
    if network != "offline":
        return None
    names = []
    for task in tasks:
        if task.network_mode != "public":
            continue
        fetches = network_fetches(task.folder)
        verifier = any(not f.file.startswith("environment/") for f in fetches)
        build = task.build_context is not None and any(
            f.file.startswith("environment/") for f in fetches
        )
        if verifier or build:
            names.append(task.name)
    if not names:
        return None
    shown = ", ".join(names[:10]) + (f" and {len(names) - 10} more" if len(names) > 10 else "")
    return (
        f"benchmark.network is offline, but {len(names)} task(s) asking for the public network "
        f"fetch from it in their verifier or Dockerfile (such trials can only fail): {shown}; "
        "`evalnoise tasks check --network offline PATH` lists where"
    )


def folder_label(check: FolderCheck, root: str | os.PathLike[str]) -> str:
    """The folder relative to the checked path (``.`` for a single task)."""
    try:
        rel = Path(check.path).relative_to(Path(root).resolve())
    except ValueError:
        return check.path
    return rel.as_posix() or "."
