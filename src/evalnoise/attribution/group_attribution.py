"""One group's attribution record: accuracy under each infra policy, time and host effects,
the noise model, and the flaky-task checks.

:func:`group_attribution` is the per-group part of
:func:`evalnoise.attribution.all_analyses.attribution_for_trials` (one entry of
``attribution.json``'s ``groups``). Pure over its inputs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from evalnoise.formatting import finite_or_none
from evalnoise.runner.infra_policies import InfraPolicy

__all__ = ["DSTUDY_COSTS", "group_attribution"]

#: The D study's costs per facet, in trials (as ``analysis.budget`` counts runs): a trial
#: costs 1, a task nothing beyond its trials.
DSTUDY_COSTS = {"task": 0.0, "trial": 1.0}

_NO_TIMES = "no timestamps: the table has no started_at or ended_at times"


def group_attribution(
    rows: pd.DataFrame,
    label: str,
    policy: InfraPolicy,
    options: Mapping[str, Any],
    has: Mapping[str, bool],
    flaky_frames: list[pd.DataFrame],
) -> dict[str, Any]:
    """Policy sensitivity, time effects, the noise model and flaky tasks of one group (its
    flaky-task rows are appended to ``flaky_frames``). ``options``: ``confidence``,
    ``cluster_se``, ``quantile``, ``target_se``, ``max_tasks``; ``has``: which optional
    columns the table carries."""
    from evalnoise.attribution.flaky import flaky_tasks
    from evalnoise.attribution.policy_sensitivity import policy_sensitivity
    from evalnoise.attribution.time_effects import time_effects

    sensitivity = policy_sensitivity(
        rows,
        on_exhausted=policy.on_exhausted,
        confidence=options["confidence"],
        cluster_se=options["cluster_se"],
        quantile=options["quantile"],
    )
    timed = "started_at" in rows and bool(rows["started_at"].notna().any())
    times, time_note = None, None
    if not timed:
        time_note = _NO_TIMES
    else:
        try:
            times = time_effects(rows, policy=policy, confidence=options["confidence"])
        except ValueError as exc:
            # e.g. one task, or trials all in one time block: the rest of the record stands
            time_note = str(exc)
    flaky = flaky_tasks(rows, policy=policy)
    frame = flaky.to_frame()
    frame.insert(0, "group", label)
    flaky_frames.append(frame)
    checks = _flaky_checks(flaky, has, timed)
    noise, noise_note = _noise_model(times, options, time_note)
    return {
        **_policy_record(sensitivity, policy),
        **_time_record(times, rows),
        "time_effects_not_computed": time_note,
        # one model of the noise (issue 23): the G study's components, the total-error SE
        # beside the clustered one, the D study (evalnoise.facets.noise_record)
        "noise": noise,
        "noise_not_computed": None if noise is not None else noise_note,
        "flaky_flagged": len(frame),
        "flaky_checks_run": [c["name"] for c in checks if c["ran"]],
        "flaky_checks": checks,
    }


def _policy_record(sensitivity: Any, policy: InfraPolicy) -> dict[str, Any]:
    """The group's accuracy under each infra policy, and whether the choice moves it."""
    return {
        "policy": [
            {
                "policy": name,
                "applicable": bool(sensitivity.applicable[i]),
                "mean": sensitivity.mean[i],
                "ci_low": sensitivity.ci_low[i],
                "ci_high": sensitivity.ci_high[i],
                "n_counted": sensitivity.n_counted[i],
                "n_excluded": sensitivity.n_excluded[i],
                "note": sensitivity.note[i],
            }
            for i, name in enumerate(sensitivity.policy)
        ],
        "policy_moves_result": bool(sensitivity.moves_result),
        "policy_max_shift": sensitivity.max_shift,
        "policy_half_width": sensitivity.half_width,
        "declared_policy": policy.mode,
    }


def _time_record(times: Any, rows: pd.DataFrame) -> dict[str, Any]:
    """The infrastructure's share, each variance component and the drift (None where the
    time model could not be fitted)."""
    comps = None if times is None else times.components
    return {
        "infra_share": None if comps is None else comps.infra_share,
        "infra_share_ci_low": None if comps is None else comps.infra_share_ci_low,
        "infra_share_ci_high": None if comps is None else comps.infra_share_ci_high,
        # the share rule (evalnoise.stats.shares): detected when the permutation family of
        # its components rejects; otherwise reported as not detected, not as a share
        "infra_share_detected": None if comps is None else bool(comps.infra_detected),
        "infra_share_pvalue": None if comps is None else finite_or_none(comps.infra_pvalue),
        "infra_share_permutations": (
            None if comps is None or comps.permutation is None else comps.permutation.n_permutations
        ),
        # every component's MLS interval (its magnitude), share and detection — by the
        # permutation test for time and host components (named infra_share_* so that what
        # depends on when trials ran stays under one prefix)
        "infra_share_components_ci": {} if comps is None else _components_ci(comps),
        "infra_components": [] if comps is None else list(comps.infra_components),
        "components": (
            {} if comps is None else {c: comps.sigma2[i] for i, c in enumerate(comps.components)}
        ),
        "drift_slope": None if times is None else times.drift.slope,
        "drift_pvalue": None if times is None else times.drift.pvalue,
        "time_blocks": 0 if times is None else times.n_time_blocks,
        # the hosts of the data, also when the time model could not be fitted
        "hosts": times.n_hosts if times is not None else _n_hosts(rows),
    }


