"""How good are the judges, and how noisy: the judge stage's numbers for one group.

Each judge of ``scorer.judge.judges`` (LLM judges and rule-based ones,
:func:`evalnoise.pipeline.judges.judge_specs`) judged every trial in its own shards
(``results/judged/JUDGE/``). For one agent × resource profile, each judge's scores are set
beside the reference scorer's (``results/scores/``) on the same trials:

- **parse**: how many trials sent to the judge came back with a verdict (``ok``), and how
  many were ``judge_error`` — *unjudged*: split into calls that got no reply (the server
  failed) and replies that did not parse; the parse rate is over the replies;
- **accuracy by the judge**: the group's accuracy computed from the judge's scores with
  the same infra policy and estimator as the headline
  (:func:`evalnoise.pipeline.stages.analyze_group`);
- **agreement with the reference** (:func:`evalnoise.stats.judge_agreement`): each judge
  sample is one judgement, set against the reference verdict of its trial, clustered by
  task; overall and per task level; a judge that gives one verdict to everything is
  flagged ``degenerate``; a rule judge that *is* the reference scorer
  (:func:`evalnoise.scorers.rule_judge.same_as_reference`) is flagged
  ``same_as_reference`` (its κ is 1 by construction) and is never the best judge;
- **the judge's own noise** (``nested``; the G study, :func:`evalnoise.stats.gstudy`, of the
  design task / trial:task with judge samples as the replicates): with k > 1 samples per
  trial, the variance of the votes splits into task, trial-within-task and
  judge-within-trial components, each with its interval; a component whose interval reaches
  0 is not detected and has no share (``share_*`` None, ``share_*_estimate`` the point
  share);
- **the judges as a facet** (``judge_facet``, :func:`judge_facet_record`; with two judges or
  more): the G study of task × (trial:task) × judge, every judge's votes within its trial as
  the replicates — the judges' disagreement as variance components (judge, task × judge,
  trial × judge), each with its interval; the judges' share is that of judge + task × judge,
  detected by the share rule (:func:`evalnoise.stats.shares.share_decision`);
- **what the judges cost** (``costs``, :func:`evalnoise.costs.cost_drivers` with the judge
  drivers): calls sent to the server, samples from the cache, tokens, per trial, summed over
  the judges.

The record's top-level fields are the first (primary) judge's, as with one judge, except
``unjudged`` (trials any judge left without a verdict: what makes the group incomplete)
and ``costs`` (all judges'); ``judges`` holds every judge's record, ``best_judge`` names the
judge with the highest κ.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from evalnoise.formatting import jsonable

__all__ = [
    "judge_facet_record",
    "judge_quality",
    "judges_summary",
    "nested_record",
    "scorer_rows",
]

_ATTEMPT = ["task_id", "trial", "attempt"]


def _key(*frames: pd.DataFrame) -> list[str]:
    """The columns naming one attempt in ``frames``: task, trial index and attempt, and the
    variant labels (:data:`evalnoise.runner.variant.VARIANT_COLUMNS`) where the run varied
    the prompt or the sampling (a (task, trial) then ran once per variant)."""
    from evalnoise.runner.variant import VARIANT_COLUMNS

    return _ATTEMPT + [c for c in VARIANT_COLUMNS if all(c in f.columns for f in frames)]


def _trial_label(frame: pd.DataFrame, columns: list[str]) -> pd.Series:
    """One string per row naming its trial by ``columns`` (null variant labels as "")."""
    parts = [frame[c].astype("string").fillna("") for c in columns]
    label = parts[0]
    for part in parts[1:]:
        label = label + "#" + part
    return label


_COSTS = ("judge_calls", "judge_cached", "judge_prompt_tokens", "judge_completion_tokens")


def judge_quality(
    reference_paths: Iterable[str | os.PathLike[str]],
    judged_paths: Iterable[str | os.PathLike[str]] | Mapping[str, Iterable[str | os.PathLike[str]]],
    tasks_path: str | os.PathLike[str],
    agent: str,
    resource_profile: str,
    *,
    options: Mapping[str, Any],
    policy: Mapping[str, Any],
    judge: Mapping[str, Any] | None = None,
    judges: Mapping[str, Mapping[str, Any]] | None = None,
    reference: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The judges' record of one group (see the module docstring); JSON-ready.

    ``judged_paths`` maps each judge's name to its shards (the judge stage), in the judges'
    order, with ``judges`` their specs (:func:`evalnoise.pipeline.judges.judge_specs`);
    or it is one judge's shards, with ``judge`` its spec or the config's ``scorer.judge``
    section (mode, samples). ``options`` is the config's ``analysis`` section, ``policy``
    the infra policy, ``reference`` the config's ``scorer`` section (the reference scorer,
    for ``same_as_reference``).
    """
    from evalnoise.pipeline.shard_plan import group_label

    if isinstance(judged_paths, Mapping):
        by_judge = {str(k): list(v) for k, v in judged_paths.items()}
        specs = {name: dict((judges or {}).get(name) or {}) for name in by_judge}
    else:
        name = str((judge or {}).get("name") or "llm")
        by_judge = {name: list(judged_paths)}
        specs = {name: dict(judge or {})}
    if not by_judge:
        raise ValueError("judge_quality needs the shards of one judge at least")
    context = _Context(reference_paths, tasks_path, agent, resource_profile, options, policy)
    records, frames, votes = [], [], []
    for name, paths in by_judge.items():
        record, judged, cast = _one_judge(context, name, paths, specs[name], reference or {})
        records.append(record)
        frames.append(judged)
        votes.append(cast)
    primary = records[0]
    out: dict[str, Any] = {
        "agent": agent,
        "resource_profile": resource_profile,
        "group": group_label(agent, resource_profile),
        **primary,
        # any judge's unjudged trial leaves the group incomplete
        "unjudged": _unjudged_trials(frames),
        "costs": _summed_costs(frames),
        "judges": records,
        "best_judge": _best(records),
        "judge_facet": None,
    }
    if len(records) > 1:
        out["judge_facet"] = judge_facet_record(
            pd.concat(votes, ignore_index=True), options["confidence"]
        )
    return jsonable(out)


