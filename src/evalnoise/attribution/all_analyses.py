"""One entry point for a whole trial table: every attribution analysis, the tables they make,
and the checks that could not run, with why.

:func:`attribution_for_trials` runs over any trial table — the pipeline's score shards, or
a table imported from an Inspect log, a CSV, a benchmark's own results — and uses whatever
of ``started_at``/``ended_at``, ``host``, the outcome (error kind), ``attempt`` and
``resource_profile`` it carries:

- per group (agent × resource profile): :func:`~evalnoise.attribution.policy_sensitivity`,
  :func:`~evalnoise.attribution.time_effects` (needs timestamps) and
  :func:`~evalnoise.attribution.flaky_tasks`;
- per agent and pair of its resource profiles:
  :func:`~evalnoise.attribution.resource_sensitivity` (needs two profiles).

It returns :class:`AttributionTables`: the summary written as ``attribution.json``, the
per-task resource table (``resource_sensitivity.parquet``) and the flagged tasks
(``flaky_tasks.csv``), exactly as the pipeline's ``attribution`` rule writes them, and
:attr:`AttributionTables.not_run`, every analysis or check that could not run and why
("no timestamps", "one resource profile", ...). :func:`read_attribution` reads the three
files back (for the report) and says which are missing or invalid instead of raising.

Pure over its inputs (no I/O but :func:`read_attribution`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd

from evalnoise.column_names import group_label
from evalnoise.formatting import finite_or_none
from evalnoise.runner.infra_policies import InfraPolicy, infra_policy
from evalnoise.runner.variant import VARIANT_COLUMNS
from evalnoise.schema import STATUSES

__all__ = [
    "DSTUDY_COSTS",
    "FLAKY_COLUMNS",
    "RESOURCE_COLUMNS",
    "AttributionTables",
    "NotRun",
    "TrialColumns",
    "attribution_for_trials",
    "group_label",
    "read_attribution",
]

#: Columns of the resource table the report needs (the per-task table of
#: :func:`~evalnoise.attribution.resource_sensitivity` with the agent and the two profiles).
RESOURCE_COLUMNS = (
    "agent",
    "profile_a",
    "profile_b",
    "task_id",
    "n_pairs",
    "accuracy_a",
    "accuracy_b",
    "tested",
    "pvalue",
    "pvalue_adjusted",
    "significant",
    "between_limits",
)
#: The D study's costs per facet, in trials (as ``analysis.budget`` counts runs): a trial
#: costs 1, a task nothing beyond its trials.
DSTUDY_COSTS = {"task": 0.0, "trial": 1.0}
#: Columns of the flagged-task table the report needs.
FLAKY_COLUMNS = ("group", "rank", "task_id", "reason", "checks")

# verdict words of imported tables (as evalnoise.trial_table reads a user's score column)
_TRUE = frozenset({"true", "t", "yes", "y", "correct", "c"})
_FALSE = frozenset({"false", "f", "no", "n", "incorrect", "i"})


@dataclass(frozen=True)
class TrialColumns:
    """Which column of a trial table plays which role; None (or a column the table lacks)
    means the table does not have it. Defaults are the pipeline's names
    (:data:`evalnoise.schema.TRIALS` / ``SCORES``).

    task, trial : required. agent : the agent or any group name (absent: one group "all").
    resource_profile : absent: one profile; no resource comparison.
    score, correct : the verdict (at least one); ``correct`` wins where both are set.
    status : the outcome / error kind: ok, timeout, oom_killed, agent_error, infra_error
        (absent: every trial is "ok"; no infra policy can differ).
    attempt : retries of one trial (absent: every row is attempt 1).
    started_at, ended_at : timestamps (datetimes, ISO strings or seconds); the time checks
        use ``started_at``, else ``ended_at``.
    host : where the trial ran (absent: no host check, no host variance component).
    memory_limit_bytes, peak_memory_bytes : for the resource table's memory columns.
    """

    task: str = "task_id"
    trial: str = "trial"
    agent: str | None = "agent"
    resource_profile: str | None = "resource_profile"
    score: str | None = "score"
    correct: str | None = "correct"
    status: str | None = "status"
    attempt: str | None = "attempt"
    started_at: str | None = "started_at"
    ended_at: str | None = "ended_at"
    host: str | None = "host"
    memory_limit_bytes: str | None = "memory_limit_bytes"
    peak_memory_bytes: str | None = "peak_memory_bytes"

    @classmethod
    def of(cls, columns: TrialColumns | Mapping[str, str | None] | None) -> TrialColumns:
        """``columns`` as a :class:`TrialColumns`: a mapping role → column overrides the
        defaults (``group`` is accepted for ``agent``, as ``evalnoise analyze`` names it)."""
        if columns is None:
            return cls()
        if isinstance(columns, cls):
            return columns
        if not isinstance(columns, Mapping):
            raise TypeError("columns must be a TrialColumns or a mapping role → column")
        spec = dict(columns)
        if "group" in spec:
            spec.setdefault("agent", spec.pop("group"))
        roles = {f.name for f in fields(cls)}
        unknown = sorted(set(spec) - roles)
        if unknown:
            raise ValueError(f"unknown column roles {unknown}; known: {sorted(roles)}")
        return cls(**spec)

    def read(self) -> tuple[str, ...]:
        """Every column the analyses read from a table with these names (the roles' columns,
        ``duration_s``, ``exit_code`` and the variant columns): a caller that reads a trial
        file may read only these (:func:`evalnoise.pipeline.collect.read_scores`)."""
        roles = (getattr(self, f.name) for f in fields(self))
        names = [n for n in roles if n is not None]
        return tuple(dict.fromkeys([*names, "duration_s", "exit_code", *VARIANT_COLUMNS]))


@dataclass(frozen=True)
class NotRun:
    """An analysis or check that could not run. ``scope``: the group label, the agent (for
    resource sensitivity) or ``"*"`` (the whole table); ``check``: e.g. ``time_effects``,
    ``time_block``, ``host``, ``resource_sensitivity``; ``reason``: why."""

    scope: str
    check: str
    reason: str


@dataclass(frozen=True)
class AttributionTables:
    """Everything the attribution analyses make for a trial table.

    Attributes
    ----------
    summary : JSON-ready (``attribution.json``): per group label, the policy sensitivity,
        the infrastructure share of variance and drift, and the flaky-task checks (or
        ``{"not_computed": reason}``); ``_resource``: one entry per agent and profile pair;
        ``_not_run``: analyses of the whole table that could not run.
    resource : per task, agent and profile pair (``resource_sensitivity.parquet``).
    flaky : the flagged tasks of every group with their reasons (``flaky_tasks.csv``).
    problems : when read from files (:func:`read_attribution`): each artifact that is
        missing or invalid; the tables it would have filled are empty.
    """

    summary: Mapping[str, Any]
    resource: pd.DataFrame
    flaky: pd.DataFrame
    problems: tuple[str, ...] = field(default=())

    @property
    def groups(self) -> list[str]:
        """The group labels of the summary, in its order."""
        return [k for k in self.summary if not k.startswith("_")]

    @property
    def not_run(self) -> tuple[NotRun, ...]:
        """Every analysis or check that could not run, and why (entries of a summary read
        back that are not what the stage writes are skipped)."""
        out = [
            NotRun(str(r.get("scope")), str(r.get("check")), str(r.get("reason")))
            for r in self.summary.get("_not_run") or ()
            if isinstance(r, Mapping)
        ]
        for label in self.groups:
            g = self.summary[label]
            if not isinstance(g, Mapping):
                continue
            if "not_computed" in g:
                out.append(NotRun(label, "attribution", str(g["not_computed"])))
                continue
            if g.get("time_effects_not_computed"):
                out.append(NotRun(label, "time_effects", str(g["time_effects_not_computed"])))
            for check in g.get("flaky_checks") or ():
                if isinstance(check, Mapping) and not check.get("ran", True):
                    out.append(NotRun(label, str(check.get("name")), str(check.get("reason"))))
        return tuple(out)

    def to_dict(self) -> dict[str, Any]:
        """The summary (as ``attribution.json``) and the two tables as records."""
        from evalnoise.formatting import jsonable

        return jsonable(
            {
                "summary": self.summary,
                "resource": self.resource.astype(object).to_dict("records"),
                "flaky": self.flaky.astype(object).to_dict("records"),
                "not_run": [vars(n) for n in self.not_run],
                "problems": list(self.problems),
            }
        )


# --- the trial table in the analyses' terms ---------------------------------------------------


def _verdicts(values: pd.Series) -> np.ndarray:
    """Scores as floats: numbers as they are, booleans and verdict words as 1/0, else NaN."""
    if pd.api.types.is_bool_dtype(values):
        return values.astype("boolean").astype("Float64").to_numpy(dtype=float, na_value=np.nan)
    out = np.array(pd.to_numeric(values, errors="coerce"), dtype=float)
    missing = np.isnan(out)
    if missing.any():
        words = values.astype(str).str.strip().str.lower().to_numpy()
        out[missing & np.isin(words, list(_TRUE))] = 1.0
        out[missing & np.isin(words, list(_FALSE))] = 0.0
    return out


def _times(values: pd.Series) -> pd.Series:
    """Datetimes (UTC) or, for numbers, seconds; unparseable values become missing."""
    if pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values):
        return values.astype(float)
    if isinstance(values.dtype, pd.DatetimeTZDtype) or pd.api.types.is_datetime64_dtype(values):
        return pd.to_datetime(values, utc=True)
    return pd.to_datetime(values, utc=True, errors="coerce", format="ISO8601")


def _exists(frame: pd.DataFrame, column: str | None) -> bool:
    return column is not None and column in frame.columns


def _canonical(
    trials: pd.DataFrame, cols: TrialColumns
) -> tuple[pd.DataFrame, dict[str, bool], list[NotRun]]:
    """The table with the pipeline's column names, which roles hold any value, and
    table-wide notes. A column that exists is carried over even when empty, so a table that
    already has the pipeline's shape reaches the analyses unchanged."""
    for role in ("task", "trial"):
        name = getattr(cols, role)
        if name not in trials.columns:
            raise ValueError(f"the trial table has no {role} column {name!r}")
    trials = trials.reset_index(drop=True)  # rows align by position (concatenated tables)
    roles = ("agent", "resource_profile", "status", "attempt", "started_at", "ended_at", "host")
    exists = {r: _exists(trials, getattr(cols, r)) for r in roles}
    has = {r: exists[r] and bool(trials[getattr(cols, r)].notna().any()) for r in roles}
    has["score"] = _exists(trials, cols.score)
    has["correct"] = _exists(trials, cols.correct)
    if not (has["score"] or has["correct"]):
        raise ValueError("the trial table has neither a score nor a correct column")
    notes: list[NotRun] = []
    out = pd.DataFrame(index=trials.index)
    out["agent"] = trials[cols.agent].astype(str) if has["agent"] else "all"
    # one placeholder profile keeps one code path; group labels then omit it
    out["resource_profile"] = (
        trials[cols.resource_profile].astype(str) if has["resource_profile"] else "-"
    )
    out["task_id"] = trials[cols.task].astype(str)
    out["trial"] = trials[cols.trial]
    out["attempt"] = (
        pd.to_numeric(trials[cols.attempt], errors="coerce").fillna(1).astype(np.int64)
        if has["attempt"]
        else 1
    )
    if has["status"]:
        status = trials[cols.status].astype("string").str.strip().str.lower()
        status = status.fillna("ok").replace("", "ok")
        unknown = sorted(set(status.unique()) - set(STATUSES))
        if unknown:
            notes.append(
                NotRun(
                    "*",
                    "outcomes",
                    f"outcome values {unknown} are not one of {list(STATUSES)}: they count as "
                    "answers, not as infrastructure outcomes",
                )
            )
        out["status"] = status.astype(object).to_numpy()
    else:
        out["status"] = "ok"
        notes.append(
            NotRun(
                "*",
                "policy_sensitivity",
                "no outcome (error kind) column: no trial is known to be an infrastructure "
                "outcome, so every infra policy gives the same accuracy",
            )
        )
    if has["score"]:
        out["score"] = _verdicts(trials[cols.score])
    if has["correct"]:
        verdict = _verdicts(trials[cols.correct])
        out["correct"] = pd.array(
            np.where(np.isnan(verdict), None, verdict == 1.0), dtype="boolean"
        )
    if has["started_at"] or (exists["started_at"] and not has["ended_at"]):
        out["started_at"] = _times(trials[cols.started_at]).to_numpy()
    elif has["ended_at"]:
        out["started_at"] = _times(trials[cols.ended_at]).to_numpy()
        notes.append(
            NotRun(
                "*",
                "started_at",
                "no start times: time blocks and drift use the end times (ended_at)",
            )
        )
    if exists["host"]:
        out["host"] = trials[cols.host].to_numpy()
    if "duration_s" in trials.columns:
        # the container seconds a trial took: the D study's cost of a trial
        out["duration_s"] = pd.to_numeric(trials["duration_s"], errors="coerce").to_numpy()
    if "exit_code" in trials.columns:
        # tells a crash from another agent error: the policies count crashes as they count
        # infra outcomes (evalnoise.runner.infra_policies)
        out["exit_code"] = pd.to_numeric(trials["exit_code"], errors="coerce").to_numpy()
    for role in ("memory_limit_bytes", "peak_memory_bytes"):
        name = getattr(cols, role)
        if _exists(trials, name):
            out[role] = pd.to_numeric(trials[name], errors="coerce")
    for name in VARIANT_COLUMNS:
        # part of the trial key (evalnoise.schema.TRIAL_KEY): a (task, trial) runs
        # once per prompt / sampling variant, and those runs are different trials
        if name in trials.columns:
            out[name] = trials[name].to_numpy()
    return out, has, notes


