"""``evalnoise plan``: how many tasks, and how to split a budget between tasks and trials.
(Sizing a study; the pipeline's shard plan, which trials go in which job, is
:mod:`evalnoise.pipeline.shard_plan`.)

Four modes:

* ``--icc R --trials K --ci-width W | --se S``: tasks needed for a precise ICC (Bonett 2002);
* ``--budget B --sigma2-between X --sigma2-within Y``: B counts runs (paper eq. 9–10);
* the same with ``--cost-per-task`` / ``--cost-per-trial``: B is money (Cochran 1977, §10.6);
* ``--from PILOT --budget B [costs]``: the variance components (and, with
  ``--price-per-container-second`` or ``--cost-column``, the cost of a trial) come from a
  pilot's trial table, one plan per group (:mod:`evalnoise.cli.plan_pilot`).

This module reads the flags and says which mode runs; the budgets' records and text are
:mod:`evalnoise.cli.plan_budgets`'s, the plans the package's.
"""

from __future__ import annotations

import argparse
import math
import sys

from evalnoise.cli._columns import add_column_options
from evalnoise.cli.plan_budgets import (
    DRIVER_PRICES,
    driver_prices,
    fixed_trial_cost,
    money_mode,
    money_plan,
    print_money,
    run_runs,
)
from evalnoise.cli.plan_pilot import run_pilot, run_pilot_facets
from evalnoise.errors import InputError
from evalnoise.formatting import dumps, table
from evalnoise.stats import tasks_for_icc_precision

HELP = "plan an evaluation: tasks needed for a precise ICC, or a budget's best allocation"


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
    for flag, column, what in DRIVER_PRICES:
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


def run(args: argparse.Namespace) -> int:
    if args.facets is not None:
        return run_pilot_facets(args)
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
        return run_pilot(args)
    if (
        args.price_per_container_second is not None
        or args.cost_column is not None
        or any(price is not None for *_, price in driver_prices(args))
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
        if money_mode(args):
            c_trial = fixed_trial_cost(args)
            out = money_plan(args, args.sigma2_between, args.sigma2_within, c_trial)
            if args.json:
                print(dumps(out))
            else:
                print_money(out)
            return 0
        return run_runs(args, args.sigma2_between, args.sigma2_within)
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
