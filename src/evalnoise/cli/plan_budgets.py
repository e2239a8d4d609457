"""``evalnoise plan``'s budgets: the best split of runs (paper eq. 9–10) or money (Cochran
1977, §10.6) between tasks and trials, as JSON records and as text.

The plans are :func:`evalnoise.stats.allocation_table`'s and
:func:`evalnoise.stats.cost_allocation`'s; this module reads the flags and prints them.
"""

from __future__ import annotations

import argparse
import math
from typing import Any

import numpy as np

from evalnoise.errors import InputError
from evalnoise.formatting import dumps, fmt, table
from evalnoise.stats import allocation_table, cost_allocation

__all__ = [
    "DRIVER_PRICES",
    "driver_prices",
    "fixed_trial_cost",
    "money_mode",
    "money_plan",
    "print_money",
    "print_runs",
    "run_runs",
    "runs_plan",
]

# Rows shown of a money budget's frontier: every T up to this, then roughly doubling steps.
_SHOW_ALL_TRIALS_UP_TO = 10

#: Per-driver prices read off a pilot's trial table (the cost drivers every trial records,
#: evalnoise.costs): flag, column, what one unit of the price buys. Token prices are per
#: million tokens, as providers quote them.
DRIVER_PRICES = (
    ("--price-per-million-prompt-tokens", "prompt_tokens", "one million prompt tokens"),
    ("--price-per-million-completion-tokens", "completion_tokens", "one million completion tokens"),
    ("--price-per-judge-call", "judge_calls", "one call to the LLM judge"),
)


def driver_prices(args: argparse.Namespace) -> list[tuple[str, str, str, float | None]]:
    """(flag, column, what, price given or None) of every per-driver price flag."""
    return [
        (flag, column, what, getattr(args, flag.lstrip("-").replace("-", "_")))
        for flag, column, what in DRIVER_PRICES
    ]


def money_mode(args: argparse.Namespace) -> bool:
    return any(
        v is not None
        for v in (
            args.cost_per_task,
            args.cost_per_trial,
            args.price_per_container_second,
            args.cost_column,
            *(price for *_, price in driver_prices(args)),
        )
    )


# --- budgets in runs (paper eq. 9–10) ---------------------------------------------------------


def runs_plan(args: argparse.Namespace, s2b: float, s2w: float) -> dict[str, Any]:
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
        **pool_record(res),
    }


def pool_record(res: Any) -> dict[str, Any]:
    """The task pool and whether it caps the recommendation (an allocation result's)."""
    return {
        "max_tasks": res.max_tasks,
        "tasks_without_cap": res.tasks_without_cap,
        "pool_bound": res.pool_bound,
    }


def print_pool(out: dict[str, Any]) -> None:
    if out.get("pool_bound"):
        print(
            f"the task pool is the limiting cap: the budget would buy "
            f"{out['tasks_without_cap']} tasks, {out['max_tasks']} exist (--max-tasks); "
            "the recommendation spends the rest on more trials per task"
        )


def print_runs(out: dict[str, Any]) -> None:
    print(
        table(
            [[a["n_tasks"], a["trials"], fmt(a["se"], ".4f")] for a in out["allocations"]],
            ["tasks", "trials", "SE(accuracy)"],
        )
    )
    rec = out["recommended"]
    print(f"\nrecommended: {rec['n_tasks']} tasks × {rec['trials']} trials (SE {rec['se']:.4f})")
    print_pool(out)


def run_runs(args: argparse.Namespace, s2b: float, s2w: float) -> int:
    out = runs_plan(args, s2b, s2w)
    if args.json:
        print(dumps(out))
    else:
        print_runs(out)
    return 0


# --- budgets in money (Cochran 1977, §10.6) ---------------------------------------------------


def fixed_trial_cost(args: argparse.Namespace) -> float:
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


def money_plan(args: argparse.Namespace, s2b: float, s2w: float, c_trial: float) -> dict:
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
        **pool_record(res),
    }


def print_money(out: dict[str, Any]) -> None:
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
    print_pool(out)
