"""Two runs compared: a baseline (run A) and a candidate (run B), group by group.

Numbers only; reading the runs is :mod:`evalnoise.pipeline.run_sources`, the words and the
exit codes are ``evalnoise compare``'s (:mod:`evalnoise.cli.compare_runs`).

Groups are matched by name (``chat@3x`` in both runs) or by explicit pairs; within a pair the
trials are paired by task. Every statistic is the within-run comparison's
(:func:`evalnoise.stats.compare`: paired t on task means, McNemar on (task, trial) pairs, the
paired bootstrap over tasks, the minimum detectable difference), called with the candidate as
its A, so ``diff = candidate − baseline`` and a negative difference is a regression. The
paired t's and McNemar's p-values are Holm-adjusted over the pairs
(:func:`evalnoise.analysis.holm_comparisons`). With a margin the regression gate
(:func:`evalnoise.stats.gate.regression_gate`) decides on the paired t interval, or with
``sequential`` on the anytime-valid paired confidence sequence
(:func:`evalnoise.stats.paired_confidence_sequence`), and
:func:`evalnoise.stats.gate.design_for_margin` says how many tasks or trials would decide it.

Whether a pair is comparable (:func:`comparability`): the same tasks, the same task content,
and the same config apart from the agent. Every difference is listed, with whether it
changes what is measured (:data:`MEASUREMENT_KEYS`); a difference only in the seeds, the
design's size or the bookkeeping does not.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from evalnoise.analysis import holm_comparisons
from evalnoise.pipeline.effective_config import config_diff
from evalnoise.stats import compare, paired_confidence_sequence
from evalnoise.stats.gate import design_for_margin, regression_gate

__all__ = [
    "MEASUREMENT_KEYS",
    "Run",
    "comparability",
    "compare_runs",
    "comparison_record",
    "match_groups",
]

#: Config keys (dotted prefixes) whose difference changes what a group's score measures: the
#: tasks, how answers are scored, how failures count, the variants, the backend. Agents (and
#: the model they are served) are what a comparison compares; a resource profile counts
#: through its group (:func:`comparability`). Other keys — the seeds, the trial count, shards,
#: health thresholds, report text — change how much was measured, not what.
MEASUREMENT_KEYS = (
    "benchmark",
    "scorer",
    "infra_policy",
    "analysis.score",
    "variants",
    "backend",
    "trials_from",
    "columns",
)

#: Config keys that describe the agent rather than the run: listed as the agents' differences.
AGENT_KEYS = ("agents", "model_server")


@dataclass
class Run:
    """One side of a comparison, as :mod:`evalnoise.pipeline.run_sources` reads it.

    Attributes
    ----------
    source : what the user named (a directory, a file, a revision).
    kind : ``"results"``, ``"trials"`` or ``"revision"``.
    frame : the trials that count: ``group, task, trial, score`` and, when known, ``block``
        (the trial block a trial ran in, for the sequential gate).
    config : the run's effective config (``results/config.json``), None for a trials file.
    tasks : the run's tasks table (``task_id`` and the task's content), or None.
    groups : group → (agent, resource profile) where the run says so.
    notes : what the reading could not check.
    health : group → ``valid``, ``expected``, ``failure_rate``, ``reasons`` of
        :class:`evalnoise.outcomes.Health`, where the run says what became of its trials.
    """

    source: str
    kind: str
    frame: pd.DataFrame
    config: Mapping[str, Any] | None = None
    tasks: pd.DataFrame | None = None
    groups: Mapping[str, tuple[str, str | None]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    health: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


def match_groups(
    baseline: Sequence[str], candidate: Sequence[str], pairs: Sequence[tuple[str, str]] = ()
) -> list[tuple[str, str]]:
    """The (baseline group, candidate group) pairs to compare: ``pairs`` when given (each
    name must exist in its run), else every group name both runs have, sorted; two runs of
    one group each are paired whatever their names. Raises ``ValueError`` naming the groups
    each run has when nothing matches."""
    have_a, have_b = (
        list(dict.fromkeys(map(str, baseline))),
        list(dict.fromkeys(map(str, candidate))),
    )
    if pairs:
        for a, b in pairs:
            if a not in have_a:
                raise ValueError(
                    f"group {a!r} is not in the baseline (it has: {', '.join(have_a)})"
                )
            if b not in have_b:
                raise ValueError(
                    f"group {b!r} is not in the candidate (it has: {', '.join(have_b)})"
                )
        return [(str(a), str(b)) for a, b in pairs]
    common = sorted(set(have_a) & set(have_b))
    if common:
        return [(g, g) for g in common]
    if len(have_a) == 1 and len(have_b) == 1:
        return [(have_a[0], have_b[0])]
    raise ValueError(
        f"no group name is in both runs (baseline: {', '.join(have_a)}; candidate: "
        f"{', '.join(have_b)}): pair them with --pair BASELINE=CANDIDATE"
    )


def _difference(what: str, baseline: Any, candidate: Any, affects: bool) -> dict[str, Any]:
    return {"what": what, "baseline": baseline, "candidate": candidate, "affects": affects}


def _under(key: str, prefixes: Sequence[str]) -> bool:
    return any(key == p or key.startswith(p + ".") for p in prefixes)


def _judged(config: Mapping[str, Any]) -> bool:
    """Whether a judge gives the scores the statistics read (``scorer.name: judge``, or
    ``analysis.score: judge``): only then do the judges' settings change what is measured."""
    scorer = config.get("scorer") or {}
    return scorer.get("name") == "judge" or (config.get("analysis") or {}).get("score") == "judge"


