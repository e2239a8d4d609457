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
from typing import Any

import pandas as pd

from evalnoise.analysis import holm_comparisons
from evalnoise.attribution.text import attribution_lines, resource_line
from evalnoise.group_text import readings_text, reporting_line
from evalnoise.infra_failures import failure_lines
from evalnoise.outcomes import OUTCOMES, outcome_line
from evalnoise.pipeline.stages import BUDGET_COLUMNS, CONVERGENCE_TABLE_COLUMNS

__all__ = [
    "PROFILE_COLUMNS",
    "failed_trials",
    "health_problems",
    "judge_line",
    "judge_summary",
    "metrics",
    "summarize",
    "summary_lines",
    "with_judge",
]

#: The per-resource-profile table (accuracy and infra error rate per agent × profile).
PROFILE_COLUMNS = (
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
    "timeout_attempts",
    "oom_killed_attempts",
    "infra_error_attempts",
    *OUTCOMES,
    "valid",
)


def _holm(records: list[dict[str, Any]]) -> None:
    """Holm-adjust the paired t's and McNemar's p-values over the run's whole family of
    comparisons (every pair that was compared, agents and resource profiles together): the run
    asks all of these questions at once, so the family-wise error is controlled over all of
    them (:func:`evalnoise.analysis.holm_comparisons`)."""
    holm_comparisons(records)


def _profile_row(stats: Mapping[str, Any]) -> dict[str, Any]:
    rec, infra = stats["overall"], stats["infra"]
    return {
        "resource_profile": stats["resource_profile"],
        "agent": stats["agent"],
        "group": stats["group"],
        "accuracy": rec["mean"],
        "ci_low": rec["ci_low"],
        "ci_high": rec["ci_high"],
        "icc": rec["icc"],
        "infra_error_rate": infra["infra_error_rate_attempts"],
        "infra_ci_low": infra["infra_ci_low"],
        "infra_ci_high": infra["infra_ci_high"],
        "trials": infra["trials"],
        "attempts": infra["attempts"],
        "counted": infra["counted"],
        "excluded": infra["excluded"],
        "unscored": infra["unscored"],
        "timeout_attempts": infra["timeout_attempts"],
        "oom_killed_attempts": infra["oom_killed_attempts"],
        "infra_error_attempts": infra["infra_error_attempts"],
        **{name: stats["outcomes"][name] for name in OUTCOMES},
        "valid": stats["health"]["valid"],
    }


def failed_trials(outcomes: Mapping[str, int]) -> int:
    """Trials that ended in a failure: not ``ok`` and not merely waiting for a grader's
    verdict (:data:`evalnoise.outcomes.UNDECIDED`)."""
    from evalnoise.outcomes import UNDECIDED

    waiting = sum(int(outcomes.get(k, 0)) for k in UNDECIDED)
    return int(outcomes.get("trials", 0)) - int(outcomes.get("ok", 0)) - waiting


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


