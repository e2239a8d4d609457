"""Tables the charts draw, computed from the long trial frame.

Pure functions, no I/O. The input is the validated long frame of
:func:`evalnoise.tables.validate_trials`: columns ``group, task, trial, score``.
"""

from __future__ import annotations

import pandas as pd

from evalnoise.stats.proportion import wilson_interval

__all__ = ["PER_TASK_COLUMNS", "per_task_table"]

#: Columns of :func:`per_task_table` and of the input of
#: :func:`evalnoise.report.charts.per_task_chart`.
PER_TASK_COLUMNS = ("group", "task", "n", "mean", "ci_low", "ci_high")


def per_task_table(frame: pd.DataFrame, *, confidence: float = 0.95) -> pd.DataFrame:
    """Per-task accuracy with a Wilson interval over that task's trials (paper Fig. 1).

    Parameters
    ----------
    frame : long frame with columns ``group, task, trial, score`` (score in [0, 1]).
    confidence : level of the interval.

    Returns
    -------
    DataFrame with columns :data:`PER_TASK_COLUMNS`: one row per (group, task); ``n`` is the
    task's number of trials, ``mean`` its mean score, ``ci_low``/``ci_high`` the Wilson
    interval (see :func:`evalnoise.stats.proportion.wilson_interval`). Sorted by group, then
    mean descending, then task, so the order is deterministic.
    """
    missing = [c for c in ("group", "task", "score") if c not in frame.columns]
    if missing:
        raise ValueError(f"per_task_table: missing columns {missing}")
    if frame.empty:
        raise ValueError("per_task_table: the frame has no rows")
    agg = (
        frame.groupby(["group", "task"], sort=True)["score"]
        .agg(n="size", mean="mean")
        .reset_index()
    )
    low, high = wilson_interval(agg["mean"].to_numpy(), agg["n"].to_numpy(), confidence)
    agg["ci_low"] = low
    agg["ci_high"] = high
    agg["group"] = agg["group"].astype(str)
    agg["task"] = agg["task"].astype(str)
    agg["n"] = agg["n"].astype("int64")
    agg = agg.sort_values(["group", "mean", "task"], ascending=[True, False, True])
    return agg.reset_index(drop=True)[list(PER_TASK_COLUMNS)]