def scorer_rows(
    reference_paths: Iterable[str | os.PathLike[str]],
    judged_paths: Mapping[str, Iterable[str | os.PathLike[str]]],
    agent: str,
    resource_profile: str,
) -> dict[str, pd.DataFrame]:
    """Every scorer's rows of one group, for the multiverse's ``judge`` factor
    (:func:`evalnoise.multiverse.with_scorers`): the reference scorer's shards
    (``results/scores/``) as ``reference`` (``reference scorer`` when a judge is named
    ``reference``), then each judge's (``results/judged/JUDGE/``) under its name, in the
    judges' order; each table the trial key, ``attempt`` and ``score`` (NaN where the
    scorer gave no verdict: a skipped infra outcome, a judge error)."""
    from evalnoise.pipeline.collect import read_scores

    def rows(paths: Iterable[str | os.PathLike[str]]) -> pd.DataFrame:
        frame = read_scores(paths)
        mine = frame[(frame["agent"] == agent) & (frame["resource_profile"] == resource_profile)]
        return mine[[*_key(mine), "score"]].reset_index(drop=True)

    judged = {str(name): list(paths) for name, paths in judged_paths.items()}
    name = "reference scorer" if "reference" in judged else "reference"
    out = {name: rows(reference_paths)}
    for judge, paths in judged.items():
        out[judge] = rows(paths)
    return out


class _Context:
    """What every judge of a group is compared with: the reference, tasks, settings."""

    def __init__(self, reference_paths, tasks_path, agent, resource_profile, options, policy):
        from evalnoise.pipeline.collect import read_scores

        frame = read_scores(reference_paths)
        self.reference = frame[
            (frame["agent"] == agent) & (frame["resource_profile"] == resource_profile)
        ]
        self.tasks_path = tasks_path
        self.agent, self.resource_profile = agent, resource_profile
        self.options, self.policy = options, policy
        tasks = pd.read_parquet(tasks_path, columns=["task_id", "level"])
        self.levels = dict(
            zip(tasks["task_id"].astype(str), tasks["level"].astype(str), strict=True)
        )


