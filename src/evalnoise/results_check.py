"""Does a results directory still hold what its run recorded? Checked against ``manifest.json``.

The run manifest (:mod:`evalnoise.manifest`, written by the pipeline's ``manifest`` rule once
every artifact before it is final) hashes every file under ``results/`` that exists by then:
:func:`recorded_files` says which. Only what the pipeline writes after the manifest, or the
manifest itself, is outside it (:data:`UNRECORDED`): the manifest, the report built from it,
the health verdict of the ``check`` rule, the job logs, and ``.gitignore`` files (DVC
rewrites them as it commits each stage's outputs).

:func:`check_results` compares a results directory with a manifest, file by file:

- *changed* — listed, present, its SHA-256 differs from the recorded one;
- *deleted* — listed, absent;
- *added* — present, not listed, and not :data:`UNRECORDED`.

In-flight atomic-write temporaries (:func:`evalnoise.atomic.is_temporary`) are neither
recorded nor checked. A manifest built after the run by ``evalnoise archive`` hashes the
same files, so the check holds there too.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from evalnoise.atomic import is_temporary
from evalnoise.manifest import file_digest

__all__ = [
    "UNRECORDED",
    "ResultsCheck",
    "check_results",
    "compare_digests",
    "is_unrecorded",
    "recorded_digests",
    "recorded_files",
]

#: Paths under ``results/`` the manifest does not hash: written after it (the report, the
#: check rule's verdict), the manifest itself, the jobs' logs, DVC's ``.gitignore`` files.
#: A trailing ``/`` names a directory and everything under it.
UNRECORDED = ("manifest.json", "health.json", "report/", "logs/")
_IGNORED_NAMES = (".gitignore",)


def is_unrecorded(relative: str | os.PathLike[str]) -> bool:
    """Whether a path relative to ``results/`` lies outside what the manifest hashes."""
    rel = PurePosixPath(Path(relative).as_posix())
    if rel.name in _IGNORED_NAMES or is_temporary(rel):
        return True
    text = rel.as_posix()
    return any(
        text.startswith(entry) if entry.endswith("/") else text == entry for entry in UNRECORDED
    )


def recorded_files(
    results: str | os.PathLike[str], exclude: Iterable[str | os.PathLike[str]] = ()
) -> list[Path]:
    """Every file under ``results`` the manifest hashes (sorted); ``exclude``: paths to leave
    out besides (e.g. an archive being written inside ``results``)."""
    results = Path(results)
    skip = {Path(p).resolve() for p in exclude}
    return sorted(
        path
        for path in results.rglob("*")
        if path.is_file()
        and not is_unrecorded(path.relative_to(results))
        and path.resolve() not in skip
    )


@dataclass(frozen=True)
class ResultsCheck:
    """What :func:`check_results` found; paths are relative to the results directory."""

    n_checked: int
    changed: tuple[tuple[str, str, str], ...] = ()  # (path, recorded sha256, actual sha256)
    deleted: tuple[str, ...] = ()
    added: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not (self.changed or self.deleted or self.added)

    def lines(self, prefix: str = "results") -> list[str]:
        """One line per differing file, naming it and what differs."""
        out = [
            f"changed: {prefix}/{p} (manifest sha256 {want}, now {got})"
            for p, want, got in self.changed
        ]
        out += [f"deleted: {prefix}/{p} (in the manifest, not on disk)" for p in self.deleted]
        out += [f"added:   {prefix}/{p} (on disk, not in the manifest)" for p in self.added]
        return out

    def record(self) -> dict[str, Any]:
        """The JSON form an archive of a modified run carries."""
        return {
            "changed": [{"path": p, "manifest_sha256": w, "sha256": g} for p, w, g in self.changed],
            "deleted": list(self.deleted),
            "added": list(self.added),
        }


def _prefix(results: Path, root: Path) -> str:
    try:
        return results.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return results.name


def compare_digests(recorded: Mapping[str, str], actual: Mapping[str, str]) -> ResultsCheck:
    """Compare recorded digests (path → sha256) with actual ones (path → sha256, over the
    files :func:`is_unrecorded` leaves in): changed, deleted (recorded, absent), added
    (present, not recorded)."""
    actual = {p: d for p, d in actual.items() if not is_unrecorded(p)}
    return ResultsCheck(
        n_checked=len(recorded),
        changed=tuple(
            (p, recorded[p], actual[p])
            for p in sorted(set(recorded) & set(actual))
            if recorded[p] != actual[p]
        ),
        deleted=tuple(sorted(set(recorded) - set(actual))),
        added=tuple(sorted(set(actual) - set(recorded))),
    )


def recorded_digests(manifest: Mapping[str, Any], prefix: str = "results") -> dict[str, str]:
    """The manifest's artifacts under ``prefix`` (their path relative to the project root
    starts with it), as path relative to ``prefix`` → sha256."""
    start = prefix.rstrip("/") + "/"
    out: dict[str, str] = {}
    for row in manifest.get("artifacts") or []:
        path = str(row.get("path", ""))
        if path.startswith(start):
            out[path[len(start) :]] = str(row.get("sha256"))
    return out


def check_results(
    results: str | os.PathLike[str],
    manifest: Mapping[str, Any],
    *,
    root: str | os.PathLike[str],
    exclude: Iterable[str | os.PathLike[str]] = (),
) -> ResultsCheck:
    """Compare the files under ``results`` with the manifest's ``artifacts``.

    The manifest's paths are relative to the project ``root``; those under ``results``
    (``<results relative to root>/...``) are the ones checked. See the module docstring
    for what counts as changed, deleted and added.
    """
    results = Path(results)
    recorded = recorded_digests(manifest, _prefix(results, Path(root)))
    actual = {
        p.relative_to(results).as_posix(): file_digest(p)[0]
        for p in recorded_files(results, exclude)
    }
    return compare_digests(recorded, actual)
