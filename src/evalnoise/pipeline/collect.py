"""Collecting score shards into the long frame the statistics take.

A group (agent × resource profile) is read from its score shards (or from the imported
scores), the declared infra policy is applied
(:func:`evalnoise.runner.infra_policies.apply_infra_policy`), and the trials that count become the
long frame ``group, task, trial, score, level`` of :func:`evalnoise.trial_table.validate_trials`.
A counted trial without a score — the LLM judge could not decide — is left out and counted
as ``unscored``, never silently scored wrong.

With prompt or sampling variants (:mod:`evalnoise.pipeline.variants`) a task's trial index
runs once per variant; in the long frame each (variant, trial) gets its own ``trial``
number (:func:`variant_trials`), so a trial stays one row of one task everywhere the
statistics key by (task, trial). The variants' labels stay in ``attempts``.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from evalnoise.pipeline.shard_plan import group_label

__all__ = [
    "PAYLOAD_COLUMNS",
    "GroupData",
    "counted_actions",
    "group_data",
    "load_group",
    "read_actions",
    "read_levels",
    "read_scores",
    "variant_trials",
]


#: The trial's outputs, which no statistic reads: the answer, the agent's error message and
#: output tails, the judge's explanation. The analysis leaves them on disk, so a job's
#: memory grows with the trials' numbers, not with what the agents wrote.
PAYLOAD_COLUMNS = ("prediction", "error", "stdout_tail", "stderr_tail", "judge_explanation")


def read_scores(
    paths: Iterable[str | os.PathLike[str]],
    *,
    payload: bool = False,
    columns: Collection[str] | None = None,
) -> pd.DataFrame:
    """The score shards concatenated (SCORES schema), without :data:`PAYLOAD_COLUMNS`
    unless ``payload``; only ``columns`` (those a shard has) when given. A path given twice
    is read once: the same file twice would be every one of its trials twice."""
    tables = []
    for path in dict.fromkeys(map(os.fspath, paths)):
        with pq.ParquetFile(path) as shard:
            names = shard.schema_arrow.names
            if columns is not None:
                names = [c for c in names if c in columns]
            columns_read = names if payload else [c for c in names if c not in PAYLOAD_COLUMNS]
            tables.append(shard.read(columns=columns_read))
    if not tables:
        raise ValueError("no score shards given")
    # "default" promotion: a shard written before a nullable column existed (the cost
    # drivers, say) reads as null there instead of failing the concatenation
    return pa.concat_tables(tables, promote_options="default").to_pandas()


@dataclass
class GroupData:
    agent: str
    resource_profile: str
    #: long frame: group, task, trial, score, level (trials that count for accuracy)
    frame: pd.DataFrame
    #: every attempt of the group (for infra rates, outcome counts and provenance), with the
    #: task's ``level``
    attempts: pd.DataFrame
    counts: dict[str, Any] = field(default_factory=dict)
    #: how a trial verified after an agent failure counts (the infra policy's
    #: ``after_agent_failure``, :mod:`evalnoise.verified_after`): ``frame`` is read so;
    #: ``attempts`` are kept as recorded
    after_agent_failure: str = "verdict"

    @property
    def group(self) -> str:
        return group_label(self.agent, self.resource_profile)


def load_group(
    score_paths: Iterable[str | os.PathLike[str]],
    tasks_path: str | os.PathLike[str],
    agent: str,
    resource_profile: str,
    policy: Mapping[str, Any],
) -> GroupData:
    """Read one group's scores and apply the infra policy."""
    return group_data(
        read_scores(score_paths), read_levels(tasks_path), agent, resource_profile, policy
    )


def read_levels(tasks_path: str | os.PathLike[str]) -> dict[str, Any]:
    """task id → level, from the tasks table."""
    tasks = pd.read_parquet(tasks_path, columns=["task_id", "level"])
    # .tolist() first: iterating an Arrow-backed column calls Python per element
    ids, levels = tasks["task_id"].astype(str).tolist(), tasks["level"].tolist()
    return dict(zip(ids, levels, strict=True))


def group_data(
    scores: pd.DataFrame,
    levels: Mapping[str, Any],
    agent: str,
    resource_profile: str,
    policy: Mapping[str, Any],
) -> GroupData:
    """:func:`load_group` on score shards already read (:func:`read_scores`): a caller
    that needs every group reads the shards once."""
    from evalnoise.runner.infra_policies import apply_infra_policy, infra_policy

    mine = scores[(scores["agent"] == agent) & (scores["resource_profile"] == resource_profile)]
    if mine.empty:
        raise ValueError(
            f"no trials of agent {agent!r} under resource profile "
            f"{resource_profile!r} in the score shards"
        )
    result = apply_infra_policy(mine, dict(policy))
    counted = result.counted
    unscored = counted["score"].isna()
    counted = counted[~unscored]
    frame = pd.DataFrame(
        {
            "group": group_label(agent, resource_profile),
            "task": counted["task_id"].astype(str).to_numpy(),
            "trial": variant_trials(counted, stride=_stride(mine)),
            "score": counted["score"].astype("float64").to_numpy(),
        }
    )
    frame["level"] = _levels_of(frame["task"], levels, str)
    frame = frame.sort_values(["task", "trial"], kind="mergesort").reset_index(drop=True)
    counts = dict(result.counts)
    counts["unscored"] = int(unscored.sum())
    counts["statuses"] = {str(k): int(v) for k, v in sorted(mine["status"].value_counts().items())}
    attempts = mine.reset_index(drop=True)
    attempts["level"] = _levels_of(attempts["task_id"], levels, str)
    rule = infra_policy(dict(policy)).after_agent_failure
    return GroupData(agent, resource_profile, frame, attempts, counts, rule)


