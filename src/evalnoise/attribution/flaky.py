"""Flaky-task triage: tasks whose outcomes vary for reasons other than the agent.

A task is *flaky* when something besides the agent decides its outcome: the infrastructure
fails on it more than on other tasks, its success depends on when or where it ran, or its
scorer does not give the same verdict twice for the same answer. Such tasks inflate the
within-task variance that ICC(1,1) attributes to the agent's inconsistency (Mustahsan et
al.) and carry the infrastructure noise the infrastructure-noise article describes (infra
errors, time of day). :func:`flaky_tasks` runs one check per suspected cause, each an exact
test per task with multiplicity control across tasks, and lists the flagged tasks with the
evidence, strongest first.
"""

from __future__ import annotations

import numbers
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from evalnoise.runner.infra_policies import InfraPolicy, apply_infra_policy, infra_policy
from evalnoise.schema import INFRA_STATUSES
from evalnoise.stats._checks import check_probability
from evalnoise.stats._results import DictResult
from evalnoise.stats.paired import benjamini_hochberg

from ._exact_tests import fisher_exact_2xr, fisher_greater
from ._json import records
from ._trial_frame import (
    binary_outcome,
    one_group,
    require_columns,
    time_blocks,
    trial_key,
)

__all__ = ["CHECKS", "CHECK_DESCRIPTIONS", "CheckRun", "FlakyTasksResult", "flaky_tasks"]

#: the checks, in the order they run
CHECKS = ("infra_concentration", "time_block", "host", "scorer_agreement")
#: what each check tests, in one line (for reports; :class:`CheckRun` says what it did)
CHECK_DESCRIPTIONS = {
    "infra_concentration": "infra outcomes (timeouts, OOM kills, container errors) concentrated "
    "on a task: its infra rate vs the other tasks' (one-sided Fisher exact, BH)",
    "time_block": "correctness depending on when the task ran: by equal-count time block of "
    "the run (Fisher exact per task, BH)",
    "host": "correctness depending on where the task ran: by host (Fisher exact per task, BH)",
    "scorer_agreement": "a scorer disagreeing with itself on the same answer (deterministic "
    "scorers: any disagreement; judges: one-sided Fisher exact vs the other tasks, BH)",
}

_EVIDENCE_COLUMNS = (
    "task_id",
    "check",
    "test",
    "statistic_name",
    "statistic",
    "pvalue",
    "pvalue_adjusted",
    "flagged",
    "reason",
)
_FLAGGED_COLUMNS = (
    "rank",
    "task_id",
    "reason",
    "checks",
    "n_flags",
    "test",
    "statistic_name",
    "statistic",
    "pvalue",
    "pvalue_adjusted",
)


@dataclass(frozen=True)
class CheckRun(DictResult):
    """What one check did.

    name : one of :data:`CHECKS`.
    ran : False when the data cannot support it (the description says why).
    description : what was tested, how, and over how many tasks; or why it was skipped.
    n_tested : tasks in the check's multiplicity family.
    n_flagged : tasks the check flagged.
    """

    name: str
    ran: bool
    description: str
    n_tested: int = 0
    n_flagged: int = 0


