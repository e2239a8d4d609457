"""Resource sensitivity per task: which tasks' outcomes depend on the resource profile?

The infrastructure-noise article finds that the resource budget moves scores — by up to
6 points between the tightest and the most generous configuration on Terminal-Bench 2.0 —
and that the lift concentrates on a few tasks (rstan-to-pystan, compile-compcert,
bn-fit-modify) whose memory needs sit between the limits compared. This module finds such
tasks: one agent's trials under two resource profiles, paired by (task, trial), tested task
by task with the exact McNemar test, with multiplicity control across tasks.

Pairing is sound because a trial's seed is a pure function of (run seed, agent, task, trial index)
and not of the resource profile (:func:`evalnoise.runner.seeds.trial_seed`): trial k of a task under
profile A and under profile B start from the same seed, so the pair differs only by the profile (and
by the agent's own nondeterminism).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

from evalnoise.runner.infra_policies import InfraPolicy, apply_infra_policy, infra_policy
from evalnoise.runner.resources import MIB
from evalnoise.runner.variant import VARIANT_COLUMNS
from evalnoise.schema import INFRA_STATUSES
from evalnoise.stats._checks import check_probability
from evalnoise.stats.paired import benjamini_hochberg, holm, mcnemar_exact_p

from ._json import records
from ._trial_frame import binary_outcome, require_columns

__all__ = ["ResourceSensitivityResult", "resource_sensitivity"]

Adjust = Literal["bh", "holm"]

_COLUMNS = (
    "task_id",
    "n_pairs",
    "correct_a",
    "correct_b",
    "infra_a",
    "infra_b",
    "accuracy_a",
    "accuracy_b",
    "diff",
    "b",
    "c",
    "tested",
    "pvalue",
    "pvalue_adjusted",
    "significant",
    "memory_need_bytes",
    "limit_a_bytes",
    "limit_b_bytes",
    "between_limits",
    "peak_a_bytes",
    "peak_b_bytes",
)


@dataclass(frozen=True)
class ResourceSensitivityResult:
    """Per-task paired comparison of two resource profiles (see :func:`resource_sensitivity`).

    Attributes
    ----------
    profile_a, profile_b : the two resource profiles; columns suffixed ``_a`` / ``_b``.
    table : one row per task with at least one pair, sorted by adjusted p, then p, then task:

        - ``n_pairs``: (task, trial) pairs with a known outcome under both profiles;
        - ``correct_a``/``correct_b``: correct outcomes among them; ``infra_a``/``infra_b``:
          infra outcomes (timeout, oom_killed, infra_error) among them;
        - ``accuracy_a``/``accuracy_b`` and ``diff`` = accuracy_a − accuracy_b;
        - ``b``: pairs right under A and wrong under B; ``c``: wrong under A, right under B;
        - ``tested``: b + c > 0; ``pvalue``: exact McNemar p; ``pvalue_adjusted``: Holm or
          BH; ``significant``: pvalue_adjusted ≤ alpha;
        - ``memory_need_bytes``: the task's memory need (``memory_mb`` × 2²⁰), NaN if not
          given; ``limit_a_bytes``/``limit_b_bytes``: the hard memory limit the task's
          containers got (``memory_limit_bytes``; +inf = uncapped, NaN = unknown);
          ``between_limits``: the lower limit < need ≤ the higher limit (NA if unknown);
        - ``peak_a_bytes``/``peak_b_bytes``: the largest peak memory observed (NaN if none).
    adjust : ``"bh"`` or ``"holm"``.
    alpha : level for ``significant``.
    n_tested : tasks in the multiplicity family (b + c > 0).
    n_significant : tasks with pvalue_adjusted ≤ alpha.
    b_total, c_total : discordant pairs over all tasks.
    n_unpaired_a, n_unpaired_b : counted trials of A (of B) without a partner, left out.
    policy : the infra policy applied before pairing.
    warnings : anything dropped or ambiguous.
    """

    profile_a: str
    profile_b: str
    table: pd.DataFrame
    adjust: str
    alpha: float
    n_tested: int
    n_significant: int
    b_total: int
    c_total: int
    n_unpaired_a: int
    n_unpaired_b: int
    policy: str
    warnings: tuple[str, ...] = field(default=())

    def to_frame(self) -> pd.DataFrame:
        """The per-task table (a copy)."""
        return self.table.copy()

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready record: the summary and one entry per task."""
        return {
            "profile_a": self.profile_a,
            "profile_b": self.profile_b,
            "adjust": self.adjust,
            "alpha": float(self.alpha),
            "policy": self.policy,
            "n_tasks": len(self.table),
            "n_tested": self.n_tested,
            "n_significant": self.n_significant,
            "b_total": self.b_total,
            "c_total": self.c_total,
            "n_unpaired_a": self.n_unpaired_a,
            "n_unpaired_b": self.n_unpaired_b,
            "tasks": records(self.table),
            "warnings": list(self.warnings),
        }


