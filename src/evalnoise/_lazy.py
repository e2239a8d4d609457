"""The lazy exports of the packages whose public names load on first access (PEP 562).

A lazy package holds its table as data: ``_MODULES``, a literal dict from each public name
to the submodule that defines it (evalnoise.pipeline.dependencies reads that dict to follow a
name to its module), and its ``__getattr__`` is :func:`load` over it. :func:`load` imports
the submodule and stores the value in the package's namespace, so the next access is a plain
lookup; :func:`names` is the package's ``__dir__``."""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Mapping, MutableMapping
from types import ModuleType
from typing import Any

__all__ = ["bind", "load", "names"]


def bind(namespace: MutableMapping[str, Any], module: ModuleType, name: str) -> Any:
    """``module.name``, stored as ``namespace[name]`` (the package's ``globals()``)."""
    value = getattr(module, name)
    namespace[name] = value
    return value


def load(
    namespace: MutableMapping[str, Any],
    modules: Mapping[str, str],
    name: str,
    extras: Mapping[str, str] | None = None,
) -> Any:
    """A lazy package's ``__getattr__``: ``name`` from the submodule ``modules[name]`` of the
    package whose ``globals()`` is ``namespace``. ``extras``: submodule → the optional extra
    it needs (evalnoise._extras), checked first so a missing one says which to install."""
    package = namespace["__name__"]
    where = modules.get(name)
    if where is None:
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    if extras and where in extras:
        from evalnoise._extras import require

        require(extras[where], f"{package}.{name}")
    return bind(namespace, importlib.import_module(f"{package}.{where}"), name)


def names(namespace: Iterable[str], exported: Iterable[str]) -> list[str]:
    """A lazy package's ``__dir__``: what it holds now and what it exports, sorted."""
    return sorted({*namespace, *exported})
