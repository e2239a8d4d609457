"""``evalnoise plan --from PILOT``: the plans of a pilot's trial table — its variance
components (one-way ANOVA, or with ``--facets`` a G study per group and its D study) and,
for a budget in money, its cost per trial (:func:`evalnoise.costs.pilot_trial_cost`).

Every plan stays within the task pool ``--max-tasks`` and says when it binds.
"""

from __future__ import annotations

import argparse
import math
import sys
from typing import Any

import pandas as pd

from evalnoise.cli._columns import announce, resolved_columns
from evalnoise.cli.plan_budgets import (
    DRIVER_PRICES,
    driver_prices,
    money_mode,
    money_plan,
    print_money,
    print_runs,
    runs_plan,
)
from evalnoise.errors import InputError
from evalnoise.formatting import dumps, fmt
from evalnoise.stats import icc_oneway
from evalnoise.trial_table import read_any, validate_trials

__all__ = ["run_pilot", "run_pilot_facets"]


def _trial_cost(args: argparse.Namespace, raw: pd.DataFrame, path: str) -> tuple[float, str]:
    """The per-trial cost (:func:`evalnoise.costs.pilot_trial_cost`, from the flags and the
    group's rows) and how it was derived, in words."""
    from evalnoise.costs import pilot_trial_cost

    prices: dict[str, float] = {}
    if args.price_per_container_second is not None:
        prices["container_seconds"] = _price("--price-per-container-second",
                                             args.price_per_container_second)  # fmt: skip
    for flag, column, _what, price in driver_prices(args):
        if price is not None:
            prices[column] = _price(flag, price)
    if args.cost_per_trial is None and not prices and args.cost_column is None:
        raise InputError(
            "a budget in money needs the cost of a trial: --cost-per-trial, "
            "--price-per-container-second, a token or judge-call price, or --cost-column"
        )
    cost = pilot_trial_cost(
        raw,
        per_trial=args.cost_per_trial,
        driver_prices=prices,
        duration_column=args.duration_column,
        cost_column=args.cost_column,
        path=path,
    )
    if not cost.total > 0:
        raise InputError(f"the cost of a trial came to {cost.total:g}; it must be > 0")
    what = {column: w for _, column, w in DRIVER_PRICES}
    words = []
    for part in cost.parts:
        if part.source == "per_trial":
            words.append(f"{part.price:g} per trial (--cost-per-trial)")
        elif part.source == "container_seconds":
            words.append(
                f"{part.mean:,.1f} s mean container time ({part.column}, {part.n} trials) × "
                f"{part.price:g} per container-second = {part.cost:.4g}"
            )
        elif part.source == "cost_column":
            words.append(f"{part.mean:.4g} mean of {part.column} ({part.n} trials)")
        else:
            unreported = (
                f"; {part.unreported} did not report it, left out of the mean"
                if part.unreported
                else ""
            )
            words.append(
                f"{part.mean:,.4g} mean {part.column} ({part.n} trials{unreported}) × "
                f"{part.price:g} per {what[part.source].removeprefix('one ')} = {part.cost:.4g}"
            )
    return cost.total, f"cost per trial {cost.total:.4g} = " + " + ".join(words)


def _price(flag: str, value: float) -> float:
    if not (math.isfinite(value) and value >= 0):
        raise InputError(f"{flag} must be a number >= 0")
    return float(value)