@dataclass(frozen=True)
class FlakyTasksResult:
    """Flagged tasks with their evidence (see :func:`flaky_tasks`).

    Attributes
    ----------
    flagged : one row per flagged task, strongest evidence first: ``rank`` (1 = first),
        ``task_id``, ``reason`` (one sentence per flagging check, joined by "; "),
        ``checks`` (the checks that flagged it), ``n_flags``, and the ``test``,
        ``statistic_name``, ``statistic``, ``pvalue`` and ``pvalue_adjusted`` of its strongest
        evidence (a deterministic scorer disagreeing with itself first: it needs no test).
    evidence : one row per (task, check) that was tested, flagged or not, with the same
        fields and a ``flagged`` column.
    checks : every check, run or skipped, with what it did (:class:`CheckRun`).
    scorer_summary : per scorer: answers scored more than once, how many got different
        verdicts, and that share; empty without ``rescores``.
    alpha : the false discovery rate each check is controlled at.
    n_tasks : tasks in the trial table.
    n_time_blocks : time blocks of the ``time_block`` check.
    """

    flagged: pd.DataFrame
    evidence: pd.DataFrame
    checks: tuple[CheckRun, ...]
    scorer_summary: pd.DataFrame
    alpha: float
    n_tasks: int
    n_time_blocks: int
    warnings: tuple[str, ...] = field(default=())

    @property
    def checks_run(self) -> tuple[str, ...]:
        """Names of the checks that ran (a check may run and flag nothing)."""
        return tuple(c.name for c in self.checks if c.ran)

    def to_frame(self) -> pd.DataFrame:
        """The flagged tasks (a copy)."""
        return self.flagged.copy()

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready record: what was checked, and the flagged tasks."""
        return {
            "alpha": float(self.alpha),
            "n_tasks": int(self.n_tasks),
            "n_time_blocks": int(self.n_time_blocks),
            "checks_run": list(self.checks_run),
            "checks": [c.to_dict() for c in self.checks],
            "flagged": records(self.flagged),
            "scorer_summary": records(self.scorer_summary),
            "warnings": list(self.warnings),
        }


def _fmt_p(p: float) -> str:
    return "n/a" if not np.isfinite(p) else f"{p:.2g}" if p < 0.001 else f"{p:.3f}"


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _evidence(
    task_id: Any,
    check: str,
    test: str,
    statistic_name: str,
    statistic: float,
    p: float,
    reason: str,
) -> dict[str, Any]:
    return {
        "task_id": task_id,
        "check": check,
        "test": test,
        "statistic_name": statistic_name,
        "statistic": float(statistic),
        "pvalue": float(p),
        "pvalue_adjusted": float("nan"),
        "flagged": False,
        "reason": reason,
    }


def _adjust(rows: list[dict[str, Any]], alpha: float) -> int:
    """BH within one check's rows (in place); returns how many are flagged."""
    if not rows:
        return 0
    adj = benjamini_hochberg([r["pvalue"] for r in rows])
    n = 0
    for r, a in zip(rows, adj, strict=True):
        r["pvalue_adjusted"] = float(a)
        r["flagged"] = bool(a <= alpha)
        n += r["flagged"]
        r["reason"] = r["reason"].replace("{p_adj}", _fmt_p(float(a)))
    return n


def _check_infra(frame: pd.DataFrame, alpha: float) -> tuple[CheckRun, list[dict[str, Any]]]:
    name = "infra_concentration"
    infra = frame["status"].isin(INFRA_STATUSES).to_numpy()
    n_total, x_total = len(frame), int(infra.sum())
    codes, labels = pd.factorize(frame["task_id"].to_numpy(), sort=True)
    if labels.size < 2:
        return CheckRun(name, False, "only one task: no other tasks to compare with"), []
    if x_total == 0:
        return CheckRun(name, True, "no attempt ended in an infra outcome: nothing to locate"), []
    n = np.bincount(codes, minlength=labels.size)
    x = np.bincount(codes, weights=infra, minlength=labels.size).astype(np.int64)
    p = fisher_greater(x, n, x_total, n_total)
    rest_x, rest_n = x_total - x, n_total - n
    with np.errstate(divide="ignore", invalid="ignore"):
        odds = (x * (rest_n - rest_x)) / ((n - x) * rest_x)
    status = frame["status"].astype(str).to_numpy()
    kinds = pd.crosstab(codes[infra], status[infra])  # infra outcomes by task and kind
    rows = []
    for i, task in enumerate(labels):
        detail = ""
        if i in kinds.index:
            counts = kinds.loc[i]
            counts = counts[counts > 0].sort_values(ascending=False, kind="mergesort")
            detail = ", ".join(f"{v} {k}" for k, v in counts.items())
        rest_rate = rest_x[i] / rest_n[i] if rest_n[i] else float("nan")
        reason = (
            f"infra outcomes concentrate on this task: {x[i]} of {n[i]} attempts "
            f"({_pct(x[i] / n[i])}{': ' + detail if detail else ''}) vs {_pct(rest_rate)} on "
            f"the other tasks (one-sided Fisher exact p = {_fmt_p(p[i])}, "
            "BH-adjusted {p_adj})"
        )
        rows.append(
            _evidence(task, name, "fisher_exact_greater", "odds_ratio", odds[i], p[i], reason)
        )
    flagged = _adjust(rows, alpha)
    desc = (
        f"each task's infra-outcome rate over all {n_total} attempts vs the other tasks' "
        f"(one-sided Fisher exact test, Benjamini–Hochberg over {labels.size} tasks); "
        f"{x_total} infra attempts in the run"
    )
    return CheckRun(name, True, desc, labels.size, flagged), rows


