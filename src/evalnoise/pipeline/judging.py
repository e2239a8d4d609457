"""How good is the judge, and how noisy: the judge stage's numbers for one group.

For one agent × resource profile, the LLM judge's scores (``results/judged/``) are set
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
  flagged ``degenerate``;
- **the judge's own noise** (the G study, :func:`evalnoise.stats.gstudy`, of the design
  task / trial:task with judge samples as the replicates): with k > 1 samples per trial, the
  variance of the votes splits into task, trial-within-task and judge-within-trial
  components, each with its interval; a component whose interval reaches 0 is not detected
  and has no share (``share_*`` None, ``share_*_estimate`` the point share);
- **what the judge cost** (``costs``, :func:`evalnoise.costs.cost_drivers` with the judge
  drivers): calls sent to the server, samples from the cache, tokens, per trial.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from evalnoise.formatting import jsonable

__all__ = ["judge_quality"]

_KEY = ["task_id", "trial", "attempt"]


def judge_quality(
    reference_paths: Iterable[str | os.PathLike[str]],
    judged_paths: Iterable[str | os.PathLike[str]],
    tasks_path: str | os.PathLike[str],
    agent: str,
    resource_profile: str,
    *,
    options: Mapping[str, Any],
    policy: Mapping[str, Any],
    judge: Mapping[str, Any],
) -> dict[str, Any]:
    """The judge's record of one group (see the module docstring); JSON-ready.

    ``options`` is the config's ``analysis`` section, ``policy`` the infra policy,
    ``judge`` the config's ``scorer.judge`` section (mode, samples).
    """
    from evalnoise.costs import JUDGE_DRIVERS, cost_drivers
    from evalnoise.pipeline.collect import load_group, read_scores
    from evalnoise.pipeline.plan import group_label
    from evalnoise.pipeline.stages import group_estimates
    from evalnoise.scorers.judge import CALL_FAILED, JUDGE_ERROR
    from evalnoise.stats import judge_agreement, judge_agreement_by_level

    def mine(frame: pd.DataFrame) -> pd.DataFrame:
        return frame[(frame["agent"] == agent) & (frame["resource_profile"] == resource_profile)]

    judged_paths = list(judged_paths)
    reference = mine(read_scores(reference_paths))
    # with the explanation: it tells a failed call from an unparseable reply
    judged = mine(read_scores(judged_paths, payload=True))
    # infra outcomes and crashes are never sent to the judge: there is no answer to judge
    skipped = judged["judge_status"].isin(["skipped_infra", "skipped_crash"])
    sent = judged[~skipped & judged["judge_status"].notna()]
    statuses = {str(k): int(v) for k, v in sent["judge_status"].value_counts().items()}
    n_sent = len(sent)
    parsed = statuses.get("ok", 0) + statuses.get("no_prediction", 0)
    # a judge_error is either a call that got no reply (the server failed) or a reply that
    # did not parse: both leave the trial unjudged, only the second counts against parsing
    errors = sent[sent["judge_status"] == JUDGE_ERROR]
    call_failures = int(errors["judge_explanation"].fillna("").str.startswith(CALL_FAILED).sum())
    replied = n_sent - call_failures

    group = load_group(judged_paths, tasks_path, agent, resource_profile, policy)
    accuracy = group_estimates(group.frame, group.group, options)

    both = reference[[*_KEY, "correct", "score"]].merge(
        judged[[*_KEY, "judge_status", "judge_votes"]], on=_KEY, how="inner"
    )
    both = both[both["correct"].notna() & (both["judge_status"] == "ok")]
    has_votes = both["judge_votes"].map(lambda v: v is not None and len(v) > 0).astype(bool)
    both = both[has_votes]
    tasks = pd.read_parquet(tasks_path, columns=["task_id", "level"])
    levels = dict(zip(tasks["task_id"].astype(str), tasks["level"].astype(str), strict=True))

    counts = np.array([len(v) for v in both["judge_votes"]], dtype=np.int64)
    judge_v = np.array([float(x) for v in both["judge_votes"] for x in v], dtype=float)
    ref_v = np.repeat(both["correct"].astype(float).to_numpy(), counts)
    task_v = np.repeat(both["task_id"].astype(str).to_numpy(), counts)
    trial_v = np.repeat(
        (both["task_id"].astype(str) + "#" + both["trial"].astype(str)).to_numpy(), counts
    )
    level_v = np.array([levels.get(t, "") for t in task_v])

    record: dict[str, Any] = {
        "agent": agent,
        "resource_profile": resource_profile,
        "group": group_label(agent, resource_profile),
        "mode": judge.get("mode", "verdict"),
        "samples": int(judge.get("samples", 1)),
        "sent": n_sent,
        "statuses": statuses,
        # parsed share of the replies that came back; unjudged = every judge_error
        "parse_rate": parsed / replied if replied else None,
        "unjudged": len(errors),
        "call_failures": call_failures,
        "unparsed": len(errors) - call_failures,
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
    return jsonable(record)


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