def _task_content(
    tasks_a: pd.DataFrame | None, tasks_b: pd.DataFrame | None, common: Sequence[str]
) -> list[dict[str, Any]]:
    """One difference per tasks-table column whose value differs on a common task."""
    if tasks_a is None or tasks_b is None or not len(common):
        return []
    a = tasks_a.drop_duplicates("task_id").set_index(tasks_a["task_id"].astype(str))
    b = tasks_b.drop_duplicates("task_id").set_index(tasks_b["task_id"].astype(str))
    ids = [t for t in common if t in a.index and t in b.index]
    out = []
    for column in sorted((set(a.columns) & set(b.columns)) - {"task_id"}):
        va = a.loc[ids, column].astype(str).to_numpy()
        vb = b.loc[ids, column].astype(str).to_numpy()
        differ = np.flatnonzero(va != vb)
        if differ.size:
            first = ids[int(differ[0])]
            out.append(
                _difference(
                    f"tasks.{column} on {differ.size} of {len(ids)} common tasks (first: {first})",
                    str(va[differ[0]]),
                    str(vb[differ[0]]),
                    True,
                )
            )
    return out


def comparability(baseline: Run, candidate: Run, group_a: str, group_b: str) -> dict[str, Any]:
    """Whether the baseline's ``group_a`` and the candidate's ``group_b`` measure the same
    thing, and every difference found.

    Checked: the tasks each group has trials on (the same set), the content of the common
    tasks (every column both tasks tables have), the resource profile of the two groups, and
    the runs' configs key by key (:func:`evalnoise.pipeline.effective_config.config_diff`):
    keys under :data:`MEASUREMENT_KEYS` (and the groups' own resource profile) change what is
    measured (``affects``), but ``scorer.judge.*`` only when a judge gives the scores; keys
    under :data:`AGENT_KEYS` are the agents' differences, listed apart; the rest are listed
    as not affecting it. ``comparable`` is true when no listed difference affects the
    measurement and both groups measure the agent (``Run.health``,
    :func:`evalnoise.outcomes.assess_health`: a group that crashed or failed too often does
    not, ``not_measurements`` says why; failures the run declared as the experiment are a
    note).
    """
    ta = set(baseline.frame.loc[baseline.frame["group"] == group_a, "task"].astype(str))
    tb = set(candidate.frame.loc[candidate.frame["group"] == group_b, "task"].astype(str))
    differences: list[dict[str, Any]] = []
    only_a, only_b = sorted(ta - tb), sorted(tb - ta)
    if only_a or only_b:
        differences.append(
            _difference(
                f"tasks: {len(only_a)} only in the baseline, {len(only_b)} only in the "
                f"candidate, {len(ta & tb)} in both",
                only_a[:5],
                only_b[:5],
                True,
            )
        )
    differences += _task_content(baseline.tasks, candidate.tasks, sorted(ta & tb))
    agent_a, profile_a = baseline.groups.get(group_a, (group_a, None))
    agent_b, profile_b = candidate.groups.get(group_b, (group_b, None))
    if profile_a != profile_b:
        differences.append(_difference("resource profile", profile_a, profile_b, True))
    agent_differences: list[dict[str, Any]] = []
    notes: list[str] = []
    not_measurements = []
    for side, run, group in (("baseline", baseline, group_a), ("candidate", candidate, group_b)):
        health = run.health.get(group)
        if health is None:
            continue
        if not health["valid"]:
            not_measurements.append(
                f"the {side}'s {group} is not a measurement of the agent: "
                + "; ".join(health["reasons"])
            )
        elif health["expected"] and health["reasons"]:
            notes.append(
                f"the {side}'s {group} failed as declared (health.expected_failures): "
                + "; ".join(health["reasons"])
            )
    if agent_a != agent_b:
        agent_differences.append(_difference("agent", agent_a, agent_b, False))
    if baseline.config is None or candidate.config is None:
        notes.append(
            "no recorded config on "
            + " and ".join(
                side
                for side, run in (("the baseline", baseline), ("the candidate", candidate))
                if run.config is None
            )
            + ": only the tasks were checked"
        )
    else:
        ca, cb = dict(baseline.config), dict(candidate.config)
        for key, va, vb in config_diff(
            {k: v for k, v in ca.items() if k not in AGENT_KEYS},
            {k: v for k, v in cb.items() if k not in AGENT_KEYS},
        ):
            own_profile = key.startswith("resource_profiles.") and key.split(".")[1] in {
                profile_a,
                profile_b,
            }
            if key.startswith("resource_profiles.") and not own_profile:
                continue  # another group's profile: not this pair's business
            affects = own_profile or _under(key, MEASUREMENT_KEYS)
            if _under(key, ("scorer.judge",)) and not (_judged(ca) or _judged(cb)):
                affects = False  # the judges' settings, when no judge gives the scores
            differences.append(_difference(key, va, vb, affects))
        spec_a = (ca.get("agents") or {}).get(agent_a)
        spec_b = (cb.get("agents") or {}).get(agent_b)
        for key, va, vb in config_diff(
            {"agent": spec_a or {}, "model_server": ca.get("model_server") or {}},
            {"agent": spec_b or {}, "model_server": cb.get("model_server") or {}},
        ):
            agent_differences.append(_difference(key, va, vb, False))
    return {
        "comparable": not any(d["affects"] for d in differences) and not not_measurements,
        "not_measurements": not_measurements,
        "differences": differences,
        "agent_differences": agent_differences,
        "tasks_only_baseline": only_a,
        "tasks_only_candidate": only_b,
        "notes": notes,
    }


