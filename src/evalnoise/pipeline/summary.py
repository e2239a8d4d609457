"""The summarize step: every group and pair of the run in one place, and the run's text.

- :func:`summarize` — every group and pair, Holm-adjusted within the run's family of
  comparisons; the tables the report and DVC plots read; ``summary.txt``; ``metrics.json``
  (:func:`metrics`).
- :func:`health_problems` — what makes the run fail (rule ``check``).
- :func:`judge_summary`, :func:`judge_line` — a group's judges as the summary, cards and
  metrics show them.
- :func:`summary_lines` — an adaptive run's lines: why each unit stopped where it did.

The numbers come from the numeric stages (:mod:`evalnoise.pipeline.stages`, rule
``analyze_group``; ``compare``; ``attribution``); this module only gathers them and words
them, so its rules carry their own ``code_version("summary")``: rewording a line here or
a judge's line (:mod:`evalnoise.report.judge_text`, shared with the cards) reruns the
summary, never a statistic.
Outputs are deterministic (sorted, no timestamps), so reruns do not churn DVC hashes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import pandas as pd

from evalnoise.analysis import holm_comparisons
from evalnoise.attribution.text import attribution_lines, resource_line
from evalnoise.consistency_text import reliability_lines
from evalnoise.group_records import GroupMetrics, GroupRecord
from evalnoise.group_text import readings_text, reporting_line
from evalnoise.infra_failures import failure_lines
from evalnoise.outcomes import OUTCOMES, failed_trials, outcome_line
from evalnoise.pipeline.stages import BUDGET_COLUMNS, CONVERGENCE_TABLE_COLUMNS

__all__ = [
    "RunSummary",
    "failed_trials",
    "health_problems",
    "judge_line",
    "judge_summary",
    "metrics",
    "profile_columns",
    "summarize",
    "summary_lines",
    "with_judge",
    "withheld_judge",
]


def profile_columns() -> tuple[str, ...]:
    """The per-resource-profile table's columns (accuracy and infra error rate per agent ×
    profile): the attempts of every infrastructure status
    (:func:`evalnoise.outcome_table.attempt_columns`) and every outcome's count, from the
    outcome table."""
    from evalnoise.outcome_table import attempt_columns

    return (
        "resource_profile",
        "agent",
        "group",
        "accuracy",
        "ci_low",
        "ci_high",
        "icc",
        "infra_error_rate",
        "infra_ci_low",
        "infra_ci_high",
        "trials",
        "attempts",
        "counted",
        "excluded",
        "unscored",
        *attempt_columns(),
        *OUTCOMES,
        "valid",
    )


def _holm(records: list[dict[str, Any]]) -> None:
    """Holm-adjust the paired t's and McNemar's p-values over the run's whole family of
    comparisons (every pair that was compared, agents and resource profiles together): the run
    asks all of these questions at once, so the family-wise error is controlled over all of
    them (:func:`evalnoise.analysis.holm_comparisons`)."""
    holm_comparisons(records)


def _profile_row(stats: Mapping[str, Any], record: GroupRecord) -> dict[str, Any]:
    from evalnoise.outcome_table import attempt_columns

    infra = stats["infra"]
    return {
        "resource_profile": stats["resource_profile"],
        "agent": stats["agent"],
        "group": stats["group"],
        "accuracy": record.headline,
        "ci_low": record.ci_low,
        "ci_high": record.ci_high,
        "icc": record.icc,
        "infra_error_rate": infra["infra_error_rate_attempts"],
        "infra_ci_low": infra["infra_ci_low"],
        "infra_ci_high": infra["infra_ci_high"],
        "trials": infra["trials"],
        "attempts": infra["attempts"],
        "counted": infra["counted"],
        "excluded": infra["excluded"],
        "unscored": infra["unscored"],
        **{name: infra[name] for name in attempt_columns()},
        **{name: stats["outcomes"][name] for name in OUTCOMES},
        "valid": stats["health"]["valid"],
    }


def health_problems(stats: Sequence[Mapping[str, Any]]) -> list[str]:
    """One line per group that is not a measurement of the agent, and per reason a group is
    incomplete (unscored or unjudged trials: a changed denominator is never silent); empty
    when all is well."""
    problems = []
    for s in stats:
        health, outcomes = s["health"], s["outcomes"]
        if not health["valid"]:
            problems.append(
                f"{s['group']}: NOT A MEASUREMENT OF THE AGENT — " + "; ".join(health["reasons"])
            )
        incomplete = health.get("incomplete")
        if incomplete is None and outcomes.get("unscored"):  # a record from before 'incomplete'
            incomplete = [f"{outcomes['unscored']} of {outcomes['trials']} trials unscored"]
        problems.extend(f"{s['group']}: {reason}" for reason in incomplete or ())
    return problems


def with_judge(stats: Mapping[str, Any], judged: Mapping[str, Any] | None) -> dict[str, Any]:
    """A group's stats with its judge stage's verdicts counted: ``outcomes["unjudged"]``
    (trials the judge left without a verdict) and the health that follows
    (:func:`evalnoise.outcomes.assess_health`: incomplete while any is unjudged)."""
    if judged is None:
        return dict(stats)
    from evalnoise.outcomes import Health, assess_health

    outcomes = {**stats["outcomes"], "unjudged": int(judged.get("unjudged") or 0)}
    old = stats["health"]
    health = assess_health(outcomes, expected=bool(old.get("expected")))
    merged = Health(
        valid=bool(old["valid"]),
        failure_rate=float(old["failure_rate"]),
        reasons=tuple(old["reasons"]),
        expected=bool(old.get("expected")),
        incomplete=health.incomplete,
    ).to_dict()
    overall = {**stats["overall"], "outcomes": outcomes, "health": merged}
    return {**stats, "outcomes": outcomes, "health": merged, "overall": overall}


@dataclass(frozen=True)
class RunSummary:
    """Everything the summarize step writes, in one place (:func:`summarize`).

    groups, levels : the group records (:meth:`evalnoise.group_records.GroupRecord.to_dict`;
        ``groups.json``), sorted by agent and resource profile.
    comparisons, skipped : the compared pairs (Holm over the whole family) and the pairs
        not compared because a group is not a measurement (``comparisons.json``).
    profiles, convergence, budget, per_task : the tables the report and DVC plots read.
    summary : the text of ``summary.txt``.
    problems : what makes the run fail (rule ``check``).
    metrics : ``metrics.json``.
    """

    groups: list[dict[str, Any]]
    levels: list[dict[str, Any]]
    comparisons: list[dict[str, Any]]
    skipped: list[dict[str, Any]]
    profiles: pd.DataFrame
    convergence: pd.DataFrame
    budget: pd.DataFrame
    per_task: pd.DataFrame
    summary: str
    problems: list[str]
    metrics: dict[str, Any]


def _group_lines(
    s: Mapping[str, Any],
    record: GroupRecord,
    judged: Mapping[str, Any],
    attribution: Mapping[str, Any] | None,
    confidence: float,
) -> list[str]:
    """One group's lines of ``summary.txt``: its reporting line, levels, outcomes, task
    failures, readings, reliability, judges, attribution and infrastructure."""
    lines = []
    flag = "" if s["health"]["valid"] else "  [NOT A MEASUREMENT OF THE AGENT]"
    if s["health"]["expected"] and s["health"]["reasons"]:
        flag = "  [failures declared as the experiment: health.expected_failures]"
    lines.append(f"{s['group']}: {reporting_line(record, confidence)}{flag}")
    for r in map(GroupRecord.from_dict, s["levels"]):
        lines.append(f"  level {r.level}: {reporting_line(r, confidence)}")
    lines.append(f"  outcomes: {outcome_line(record.outcomes)}")
    lines.extend(f"  {line}" for line in failure_lines(s.get("task_failures", [])))
    shown = readings_text(record.readings)
    verified = "verified_as_failures" in (record.readings or {})
    if shown and (record.withheld or failed_trials(s["outcomes"]) or verified):
        lines.append(f"  readings: {shown}")
    lines += [f"  {line}" for line in reliability_lines(record)]
    if s["group"] in judged:
        lines.append(f"  {judge_line(judged[s['group']], confidence)}")
    if attribution and s["group"] in attribution:
        a = attribution[s["group"]]
        if "not_computed" in a:
            lines.append(f"  attribution: not computed ({a['not_computed']})")
        else:
            if record.withheld:
                # no statistic of a group that is not a measurement: no noise model
                a = {k: v for k, v in a.items() if k != "noise"}
            lines.extend(f"  {line}" for line in attribution_lines(a))
    infra = s["infra"]
    lines.append(
        f"  infra: {infra['infra_attempts']} of {infra['attempts']} attempts "
        f"({100 * infra['infra_error_rate_attempts']:.1f}%) ended in an infra "
        f"outcome; policy: {s['infra_policy']}"
    )
    return lines


def _concat(frames: Sequence[pd.DataFrame], columns: Sequence[str], by: str) -> pd.DataFrame:
    """The groups' tables as one, sorted by group and ``by`` (its columns when all are empty)."""
    frames = [f for f in frames if len(f)]
    if not frames:
        return pd.DataFrame(columns=list(columns))
    out = pd.concat(frames, ignore_index=True)
    return out.sort_values(["group", by], kind="mergesort").reset_index(drop=True)


