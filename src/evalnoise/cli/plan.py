"""``evalnoise plan``: how many tasks, and how to split a budget between tasks and trials.
(Sizing a study; the pipeline's shard plan, which trials go in which job, is
:mod:`evalnoise.pipeline.shard_plan`.)

Four modes:

* ``--icc R --trials K --ci-width W | --se S``: tasks needed for a precise ICC (Bonett 2002);
* ``--budget B --sigma2-between X --sigma2-within Y``: B counts runs (paper eq. 9–10);
* the same with ``--cost-per-task`` / ``--cost-per-trial``: B is money (Cochran 1977, §10.6);
* ``--from PILOT --budget B [costs]``: the variance components (and, with
  ``--price-per-container-second`` or ``--cost-column``, the cost of a trial) come from a
  pilot's trial table, one plan per group.
"""

from __future__ import annotations

import argparse
import math
import sys
from typing import Any

import numpy as np
import pandas as pd

from evalnoise.cli._columns import add_column_options, announce, resolved_columns
from evalnoise.errors import InputError
from evalnoise.formatting import dumps, fmt, table
from evalnoise.stats import (
    allocation_table,
    cost_allocation,
    icc_oneway,
    tasks_for_icc_precision,
)
from evalnoise.trial_table import read_any, validate_trials

HELP = "plan an evaluation: tasks needed for a precise ICC, or a budget's best allocation"

# Rows shown of a money budget's frontier: every T up to this, then roughly doubling steps.
_SHOW_ALL_TRIALS_UP_TO = 10


