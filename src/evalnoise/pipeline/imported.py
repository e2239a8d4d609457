"""``trials_from``: an existing trial table takes the place of running trials.

The table (CSV, TSV, JSONL or Parquet — e.g. written by ``evalnoise import``) is read with
the config's ``columns`` mapping — a null task, trial, score or group column is the one the
file stores (``evalnoise import`` writes the roles into the Parquet metadata), else the
default every command shares — and validated by :func:`evalnoise.trial_table.validate_trials`
(errors name the file, row and column). It becomes the same three artifacts a pipeline run
makes, so every later stage is the same code:

- a TRIALS table (``agent`` from ``columns.group``, ``resource_profile`` from
  ``columns.resource_profile`` or ``imported``, ``status`` from ``columns.status`` or ``ok``);
- a SCORES table scored by the ``recorded`` scorer (the table's own score);
- a TASKS table listing the task ids (and levels, from ``columns.level``). Questions and
  answers are not known for imported trials and are left empty.

Trial labels that are all integers are kept; otherwise each (agent, resource profile,
task)'s labels are numbered 0, 1, … in sorted label order. A score may be missing only on a
row whose status is an infrastructure outcome.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from evalnoise.column_names import ROLES
from evalnoise.errors import InputError
from evalnoise.schema import INFRA_STATUSES, STATUSES, TASKS, TRIALS, conform
from evalnoise.trial_table import Columns, column_list, read_any, resolve_columns, validate_trials

__all__ = ["DEFAULT_RESOURCE_PROFILE", "import_groups", "import_table"]

DEFAULT_RESOURCE_PROFILE = "imported"
_KEY = "__evalnoise_group"


def _column(raw: pd.DataFrame, name: str, path: str) -> pd.Series:
    if name not in raw.columns:
        raise InputError(
            f"no such column (the file has: {column_list(raw)})", path=path, column=name
        )
    values = raw[name]
    missing = values.isna().to_numpy()
    if missing.any():
        raise InputError(
            "value is missing", path=path, row=int(np.flatnonzero(missing)[0]) + 1, column=name
        )
    return values.astype(str)


def _resolved(raw: pd.DataFrame, columns: Mapping[str, Any], path: str) -> dict[str, Any]:
    """The config's ``columns`` with task, trial, score and group filled where null: from
    the roles the file stores (``evalnoise import`` writes them), else the defaults every
    command shares (:func:`evalnoise.trial_table.resolve_columns`)."""
    given = Columns(
        task=columns.get("task"),
        trial=columns.get("trial"),
        score=columns.get("score"),
        group=columns.get("group"),
    )
    resolved, _ = resolve_columns(raw, given, path=path)
    return {**columns, **{role: getattr(resolved, role) for role in ROLES}}


def _frame(path: str, columns: Mapping[str, Any]) -> pd.DataFrame:
    raw = read_any(path)
    if raw.shape[0] == 0:
        raise InputError("the file has no rows", path=path)
    columns = _resolved(raw, columns, path)
    agent = (
        _column(raw, columns["group"], path)
        if columns["group"]
        else pd.Series("all", index=raw.index)
    )
    profile = (
        _column(raw, columns["resource_profile"], path)
        if columns["resource_profile"]
        else pd.Series(DEFAULT_RESOURCE_PROFILE, index=raw.index)
    )
    if columns["status"]:
        status = _column(raw, columns["status"], path).str.strip().str.lower()
        bad = ~status.isin(STATUSES).to_numpy()
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise InputError(
                f"status {status.iloc[i]!r} is not one of {', '.join(STATUSES)}",
                path=path,
                row=i + 1,
                column=columns["status"],
            )
    else:
        status = pd.Series("ok", index=raw.index)
    infra = status.isin(INFRA_STATUSES).to_numpy()
    # a trial that did not end ok needs no score: an infra outcome counts as the infra policy
    # says, an agent error is scored as the agent's failure (evalnoise.scorers.score_table)
    unanswered = status.ne("ok").to_numpy()
    work = raw.copy()
    if columns["score"] in work.columns and unanswered.any():
        missing = work[columns["score"]].isna().to_numpy()
        filled = work[columns["score"]].astype(object).where(~(unanswered & missing), 0)
        work[columns["score"]] = filled
    work[_KEY] = (agent + "\x00" + profile).to_numpy()
    valid = validate_trials(
        work,
        Columns(task=columns["task"], trial=columns["trial"], score=columns["score"], group=_KEY),
        path=path,
    )
    valid["agent"] = agent.to_numpy()
    valid["resource_profile"] = profile.to_numpy()
    valid["status"] = status.to_numpy()
    # an infra outcome or a verifier that left no reward has no score (never the placeholder)
    valid.loc[infra | status.eq("verifier_error").to_numpy(), "score"] = np.nan
    if columns["level"]:
        level = raw[columns["level"]] if columns["level"] in raw.columns else None
        if level is None:
            raise InputError(
                f"no such column (the file has: {column_list(raw)})",
                path=path,
                column=columns["level"],
            )
        valid["level"] = level.astype("string").to_numpy()
    else:
        valid["level"] = pd.array([pd.NA] * len(valid), dtype="string")
    numeric = pd.to_numeric(valid["trial"], errors="coerce")
    if numeric.notna().all() and (numeric == numeric.round()).all() and (numeric >= 0).all():
        valid["trial"] = numeric.astype("int64")
    else:
        valid["trial"] = (
            valid.groupby(["agent", "resource_profile", "task"])["trial"]
            .rank(method="dense")
            .astype("int64")
            - 1
        )
    return valid


def import_groups(path: str, columns: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The (agent, resource profile) groups of the table, sorted (validates it)."""
    frame = _frame(str(path), columns)
    return sorted({(a, r) for a, r in zip(frame["agent"], frame["resource_profile"], strict=True)})


def import_table(path: str, columns: Mapping[str, Any]) -> tuple[pa.Table, pa.Table, pa.Table]:
    """``(tasks, trials, scores)`` tables of an imported trial table."""
    from evalnoise.scorers import score_trials

    frame = _frame(str(path), columns)
    order = pd.unique(frame["task"])
    levels = frame.drop_duplicates("task").set_index("task")["level"]
    tasks = pd.DataFrame(
        {"task_id": order, "question": "", "answer": "", "level": levels.reindex(order).to_numpy()}
    )
    tasks_tbl = conform(pa.Table.from_pandas(tasks, preserve_index=False), TASKS)
    trials = pd.DataFrame(
        {
            "agent": frame["agent"],
            "resource_profile": frame["resource_profile"],
            "task_id": frame["task"],
            "trial": frame["trial"],
            "attempt": 1,
            "status": frame["status"],
            "score": frame["score"].astype("float64"),
            "backend": "imported",
        }
    )
    trials = trials.sort_values(
        ["agent", "resource_profile", "task_id", "trial"], kind="mergesort"
    ).reset_index(drop=True)
    trials_tbl = conform(pa.Table.from_pandas(trials, preserve_index=False), TRIALS)
    scores_tbl = score_trials(trials_tbl, tasks_tbl, "recorded")
    return tasks_tbl, trials_tbl, scores_tbl