def summarize(
    stats: Sequence[Mapping[str, Any]],
    pairs: Sequence[Mapping[str, Any]],
    convergence: Sequence[pd.DataFrame],
    budgets: Sequence[pd.DataFrame],
    *,
    confidence: float,
    judge: Sequence[Mapping[str, Any]] = (),
    attribution: Mapping[str, Any] | None = None,
) -> RunSummary:
    """Everything in one place, sorted (a :class:`RunSummary`): ``groups`` (typed records,
    :class:`evalnoise.group_records.GroupRecord`, with ``outcomes``, ``health``, ``costs``
    (:func:`evalnoise.costs.combine_costs`) and, with a judge stage, ``judge``:
    :func:`judge_summary`; a withheld group's judges show no accuracy,
    :func:`withheld_judge`), ``levels``, ``comparisons`` (Holm over the whole family),
    ``skipped`` (pairs not compared because a group is not a measurement), ``profiles`` /
    ``convergence`` / ``budget`` / ``per_task`` (DataFrames), ``summary`` (text),
    ``problems`` (what makes the run fail) and ``metrics`` (the DVC metrics dict)."""
    from evalnoise.costs import combine_costs

    judged = {r["group"]: judge_summary(r) for r in judge}
    for s in stats:
        if s["group"] in judged and s["overall"].get("withheld"):
            judged[s["group"]] = withheld_judge(judged[s["group"]], s["overall"]["withheld"])
    stats = sorted(
        (with_judge(s, judged.get(s["group"])) for s in stats),
        key=lambda s: (s["agent"], s["resource_profile"]),
    )
    judge_costs = {r["group"]: r.get("costs") for r in judge}
    records = [
        replace(
            GroupRecord.from_dict(s["overall"]),
            crash_signals=dict(s.get("crash_signals", {})),
            task_failures=list(s.get("task_failures", [])) or None,
            judge=judged.get(s["group"]),
            # the trials' cost drivers, with the judge stage's calls when it ran (priced
            # by the report: prices are no statistic)
            costs=combine_costs(s.get("costs"), judge_costs.get(s["group"])),
        )
        for s in stats
    ]
    groups = [r.to_dict() for r in records]
    levels = [GroupRecord.from_dict(r).to_dict() for s in stats for r in s["levels"]]
    ordered = sorted(
        (dict(p) for p in pairs), key=lambda r: (r["kind"], r["within"], r["a"], r["b"])
    )
    skipped = [
        {k: r[k] for k in ("kind", "within", "a", "b", "reason")}
        for r in ordered
        if r.get("skipped")
    ]
    comparisons = [r for r in ordered if not r.get("skipped")]
    for record in comparisons:
        if record["mcnemar"] is not None:
            record["mcnemar"] = dict(record["mcnemar"])
    _holm(comparisons)
    profiles = pd.DataFrame(
        [_profile_row(s, r) for s, r in zip(stats, records, strict=True)],
        columns=list(profile_columns()),
    )
    from evalnoise.analysis import PER_TASK_COLUMNS

    # with columns also when empty (every group withheld): readers get a header, not nothing
    per_task = pd.DataFrame(
        [row for s in stats for row in s["per_task"]], columns=list(PER_TASK_COLUMNS)
    )

    problems = health_problems(stats)
    lines = []
    if problems:
        lines.append("!! " + "\n!! ".join(problems))
    for s, record in zip(stats, records, strict=True):
        lines += _group_lines(s, record, judged, attribution, confidence)
    for r in comparisons:
        p = r.get("pvalue_holm")
        p_text = "—" if p is None else f"{p:.3g}"
        lines.append(
            f"{r['kind']} ({r['within']}): {r['a']} − {r['b']} = "
            f"{100 * r['diff']:+.1f} pts [{100 * r['ci_low']:+.1f}, "
            f"{100 * r['ci_high']:+.1f}], Holm p = {p_text} "
            f"(adjusted over all {len(comparisons)} comparisons)"
        )
    for r in (attribution or {}).get("_resource", []):
        lines.append(resource_line(r))
    for r in skipped:
        lines.append(
            f"{r['kind']} ({r['within']}): {r['a']} vs {r['b']}: not compared — {r['reason']}"
        )
    return RunSummary(
        groups=groups,
        levels=levels,
        comparisons=comparisons,
        skipped=skipped,
        profiles=profiles,
        convergence=_concat(convergence, CONVERGENCE_TABLE_COLUMNS, "trials"),
        budget=_concat(budgets, BUDGET_COLUMNS, "n_tasks"),
        per_task=per_task,
        summary="\n".join(lines) + "\n",
        problems=problems,
        metrics=metrics(stats, records, comparisons, attribution),
    )