def summarize(
    stats: Sequence[Mapping[str, Any]],
    pairs: Sequence[Mapping[str, Any]],
    convergence: Sequence[pd.DataFrame],
    budgets: Sequence[pd.DataFrame],
    *,
    confidence: float,
    judge: Sequence[Mapping[str, Any]] = (),
    attribution: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Everything in one place, sorted: ``groups`` (records with ``outcomes``, ``health``,
    ``costs`` (:func:`evalnoise.costs.combine_costs`) and, with a judge stage, ``judge``:
    :func:`judge_summary`), ``levels``, ``comparisons``
    (Holm over the whole family), ``skipped``
    (pairs not compared because a group is not a measurement), ``profiles`` /
    ``convergence`` / ``budget`` / ``per_task`` (DataFrames), ``summary`` (text),
    ``problems`` (what makes the run fail) and ``metrics`` (the DVC metrics dict)."""
    from evalnoise.costs import combine_costs

    judged = {r["group"]: judge_summary(r) for r in judge}
    stats = sorted(
        (with_judge(s, judged.get(s["group"])) for s in stats),
        key=lambda s: (s["agent"], s["resource_profile"]),
    )
    judge_costs = {r["group"]: r.get("costs") for r in judge}
    groups = [
        {
            **s["overall"],
            "crash_signals": dict(s.get("crash_signals", {})),
            "task_failures": list(s.get("task_failures", [])),
            **({"judge": judged[s["group"]]} if s["group"] in judged else {}),
            # the trials' cost drivers, with the judge stage's calls when it ran (priced
            # by the report: prices are no statistic)
            "costs": combine_costs(s.get("costs"), judge_costs.get(s["group"])),
        }
        for s in stats
    ]
    levels = [dict(r) for s in stats for r in s["levels"]]
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
    profiles = pd.DataFrame([_profile_row(s) for s in stats], columns=list(PROFILE_COLUMNS))
    from evalnoise.analysis import PER_TASK_COLUMNS

    # with columns also when empty (every group withheld): readers get a header, not nothing
    per_task = pd.DataFrame(
        [row for s in stats for row in s["per_task"]], columns=list(PER_TASK_COLUMNS)
    )

    def concat(frames: Sequence[pd.DataFrame], columns: Sequence[str], by: str) -> pd.DataFrame:
        frames = [f for f in frames if len(f)]
        if not frames:
            return pd.DataFrame(columns=list(columns))
        out = pd.concat(frames, ignore_index=True)
        return out.sort_values(["group", by], kind="mergesort").reset_index(drop=True)

    problems = health_problems(stats)
    lines = []
    if problems:
        lines.append("!! " + "\n!! ".join(problems))
    for s in stats:
        flag = "" if s["health"]["valid"] else "  [NOT A MEASUREMENT OF THE AGENT]"
        if s["health"]["expected"] and s["health"]["reasons"]:
            flag = "  [failures declared as the experiment: health.expected_failures]"
        lines.append(f"{s['group']}: {reporting_line(s['overall'], confidence)}{flag}")
        for r in s["levels"]:
            lines.append(f"  level {r['level']}: {reporting_line(r, confidence)}")
        lines.append(f"  outcomes: {outcome_line(s['outcomes'])}")
        lines.extend(f"  {line}" for line in failure_lines(s.get("task_failures", [])))
        shown = readings_text(s["overall"].get("readings"))
        if shown and (s["overall"].get("withheld") or failed_trials(s["outcomes"])):
            lines.append(f"  readings: {shown}")
        if s["group"] in judged:
            lines.append(f"  {judge_line(judged[s['group']], confidence)}")
        if attribution and s["group"] in attribution:
            a = attribution[s["group"]]
            if "not_computed" in a:
                lines.append(f"  attribution: not computed ({a['not_computed']})")
            else:
                if s["overall"].get("withheld"):
                    # no statistic of a group that is not a measurement: no noise model
                    a = {k: v for k, v in a.items() if k != "noise"}
                lines.extend(f"  {line}" for line in attribution_lines(a))
        infra = s["infra"]
        lines.append(
            f"  infra: {infra['infra_attempts']} of {infra['attempts']} attempts "
            f"({100 * infra['infra_error_rate_attempts']:.1f}%) ended in an infra "
            f"outcome; policy: {s['infra_policy']}"
        )
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
    return {
        "groups": groups,
        "levels": levels,
        "comparisons": comparisons,
        "skipped": skipped,
        "profiles": profiles,
        "convergence": concat(convergence, CONVERGENCE_TABLE_COLUMNS, "trials"),
        "budget": concat(budgets, BUDGET_COLUMNS, "n_tasks"),
        "per_task": per_task,
        "summary": "\n".join(lines) + "\n",
        "problems": problems,
        "metrics": metrics(stats, comparisons, judged, attribution),
    }


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
    comparisons: Sequence[Mapping[str, Any]],
    judged: Mapping[str, Mapping[str, Any]] | None = None,
    attribution: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """``results/metrics.json``: per group accuracy, CI, ICC, infra error rate, outcome
    counts and ``valid`` (false = not a measurement of the agent); per compared pair the
    difference and its Holm-adjusted p (rounded to 6 digits: stable across platforms);
    ``valid`` at the top: every group valid and no trial unscored."""
    groups = {}
    for s in stats:
        rec, infra = s["overall"], s["infra"]
        groups[s["group"]] = {
            "accuracy": _num(rec["mean"]),
            "ci_low": _num(rec["ci_low"]),
            "ci_high": _num(rec["ci_high"]),
            "icc": _num(rec["icc"]),
            "icc_ci_low": _num(rec["icc_ci_low"]),
            "icc_ci_high": _num(rec["icc_ci_high"]),
            "infra_error_rate": _num(infra["infra_error_rate_attempts"]),
            "n_tasks": int(rec["n_tasks"]),
            "n_trials": int(rec["n_obs"]),
            # a measurement of the agent with every trial decided by its scorers
            "valid": bool(s["health"]["valid"]) and not s["health"].get("incomplete"),
            "measurement": bool(s["health"]["valid"]),
            "expected_failures": bool(s["health"]["expected"]),
            "outcomes": {
                k: int(s["outcomes"][k])
                for k in (*OUTCOMES, "trials", "unjudged")
                if k in s["outcomes"]
            },
        }
        if s["health"].get("incomplete"):
            groups[s["group"]]["incomplete"] = list(s["health"]["incomplete"])
        if rec.get("withheld"):
            # no headline: say why beside the nulls
            groups[s["group"]]["withheld"] = rec["withheld"]
        if rec.get("withheld") or failed_trials(s["outcomes"]):
            groups[s["group"]]["readings"] = {
                name: {
                    "accuracy": _num(r["mean"]),
                    "ci_low": _num(r["ci_low"]),
                    "ci_high": _num(r["ci_high"]),
                    "n_trials": int(r["n_trials"]),
                }
                for name, r in (rec.get("readings") or {}).items()
            }
        noise = ((attribution or {}).get(s["group"]) or {}).get("noise")
        if noise and noise.get("dstudy") and not rec.get("withheld"):
            # every facet that varied counted (issue 23): beside the task-clustered CI
            te = noise["dstudy"]["total_error"]
            groups[s["group"]]["total_error_se"] = _num(te["se"])
            groups[s["group"]]["total_error_ci_low"] = _num(te["ci_low"])
            groups[s["group"]]["total_error_ci_high"] = _num(te["ci_high"])
            groups[s["group"]]["se_clustered"] = _num(te.get("se_clustered"))
        if attribution and "infra_share" in attribution.get(s["group"], {}):
            a = attribution[s["group"]]
            groups[s["group"]]["infra_share"] = _num(a["infra_share"])
            groups[s["group"]]["policy_moves_result"] = bool(a["policy_moves_result"])
            groups[s["group"]]["flaky_tasks"] = int(a["flaky_flagged"])
        if judged and s["group"] in judged:
            j = judged[s["group"]]
            groups[s["group"]]["judge"] = {
                k: _num(j[k]) for k in ("accuracy", "kappa", "parse_rate", "share_judge")
            }
            groups[s["group"]]["judge"]["unjudged"] = int(j.get("unjudged") or 0)
            if len(j.get("judges") or ()) > 1:
                groups[s["group"]]["judge"]["kappa_by_judge"] = {
                    r["name"]: _num(r["kappa"]) for r in j["judges"]
                }
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
