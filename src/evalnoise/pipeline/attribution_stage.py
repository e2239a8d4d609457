"""Where the noise comes from, for the whole run: the attribution stage.

Runs :mod:`evalnoise.attribution` over every group's score rows:

- per group, :func:`~evalnoise.attribution.policy_sensitivity` (accuracy under each infra
  policy from the same trials) and :func:`~evalnoise.attribution.time_effects` (task,
  time-block, host variance components; the infrastructure share with its CI; drift);
- per agent and pair of its resource profiles,
  :func:`~evalnoise.attribution.resource_sensitivity` (per task, exact McNemar with
  Benjamini–Hochberg; the tasks whose memory need sits between the two hard limits);
- per group, :func:`~evalnoise.attribution.flaky_tasks` (the ranked list, with the checks
  that ran, so an empty list still says what was looked for).

One implementation: this is :func:`evalnoise.attribution.all_analyses.attribution_for_trials` over
the run's score rows and its plan's groups, as ``evalnoise analyze`` runs it over an imported
table. Pure over its inputs; the rule ``attribution`` writes the tables.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

__all__ = ["attribution_tables"]


def attribution_tables(
    scores: pd.DataFrame,
    tasks: pd.DataFrame,
    *,
    policy: Mapping[str, Any],
    options: Mapping[str, Any],
    groups: Sequence[tuple[str, str]],
    task_pool: int | None = None,
    imported: bool = False,
) -> dict[str, Any]:
    """``{"summary": {...per group...}, "resource": DataFrame, "flaky": DataFrame}``.

    ``groups`` are the run's (agent, resource profile) pairs; ``options`` its ``analysis``
    section; ``policy`` the infra policy; ``tasks`` the tasks table (its ``memory_mb`` is
    each task's declared memory need, used when no peak was measured). The D study's
    designs stay within the task pool: ``task_pool`` (the benchmark's tasks, a Harbor set or
    a file), or for an ``imported`` table the tasks it has (the tasks table's rows); none
    for the generated benchmark, which has as many as asked for.
    """
    from evalnoise.attribution.all_analyses import attribution_for_trials

    memory = None
    if "memory_mb" in tasks:
        memory = tasks.set_index(tasks["task_id"].astype(str))["memory_mb"]
    out = attribution_for_trials(
        scores,
        policy=policy,
        confidence=options["confidence"],
        cluster_se=options["cluster_se"],
        quantile=options["quantile"],
        groups=groups,
        memory_mb=memory,
        max_tasks=task_pool if task_pool is not None else len(tasks) if imported else None,
    )
    return {"summary": dict(out.summary), "resource": out.resource, "flaky": out.flaky}
