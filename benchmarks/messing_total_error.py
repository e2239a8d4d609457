"""Hidden measurement error: the task-clustered interval against the total-error interval.

Messing (2026, "Hidden Measurement Error in LLM Pipelines", arXiv 2604.11581) finds that once
prompt wording and the judge vary, naive standard errors are 40–60 % too small and naive 95 %
intervals cover less and less as the benchmark grows. This simulation shows it on the
design the G-study engine models: T tasks × P prompt variants × J judges, ``--reps`` trials
per cell, 0/1 scores with success probability

    p = μ + a_task + b_prompt + c_judge + (ab)_task×prompt + (ac)_task×judge

(zero-mean uniform effects, so p stays in [0, 1] and the benchmark's true accuracy — over the
universe of tasks, prompts and judges — is μ). Per replication it computes

* the **task-clustered** 95 % interval of the mean of task means
  (:func:`evalnoise.stats.accuracy`, CR1, normal quantile): it treats the prompts and judges
  that ran as the only ones, so their main effects are error it cannot see;
* the **total-error** 95 % interval (:func:`evalnoise.stats.gstudy` then
  :func:`evalnoise.stats.total_error`): every component of the design, Satterthwaite df,
  t quantile;

and records how often each covers μ, their median SEs and the ratio. Writes
``benchmarks/results/messing_total_error.md`` and ``.json``. Usage::

    python benchmarks/messing_total_error.py [--replications 1000] [--seed 20261126]
                                             [--tasks 10,20,50,100,200] [--out ...]
"""

from __future__ import annotations

import os

# one BLAS thread: on a shared 2-core machine OpenBLAS threads contend, and a factorisation
# is many times slower (benchmarks/results/comment-measurements.md); set before numpy loads
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import json
import math
import platform
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from evalnoise import __version__
from evalnoise.machine import cpu_model
from evalnoise.stats import accuracy, cheapest_design, gstudy, model_of, total_error

ROOT = Path(__file__).resolve().parents[1]
MU = 0.6
COMPONENTS = {
    "task": 0.03,
    "prompt": 0.002,
    "judge": 0.0015,
    "task×prompt": 0.004,
    "task×judge": 0.002,
}
PROMPTS, JUDGES, TRIALS = 4, 3, 2


def uniform(rng, var: float, size) -> np.ndarray:
    a = math.sqrt(3.0 * var)
    return rng.uniform(-a, a, size)


def simulate(rng, n_tasks: int):
    t, p, j, _ = np.meshgrid(
        np.arange(n_tasks),
        np.arange(PROMPTS),
        np.arange(JUDGES),
        np.arange(TRIALS),
        indexing="ij",
    )
    t, p, j = t.ravel(), p.ravel(), j.ravel()
    prob = (
        MU
        + uniform(rng, COMPONENTS["task"], n_tasks)[t]
        + uniform(rng, COMPONENTS["prompt"], PROMPTS)[p]
        + uniform(rng, COMPONENTS["judge"], JUDGES)[j]
        + uniform(rng, COMPONENTS["task×prompt"], (n_tasks, PROMPTS))[t, p]
        + uniform(rng, COMPONENTS["task×judge"], (n_tasks, JUDGES))[t, j]
    )
    y = (rng.random(prob.size) < prob).astype(float)
    return y, {"task": t, "prompt": p, "judge": j}


def run(n_tasks: int, replications: int, rng) -> dict:
    cover_cl = cover_te = 0
    se_cl, se_te, dfs = [], [], []
    for _ in range(replications):
        y, facets = simulate(rng, n_tasks)
        acc = accuracy(y, facets["task"])
        g = gstudy(y, facets, ["task", "prompt", "judge"], mean_of="task")
        te = total_error(g, se_clustered=acc.se_clustered)
        cover_cl += acc.ci_low <= MU <= acc.ci_high
        cover_te += te.ci_low <= MU <= te.ci_high
        se_cl.append(acc.se_clustered)
        se_te.append(te.se)
        dfs.append(te.df)
    se_cl, se_te = np.array(se_cl), np.array(se_te)
    n = replications
    return {
        "tasks": n_tasks,
        "scores": n_tasks * PROMPTS * JUDGES * TRIALS,
        "coverage_clustered": cover_cl / n,
        "coverage_total": cover_te / n,
        "mc_se_clustered": math.sqrt(cover_cl * (n - cover_cl) / n) / n,
        "mc_se_total": math.sqrt(max(cover_te, 1) * (n - cover_te) / n) / n,
        "median_se_clustered": float(np.median(se_cl)),
        "median_se_total": float(np.median(se_te)),
        "median_ratio": float(np.median(se_te / se_cl)),
        "median_df": float(np.median(dfs)),
        "true_se_total": math.sqrt(true_variance(n_tasks)),
    }