def _memory_need(memory_mb: Any) -> pd.Series:
    """task_id → need in bytes, from a mapping, a Series or a frame with task_id, memory_mb."""
    if memory_mb is None:
        return pd.Series(dtype=float)
    if isinstance(memory_mb, pd.DataFrame):
        require_columns(memory_mb, "task_id", "memory_mb")
        s = memory_mb.drop_duplicates("task_id").set_index("task_id")["memory_mb"]
    elif isinstance(memory_mb, pd.Series):
        s = memory_mb
    elif isinstance(memory_mb, Mapping):
        s = pd.Series(dict(memory_mb))
    else:
        raise TypeError("memory_mb must be a mapping, a Series or a DataFrame")
    return pd.to_numeric(s, errors="coerce").astype(float) * MIB


def _limits(part: pd.DataFrame, warnings: list[str], name: str) -> pd.Series:
    """task_id → hard memory limit in bytes: +inf when uncapped (null), NaN when unknown."""
    tasks = pd.unique(part["task_id"])
    if "memory_limit_bytes" not in part.columns:
        return pd.Series(np.nan, index=tasks, dtype=float)
    lim = pd.to_numeric(part["memory_limit_bytes"], errors="coerce").astype(float)
    lim = lim.fillna(np.inf)
    grouped = lim.groupby(part["task_id"].to_numpy())
    n_distinct = grouped.nunique()
    if (n_distinct > 1).any():
        odd = ", ".join(map(str, n_distinct.index[n_distinct > 1][:5]))
        warnings.append(
            f"profile {name!r}: some tasks ran under several memory limits ({odd}); "
            "the largest is used"
        )
    return grouped.max()


def _pair_key(trials: pd.DataFrame) -> tuple[str, ...]:
    """What pairs a trial across profiles: (task, trial index) and, with prompt or sampling
    variants, the variant's labels (the same seed under both profiles)."""
    return ("task_id", "trial", *(c for c in VARIANT_COLUMNS if c in trials.columns))


def _counted(
    trials: pd.DataFrame, profile: str, policy: InfraPolicy
) -> tuple[pd.DataFrame, pd.Series]:
    """The profile's counted trials (task_id, trial, outcome y, infra) and each task's
    largest peak memory (empty without a ``peak_memory_bytes`` column)."""
    part = trials[trials["resource_profile"] == profile]
    if part.empty:
        raise ValueError(f"no trials under resource profile {profile!r}")
    key = _pair_key(part)
    counted = apply_infra_policy(part, policy, key=key).counted
    out = pd.DataFrame({name: counted[name].to_numpy() for name in key})
    out["y"] = binary_outcome(counted)
    out["infra"] = counted["status"].isin(INFRA_STATUSES).to_numpy()
    peak = pd.Series(dtype=float)
    if "peak_memory_bytes" in part.columns:
        values = pd.to_numeric(part["peak_memory_bytes"], errors="coerce").astype(float)
        peak = values.groupby(part["task_id"].to_numpy()).max()
    return out, peak