def read_actions(paths: Iterable[str | os.PathLike[str]]) -> pd.DataFrame:
    """The actions tables beside trial shards (:data:`evalnoise.schema.ACTIONS`),
    concatenated; an empty table with its columns when there are none."""
    from evalnoise.schema import ACTIONS

    tables = [pq.read_table(p) for p in dict.fromkeys(map(os.fspath, paths))]
    if not tables:
        return ACTIONS.empty_table().to_pandas()
    return pa.concat_tables(tables, promote_options="default").to_pandas()


def counted_actions(actions: pd.DataFrame, data: GroupData) -> pd.DataFrame:
    """The group's actions keyed as its long frame: columns ``task, trial, step, action``
    (:data:`evalnoise.consistency.ACTION_COLUMNS`), of each trial its last attempt's — the
    attempt the infra policy counts (a retry's, a rerun verifier's) — with the frame's
    ``trial`` numbers (:func:`variant_trials` over the group's attempts). A trial not in
    ``data.frame`` (excluded, unscored) is joined away later, never scored here."""
    from evalnoise.schema import ACTIONS

    key = ["task_id", "trial", "prompt_variant", "sampling"]
    mine = actions[
        (actions["agent"] == data.agent) & (actions["resource_profile"] == data.resource_profile)
    ]
    att = data.attempts
    if mine.empty or att.empty:
        return pd.DataFrame({c: [] for c in ("task", "trial", "step", "action")})

    def keyed(frame: pd.DataFrame) -> pd.DataFrame:
        out = frame.copy()
        for column in key:
            if column not in out.columns:
                out[column] = None
        out["task_id"] = out["task_id"].astype(str)
        out["trial"] = out["trial"].astype("int64")
        for column in ("prompt_variant", "sampling"):
            out[column] = out[column].astype(object).where(out[column].notna(), "")
        return out

    numbered = keyed(att).assign(_frame_trial=variant_trials(att, stride=_stride(att)))
    last = numbered.sort_values("attempt", kind="mergesort").groupby(key, sort=False).tail(1)
    merged = keyed(mine[[f.name for f in ACTIONS if f.name in mine.columns]]).merge(
        last[[*key, "attempt", "_frame_trial"]], on=[*key, "attempt"], how="inner"
    )
    return (
        pd.DataFrame(
            {
                "task": merged["task_id"].to_numpy(),
                "trial": merged["_frame_trial"].to_numpy(),
                "step": merged["step"].astype("int64").to_numpy(),
                "action": merged["action"].to_numpy(),
            }
        )
        .sort_values(["task", "trial", "step"], kind="mergesort")
        .reset_index(drop=True)
    )


def _levels_of(tasks: pd.Series, levels: Mapping[str, Any], key: Any) -> list[Any]:
    """``[levels.get(key(t)) for t in tasks]``, looked up once per distinct task (a task has
    many trials) when no task is missing."""
    if tasks.hasnans:
        # .tolist() first: iterating an Arrow-backed column calls Python per element
        return [levels.get(key(t)) for t in tasks.tolist()]
    codes, distinct = pd.factorize(tasks)
    found = np.empty(len(distinct), dtype=object)
    found[:] = [levels.get(key(t)) for t in distinct.tolist()]
    return found[codes].tolist()


def _stride(trials: pd.DataFrame) -> int:
    return int(trials["trial"].max()) + 1 if len(trials) else 1


def variant_trials(trials: pd.DataFrame, *, stride: int) -> np.ndarray:
    """The ``trial`` numbers of the long frame: the trial index, or with variants
    ``(prompt rank × LEVELS + sampling rank) × stride + trial``, where a rank is the place of
    the row's label among the group's labels of that facet, sorted (0 when the facet is not
    varied), and ``stride`` exceeds every trial index. Two groups with the same levels number
    them alike, so a paired comparison pairs a trial with the same variant's (with other
    sampling levels, the same prompt's and the same rank's). Without variants (no such
    columns, or null throughout) this is the trial index itself."""
    from evalnoise.runner.variant import VARIANT_COLUMNS

    index = trials["trial"].astype("int64").to_numpy()
    used = [c for c in VARIANT_COLUMNS if c in trials.columns and trials[c].notna().any()]
    if not used or not len(index):
        return index
    if int(index.max()) >= stride:
        raise ValueError(f"trial index {int(index.max())} is not below the stride {stride}")
    ranks = {}
    for column in VARIANT_COLUMNS:
        if column not in used:
            ranks[column] = np.zeros(len(index), dtype=np.int64)
            continue
        labels = trials[column].astype(object).where(trials[column].notna(), "").astype(str)
        _, rank = np.unique(labels.to_numpy(), return_inverse=True)
        if int(rank.max()) >= _LEVELS:
            raise ValueError(f"more than {_LEVELS} levels of {column}")
        ranks[column] = rank.astype(np.int64)
    variant = ranks["prompt_variant"] * _LEVELS + ranks["sampling"]
    return variant * int(stride) + index


#: Levels of one facet a group may have (the radix of :func:`variant_trials`).
_LEVELS = 1000
