"""The decision after a block for each target of :func:`evalnoise.stats.stopping.stopping_decision`.

:func:`sequence_decision` serves the accuracy and difference targets (the anytime-valid
sequence over new tasks, Cochran's trials per task for the money); :func:`icc_decision` the
icc target (Bonett's SE from every trial). Each returns the fields of a
:class:`evalnoise.stats.stopping.StoppingDecision` as a dict, which ``stopping_decision``
turns into the result (the result class lives with the public function, which imports this
module). The formulas are in ``stopping_decision``'s docstring.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from evalnoise.stats.accuracy_sequences import (
    ConfidenceSequenceResult,
    _Units,
    confidence_sequence,
    paired_confidence_sequence,
)
from evalnoise.stats.icc import icc_oneway
from evalnoise.stats.planning import _max_count, optimal_trials_per_task

if TYPE_CHECKING:
    from evalnoise.stats.icc import ICCResult
    from evalnoise.stats.stopping import StoppingRule

__all__ = ["icc_decision", "sequence_decision"]


def _n(k: int, word: str) -> str:
    return f"{k} {word}" if k == 1 else f"{k} {word}s"


def _money(x: float) -> str:
    return f"{x:,.4g}" if abs(x) < 1e4 else f"{x:,.0f}"


def last_block_design(entry: np.ndarray, count: np.ndarray) -> tuple[int, int]:
    """(new tasks, trials per new task) of the last block in which tasks entered."""
    sel = entry == entry.max()
    return int(sel.sum()), max(1, round(float(np.median(count[sel]))))


def _stop(base: dict, status: str, reason: str, warnings: list[str]) -> dict[str, Any]:
    return dict(
        stop=True,
        status=status,
        action="stop",
        reason=reason,
        next_new_tasks=0,
        next_trials_per_task=0,
        next_block_cost=0.0,
        warnings=tuple(warnings),
        **base,
    )


def _go(
    base: dict, action: str, reason: str, new: int, trials: int, cost: float, warnings: list[str]
) -> dict[str, Any]:
    return dict(
        stop=False,
        status="continue",
        action=action,
        reason=reason,
        next_new_tasks=new,
        next_trials_per_task=trials,
        next_block_cost=cost,
        warnings=tuple(warnings),
        **base,
    )


def sequence_decision(
    rule: StoppingRule,
    agents: list,
    icc_res: ICCResult,
    u: _Units,
    t_cur: int,
    ctx: dict,
    base: dict,
) -> dict[str, Any]:
    """The accuracy and difference targets: the anytime-valid sequence over new tasks.

    ``agents`` holds (scores, tasks, blocks) per agent, checked; ``u`` their entry units;
    ``t_cur`` the trials per task of the last entry block; ``ctx`` the state of the run
    (``remaining``, ``n_tasks``, ``last_new``, ``level``); ``base`` the decision's fields so far.
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
    base = dict(
        base, achieved=achieved, estimate=cs.mean, ci_low=cs.ci_low, ci_high=cs.ci_high,
        sigma2_between=s2b, sigma2_within=s2w, trials_per_task=float(t_cur),
        optimal_trials=t_star, gain_per_cost_task=gain_task, gain_per_cost_trial=gain_trial,
    )  # fmt: skip
    what = "the difference A − B" if paired else "accuracy"
    now = (
        f"the {ctx['level']} anytime-valid interval for {what} is "
        f"[{cs.ci_low:.4f}, {cs.ci_high:.4f}], half-width {achieved:.4f}"
    )
    if achieved <= goal:
        return _stop(
            base, "target_met", f"target met: {now} <= {goal:g} ({_n(n_units, 'task')})", warnings
        )
    if n_cap is not None and ctx["n_tasks"] >= n_cap:
        reason = (
            f"task limit reached: all {n_cap} tasks are in, and trials added to tasks already in "
            f"the sequence cannot narrow an anytime-valid interval over tasks; {now} > {goal:g}"
        )
        return _stop(base, "limit_reached", reason, warnings)
    unit_cost = n_agents * (c1 + t_next * c2)
    remaining = ctx["remaining"]
    k = min(ctx["last_new"], int(_max_count(remaining, unit_cost)))
    if n_cap is not None:
        k = min(k, n_cap - ctx["n_tasks"])
    if k < 1:
        reason = (
            f"budget spent: {_money(max(remaining, 0.0))} left of {_money(rule.budget)}, and "
            f"one more task with {t_next} trials costs {_money(unit_cost)}; {now} > {goal:g}"
        )
        return _stop(base, "budget_spent", reason, warnings)

    action = "more_trials" if t_next > t_cur else "more_tasks"
    if not components_ok:
        why = "The variance components cannot be estimated yet (one task, or one trial each)"
    elif flat:
        why = "No variance observed yet (every task mean is equal): keeping the design"
    else:
        dom = "Within-task" if t_star > t_cur else "Between-task"
        why = (
            f"{dom} variance dominates for the cost (σ²_b = {s2b:.4g}, σ²_w = {s2w:.4g} per "
            f"trial, c_task = {_money(c1)}, c_trial = {_money(c2)}): one more task cuts Var by "
            f"{gain_task:.3g} per unit of money, one more trial on every task by "
            f"{gain_trial:.3g}; Cochran's optimum is T* = {t_star:.3g} trials per task"
        )
    if t_next > t_cur:
        change = f"raise the trials per new task from {t_cur} to {t_next}"
    elif t_next < t_cur:
        change = f"add tasks with {_n(t_next, 'trial')} each (fewer than the current {t_cur})"
    else:
        change = f"add tasks with {_n(t_next, 'trial')} each"
    label = "more trials per task" if action == "more_trials" else "more tasks"
    reason = (
        f"continue with {label}: {now} > {goal:g} after {_n(n_units, 'task')}. {why}. Next "
        f"block: {change} — {_n(k, 'new task')} (cost {_money(k * unit_cost)}, "
        f"{_money(remaining)} left)"
    )
    if action == "more_trials":
        reason += "; tasks already in the sequence keep their entry trials"
    return _go(base, action, reason, k, t_next, k * unit_cost, warnings)


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
    rule: StoppingRule, res: ICCResult, u: _Units, ctx: dict, base: dict
) -> dict[str, Any]:
    """The icc target: Bonett's SE of ICC(1,1) from every trial (arguments as for
    :func:`sequence_decision`)."""
    warnings = [
        "the icc target compares Bonett's fixed-sample SE with the goal after each block: a "
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
    base = dict(
        base, achieved=achieved, estimate=float(res.icc), ci_low=float(res.ci_low),
        ci_high=float(res.ci_high), sigma2_between=max(s2b, 0.0) if math.isfinite(s2b) else s2b,
        sigma2_within=float(res.sigma2_within), trials_per_task=k, optimal_trials=math.nan,
        gain_per_cost_task=g_task, gain_per_cost_trial=g_trial,
    )  # fmt: skip
    now = f"SE(ICC) = {achieved:.4f}" if math.isfinite(achieved) else "SE(ICC) is not estimable"
    short = f"{now} > {goal:g}" if math.isfinite(achieved) else now
    if math.isfinite(achieved) and achieved <= goal:
        reason = (
            f"target met: {now} <= {goal:g} (ICC = {res.icc:.3f}, {n} tasks, {k:.3g} trials "
            "per task)"
        )
        return _stop(base, "target_met", reason, warnings)
    can_trials = t_cap is None or t_top <= t_cap
    can_tasks = n_cap is None or n < n_cap
    if not (can_trials or can_tasks):
        reason = (
            f"limits reached: {n} tasks (max {n_cap}) with up to {max_t} trials each (max "
            f"{t_cap}); {short}"
        )
        return _stop(base, "limit_reached", reason, warnings)
    if math.isfinite(g_task):
        prefer_trials = g_trial > g_task
        cmp_trials = (
            f"one more trial on every task cuts Var(ICC) by {g_trial:.3g} per unit of money, "
            f"one more task by {g_task:.3g}"
        )
        cmp_tasks = (
            f"one more task cuts Var(ICC) by {g_task:.3g} per unit of money, one more trial on "
            f"every task by {g_trial:.3g}"
        )
    else:
        # Too little data for Bonett's SE: a second trial per task first, else more tasks
        # (with two trials per task an undefined ICC means no variation between tasks yet).
        prefer_trials = k < 2
        cmp_tasks = "the ICC is undefined so far (no variation yet): more tasks are needed"
        cmp_trials = (
            "a second trial per task is needed to estimate the ICC"
            if prefer_trials
            else "the ICC is undefined so far (no variation yet) and no task can be added: "
            "more trials per task instead"
        )
    order = ("more_trials", "more_tasks") if prefer_trials else ("more_tasks", "more_trials")
    for action in order:
        if action == "more_trials" and can_trials and int(_max_count(remaining, cost_trials)):
            reason = (
                f"continue with more trials per task: {short}; {cmp_trials}. Next "
                f"block: top every task up to {t_top} trials (cost {_money(cost_trials)}, "
                f"{_money(remaining)} left)"
            )
            return _go(base, action, reason, 0, t_top, cost_trials, warnings)
        if action == "more_tasks" and can_tasks and int(_max_count(remaining, task_cost)):
            kk = min(ctx["last_new"], int(_max_count(remaining, task_cost)))
            if n_cap is not None:
                kk = min(kk, n_cap - n)
            reason = (
                f"continue with more tasks: {short}; {cmp_tasks}. Next block: "
                f"{_n(kk, 'new task')} with {_n(t_new, 'trial')} each (cost "
                f"{_money(kk * task_cost)}, "
                f"{_money(remaining)} left)"
            )
            return _go(base, action, reason, kk, t_new, kk * task_cost, warnings)
    reason = (
        f"budget spent: {_money(max(remaining, 0.0))} left of {_money(rule.budget)} buys "
        f"neither a new task ({_money(task_cost)}) nor a trial on every task "
        f"({_money(cost_trials)}); {short}"
    )
    return _stop(base, "budget_spent", reason, warnings)