def _one_judge(
    context: _Context,
    name: str,
    paths: list,
    spec: Mapping[str, Any],
    reference: Mapping[str, Any],
) -> tuple[dict[str, Any], pd.DataFrame, pd.DataFrame]:
    """One judge's record, its rows of the group, and its votes (judge, task, trial, vote)."""
    from evalnoise.costs import JUDGE_DRIVERS, cost_drivers
    from evalnoise.pipeline.collect import load_group, read_scores
    from evalnoise.pipeline.stages import group_estimates
    from evalnoise.scorers.rule_judge import same_as_reference
    from evalnoise.scorers.verdicts import (
        CALL_FAILED,
        JUDGE_ERROR,
        NO_PREDICTION,
        NOT_APPLICABLE,
        OK,
        SKIPPED_CRASH,
        SKIPPED_INFRA,
    )
    from evalnoise.stats import judge_agreement, judge_agreement_by_level

    agent, resource_profile = context.agent, context.resource_profile
    options = context.options
    judged = read_scores(paths, payload=True)
    # with the explanation: it tells a failed call from an unparseable reply
    judged = judged[(judged["agent"] == agent) & (judged["resource_profile"] == resource_profile)]
    # infra outcomes and crashes are never sent to the judge: there is no answer to judge;
    # a rule judge does not read a reference of another kind
    skipped = judged["judge_status"].isin([SKIPPED_INFRA, SKIPPED_CRASH, NOT_APPLICABLE])
    sent = judged[~skipped & judged["judge_status"].notna()]
    statuses = {str(k): int(v) for k, v in sent["judge_status"].value_counts().items()}
    n_sent = len(sent)
    parsed = statuses.get(OK, 0) + statuses.get(NO_PREDICTION, 0)
    # a judge_error is either a call that got no reply (the server failed) or a reply that
    # did not parse: both leave the trial unjudged, only the second counts against parsing
    errors = sent[sent["judge_status"] == JUDGE_ERROR]
    call_failures = int(errors["judge_explanation"].fillna("").str.startswith(CALL_FAILED).sum())
    replied = n_sent - call_failures

    group = load_group(paths, context.tasks_path, agent, resource_profile, context.policy)
    accuracy = group_estimates(group.frame, group.group, options)

    key = _key(context.reference, judged)
    both = context.reference[[*key, "correct", "score"]].merge(
        judged[[*key, "judge_status", "judge_votes"]], on=key, how="inner"
    )
    both = both[both["correct"].notna() & (both["judge_status"] == OK)]
    has_votes = both["judge_votes"].map(lambda v: v is not None and len(v) > 0).astype(bool)
    both = both[has_votes]

    counts = np.array([len(v) for v in both["judge_votes"]], dtype=np.int64)
    judge_v = np.array([float(x) for v in both["judge_votes"] for x in v], dtype=float)
    ref_v = np.repeat(both["correct"].astype(float).to_numpy(), counts)
    task_v = np.repeat(both["task_id"].astype(str).to_numpy(), counts)
    trial_v = np.repeat(_trial_label(both, ["task_id", "trial", *key[3:]]).to_numpy(), counts)
    level_v = np.array([context.levels.get(t, "") for t in task_v])

    rule = spec.get("rule")
    record: dict[str, Any] = {
        "name": name,
        "kind": "rule" if rule else "llm",
        "rule": rule,
        "model": None if rule else spec.get("model"),
        "mode": "rule" if rule else spec.get("mode", "verdict"),
        "samples": 1 if rule else int(spec.get("samples", 1)),
        "same_as_reference": bool(same_as_reference(rule, reference)),
        "sent": n_sent,
        "statuses": statuses,
        # parsed share of the replies that came back; unjudged = every judge_error
        "parse_rate": parsed / replied if replied else None,
        "unjudged": len(errors),
        "call_failures": call_failures,
        "unparsed": len(errors) - call_failures,
        "not_applicable": int((judged["judge_status"] == NOT_APPLICABLE).sum()),
        "accuracy": accuracy,
        "paired_trials": len(both),
        "agreement": None,
        "agreement_by_level": {},
        "nested": None,
        "costs": cost_drivers(judged, JUDGE_DRIVERS),
    }
    if len(both):
        record["agreement"] = judge_agreement(
            judge_v, ref_v, tasks=task_v, confidence=options["confidence"]
        ).to_dict()
        by_level = judge_agreement_by_level(
            judge_v, ref_v, level_v, tasks=task_v, confidence=options["confidence"]
        )
        record["agreement_by_level"] = {str(k): v.to_dict() for k, v in by_level.items()}
    if len(both) and int(counts.max()) > 1 and len(set(task_v)) > 1:
        record["nested"] = nested_record(judge_v, task_v, trial_v, options["confidence"])
    # every judged trial's votes, for the judges' G study (the reference is not needed)
    ok = judged[judged["judge_status"] == "ok"]
    ok = ok[ok["judge_votes"].map(lambda v: v is not None and len(v) > 0).astype(bool)]
    n_votes = np.array([len(v) for v in ok["judge_votes"]], dtype=np.int64)
    trial_labels = _trial_label(ok, ["trial", "attempt", *_key(ok)[3:]]).to_numpy()
    votes = pd.DataFrame(
        {
            "judge": name,
            "task": np.repeat(ok["task_id"].astype(str).to_numpy(), n_votes),
            "trial": np.repeat(trial_labels, n_votes),
            "vote": np.array([float(x) for v in ok["judge_votes"] for x in v], dtype=float),
        }
    )
    return record, judged, votes


