"""Atomic file writes: a reader sees the old file or the complete new one, never a part.

Write to a temporary file in the same directory, fsync it, then ``os.replace`` it over the
target (atomic on POSIX within one filesystem). On any error the temporary file is removed,
so a failed run leaves no half-written artifact behind. A directory is written the same way
(:func:`atomic_directory`): filled beside its target, then renamed into place.

A process killed with SIGKILL cannot remove its temporary: it stays beside the target as a
hidden ``.<name>.<random>.tmp`` (never mistaken for the target itself).
:func:`remove_temporaries` clears them, for when no writer can be running (``evalnoise run``
does it before Snakemake starts).

This module is the only place that names temporaries: every atomic write of the package goes
through it, and whatever must skip in-flight writes (:mod:`evalnoise.archive`,
:func:`remove_temporaries`) asks :func:`is_temporary`, so a writer's temporaries can never
escape the rule that excludes them.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

#: Suffix of a temporary file or directory being written (see :data:`TEMPORARY`).
_TMP_SUFFIX = ".tmp"
#: Suffix of a replaced directory on its way out (see :func:`atomic_directory`).
_OLD_SUFFIX = ".old"


def _umask() -> int:
    """The process umask, read without changing it (os.umask would race other threads)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except OSError:
        pass
    return 0o022


@contextlib.contextmanager
def atomic_path(target: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path beside ``target``; on success move it over ``target``."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=_TMP_SUFFIX, dir=target.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    # mkstemp creates 0600; artifacts should get the usual umask-derived mode, like open()
    os.chmod(tmp_path, 0o666 & ~_umask())
    try:
        yield tmp_path
        with open(tmp_path, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp_path, target)
    except BaseException:
        tmp_path.unlink(missing_ok=True)
        raise


@contextlib.contextmanager
def atomic_open(
    target: str | os.PathLike[str], mode: str = "w", encoding: str | None = "utf-8"
) -> Iterator[IO]:
    """Open a temporary file for writing; it replaces ``target`` only if the block succeeds."""
    with atomic_path(target) as tmp:
        kwargs = {} if "b" in mode else {"encoding": encoding}
        with open(tmp, mode, **kwargs) as fh:
            yield fh


def write_text(target: str | os.PathLike[str], text: str) -> None:
    with atomic_open(target) as fh:
        fh.write(text)


def write_csv(target: str | os.PathLike[str], frame: Any) -> None:
    """``frame`` (a DataFrame) as the pipeline's CSV artifacts are written: no index, floats
    to 6 significant digits (``%.6g``), the file replaced whole or not at all."""
    with atomic_path(target) as tmp:
        frame.to_csv(tmp, index=False, float_format="%.6g")


@contextlib.contextmanager
def atomic_directory(target: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield an empty temporary directory beside ``target``; on success it replaces
    ``target``. A reader sees the old directory (or none) or the complete new one — never a
    half-populated ``target``, also when the writer is killed."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=_TMP_SUFFIX, dir=target.parent))
    os.chmod(tmp, 0o777 & ~_umask())
    try:
        yield tmp
        old = None
        if target.is_dir() and not target.is_symlink():
            # rename(2) replaces only an empty directory: move the old one aside first
            old = Path(
                tempfile.mkdtemp(prefix=f".{target.name}.", suffix=_OLD_SUFFIX, dir=target.parent)
            )
            os.replace(target, old)
        elif target.exists() or target.is_symlink():
            target.unlink()
        os.replace(tmp, target)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


#: Names of the temporaries a killed writer leaves: ``.<name>.<random>.tmp`` (and
#: ``.<name>.<random>.old``, a replaced directory). ``.<name>.tmp-<pid>`` is what the shard's
#: Parquet writer named its temporary before it used this module; still matched, so one
#: left in an older results directory is neither archived nor kept.
TEMPORARY = re.compile(
    rf"^\..+({re.escape(_TMP_SUFFIX)}|{re.escape(_OLD_SUFFIX)}|{re.escape(_TMP_SUFFIX)}-[0-9]+)$"
)


def is_temporary(path: str | os.PathLike[str], root: str | os.PathLike[str] | None = None) -> bool:
    """Whether ``path`` is an in-flight (or abandoned) temporary of this module, or lies
    inside one (a directory being written by :func:`atomic_directory`). With ``root``, only
    the components of ``path`` below ``root`` are looked at."""
    path = Path(path)
    parts = path.relative_to(root).parts if root is not None else path.parts
    return any(TEMPORARY.match(part) for part in parts)


def remove_temporaries(root: str | os.PathLike[str]) -> list[Path]:
    """Remove every temporary (:data:`TEMPORARY`) under ``root``; return what was removed.
    Only for when no writer can be running: a live writer's temporary would go too."""
    removed: list[Path] = []
    root = Path(root)
    if not root.is_dir():
        return removed
    for directory, dirnames, filenames in os.walk(root):
        for name in [*dirnames]:
            if TEMPORARY.match(name):
                shutil.rmtree(Path(directory) / name, ignore_errors=True)
                removed.append(Path(directory) / name)
                dirnames.remove(name)
        for name in filenames:
            if TEMPORARY.match(name):
                (Path(directory) / name).unlink(missing_ok=True)
                removed.append(Path(directory) / name)
    return sorted(removed)