def _check_factor(
    counted: pd.DataFrame,
    factor: np.ndarray,
    name: str,
    noun: str,
    prep: str,
    level_names: np.ndarray,
    alpha: float,
    seed: int,
) -> tuple[int, list[dict[str, Any]]]:
    """Per task: Fisher exact test of correctness by the levels of ``factor`` (−1 = unknown)."""
    y = counted["y"].to_numpy()
    ok = ~np.isnan(y) & (factor >= 0)
    tasks = counted["task_id"].to_numpy()[ok]
    y, factor = y[ok], factor[ok]
    codes, labels = pd.factorize(tasks, sort=True)
    n_levels = level_names.size
    cell = codes * n_levels + factor
    size = labels.size * n_levels
    totals = np.bincount(cell, minlength=size).reshape(labels.size, n_levels)
    wins = np.bincount(cell, weights=y, minlength=size).reshape(labels.size, n_levels)
    wins = np.rint(wins).astype(np.int64)
    rows = []
    for i, task in enumerate(labels):
        t, s = totals[i], wins[i]
        present = t > 0
        if present.sum() < 2 or s.sum() in (0, t.sum()):
            continue  # one level, or a constant outcome: the test cannot reject (p = 1)
        stat, p, method = fisher_exact_2xr(s[present], t[present], seed=seed)
        parts = ", ".join(f"{s[j]}/{t[j]} {prep} {level_names[j]}" for j in np.flatnonzero(present))
        label = "Fisher exact" if method == "fisher_exact" else "Monte Carlo Fisher"
        reason = (
            f"correctness depends on the {noun}: correct {parts} "
            f"({label} p = {_fmt_p(p)}, BH-adjusted {{p_adj}})"
        )
        rows.append(_evidence(task, name, method, "table_probability", stat, p, reason))
    return _adjust(rows, alpha), rows