def _components_ci(comps: Any) -> dict[str, dict[str, Any]]:
    return {
        c: {
            "ci_low": comps.ci_low[i],
            "ci_high": comps.ci_high[i],
            "share": comps.share[i],
            "detected": bool(comps.detected[i]),
            "detected_by": comps.detected_by[i] if comps.detected_by else None,
            "pvalue": None if comps.pvalue is None else finite_or_none(comps.pvalue[i]),
            # the smallest p this design can give: above alpha, not testable here
            "min_pvalue": (
                None if comps.min_pvalue is None else finite_or_none(comps.min_pvalue[i])
            ),
            "testable": _testable(comps, i),
        }
        for i, c in enumerate(comps.components)
    }


def _flaky_checks(flaky: Any, has: Mapping[str, bool], timed: bool) -> list[dict[str, Any]]:
    """Each flaky-task check: whether it ran, why not, how many tasks it flagged."""
    checks = []
    for check in flaky.checks:
        ran, reason = check.ran, "" if check.ran else check.description
        if check.name == "infra_concentration" and not has["status"]:
            ran, reason = False, "no outcome (error kind) column: no infra outcome to locate"
        elif check.name == "time_block" and not timed:
            reason = _NO_TIMES
        checks.append(
            {"name": check.name, "ran": ran, "reason": reason, "n_flagged": check.n_flagged}
        )
    return checks


def _noise_model(
    times: Any, options: Mapping[str, Any], time_note: str | None
) -> tuple[dict[str, Any] | None, str | None]:
    """The group's noise model (:func:`evalnoise.facets.noise_record`) from its G study, or
    None with why."""
    comps = None if times is None else times.components
    if comps is None or comps.gstudy is None:
        return None, time_note
    from evalnoise.facets import noise_record

    # what to buy next: tasks or trials, the time blocks and hosts as they ran (spread
    # over as many; the pipeline does not buy them). The budget counts trials, as
    # analysis.budget counts runs: a trial costs 1, a task nothing beyond its trials.
    # Fixed units, not the measured seconds: the same trials give the same D study on
    # every rerun (a report must not change when nothing it reads did).
    sizes = comps.gstudy.sizes
    limits = {f: (n, n) for f, n in sizes.items() if f != "task"}
    target = options.get("target_se")
    try:
        noise = noise_record(
            comps.gstudy,
            task="task",
            se_clustered=times.se_clustered,
            costs=dict(DSTUDY_COSTS),
            target_se=target if target else times.se_clustered / 2,
            limits=limits,
            max_tasks=options.get("max_tasks"),
        )
    except ValueError as exc:  # a model the D study cannot use: the rest stands
        return None, str(exc)
    _permutation_decisions(noise, comps)
    return noise, time_note


def _testable(comps: Any, i: int) -> bool | None:
    """Whether component ``i``'s permutation test can reach its level at this design (its
    smallest attainable adjusted p-value at most alpha); None when it was not so tested."""
    least = None if comps.min_pvalue is None else finite_or_none(comps.min_pvalue[i])
    if least is None or comps.permutation is None:
        return None
    return bool(least <= comps.permutation.alpha)


def _permutation_decisions(noise: dict[str, Any], comps: Any) -> None:
    """The noise model's components (the G study's record, named in its notation,
    ``task×time_block``) carry the attribution's decisions: a time or host component is
    detected as the permutation test and the share rule say, not by its interval, so the
    two lines of one group never disagree."""
    ours = {c.replace(":", "×"): i for i, c in enumerate(comps.components)}
    for c in (noise.get("gstudy") or {}).get("components") or []:
        i = ours.get(c.get("component"))
        if i is None or not comps.detected_by:
            continue
        tested = comps.detected_by[i] == "permutation"
        if not tested and comps.components[i] not in comps.infra_components:
            continue
        c["detected"] = bool(comps.detected[i])
        c["detected_by"] = comps.detected_by[i]
        c["pvalue"] = None if comps.pvalue is None else finite_or_none(comps.pvalue[i])
        c["testable"] = _testable(comps, i)
        c["share"] = c.get("share_estimate") if c["detected"] else None


def _n_hosts(rows: pd.DataFrame) -> int:
    """Distinct hosts of a group's rows as :func:`~evalnoise.attribution.time_effects`
    counts them (a missing host is one host, "(unknown)"); 0 without a host column."""
    if "host" not in rows or rows.empty:
        return 0
    return int(rows["host"].astype(object).where(rows["host"].notna(), "(unknown)").nunique())
