"""Optional dependencies: which extra provides what, and one clear error when it is missing.

The core install (``pip install evalnoise``) is enough for ``analyze``, ``compare``, ``plan``,
``correct`` and ``import``. Everything else needs an extra (see ``pyproject.toml``); code that
needs one calls :func:`require` first, so a missing extra is reported as
``evalnoise image needs the 'docker' extra: pip install 'evalnoise[docker]'`` rather than a
bare ``ModuleNotFoundError: No module named 'docker'``.
"""

from __future__ import annotations

import importlib.util

from evalnoise.errors import InputError

__all__ = ["EXTRAS", "MissingExtraError", "require"]

#: extra → the top-level modules it provides (looked up, never imported, by :func:`require`)
EXTRAS: dict[str, tuple[str, ...]] = {
    "pipeline": ("snakemake", "dvc"),
    "docker": ("docker",),
    "report": ("altair", "vl_convert"),
}


class MissingExtraError(InputError, ImportError):
    """An optional dependency is not installed. An :class:`~evalnoise.errors.InputError`, so
    the CLI prints it on one line (exit 2), and an :class:`ImportError`, so code that
    expects the import to fail still catches it."""

    def __init__(self, extra: str, what: str, missing: tuple[str, ...]) -> None:
        self.extra = extra
        self.missing = missing
        InputError.__init__(
            self,
            f"{what} needs the {extra!r} extra (missing: {', '.join(missing)}): "
            f"pip install 'evalnoise[{extra}]'",
        )
        self.name = missing[0]  # ImportError's attribute: the module that is not there


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a broken or half-installed package
        return False


def require(extra: str, what: str) -> None:
    """Raise :class:`MissingExtraError` unless every module of ``extra`` is installed.

    ``what`` names the command or function that needs it, for the message. Only looks the
    modules up (no import), so calling it costs next to nothing.
    """
    missing = tuple(module for module in EXTRAS[extra] if not _installed(module))
    if missing:
        raise MissingExtraError(extra, what, missing)