def judge_summary(record: Mapping[str, Any]) -> dict[str, Any]:
    """The judge's numbers of a group as the summary, cards and metrics show them."""
    from evalnoise.pipeline.judging import judges_summary

    agreement = record.get("agreement") or {}
    nested = record.get("nested") or {}
    accuracy = record.get("accuracy") or {}
    return {
        "name": record.get("name"),
        **judges_summary(record),
        "mode": record["mode"],
        "samples": record["samples"],
        "sent": record["sent"],
        "judge_errors": int((record.get("statuses") or {}).get("judge_error", 0)),
        "unjudged": int(
            record.get("unjudged", (record.get("statuses") or {}).get("judge_error", 0))
        ),
        "call_failures": record.get("call_failures"),
        "unparsed": record.get("unparsed"),
        "parse_rate": record.get("parse_rate"),
        "accuracy": accuracy.get("mean"),
        "ci_low": accuracy.get("ci_low"),
        "ci_high": accuracy.get("ci_high"),
        "agreement": agreement.get("agreement"),
        "kappa": agreement.get("kappa"),
        "kappa_ci_low": agreement.get("kappa_cluster_ci_low", agreement.get("kappa_ci_low")),
        "kappa_ci_high": agreement.get("kappa_cluster_ci_high", agreement.get("kappa_ci_high")),
        "false_accept_rate": agreement.get("false_accept_rate"),
        "false_reject_rate": agreement.get("false_reject_rate"),
        "degenerate": agreement.get("degenerate"),
        "degenerate_reason": agreement.get("degenerate_reason"),
        "kappa_by_level": {
            level: a.get("kappa") for level, a in (record.get("agreement_by_level") or {}).items()
        },
        "share_task": nested.get("share_task"),
        "share_trial": nested.get("share_trial"),
        "share_judge": nested.get("share_judge"),
        "sigma2_judge_ci_low": nested.get("sigma2_judge_ci_low"),
        "sigma2_judge_ci_high": nested.get("sigma2_judge_ci_high"),
    }