# --- the analyses ---------------------------------------------------------------------------


def attribution_for_trials(
    trials: pd.DataFrame,
    columns: TrialColumns | Mapping[str, str | None] | None = None,
    *,
    policy: str | Mapping[str, Any] | InfraPolicy = "as_incorrect",
    confidence: float = 0.95,
    cluster_se: str = "cr1",
    quantile: str = "normal",
    groups: Sequence[tuple[str, str]] | None = None,
    memory_mb: Mapping[str, float] | pd.Series | None = None,
    max_tasks: int | None = None,
) -> AttributionTables:
    """Every attribution analysis of a trial table, with the checks that could not run.

    Parameters
    ----------
    trials : one row per attempt (or per trial), any number of agents and resource
        profiles; the columns :class:`TrialColumns` names, of which only task, trial and a
        verdict (score or correct) are required.
    columns : role → column name (:class:`TrialColumns` or a mapping overriding its
        defaults, e.g. ``{"task": "task", "agent": "model", "status": "outcome"}``).
    policy : the declared infra policy (as in the config: ``as_incorrect``, ``exclude``,
        ``retry:N`` or a mapping): how infra outcomes count in the time and host checks,
        the variance components and the resource pairs; the policy-sensitivity table
        shows every policy regardless.
    confidence, cluster_se, quantile : the accuracy CIs (:func:`evalnoise.stats.accuracy`);
        ``confidence`` is also the level of the infrastructure share's interval.
    groups : the (agent, resource profile) pairs to analyse, in order (default: every pair
        in the table, sorted); a pair with no rows is skipped.
    memory_mb : each task's declared memory need in MiB (the tasks table's ``memory_mb``),
        used when the trials carry no measured peaks.
    max_tasks : the task pool, the tasks the benchmark has: no D-study design has more
        (:func:`evalnoise.facets.noise_record`; None: no cap).

    Returns
    -------
    AttributionTables

    Notes
    -----
    What runs depends on the columns: without timestamps the time-block variance
    components, the infrastructure share, the drift test and the ``time_block`` check are
    not computed ("no timestamps"); without a host column the ``host`` check is not run and
    no host component is fitted; with one resource profile per agent there is no resource
    comparison; without an outcome column no trial is an infra outcome (the policies
    coincide and ``infra_concentration`` is not run). Each is listed in
    :attr:`AttributionTables.not_run`. A group whose analyses raise (one task, every score
    equal) gets ``{"not_computed": reason}``; the others stand.
    """
    from evalnoise.attribution.resource import resource_sensitivity
    from evalnoise.formatting import jsonable

    cols = TrialColumns.of(columns)
    pol = infra_policy(policy)
    frame, has, notes = _canonical(trials, cols)
    profile_of = (lambda p: p) if has["resource_profile"] else (lambda p: None)
    if groups is None:
        pairs = frame[["agent", "resource_profile"]].drop_duplicates()
        groups = sorted(map(tuple, pairs.to_numpy().tolist()))
    groups = [(str(a), str(r)) for a, r in groups]
    options = {
        "confidence": confidence,
        "cluster_se": cluster_se,
        "quantile": quantile,
        "max_tasks": max_tasks,
    }

    summary: dict[str, Any] = {}
    flaky_frames, resource_frames = [], []
    present = []
    for agent, profile in groups:
        rows = frame[(frame["agent"] == agent) & (frame["resource_profile"] == profile)]
        label = group_label(agent, profile_of(profile))
        if rows.empty:
            continue
        present.append((agent, profile))
        try:
            summary[label] = _group_summary(rows, label, pol, options, has, flaky_frames)
        except ValueError as exc:
            # a degenerate group (one task, every score equal) is reported, never a crash
            summary[label] = {"not_computed": str(exc)}

    declared = None if memory_mb is None else pd.Series(memory_mb, dtype=float)
    for agent in sorted({a for a, _ in present}):
        profiles = sorted(r for a, r in present if a == agent)
        if len(profiles) < 2:
            why = (
                "no resource profile column: nothing to compare"
                if not has["resource_profile"]
                else f"one resource profile ({profiles[0]}): nothing to compare"
            )
            notes.append(NotRun(agent, "resource_sensitivity", why))
            continue
        rows = frame[frame["agent"] == agent]
        for a, b in combinations(profiles, 2):
            need, source = _memory_need(rows, a, b, declared)
            try:
                result = resource_sensitivity(rows, a, b, memory_mb=need, policy=pol)
            except ValueError as exc:
                notes.append(NotRun(agent, "resource_sensitivity", f"{a} vs {b}: {exc}"))
                continue
            table = result.to_frame()
            table.insert(0, "agent", agent)
            table.insert(1, "profile_a", a)
            table.insert(2, "profile_b", b)
            resource_frames.append(table)
            significant = table[table["significant"].astype(bool)]
            between = table[table["between_limits"].fillna(False).astype(bool)]
            summary.setdefault("_resource", []).append(
                {
                    "agent": agent,
                    "profile_a": a,
                    "profile_b": b,
                    "n_tasks": len(table),
                    "n_tested": int(table["tested"].astype(bool).sum()),
                    "significant": sorted(significant["task_id"].astype(str)),
                    "between_limits": sorted(between["task_id"].astype(str)),
                    "adjust": "Benjamini-Hochberg",
                    "memory_need": source,
                }
            )
    if notes:
        summary["_not_run"] = [vars(n) for n in notes]
    resource = pd.concat(resource_frames, ignore_index=True) if resource_frames else pd.DataFrame()
    flaky = pd.concat(flaky_frames, ignore_index=True) if flaky_frames else pd.DataFrame()
    return AttributionTables(summary=jsonable(summary), resource=resource, flaky=flaky)