def _check_scorers(
    rescores: pd.DataFrame, deterministic: Collection[str], alpha: float
) -> tuple[CheckRun, list[dict[str, Any]], pd.DataFrame]:
    name = "scorer_agreement"
    require_columns(rescores, "task_id", "trial", "scorer", "correct")
    key = trial_key(rescores)
    if "attempt" in rescores.columns:
        key = [*key, "attempt"]
    frame = rescores[[*key, "scorer", "correct"]].copy()
    frame["correct"] = frame["correct"].astype("boolean")
    frame = frame[frame["correct"].notna()]
    per = frame.groupby([*key, "scorer"], dropna=False, sort=True)["correct"].agg(
        ["size", "nunique"]
    )
    per = per[per["size"] >= 2].reset_index()
    per["disagree"] = per["nunique"] > 1
    summary = (
        per.groupby("scorer", sort=True)
        .agg(answers_rescored=("disagree", "size"), answers_disagreeing=("disagree", "sum"))
        .reset_index()
    )
    summary["disagreement_rate"] = summary["answers_disagreeing"] / summary["answers_rescored"]
    summary["deterministic"] = summary["scorer"].isin(list(deterministic))
    if per.empty:
        desc = "rescores given, but no answer was scored twice by the same scorer"
        return CheckRun(name, False, desc), [], summary

    rows: list[dict[str, Any]] = []
    n_tested = n_flagged = 0
    parts = []
    for scorer, sub in per.groupby("scorer", sort=True):
        by_task = sub.groupby("task_id", sort=True)["disagree"].agg(["size", "sum"])
        m, d = by_task["size"].to_numpy(), by_task["sum"].to_numpy().astype(np.int64)
        if scorer in deterministic:
            for task, mi, di in zip(by_task.index, m, d, strict=True):
                if di:
                    reason = (
                        f"deterministic scorer {scorer!r} gave different verdicts for the same "
                        f"answer on {di} of {mi} rescored answers (it must agree with itself)"
                    )
                    row = _evidence(
                        task, name, "deterministic_self_agreement", "disagreeing_answers",
                        di, float("nan"), reason,
                    )  # fmt: skip
                    row["flagged"] = True
                    rows.append(row)
                    n_flagged += 1
            n_tested += len(by_task)
            parts.append(
                f"{scorer!r} (deterministic: any disagreement flags, {len(by_task)} tasks)"
            )
            continue
        d_total, m_total = int(d.sum()), int(m.sum())
        if d_total == 0 or len(by_task) < 2:
            parts.append(f"{scorer!r} ({d_total} disagreeing of {m_total} rescored answers)")
            continue
        p = fisher_greater(d, m, d_total, m_total)
        rest_rate = (d_total - d) / np.maximum(m_total - m, 1)
        with np.errstate(divide="ignore", invalid="ignore"):
            odds = (d * ((m_total - m) - (d_total - d))) / ((m - d) * (d_total - d))
        sub_rows = []
        for i, task in enumerate(by_task.index):
            reason = (
                f"scorer {scorer!r} disagrees with itself on {d[i]} of {m[i]} rescored answers "
                f"({_pct(d[i] / m[i])}) vs {_pct(rest_rate[i])} on the other tasks "
                f"(one-sided Fisher exact p = {_fmt_p(p[i])}, BH-adjusted {{p_adj}})"
            )
            sub_rows.append(
                _evidence(task, name, "fisher_exact_greater", "odds_ratio", odds[i], p[i], reason)
            )
        n_flagged += _adjust(sub_rows, alpha)
        n_tested += len(sub_rows)
        rows.extend(sub_rows)
        parts.append(
            f"{scorer!r} ({d_total} of {m_total} rescored answers disagree; one-sided Fisher "
            f"exact per task vs the rest, Benjamini–Hochberg over {len(sub_rows)} tasks)"
        )
    desc = "verdicts on answers scored more than once by the same scorer: " + "; ".join(parts)
    return CheckRun(name, True, desc, n_tested, n_flagged), rows, summary


def _default_deterministic() -> frozenset[str]:
    from evalnoise.scorers.deterministic import DETERMINISTIC_SCORERS

    return frozenset([*DETERMINISTIC_SCORERS, "recorded"])