def true_variance(n_tasks: int) -> float:
    """Var of the mean of task means under the model: Σ σ²(α)/π(α) plus the Bernoulli
    residual E[p(1 − p)] = μ(1 − μ) − Σσ² over every score."""
    c = COMPONENTS
    resid = MU * (1 - MU) - sum(c.values())
    return (
        c["task"] / n_tasks
        + c["prompt"] / PROMPTS
        + c["judge"] / JUDGES
        + c["task×prompt"] / (n_tasks * PROMPTS)
        + c["task×judge"] / (n_tasks * JUDGES)
        + resid / (n_tasks * PROMPTS * JUDGES * TRIALS)
    )


def dstudy_example(rng) -> dict:
    """What to buy next: from one simulated run of 50 tasks, the cheapest design reaching an
    SE of 0.02 when a task costs 1, a prompt variant 20, a judge 50 and a judged trial 0.1."""
    y, facets = simulate(rng, 50)
    g = gstudy(y, facets, ["task", "prompt", "judge"], mean_of="task")
    costs = {"task": 1.0, "prompt": 20.0, "judge": 50.0, "observation": 0.1}
    res = cheapest_design(model_of(g, replicate="trial"), 0.02, costs, default_cap=12)
    rec = res.recommended
    return {
        "target_se": 0.02,
        "costs": costs,
        "as_ran": {
            "task": 50,
            "prompt": PROMPTS,
            "judge": JUDGES,
            "trial": TRIALS,
            "se_total": total_error(g).se,
        },
        "cheapest": None
        if rec is None
        else {**rec.sizes, "trial": rec.replicates, "se": rec.se, "cost": rec.cost},
        "warnings": list(res.warnings),
    }


def render(meta: dict, rows: list[dict], example: dict) -> str:
    out = [
        "# Hidden measurement error: task-clustered vs total-error intervals",
        "",
        f"{meta['date']} · {meta['cpu']} · Python {meta['python']} · evalnoise "
        f"{meta['evalnoise']} · {meta['replications']:,} replications per row · seed "
        f"{meta['seed']}. Script: `benchmarks/messing_total_error.py`.",
        "",
        f"Design: T tasks × {PROMPTS} prompt variants × {JUDGES} judges × {TRIALS} trials per "
        f"cell, 0/1 scores, true accuracy μ = {MU}; components "
        + ", ".join(f"σ²({k}) = {v}" for k, v in COMPONENTS.items())
        + ". Coverage of μ by the 95 % intervals (± Monte Carlo SE); SEs are medians over the "
        "replications; ν the total-error interval's Satterthwaite df.",
        "",
        "| tasks | scores | task-clustered coverage | total-error coverage | SE clustered | "
        "SE total | true SE | SE total / clustered | ν |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        out.append(
            f"| {r['tasks']} | {r['scores']:,} | {r['coverage_clustered']:.3f} "
            f"(± {r['mc_se_clustered']:.3f}) | {r['coverage_total']:.3f} "
            f"(± {r['mc_se_total']:.3f}) | {r['median_se_clustered']:.4f} | "
            f"{r['median_se_total']:.4f} | {r['true_se_total']:.4f} | "
            f"{r['median_ratio']:.2f} | {r['median_df']:.1f} |"
        )
    ex = example
    out += [
        "",
        "The clustered interval counts only what differs between tasks; the prompt variants' "
        "and the judges' main effects are shared by every task, so its coverage falls as tasks "
        "are added while the error it misses stays. The total-error interval counts them, with "
        "the few degrees of freedom that 4 prompts and 3 judges give.",
        "",
        "## What to buy next (one run of 50 tasks)",
        "",
        f"Costs {ex['costs']}; target SE {ex['target_se']}. As ran: "
        f"{ex['as_ran']} → total-error SE {ex['as_ran']['se_total']:.4f}. Cheapest design "
        f"reaching the target ({'`evalnoise.stats.cheapest_design`'}): {ex['cheapest']}."
        + (f" Notes: {'; '.join(ex['warnings'])}." if ex["warnings"] else ""),
        "",
    ]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--replications", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=20261126)
    ap.add_argument("--tasks", default="10,20,50,100,200")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    ap.add_argument("--name", default="messing_total_error")
    args = ap.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    rows = []
    for n_tasks in (int(v) for v in args.tasks.split(",")):
        t0 = time.perf_counter()
        rows.append(run(n_tasks, args.replications, rng))
        print(f"{n_tasks} tasks: {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    example = dstudy_example(rng)
    meta = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": cpu_model(),
        "python": platform.python_version(),
        "evalnoise": __version__,
        "replications": args.replications,
        "seed": args.seed,
        "design": {
            "prompts": PROMPTS,
            "judges": JUDGES,
            "trials": TRIALS,
            "mu": MU,
            "components": COMPONENTS,
        },
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{args.name}.json").write_text(
        json.dumps({**meta, "rows": rows, "dstudy_example": example}, indent=2, sort_keys=True)
        + "\n"
    )
    (args.out / f"{args.name}.md").write_text(render(meta, rows, example))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