def _unjudged_trials(frames: list[pd.DataFrame]) -> int:
    """Trials (attempts) that at least one judge left unjudged (``judge_error``)."""
    found: set[tuple[str, ...]] = set()
    for frame in frames:
        key = _key(frame)
        failed = frame.loc[frame["judge_status"] == "judge_error", key].astype(str)
        found.update(zip(*(failed[k] for k in key), strict=True))
    return len(found)


def _summed_costs(frames: list[pd.DataFrame]) -> dict[str, Any]:
    """The judge drivers per trial, summed over the judges (a trial that one judge did not
    report a driver for has it unreported)."""
    from evalnoise.costs import JUDGE_DRIVERS, cost_drivers

    if len(frames) == 1:
        return cost_drivers(frames[0], JUDGE_DRIVERS)
    cols = [c for c in _COSTS if all(c in f for f in frames)]
    key = _key(*frames)
    stacked = pd.concat([f[[*key, *cols]] for f in frames], ignore_index=True)
    grouped = stacked.groupby(key, sort=False, dropna=False)
    total = grouped[cols].sum(min_count=1)
    missing = (
        stacked[cols].isna().groupby([stacked[k] for k in key], sort=False, dropna=False).any()
    )
    total = total.mask(missing.reindex(total.index).fillna(False).astype(bool))
    return cost_drivers(total.reset_index(), JUDGE_DRIVERS)


def _best(records: list[dict[str, Any]]) -> str | None:
    """The judge with the highest κ against the reference; a judge that is the reference
    scorer itself only when no other judge has a κ."""

    def kappa(r: Mapping[str, Any]) -> float:
        value = (r.get("agreement") or {}).get("kappa")
        return float(value) if value is not None and np.isfinite(value) else -np.inf

    rated = [r for r in records if kappa(r) > -np.inf]
    measured = [r for r in rated if not r["same_as_reference"]] or rated
    return max(measured, key=kappa)["name"] if measured else None


