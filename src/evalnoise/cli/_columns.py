"""Column options shared by the subcommands that read a trial table.

Every option defaults to None, "not given": :func:`evalnoise.trial_table.resolve_columns` then
takes the role the file stores (``evalnoise import`` writes them into the Parquet file's
metadata) or, failing that, the one set of defaults all commands share (``task_id``,
``trial``, ``score`` — or ``correct`` in a table without ``score`` — and no group). So a
table evalnoise wrote reads back with no flags, and a flag always wins.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from evalnoise.column_names import DEFAULT_TASK, DEFAULT_TRIAL, SCORE_COLUMNS

if TYPE_CHECKING:
    import pandas as pd

    from evalnoise.trial_table import Columns

_STORED = "the column the file stores, else"


def add_column_options(
    parser: argparse.ArgumentParser, *, group_default: str | None = None
) -> None:
    g = parser.add_argument_group("columns")
    g.add_argument(
        "--task",
        default=None,
        metavar="COL",
        help=f"column naming the task (default: {_STORED} {DEFAULT_TASK})",
    )
    g.add_argument(
        "--trial",
        default=None,
        metavar="COL",
        help=f"column numbering the trial within a task (default: {_STORED} {DEFAULT_TRIAL})",
    )
    g.add_argument(
        "--score",
        default=None,
        metavar="COL",
        help="column with the score in [0, 1]: 0/1, true/false, or partial credit "
        f"(default: {_STORED} the first of {', '.join(SCORE_COLUMNS)} with values)",
    )
    if group_default is None:
        g.add_argument(
            "--group",
            default=None,
            metavar="COL",
            help="column naming the group (agent, model, resource profile); each group is "
            f"analysed separately (default: {_STORED} one group)",
        )


def columns_from(args: argparse.Namespace, group: str | None = None) -> Columns:
    """The columns the flags name; roles not given stay None (resolved against the file)."""
    from evalnoise.trial_table import Columns

    return Columns(
        task=args.task,
        trial=args.trial,
        score=args.score,
        group=group if group is not None else getattr(args, "group", None),
    )


def resolved_columns(
    frame: pd.DataFrame, args: argparse.Namespace, *, path: str
) -> tuple[Columns, str]:
    """The flags' columns completed from the file and the defaults, and the line that says
    which columns are used and why (see :func:`announce`)."""
    from evalnoise.trial_table import describe_columns, resolve_columns

    columns, sources = resolve_columns(frame, columns_from(args), path=path)
    return columns, describe_columns(columns, sources)


def announce(command: str, line: str) -> None:
    """Say on stderr which columns a command used, so a default never goes unnoticed.

    Called once the table has validated: bad input stays a one-line error.
    """
    print(f"evalnoise {command}: {line}", file=sys.stderr)
