"""The evalnoise source checkout, for the few things that only exist in one.

The installed package is self-contained for the statistics and the importers. A few things
belong to the repository instead, and stay there because the pipeline and DVC refer to them
by their paths: the workflow (``Snakefile``, ``rules/``, whose DVC dependencies
:mod:`evalnoise.pipeline.dependencies` derives), the base image's inputs (``images/base``)
and the agents' sources (``agents/``). Code that needs them asks :func:`checkout_path`, which
finds the checkout explicitly and says how to point at one when there is none, instead of
assuming the package sits in ``<checkout>/src/evalnoise``.
"""

from __future__ import annotations

import os
from pathlib import Path

from evalnoise.errors import InputError

__all__ = [
    "AGENTS_DIR_ENV",
    "CHECKOUT_ENV",
    "CheckoutNotFoundError",
    "agents_dir",
    "checkout_path",
    "checkout_root",
]

#: names the checkout explicitly (wins over every other way of finding it)
CHECKOUT_ENV = "EVALNOISE_CHECKOUT"
#: names the agents' sources directly (laid out like ``agents/`` of a checkout)
AGENTS_DIR_ENV = "EVALNOISE_AGENTS_DIR"


class CheckoutNotFoundError(InputError, FileNotFoundError):
    """No evalnoise checkout was found; the message says what needed it and how to name one.
    A :class:`FileNotFoundError` for library callers, an
    :class:`~evalnoise.errors.InputError` so the CLI prints it on one line."""


def _is_checkout(path: Path) -> bool:
    # the workflow and the package's sources together: a user's own Snakefile is not one
    return (path / "Snakefile").is_file() and (path / "src" / "evalnoise").is_dir()


def _candidates() -> list[tuple[Path, str]]:
    # 1. the source tree this module was imported from, when it is one (an editable install or
    #    PYTHONPATH=src): the files then match the code that runs. 2. the working directory.
    source = Path(__file__).resolve().parent.parent.parent
    return [(source, "the source tree evalnoise runs from"), (Path.cwd(), "the working directory")]


def checkout_root(needed_for: str) -> Path:
    """The evalnoise checkout: ``$EVALNOISE_CHECKOUT``, else the source tree this package runs
    from if it is a checkout, else the working directory if it is one.

    A checkout holds a ``Snakefile`` and ``src/evalnoise``. Raises
    :class:`CheckoutNotFoundError`, naming ``needed_for`` (what wanted the checkout), when
    there is none, or when ``$EVALNOISE_CHECKOUT`` names a directory that is not one.
    """
    named = os.environ.get(CHECKOUT_ENV)
    if named:
        root = Path(named)
        if not _is_checkout(root):
            raise CheckoutNotFoundError(
                f"{needed_for}: {CHECKOUT_ENV}={named} is not an evalnoise checkout "
                "(it needs a Snakefile and src/evalnoise)"
            )
        return root
    for root, _ in _candidates():
        if _is_checkout(root):
            return root
    looked = "; ".join(f"{why} ({path})" for path, why in _candidates())
    raise CheckoutNotFoundError(
        f"{needed_for} needs an evalnoise source checkout (a Snakefile and src/evalnoise), "
        f"which the installed package does not contain. Looked in: {looked}. Run it from a "
        f"checkout or set {CHECKOUT_ENV} to one."
    )


def checkout_path(relative: str, needed_for: str, *, override_env: str | None = None) -> Path:
    """``relative`` (a path inside the checkout, e.g. ``images/base``) of :func:`checkout_root`.

    ``override_env`` names a variable that, when set, gives the path directly (no checkout
    needed); the error then mentions it as the other way out.
    """
    if override_env and os.environ.get(override_env):
        return Path(os.environ[override_env])
    try:
        root = checkout_root(needed_for)
    except CheckoutNotFoundError as exc:
        if override_env is None:
            raise
        raise CheckoutNotFoundError(
            f"{exc} Or set {override_env} to a directory laid out like {relative}/ of one."
        ) from None
    path = root / relative
    if not path.exists():
        raise CheckoutNotFoundError(f"{needed_for}: {relative} is missing from the checkout {root}")
    return path


def agents_dir() -> Path:
    """``agents/`` of the evalnoise checkout (``$EVALNOISE_AGENTS_DIR`` overrides).

    The agents stay in the repository (DVC tracks ``agents`` as a dependency of the trials),
    so an installed package finds them through :func:`checkout_path`, which says how to point
    at them when there is no checkout. Here, not beside the image builder
    (:mod:`evalnoise.models.agent_images`), because the pipeline lists an agent's image
    inputs while Snakemake builds the DAG, without importing the builder.
    """
    return checkout_path("agents", "building the agents' images", override_env=AGENTS_DIR_ENV)