def run_pilot(args: argparse.Namespace) -> int:
    path = str(args.from_path)
    raw = read_any(path)
    # the roles a file stores (evalnoise import: the group column among them) as analyze
    # reads them, so a multi-agent table plans per agent, each plan named
    columns, used = resolved_columns(raw, args, path=path)
    trials = validate_trials(raw, columns, path=path)
    announce("plan", used)
    money = money_mode(args)
    _, pool_note = _task_pool(args, trials["task"].nunique())
    plans = []
    for group, rows in trials.groupby("group", sort=False):
        res = icc_oneway(rows["score"].to_numpy(), rows["task"].to_numpy())
        s2b_raw, s2w = float(res.sigma2_between), float(res.sigma2_within)
        if not (math.isfinite(s2b_raw) and math.isfinite(s2w)):
            raise InputError(
                f"group {group!r}: the pilot cannot estimate both variance components (it "
                "needs at least two tasks and two trials of some task)",
                path=path,
            )
        pilot = {
            "n_tasks": res.n_tasks,
            "n_obs": res.n_obs,
            "sigma2_between": s2b_raw,
            "sigma2_within": s2w,
            "icc": float(res.icc),
        }
        notes = []
        s2b = s2b_raw
        if s2b < 0:
            notes.append(f"σ²_between is negative in the pilot ({s2b:.4g}); planned as 0")
            s2b = 0.0
        if res.n_tasks < 10:
            notes.append(f"only {res.n_tasks} pilot tasks: σ²_between is rough")
        plan: dict[str, Any] = {"group": group, "pilot": pilot, "warnings": notes}
        if money:
            # validate_trials keeps the file's rows in order, so positions match the raw table.
            c_trial, derivation = _trial_cost(args, raw.iloc[rows.index], path)
            plan["cost_per_trial_derivation"] = derivation
            plan.update(money_plan(args, s2b, s2w, c_trial))
        else:
            plan.update(runs_plan(args, s2b, s2w))
        plans.append(plan)
    if args.json:
        print(dumps({"plans": plans}))
        return 0
    print(pool_note)
    for i, plan in enumerate(plans):
        if i:
            print()
        pl = plan["pilot"]
        head = f"group {plan['group']}: " if columns.group else ""
        print(
            f"{head}pilot of {pl['n_tasks']} tasks, {pl['n_obs']} trials: σ²_between = "
            f"{pl['sigma2_between']:.4g}, σ²_within = {pl['sigma2_within']:.4g}, "
            f"ICC = {fmt(pl['icc'])}"
        )
        for note in plan["warnings"]:
            print(f"warning: {note}")
        if money:
            print_money(plan)
        else:
            print_runs(plan)
    return 0


def run_pilot_facets(args: argparse.Namespace) -> int:
    """Per group of the pilot: its G study over the task and ``--facets``
    (:func:`evalnoise.facets.facet_records`) and the D study's design for ``--budget`` (least
    SE) or ``--target-se`` (least cost), with ``--facet-costs``."""
    from evalnoise.cli._columns import resolved_columns
    from evalnoise.design_text import choice_text
    from evalnoise.facets import facet_frame, facet_records, parse_costs, parse_facet_specs

    if args.from_path is None:
        raise InputError("--facets plans from a pilot: give --from PILOT")
    if (args.budget is None) == (args.target_se is None):
        raise InputError("--facets plans for one goal: give --budget B or --target-se S")
    if args.target_se is not None and not args.target_se > 0:
        raise InputError("--target-se must be > 0")
    path = str(args.from_path)
    raw = read_any(path)
    columns, _ = resolved_columns(raw, args, path=path)
    specs = parse_facet_specs(args.facets)
    frame = facet_frame(
        raw, task=columns.task, score=columns.score, group=columns.group, specs=specs, path=path
    )
    costs = parse_costs(args.facet_costs) or {"trial": 1.0}
    pool, pool_note = _task_pool(args, raw[columns.task].nunique())
    records = facet_records(
        frame,
        task=columns.task,
        specs=specs,
        costs=costs,
        target_se=args.target_se,
        budget=None if args.budget is None else float(args.budget),
        max_tasks=pool,
    )
    plans = [{"group": g, **rec, "task_pool": pool} for g, rec in records.items()]
    if args.json:
        print(dumps({"plans": plans}))
        return 0
    print(pool_note)
    for i, plan in enumerate(plans):
        if i:
            print()
        head = f"group {plan['group']}: " if args.group else ""
        if plan["gstudy"] is None:
            print(f"{head}no G study ({plan['not_computed']})")
            continue
        g, d = plan["gstudy"], plan["dstudy"]
        te = d["total_error"]
        comps = ", ".join(
            f"{c['component']} {fmt(c['sigma2'], '.3g')}"
            + ("" if c["detected"] else " (not detected)")
            for c in g["components"]
        )
        print(f"{head}pilot G study of {g['design']} ({g['n_obs']} scores): σ² {comps}")
        print(f"total-error SE as ran {te['se']:.4f} (task-clustered {fmt(te['se_clustered'])})")
        choice = d.get("best") or d.get("cheapest")
        print(choice_text(choice))
        for warning in choice["warnings"]:
            print(f"warning: {warning}", file=sys.stderr)
    return 0


def _task_pool(args: argparse.Namespace, pilot_tasks: int) -> tuple[int | None, str]:
    """The tasks that exist, which no design may exceed (``--max-tasks``; a pilot is a
    sample of its benchmark, so without the flag there is no cap), and a line saying so."""
    if args.max_tasks is None:
        return None, (
            f"task pool: not given — a design may have more tasks than the pilot's "
            f"{pilot_tasks}; give --max-tasks N, the tasks the benchmark has"
        )
    if args.max_tasks < 1:
        raise InputError(f"--max-tasks must be a positive integer, got {args.max_tasks}")
    return int(args.max_tasks), f"task pool: {args.max_tasks} tasks (--max-tasks)"