def withheld_judge(j: Mapping[str, Any], reason: str) -> dict[str, Any]:
    """A judge summary (:func:`judge_summary`) of a group whose headline is withheld: no
    accuracy by any judge (``accuracy``, ``ci_low``, ``ci_high`` and every judge's
    ``accuracy`` None) and ``withheld`` the reason. The judges' agreement with the reference
    stays: it measures the judges, not the agent."""
    return {
        **j,
        "accuracy": None,
        "ci_low": None,
        "ci_high": None,
        "withheld": reason,
        "judges": [{**r, "accuracy": None} for r in j.get("judges") or ()],
    }


def judge_line(j: Mapping[str, Any], confidence: float = 0.95) -> str:
    """The judge's line of a group in the summary: the same text as its card's
    (:func:`evalnoise.report.judge_text.judge_text`)."""
    from evalnoise.report.judge_text import judge_text, judges_rows

    conf = f"{confidence:.0%}"
    rows = [f"{k[0].lower()}{k[1:]}: {v}" for k, v in judges_rows(j, conf)]
    return "\n    ".join([judge_text(j, conf), *rows])


def summary_lines(summary: Mapping[str, Any]) -> list[str]:
    """summary.txt's lines on an adaptive run, from the sequential summary
    (:func:`evalnoise.pipeline.sequential.summary_record`): per unit, why it stopped, after
    which round, with what precision and how many trials, against the fixed design."""
    goal_name = "SE(ICC)" if summary["target"] == "icc" else "half-width"
    lines = [
        f"Adaptive evaluation: target {summary['target']} {goal_name} <= {summary['goal']:g}, "
        f"{summary['rounds']} round(s) in all"
    ]
    for u in summary["units"]:
        g = summary["groups"][u["groups"][0]]
        trials = sum(summary["groups"][label]["trials"] for label in u["groups"])
        fixed = sum(summary["groups"][label]["fixed_design_trials"] for label in u["groups"])
        head = f"  {u['unit']}: {u['status']} after round {u['round']}"
        if u.get("estimate") is not None:
            kind = "ICC" if summary["target"] == "icc" else "estimate"
            achieved = u.get("achieved")
            head += (
                f"; {kind} {u['estimate']:.3f} [{u['ci_low']:.3f}, {u['ci_high']:.3f}], "
                f"{goal_name} {achieved:.3f}"
                if achieved is not None
                else ""
            )
        head += f"; {g['tasks']} tasks, {trials} trials (fixed design: {fixed})"
        lines.append(head)
        lines.append(f"    {u['reason']}")
    return lines