def flaky_tasks(
    trials: pd.DataFrame,
    *,
    rescores: pd.DataFrame | None = None,
    n_time_blocks: int = 4,
    policy: str | Mapping[str, Any] | InfraPolicy = "as_incorrect",
    alpha: float = 0.05,
    deterministic_scorers: Collection[str] | None = None,
    seed: int = 0,
) -> FlakyTasksResult:
    """Rank the tasks whose outcomes vary for reasons other than the agent, with evidence.

    Parameters
    ----------
    trials : one group's (one agent, one resource profile) trial or score table, every
        attempt a row: ``task_id``, ``trial``, ``status``, ``correct`` and/or ``score``;
        ``attempt``, ``started_at`` and ``host`` enable more checks.
    rescores : optional verdicts on answers scored again: ``task_id``, ``trial``,
        ``scorer``, ``correct`` (plus ``agent``, ``resource_profile``, ``attempt`` when they
        identify the answer). Every row is one verdict; include the original verdict as a
        row if it should take part. Null verdicts (judge errors) are ignored.
    n_time_blocks : equal-count blocks of ``started_at`` over the run
        (:func:`~evalnoise.attribution.time_blocks`).
    policy : infra policy giving each trial its outcome for the time and host checks
        (default: an infra outcome is a wrong answer, so a task that times out in the
        evening shows up).
    alpha : false discovery rate of every check.
    deterministic_scorers : scorer names that must agree with themselves (default: the
        deterministic scorers and ``recorded``); every other scorer is treated as a judge.
    seed : for the Monte Carlo fallback of very large exact tests.

    Returns
    -------
    FlakyTasksResult

    Notes
    -----
    The checks (each listed in ``checks`` with what it did, or why it was skipped):

    ``infra_concentration`` — over all attempts (every attempt meets the infrastructure),
    task g has x_g infra outcomes in n_g attempts, the run X in N. The one-sided Fisher
    exact test of "g's infra rate exceeds the other tasks'" has p_g = P(H ≥ x_g),
    H ~ Hypergeometric(N, X, n_g).

    ``time_block`` — each trial's counted outcome (last attempt, ``policy`` applied;
    ``correct``, else ``score >= 0.5``) by the time block its counted attempt started in;
    per task, Fisher's exact test of independence of correctness and block on the 2 × B
    table (Freeman–Halton for B > 2, :func:`~evalnoise.attribution._exact_tests.fisher_exact_2xr`).
    Blocks are equal-count bins of the run's start times, so each holds about the same
    number of trials and the test compares parts of the run, not clock hours.

    ``host`` — the same with the host, when the run used more than one.

    ``scorer_agreement`` — answers (same trial key and attempt) with two or more verdicts
    from one scorer. A deterministic scorer's verdict is a function of the answer, so any
    disagreement flags the task outright (no test; ranked first). A judge's repeated
    verdicts show its noise: per judge, task g has d_g disagreeing answers of m_g rescored,
    tested one-sided against the other tasks as above. ``scorer_summary`` reports each
    scorer's overall self-disagreement, the judge's noise floor.

    Multiplicity: each check is one family, controlled by Benjamini–Hochberg at ``alpha`` —
    triage is screening, and a short list with a few false leads is what an engineer can
    use (see :func:`~evalnoise.attribution.resource_sensitivity` for the trade-off). Within
    a check, a task whose table cannot reject at all — a single level, or a constant
    outcome, which fixes a margin the exact test conditions on — is not tested and not
    counted in m (Tarone 1990).

    A task flagged by several checks appears once; ``reason`` holds one sentence per check.
    Ranking: deterministic self-disagreement first, then the smallest adjusted p, then the
    smallest p, then the number of flags.
    """
    require_columns(trials, "task_id", "trial", "status")
    if "score" not in trials.columns and "correct" not in trials.columns:
        raise ValueError("the table has neither a 'score' nor a 'correct' column")
    if isinstance(n_time_blocks, bool) or not isinstance(n_time_blocks, numbers.Integral):
        raise ValueError("n_time_blocks must be an integer")
    check_probability(alpha, "alpha")
    one_group(trials)
    key = trial_key(trials)
    pol = infra_policy(policy)
    deterministic = (
        _default_deterministic()
        if deterministic_scorers is None
        else frozenset(map(str, deterministic_scorers))
    )
    checks: list[CheckRun] = []
    rows: list[dict[str, Any]] = []
    warnings: list[str] = []
    n_tasks = int(trials["task_id"].nunique())

    check, found = _check_infra(trials, alpha)
    checks.append(check)
    rows += found

    counted_raw = apply_infra_policy(trials, pol, key=tuple(key)).counted
    counted = pd.DataFrame(
        {"task_id": counted_raw["task_id"].to_numpy(), "y": binary_outcome(counted_raw)}
    )
    n_unknown = int(np.isnan(counted["y"]).sum())
    if n_unknown:
        warnings.append(f"{n_unknown} counted trial(s) without a verdict are left out")
    n_counted = int((~np.isnan(counted["y"])).sum())

    has_time = "started_at" in counted_raw.columns and counted_raw["started_at"].notna().any()
    if n_time_blocks < 2:
        checks.append(CheckRun("time_block", False, "n_time_blocks < 2: nothing to compare"))
    elif not has_time:
        checks.append(CheckRun("time_block", False, "no started_at times in the table"))
    else:
        blocks = time_blocks(counted_raw["started_at"], int(n_time_blocks))
        names = np.array([f"block {b + 1}" for b in range(int(n_time_blocks))])
        flagged, found = _check_factor(
            counted, blocks, "time_block", "time block", "in", names, alpha, seed
        )
        tested = len(found)
        desc = (
            f"correctness by time block ({n_time_blocks} equal-count blocks of started_at over "
            f"{n_counted} counted trials; Fisher exact per task, Benjamini–Hochberg over the "
            f"{tested} tasks whose outcome varies)"
        )
        checks.append(CheckRun("time_block", True, desc, tested, flagged))
        rows += found

    hosts = counted_raw["host"] if "host" in counted_raw.columns else None
    n_hosts = 0 if hosts is None else int(hosts.nunique(dropna=True))
    if n_hosts < 2:
        why = "no host column" if hosts is None else f"{n_hosts} host(s) in the run"
        checks.append(CheckRun("host", False, f"{why}: nothing to compare"))
    else:
        codes, host_names = pd.factorize(hosts, sort=True)
        flagged, found = _check_factor(
            counted, np.asarray(codes), "host", "host", "on", np.asarray(host_names, dtype=str),
            alpha, seed,
        )  # fmt: skip
        tested = len(found)
        desc = (
            f"correctness by host ({n_hosts} hosts; Fisher exact per task, "
            f"Benjamini–Hochberg over the {tested} tasks that ran on several hosts with a "
            "varying outcome)"
        )
        checks.append(CheckRun("host", True, desc, tested, flagged))
        rows += found

    scorer_summary = pd.DataFrame(
        columns=[
            "scorer",
            "answers_rescored",
            "answers_disagreeing",
            "disagreement_rate",
            "deterministic",
        ]
    )
    if rescores is None:
        checks.append(CheckRun("scorer_agreement", False, "no rescores given"))
    else:
        check, found, scorer_summary = _check_scorers(rescores, deterministic, alpha)
        checks.append(check)
        rows += found

    evidence = pd.DataFrame(rows, columns=list(_EVIDENCE_COLUMNS))
    return FlakyTasksResult(
        flagged=_rank(evidence),
        evidence=evidence,
        checks=tuple(checks),
        scorer_summary=scorer_summary,
        alpha=float(alpha),
        n_tasks=n_tasks,
        n_time_blocks=int(n_time_blocks),
        warnings=tuple(warnings),
    )


