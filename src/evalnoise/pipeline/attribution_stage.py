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

Pure over its inputs; the rule ``attribution`` writes the tables.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import combinations
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
) -> dict[str, Any]:
    """``{"summary": {...per group...}, "resource": DataFrame, "flaky": DataFrame}``.

    ``groups`` are the run's (agent, resource profile) pairs; ``options`` its ``analysis``
    section; ``policy`` the infra policy.
    """
    from evalnoise.attribution import (
        resource_sensitivity,
    )
    from evalnoise.formatting import jsonable
    from evalnoise.pipeline.plan import group_label

    memory = None
    if "memory_mb" in tasks:
        memory = tasks.set_index(tasks["task_id"].astype(str))["memory_mb"]
    summary: dict[str, Any] = {}
    flaky_frames, resource_frames = [], []
    for agent, profile in groups:
        rows = scores[(scores["agent"] == agent) & (scores["resource_profile"] == profile)]
        label = group_label(agent, profile)
        if rows.empty:
            continue
        try:
            summary[label] = _group_summary(rows, label, policy, options, flaky_frames)
        except ValueError as exc:
            # a degenerate group (one task, every score equal) is reported, never a crash
            summary[label] = {"not_computed": str(exc)}
    agents = sorted({a for a, _ in groups})
    for agent in agents:
        profiles = sorted(r for a, r in groups if a == agent)
        for a, b in combinations(profiles, 2):
            rows = scores[scores["agent"] == agent]
            need, source = _memory_need(rows, a, b, memory)
            result = resource_sensitivity(rows, a, b, memory_mb=need, policy=policy)
            frame = result.to_frame()
            frame.insert(0, "agent", agent)
            frame.insert(1, "profile_a", a)
            frame.insert(2, "profile_b", b)
            resource_frames.append(frame)
            significant = frame[frame["significant"].astype(bool)]
            between = frame[frame["between_limits"].fillna(False).astype(bool)]
            summary.setdefault("_resource", []).append(
                {
                    "agent": agent,
                    "profile_a": a,
                    "profile_b": b,
                    "n_tasks": len(frame),
                    "n_tested": int(frame["tested"].astype(bool).sum()),
                    "significant": sorted(significant["task_id"].astype(str)),
                    "between_limits": sorted(between["task_id"].astype(str)),
                    "adjust": "Benjamini-Hochberg",
                    "memory_need": source,
                }
            )
    resource = pd.concat(resource_frames, ignore_index=True) if resource_frames else pd.DataFrame()
    flaky_all = pd.concat(flaky_frames, ignore_index=True) if flaky_frames else pd.DataFrame()
    return {"summary": jsonable(summary), "resource": resource, "flaky": flaky_all}


def _memory_need(
    rows: pd.DataFrame, a: str, b: str, declared: pd.Series | None
) -> tuple[pd.Series | None, str]:
    """Each task's memory need in MiB: the largest peak its trials reached under the profile
    with the higher hard limit (what the agent really used when it could), else the task's
    declared ``memory_mb``. A declared spec says what a task is given, not what an agent
    needs: an agent that loads a model in its container needs more than the spec."""
    if "peak_memory_bytes" in rows and "memory_limit_bytes" in rows:
        limits = rows.groupby("resource_profile")["memory_limit_bytes"].max()
        roomy = max((a, b), key=lambda r: float(limits.get(r, float("nan")) or float("inf")))
        ok = rows[(rows["resource_profile"] == roomy) & rows["peak_memory_bytes"].notna()]
        if not ok.empty:
            peaks = ok.groupby(ok["task_id"].astype(str))["peak_memory_bytes"].max()
            return peaks / 2**20, f"measured: largest peak under {roomy}"
    return declared, "declared: the task's memory_mb"


def _group_summary(
    rows: pd.DataFrame,
    label: str,
    policy: Mapping[str, Any],
    options: Mapping[str, Any],
    flaky_frames: list[pd.DataFrame],
) -> dict[str, Any]:
    """Policy sensitivity, time effects and flaky tasks of one group (its flaky-task rows
    are appended to ``flaky_frames``)."""
    from evalnoise.attribution import flaky_tasks, policy_sensitivity, time_effects

    mode = dict(policy).get("mode", "as_incorrect")
    on_exhausted = dict(policy).get("on_exhausted", "as_incorrect")
    sensitivity = policy_sensitivity(
        rows,
        on_exhausted=on_exhausted,
        confidence=options["confidence"],
        cluster_se=options["cluster_se"],
        quantile=options["quantile"],
    )
    try:
        times = time_effects(rows, policy=policy, confidence=options["confidence"])
    except ValueError as exc:
        # e.g. one task, or trials all in one time block: the rest of the record stands
        times, time_note = None, str(exc)
    else:
        time_note = None
    flaky = flaky_tasks(rows, policy=policy)
    frame = flaky.to_frame()
    frame.insert(0, "group", label)
    flaky_frames.append(frame)
    comps = None if times is None else times.components
    return {
        "policy": [
            {
                "policy": name,
                "applicable": bool(sensitivity.applicable[i]),
                "mean": sensitivity.mean[i],
                "ci_low": sensitivity.ci_low[i],
                "ci_high": sensitivity.ci_high[i],
                "n_counted": sensitivity.n_counted[i],
                "n_excluded": sensitivity.n_excluded[i],
                "note": sensitivity.note[i],
            }
            for i, name in enumerate(sensitivity.policy)
        ],
        "policy_moves_result": bool(sensitivity.moves_result),
        "policy_max_shift": sensitivity.max_shift,
        "policy_half_width": sensitivity.half_width,
        "declared_policy": mode,
        "infra_share": None if comps is None else comps.infra_share,
        "infra_share_ci_low": None if comps is None else comps.infra_share_ci_low,
        "infra_share_ci_high": None if comps is None else comps.infra_share_ci_high,
        "infra_components": [] if comps is None else list(comps.infra_components),
        "components": (
            {} if comps is None else {c: comps.sigma2[i] for i, c in enumerate(comps.components)}
        ),
        "drift_slope": None if times is None else times.drift.slope,
        "drift_p": None if times is None else times.drift.p,
        "time_blocks": 0 if times is None else times.n_time_blocks,
        "hosts": 0 if times is None else times.n_hosts,
        "time_effects_not_computed": time_note,
        "flaky_flagged": len(frame),
        "flaky_checks_run": list(flaky.checks_run),
    }
