"""Errors that reach the user as one line and a non-zero exit."""

from __future__ import annotations


class InputError(ValueError):
    """Bad user input: names the file, and where known the row and the field.

    The CLI prints ``str(error)`` on one line and exits with status 2.
    """

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        row: int | None = None,
        column: str | None = None,
    ) -> None:
        self.path = path
        self.row = row
        self.column = column
        where = []
        if path is not None:
            where.append(str(path))
        if row is not None:
            where.append(f"row {row}")
        if column is not None:
            where.append(f"column {column!r}")
        prefix = ": ".join(where) + ": " if where else ""
        super().__init__(prefix + message)


class EngineUnavailable(RuntimeError):
    """The container engine does not answer: stop the shard instead of burning trials.

    (Here, beside the other errors, so that what only classifies it — the pipeline's fault
    messages — need not import the runner; :mod:`evalnoise.runner.trial` re-exports it.)
    """
