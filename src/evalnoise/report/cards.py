"""Evaluation Cards (paper Table 4): one per agent × resource profile, as a JSON-ready record.

A card gathers what a reader needs to judge one score: the benchmark and its version; the
agent and its decoding parameters; trials per task and how seeds were made; accuracy with its
CI, ICC(1,1) with its CI and SE, and the between-query SE; per-level rows when per-level
statistics are given; the scoring rules; the resource profile with its guarantee and limit
values; the infra policy, backend and infra error rate; and limitations computed from the
numbers themselves (:mod:`evalnoise.report.card_limitations`). Every card carries the
paper's reporting line (eq. 11, :func:`evalnoise.group_text.reporting_line`).

Every card also says what became of the group's trials (``outcomes``: ok, crashed, no
answer, timeout, oom_killed, infra_error, unscored, of N trials) and whether its numbers
measure the agent at all (``valid`` and ``health``, see :mod:`evalnoise.report.health`). A
card with ``valid: false`` opens with "Not a measurement of the agent: <reasons>" in every
form, and its statistics are struck through: a group whose trials all crashed scores 0 %,
and that 0 % is not a score. When the run's manifest records the machine (CPU model, cgroup
version, the llama.cpp runtime's CPU features and declared baseline), the card holds it.
When the attribution stage ran, the card holds how the group's accuracy moves under each
infra policy (:mod:`evalnoise.report.policy_sensitivity_view`); it always holds the group's cost
drivers and, with prices in the config, their price (:mod:`evalnoise.report.card_costs`).

This module makes the record; its words are :mod:`evalnoise.report.card_text`, its Markdown
:mod:`evalnoise.report.cards_markdown`, its HTML :mod:`evalnoise.report.cards_section`.
Cards are pure functions of their inputs: no timestamps, keys sorted when serialised.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from evalnoise.costs import Prices
from evalnoise.formatting import finite_or_none as _finite
from evalnoise.formatting import jsonable
from evalnoise.group_records import GroupRecord
from evalnoise.group_text import reporting_line
from evalnoise.report.card_costs import card_costs
from evalnoise.report.card_limitations import level_limitations, limitations
from evalnoise.report.health import health_of, outcomes_of
from evalnoise.report.policy_sensitivity_view import policy_sensitivity_of

__all__ = [
    "ICC_VARIANT",
    "REQUIRED_KEYS",
    "CardContext",
    "between_query_se",
    "card_key",
    "evaluation_card",
]

#: The ICC every card reports.
ICC_VARIANT = "ICC(1,1), one-way random effects"

#: Keys a group record (:func:`evalnoise.analysis.group_record`) must have for a card.
REQUIRED_KEYS = (
    "group",
    "n_tasks",
    "n_obs",
    "mean",
    "ci_low",
    "ci_high",
    "se_clustered",
    "icc",
    "icc_ci_low",
    "icc_ci_high",
    "interpretation",
)


@dataclass(frozen=True)
class CardContext:
    """Run-level facts the statistics do not contain.

    Attributes
    ----------
    benchmark : benchmark name, e.g. "GPQA Diamond".
    infra_policy : the declared infra policy, as printed on reports
        (``evalnoise.runner.infra_policies.InfraPolicy.describe()``, e.g. "as incorrect").
    benchmark_version : dataset version or revision.
    backend : trial backend ("docker", "kubernetes", "local"); None if not recorded (e.g.
        imported results).
    agents : agent name → description: ``model``, ``version``, ``decoding`` (temperature,
        top_p, max_tokens, tools, ...) — any JSON-able mapping.
    resource_profiles : resource profile name → its guarantee/limit settings (e.g.
        ``ResourceProfile.to_dict()``; a ``None`` limit means uncapped).
    resource_profile : the profile of records that do not name one.
    run_seed, seed_rule : the run seed and how trial seeds derive from it.
    scoring : scorer name, match rules, normalisation, judge model and template hash.
    task_level : the task complexity level of the whole benchmark, when it is one level
        (per-level statistics, when given, go in rows instead).
    confidence : level of every CI.
    prices : the config's ``prices`` section (:class:`evalnoise.costs.Prices` keys; None or
        all-null: the cards show the cost drivers, unpriced).
    """

    benchmark: str
    infra_policy: str
    benchmark_version: str | None = None
    backend: str | None = None
    agents: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    resource_profiles: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    resource_profile: str | None = None
    run_seed: int | None = None
    seed_rule: str | None = None
    scoring: Mapping[str, Any] = field(default_factory=dict)
    task_level: str | None = None
    confidence: float = 0.95
    prices: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        if not self.benchmark:
            raise ValueError("CardContext: benchmark is required")
        if not self.infra_policy:
            raise ValueError("CardContext: infra_policy is required (it is printed on every card)")
        if not 0.0 < self.confidence < 1.0:
            raise ValueError(f"CardContext: confidence must lie in (0, 1), got {self.confidence}")
        Prices.from_config(self.prices)  # a negative price is an error here, not a card


def card_key(record: Mapping[str, Any], context: CardContext) -> tuple[str, str | None]:
    """(agent, resource profile) of a group record.

    A record names them in ``agent`` and ``resource_profile``; without ``agent`` the group
    is the agent, and without ``resource_profile`` the context's default profile applies.
    """
    agent = record.get("agent")
    agent = str(record["group"]) if agent is None else str(agent)
    profile = record.get("resource_profile")
    profile = context.resource_profile if profile is None else str(profile)
    return agent, profile


def between_query_se(record: Mapping[str, Any]) -> float | None:
    """The paper's between-query SE: ``between_query_se`` (sqrt(s²(task means)/n), from
    :class:`evalnoise.stats.icc.ICCResult`) when the record has it, else the task-clustered
    SE of accuracy, which the reporting line prints and which equals it in balanced designs."""
    value = record.get("between_query_se")
    return _finite(value if value is not None else record.get("se_clustered"))


def _per_level_rows(levels: Sequence[Mapping[str, Any]], confidence: float) -> list[dict]:
    rows = []
    for rec in sorted(levels, key=lambda r: str(r["level"])):
        rows.append(
            {
                "level": str(rec["level"]),
                "n_tasks": rec.get("n_tasks"),
                "n_obs": rec.get("n_obs"),
                "accuracy": rec.get("mean"),
                "ci_low": rec.get("ci_low"),
                "ci_high": rec.get("ci_high"),
                "icc": rec.get("icc"),
                "icc_ci_low": rec.get("icc_ci_low"),
                "icc_ci_high": rec.get("icc_ci_high"),
                "icc_se": rec.get("icc_se"),
                "interpretation": rec.get("interpretation"),
                "between_query_se": between_query_se(rec),
                "reporting_line": reporting_line(dict(rec), confidence),
                "valid": health_of(rec)["valid"],
                "health": health_of(rec),
                "outcomes": outcomes_of(rec),
            }
        )
    return rows


def evaluation_card(
    record: Mapping[str, Any],
    context: CardContext,
    *,
    levels: Sequence[Mapping[str, Any]] = (),
    trials_per_task: Sequence[int] = (),
    infra: Mapping[str, Any] | None = None,
    converged: bool | None = None,
    machine: Mapping[str, Any] | None = None,
    attribution: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The Evaluation Card of one agent × resource profile, as a JSON-ready dict.

    Parameters
    ----------
    record : the group's statistics (:func:`evalnoise.analysis.group_record`), optionally
        with ``agent`` and ``resource_profile`` keys (see :func:`card_key`).
    context : run-level facts (:class:`CardContext`).
    levels : the same statistics per task complexity level, each with a ``level`` key.
    trials_per_task : every task's trial count (e.g. the ``n`` column of the per-task table);
        gives the min/max on the card. Without it the mean n_obs / n_tasks is shown.
    infra : this card's row of the infra table (``infra_error_rate``, ``infra_ci_low``,
        ``infra_ci_high``).
    converged : whether the convergence analysis found the ICC settled (None: not run or
        undefined).
    machine : the manifest's ``machine`` section (:func:`~.health.machine_of`): host, CPU
        model, cgroup version, llama.cpp runtime; shown on the card when given.
    attribution : the group's entry of the attribution summary (``attribution.json``); its
        policy sensitivity becomes the card's ``policy_sensitivity``
        (:func:`evalnoise.report.policy_sensitivity_view.policy_sensitivity_of`). None: not
        computed, no line on the card.

    The record's ``outcomes``, ``health`` and ``crash_signals`` (when present) become the
    card's ``outcomes``, ``health`` and top-level ``valid`` (None: not assessed); its
    ``costs`` (``groups.json``: :func:`evalnoise.costs.combine_costs`), priced at the
    context's ``prices``, the card's ``costs``
    (:func:`evalnoise.report.card_costs.card_costs`).
    """
    missing = [k for k in REQUIRED_KEYS if k not in record]
    if missing and ("group" in missing or health_of(record)["valid"] is not False):
        raise ValueError(f"group record {record.get('group')!r} lacks keys {missing}")
    if missing:
        # An invalid group may have no statistics at all (no trial counted): undefined.
        record = {**dict.fromkeys(missing), "interpretation": "undefined", **record}
    agent, profile = card_key(record, context)
    rec = GroupRecord.from_dict(record)
    conf = context.confidence
    n_tasks = 0 if rec.n_tasks is None else int(rec.n_tasks)
    n_obs = 0 if rec.n_obs is None else int(rec.n_obs)
    counts = sorted(int(t) for t in trials_per_task)
    trials = {
        "n_tasks": n_tasks,
        "n_trials_total": n_obs,
        "per_task_mean": n_obs / n_tasks if n_tasks else None,
        "per_task_min": counts[0] if counts else None,
        "per_task_max": counts[-1] if counts else None,
        "run_seed": context.run_seed,
        "seed_method": context.seed_rule,
    }
    # Without per-task counts only the mean is known; it stands in for the minimum.
    trials_min: float | None = counts[0] if counts else trials["per_task_mean"]
    infra_rate = None if infra is None else _finite(infra.get("infra_error_rate"))
    health = health_of(record)
    card = {
        "schema": "evalnoise.evaluation_card/1",
        "valid": health["valid"],
        "health": health,
        "outcomes": outcomes_of(record),
        # failures of whole tasks (a build that failed, tampering): evalnoise.infra_failures
        "task_failures": list(record.get("task_failures") or []),
        "benchmark": {"name": context.benchmark, "version": context.benchmark_version},
        "agent": {"name": agent, **dict(context.agents.get(agent, {}))},
        "trials": trials,
        "metrics": {
            "confidence": conf,
            # a group that is not a measurement has no accuracy: the reason instead
            "accuracy_withheld": rec.withheld,
            "accuracy": rec.headline,
            "accuracy_ci_low": rec.ci_low,
            "accuracy_ci_high": rec.ci_high,
            "accuracy_se_clustered": rec.se_clustered,
            "icc_variant": ICC_VARIANT,
            "icc": rec.icc,
            "icc_ci_low": rec.icc_ci_low,
            "icc_ci_high": rec.icc_ci_high,
            "icc_se": rec.icc_se,
            "icc_interpretation": rec.interpretation,
            "icc_plugin": rec.icc_plugin,
            "icc_k": rec.icc_k,
            "sigma2_between": rec.sigma2_between,
            "sigma2_within": rec.sigma2_within,
            "between_query_se": between_query_se(record),
            # labelled readings that are not the headline (evalnoise.analysis.failure_readings)
            "readings": (
                None if rec.readings is None else {k: r.to_dict() for k, r in rec.readings.items()}
            ),
            # reliability beyond the mean: pass^k, C_out, the multiverse (None when withheld)
            "pass_k": None if rec.withheld else rec.pass_k,
            "outcome_consistency": None if rec.withheld else rec.outcome_consistency,
            "multiverse": None if rec.withheld else rec.multiverse,
            # the counted trials' action sequences (None when withheld)
            "trajectory_consistency": None if rec.withheld else rec.trajectory_consistency,
        },
        "task_complexity": {
            "level": context.task_level,
            "per_level": _per_level_rows(levels, conf),
        },
        "scoring": dict(context.scoring),
        "resource_profile": {
            "name": profile,
            "settings": (
                dict(context.resource_profiles[profile])
                if profile is not None and profile in context.resource_profiles
                else None
            ),
        },
        "infrastructure": {
            "backend": context.backend,
            "infra_policy": context.infra_policy,
            "infra_error_rate": infra_rate,
            "infra_error_ci_low": None if infra is None else _finite(infra.get("infra_ci_low")),
            "infra_error_ci_high": None if infra is None else _finite(infra.get("infra_ci_high")),
        },
        "limitations": limitations(
            record,
            trials_min=trials_min,
            backend=context.backend,
            infra_error_rate=infra_rate,
            infra_policy=context.infra_policy,
            converged=converged,
        )
        + level_limitations(levels, group_invalid=health["valid"] is False),
        "reporting_line": reporting_line(rec, conf),
        "machine": None if machine is None else dict(machine),
        "judge": None if rec.judge is None else dict(rec.judge),
        "policy_sensitivity": (None if attribution is None else policy_sensitivity_of(attribution)),
        "costs": card_costs(rec.costs, context.prices),
    }
    return jsonable(card)
