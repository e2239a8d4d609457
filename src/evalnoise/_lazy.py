"""The lazy exports of the packages whose public names load on first access (PEP 562).

A package's module ``__getattr__`` imports the submodule that defines a name with a plain
``from evalnoise.<package> import <submodule>`` statement (evalnoise.pipeline.dependencies
follows those statically), then hands the submodule here: :func:`bind` stores the value in the
package's namespace so the next access is a plain lookup, and :func:`names` is its
``__dir__``."""

from __future__ import annotations

from collections.abc import Iterable, MutableMapping
from types import ModuleType
from typing import Any

__all__ = ["bind", "names"]


def bind(namespace: MutableMapping[str, Any], module: ModuleType, name: str) -> Any:
    """``module.name``, stored as ``namespace[name]`` (the package's ``globals()``)."""
    value = getattr(module, name)
    namespace[name] = value
    return value


def names(namespace: Iterable[str], exported: Iterable[str]) -> list[str]:
    """A lazy package's ``__dir__``: what it holds now and what it exports, sorted."""
    return sorted({*namespace, *exported})