def _num(value: Any, digits: int = 6) -> float | None:
    if value is None:
        return None
    f = float(value)
    return round(f, digits) if math.isfinite(f) else None


def metrics(
    stats: Sequence[Mapping[str, Any]],
    records: Sequence[GroupRecord],
    comparisons: Sequence[Mapping[str, Any]],
    attribution: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """``results/metrics.json``: per group its :class:`evalnoise.group_records.GroupMetrics`
    (accuracy, CI, ICC, infra error rate, outcome counts and ``valid``: false = not a
    measurement of the agent), from the group's typed record (``records``, in the order of
    ``stats``); per compared pair the difference and its Holm-adjusted p (rounded to 6
    digits: stable across platforms); ``valid`` at the top: every group valid and no trial
    unscored."""
    groups = {}
    for s, record in zip(stats, records, strict=True):
        a = (attribution or {}).get(s["group"]) or {}
        groups[s["group"]] = GroupMetrics.from_record(
            record,
            infra_error_rate=s["infra"]["infra_error_rate_attempts"],
            show_readings=bool(
                record.withheld
                or failed_trials(s["outcomes"])
                or "verified_as_failures" in (record.readings or {})
            ),
            noise=a.get("noise"),
            attribution=a if "infra_share" in a else None,
        ).to_dict()
    pairs = {}
    for r in comparisons:
        name = f"{r['kind']}:{r['within']}:{r['a']}-vs-{r['b']}"
        pairs[name] = {
            "diff": _num(r["diff"]),
            "ci_low": _num(r["ci_low"]),
            "ci_high": _num(r["ci_high"]),
            "pvalue_holm": _num(r.get("pvalue_holm")),
        }
    return {
        "valid": not health_problems(stats),
        "groups": dict(sorted(groups.items())),
        "comparisons": dict(sorted(pairs.items())),
    }
