"""Evaluation Cards (paper Table 4): one per agent × resource profile, as JSON and Markdown.

A card gathers what a reader needs to judge one score: the benchmark and its version; the
agent and its decoding parameters; trials per task and how seeds were made; accuracy with its
CI, ICC(1,1) with its CI and SE, and the between-query SE; per-level rows when per-level
statistics are given; the scoring rules; the resource profile with its guarantee and limit
values; the infra policy, backend and infra error rate; and limitations computed from the
numbers themselves (:func:`limitations`). Every card carries the paper's reporting line
(eq. 11, :func:`evalnoise.group_text.reporting_line`).

Every card also says what became of the group's trials (``outcomes``: ok, crashed, no
answer, timeout, oom_killed, infra_error, unscored, of N trials) and whether its numbers
measure the agent at all (``valid`` and ``health``, see :mod:`evalnoise.report.health`). A
card with ``valid: false`` opens with "Not a measurement of the agent: <reasons>" in every
form, and its statistics are struck through: a group whose trials all crashed scores 0 %,
and that 0 % is not a score. When the run's manifest records the machine (CPU model, cgroup
version, the llama.cpp runtime's CPU features and declared baseline), the card shows it.
When the attribution stage ran, the card says how the group's accuracy moves under each infra
policy (:func:`policy_sensitivity_of`) and whether the declared policy's choice matters.

Every card shows the group's cost drivers (``Cost drivers``: mean container seconds, model
calls, tokens and judge calls per trial, "not reported" where no trial reported one, and how
many trials lacked each) and, with prices in the config (``prices``), what the trials cost
(``Cost``: :func:`evalnoise.costs.estimate_cost`, per trial and in total, a lower bound
when trials lacked a priced driver — they are never priced as 0).

Cards are pure functions of their inputs: no timestamps, keys sorted when serialised.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from evalnoise.costs import DRIVERS, Prices, driver_label, estimate_cost
from evalnoise.formatting import finite_or_none as _finite
from evalnoise.formatting import fmt, jsonable, pct
from evalnoise.group_text import readings_text, reporting_line
from evalnoise.report.health import (
    OUTCOME_HEADERS,
    OUTCOMES,
    banner_text,
    expected_text,
    health_of,
    outcomes_of,
    status_text,
)

__all__ = [
    "ICC_CI_HALF_WIDTH_MAX",
    "ICC_POOR",
    "ICC_SE_MAX",
    "ICC_VARIANT",
    "MEASURED_FIELDS",
    "MIN_TASKS",
    "MIN_TRIALS",
    "CardContext",
    "card_banner",
    "card_costs",
    "card_fields",
    "card_key",
    "card_markdown",
    "card_note",
    "card_rows",
    "card_title",
    "cost_drivers_text",
    "cost_text",
    "evaluation_card",
    "limitations",
    "policy_sensitivity_of",
    "policy_text",
]

#: The ICC every card reports.
ICC_VARIANT = "ICC(1,1), one-way random effects"

#: The paper's precision guideline: SE(ICC) ≤ 0.03, i.e. a 95 % CI of about ± 0.06.
ICC_SE_MAX = 0.03
ICC_CI_HALF_WIDTH_MAX = 0.06
#: The paper finds ICC converges by 8–16 trials for structured tasks (≥ 32 for complex ones).
MIN_TRIALS = 8
#: Koo & Li (2016): ICC below 0.5 is poor reliability.
ICC_POOR = 0.5
#: Below this many tasks, CLT-based intervals for accuracy are unreliable (the position paper
#: "When Not to Rely on the Central Limit Theorem in LLM Evaluation", cited by the paper).
MIN_TASKS = 30

#: Card fields that are statistics of the trials: struck through on an invalid card.
MEASURED_FIELDS = (
    "Accuracy",
    "ICC",
    "Variance components",
    "Between-query SE",
    "Infra policy sensitivity",
)
#: What follows a struck statistic.
NOT_A_MEASUREMENT_LABEL = "not a measurement of the agent"

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


def limitations(
    record: Mapping[str, Any],
    *,
    trials_min: float | None = None,
    backend: str | None = None,
    infra_error_rate: float | None = None,
    infra_policy: str | None = None,
    converged: bool | None = None,
) -> list[str]:
    """Caveats that follow from the numbers of one card, in this order:

    - the group is not a measurement of the agent (its ``health``), with the reasons; or its
      failures were declared as the experiment (``health.expected_failures``);
    - ICC imprecise: SE(ICC) > :data:`ICC_SE_MAX` or CI half-width > :data:`ICC_CI_HALF_WIDTH_MAX`
      (the paper's guideline);
    - fewer than :data:`MIN_TRIALS` trials per task: ICC may not have converged;
    - convergence analysis: the mean ICC had not settled before using all trials;
    - ICC < :data:`ICC_POOR` (Koo & Li "poor"): single-run results are unreliable;
    - a negative σ²_between estimate (MSB < MSW);
    - fewer than :data:`MIN_TASKS` tasks;
    - a non-zero infrastructure error rate, with the policy that decided how it counts;
    - the ``local`` backend (weaker isolation than a container);
    - the statistics' own warnings.

    Per-level caveats are added by :func:`evaluation_card`.
    """
    out: list[str] = []
    health = health_of(record)
    banner = banner_text(health)
    if banner is not None:
        out.append(banner[0].lower() + banner[1:])
    expected = expected_text(health)
    if expected is not None:
        out.append(expected[0].lower() + expected[1:])
    icc = _finite(record.get("icc"))
    se = _finite(record.get("icc_se"))
    low, high = _finite(record.get("icc_ci_low")), _finite(record.get("icc_ci_high"))
    if icc is None:
        out.append("ICC undefined for these data (see warnings): consistency unknown")
    else:
        half = (high - low) / 2 if low is not None and high is not None else None
        too_wide = half is not None and half > ICC_CI_HALF_WIDTH_MAX
        too_uncertain = se is not None and se > ICC_SE_MAX
        if too_wide or too_uncertain:
            parts = []
            if se is not None:
                parts.append(f"SE {se:.3f}")
            if half is not None:
                parts.append(f"CI ± {half:.3f}")
            out.append(
                f"ICC CI wider than ± {ICC_CI_HALF_WIDTH_MAX:g} ({', '.join(parts)}; "
                f"guideline SE ≤ {ICC_SE_MAX:g}): more tasks or trials needed for a precise ICC"
            )
    if trials_min is not None and trials_min < MIN_TRIALS:
        out.append(
            f"fewer than {MIN_TRIALS} trials per task ({fmt(trials_min, 'g')}): "
            "ICC may not have converged"
        )
    if converged is False:
        out.append(
            "convergence analysis: the mean ICC over subsamples had not settled within "
            "tolerance before all trials were used"
        )
    if icc is not None and icc < ICC_POOR:
        out.append(
            f"ICC poor ({icc:.3f} < {ICC_POOR:g}): single-run results unreliable; "
            "heavier resampling needed"
        )
    s2b = _finite(record.get("sigma2_between"))
    if s2b is not None and s2b < 0:
        out.append(
            f"negative σ²_between estimate ({s2b:.4g}): tasks do not differ more than trial "
            "noise (MSB < MSW); ICC is negative"
        )
    n_tasks = record.get("n_tasks")
    if n_tasks is not None and int(n_tasks) < MIN_TASKS:
        out.append(
            f"small sample: {int(n_tasks)} tasks (< {MIN_TASKS}); CLT-based CIs of accuracy "
            "may be too narrow"
        )
    rate = _finite(infra_error_rate)
    if rate is not None and rate > 0:
        how = f" (infra policy: {infra_policy})" if infra_policy else ""
        out.append(f"{pct(rate)} of trials ended in an infrastructure failure{how}")
    if backend == "local":
        out.append(
            "local backend: weaker isolation (host filesystem and network); no CPU limit and "
            "no memory guarantee, memory capped as address space; OOM kills not observable"
        )
    for warning in record.get("warnings") or ():
        if warning not in out:
            out.append(str(warning))
    return out


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


def _level_limitations(
    levels: Sequence[Mapping[str, Any]], *, group_invalid: bool = False
) -> list[str]:
    """Levels that are no measurement (unless the whole group is not), and levels whose own
    ICC is poor or undefined: the paper's "highly stochastic level"."""
    out = []
    for rec in sorted(levels, key=lambda r: str(r["level"])):
        banner = banner_text(health_of(rec))
        if banner is not None and not group_invalid:
            out.append(f"level {rec['level']}: {banner[0].lower() + banner[1:]}")
        icc = _finite(rec.get("icc"))
        if icc is None:
            out.append(f"level {rec['level']}: ICC undefined")
        elif icc < ICC_POOR:
            out.append(
                f"level {rec['level']}: highly stochastic (ICC {icc:.3f} < {ICC_POOR:g}); "
                "its results are unreliable from a single run"
            )
    return out


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
        (:func:`policy_sensitivity_of`). None: not computed, no line on the card.

    The record's ``outcomes``, ``health`` and ``crash_signals`` (when present) become the
    card's ``outcomes``, ``health`` and top-level ``valid`` (None: not assessed); its
    ``costs`` (``groups.json``: :func:`evalnoise.costs.combine_costs`), priced at the
    context's ``prices``, the card's ``costs`` (:func:`card_costs`).
    """
    missing = [k for k in REQUIRED_KEYS if k not in record]
    if missing and ("group" in missing or health_of(record)["valid"] is not False):
        raise ValueError(f"group record {record.get('group')!r} lacks keys {missing}")
    if missing:
        # An invalid group may have no statistics at all (no trial counted): undefined.
        record = {**dict.fromkeys(missing), "interpretation": "undefined", **record}
    agent, profile = card_key(record, context)
    conf = context.confidence
    n_tasks = 0 if record["n_tasks"] is None else int(record["n_tasks"])
    n_obs = 0 if record["n_obs"] is None else int(record["n_obs"])
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
        "benchmark": {"name": context.benchmark, "version": context.benchmark_version},
        "agent": {"name": agent, **dict(context.agents.get(agent, {}))},
        "trials": trials,
        "metrics": {
            "confidence": conf,
            # a group that is not a measurement has no accuracy: the reason instead
            "accuracy_withheld": record.get("withheld"),
            "accuracy": record["mean"],
            "accuracy_ci_low": record["ci_low"],
            "accuracy_ci_high": record["ci_high"],
            "accuracy_se_clustered": record["se_clustered"],
            "icc_variant": ICC_VARIANT,
            "icc": record["icc"],
            "icc_ci_low": record["icc_ci_low"],
            "icc_ci_high": record["icc_ci_high"],
            "icc_se": record.get("icc_se"),
            "icc_interpretation": record["interpretation"],
            "icc_plugin": record.get("icc_plugin"),
            "icc_k": record.get("icc_k"),
            "sigma2_between": record.get("sigma2_between"),
            "sigma2_within": record.get("sigma2_within"),
            "between_query_se": between_query_se(record),
            # labelled readings that are not the headline (evalnoise.analysis.failure_readings)
            "readings": None if record.get("readings") is None else dict(record["readings"]),
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
        + _level_limitations(levels, group_invalid=health["valid"] is False),
        "reporting_line": reporting_line(dict(record), conf),
        "machine": None if machine is None else dict(machine),
        "judge": None if record.get("judge") is None else dict(record["judge"]),
        "policy_sensitivity": (None if attribution is None else policy_sensitivity_of(attribution)),
        "costs": card_costs(record.get("costs"), context.prices),
    }
    return jsonable(card)


def card_costs(
    costs: Mapping[str, Any] | None, prices: Mapping[str, Any] | Prices | None
) -> dict[str, Any]:
    """A card's ``costs``: the group's cost drivers as recorded (``drivers``: name →
    ``{n, missing, total, mean}`` per attempt, None when the input has no cost record),
    ``trials`` (attempts), the ``prices`` that apply (None: none configured) and the
    ``estimate`` (:func:`evalnoise.costs.estimate_cost`: per trial = Σ_k p_k · mean_k,
    total = Σ_k p_k · total_k; None without prices or drivers)."""
    prices = prices if isinstance(prices, Prices) else Prices.from_config(prices)
    drivers = None if not costs else costs.get("drivers")
    trials = None if not costs else costs.get("trials")
    estimate = None
    if drivers is not None and prices.priced:
        found = estimate_cost(drivers, int(trials or 0), prices)
        estimate = None if found is None else found.to_dict()
    return {
        "trials": trials,
        "drivers": None if drivers is None else {k: dict(v) for k, v in drivers.items()},
        "prices": prices.to_dict() if prices.priced else None,
        "estimate": estimate,
    }


def policy_sensitivity_of(attribution: Mapping[str, Any]) -> dict[str, Any]:
    """The policy-sensitivity part of a group's attribution summary, for cards and the
    report: per policy (as incorrect, exclude, retry) the accuracy and its CI, whether it
    applies, and ``moved`` — it differs from the reference (as incorrect) by more than the
    reference CI's half-width; ``moves_result`` is the same for the largest difference
    between any two policies. A group the stage could not analyse has ``not_computed``."""
    if "not_computed" in attribution or "policy" not in attribution:
        why = attribution.get("not_computed") or "no policy-sensitivity record for this group"
        return {"not_computed": str(why)}
    try:
        return _policy_sensitivity(attribution)
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        # a record that parses but does not hold what the stage writes: said, never raised
        return {"not_computed": f"invalid attribution record ({type(exc).__name__}: {exc})"}


def _policy_sensitivity(attribution: Mapping[str, Any]) -> dict[str, Any]:
    half = _finite(attribution.get("policy_half_width"))
    rows = list(attribution["policy"])
    ref = _finite(rows[0].get("mean")) if rows else None
    policies = []
    for row in rows:
        mean = _finite(row.get("mean"))
        moved = (
            bool(row.get("applicable")) and None not in (mean, ref, half) and abs(mean - ref) > half  # type: ignore[operator]
        )
        policies.append(
            {
                "policy": row["policy"],
                "applicable": bool(row.get("applicable")),
                "accuracy": mean,
                "ci_low": _finite(row.get("ci_low")),
                "ci_high": _finite(row.get("ci_high")),
                "n_counted": row.get("n_counted"),
                "n_excluded": row.get("n_excluded"),
                "note": row.get("note"),
                "moved": moved,
            }
        )
    return {
        "not_computed": None,
        "declared_policy": attribution.get("declared_policy"),
        "policies": policies,
        "moves_result": bool(attribution.get("policy_moves_result")),
        "max_shift": _finite(attribution.get("policy_max_shift")),
        "half_width": half,
    }


def policy_text(ps: Mapping[str, Any]) -> str:
    """One line: accuracy [CI] under each infra policy, and whether the choice moves it."""
    if ps.get("not_computed"):
        return f"not computed ({ps['not_computed']})"
    parts = []
    for row in ps["policies"]:
        name = str(row["policy"]).replace("_", " ")
        if not row["applicable"]:
            parts.append(f"{name} n/a")
        else:
            parts.append(
                f"{name} {pct(row['accuracy'])} [{pct(row['ci_low'])}, {pct(row['ci_high'])}]"
            )
    shift, half = ps.get("max_shift"), ps.get("half_width")
    size = f"largest shift {_points(shift)} vs CI half-width {_points(half)}"
    verdict = (
        f"YES — the policy moves the result ({size})" if ps["moves_result"] else f"no ({size})"
    )
    return f"{'; '.join(parts)}; the choice moves the result: {verdict}"


def _points(value: Any) -> str:
    f = _finite(value)
    return "—" if f is None else f"{100 * f:.1f} pts"


def _cell(value: Any) -> str:
    """A Markdown table cell: pipes escaped, newlines flattened."""
    return str(value).replace("|", "\\|").replace("\n", " ")


_FACTORS = {
    "memory": ("memory_guarantee_factor", "memory_limit_factor"),
    "CPU": ("cpu_guarantee_factor", "cpu_limit_factor"),
}


def _resource_profile_text(settings: Mapping[str, Any]) -> str:
    """Guarantee and hard limit as multiples of each task's declared spec.

    A profile holding the runner's factor keys reads as "memory: guarantee 1× the task's
    spec, hard limit 3×; ..."; anything else falls back to its key: value listing.
    """
    known = {k for pair in _FACTORS.values() for k in pair} | {"time_limit_factor"}
    if not known & set(settings):
        return _mapping_text(settings)

    def times(key: str, unset: str) -> str:
        if key not in settings:
            return "not set"
        value = settings[key]
        return unset if value is None else f"{float(value):g}×"

    parts = [
        f"{label}: guarantee {times(g, 'none')}, hard limit {times(h, 'none (uncapped)')}"
        for label, (g, h) in _FACTORS.items()
        if g in settings or h in settings
    ]
    if "time_limit_factor" in settings:
        parts.append(f"time limit {times('time_limit_factor', 'none')}")
    extra = {k: v for k, v in settings.items() if k not in known}
    text = "multiples of each task's declared spec — " + "; ".join(parts)
    return text + (f" ({_mapping_text(extra)})" if extra else "")


def _mapping_text(mapping: Mapping[str, Any] | None, *, none_as: str = "—") -> str:
    if not mapping:
        return none_as
    return ", ".join(f"{k}: {_value_text(k, v)}" for k, v in sorted(mapping.items()))


def _value_text(key: str, value: Any) -> str:
    if value is None:
        return "uncapped" if "limit" in key else "—"
    if isinstance(value, float):
        return fmt(value, "g")
    if isinstance(value, Mapping):
        return "{" + _mapping_text(value) + "}"
    return str(value)


def _machine_text(machine: Mapping[str, Any]) -> str:
    """Host, CPU model, cgroup version and the llama.cpp runtime on one line."""
    parts = [
        f"host {machine.get('host') or 'not recorded'}",
        f"CPU {machine.get('cpu_model') or 'not recorded'}",
        f"cgroup {machine.get('cgroup_version') or 'not recorded'}",
    ]
    llama = machine.get("llama_cpp")
    if llama:
        text = f"llama.cpp runtime {llama.get('version') or 'version not recorded'}"
        if llama.get("wheel_key"):
            text += f" (wheel {llama['wheel_key']})"
        text += f", declared CPU baseline: {llama.get('cpu_baseline') or 'not recorded'}"
        text += f", CPU features: {llama.get('system_info') or 'not recorded'}"
        parts.append(text)
    else:
        parts.append("no llama.cpp runtime recorded")
    return "; ".join(parts)


def _health_text(card: Mapping[str, Any]) -> str:
    health = card.get("health") or {"valid": None}
    text = status_text(health)
    rate = health.get("failure_rate")
    if rate is not None:
        text += f" — {pct(rate)} of trials did not end ok with a score"
    signals = health.get("crash_signals") or {}
    if signals:
        text += "; crash signals: " + ", ".join(f"{k} × {v}" for k, v in signals.items())
    return text


def card_fields(card: Mapping[str, Any]) -> list[tuple[str, str, bool]]:
    """(field, value, struck) rows of a card in Table 4's order, as plain text.

    ``struck`` is True for the statistics (:data:`MEASURED_FIELDS`) of a card whose group is
    not a measurement of the agent (``valid`` false): renderers strike them through and say
    so. After Table 4's fields come ``Health`` and, when the manifest recorded it,
    ``Machine``.
    """
    m, t, inf = card["metrics"], card["trials"], card["infrastructure"]
    conf = f"{m['confidence']:.0%}"
    bench = card["benchmark"]
    agent = dict(card["agent"])
    name = agent.pop("name")
    if t["per_task_min"] is None:
        per_task = f"{fmt(t['per_task_mean'], '.3g')} (mean)"
    elif t["per_task_min"] == t["per_task_max"]:
        per_task = str(t["per_task_min"])
    else:
        per_task = (
            f"{t['per_task_min']}–{t['per_task_max']} (mean {fmt(t['per_task_mean'], '.3g')})"
        )
    seeds = t["seed_method"] or "not recorded"
    if t["run_seed"] is not None:
        seeds = f"run seed {t['run_seed']}; {seeds}"
    level = card["task_complexity"]["level"]
    per_level = card["task_complexity"]["per_level"]
    if per_level:
        level_text = (level + "; " if level else "") + "per level below"
    else:
        level_text = level or "not stratified"
    rp = card["resource_profile"]
    rate = inf["infra_error_rate"]
    rate_text = "not measured" if rate is None else pct(rate)
    if rate is not None and inf["infra_error_ci_low"] is not None:
        rate_text += (
            f" ({conf} CI [{pct(inf['infra_error_ci_low'])}, {pct(inf['infra_error_ci_high'])}])"
        )
    rows = [
        ("Benchmark", f"{bench['name']}" + (f" ({bench['version']})" if bench["version"] else "")),
        ("Agent", name + (f" — {_mapping_text(agent)}" if agent else "")),
        (
            "Trials & seeds",
            f"{per_task} trials per task × {t['n_tasks']} tasks = {t['n_trials_total']} trials; "
            f"seeds: {seeds}",
        ),
        (
            "Accuracy",
            f"none: {m['accuracy_withheld']}"
            if m.get("accuracy_withheld")
            else f"{pct(m['accuracy'])} ({conf} CI [{pct(m['accuracy_ci_low'])}, "
            f"{pct(m['accuracy_ci_high'])}], task-clustered SE {fmt(m['accuracy_se_clustered'])})",
        ),
        (
            "ICC",
            f"{fmt(m['icc'])} ({m['icc_variant']}; {conf} CI [{fmt(m['icc_ci_low'])}, "
            f"{fmt(m['icc_ci_high'])}], SE {fmt(m['icc_se'])}; {m['icc_interpretation']})",
        ),
        (
            "Variance components",
            f"σ²_between {fmt(m['sigma2_between'], '.4g')}, σ²_within "
            f"{fmt(m['sigma2_within'], '.4g')}; plug-in ICC (paper eq. 6–7) {fmt(m['icc_plugin'])}",
        ),
        ("Between-query SE", fmt(m["between_query_se"])),
        ("Task complexity level", level_text),
        ("Scoring details", _mapping_text(card["scoring"], none_as="not recorded")),
        (
            "Resource profile",
            f"{rp['name'] or 'not recorded'}"
            + (f" — {_resource_profile_text(rp['settings'])}" if rp["settings"] else ""),
        ),
        ("Backend", inf["backend"] or "not recorded"),
        ("Infra policy", inf["infra_policy"]),
        ("Infra error rate", rate_text),
        ("Health", _health_text(card)),
    ]
    readings = readings_text(m.get("readings"))
    outcomes = card.get("outcomes") or {}
    failed = (
        (outcomes.get("trials") or 0)
        - (outcomes.get("ok") or 0)
        - (outcomes.get("unscored") or 0)
        - (outcomes.get("verifier_error") or 0)
    )
    if readings and (m.get("accuracy_withheld") or failed > 0):
        # labelled readings, never the headline: shown (not struck) also on an invalid card
        rows.insert(4, ("Readings", readings))
    if card.get("policy_sensitivity"):
        # beside the policy it qualifies, before Health
        rows.insert(
            len(rows) - 1, ("Infra policy sensitivity", policy_text(card["policy_sensitivity"]))
        )
    if card.get("judge"):
        rows.append(("Judge vs reference", judge_text(card["judge"], conf)))
        rows.extend(judges_rows(card["judge"], conf))
    # cost is no statistic of the agent's quality: never struck, also on an invalid card
    costs = card.get("costs") or {}
    rows.append(("Cost drivers", cost_drivers_text(costs)))
    rows.append(("Cost", cost_text(costs)))
    if card.get("machine"):
        rows.append(("Machine", _machine_text(card["machine"])))
    invalid = card.get("valid") is False
    # a withheld accuracy is no number to strike: its value says why there is none
    withheld = bool(m.get("accuracy_withheld"))
    return [
        (k, v, invalid and k in MEASURED_FIELDS and not (withheld and k == "Accuracy"))
        for k, v in rows
    ]


def _amount(value: float | None, currency: str | None) -> str:
    if value is None:
        return "unknown"
    text = f"{value:,.2f}" if abs(value) >= 1 else f"{value:.3g}"
    return f"{text} {currency}" if currency else f"{text} (no currency given)"


def _quantity(value: Any) -> str:
    f = _finite(value)
    if f is None:
        return "—"
    return f"{f:,.0f}" if abs(f) >= 1000 else f"{f:.3g}"


def _per(per: float) -> str:
    return "per 1M" if per == 1e6 else "each"


def cost_drivers_text(costs: Mapping[str, Any]) -> str:
    """The mean of each cost driver per trial attempt, "not reported" where no attempt
    reported it, and how many attempts lacked it where some did."""
    drivers = costs.get("drivers")
    if drivers is None:
        return "not recorded (these results predate cost accounting)"
    trials = costs.get("trials")
    parts = []
    for driver in DRIVERS:
        d = drivers.get(driver.name)
        if d is None:
            continue
        n, missing = int(d.get("n") or 0), int(d.get("missing") or 0)
        if not n:
            parts.append(f"{driver.label} not reported")
            continue
        text = f"{driver.label} {_quantity(d.get('mean'))}"
        if missing:
            text += f" (not reported by {missing} of {n + missing})"
        parts.append(text)
    if not any(name.startswith("judge_") for name in drivers):
        parts.append("no LLM judge")
    # one fixed opening for every measured cost line ("per trial attempt"): what a card
    # measured of the run, next to the statistics that do not depend on it
    return f"per trial attempt (mean of {trials}): " + "; ".join(parts)


def cost_text(costs: Mapping[str, Any]) -> str:
    """What the trials cost at the configured prices: per trial, in total over every
    attempt, the prices applied, and what could not be priced (never as 0)."""
    prices, estimate = costs.get("prices"), costs.get("estimate")
    if prices is None:
        return "not priced (no prices in the config section prices)"
    if estimate is None:
        return "not computable: no cost drivers recorded"
    cur = estimate.get("currency")
    lines = estimate.get("lines") or []
    if not lines:
        return "no price applies to this group: " + "; ".join(
            _not_applied(key) for key in estimate.get("not_applicable") or ()
        )
    # a total over the trials that reported the priced drivers: a lower bound when some
    # trials did not (those are missing, not free)
    bound = "" if estimate.get("complete") or estimate.get("total") is None else "at least "
    text = (
        f"per trial attempt {_amount(estimate.get('per_trial'), cur)}; total {bound}"
        f"{_amount(estimate.get('total'), cur)} over {estimate.get('trials')} attempts"
    )
    text += "; prices: " + ", ".join(
        f"{driver_label(line['driver'])} {fmt(line['price'], 'g')} {_per(line['per'])}"
        for line in lines
    )
    missing = estimate.get("missing") or {}
    if missing:
        text += "; not priced where not reported (total is a lower bound): " + ", ".join(
            f"{driver_label(name)} missing in {count} of {estimate.get('trials')}"
            for name, count in missing.items()
        )
    for key in estimate.get("not_applicable") or ():
        text += f"; {_not_applied(key)}"
    return text


def _not_applied(price_key: str) -> str:
    if price_key == "per_judge_call":
        return "per_judge_call not applied: no LLM judge scored these trials"
    return f"{price_key} not applied: its driver is not in this group's record"


def _judged_text(j: Mapping[str, Any]) -> str:
    """``parsed 100.0% of 96`` or, with unjudged trials, ``16 of 96 UNJUDGED (16 calls
    failed, 0 replies unparseable); parsed 100.0% of the 80 replies``."""
    sent, unjudged = j.get("sent"), j.get("unjudged") or 0
    if not unjudged:
        return f"parsed {pct(j.get('parse_rate'))} of {sent}"
    failed, unparsed = j.get("call_failures"), j.get("unparsed")
    replies = None if failed is None or sent is None else sent - failed
    split = (
        ""
        if failed is None
        else f" ({failed} call{'s' if failed != 1 else ''} failed, {unparsed} "
        f"repl{'ies' if unparsed != 1 else 'y'} unparseable)"
    )
    parsed = f"parsed {pct(j.get('parse_rate'))} of " + (
        f"the {replies} replies" if replies is not None else f"{sent}"
    )
    return f"{unjudged} of {sent} UNJUDGED{split}; {parsed}"


def judge_text(j: Mapping[str, Any], conf: str) -> str:
    """The LLM judge beside the reference scorer: its accuracy, parse rate, kappa against
    the reference with its CI, error rates, and its share of the score variance."""
    samples = j.get("samples") or 1
    # with several judges, the line of the first one names it (judges_rows: the others)
    name = f" {j.get('name')}" if len(j.get("judges") or ()) > 1 else ""
    text = (
        f"judge{name} ({j.get('mode')}, {samples} sample{'s' if samples != 1 else ''} per trial): "
        f"accuracy {pct(j.get('accuracy'))} ({conf} CI [{pct(j.get('ci_low'))}, "
        f"{pct(j.get('ci_high'))}]); {_judged_text(j)}; "
        f"κ = {fmt(j.get('kappa'), '.2f')} [{fmt(j.get('kappa_ci_low'), '.2f')}, "
        f"{fmt(j.get('kappa_ci_high'), '.2f')}], false accept {pct(j.get('false_accept_rate'))}, "
        f"false reject {pct(j.get('false_reject_rate'))}"
    )
    if j.get("share_judge") is not None:
        text += (
            f"; variance shares task {fmt(j.get('share_task'), '.2f')} / trial "
            f"{fmt(j.get('share_trial'), '.2f')} / judge {fmt(j.get('share_judge'), '.2f')}"
        )
    if j.get("degenerate"):
        text += f"; DEGENERATE: {j.get('degenerate_reason')}"
    return text


def judges_rows(j: Mapping[str, Any], conf: str) -> list[tuple[str, str]]:
    """With several judges, beside :func:`judge_text` (the first judge's line): one
    ``("Judge NAME", text)`` per other judge — its κ against the reference with its interval,
    false accept and reject rates, parse rate, accuracy by it — and ``("Judges as a facet",
    text)``: the judges' variance components with their intervals and the best judge. Empty
    with one judge."""
    judges = j.get("judges") or []
    if len(judges) < 2:
        return []
    rows = []
    for r in judges[1:]:
        how = f"rule {r.get('rule')}" if r.get("kind") == "rule" else r.get("mode")
        samples = r.get("samples") or 1
        text = (
            f"{how}, {samples} sample{'s' if samples != 1 else ''} per trial: "
            f"κ = {fmt(r.get('kappa'), '.2f')} [{fmt(r.get('kappa_ci_low'), '.2f')}, "
            f"{fmt(r.get('kappa_ci_high'), '.2f')}], false accept "
            f"{pct(r.get('false_accept_rate'))}, false reject {pct(r.get('false_reject_rate'))}; "
            f"{_judged_text(r)}; accuracy {pct(r.get('accuracy'))}"
        )
        if r.get("same_as_reference"):
            text += " (the reference scorer's own rule: agrees by construction)"
        if r.get("degenerate"):
            text += "; DEGENERATE"
        rows.append((f"Judge {r['name']}", text))
    facet = j.get("judge_facet") or {}
    parts = [
        f"σ²({c['component']}) {fmt(c.get('sigma2'), '.4f')} [{fmt(c.get('ci_low'), '.4f')}, "
        f"{fmt(c.get('ci_high'), '.4f')}]"
        for c in facet.get("components") or []
    ]
    text = f"{len(judges)} judges; " + (
        ", ".join(parts) + f" ({facet.get('method')}, {conf} {facet.get('ci_method')} "
        f"intervals); judges' share {fmt(facet.get('share_judges_estimate'), '.2f')}"
        + ("" if facet.get("detected_judges") else ", not detected")
        if parts
        else "no variance components (too few judged trials)"
    )
    best = next((r for r in judges if r["name"] == j.get("best_judge")), None)
    if best is not None:
        text += f"; best judge {best['name']} (κ = {fmt(best.get('kappa'), '.2f')})"
    rows.append(("Judges as a facet", text))
    return rows


def card_rows(card: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(field, value) rows of a card in Table 4's order, as plain text; on an invalid card
    the statistics end in "— not a measurement of the agent" (see :func:`card_fields`)."""
    return [
        (k, f"{v} — {NOT_A_MEASUREMENT_LABEL}" if struck else v)
        for k, v, struck in card_fields(card)
    ]


def card_title(card: Mapping[str, Any]) -> str:
    profile = card["resource_profile"]["name"]
    return f"{card['agent']['name']}" + (f" @ {profile}" if profile else "")


def card_banner(card: Mapping[str, Any]) -> str | None:
    """ "Not a measurement of the agent: <reasons>" for an invalid card, else None."""
    return banner_text(card.get("health") or {})


def card_note(card: Mapping[str, Any]) -> str | None:
    """The neutral note of a card whose failures were declared as the experiment, else None."""
    return expected_text(card.get("health") or {})


#: Under every outcome table: what the outcomes mean.
OUTCOME_LEGEND = (
    "crashed and no answer are the two kinds of agent_error (crashed: killed by a fault "
    "signal); unscored: trials that ended ok but the scorer could not decide (judge_error); "
    "ok: answered and scored. The outcomes partition the trials."
)


def _md_outcomes(card: Mapping[str, Any]) -> list[str]:
    outcomes = card.get("outcomes")
    lines = ["", "## Outcomes", ""]
    if outcomes is None:
        return [*lines, "Outcome counts not recorded (the input predates outcome accounting)."]
    header = [OUTCOME_HEADERS[k] for k in OUTCOMES] + ["trials", "attempts"]
    values = [outcomes.get(k) for k in (*OUTCOMES, "trials", "attempts")]
    lines += [
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
        "| " + " | ".join("?" if v is None else str(v) for v in values) + " |",
        "",
        OUTCOME_LEGEND,
    ]
    signals = (card.get("health") or {}).get("crash_signals") or {}
    if signals:
        lines += ["", "Crash signals: " + ", ".join(f"{k} × {v}" for k, v in signals.items())]
    return lines


def card_markdown(card: Mapping[str, Any]) -> str:
    """The card as Markdown: [banner,] reporting line, the Table 4 fields, outcomes,
    per-level rows, limitations.

    An invalid card opens with a "Not a measurement of the agent" block quote and strikes
    its reporting line and statistics through; an expected-failure card opens with a
    neutral note.
    """
    lines = [f"# Evaluation Card: {card_title(card)}", ""]
    banner, note = card_banner(card), card_note(card)
    if banner is not None:
        head, _, reasons = banner.partition(": ")
        lines += [f"> **{head}:** {reasons}", ""]
    elif note is not None:
        lines += [f"> **Note:** {note}", ""]
    if card.get("valid") is False and not card["metrics"].get("accuracy_withheld"):
        lines += [
            f"~~`{card['reporting_line']}`~~ — **{NOT_A_MEASUREMENT_LABEL}**",
            "",
        ]
    else:
        lines += ["```", card["reporting_line"], "```", ""]
    lines += ["| Field | Value |", "|---|---|"]
    for k, v, struck in card_fields(card):
        value = f"~~{_cell(v)}~~ — **{NOT_A_MEASUREMENT_LABEL}**" if struck else _cell(v)
        lines.append(f"| {_cell(k)} | {value} |")
    lines += _md_outcomes(card)
    per_level = card["task_complexity"]["per_level"]
    if per_level:
        conf = f"{card['metrics']['confidence']:.0%}"
        lines += [
            "",
            "## Per task complexity level",
            "",
            f"| Level | Tasks | Accuracy ({conf} CI) | ICC ({conf} CI) | SE(ICC) "
            "| Between-query SE |",
            "|---|---|---|---|---|---|",
        ]
        for row in per_level:
            acc = f"{pct(row['accuracy'])} [{pct(row['ci_low'])}, {pct(row['ci_high'])}]"
            if row.get("valid") is False or card.get("valid") is False:
                acc = f"~~{acc}~~ {NOT_A_MEASUREMENT_LABEL}"
            lines.append(
                f"| {_cell(row['level'])} | {row['n_tasks']} | {acc} | {fmt(row['icc'])} "
                f"[{fmt(row['icc_ci_low'])}, {fmt(row['icc_ci_high'])}] | "
                f"{fmt(row['icc_se'])} | {fmt(row['between_query_se'])} |"
            )
    lines += ["", "## Limitations", ""]
    lines += [f"- {item}" for item in card["limitations"]] or ["- none detected"]
    return "\n".join(lines) + "\n"