def judge_facet_record(votes: pd.DataFrame, confidence: float) -> dict[str, Any]:
    """The judges as a facet: the G study (:func:`evalnoise.stats.gstudy`) of task ×
    (trial:task) × judge with each judge's votes on a trial as the replicates.

    ``votes`` has one row per vote: ``judge``, ``task``, ``trial`` (unique within its
    task), ``vote`` (0/1). The model (Brennan 2001, ch. 3, the design p × (r:t) with a
    crossed judge facet) is y = μ + ν_t + ν_r:t + ν_j + ν_tj + ν_rj:t + e, e the votes'
    spread within a judge's trial cell; unbalanced (a rule judge votes once, an LLM judge k
    times) it is fitted by REML. The judges' variance is what the judges add to every trial
    of a task or of the benchmark: σ²(j) (one judge more lenient on every trial) and σ²(tj)
    (judges disagree on some tasks); ``sigma2_judges`` = σ²(j) + σ²(tj), with the MLS
    interval of that sum (``sigma2_judges_ci_low``, ``_ci_high``; upper end cut at the
    largest variance of 0/1 votes, 0.25), ``share_judges_estimate`` its share of one vote's
    variance, ``detected_judges`` the share rule (:func:`evalnoise.stats.shares.
    share_decision`: the sum's interval excludes 0) and ``share_judges`` the share when
    detected (else None). σ²(rj:t), judges disagreeing on single trials, is shown as itself
    and not counted: with one vote per judge and trial it is confounded with e, the
    votes' own noise, in the residual (``residual_includes``), whose χ² interval excludes 0
    as soon as two judges disagree once. ``components`` has every component with its
    interval (``ci_method``), ``detected`` (for σ²(j) and σ²(tj), under the share rule),
    ``counted`` (in the judges' share), ``share`` (None when not detected) and
    ``share_estimate``. With fewer than two judges or two tasks there is nothing to
    estimate: ``components`` is empty and ``warnings`` says why.
    """
    from evalnoise.stats import gstudy
    from evalnoise.stats._gmoments import mls_interval
    from evalnoise.stats.gstudy import NotEstimable
    from evalnoise.stats.shares import share_decision

    judges = sorted(votes["judge"].unique()) if len(votes) else []
    out: dict[str, Any] = {
        "judges": judges,
        "n_judges": len(judges),
        "design": "task × (trial:task) × judge, votes within judge as replicates",
        "n_obs": len(votes),
        "confidence": float(confidence),
        "components": [],
        "sigma2_judges": None,
        "sigma2_judges_ci_low": None,
        "sigma2_judges_ci_high": None,
        "share_judges_estimate": None,
        "share_judges": None,
        "detected_judges": False,
        "variance_bound": None,
        "residual_includes": None,
        "method": None,
        "ci_method": None,
        "balanced": None,
        "warnings": [],
    }
    if len(judges) < 2 or votes["task"].nunique() < 2:
        out["warnings"] = ["fewer than two judges or two tasks with votes: no judge facet"]
        return out
    try:
        g = gstudy(
            votes["vote"].to_numpy(dtype=float),
            votes[["task", "trial", "judge"]],
            ["task", "trial:task", "judge"],
            confidence=confidence,
            mean_of="task",
        )
    except NotEstimable as exc:
        out["warnings"] = [f"no component is estimable: {exc}"]
        return out
    # the judges' share: judge and task × judge, what the judges add to every trial of the
    # benchmark or of a task; trial × judge (alone, or with the votes' own noise in the
    # residual when each judge voted once per trial) is shown as itself, not counted
    mine = [
        i
        for i, f in enumerate(g.facets_of)
        if "judge" in f and "trial" not in f and g.effects[i] != "residual"
    ]
    total = float(g.total_variance)
    if mine:
        lo, hi = mls_interval(g.ms_coefficients[mine].sum(axis=0), g.ms, g.df, 1.0 - confidence)
        estimate = float(sum(g.sigma2[i] for i in mine))
        lo, hi = max(lo, 0.0), min(max(hi, 0.0), max(g.variance_bound, estimate))
        lo = min(lo, hi)
    else:
        lo = hi = estimate = 0.0
    rule = share_decision(lo > 0.0, {g.effects[i]: bool(g.detected[i]) for i in mine})
    for i, effect in enumerate(g.effects):
        counted = i in mine
        detected = rule[effect] if counted else bool(g.detected[i])
        out["components"].append(
            {
                "component": effect,
                "includes": g.residual_includes if effect == "residual" else None,
                "facets": list(g.facets_of[i]),
                "sigma2": float(g.sigma2[i]),
                "ci_low": float(g.ci_low[i]),
                "ci_high": float(g.ci_high[i]),
                "ci_high_cut": effect in g.ci_high_cut,
                "detected": detected,
                "counted": counted,
                "share": float(g.share_estimate[i]) if detected else None,
                "share_estimate": float(g.share_estimate[i]),
                "truncated": bool(g.truncated[i]),
            }
        )
    share_estimate = estimate / total if total > 0 else float("nan")
    out |= {
        "sigma2_judges": estimate,
        "sigma2_judges_ci_low": float(lo),
        "sigma2_judges_ci_high": float(hi),
        "share_judges_estimate": share_estimate,
        "share_judges": share_estimate if rule.detected else None,
        "detected_judges": rule.detected,
        "variance_bound": float(g.variance_bound),
        "residual_includes": g.residual_includes,
        "method": g.method,
        "ci_method": g.ci_method,
        "balanced": bool(g.balanced),
        "n_obs": int(g.n_obs),
        "warnings": list(g.warnings),
    }
    return out


