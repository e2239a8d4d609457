"""The default column names of a trial table, shared by every command.

Kept apart from :mod:`evalnoise.trial_table` (numpy, pandas) so that a command's argument parser
can name them in its help without importing the libraries that read tables.
"""

from __future__ import annotations

__all__ = [
    "CONVERGENCE_CHART_COLUMNS",
    "CONVERGENCE_TABLE_COLUMNS",
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
#: :func:`evalnoise.tasks.harbor_folders.environment_task_rows` adds to a question task's columns.
ENVIRONMENT_TASK_COLUMNS = ("kind", "task_dir", "verifier_time_limit_s", "task_digest")
#: The roles a table's stored metadata may name, and what each is called in messages.
ROLES = ("task", "trial", "score", "group")


def group_label(agent: object, resource_profile: object | None) -> str:
    """The name of a group (one agent under one resource profile) in every table, chart and
    file: ``agent@profile``, or the agent alone when there is no resource profile (a table
    that names none)."""
    return str(agent) if resource_profile is None else f"{agent}@{resource_profile}"


#: Columns of the convergence table the pipeline writes (one CSV per group, concatenated by
#: :func:`evalnoise.pipeline.summary.summarize`): every key of
#: :func:`evalnoise.analysis.convergence_records` plus the group's agent and resource profile.
CONVERGENCE_TABLE_COLUMNS = (
    "group",
    "agent",
    "resource_profile",
    "trials",
    "icc_mean",
    "icc_p05",
    "icc_p95",
    "plugin_mean",
    "plugin_p05",
    "plugin_p95",
    "full_icc",
    "full_plugin",
    "converged_at",
)
#: The ones the report's convergence chart requires (``full_icc`` and ``full_plugin`` it
#: draws when present): :func:`evalnoise.report.chart_tables.tidy_convergence`.
CONVERGENCE_CHART_COLUMNS = tuple(
    c
    for c in CONVERGENCE_TABLE_COLUMNS
    if c not in ("agent", "resource_profile", "full_icc", "full_plugin", "converged_at")
)
