"""Provenance helpers: fingerprints of the code a pipeline stage depends on.

Snakemake cannot see changes inside an imported package, so rules whose meaning depends on
package code carry ``params: code_version=code_version("<component>")``: editing a module
of that component changes the param and reruns exactly the rules it invalidates.

Which modules a component (an area: the kind of rule) depends on is not listed here: it is
derived by :mod:`evalnoise.pipeline.dependencies` from the scripts of the rules that carry
``code_version(component)``, following their imports — the same declaration ``dvc.yaml``'s
deps are written from.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from evalnoise.pipeline import dependencies

__all__ = ["code_version", "component_files"]  # and COMPONENTS, derived on access


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


_DERIVED: dict[tuple[str, Path, tuple[tuple[str, int, int], ...]], list[str]] = {}


def component_files(component: str) -> list[str]:
    """The package files ``code_version(component)`` hashes, relative to the checkout.

    Derived once per state of the tree in a process: Snakemake asks for every rule's
    ``code_version`` while it builds the DAG, and deriving reads every workflow file and
    follows the imports (~40 ms a call here)."""
    root = dependencies.ROOT
    key = (component, root, _tree_stamp(root))
    if key not in _DERIVED:
        _DERIVED[key] = dependencies.area_modules(component)
    return list(_DERIVED[key])


def code_version(component: str) -> str:
    """SHA-256 (first 16 hex digits) over the paths (relative to the package) and bytes of
    the package modules the component's scripts import (``dependencies.area_modules``).
    A component no rule with a script carries is a ``KeyError``."""
    root = dependencies.ROOT
    package = root / "src" / dependencies.PACKAGE
    digest = hashlib.sha256()
    for rel in component_files(component):
        path = root / rel
        digest.update(path.relative_to(package).as_posix().encode())
        digest.update(b"\0")
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()[:16]


def __getattr__(name: str) -> Any:
    # COMPONENTS: component → the package files it depends on (derived on each access).
    if name == "COMPONENTS":
        return {
            area: tuple(component_files(area))
            for area, scripts in dependencies.areas().items()
            if scripts
        }
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