def _memory_need(
    rows: pd.DataFrame, a: str, b: str, declared: pd.Series | None
) -> tuple[pd.Series | None, str]:
    """Each task's memory need in MiB: the largest peak its trials reached under the profile
    with the higher hard limit (what the agent really used when it could), else the task's
    declared ``memory_mb``. A declared spec says what a task is given, not what an agent
    needs: an agent that loads a model in its container needs more than the spec."""
    if (
        "peak_memory_bytes" in rows
        and "memory_limit_bytes" in rows
        and rows["peak_memory_bytes"].notna().any()
    ):
        limits = rows.groupby("resource_profile")["memory_limit_bytes"].max()
        roomy = max((a, b), key=lambda r: float(limits.get(r, float("nan")) or float("inf")))
        ok = rows[(rows["resource_profile"] == roomy) & rows["peak_memory_bytes"].notna()]
        if not ok.empty:
            peaks = ok.groupby(ok["task_id"].astype(str))["peak_memory_bytes"].max()
            return peaks / 2**20, f"measured: largest peak under {roomy}"
    return declared, "declared: the task's memory_mb"


def _group_summary(
    rows: pd.DataFrame,
    label: str,
    policy: InfraPolicy,
    options: Mapping[str, Any],
    has: Mapping[str, bool],
    flaky_frames: list[pd.DataFrame],
) -> dict[str, Any]:
    """Policy sensitivity, time effects and flaky tasks of one group (its flaky-task rows
    are appended to ``flaky_frames``)."""
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
        time_note = "no timestamps: the table has no started_at or ended_at times"
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
    checks = []
    for check in flaky.checks:
        ran, reason = check.ran, "" if check.ran else check.description
        if check.name == "infra_concentration" and not has["status"]:
            ran, reason = False, "no outcome (error kind) column: no infra outcome to locate"
        elif check.name == "time_block" and not timed:
            reason = "no timestamps: the table has no started_at or ended_at times"
        checks.append(
            {"name": check.name, "ran": ran, "reason": reason, "n_flagged": check.n_flagged}
        )
    comps = None if times is None else times.components
    noise, noise_note = None, time_note
    if comps is not None and comps.gstudy is not None:
        from evalnoise.facets import noise_record

        # what to buy next: tasks or trials, the time blocks and hosts as they ran (spread
        # over as many; the pipeline does not buy them). The budget counts trials, as
        # analysis.budget counts runs: a trial costs 1, a task nothing beyond its trials.
        # Fixed units, not the measured seconds: the same trials give the same D study on
        # every rerun (a report must not change when nothing it reads did).
        sizes = comps.gstudy.sizes
        costs = dict(DSTUDY_COSTS)
        limits = {f: (n, n) for f, n in sizes.items() if f != "task"}
        target = options.get("target_se")
        try:
            noise = noise_record(
                comps.gstudy,
                task="task",
                se_clustered=times.se_clustered,
                costs=costs,
                target_se=target if target else times.se_clustered / 2,
                limits=limits,
                max_tasks=options.get("max_tasks"),
            )
        except ValueError as exc:  # a model the D study cannot use: the rest stands
            noise_note = str(exc)
        else:
            _permutation_decisions(noise, comps)
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
        "infra_share_components_ci": (
            {}
            if comps is None
            else {
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
        ),
        "infra_components": [] if comps is None else list(comps.infra_components),
        "components": (
            {} if comps is None else {c: comps.sigma2[i] for i, c in enumerate(comps.components)}
        ),
        "drift_slope": None if times is None else times.drift.slope,
        "drift_pvalue": None if times is None else times.drift.pvalue,
        "time_blocks": 0 if times is None else times.n_time_blocks,
        # the hosts of the data, also when the time model could not be fitted
        "hosts": times.n_hosts if times is not None else _n_hosts(rows),
        "time_effects_not_computed": time_note,
        # one model of the noise (issue 23): the G study's components, the total-error SE
        # beside the clustered one, the D study (evalnoise.facets.noise_record)
        "noise": noise,
        "noise_not_computed": None if noise is not None else noise_note,
        "flaky_flagged": len(frame),
        "flaky_checks_run": [c["name"] for c in checks if c["ran"]],
        "flaky_checks": checks,
    }


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


