"""A trial table's facets: its G study and D study per group, for ``analyze`` and ``plan``.

Any table whose rows carry, besides the task and the score, columns for the other sources of
noise the evaluation varied (prompt variant, judge, judge sample, time block, host, …) is
read as a design: the task and each named column are random facets, crossed unless a
specification nests one in others (``judge:prompt``), and the scores within a cell of the
design (the trials, when a trial column is there) are the replicates. Per group:

* the G study (:func:`evalnoise.stats.gstudy`): one component per effect, named from the
  columns, with its interval and whether it is detected;
* the total-error SE of the mean of task means (:func:`evalnoise.stats.total_error`) beside
  the task-clustered SE (:func:`evalnoise.stats.accuracy`);
* the D study (:func:`evalnoise.stats.dstudy`): the SE with each facet doubled, and — given
  costs per facet — the cheapest design reaching a target SE
  (:func:`evalnoise.stats.cheapest_design`) or the best one a budget buys
  (:func:`evalnoise.stats.best_design`).

Bad input is an :class:`~evalnoise.errors.InputError` naming the file, row and column.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from evalnoise.errors import InputError
from evalnoise.formatting import jsonable

__all__ = [
    "facet_frame",
    "facet_records",
    "noise_record",
    "parse_costs",
    "parse_facet_specs",
    "trials_per_task",
]

#: the replicate's name in D-study sizes and costs: a score within a design cell (a trial),
#: unless a facet is called that
REPLICATE = "trial"


def parse_facet_specs(text: str) -> list[str]:
    """``"prompt,judge:prompt"`` → ``["prompt", "judge:prompt"]`` (empty items refused)."""
    specs = [s.strip() for s in str(text).split(",")]
    if not all(specs) or not all(all(p.strip() for p in s.split(":")) for s in specs):
        raise InputError(f"--facets {text!r}: give column names, COL or INNER:OUTER, by commas")
    return specs


def parse_costs(text: str | None) -> dict[str, float]:
    """``"task=1,prompt=20,trial=0.1"`` → costs per facet (a number ≥ 0 each)."""
    if not text:
        return {}
    out: dict[str, float] = {}
    for item in str(text).split(","):
        name, sep, value = item.partition("=")
        try:
            cost = float(value)
        except ValueError:
            cost = float("nan")
        if not sep or not name.strip() or not np.isfinite(cost) or cost < 0:
            raise InputError(f"--facet-costs: {item!r} is not FACET=COST with a cost >= 0")
        out[name.strip()] = cost
    return out


def facet_frame(
    raw: pd.DataFrame,
    *,
    task: str,
    score: str,
    group: str | None,
    specs: Sequence[str],
    path: str,
) -> pd.DataFrame:
    """The rows as columns ``group``, ``task``, ``score`` and one per facet column.

    Raises InputError for a facet column the file lacks, a facet named twice or after the
    task, and a missing label (naming the row and column).
    """
    from evalnoise.trial_table import column_list, to_scores

    names: list[str] = []
    for spec in specs:
        for name in spec.split(":"):
            if name not in names:
                names.append(name)
    if task in names:
        raise InputError(f"--facets names the task column {task!r}: it is always a facet")
    for name in [task, *names]:
        if name not in raw.columns:
            raise InputError(
                f"no such column (the file has: {column_list(raw)})", path=path, column=name
            )
        null = raw[name].isna().to_numpy()
        if null.any():
            i = int(np.flatnonzero(null)[0])
            raise InputError("value is missing", path=path, row=i + 1, column=name)
    out = pd.DataFrame(
        {
            "group": raw[group].astype(str).to_numpy() if group else "all",
            "task": raw[task].astype(str).to_numpy(),
            "score": to_scores(raw[score], path, score),
        }
    )
    for name in names:
        out[name] = raw[name].astype(str).to_numpy()
    return out


def _replicate(names: Sequence[str]) -> str:
    return REPLICATE if REPLICATE not in names else "replicate"


def _projections(model, te_se: float) -> list[dict[str, Any]]:
    """The SE as ran, and with each facet (and the replicates) doubled."""
    from evalnoise.stats import dstudy

    rows = []
    as_ran = dstudy(model)
    rows.append({"change": "as ran", **as_ran.to_records()[0], "se_as_ran_total": te_se})
    for f in model.facets:
        if f in model.fixed:
            continue
        d = dstudy(model, {f: 2 * model.sizes[f]})
        rows.append({"change": f"{f} ×2", **d.to_records()[0]})
    if model.replicated:
        d = dstudy(model, replicates=2 * model.replicates)
        rows.append({"change": f"{model.replicate} ×2", **d.to_records()[0]})
    return rows


def facet_records(
    frame: pd.DataFrame,
    *,
    task: str,
    specs: Sequence[str],
    confidence: float = 0.95,
    costs: Mapping[str, float] | None = None,
    target_se: float | None = None,
    budget: float | None = None,
    max_tasks: int | None = None,
) -> dict[str, dict[str, Any]]:
    """Per group: ``{"gstudy": …, "dstudy": …}`` (JSON-ready), groups sorted.

    ``dstudy`` holds ``total_error`` (the total-error SE, its interval, its Satterthwaite
    df, the task-clustered SE beside it and the variance the clustered SE misses),
    ``projections`` (the SE with each facet doubled) and, with ``costs``, ``cheapest`` (for
    ``target_se``) or ``best`` (for ``budget``): the design, its SE and cost. ``costs`` are
    per level of each facet (``task`` may name the task column's) and per score (``trial``,
    or ``replicate`` when a facet is called trial; ``observation`` is the same).
    ``max_tasks`` is the task pool: no design has more tasks (:func:`noise_record`).
    """
    from evalnoise.stats import accuracy, gstudy, parse_facets

    design = parse_facets(list(specs), first=[task])
    out: dict[str, dict[str, Any]] = {}
    for group, part in frame.groupby("group", sort=True):
        facets = {task: part["task"].to_numpy()}
        facets |= {n: part[n].to_numpy() for n in design.names if n != task}
        y = part["score"].to_numpy(dtype=float)
        try:
            g = gstudy(y, facets, design, confidence=confidence, mean_of=task)
        except ValueError as exc:
            out[str(group)] = {"gstudy": None, "dstudy": None, "not_computed": str(exc)}
            continue
        acc = accuracy(y, part["task"].to_numpy(), confidence=confidence)
        try:
            out[str(group)] = noise_record(
                g,
                task=task,
                se_clustered=acc.se_clustered,
                costs=costs,
                target_se=target_se,
                budget=budget,
                max_tasks=max_tasks,
            )
        except ValueError as exc:
            raise InputError(str(exc)) from exc
    return jsonable(out)


def noise_record(
    g: Any,
    *,
    task: str,
    se_clustered: float | None,
    costs: Mapping[str, float] | None = None,
    target_se: float | None = None,
    budget: float | None = None,
    limits: Mapping[str, Any] | None = None,
    clip: tuple[float, float] | None = (0.0, 1.0),
    max_tasks: int | None = None,
) -> dict[str, Any]:
    """One group's ``{"gstudy": …, "dstudy": …}`` from its G study ``g`` (see
    :func:`facet_records`): the components; the total-error SE beside the task-clustered
    ``se_clustered`` (:func:`evalnoise.stats.total_error`); the SE with each facet doubled;
    with ``costs`` (per level of a facet, ``trial`` per score), the cheapest design reaching
    ``target_se`` and/or the best one ``budget`` buys, the other facets within ``limits``
    (per facet a maximum or (min, max)) and the tasks within ``max_tasks`` — the task pool,
    the tasks that exist: a design needing more says so (``status`` ``"pool_bound"``, with
    the tasks needed and the best design inside the pool; :class:`evalnoise.stats.
    OptimalDesignResult`). The total-error interval is cut to ``clip`` (scores lie in
    [0, 1]). Raises ValueError for costs the model cannot use."""
    from evalnoise.stats import best_design, cheapest_design, model_of, total_error

    costs = dict(costs or {})
    if "task" in costs and task != "task" and task not in costs:
        costs[task] = costs.pop("task")  # "task" names the task column's facet
    te = total_error(g, cluster=task, se_clustered=se_clustered)
    model = model_of(g, replicate=_replicate(list(g.sizes)))
    total = te.to_dict()
    if clip is not None:
        # a mean of scores in [lo, hi] lies there: the interval is cut at the bounds (said)
        lo, hi = clip
        cut = total["ci_low"] < lo or total["ci_high"] > hi
        total["ci_low"], total["ci_high"] = max(total["ci_low"], lo), min(total["ci_high"], hi)
        if cut:
            total["warnings"] = [*total.get("warnings", ()), f"interval cut to [{lo:g}, {hi:g}]"]
    dd: dict[str, Any] = {
        "total_error": total,
        "projections": _projections(model, te.se),
    }
    if costs:
        if target_se is not None:
            res = cheapest_design(
                model, target_se, costs, free=task, limits=limits, max_free=max_tasks
            )
            dd["cheapest"] = _choice(res, task)
        if budget is not None:
            res = best_design(model, budget, costs, free=task, limits=limits, max_free=max_tasks)
            dd["best"] = _choice(res, task)
        dd["curve"] = _curve(model, costs, task, limits, max_tasks)
    return jsonable({"gstudy": g.to_dict(), "dstudy": dd})


#: budgets of the D study's curve, as multiples of what the design that ran cost
CURVE_MULTIPLES = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0)


def _curve(
    model: Any,
    costs: Mapping[str, float],
    task: str,
    limits: Mapping[str, Any] | None,
    max_tasks: int | None = None,
) -> list[dict[str, Any]]:
    """The best design (least SE, :func:`evalnoise.stats.best_design`) at budgets of
    :data:`CURVE_MULTIPLES` × the cost of the design that ran: SE against budget, the
    D study's chart (the tasks within the pool ``max_tasks``)."""
    from evalnoise.stats import best_design, dstudy

    ran = dstudy(model, costs=costs).to_records()[0]
    base = ran.get("cost")
    if base is None or not np.isfinite(base) or base <= 0:
        return []
    points = []
    for multiple in CURVE_MULTIPLES:
        res = best_design(
            model, multiple * base, costs, free=task, limits=limits, max_free=max_tasks
        )
        rec = res.recommended
        if rec is None:
            continue
        points.append(
            {
                "budget_multiple": multiple,
                "budget": multiple * base,
                "se": rec.se,
                "tasks": rec.sizes.get(task),
                "trials": trials_per_task(_design(rec), task),
            }
        )
    return points