def _number(text: str) -> int | float:
    """A budget: a whole number stays an int (runs), anything else a float (money)."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(v):
        raise argparse.ArgumentTypeError(f"not a finite number: {text!r}")
    return int(v) if v.is_integer() else v


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "plan",
        help=HELP,
        description=HELP + ". Either --icc/--trials with --ci-width or --se (Bonett 2002), "
        "or --budget with --sigma2-between/--sigma2-within (paper eq. 9–10), or --budget with "
        "--from PILOT (the variance components of a pilot's trial table). With "
        "--cost-per-task/--cost-per-trial the budget is money and the split minimizes the "
        "variance for it (Cochran 1977, §10.6: T* = sqrt(c_task/c_trial · σ²_w/σ²_b)).",
    )
    precision = p.add_argument_group("tasks needed for a target ICC precision")
    precision.add_argument("--icc", type=float, metavar="R", help="expected ICC(1,1)")
    precision.add_argument("--trials", type=int, metavar="K", help="trials per task")
    target = precision.add_mutually_exclusive_group()
    target.add_argument(
        "--ci-width", type=float, metavar="W", help="target width of the 95%% ICC CI"
    )
    target.add_argument("--se", type=float, metavar="S", help="target SE of the ICC")
    budget = p.add_argument_group(
        "allocating a budget: B runs (tasks × trials), or B in money with the cost options"
    )
    budget.add_argument("--budget", type=_number, metavar="B", help="total runs, or money")
    budget.add_argument("--sigma2-between", type=float, metavar="X", help="σ²_between")
    budget.add_argument("--sigma2-within", type=float, metavar="Y", help="σ²_within")
    budget.add_argument(
        "--max-tasks",
        type=int,
        metavar="N",
        help="tasks the benchmark has (the task pool): no plan, --facets' included, has more, "
        "and a plan the pool caps says so",
    )
    budget.add_argument(
        "--max-trials", type=int, metavar="K", help="most trials per task (money budgets)"
    )
    costs = p.add_argument_group(
        "costs (any of these makes --budget money): per-trial cost = --cost-per-trial "
        "+ mean container seconds × --price-per-container-second + mean tokens × their "
        "prices + mean judge calls × --price-per-judge-call + mean of --cost-column"
    )
    costs.add_argument(
        "--cost-per-task",
        type=float,
        metavar="X",
        help="fixed cost of adding a task: environment setup, image pull (default 0)",
    )
    costs.add_argument(
        "--cost-per-trial",
        type=float,
        metavar="Y",
        help="cost of one trial: tokens × price, judge calls, or everything if no pilot",
    )
    costs.add_argument(
        "--price-per-container-second",
        type=float,
        metavar="P",
        help="price of one second of a trial's container (needs --from with durations)",
    )
    costs.add_argument(
        "--duration-column",
        default="duration_s",
        metavar="COL",
        help="the pilot's column of container seconds per trial (default: %(default)s)",
    )
    for flag, column, what in _DRIVER_PRICES:
        costs.add_argument(
            flag,
            type=float,
            metavar="P",
            help=f"price of {what} (needs --from with the {column} column the pipeline records)",
        )
    costs.add_argument(
        "--cost-column",
        metavar="COL",
        help="the pilot's column of money spent per trial (e.g. token cost), averaged",
    )
    judge = p.add_argument_group(
        "judge samples (the LLM judge's own noise, one level below trials)"
    )
    judge.add_argument(
        "--sigma2-judge",
        type=float,
        metavar="Z",
        help="σ²_judge: variance of repeated judge verdicts on one answer (the judge "
        "stage's nested decomposition); with --budget, plans tasks × trials × judge samples",
    )
    judge.add_argument(
        "--cost-per-judge-sample",
        type=float,
        default=0.0,
        metavar="C",
        help="cost of one judge call, in the units of --cost-per-trial (default 0)",
    )
    pilot = p.add_argument_group("variance components from a pilot")
    pilot.add_argument(
        "--from",
        dest="from_path",
        metavar="PILOT",
        help="a pilot's trial table (CSV, JSONL or Parquet): its ANOVA components replace "
        "--sigma2-between/--sigma2-within; one plan per --group",
    )
    facets = p.add_argument_group(
        "every facet of a pilot (with --from): a G study per group, then the D study"
    )
    facets.add_argument(
        "--facets",
        metavar="COL[,COL…]",
        help="the pilot's columns that are random facets crossed with the task (INNER:OUTER "
        "nests INNER in OUTER); plans over every facet: with --budget the design of least "
        "SE it buys, with --target-se the cheapest reaching it",
    )
    facets.add_argument(
        "--facet-costs",
        metavar="F=C[,F=C…]",
        help="cost per level of each facet ('task' for the task column) and per score "
        "('trial'); default: trial=1 (the budget counts scores)",
    )
    facets.add_argument("--target-se", type=float, metavar="S", help="SE to reach")
    add_column_options(p)
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.set_defaults(run=run)


def _driver_prices(args: argparse.Namespace) -> list[tuple[str, str, str, float | None]]:
    """(flag, column, what, price given or None) of every per-driver price flag."""
    return [
        (flag, column, what, getattr(args, flag.lstrip("-").replace("-", "_")))
        for flag, column, what in _DRIVER_PRICES
    ]


def _money_mode(args: argparse.Namespace) -> bool:
    return any(
        v is not None
        for v in (
            args.cost_per_task,
            args.cost_per_trial,
            args.price_per_container_second,
            args.cost_column,
            *(price for *_, price in _driver_prices(args)),
        )
    )


def run(args: argparse.Namespace) -> int:
    if args.facets is not None:
        return _run_pilot_facets(args)
    if args.facet_costs is not None or args.target_se is not None:
        raise InputError("--facet-costs and --target-se plan with --from PILOT --facets")
    if args.from_path is not None:
        if args.budget is None:
            raise InputError("--from needs --budget")
        if args.sigma2_between is not None or args.sigma2_within is not None:
            raise InputError(
                "--from estimates σ²_between and σ²_within from the pilot: drop "
                "--sigma2-between/--sigma2-within"
            )
        return _run_pilot(args)
    if (
        args.price_per_container_second is not None
        or args.cost_column is not None
        or any(price is not None for *_, price in _driver_prices(args))
    ):
        raise InputError(
            "--price-per-container-second, the token and judge-call prices and --cost-column "
            "read the trials of a pilot: "
            "give --from PILOT (or put the whole per-trial cost in --cost-per-trial)"
        )
    if args.budget is not None:
        if args.sigma2_between is None or args.sigma2_within is None:
            raise InputError("--budget needs --sigma2-between and --sigma2-within (or --from)")
        if args.sigma2_judge is not None:
            return _run_judge_plan(args)
        if _money_mode(args):
            c_trial = _fixed_trial_cost(args)
            out = _money_plan(args, args.sigma2_between, args.sigma2_within, c_trial)
            if args.json:
                print(dumps(out))
            else:
                _print_money(out)
            return 0
        return _run_runs(args, args.sigma2_between, args.sigma2_within)
    if args.icc is None or args.trials is None or (args.ci_width is None and args.se is None):
        raise InputError(
            "give either --icc R --trials K with --ci-width W or --se S, "
            "or --budget B --sigma2-between X --sigma2-within Y, or --budget B --from PILOT"
        )
    res = tasks_for_icc_precision(args.icc, args.trials, ci_width=args.ci_width, se=args.se)
    if args.json:
        print(dumps({"n_tasks_needed": int(res.n_tasks_needed)}))
    else:
        goal = (
            f"a 95% CI of width {args.ci_width}"
            if args.ci_width is not None
            else f"an SE of {args.se}"
        )
        print(
            f"{int(res.n_tasks_needed)} tasks at {args.trials} trials each give {goal} "
            f"around ICC = {args.icc} (Bonett 2002)"
        )
    return 0


# --- budgets in runs (paper eq. 9–10) ---------------------------------------------------------


def _runs_plan(args: argparse.Namespace, s2b: float, s2w: float) -> dict[str, Any]:
    if not isinstance(args.budget, int):
        raise InputError(
            f"--budget {args.budget} counts runs and must be a whole number; for a budget in "
            "money give --cost-per-trial (and --cost-per-task)"
        )
    if args.max_trials is not None:
        raise InputError("--max-trials applies to budgets in money (give --cost-per-trial)")
    res = allocation_table(args.budget, s2b, s2w, max_tasks=args.max_tasks)
    allocations = [
        {"n_tasks": int(n), "trials": int(t), "variance": float(v), "se": float(s)}
        for n, t, v, s in zip(res.n_tasks, res.trials, res.variance, res.se, strict=True)
    ]
    rec = {
        "n_tasks": int(res.recommended.n_tasks),
        "trials": int(res.recommended.trials),
        "se": float(res.recommended.se),
    }
    return {
        "allocations": allocations,
        "recommended": rec,
        **_pool_bound(res),
    }


def _pool_bound(res: Any) -> dict[str, Any]:
    """The task pool and whether it caps the recommendation (an allocation result's)."""
    return {
        "max_tasks": res.max_tasks,
        "tasks_without_cap": res.tasks_without_cap,
        "pool_bound": res.pool_bound,
    }


def _print_pool(out: dict[str, Any]) -> None:
    if out.get("pool_bound"):
        print(
            f"the task pool is the limiting cap: the budget would buy "
            f"{out['tasks_without_cap']} tasks, {out['max_tasks']} exist (--max-tasks); "
            "the recommendation spends the rest on more trials per task"
        )


def _print_runs(out: dict[str, Any]) -> None:
    print(
        table(
            [[a["n_tasks"], a["trials"], fmt(a["se"], ".4f")] for a in out["allocations"]],
            ["tasks", "trials", "SE(accuracy)"],
        )
    )
    rec = out["recommended"]
    print(f"\nrecommended: {rec['n_tasks']} tasks × {rec['trials']} trials (SE {rec['se']:.4f})")
    _print_pool(out)


def _run_runs(args: argparse.Namespace, s2b: float, s2w: float) -> int:
    out = _runs_plan(args, s2b, s2w)
    if args.json:
        print(dumps(out))
    else:
        _print_runs(out)
    return 0


# --- budgets in money (Cochran 1977, §10.6) ---------------------------------------------------


def _fixed_trial_cost(args: argparse.Namespace) -> float:
    if args.cost_per_trial is None:
        raise InputError(
            "a budget in money needs the cost of a trial: --cost-per-trial, or --from PILOT "
            "with --price-per-container-second or --cost-column"
        )
    return float(args.cost_per_trial)


def _shown_rows(trials: np.ndarray, best: int) -> np.ndarray:
    """Indices of the frontier rows worth printing: small T, doubling steps, the optimum."""
    t = trials.astype(np.int64)
    # Past the small ones, T on a roughly geometric grid: 12, 16, 24, 32, 48, 64, …
    odd = t // (t & -t)  # t without its factors of 2
    show = (t <= _SHOW_ALL_TRIALS_UP_TO) | (odd == 1) | (odd == 3)
    show[best] = True
    show[np.argmax(trials)] = show[np.argmin(trials)] = True
    return np.flatnonzero(show)


def _money_plan(args: argparse.Namespace, s2b: float, s2w: float, c_trial: float) -> dict:
    c_task = 0.0 if args.cost_per_task is None else float(args.cost_per_task)
    try:
        res = cost_allocation(
            args.budget,
            s2b,
            s2w,
            cost_per_task=c_task,
            cost_per_trial=c_trial,
            max_tasks=args.max_tasks,
            max_trials=args.max_trials,
        )
    except ValueError as exc:
        raise InputError(str(exc)) from exc
    rec = res.recommended
    best = int(np.flatnonzero((res.n_tasks == rec.n_tasks) & (res.trials == rec.trials))[0])
    rows = _shown_rows(res.trials, best)
    allocations = [
        {
            "n_tasks": int(res.n_tasks[i]),
            "trials": int(res.trials[i]),
            "cost": float(res.cost[i]),
            "variance": float(res.variance[i]),
            "se": float(res.se[i]),
        }
        for i in rows
    ]
    return {
        "budget": float(res.budget),
        "cost_per_task": res.cost_per_task,
        "cost_per_trial": res.cost_per_trial,
        "sigma2_between": res.sigma2_between,
        "sigma2_within": res.sigma2_within,
        "optimum": {
            "trials": res.trials_exact,
            "n_tasks": res.n_tasks_exact,
            "se": math.sqrt(res.variance_exact),
        },
        "n_candidates": int(res.n_tasks.size),
        "allocations": allocations,
        "recommended": {
            "n_tasks": rec.n_tasks,
            "trials": rec.trials,
            "cost": rec.cost,
            "se": rec.se,
        },
        **_pool_bound(res),
    }


def _print_money(out: dict[str, Any]) -> None:
    if out.get("cost_per_trial_derivation"):
        print(out["cost_per_trial_derivation"])
    shown = out["allocations"]
    print(
        table(
            [
                [a["n_tasks"], a["trials"], fmt(a["cost"], ",.2f"), fmt(a["se"], ".4f")]
                for a in shown
            ],
            ["tasks", "trials", "cost", "SE(accuracy)"],
        )
    )
    rec, opt = out["recommended"], out["optimum"]
    more = out["n_candidates"] - len(shown)
    if more > 0:
        print(f"({more} more allocations on the frontier not shown)")
    t_star = opt["trials"]
    if not math.isfinite(t_star):
        star = "T* is unbounded (σ²_between = 0)"
    else:
        star = f"T* = sqrt(c_task/c_trial · σ²_w/σ²_b) = {t_star:.3g} trials per task"
        if t_star < 1:
            star += " (below 1: one trial per task, as many tasks as the budget buys)"
    print(
        f"\nrecommended: {rec['n_tasks']} tasks × {rec['trials']} trials, cost "
        f"{rec['cost']:,.2f} of {out['budget']:,.2f} (SE {rec['se']:.4f}; "
        f"95% CI ± {1.959964 * rec['se']:.4f})"
    )
    print(f"continuous optimum (Cochran 1977, §10.6): {star}, SE {opt['se']:.4f}")
    _print_pool(out)


# --- from a pilot -----------------------------------------------------------------------------

#: Per-driver prices read off a pilot's trial table (the cost drivers every trial records,
#: evalnoise.costs): flag, column, what one unit of the price buys. Token prices are per
#: million tokens, as providers quote them.
_DRIVER_PRICES = (
    ("--price-per-million-prompt-tokens", "prompt_tokens", "one million prompt tokens"),
    ("--price-per-million-completion-tokens", "completion_tokens", "one million completion tokens"),
    ("--price-per-judge-call", "judge_calls", "one call to the LLM judge"),
)


def _trial_cost(args: argparse.Namespace, raw: pd.DataFrame, path: str) -> tuple[float, str]:
    """The per-trial cost (:func:`evalnoise.costs.pilot_trial_cost`, from the flags and the
    group's rows) and how it was derived, in words."""
    from evalnoise.costs import pilot_trial_cost

    prices: dict[str, float] = {}
    if args.price_per_container_second is not None:
        prices["container_seconds"] = _price("--price-per-container-second",
                                             args.price_per_container_second)  # fmt: skip
    for flag, column, _what, price in _driver_prices(args):
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
    what = {column: w for _, column, w in _DRIVER_PRICES}
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


def _run_pilot(args: argparse.Namespace) -> int:
    path = str(args.from_path)
    raw = read_any(path)
    # the roles a file stores (evalnoise import: the group column among them) as analyze
    # reads them, so a multi-agent table plans per agent, each plan named
    columns, used = resolved_columns(raw, args, path=path)
    trials = validate_trials(raw, columns, path=path)
    announce("plan", used)
    money = _money_mode(args)
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
            plan.update(_money_plan(args, s2b, s2w, c_trial))
        else:
            plan.update(_runs_plan(args, s2b, s2w))
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
            _print_money(plan)
        else:
            _print_runs(plan)
    return 0


# --- tasks × trials × judge samples (the nested design) ----------------------------------


def _run_judge_plan(args: argparse.Namespace) -> int:
    """Var(μ̂) = σ²_task/n + σ²_trial/(nT) + σ²_judge/(nTK) under n·c_task + nT·c_trial +
    nTK·c_judge ≤ B (:func:`evalnoise.stats.judge_sample_plan`); σ²_between and σ²_within
    stand for σ²_task and σ²_trial."""
    from evalnoise.stats import judge_sample_plan

    c_trial = args.cost_per_trial if args.cost_per_trial is not None else 1.0
    try:
        plan = judge_sample_plan(
            args.budget,
            args.sigma2_between,
            args.sigma2_within,
            args.sigma2_judge,
            cost_per_trial=c_trial,
            cost_per_judge_sample=args.cost_per_judge_sample,
            cost_per_task=args.cost_per_task or 0.0,
            max_tasks=args.max_tasks,
            max_trials=args.max_trials,
        )
    except ValueError as exc:
        raise InputError(str(exc)) from exc
    res = plan.design
    rows = [
        {
            "judge_samples": int(k),
            "n_tasks": int(n),
            "trials": int(t),
            "cost": float(c),
            "se": float(e),
            "variance_ratio": float(r),
        }
        for k, n, t, c, e, r in zip(
            plan.judge_samples,
            plan.n_tasks,
            plan.trials,
            plan.cost,
            plan.se,
            plan.variance_ratio,
            strict=True,
        )
    ]
    optimum = {"trial": plan.trials_optimum, "judge_sample": plan.judge_samples_optimum}
    rec = res.recommended
    n_tasks, trials, samples = rec.sizes["task"], rec.sizes["trial"], rec.replicates
    out = {
        "recommended": {
            "n_tasks": int(n_tasks),
            "trials": int(trials),
            "judge_samples": int(samples),
            "cost": float(rec.cost),
            "se": float(rec.se),
        },
        "trials_opt": float(optimum["trial"]),
        "judge_samples_opt": float(optimum["judge_sample"]),
        "by_judge_samples": rows,
        "max_tasks": res.max_free,
        "tasks_without_cap": res.free_needed,
        "pool_bound": res.status == "pool_bound",
        "warnings": list(res.warnings),
    }
    if args.json:
        print(dumps(out))
        return 0
    print(
        f"best: {n_tasks} tasks × {trials} trials × {samples} judge "
        f"sample(s), cost {rec.cost:g} of {args.budget:g}, SE {rec.se:.4f} "
        f"(continuous optimum T* = {optimum['trial']:.3g}, K* = {optimum['judge_sample']:.3g}; "
        "Cochran 1977, ch. 10)"
    )
    if out["pool_bound"]:
        buys = out["tasks_without_cap"] or "more"
        print(
            f"the task pool is the limiting cap: the budget would buy {buys} tasks, "
            f"{res.max_free} exist (--max-tasks)"
        )
    print(
        table(
            [
                [
                    r["judge_samples"],
                    r["n_tasks"],
                    r["trials"],
                    f"{r['cost']:g}",
                    f"{r['se']:.4f}",
                    f"{r['variance_ratio']:.3f}",
                ]
                for r in rows
            ],
            ["judge samples", "tasks", "trials", "cost", "SE", "var / var(K=1)"],
        )
    )
    for warning in res.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    return 0


# --- every facet of a pilot (the G study and its D study) -------------------------------------


def _run_pilot_facets(args: argparse.Namespace) -> int:
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
