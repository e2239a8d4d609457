"""Where evalnoise keeps what it can rebuild but would rather not: the base image's root
filesystem, the report's JavaScript bundle. Nothing in it is an input of a result: deleting
it costs time, never a different artifact."""

from __future__ import annotations

import os
from pathlib import Path

#: Overrides the cache directory.
CACHE_ENV = "EVALNOISE_CACHE_DIR"


def cache_dir() -> Path:
    """``$EVALNOISE_CACHE_DIR``, else ``$XDG_CACHE_HOME/evalnoise``, else ``~/.cache/evalnoise``."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "evalnoise"