def resource_sensitivity(
    trials: pd.DataFrame,
    profile_a: str,
    profile_b: str,
    *,
    memory_mb: Mapping[str, float] | pd.Series | pd.DataFrame | None = None,
    policy: str | Mapping[str, Any] | InfraPolicy = "as_incorrect",
    adjust: Adjust = "bh",
    alpha: float = 0.05,
) -> ResourceSensitivityResult:
    """Per-task exact McNemar tests of one agent's outcomes under two resource profiles.

    Parameters
    ----------
    trials : one agent's trial or score table (every attempt a row) holding both profiles:
        ``resource_profile``, ``task_id``, ``trial``, ``status``, ``correct`` and/or
        ``score``; optionally ``attempt``, ``memory_limit_bytes``, ``peak_memory_bytes``.
        Rows of other profiles are ignored.
    profile_a, profile_b : the two resource profiles to compare.
    memory_mb : each task's memory need in MiB (the tasks table's ``memory_mb``, or a
        measured need): a mapping or Series keyed by task_id, or a frame with ``task_id``
        and ``memory_mb``. Optional.
    policy : the infra policy applied to each profile's trials before pairing
        (:func:`evalnoise.runner.infra_policies.apply_infra_policy`); the default counts an infra
        outcome as a wrong answer, as the paper does — a profile that OOM-kills a task
        *should* show up here.
    adjust : ``"bh"`` (default) or ``"holm"``; see Notes.
    alpha : level for the ``significant`` column.

    Returns
    -------
    ResourceSensitivityResult

    Notes
    -----
    Outcomes are binary: ``correct`` where set, else ``score >= 0.5``. Counted trials
    (the last attempt; an infra outcome is wrong under ``as_incorrect``) are paired by
    (task_id, trial); a pair with an unknown outcome on either side is dropped. For task g
    with b_g pairs right under A and wrong under B and c_g the reverse, under H0 (the
    profile does not change the task's success probability) b_g | b_g + c_g ~
    Binomial(b_g + c_g, 1/2), and the exact two-sided p is
    min(1, 2 P(X ≤ min(b_g, c_g))) (McNemar 1947 in its exact form; the discordant pairs
    carry all the information, the concordant ones none). The test is conditional on each
    pair, so it needs no assumption about how difficult a task is.

    **Multiplicity.** Default ``"bh"``, Benjamini–Hochberg (1995) false discovery rate
    control: this table is a *screening list* — which of hundreds of tasks deserve a look
    (their logs, their memory needs) — and a list in which, say, 5% of the entries are
    false leads is useful, whereas family-wise control would cost most of the power needed
    to find any task with the handful of trials per task an eval can afford. BH is valid
    for independent tests (tasks are) and under positive dependence. Choose ``"holm"``
    (Holm 1979, family-wise error control under any dependence) when each listed task is a
    claim in its own right, e.g. "task X needs more than the 1x memory limit" in a report.
    Tasks without discordant pairs (b + c = 0) have p = 1 and could never be rejected; they
    are left out of the family size m (Tarone 1990) and get adjusted p 1.

    ``between_limits`` singles out tasks whose need lies in (lower limit, higher limit]:
    they fit under one profile's kill line and not under the other's. A need equal to the
    lower limit fits it (the 1x profile sets the limit to the declared need). An uncapped
    profile's limit is +inf; without a ``memory_limit_bytes`` column or a need the column
    is NA.

    References
    ----------
    McNemar, Q. (1947). Psychometrika 12(2), 153–157.
    Benjamini, Y. and Hochberg, Y. (1995). JRSS B 57(1), 289–300.
    Holm, S. (1979). Scand. J. Statist. 6(2), 65–70.
    Tarone, R. E. (1990). A modified Bonferroni method for discrete data. Biometrics 46.
    """
    require_columns(trials, "resource_profile", "task_id", "trial", "status")
    if "score" not in trials.columns and "correct" not in trials.columns:
        raise ValueError("the table has neither a 'score' nor a 'correct' column")
    if profile_a == profile_b:
        raise ValueError("profile_a and profile_b must differ")
    if adjust not in ("bh", "holm"):
        raise ValueError(f"adjust must be 'bh' or 'holm', got {adjust!r}")
    check_probability(alpha, "alpha")
    pol = infra_policy(policy)
    rows = trials[trials["resource_profile"].isin([profile_a, profile_b])]
    if "agent" in rows.columns and rows["agent"].nunique(dropna=True) > 1:
        raise ValueError("expected one agent's trials; split the table by agent first")
    warnings: list[str] = []

    ca, peak_a = _counted(rows, profile_a, pol)
    cb, peak_b = _counted(rows, profile_b, pol)
    key = list(_pair_key(rows))
    merged = ca.merge(cb, on=key, how="outer", suffixes=("_a", "_b"))
    known = merged["y_a"].notna() & merged["y_b"].notna()
    n_unpaired_a = int((merged["y_a"].notna() & ~known).sum())
    n_unpaired_b = int((merged["y_b"].notna() & ~known).sum())
    if n_unpaired_a or n_unpaired_b:
        warnings.append(
            f"{n_unpaired_a} trial(s) of {profile_a!r} and {n_unpaired_b} of {profile_b!r} have "
            "no partner with a known outcome and are left out"
        )
    pairs = merged[known]
    ya = pairs["y_a"].to_numpy() == 1.0
    yb = pairs["y_b"].to_numpy() == 1.0
    frame = pd.DataFrame(
        {
            "task_id": pairs["task_id"].to_numpy(),
            "correct_a": ya,
            "correct_b": yb,
            "infra_a": pairs["infra_a"].astype(bool).to_numpy(),
            "infra_b": pairs["infra_b"].astype(bool).to_numpy(),
            "b": ya & ~yb,
            "c": ~ya & yb,
        }
    )
    g = frame.groupby("task_id", sort=True)
    table = g[["correct_a", "correct_b", "infra_a", "infra_b", "b", "c"]].sum().astype(np.int64)
    table.insert(0, "n_pairs", g.size().astype(np.int64))
    table["accuracy_a"] = table["correct_a"] / table["n_pairs"]
    table["accuracy_b"] = table["correct_b"] / table["n_pairs"]
    table["diff"] = table["accuracy_a"] - table["accuracy_b"]
    bc = table["b"].to_numpy(), table["c"].to_numpy()
    tested = (bc[0] + bc[1]) > 0
    p = mcnemar_exact_p(*bc)
    p_in = np.where(tested, p, np.nan)
    p_adj = benjamini_hochberg(p_in) if adjust == "bh" else holm(p_in)
    table["tested"] = tested
    table["pvalue"] = p
    table["pvalue_adjusted"] = np.where(tested, p_adj, 1.0)
    table["significant"] = table["pvalue_adjusted"] <= alpha

    need = _memory_need(memory_mb)
    idx = table.index
    table["memory_need_bytes"] = need.reindex(idx).to_numpy(dtype=float)
    lim_a = _limits(rows[rows["resource_profile"] == profile_a], warnings, profile_a)
    lim_b = _limits(rows[rows["resource_profile"] == profile_b], warnings, profile_b)
    table["limit_a_bytes"] = lim_a.reindex(idx).to_numpy(dtype=float)
    table["limit_b_bytes"] = lim_b.reindex(idx).to_numpy(dtype=float)
    lo = np.fmin(table["limit_a_bytes"], table["limit_b_bytes"])
    hi = np.fmax(table["limit_a_bytes"], table["limit_b_bytes"])
    nd = table["memory_need_bytes"]
    unknown = nd.isna() | table["limit_a_bytes"].isna() | table["limit_b_bytes"].isna()
    between = pd.array((lo < nd) & (nd <= hi), dtype="boolean")
    between[unknown.to_numpy()] = pd.NA
    table["between_limits"] = between
    table["peak_a_bytes"] = peak_a.reindex(idx).to_numpy(dtype=float)
    table["peak_b_bytes"] = peak_b.reindex(idx).to_numpy(dtype=float)

    table = table.reset_index().rename(columns={"index": "task_id"})
    table = table.sort_values(["pvalue_adjusted", "pvalue", "task_id"], kind="mergesort")
    table = table.reset_index(drop=True)[list(_COLUMNS)]
    return ResourceSensitivityResult(
        profile_a=str(profile_a),
        profile_b=str(profile_b),
        table=table,
        adjust=adjust,
        alpha=float(alpha),
        n_tested=int(tested.sum()),
        n_significant=int(table["significant"].sum()),
        b_total=int(table["b"].sum()),
        c_total=int(table["c"].sum()),
        n_unpaired_a=n_unpaired_a,
        n_unpaired_b=n_unpaired_b,
        policy=pol.describe(),
        warnings=tuple(warnings),
    )