#: the judge table's names of the three components of the design task / trial:task / sample
_JUDGE_COMPONENTS = {"task": "task", "trial:task": "trial", "residual": "judge"}


def nested_record(
    votes: np.ndarray,
    tasks: np.ndarray,
    trials: np.ndarray,
    confidence: float,
    method: str = "auto",
) -> dict[str, Any]:
    """The judge table's components of judge votes nested in trials nested in tasks.

    The G study (:func:`evalnoise.stats.gstudy`) of the design task / trial:task, each judge
    sample a replicate: ANOVA when every trial has as many samples and every task as many
    trials, REML otherwise; MLS intervals. The keys are the judge table's:
    ``sigma2_{task,trial,judge}`` (and ``_raw``, ``_ci_low``, ``_ci_high``), their
    ``share_*`` (None when not detected) and ``share_*_estimate``, ``detected_*``,
    ``icc_task`` (σ²_task over the total), ``mean``, the mean squares ``ms_*`` and their
    ``df_*``, the expected-mean-square coefficients ``k_trial`` (E[MS_trial] = σ²_judge +
    k_trial σ²_trial) and ``k_task_trial``, ``k_task`` (E[MS_task] = σ²_judge +
    k_task_trial σ²_trial + k_task σ²_task), ``n_tasks``, ``n_trials``, ``n_obs``,
    ``balanced``, ``method``, ``ci_method``, ``confidence``, ``warnings``.

    A component the design cannot separate is NaN: σ²_trial and σ²_judge with one sample per
    trial (their sum is the residual), σ²_task and σ²_trial with one trial per task, σ²_task
    with one task.
    """
    from evalnoise.stats import gstudy
    from evalnoise.stats.gdesign import Design, Facet
    from evalnoise.stats.gstudy import NotEstimable

    design = Design((Facet("task"), Facet("trial", ("task",))), replicate="judge_sample")
    nan = float("nan")
    out: dict[str, Any] = {}
    try:
        g = gstudy(
            votes, {"task": tasks, "trial": trials}, design, confidence=confidence, method=method
        )
    except NotEstimable as exc:  # too few votes for any component: the record says why
        g = None
        notes = [f"no component is estimable: {exc}"]
        found: dict[str, int] = {}
    else:
        notes = list(g.warnings)
        found = {_JUDGE_COMPONENTS[e]: i for i, e in enumerate(g.effects)}
    if g is None:
        pass
    elif g.residual_includes is not None:  # one sample per trial: trial and judge in one
        found.pop("judge")
        notes.append(
            "one judge sample per trial: judge noise cannot be separated from trial noise; "
            "sigma2_judge and sigma2_trial are NaN (icc_oneway gives their sum)"
        )
    elif "trial" not in found:
        found.pop("task", None)
        notes.append("one trial per task: sigma2_trial and sigma2_task are not identified (NaN)")
    elif "task" not in found:
        notes.append("fewer than two tasks: sigma2_task is not identified (NaN)")
    for name in ("task", "trial", "judge"):
        if name not in found:
            for key in ("", "_raw", "_ci_low", "_ci_high"):
                out[f"sigma2_{name}{key}"] = nan
            out |= {f"detected_{name}": False, f"share_{name}": None}
            out |= {f"share_{name}_estimate": nan, f"ms_{name}": nan, f"df_{name}": 0}
            continue
        i = found[name]
        out[f"sigma2_{name}"] = float(g.sigma2[i])
        out[f"sigma2_{name}_raw"] = float(g.sigma2_raw[i])
        out[f"sigma2_{name}_ci_low"] = float(g.ci_low[i])
        out[f"sigma2_{name}_ci_high"] = float(g.ci_high[i])
        out[f"detected_{name}"] = bool(g.detected[i])
        out[f"share_{name}"] = None if not g.detected[i] else float(g.share[i])
        out[f"share_{name}_estimate"] = float(g.share_estimate[i])
        out[f"ms_{name}"] = float(g.ms[i])
        out[f"df_{name}"] = int(g.df[i])
    if g is None:
        out |= {
            "icc_task": nan, "k_trial": nan, "k_task_trial": nan, "k_task": nan,
            "mean": float(np.mean(votes)) if len(votes) else nan, "n_tasks": 0, "n_trials": 0,
            "n_obs": int(np.isfinite(np.asarray(votes, dtype=float)).sum()),
            "balanced": False, "method": method, "ci_method": "mls",
            "confidence": float(confidence), "warnings": notes,
        }  # fmt: skip
        return out
    if len(found) < 3:  # a share of a total that is not identified is not one
        for name in ("task", "trial", "judge"):
            out[f"share_{name}"] = None
            out[f"share_{name}_estimate"] = nan
    i_task, i_trial = found.get("task"), found.get("trial")
    out["icc_task"] = out["share_task_estimate"]
    out["k_trial"] = nan if i_trial is None else float(g.ems[i_trial, i_trial])
    both = i_task is not None and i_trial is not None
    out["k_task_trial"] = float(g.ems[i_task, i_trial]) if both else nan
    out["k_task"] = nan if i_task is None else float(g.ems[i_task, i_task])
    codes = {"task": pd.factorize(np.asarray(tasks))[0]}
    pairs = pd.DataFrame({"t": codes["task"], "r": np.asarray(trials)}).drop_duplicates()
    out |= {
        "mean": float(np.mean(votes)),
        "n_tasks": int(np.unique(codes["task"]).size),
        "n_trials": len(pairs),
        "n_obs": int(g.n_obs),
        "balanced": bool(g.balanced),
        "method": g.method,
        "ci_method": g.ci_method,
        "confidence": float(g.confidence),
        "warnings": notes,
    }
    return out