def _blocks(frame: pd.DataFrame) -> np.ndarray:
    if "block" in frame.columns and frame["block"].notna().all():
        return frame["block"].to_numpy()
    return np.zeros(len(frame), dtype=np.int64)


def _pair_record(
    base: pd.DataFrame,
    cand: pd.DataFrame,
    group_a: str,
    group_b: str,
    *,
    confidence: float,
    n_resamples: int,
    seed: int,
    sequential: bool,
) -> dict[str, Any]:
    """The within-run comparison with the candidate as its A: diff = candidate − baseline."""
    res = compare(
        cand["task"].to_numpy(),
        cand["trial"].to_numpy(),
        cand["score"].to_numpy(),
        base["task"].to_numpy(),
        base["trial"].to_numpy(),
        base["score"].to_numpy(),
        names=(group_b, group_a),
        confidence=confidence,
        n_resamples=n_resamples,
        seed=seed,
    )
    rec = res.to_dict()
    mc = rec["mcnemar"]
    if mc is not None:
        # in compare()'s terms A is the candidate: n10 = candidate right, baseline wrong
        mc["candidate_only_right"], mc["baseline_only_right"] = mc["n10"], mc["n01"]
    out: dict[str, Any] = {
        "baseline": group_a,
        "candidate": group_b,
        "n_tasks": rec["n_tasks"],
        "n_tasks_baseline_only": rec["n_dropped_b"],
        "n_tasks_candidate_only": rec["n_dropped_a"],
        "n_trials_baseline": len(base),
        "n_trials_candidate": len(cand),
        "mean_baseline": rec["mean_b"],
        "mean_candidate": rec["mean_a"],
        "diff": rec["diff"],
        "se_paired": rec["se_paired"],
        "ci_low": rec["ci_low"],
        "ci_high": rec["ci_high"],
        "pvalue": rec["pvalue"],
        "mcnemar": mc,
        "bootstrap": rec["bootstrap"],
        "mdd": rec["mdd"],
        "power_analysis": rec["power_analysis"],
        "sigma2_between": rec["sigma2_between"],
        "sigma2_within": rec["sigma2_within"],
        "confidence": rec["confidence"],
        "warnings": list(rec["warnings"]),
        "sequential": None,
    }
    # every task differing by the same amount makes the paired t interval a point, which n
    # tasks cannot give: the gate then decides on the confidence sequence, valid for any n
    degenerate = rec["se_paired"] is None or rec["se_paired"] == 0
    if sequential or degenerate:
        cs = paired_confidence_sequence(
            cand["score"].to_numpy(),
            cand["task"].to_numpy(),
            _blocks(cand),
            base["score"].to_numpy(),
            base["task"].to_numpy(),
            _blocks(base),
            confidence=confidence,
        )
        out["sequential"] = {
            k: v
            for k, v in cs.to_dict().items()
            if k in ("estimand", "blocks", "n_tasks", "n_trials", "mean", "ci_low", "ci_high",
                     "half_width", "n_trials_excluded", "n_tasks_dropped", "confidence",
                     "method", "warnings")
        }  # fmt: skip
    out["degenerate"] = degenerate
    return out


