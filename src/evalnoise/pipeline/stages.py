"""The numeric stages of the pipeline: per group and per pair, pure over their inputs.

- :func:`group_outputs` — everything rule ``analyze_group`` computes for one group, from
  its trials read once: :func:`analyze_group`, :func:`convergence_table` and
  :func:`budget_table`.
- :func:`analyze_group` — accuracy with both CIs, ICC(1,1) with CI and SE, variance
  components, per task level and overall; infra counts and rate; per-task accuracy.
- :func:`compare_groups` — one pair: paired difference, McNemar, paired bootstrap, MDD.
- :func:`convergence_table` — ICC over growing numbers of trials.
- :func:`budget_table` — how a budget of runs splits best into tasks × trials (eq. 9–10).

Numbers only: the text the run shows (``summary.txt``, the judges' lines, the cards) is
made by :mod:`evalnoise.pipeline.summary` and the report, so rewording it changes no code
these stages hash (``code_version("analysis")``, :mod:`evalnoise.pipeline.dependencies`).
Outputs are deterministic (sorted, no timestamps), so reruns do not churn DVC hashes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import pandas as pd

from evalnoise.analysis import (
    compare_all_pairs,
    failure_readings,
    group_stats,
    undefined_group_record,
)
from evalnoise.column_names import CONVERGENCE_TABLE_COLUMNS
from evalnoise.group_records import GroupRecord
from evalnoise.pipeline.collect import GroupData

__all__ = [
    "BUDGET_COLUMNS",
    "CONVERGENCE_TABLE_COLUMNS",
    "GroupOutputs",
    "analyze_group",
    "budget_table",
    "compare_groups",
    "convergence_table",
    "group_estimates",
    "group_health",
    "group_outputs",
]

BUDGET_COLUMNS = (
    "group",
    "agent",
    "resource_profile",
    "budget",
    "n_tasks",
    "trials",
    "trials_used",
    "variance",
    "se",
    "recommended",
)


def _infra(data: GroupData, confidence: float) -> dict[str, Any]:
    from evalnoise.stats.proportion import wilson_interval

    counts = dict(data.counts)
    attempts = int(counts["attempts"])
    if attempts:
        low, high = wilson_interval(counts["infra_attempts"] / attempts, attempts, confidence)
        counts["infra_ci_low"], counts["infra_ci_high"] = float(low), float(high)
    else:
        counts["infra_ci_low"] = counts["infra_ci_high"] = None
    return counts


def group_estimates(frame: pd.DataFrame, group: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """A group's accuracy and ICC record (:func:`evalnoise.analysis.group_record`), or the
    undefined record saying why when no trial counts toward accuracy."""
    if frame.empty:
        return undefined_group_record(
            group,
            "no trial counts toward accuracy (every trial was excluded by the infra policy "
            "or unscored)",
        )
    return group_stats(
        frame["score"].to_numpy(),
        frame["task"].to_numpy(),
        group,
        confidence=options["confidence"],
        cluster_se=options["cluster_se"],
        quantile=options["quantile"],
    )


def not_a_measurement(verdict: Any) -> str:
    """Why a group that failed its health check has no headline number."""
    return "not a measurement of the agent (" + "; ".join(verdict.reasons) + ")"


def group_health(
    data: GroupData, health: Mapping[str, Any] | None = None
) -> tuple[dict[str, int], Any, dict[str, int]]:
    """``(outcomes, health, crash_signals)`` of a group: the count of every outcome
    (:func:`evalnoise.outcomes.outcome_counts`), whether the group measured the agent
    (:func:`evalnoise.outcomes.assess_health` with the config's ``health`` section), and
    how many trials each fault signal killed."""
    from evalnoise.outcomes import assess_health, crash_signal_name

    outcomes = outcomes_with_flags(data.attempts, data.after_agent_failure)
    failed = data.attempts[data.attempts["status"] == "agent_error"]
    names = [crash_signal_name(c) for c in failed.get("exit_code", pd.Series(dtype=float))]
    signals = {n: names.count(n) for n in sorted({n for n in names if n})}
    # without a health section (a table analysed outside the pipeline): assess_health's rule
    verdict = assess_health(
        outcomes,
        **({"max_failure_rate": float(health["max_failure_rate"])} if health else {}),
        expected=bool(health) and data.group in set(health["expected_failures"] or ()),
        crash_examples=signals,
    )
    return outcomes, verdict, signals


def outcomes_with_flags(attempts: pd.DataFrame, rule: str = "verdict") -> dict[str, int]:
    """The count of every outcome of ``attempts`` and of every flag whose column they have
    (:func:`evalnoise.outcomes.outcome_counts`), read under the ``after_agent_failure``
    ``rule`` (:func:`evalnoise.verified_after.apply_rule`: under ``failure`` a trial verified
    after an agent failure counts as that failure, still flagged)."""
    from evalnoise.outcomes import outcome_counts
    from evalnoise.verified_after import apply_rule

    return outcome_counts(apply_rule(attempts, rule))


def multiverse_settings(
    policy: Mapping[str, Any] | str,
    options: Mapping[str, Any],
    scorers: Mapping[str, pd.DataFrame] | None = None,
) -> dict[str, Any]:
    """The multiverse's settings for one group (:func:`evalnoise.consistency.
    reliability_fields`): its reference cell is the run's own analysis — the declared infra
    policy and verdict-after-failure rule (``policy``, the config's ``infra_policy`` with
    ``after_agent_failure``) and the scorer the headline uses (``options["score"]``:
    ``reference``, or ``judge``, the first judge); ``scorers`` (scorer name → its rows of
    the group's attempts, :func:`evalnoise.pipeline.judging.scorer_rows`) make the scorer a
    factor."""
    from evalnoise.runner.infra_policies import infra_policy

    declared = infra_policy(policy if isinstance(policy, str) else dict(policy))
    reference = {
        "infra_policy": declared.mode,
        "verdict_after_failure": (
            "agent_failure_scores_0"
            if declared.after_agent_failure == "failure"
            else "verifier_decides"
        ),
    }
    if scorers:
        names = list(scorers)
        # the reference scorer is the first level, the judges follow in the config's order
        reference["judge"] = names[1] if options.get("score") == "judge" else names[0]
    return {"scorers": scorers, "reference": reference, "on_exhausted": declared.on_exhausted}


def analyze_group(
    data: GroupData,
    options: Mapping[str, Any],
    *,
    policy: str,
    health: Mapping[str, Any] | None = None,
    actions: pd.DataFrame | None = None,
    multiverse: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """One group's statistics: ``overall``, ``levels``, ``infra``, ``per_task``, and what
    became of its trials: ``outcomes``, ``health`` (is this a measurement of the agent?),
    ``crash_signals``; ``overall`` and each level record carry their own ``outcomes``;
    ``costs``: the cost drivers of every attempt (:func:`evalnoise.costs.cost_drivers`:
    per driver how many attempts reported it, their total and mean; not priced here).

    ``options`` is the config's ``analysis`` section; ``policy`` the infra policy's
    description, printed with the numbers; ``health`` the config's ``health`` section;
    ``actions`` the actions tables of the group's trial shards
    (:func:`evalnoise.pipeline.collect.read_actions`; None: the run records none), whose
    counted trials' sequences give ``overall``'s ``trajectory_consistency``.
    ``multiverse`` the multiverse's settings (:func:`multiverse_settings`; default: the
    project's defaults, one scorer).
    A group with nothing to count (every trial excluded or unscored) gets records whose
    estimates are None, never an error: it is reported, flagged, and left out of comparisons.
    """
    from evalnoise.analysis import per_task_table
    from evalnoise.consistency import reliability_fields
    from evalnoise.costs import cost_drivers
    from evalnoise.pipeline.collect import counted_actions

    outcomes, verdict, signals = group_health(data, health)
    ident = {"agent": data.agent, "resource_profile": data.resource_profile}
    withheld = None if verdict.valid else not_a_measurement(verdict)

    def estimates(frame: pd.DataFrame, attempts: pd.DataFrame, **more: Any) -> dict[str, Any]:
        record = GroupRecord.from_dict(group_estimates(frame, data.group, options))
        if withheld is not None:
            record = record.with_estimates_withheld(withheld)
        readings = failure_readings(
            attempts,
            confidence=options["confidence"],
            cluster_se=options["cluster_se"],
            quantile=options["quantile"],
        )
        return replace(
            record,
            readings=readings,
            **ident,
            **more,
        ).to_dict()

    overall = estimates(
        data.frame,
        data.attempts,
        outcomes=outcomes,
        health=verdict.to_dict(),
        # pass^k, C_out and the multiverse: numbers about the agent, so none when withheld
        **(
            {}
            if withheld is not None
            else reliability_fields(
                data.frame,
                data.attempts,
                confidence=options["confidence"],
                actions=None if actions is None else counted_actions(actions, data),
                **dict(multiverse or {}),
            )
        ),
    )
    levels = []
    if options.get("per_level", True):
        known = data.attempts.dropna(subset=["level"])
        for level in sorted({str(v) for v in known["level"]}):
            part = data.frame[data.frame["level"].astype(str) == level]
            rows = known[known["level"].astype(str) == level]
            levels.append(
                estimates(
                    part,
                    rows,
                    level=level,
                    outcomes=outcomes_with_flags(rows, data.after_agent_failure),
                )
            )
    per_task = (
        per_task_table(data.frame, confidence=options["confidence"])
        if not data.frame.empty and withheld is None
        else pd.DataFrame()
    )
    counts = data.frame.groupby("task").size()
    return {
        **ident,
        "group": data.group,
        "infra_policy": policy,
        "overall": overall,
        "levels": levels,
        "infra": _infra(data, options["confidence"]),
        "outcomes": outcomes,
        "health": verdict.to_dict(),
        "crash_signals": signals,
        "trials_per_task": {
            "min": int(counts.min()) if len(counts) else 0,
            "max": int(counts.max()) if len(counts) else 0,
        },
        "per_task": per_task.to_dict(orient="records"),
        "costs": cost_drivers(data.attempts),
    }


def compare_groups(
    a: GroupData,
    b: GroupData,
    *,
    kind: str,
    within: str,
    options: Mapping[str, Any],
    health: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Compare two groups on their common tasks (diff = a − b, names sorted).

    ``kind`` is ``agents`` (two agents, same resource profile ``within``) or
    ``resource_profiles`` (two profiles, same agent ``within``: the infra experiment).
    A group that is not a measurement of the agent (:func:`group_health`) is never compared:
    the record then says ``skipped`` and why, and carries no difference.
    """
    first, second = sorted((a, b), key=lambda g: g.group)
    ident = {
        "kind": kind,
        "within": within,
        "a": first.group,
        "b": second.group,
        "agent_a": first.agent,
        "resource_profile_a": first.resource_profile,
        "agent_b": second.agent,
        "resource_profile_b": second.resource_profile,
    }
    reasons = []
    for data in (first, second):
        _, verdict, _ = group_health(data, health)
        if not verdict.valid:
            reasons.append(
                f"{data.group} is not a measurement of the agent: " + "; ".join(verdict.reasons)
            )
        elif data.frame.empty:
            reasons.append(f"{data.group}: no trial counts toward accuracy")
    if reasons:
        return {**ident, "skipped": True, "reason": " | ".join(reasons)}
    frame = pd.concat([a.frame, b.frame], ignore_index=True)
    frame["trial"] = frame["trial"].astype(str)
    records = compare_all_pairs(
        frame,
        confidence=options["confidence"],
        n_resamples=options["bootstrap"]["resamples"],
        seed=options["bootstrap"]["seed"],
    )
    if len(records) != 1:
        raise ValueError(f"expected one pair, got {len(records)}")
    record = records[0]
    # adjusted over the run's whole family of comparisons by the summary, never here
    record.pop("pvalue_holm", None)
    if record["mcnemar"] is not None:
        record["mcnemar"].pop("pvalue_holm", None)
    record.update(
        {
            **ident,
            "skipped": False,
            "infra_error_rate_a": first.counts["infra_error_rate_attempts"],
            "infra_error_rate_b": second.counts["infra_error_rate_attempts"],
        }
    )
    return record


def convergence_table(
    data: GroupData,
    options: Mapping[str, Any],
    health: Mapping[str, Any] | None = None,
    *,
    valid: bool | None = None,
) -> pd.DataFrame:
    """ICC convergence over trials (columns :data:`CONVERGENCE_TABLE_COLUMNS`): the records
    of :func:`evalnoise.analysis.convergence_records` (what the report's chart reads) with the
    group's agent and resource profile. Empty for a group that is not a measurement of the
    agent (:func:`group_health` with the config's ``health``): its ICC is withheld.
    ``valid`` is that verdict when the caller has it already (:func:`group_outputs`)."""
    from evalnoise.analysis import convergence_records

    if health is not None:
        if valid is None:
            valid = group_health(data, health)[1].valid
        if not valid:
            return pd.DataFrame(columns=list(CONVERGENCE_TABLE_COLUMNS))
    opts = options["convergence"]
    rows = convergence_records(
        data.frame, n_subsamples=opts["subsamples"], seed=opts["seed"], tolerance=opts["tolerance"]
    )
    table = pd.DataFrame.from_records(
        rows,
        columns=[c for c in CONVERGENCE_TABLE_COLUMNS if c not in ("agent", "resource_profile")],
    )
    table.insert(1, "agent", data.agent)
    table.insert(2, "resource_profile", data.resource_profile)
    return table[list(CONVERGENCE_TABLE_COLUMNS)]


def budget_table(
    stats: Mapping[str, Any], options: Mapping[str, Any], *, max_tasks: int | None
) -> pd.DataFrame:
    """Every split of the budget into tasks × trials with its SE (paper eq. 9–10).

    The budget is ``analysis.budget.runs`` or, by default, the runs this group made; the
    variance components are the group's (σ²_between clipped at 0). Empty when they are
    undefined (e.g. every score equal).
    """
    from evalnoise.stats import allocation_table

    rec = stats["overall"]
    s2b, s2w = rec.get("sigma2_between"), rec.get("sigma2_within")
    budget = options["budget"]["runs"] or int(rec["n_obs"])
    limit = options["budget"]["max_tasks"] or max_tasks
    empty = pd.DataFrame(columns=list(BUDGET_COLUMNS))
    if s2b is None or s2w is None or not (math.isfinite(s2b) and math.isfinite(s2w)):
        return empty
    res = allocation_table(
        int(budget), max(float(s2b), 0.0), float(s2w), max_tasks=int(limit) if limit else None
    )
    table = pd.DataFrame(
        {
            "n_tasks": res.n_tasks,
            "trials": res.trials,
            "trials_used": res.trials_used,
            "variance": res.variance,
            "se": res.se,
        }
    )
    table["recommended"] = (table["n_tasks"] == res.recommended.n_tasks) & (
        table["trials"] == res.recommended.trials
    )
    table.insert(0, "budget", int(budget))
    table.insert(0, "resource_profile", stats["resource_profile"])
    table.insert(0, "agent", stats["agent"])
    table.insert(0, "group", stats["group"])
    return table[list(BUDGET_COLUMNS)]


@dataclass(frozen=True)
class GroupOutputs:
    """What rule ``analyze_group`` writes for one group (the judges' record aside, which
    :func:`evalnoise.pipeline.judging.judge_quality` computes from the judges' shards)."""

    #: :func:`analyze_group`'s record (``results/analysis/groups/A/P.json``)
    stats: dict[str, Any]
    #: :func:`convergence_table` (columns :data:`CONVERGENCE_TABLE_COLUMNS`)
    convergence: pd.DataFrame
    #: :func:`budget_table` of ``stats`` (columns :data:`BUDGET_COLUMNS`)
    budget: pd.DataFrame

    def to_dict(self) -> dict[str, Any]:
        return {
            "stats": self.stats,
            "convergence": self.convergence.to_dict(orient="records"),
            "budget": self.budget.to_dict(orient="records"),
        }


def group_outputs(
    data: GroupData,
    options: Mapping[str, Any],
    *,
    policy: str,
    health: Mapping[str, Any] | None = None,
    max_tasks: int | None = None,
    actions: pd.DataFrame | None = None,
    multiverse: Mapping[str, Any] | None = None,
) -> GroupOutputs:
    """Every statistic of one group from its trials read once: ``stats`` =
    :func:`analyze_group` (eq. 2–4 and the ICC), ``convergence`` = :func:`convergence_table`,
    ``budget`` = :func:`budget_table` of those stats (eq. 9–10). The same values as the three
    functions called one by one; the group's health is assessed once for all three.
    ``multiverse``: :func:`multiverse_settings`."""
    stats = analyze_group(
        data, options, policy=policy, health=health, actions=actions, multiverse=multiverse
    )
    return GroupOutputs(
        stats=stats,
        # the verdict analyze_group reached with the same health section
        convergence=convergence_table(data, options, health, valid=stats["health"]["valid"]),
        budget=budget_table(stats, options, max_tasks=max_tasks),
    )