def judges_summary(record: Mapping[str, Any]) -> dict[str, Any]:
    """The judges' part of a group's judge summary (:func:`evalnoise.pipeline.summary.
    judge_summary`): ``judges``, one short record per judge (κ with its interval, false
    accept and reject rates, parse rate, unjudged trials, accuracy by the judge), the
    ``best_judge``, and ``judge_facet``, the judges' variance components (None with one
    judge). Empty lists and None for a record from before several judges."""
    judges = []
    for r in record.get("judges") or []:
        agreement = r.get("agreement") or {}
        accuracy = r.get("accuracy") or {}
        judges.append(
            {
                "name": r["name"],
                "kind": r.get("kind"),
                "rule": r.get("rule"),
                "mode": r.get("mode"),
                "samples": r.get("samples"),
                "same_as_reference": bool(r.get("same_as_reference")),
                "sent": r.get("sent"),
                "parse_rate": r.get("parse_rate"),
                "unjudged": int(r.get("unjudged") or 0),
                "accuracy": accuracy.get("mean"),
                "kappa": agreement.get("kappa"),
                "kappa_ci_low": agreement.get(
                    "kappa_cluster_ci_low", agreement.get("kappa_ci_low")
                ),
                "kappa_ci_high": agreement.get(
                    "kappa_cluster_ci_high", agreement.get("kappa_ci_high")
                ),
                "false_accept_rate": agreement.get("false_accept_rate"),
                "false_reject_rate": agreement.get("false_reject_rate"),
                "degenerate": agreement.get("degenerate"),
            }
        )
    facet = record.get("judge_facet")
    if facet:
        facet = {
            k: facet.get(k)
            for k in (
                "n_judges",
                "sigma2_judges",
                "sigma2_judges_ci_low",
                "sigma2_judges_ci_high",
                "share_judges_estimate",
                "share_judges",
                "detected_judges",
                "variance_bound",
                "method",
                "ci_method",
                "confidence",
            )
        } | {
            "components": [
                {
                    k: c.get(k)
                    for k in (
                        "component",
                        "sigma2",
                        "ci_low",
                        "ci_high",
                        "ci_high_cut",
                        "detected",
                        "counted",
                    )
                }
                | (
                    {"component": f"{c['component']} ({c['includes']})"}
                    if c.get("includes")
                    else {}
                )
                for c in facet.get("components") or []
                if "judge" in c["facets"] and (c["component"] != "residual" or c.get("includes"))
            ]
        }
    return {"judges": judges, "best_judge": record.get("best_judge"), "judge_facet": facet}