def compare_runs(
    baseline: Run,
    candidate: Run,
    pairs: Sequence[tuple[str, str]] = (),
    *,
    confidence: float = 0.95,
    n_resamples: int = 10_000,
    seed: int = 0,
    margin: float | None = None,
    sequential: bool = False,
) -> list[dict[str, Any]]:
    """One record per matched pair (:func:`match_groups`): the paired statistics with
    ``diff = candidate − baseline`` (module docstring), ``pvalue_holm`` and
    ``mcnemar.pvalue_holm`` (Holm over the pairs), ``detected`` (Holm-adjusted p below
    1 − ``confidence``), ``comparability`` (:func:`comparability`) and, with ``margin``,
    ``gate`` (:class:`evalnoise.stats.gate.GateResult`, on the paired t interval or, with
    ``sequential``, on the confidence sequence's) and ``design``
    (:class:`evalnoise.stats.gate.DesignForMargin`: what the MDD says would decide it;
    None with fewer than two common tasks, or when every task differs by the same amount,
    ``degenerate``: the gate then decides on the confidence sequence, and a group that does
    not measure the agent never passes it).
    """
    matched = match_groups(
        baseline.frame["group"].astype(str).unique().tolist(),
        candidate.frame["group"].astype(str).unique().tolist(),
        pairs,
    )
    # one spelling of task and trial labels, whichever source a run came from (a results
    # directory numbers trials, a trials file labels them as text)
    parts_a, parts_b = (
        {
            str(g): p.assign(task=p["task"].astype(str), trial=p["trial"].astype(str))
            for g, p in run.frame.groupby("group", sort=False)
        }
        for run in (baseline, candidate)
    )
    records = []
    for group_a, group_b in matched:
        rec = _pair_record(
            parts_a[group_a],
            parts_b[group_b],
            group_a,
            group_b,
            confidence=confidence,
            n_resamples=n_resamples,
            seed=seed,
            sequential=sequential,
        )
        rec["comparability"] = comparability(baseline, candidate, group_a, group_b)
        records.append(rec)
    holm_comparisons(records)
    alpha = 1.0 - confidence
    for rec in records:
        p = rec["pvalue_holm"]
        rec["detected"] = p is not None and p < alpha
        rec["gate"] = rec["design"] = None
        if margin is None:
            continue
        use_cs = sequential or rec["degenerate"]
        interval = rec["sequential"] if use_cs else rec
        gate = regression_gate(
            rec["diff"],
            np.nan if interval["ci_low"] is None else interval["ci_low"],
            np.nan if interval["ci_high"] is None else interval["ci_high"],
            margin,
        ).to_dict()
        gate["interval"] = "confidence_sequence" if use_cs else "paired_t"
        gate["why"] = []
        if rec["degenerate"] and not sequential:
            gate["why"].append(
                "every task differs by the same amount: the paired t interval is a point, so "
                "the gate decides on the anytime-valid confidence sequence"
            )
        unmeasured = rec["comparability"]["not_measurements"]
        if unmeasured and gate["decision"] != "regression":
            # a group whose numbers do not measure the agent never passes a gate
            gate["decision"] = "inconclusive"
            gate["why"] += unmeasured
        rec["gate"] = gate
        power = rec["power_analysis"]
        if power is not None and margin > 0 and not rec["degenerate"]:
            rec["design"] = design_for_margin(
                margin,
                int(power["n_tasks"]),
                float(power["trials"]),
                float(power["sigma2_between"]),
                float(power["sigma2_within"]),
                paired_correlation=float(power["paired_correlation"]),
                alpha=float(power["alpha"]),
                power=float(power["power"]),
            ).to_dict()
    return records


def _side(run: Run) -> dict[str, Any]:
    return {
        "source": run.source,
        "kind": run.kind,
        "groups": sorted(run.frame["group"].astype(str).unique().tolist()),
        "notes": list(run.notes),
    }


def comparison_record(
    baseline: Run,
    candidate: Run,
    records: list[dict[str, Any]],
    gate: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """What ``evalnoise compare RUN_A RUN_B --json`` prints and ``results/compare/*.json``
    holds: each side (source, kind, groups, notes), the pairs (:func:`compare_runs`) and the
    gate's settings and exit status (None without a gate)."""
    return {
        "baseline": _side(baseline),
        "candidate": _side(candidate),
        "pairs": records,
        "gate": gate,
    }
