"""Provenance helpers: fingerprints of the code a pipeline stage depends on.

Snakemake cannot see changes inside an imported package, so rules whose meaning depends on
package code carry ``params: code_version=code_version("<area>")``: editing a module
of that area changes the param and reruns exactly the rules it invalidates.

Which modules an area (a code area: the kind of rule; "component" names a variance
component, never this) depends on is not listed here: it is
derived by :mod:`evalnoise.pipeline.dependencies` from the scripts of the rules that carry
``code_version(area)``, following their imports — the same declaration ``dvc.yaml``'s
deps are written from.

Snakemake asks for every rule's ``code_version`` at every DAG build, and the derivation parses and
walks the package, a noticeable part of a process's start. So the derived sets are kept twice: in
the process, per state of the tree (paths, mtimes and sizes of what the derivation reads), and on
disk in ``.snakemake/evalnoise/area_files.json`` under the checkout, keyed by a SHA-256 of the
bytes of every file the derivation reads (:func:`_inputs_digest`): a changed byte anywhere is a new
key, so the file is never stale, only unused. The digests themselves always hash the files' current
bytes.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

from evalnoise.pipeline import dependencies

__all__ = ["area_files", "code_version"]  # and AREAS, derived on access

#: The on-disk cache of the derived sets, relative to the checkout: in Snakemake's own
#: directory (git ignores it, no DVC stage names it), gone with the rest of ``.snakemake``.
CACHE = Path(".snakemake") / "evalnoise" / "area_files.json"
#: Part of the cache key: a change to what the cache holds or how the key is made.
_CACHE_FORMAT = 1


def _tree_stamp(root: Path) -> tuple[tuple[str, int, int], ...]:
    """(path, mtime_ns, size) of every file the derivation reads: the workflow files, the
    scripts and the package's modules. Any edit changes it."""
    files = [root / "Snakefile", *root.glob("rules/*.smk"), *root.glob("scripts/*.py")]
    files += (root / "src" / dependencies.PACKAGE).rglob("*.py")
    out = []
    for path in files:
        try:
            st = path.stat()
        except FileNotFoundError:
            continue
        out.append((path.as_posix(), st.st_mtime_ns, st.st_size))
    return tuple(sorted(out))


def _inputs_digest(root: Path) -> str | None:
    """SHA-256 over the paths and bytes of every file the derivation reads — the workflow
    files (which name the areas' scripts), every area's scripts, every module of the package
    (the derivation's own code among them) — and the Python version (``ast``); None when a
    file cannot be read (then nothing is cached: the derivation says what is wrong)."""
    try:
        scripts = {s for found in dependencies.areas(root).values() for s in found}
        files = {path.relative_to(root).as_posix() for path in dependencies.workflow_files(root)}
        files |= scripts
        files |= {
            path.relative_to(root).as_posix()
            for path in (root / "src" / dependencies.PACKAGE).rglob("*.py")
        }
        digest = hashlib.sha256(f"{_CACHE_FORMAT} {sys.version_info[:2]}\0".encode())
        for rel in sorted(files):
            digest.update(rel.encode() + b"\0")
            digest.update((root / rel).read_bytes() + b"\0")
    except (OSError, ValueError):
        return None
    return digest.hexdigest()


class _Derived:
    """The areas' package files for one state of a checkout: read from the on-disk cache
    when its key is this state's digest, derived (and written back) otherwise."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.areas: dict[str, list[str]] = {}
        self.key: str | None = None
        self.loaded = False

    def files(self, area: str) -> list[str]:
        if area not in self.areas and not self.loaded:
            self.loaded = True
            self.key = _inputs_digest(self.root)
            self.areas.update(self._read())
        if area not in self.areas:
            self._derive(area)
        return self.areas[area]

    def _derive(self, area: str) -> None:
        """Derive every area in one shared walk (the DAG build asks for all of them), so a
        build with a cold cache writes it once; stored unless a file changed meanwhile."""
        try:
            found = dependencies.all_area_modules(self.root)
        except Exception:
            found = {}  # some area cannot be derived: the one asked for alone, below
        if area not in found:
            # unknown areas and missing scripts raise here, as they always did
            found[area] = dependencies.area_modules(area, self.root)
        self.areas.update(found)
        if self.key is not None and _inputs_digest(self.root) == self.key:
            self._write()

    def _read(self) -> dict[str, list[str]]:
        """The cached sets if the cache file was written for this very key, else nothing."""
        if self.key is None:
            return {}
        try:
            stored = json.loads((self.root / CACHE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        if not isinstance(stored, dict) or stored.get("key") != self.key:
            return {}
        areas = stored.get("areas")
        if not isinstance(areas, dict):
            return {}
        return {
            area: files
            for area, files in areas.items()
            if isinstance(files, list) and all(isinstance(f, str) for f in files)
        }

    def _write(self) -> None:
        """Store every set known for this key (merged with what another process stored for
        it meanwhile); best effort: a checkout that cannot be written only loses the cache."""
        from evalnoise.atomic import write_text

        merged = {**self._read(), **self.areas}
        document = {"key": self.key, "areas": dict(sorted(merged.items()))}
        try:
            write_text(self.root / CACHE, json.dumps(document, indent=1) + "\n")
        except OSError:
            pass


#: (checkout, state of its tree) → the areas derived for it in this process
_DERIVED: dict[tuple[Path, tuple[tuple[str, int, int], ...]], _Derived] = {}


def area_files(area: str) -> list[str]:
    """The package files ``code_version(area)`` hashes, relative to the checkout
    (``dependencies.area_modules``).

    Derived once per state of the tree in a process, and kept on disk across processes
    (see the module docstring): Snakemake asks for every rule's ``code_version`` while it
    builds the DAG."""
    root = dependencies.ROOT
    key = (root, _tree_stamp(root))
    derived = _DERIVED.get(key)
    if derived is None:
        for old in [k for k in _DERIVED if k[0] == root]:
            del _DERIVED[old]  # an older state of this checkout: never asked for again
        derived = _DERIVED[key] = _Derived(root)
    return list(derived.files(area))


def code_version(area: str) -> str:
    """SHA-256 (first 16 hex digits) over the paths (relative to the package) and bytes of
    the package modules the area's scripts import (``dependencies.area_modules``).
    An area no rule with a script carries is a ``KeyError``."""
    root = dependencies.ROOT
    package = root / "src" / dependencies.PACKAGE
    digest = hashlib.sha256()
    for rel in area_files(area):
        path = root / rel
        digest.update(path.relative_to(package).as_posix().encode())
        digest.update(b"\0")
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()[:16]


def __getattr__(name: str) -> Any:
    # AREAS: code area → the package files it depends on (derived on each access).
    if name == "AREAS":
        return {
            area: tuple(area_files(area))
            for area, scripts in dependencies.areas().items()
            if scripts
        }
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
