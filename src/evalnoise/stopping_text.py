"""An adaptive evaluation's decisions in words: why a unit stopped, or what its next round runs.

The reasons that ``results/sequential/summary.json`` and ``rounds.csv`` (written by
``scripts/sequential_summary.py``), ``summary.txt`` and the report give for each decision.
The decision itself (:class:`evalnoise.stats.StoppingDecision`, and the unit records of
:func:`evalnoise.pipeline.sequential.decide_unit`) holds a status and the numbers; this
module words them, kept out of the statistics so that rewording a reason reruns the summary
and the report, never the checkpoint that decides. Pure functions of the records (a
decision as a mapping, as written: NaN read back as None), no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

__all__ = ["decision_text", "unit_reason"]


def _n(k: int, word: str) -> str:
    return f"{k} {word}" if k == 1 else f"{k} {word}s"


def _money(x: float) -> str:
    return f"{x:,.4g}" if abs(x) < 1e4 else f"{x:,.0f}"


def _num(value: Any) -> float:
    """A number as written (None for NaN) back to a float."""
    return math.nan if value is None else float(value)


def decision_text(d: Mapping[str, Any]) -> str:
    """The decision (:class:`evalnoise.stats.StoppingDecision` as a mapping) in words, with
    the numbers behind it: the target met, the limit or budget that stops it, or what the
    next round runs and why (the variance components and the gain per unit of money)."""
    if d["target"] == "icc":
        return _icc_text(d)
    return _sequence_text(d)


def _sequence_text(d: Mapping[str, Any]) -> str:
    goal = float(d["goal"])
    what = "the difference A − B" if d["target"] == "difference" else "accuracy"
    now = (
        f"the {100 * float(d['confidence']):g}% anytime-valid interval for {what} is "
        f"[{_num(d['ci_low']):.4f}, {_num(d['ci_high']):.4f}], half-width "
        f"{_num(d['achieved']):.4f}"
    )
    n_units = int(d["sequence_tasks"])
    status = d["status"]
    if status == "target_met":
        return f"target met: {now} <= {goal:g} ({_n(n_units, 'task')})"
    if status == "limit_reached":
        return (
            f"task limit reached: all {d['max_tasks']} tasks are in, and trials added to tasks "
            "already in the sequence cannot narrow an anytime-valid interval over tasks; "
            f"{now} > {goal:g}"
        )
    t_next = int(d["planned_trials_per_task"])
    if status == "budget_spent":
        return (
            f"budget spent: {_money(max(float(d['remaining']), 0.0))} left of "
            f"{_money(float(d['budget']))}, and one more task with {t_next} trials costs "
            f"{_money(float(d['planned_task_cost']))}; {now} > {goal:g}"
        )
    t_cur = round(float(d["trials_per_task"]))
    k = int(d["next_new_tasks"])
    if d["basis"] == "not_estimable":
        why = "The variance components cannot be estimated yet (one task, or one trial each)"
    elif d["basis"] == "no_variance":
        why = "No variance observed yet (every task mean is equal): keeping the design"
    else:
        dom = "Within-task" if d["dominant"] == "within" else "Between-task"
        if d["optimal_trials"] is not None:
            t_star = f"Cochran's optimum is T* = {float(d['optimal_trials']):.3g} trials per task"
        elif d["dominant"] == "within":  # σ²_b = 0 < c_task: written as None, it is inf
            t_star = "Cochran's optimum is T* = inf trials per task"
        else:  # σ²_b = 0 = c_task: every T costs the same variance per unit of money
            t_star = (
                "Cochran's optimum T* is undefined (σ²_b = 0 and c_task = 0: any T does as well)"
            )
        why = (
            f"{dom} variance dominates for the cost (σ²_b = {_num(d['sigma2_between']):.4g}, "
            f"σ²_w = {_num(d['sigma2_within']):.4g} per trial, c_task = "
            f"{_money(float(d['cost_per_task']))}, c_trial = "
            f"{_money(float(d['cost_per_trial']))}): one more task cuts Var by "
            f"{_num(d['gain_per_cost_task']):.3g} per unit of money, one more trial on every "
            f"task by {_num(d['gain_per_cost_trial']):.3g}; {t_star}"
        )
    if t_next > t_cur:
        change = f"raise the trials per new task from {t_cur} to {t_next}"
    elif t_next < t_cur:
        change = f"add tasks with {_n(t_next, 'trial')} each (fewer than the current {t_cur})"
    else:
        change = f"add tasks with {_n(t_next, 'trial')} each"
    label = "more trials per task" if d["action"] == "more_trials" else "more tasks"
    reason = (
        f"continue with {label}: {now} > {goal:g} after {_n(n_units, 'task')}. {why}. Next "
        f"round: {change} — {_n(k, 'new task')} (cost {_money(float(d['next_round_cost']))}, "
        f"{_money(float(d['remaining']))} left)"
    )
    if d["action"] == "more_trials":
        reason += "; tasks already in the sequence keep their entry trials"
    return reason


def _icc_text(d: Mapping[str, Any]) -> str:
    goal = float(d["goal"])
    achieved = _num(d["achieved"])
    now = f"SE(ICC) = {achieved:.4f}" if math.isfinite(achieved) else "SE(ICC) is not estimable"
    short = f"{now} > {goal:g}" if math.isfinite(achieved) else now
    n = int(d["n_tasks"])
    remaining = float(d["remaining"])
    status = d["status"]
    if status == "target_met":
        return (
            f"target met: {now} <= {goal:g} (ICC = {_num(d['estimate']):.3f}, {n} tasks, "
            f"{float(d['trials_per_task']):.3g} trials per task)"
        )
    if status == "limit_reached":
        return (
            f"limits reached: {n} tasks (max {d['max_tasks']}) with up to "
            f"{d['most_trials_per_task']} trials each (max {d['max_trials_per_task']}); {short}"
        )
    if status == "budget_spent":
        return (
            f"budget spent: {_money(max(remaining, 0.0))} left of {_money(float(d['budget']))} "
            f"buys neither a new task ({_money(float(d['planned_task_cost']))}) nor a trial on "
            f"every task ({_money(float(d['planned_top_up_cost']))}); {short}"
        )
    g_task, g_trial = _num(d["gain_per_cost_task"]), _num(d["gain_per_cost_trial"])
    if d["basis"] == "components":
        cmp_trials = (
            f"one more trial on every task cuts Var(ICC) by {g_trial:.3g} per unit of money, "
            f"one more task by {g_task:.3g}"
        )
        cmp_tasks = (
            f"one more task cuts Var(ICC) by {g_task:.3g} per unit of money, one more trial on "
            f"every task by {g_trial:.3g}"
        )
    else:
        cmp_tasks = "the ICC is undefined so far (no variation yet): more tasks are needed"
        cmp_trials = (
            "a second trial per task is needed to estimate the ICC"
            if d["basis"] == "not_estimable"
            else "the ICC is undefined so far (no variation yet) and no task can be added: "
            "more trials per task instead"
        )
    cost = _money(float(d["next_round_cost"]))
    if d["action"] == "more_trials":
        return (
            f"continue with more trials per task: {short}; {cmp_trials}. Next round: top every "
            f"task up to {d['next_trials_per_task']} trials (cost {cost}, {_money(remaining)} "
            "left)"
        )
    return (
        f"continue with more tasks: {short}; {cmp_tasks}. Next round: "
        f"{_n(int(d['next_new_tasks']), 'new task')} with "
        f"{_n(int(d['next_trials_per_task']), 'trial')} each (cost {cost}, "
        f"{_money(remaining)} left)"
    )


def unit_reason(unit: Mapping[str, Any]) -> str:
    """Why one unit of a round record (:func:`evalnoise.pipeline.sequential.decide_unit`)
    stopped or goes on: its decision's words, or those of the pipeline's own stops (a group
    outside the compared pair, a group with no trial counted, the round limit)."""
    status = unit["status"]
    if status == "not_compared":
        return "not one of the compared agents: ran the first round only"
    if status == "no_data":
        outcomes = ", ".join(f"{k} {v}" for k, v in sorted(unit["outcomes"].items())) or "none"
        return (
            f"{unit['group']}: no trial counted after round {unit['round']} "
            f"({unit['attempts']} attempts; outcomes: {outcomes}); nothing to plan on"
        )
    d = unit["decision"]
    if status == "round_limit":
        would = {**d, **d["would_have_been"], "stop": False, "status": "continue"}
        return (
            f"round limit: {d['max_rounds']} rounds run (sequential.max_rounds); the next "
            f"would have been: {decision_text(would)}"
        )
    return decision_text(d)