def _rank(evidence: pd.DataFrame) -> pd.DataFrame:
    """One row per flagged task, strongest evidence first."""
    hits = evidence[evidence["flagged"]].copy()
    if hits.empty:
        return pd.DataFrame(columns=list(_FLAGGED_COLUMNS))
    hits["certain"] = hits["test"] == "deterministic_self_agreement"
    hits["order"] = np.where(hits["certain"], -1.0, hits["pvalue_adjusted"].fillna(np.inf))
    hits = hits.sort_values(["order", "pvalue"], kind="mergesort", na_position="first")
    out = []
    for task, sub in hits.groupby("task_id", sort=False):
        best = sub.iloc[0]
        out.append(
            {
                "task_id": task,
                "reason": "; ".join(sub["reason"]),
                "checks": list(dict.fromkeys(sub["check"])),
                "n_flags": len(sub),
                "test": best["test"],
                "statistic_name": best["statistic_name"],
                "statistic": best["statistic"],
                "pvalue": best["pvalue"],
                "pvalue_adjusted": best["pvalue_adjusted"],
                "_order": best["order"],
            }
        )
    frame = pd.DataFrame(out)
    frame["_key"] = frame["task_id"].astype(str)
    frame["_neg"] = -frame["n_flags"]
    frame["_p"] = frame["pvalue"].fillna(-1.0)
    by = ["_order", "_p", "_neg", "_key"]
    frame = frame.sort_values(by, kind="mergesort").reset_index(drop=True)
    frame.insert(0, "rank", np.arange(1, len(frame) + 1))
    return frame[list(_FLAGGED_COLUMNS)]
