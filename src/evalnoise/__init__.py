"""evalnoise: how much of an agentic evaluation's score is signal, and how much is noise.

The statistics live in :mod:`evalnoise.stats` (pure functions over arrays); reading and
validating trial tables lives in :mod:`evalnoise.trial_table`; the command line in
:mod:`evalnoise.cli`.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("evalnoise")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+unknown"

__all__ = ["__version__"]