def _design(choice: Any) -> dict[str, int] | None:
    return None if choice is None else {**choice.sizes, "replicates": choice.replicates}


def trials_per_task(design: Mapping[str, int], task: str = "task") -> int:
    """Scores per task of a balanced design: the replicates (scores per cell) times the
    levels of every other facet, Π_{f ≠ task} n'_f · r' (a facet nested in another counts
    its levels per level of that one, so the product holds for nesting too)."""
    return int(math.prod(v for k, v in design.items() if k != task))


def _choice(res: Any, task: str) -> dict[str, Any]:
    """The search's choice as a record: the design (sizes per facet and ``replicates``, the
    scores per cell), its SE and cost, the ``status`` and what the task pool cost it
    (:class:`evalnoise.stats.OptimalDesignResult`); words are
    :mod:`evalnoise.design_text`'s."""
    rec, closest = res.recommended, res.closest
    return {
        "goal": res.goal,
        "target_se": res.target_se,
        "budget": res.budget,
        "costs": res.costs,
        "task": task,
        "design": _design(rec),
        "trials_per_task": None if rec is None else trials_per_task(_design(rec), task),
        "se": None if rec is None else rec.se,
        "cost": None if rec is None else rec.cost,
        "status": res.status,
        "max_tasks": res.max_free,
        "tasks_needed": res.free_needed,
        "floor_se": res.floor_se,
        "closest": None
        if closest is None
        else {
            "design": _design(closest),
            "trials_per_task": trials_per_task(_design(closest), task),
            "se": closest.se,
            "cost": closest.cost,
        },
        "warnings": list(res.warnings),
    }
