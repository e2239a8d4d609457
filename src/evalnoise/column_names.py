"""The default column names of a trial table, shared by every command.

Kept apart from :mod:`evalnoise.trial_table` (numpy, pandas) so that a command's argument parser
can name them in its help without importing the libraries that read tables.
"""

from __future__ import annotations

__all__ = [
    "DEFAULT_TASK",
    "DEFAULT_TRIAL",
    "ENVIRONMENT_TASK_COLUMNS",
    "ROLES",
    "SCORE_COLUMNS",
]

#: The column names every command reads when neither a flag nor the file says otherwise:
#: the trial schema's own names (what ``evalnoise import`` writes and ``import table`` reads).
DEFAULT_TASK = "task_id"
DEFAULT_TRIAL = "trial"
#: The score column: ``score``; tables that call it ``correct`` (the packaged example, and
#: the pipeline's scores table, whose ``score`` is empty for the trials it ran) are read too.
SCORE_COLUMNS = ("score", "correct")
#: The tasks table's columns only environment tasks fill (null for a question task): what
#: :func:`evalnoise.tasks.harbor.environment_task_rows` adds to a question task's columns.
ENVIRONMENT_TASK_COLUMNS = ("kind", "task_dir", "verifier_time_limit_s", "task_digest")
#: The roles a table's stored metadata may name, and what each is called in messages.
ROLES = ("task", "trial", "score", "group")


def group_label(agent: object, resource_profile: object | None) -> str:
    """The name of a group (one agent under one resource profile) in every table, chart and
    file: ``agent@profile``, or the agent alone when there is no resource profile (a table
    that names none)."""
    return str(agent) if resource_profile is None else f"{agent}@{resource_profile}"