# --- reading the artifacts back ---------------------------------------------------------------


def read_attribution(
    summary: str | os.PathLike[str] | None,
    resource: str | os.PathLike[str] | None = None,
    flaky: str | os.PathLike[str] | None = None,
) -> AttributionTables:
    """The attribution stage's files (``attribution.json``, ``resource_sensitivity.parquet``,
    ``flaky_tasks.csv``) as :class:`AttributionTables`; never raises on a missing or invalid
    file: it names the file in ``problems`` and leaves its part empty, so the report can
    say so and still show the rest."""
    problems: list[str] = []
    data: dict[str, Any] = {}
    if summary is None:
        problems.append("attribution.json: not given")
    else:
        try:
            with open(summary, encoding="utf-8") as handle:
                loaded = json.load(handle)
            if not isinstance(loaded, dict):
                raise ValueError(f"expected a JSON object, got {type(loaded).__name__}")
            for key, value in loaded.items():
                if not isinstance(value, (dict, list)):
                    raise ValueError(f"entry {key!r} is not an object")
            data = loaded
        except (OSError, ValueError) as exc:
            problems.append(f"{os.fspath(summary)}: {_why(exc)}")
    resource_frame = _read_table(
        resource, "resource_sensitivity.parquet", RESOURCE_COLUMNS, problems
    )
    flaky_frame = _read_table(flaky, "flaky_tasks.csv", FLAKY_COLUMNS, problems)
    return AttributionTables(data, resource_frame, flaky_frame, tuple(problems))


