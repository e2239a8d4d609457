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
- **the judge's own noise** (:func:`evalnoise.stats.nested_components`): with k > 1
  samples per trial, the variance of the votes splits into task, trial-within-task and
  judge-within-trial components;
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
    from evalnoise.stats import judge_agreement, judge_agreement_by_level, nested_components

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
        record["nested"] = nested_components(
            judge_v, task_v, trial_v, confidence=options["confidence"]
        ).to_dict()
    return jsonable(record)
