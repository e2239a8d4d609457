"""A D-study design in words: the cheapest or best design, and what the task pool did to it.

The lines that ``summary.txt`` (:mod:`evalnoise.attribution.text`), the report's noise
section (:mod:`evalnoise.report.noise`), ``evalnoise analyze --facets`` and
``evalnoise plan`` print for a design choice (:func:`evalnoise.facets.noise_record`'s
``cheapest`` and ``best`` records, from :class:`evalnoise.stats.OptimalDesignResult`). The
numbers are computed elsewhere; this module only words them, so rewording a line reruns
the summary and the report, never a statistic. Pure functions of the records, no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["choice_text", "design_text", "facet_count"]


def _plural(word: str, n: int) -> str:
    return word if n == 1 else f"{word}s"


def facet_count(facet: str, n: int) -> str:
    """``4 time blocks``, ``1 host``: a facet's level count in words."""
    return f"{n} {_plural(facet.replace('_', ' '), n)}"


def _amount(value: Any) -> str:
    v = float(value)
    return f"{v:,.0f}" if v.is_integer() else f"{v:,.4g}"


def design_text(design: Mapping[str, int], *, task: str = "task", as_ran: bool = False) -> str:
    """``41 tasks × 4 trials per task (4 time blocks as ran, 1 trial in each)``: a design's
    tasks, its trials per task (the replicates times the levels of every other facet,
    :func:`evalnoise.facets.trials_per_task`) and how they spread over the other facets;
    ``as_ran`` says the other facets keep the sizes the data had."""
    d = dict(design)
    n_tasks = int(d.pop(task))
    reps = int(d.pop("replicates", 1))
    per_task = reps
    for v in d.values():
        per_task *= int(v)
    head = f"{facet_count('task', n_tasks)} × {per_task} {_plural('trial', per_task)} per task"
    if not d:
        return head
    spread = " × ".join(facet_count(f, int(v)) for f, v in d.items())
    return head + (
        f" ({spread}{' as ran' if as_ran else ''}, {reps} {_plural('trial', reps)} in each)"
    )


def _result(choice: Mapping[str, Any], which: Mapping[str, Any], cost_unit: str | None) -> str:
    cost = which.get("cost")
    if cost is None:
        return f"SE {float(which['se']):.3f}"
    spent = f"{_amount(cost)} {cost_unit}" if cost_unit else f"cost {_amount(cost)}"
    return f"SE {float(which['se']):.3f}, {spent}"


def _floor_text(pool: Any, floor: float | None, target: float) -> str:
    """What more trials per task could do inside the pool: nothing below ``floor``; or, when
    the floor lies below the target, reach it with more trials than the search tried."""
    if floor is None:
        return ""
    if float(floor) >= target:
        return f" (with {pool} tasks no number of trials goes below SE {float(floor):.3f})"
    return (
        f" (with {pool} tasks, more trials per task than the search tried would approach "
        f"SE {float(floor):.3f})"
    )


def choice_text(
    choice: Mapping[str, Any], *, as_ran: bool = False, cost_unit: str | None = None
) -> str:
    """One design choice (``cheapest`` for a target SE, ``best`` for a budget) in a line:
    the design, its SE and cost — and when the task pool binds (``status`` ``pool_bound``)
    that the goal needs more tasks than exist, how many, and the best design inside the
    pool, naming the pool as the limiting cap. ``cost_unit`` names what the cost counts
    (``"trials"``), else the line says ``cost``."""
    task = choice.get("task") or "task"
    status = choice.get("status", "met")
    pool = choice.get("max_tasks")
    needed = choice.get("tasks_needed")
    if choice["goal"] == "target_se":
        goal = f"SE {float(choice['target_se']):.3f}"
        if choice.get("design") is None and status == "pool_bound":
            closest = choice["closest"]
            need = f"{needed} tasks" if needed is not None else "more tasks"
            floor = choice.get("floor_se")
            return (
                f"{goal} needs {need}, more than the {pool} that exist (the task pool is the "
                f"limiting cap); the best design inside the pool: "
                f"{design_text(closest['design'], task=task, as_ran=as_ran)}: "
                f"{_result(choice, closest, cost_unit)}"
                + _floor_text(pool, floor, float(choice["target_se"]))
            )
        if choice.get("design") is None:
            return (
                f"no design within the searched sizes reaches {goal}: the components that do "
                "not shrink with more tasks already exceed it"
            )
        head = f"cheapest design to {goal}"
        if status == "pool_bound":
            head += f" within the {pool} tasks that exist (with no cap: {needed} tasks)"
    else:
        budget = _amount(choice["budget"])
        if choice.get("design") is None:
            return f"the budget {budget} buys no design with one level of every facet"
        head = f"the least SE for {budget}"
        if status == "pool_bound":
            buys = f"{needed} tasks" if needed is not None else "more tasks"
            head += (
                f" within the {pool} tasks that exist (the budget would buy {buys}; the task "
                "pool is the limiting cap)"
            )
    return (
        f"{head}: {design_text(choice['design'], task=task, as_ran=as_ran)}: "
        f"{_result(choice, choice, cost_unit)}"
    )