def _why(exc: BaseException) -> str:
    if isinstance(exc, FileNotFoundError):
        return "missing"
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return f"invalid ({text})"


def _read_table(
    path: str | os.PathLike[str] | None,
    name: str,
    required: Sequence[str],
    problems: list[str],
) -> pd.DataFrame:
    if path is None:
        problems.append(f"{name}: not given")
        return pd.DataFrame()
    try:
        if os.fspath(path).endswith(".parquet"):
            frame = pd.read_parquet(path)
        else:
            try:
                frame = pd.read_csv(path)
            except pd.errors.EmptyDataError:
                return pd.DataFrame()  # no group was analysed: nothing flagged
    except FileNotFoundError as exc:
        problems.append(f"{os.fspath(path)}: {_why(exc)}")
        return pd.DataFrame()
    except Exception as exc:
        problems.append(f"{os.fspath(path)}: {_why(exc)}")
        return pd.DataFrame()
    if len(frame.columns) == 0 or (frame.empty and len(frame.columns) <= 1):
        return pd.DataFrame()  # written from no rows: nothing to show, nothing wrong
    missing = [c for c in required if c not in frame.columns]
    if missing:
        problems.append(f"{os.fspath(path)}: invalid (lacks column(s) {', '.join(missing)})")
        return pd.DataFrame()
    return frame
