"""The decision after a round for each target of :func:`evalnoise.stats.stopping.stopping_decision`.

:func:`sequence_decision` serves the accuracy and difference targets (the anytime-valid
sequence over new tasks, Cochran's trials per task for the money); :func:`icc_decision` the
icc target (Bonett's SE from every trial). Each returns the fields of a
:class:`evalnoise.stats.stopping.StoppingDecision` as a dict, which ``stopping_decision``
turns into the result (the result class lives with the public function, which imports this
module). The formulas are in ``stopping_decision``'s docstring. The fields are codes and
numbers; :mod:`evalnoise.stopping_text` words them.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from evalnoise.stats.accuracy_sequences import (
    ConfidenceSequenceResult,
    EntryUnits,
    confidence_sequence,
    paired_confidence_sequence,
)
from evalnoise.stats.cost_allocation import affordable_count, optimal_trials_per_task
from evalnoise.stats.icc import icc_oneway
from evalnoise.stats.stopping_rule import Action, Basis, Status, StoppingRule

if TYPE_CHECKING:
    from evalnoise.stats.icc import ICCResult

__all__ = ["icc_decision", "last_round_design", "sequence_decision"]


def last_round_design(entry: np.ndarray, count: np.ndarray) -> tuple[int, int]:
    """(new tasks, trials per new task) of the last round in which tasks entered."""
    sel = entry == entry.max()
    return int(sel.sum()), max(1, round(float(np.median(count[sel]))))


def _stop(base: dict, status: Status, warnings: list[str]) -> dict[str, Any]:
    return dict(
        stop=True,
        status=status,
        action="stop",
        next_new_tasks=0,
        next_trials_per_task=0,
        next_round_cost=0.0,
        warnings=tuple(warnings),
        **base,
    )


def _go(
    base: dict, action: Action, new: int, trials: int, cost: float, warnings: list[str]
) -> dict[str, Any]:
    return dict(
        stop=False,
        status="continue",
        action=action,
        next_new_tasks=new,
        next_trials_per_task=trials,
        next_round_cost=cost,
        warnings=tuple(warnings),
        **base,
    )


def sequence_decision(
    rule: StoppingRule,
    agents: list,
    icc_res: ICCResult,
    u: EntryUnits,
    t_cur: int,
    ctx: dict,
    base: dict,
) -> dict[str, Any]:
    """The accuracy and difference targets: the anytime-valid sequence over new tasks.

    ``agents`` holds (scores, tasks, rounds) per agent, checked; ``u`` their entry units;
    ``t_cur`` the trials per task of the last entry round; ``ctx`` the state of the run
    (``remaining``, ``n_tasks``, ``last_new``); ``base`` the decision's fields so far.
    """
    paired = len(agents) == 2
    c1, c2 = rule.cost_per_task, rule.cost_per_trial
    t_cap, n_cap, goal = rule.max_trials_per_task, rule.max_tasks, rule.goal
    conf, method = rule.confidence, rule.method
    warnings: list[str] = []
    if paired:
        cs = paired_confidence_sequence(
            *agents[0], *agents[1], confidence=conf, method=method, tuning_half_width=goal
        )
        s2b, s2w = _difference_components(cs, agents)
    else:
        cs = confidence_sequence(*agents[0], confidence=conf, method=method, tuning_half_width=goal)
        s2b, s2w = float(icc_res.sigma2_between), float(icc_res.sigma2_within)
    warnings.extend(cs.warnings)
    if math.isfinite(s2b) and s2b < 0:
        warnings.append(f"the between-task variance estimate is negative ({s2b:.3g}); planned as 0")
        s2b = 0.0
    n_agents = len(agents)
    n_units = int(cs.n_tasks[-1])
    achieved = cs.half_width

    components_ok = math.isfinite(s2b) and math.isfinite(s2w)
    flat = components_ok and s2b == 0 and s2w == 0
    if flat:
        t_next, t_star = (t_cur if t_cap is None else min(t_cur, t_cap)), float("nan")
    elif components_ok and (s2b > 0 or s2w == 0 or c1 == 0 or t_cap is not None):
        opt = optimal_trials_per_task(s2b, s2w, c1, c2, max_trials=t_cap)
        t_next, t_star = int(opt.trials), float(opt.trials_exact)
    elif components_ok:
        # σ²_b = 0 < c_task·σ²_w and no cap: T* is infinite; grow T geometrically instead.
        t_next, t_star = 2 * t_cur, math.inf
        warnings.append("σ²_between is 0: T* is unbounded; doubling the trials per new task")
    else:
        t_next, t_star = (t_cur if t_cap is None else min(t_cur, t_cap)), float("nan")
        warnings.append(
            "the variance components are not estimable yet (one task, or one trial per task): "
            "keeping the current trials per task"
        )
    gain_task, gain_trial = _accuracy_gains(s2b, s2w, n_units, t_cur, c1, c2, n_agents)
    basis: Basis = "not_estimable" if not components_ok else "no_variance" if flat else "components"
    unit_cost = n_agents * (c1 + t_next * c2)
    base = dict(
        base, achieved=achieved, estimate=cs.mean, ci_low=cs.ci_low, ci_high=cs.ci_high,
        sigma2_between=s2b, sigma2_within=s2w, trials_per_task=float(t_cur),
        optimal_trials=t_star, gain_per_cost_task=gain_task, gain_per_cost_trial=gain_trial,
        basis=basis, dominant=("within" if t_star > t_cur else "between") if (
            basis == "components") else None,
        sequence_tasks=n_units, most_trials_per_task=t_cur,
        planned_trials_per_task=t_next, planned_task_cost=unit_cost,
        planned_top_up_cost=math.nan,
    )  # fmt: skip
    if achieved <= goal:
        return _stop(base, "target_met", warnings)
    if n_cap is not None and ctx["n_tasks"] >= n_cap:
        # trials added to tasks already in the sequence cannot narrow an interval over tasks
        return _stop(base, "limit_reached", warnings)
    remaining = ctx["remaining"]
    k = min(ctx["last_new"], int(affordable_count(remaining, unit_cost)))
    if n_cap is not None:
        k = min(k, n_cap - ctx["n_tasks"])
    if k < 1:
        return _stop(base, "budget_spent", warnings)
    action: Action = "more_trials" if t_next > t_cur else "more_tasks"
    return _go(base, action, k, t_next, k * unit_cost, warnings)


def _accuracy_gains(s2b, s2w, n, t, c1, c2, n_agents) -> tuple[float, float]:
    """−∂Var/∂n per cost of a task, −∂Var/∂T per cost of a trial on every task."""
    if not (math.isfinite(s2b) and math.isfinite(s2w)) or n < 1:
        return float("nan"), float("nan")
    per_task = (s2b + s2w / t) / n**2 / (n_agents * (c1 + t * c2))
    per_trial = s2w / (n * t * t) / (n_agents * n * c2)
    return float(per_task), float(per_trial)


def _difference_components(cs: ConfidenceSequenceResult, agents) -> tuple[float, float]:
    """σ²_b and σ²_w of the per-task difference D_i = Ȳ^A_i − Ȳ^B_i.

    σ²_w(D) = MSW_A + MSW_B (the noise of a pair of trials, one per agent, independent given
    the task); σ²_b(D) = s²(D_i) − mean_i(MSW_A/m^A_i + MSW_B/m^B_i).
    """
    s2w = sum(float(icc_oneway(y, t).sigma2_within) for y, t, _ in agents)
    d = cs.unit_values
    if d.size < 2 or not math.isfinite(s2w):
        return float("nan"), s2w
    msw_a = float(icc_oneway(*agents[0][:2]).sigma2_within)
    noise = float(np.mean(msw_a / cs.unit_trials + (s2w - msw_a) / cs.unit_trials_b))
    return float(np.var(d, ddof=1) - noise), s2w


def icc_decision(
    rule: StoppingRule, res: ICCResult, u: EntryUnits, ctx: dict, base: dict
) -> dict[str, Any]:
    """The icc target: Bonett's SE of ICC(1,1) from every trial (arguments as for
    :func:`sequence_decision`)."""
    warnings = [
        "the icc target compares Bonett's fixed-sample SE with the goal after each round: a "
        "precision rule, not an anytime-valid interval"
    ]
    c1, c2 = rule.cost_per_task, rule.cost_per_trial
    t_cap, n_cap, goal = rule.max_trials_per_task, rule.max_tasks, rule.goal
    remaining = ctx["remaining"]
    n = ctx["n_tasks"]
    k = float(res.n0) if math.isfinite(res.n0) else float(u.n_task_rows.mean())
    achieved = float(res.se)
    rho = float(np.clip(res.icc, 0.0, 0.999)) if math.isfinite(res.icc) else math.nan
    s2b = float(res.sigma2_between)
    max_t = int(u.n_task_rows.max())
    t_top = max_t + 1
    t_new = max(2, round(k)) if t_cap is None else min(max(2, round(k)), t_cap)
    cost_trials = float(np.maximum(t_top - u.n_task_rows, 0).sum() * c2)
    task_cost = c1 + t_new * c2
    if math.isfinite(rho) and k > 1 and n > 1:
        f = 2 * (1 - rho) ** 2 * (1 + (k - 1) * rho) ** 2 / (k * (k - 1) * (n - 1))
        g_task = f / (n - 1) / task_cost
        g_trial = f * (1 / k + 1 / (k - 1) - 2 * rho / (1 + (k - 1) * rho)) / (n * c2)
    else:
        g_task = g_trial = math.nan
    if math.isfinite(g_task):
        basis: Basis = "components"
        prefer_trials = g_trial > g_task
    else:
        # Too little data for Bonett's SE: a second trial per task first, else more tasks
        # (with two trials per task an undefined ICC means no variation between tasks yet).
        basis = "not_estimable" if k < 2 else "no_variance"
        prefer_trials = k < 2
    base = dict(
        base, achieved=achieved, estimate=float(res.icc), ci_low=float(res.ci_low),
        ci_high=float(res.ci_high), sigma2_between=max(s2b, 0.0) if math.isfinite(s2b) else s2b,
        sigma2_within=float(res.sigma2_within), trials_per_task=k, optimal_trials=math.nan,
        gain_per_cost_task=g_task, gain_per_cost_trial=g_trial, basis=basis, dominant=None,
        sequence_tasks=n, most_trials_per_task=max_t, planned_trials_per_task=t_new,
        planned_task_cost=task_cost, planned_top_up_cost=cost_trials,
    )  # fmt: skip
    if math.isfinite(achieved) and achieved <= goal:
        return _stop(base, "target_met", warnings)
    can_trials = t_cap is None or t_top <= t_cap
    can_tasks = n_cap is None or n < n_cap
    if not (can_trials or can_tasks):
        return _stop(base, "limit_reached", warnings)
    order = ("more_trials", "more_tasks") if prefer_trials else ("more_tasks", "more_trials")
    for action in order:
        if action == "more_trials" and can_trials and int(affordable_count(remaining, cost_trials)):
            return _go(base, action, 0, t_top, cost_trials, warnings)
        if action == "more_tasks" and can_tasks and int(affordable_count(remaining, task_cost)):
            kk = min(ctx["last_new"], int(affordable_count(remaining, task_cost)))
            if n_cap is not None:
                kk = min(kk, n_cap - n)
            return _go(base, action, kk, t_new, kk * task_cost, warnings)
    return _stop(base, "budget_spent", warnings)
