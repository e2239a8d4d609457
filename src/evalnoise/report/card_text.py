"""An Evaluation Card in words: its title, banner and the fields of paper Table 4 as text.

:func:`card_fields` turns a card (:func:`evalnoise.report.cards.evaluation_card`) into
(field, value, struck) rows in Table 4's order — benchmark, agent, trials and seeds,
accuracy, ICC, variance components, between-query SE, task complexity, scoring, resource
profile, backend, infra policy and its sensitivity, infra error rate — then health, the
judges, cost and the machine. Every renderer draws these rows: the card's Markdown
(:mod:`evalnoise.report.cards_markdown`), its HTML (:mod:`evalnoise.report.cards_section`)
and the page's summary. On a card whose group is not a measurement of the agent the
statistics (:data:`MEASURED_FIELDS`) are marked struck; readings, cost and health never are.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any

from evalnoise.consistency_text import (
    TRAJECTORIES_NOT_RECORDED,
    reliability_lines,
    trajectory_line,
)
from evalnoise.formatting import fmt, pct
from evalnoise.group_text import readings_text
from evalnoise.outcomes import failed_trials
from evalnoise.report.card_costs import cost_drivers_text, cost_text
from evalnoise.report.health import (
    NOT_A_MEASUREMENT_LABEL,
    banner_text,
    crash_signals_text,
    expected_text,
    status_text,
)
from evalnoise.report.judge_text import judge_text, judges_rows
from evalnoise.report.policy_sensitivity_view import policy_text

__all__ = [
    "MEASURED_FIELDS",
    "card_banner",
    "card_fields",
    "card_note",
    "card_rows",
    "card_title",
]

#: Card fields that are statistics of the trials: struck through on an invalid card.
MEASURED_FIELDS = (
    "Accuracy",
    "ICC",
    "Variance components",
    "Between-query SE",
    "Infra policy sensitivity",
)


def card_title(card: Mapping[str, Any]) -> str:
    """``agent @ resource profile`` (the agent alone when the card names no profile)."""
    profile = card["resource_profile"]["name"]
    return f"{card['agent']['name']}" + (f" @ {profile}" if profile else "")


def card_banner(card: Mapping[str, Any]) -> str | None:
    """ "Not a measurement of the agent: <reasons>" for an invalid card, else None."""
    return banner_text(card.get("health") or {})


def card_note(card: Mapping[str, Any]) -> str | None:
    """The neutral note of a card whose failures were declared as the experiment, else None."""
    return expected_text(card.get("health") or {})


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
        text += "; crash signals: " + crash_signals_text(signals)
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
    failed = failed_trials(outcomes)
    if readings and (
        m.get("accuracy_withheld")
        or failed > 0
        or "verified_as_failures" in (m.get("readings") or {})
    ):
        # labelled readings, never the headline: shown (not struck) also on an invalid card
        rows.insert(4, ("Readings", readings))
    reliability = reliability_lines(
        SimpleNamespace(
            pass_k=m.get("pass_k"),
            outcome_consistency=m.get("outcome_consistency"),
            multiverse=m.get("multiverse"),
            icc=m.get("icc"),
        )
    )
    if reliability:
        # beside the accuracy and ICC they qualify: how reliable beyond the mean
        rows.insert(6, ("Reliability", "; ".join(reliability)))
    trajectories = m.get("trajectory_consistency")
    if trajectories:
        # how the agent got there, after how reliably it did
        text = (
            trajectory_line(SimpleNamespace(**trajectories))
            if trajectories.get("recorded")
            else TRAJECTORIES_NOT_RECORDED
        )
        text = text.removeprefix("trajectories: ").removeprefix("trajectories ")
        rows.insert(7 if reliability else 6, ("Trajectories", text))
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


def card_rows(card: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(field, value) rows of a card in Table 4's order, as plain text; on an invalid card
    the statistics end in "— not a measurement of the agent" (see :func:`card_fields`)."""
    return [
        (k, f"{v} — {NOT_A_MEASUREMENT_LABEL}" if struck else v)
        for k, v, struck in card_fields(card)
    ]
