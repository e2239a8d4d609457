"""Finding the trial results of Harbor job folders: what ``evalnoise import harbor`` reads.

A trial's ``result.json`` given as a file; a trial folder; a job folder (its trial folders; a
trial folder without ``result.json`` is a trial that never finished: counted, not imported);
any folder holding job folders. Only when a job folder has no finished trial folder are the
``trial_results`` embedded in its ``result.json`` read instead. Folders of a walked tree that
hold nothing Harbor wrote are collected too, so the import can say so
(:mod:`evalnoise.importers.harbor_jobs` describes the layout and reads the records).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evalnoise.errors import InputError
from evalnoise.importers._trial_records import load_json, natural_key

__all__ = ["FoundResults", "find_results"]


def _is_trial(data: Any) -> bool:
    return isinstance(data, dict) and "trial_name" in data and "task_name" in data


def _is_job(data: Any) -> bool:
    return isinstance(data, dict) and "trial_name" not in data and "n_total_trials" in data


def _is_unfinished_trial(folder: Path) -> bool:
    """A trial folder whose trial never wrote its result: config.json is a TrialConfig."""
    config = folder / "config.json"
    if (folder / "result.json").exists() or not config.is_file():
        return False
    try:
        data = json.loads(config.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and "trial_name" in data and "job_name" not in data


class FoundResults:
    """What :func:`find_results` collects, in the order it is found: the trial records (file,
    index within a job result's ``trial_results`` or None, the record), the unfinished trial
    folders, one summary per job, and the folders that held nothing Harbor wrote."""

    def __init__(self) -> None:
        # (file, 0-based index within a job result's trial_results or None, the record)
        self.records: list[tuple[Path, int | None, dict]] = []
        self.unfinished: list[str] = []
        self.jobs: list[dict[str, Any]] = []
        self.seen: dict[Path, str] = {}
        #: folders of a walked tree that held no trial, job or unfinished trial
        self.not_trials: list[str] = []

    def add_file(self, path: Path, data: dict) -> None:
        key = path.resolve()
        if key in self.seen:
            raise InputError(f"given twice (also as {self.seen[key]})", path=str(path))
        self.seen[key] = str(path)
        self.records.append((path, None, data))


def _subfolders(folder: Path) -> list[Path]:
    return sorted(
        (p for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".")),
        key=lambda p: natural_key(p.name),
    )


def _found_anything(found: FoundResults) -> tuple[int, int]:
    return len(found.records), len(found.unfinished)


def _walk_children(folder: Path, found: FoundResults) -> None:
    """Walk ``folder``'s subfolders; name each that held nothing Harbor wrote."""
    for sub in _subfolders(folder):
        before = _found_anything(found)
        skipped = len(found.not_trials)
        _walk(sub, found)
        if _found_anything(found) == before:
            # one line for the folder, not one for each of its empty subfolders
            del found.not_trials[skipped:]
            found.not_trials.append(str(sub))


def _walk(folder: Path, found: FoundResults) -> None:
    result = folder / "result.json"
    if result.is_file():
        data = load_json(result)
        if _is_trial(data):
            found.add_file(result, data)
            return
        if not _is_job(data):
            raise InputError(
                "neither a Harbor trial result (task_name, trial_name) nor a job result "
                "(n_total_trials)",
                path=str(result),
            )
        _walk_job(folder, result, data, found)
        return
    if _is_unfinished_trial(folder):
        found.unfinished.append(str(folder))
        return
    _walk_children(folder, found)


def _walk_job(folder: Path, result: Path, data: dict, found: FoundResults) -> None:
    before = len(found.records)
    unfinished_before = len(found.unfinished)
    _walk_children(folder, found)
    from_folders = len(found.records) - before
    embedded = data.get("trial_results") or []
    if not isinstance(embedded, list):
        raise InputError("expected a list", path=str(result), column="trial_results")
    used_embedded = from_folders == 0 and bool(embedded)
    if used_embedded:
        key = result.resolve()
        if key in found.seen:
            raise InputError(f"given twice (also as {found.seen[key]})", path=str(result))
        found.seen[key] = str(result)
        for i, rec in enumerate(embedded):
            found.records.append((result, i, rec))
    found.jobs.append(
        {
            "job": str(folder),
            "n_total_trials": data.get("n_total_trials"),
            "trials_read": len(embedded) if used_embedded else from_folders,
            "unfinished_trials": len(found.unfinished) - unfinished_before,
            "read_from": "result.json trial_results" if used_embedded else "trial folders",
        }
    )


def find_results(paths: list[str | Path]) -> FoundResults:
    """The trial results named by ``paths`` (see the module docstring), in natural order."""
    if isinstance(paths, str | Path):
        paths = [paths]
    if not paths:
        raise InputError("no input: give one or more Harbor job folders or result.json files")
    found = FoundResults()
    for given in paths:
        p = Path(given)
        if not p.exists():
            raise InputError("no such file or directory", path=str(p))
        if p.is_dir():
            before = len(found.records)
            _walk(p, found)
            if len(found.records) == before:
                what = (
                    f"only unfinished trials ({len(found.unfinished)}): no trial wrote its "
                    "result.json"
                    if found.unfinished
                    else "no Harbor trial result.json found (a job folder holds one folder "
                    "per trial, each with a result.json)"
                )
                raise InputError(what, path=str(p))
            continue
        data = load_json(p)
        if _is_trial(data):
            found.add_file(p, data)
        elif _is_job(data):
            _walk_job(p.parent, p, data, found)
        else:
            raise InputError(
                "neither a Harbor trial result (task_name, trial_name) nor a job result "
                "(n_total_trials)",
                path=str(p),
            )
    return found
