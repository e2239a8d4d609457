"""Detection of time-block effects by the within-task permutation test, by simulation.

How often the attribution reports a time effect that is not there (false detection under the
null), and how often it finds one that is (power), on 0/1 trials over task mixes, designs and
trial orders (issue 39):

* task difficulty p_g ~ Beta(0.5, 0.5) (many tasks near 0 and 1), U(0.05, 0.95), Beta(2, 2),
  or every task near 0.05 (U(0.02, 0.08));
* 12 tasks × 8 trials and 30 tasks × 4 trials, 4 equal-count time blocks of the start times
  (:func:`evalnoise.attribution.time_blocks`);
* the trial order: the pipeline's (``trials.block_size`` = 2, the default config: trial indices
  run in blocks of 2, a block's (task, trial) pairs in a seeded random order, the shards of a
  block side by side — :mod:`evalnoise.pipeline.shard_plan`, :func:`evalnoise.runner.seeds.
  trial_order`), ``block_size`` 4, or every trial in one random order.

Under the null y ~ Bernoulli(p_g); with a block shift δ, p = clip(p_g + s_b, 0, 1), s_b = ±δ
with two time blocks up and two down in a random arrangement. Each run is decided exactly as
:func:`evalnoise.attribution.time_effects.variance_components` decides it: the family of
:func:`evalnoise.stats.permutation.factor_permutation_test` (time block and task × time
block, labels permuted within tasks, 999 permutations, Westfall–Young min-p, α = 0.05); the
share is detected when the family is. The data of all runs of a cell are drawn at once
(numpy); the tests run one per run, each vectorized over its permutations.

Writes ``benchmarks/results/infra_detection_calibration.md`` and ``.csv``. Usage::

    nice python benchmarks/bench_infra_detection.py [--runs 1000] [--power-runs 200]
        [--permutations 999] [--seed 20261129] [--out benchmarks/results]
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import csv
import math
import platform
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from evalnoise import __version__
from evalnoise.machine import cpu_model
from evalnoise.stats.permutation import factor_permutation_test

ROOT = Path(__file__).resolve().parents[1]
N_BLOCKS = 4
ALPHA = 0.05

DIFFICULTIES = {
    "Beta(0.5, 0.5)": lambda rng, size: rng.beta(0.5, 0.5, size),
    "U(0.05, 0.95)": lambda rng, size: rng.uniform(0.05, 0.95, size),
    "Beta(2, 2)": lambda rng, size: rng.beta(2.0, 2.0, size),
    "near 0.05": lambda rng, size: rng.uniform(0.02, 0.08, size),
}
DESIGNS = {"12 × 8": (12, 8), "30 × 4": (30, 4)}
ORDERS = ("pipeline (block_size 2)", "block_size 4", "random")


def start_ranks(rng: np.random.Generator, runs: int, n_tasks: int, trials: int, order: str):
    """The rank of each trial's start in its run, (runs, n_tasks · trials), rows task-major.

    Trial blocks of ``block_size`` trial indices run one after another; within one, its
    (task, trial) pairs in random order. ``random``: one block holding every trial."""
    n = n_tasks * trials
    trial = np.tile(np.arange(trials), n_tasks)
    size = {"pipeline (block_size 2)": 2, "block_size 4": 4, "random": trials}[order]
    key = (trial // size)[None, :] + rng.random((runs, n))  # block first, random within
    return np.argsort(np.argsort(key, axis=1), axis=1)


def simulate(rng, runs, n_tasks, trials, difficulty, order, shift):
    """Scores (runs, n), task labels (n,), time blocks (runs, n)."""
    n = n_tasks * trials
    task = np.repeat(np.arange(n_tasks), trials)
    p_task = DIFFICULTIES[difficulty](rng, (runs, n_tasks))
    block = start_ranks(rng, runs, n_tasks, trials, order) * N_BLOCKS // n
    signs = np.array([1.0, 1.0, -1.0, -1.0])
    s = shift * rng.permuted(np.broadcast_to(signs, (runs, N_BLOCKS)), axis=1)
    p = np.clip(p_task[:, task] + np.take_along_axis(s, block, axis=1), 0.0, 1.0)
    y = (rng.random((runs, n)) < p).astype(float)
    return y, task, block


def cell(rng, runs, design, difficulty, order, shift, permutations):
    n_tasks, trials = DESIGNS[design]
    y, task, block = simulate(rng, runs, n_tasks, trials, difficulty, order, shift)
    hits = {"share": 0, "time_block": 0, "task:time_block": 0}
    tested_tb = 0
    for i in range(runs):
        res = factor_permutation_test(
            y[i],
            task,
            {"time_block": block[i]},
            interactions=("time_block",),
            n_permutations=permutations,
            seed=i,
            alpha=ALPHA,
        )
        hits["share"] += res.family_detected
        for name, det in zip(res.components, res.detected, strict=True):
            hits[name] += bool(det)
        tested_tb += "task:time_block" in res.components
    row = {
        "design": design,
        "difficulty": difficulty,
        "order": order,
        "shift": shift,
        "runs": runs,
        "interaction_tested": tested_tb,
    }
    for name, k in hits.items():
        rate = k / runs
        row[f"{name}_rate"] = rate
        row[f"{name}_se"] = math.sqrt(rate * (1 - rate) / runs) if runs else float("nan")
    return row


def _pct(rate: float, se: float) -> str:
    return f"{100 * rate:.1f} % (± {100 * se:.1f})"


def render(meta: dict, rows: list[dict]) -> str:
    null = [r for r in rows if r["shift"] == 0]
    power = [r for r in rows if r["shift"] != 0]
    ok = all(r["share_rate"] <= ALPHA + 2 * r["share_se"] for r in null)
    worst = max(null, key=lambda r: r["share_rate"]) if null else None
    out = [
        "# Detection of time-block effects: the within-task permutation test",
        "",
        f"{meta['date']} · {meta['cpu']} · Python {meta['python']} · numpy {meta['numpy']} · "
        f"evalnoise {meta['evalnoise']} · {meta['runs']:,} runs per null cell, "
        f"{meta['power_runs']:,} per power cell · {meta['permutations']} permutations per "
        f"test · seed {meta['seed']} · {meta['seconds']:.0f} s. "
        "Script: `benchmarks/bench_infra_detection.py`.",
        "",
        "0/1 trials, 4 equal-count time blocks of the start times. The decision is the "
        "attribution's: time block and task × time block tested by permuting time-block "
        "labels within tasks (F ratios of the two-way random model, Westfall–Young min-p, "
        "α = 0.05); the infrastructure share is detected when the family is (exactly when "
        "one of its components is). ± is the Monte Carlo SE. *task × time block tested*: "
        "runs in which some task × block cell held two trials.",
        "",
        "## False detection with no time effect",
        "",
        f"Requirement: every cell's share rate ≤ 5 % within 2 MC SE — "
        f"{'met' if ok else 'NOT met'}"
        + (
            f" (highest: {_pct(worst['share_rate'], worst['share_se'])}, {worst['design']}, "
            f"{worst['difficulty']}, {worst['order']})."
            if worst
            else "."
        ),
        "",
        "| design | difficulty | order | runs | share detected | time block | "
        "task × time block | task × time block tested |",
        "|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for r in null:
        out.append(
            f"| {r['design']} | {r['difficulty']} | {r['order']} | {r['runs']:,} | "
            f"{_pct(r['share_rate'], r['share_se'])} | "
            f"{_pct(r['time_block_rate'], r['time_block_se'])} | "
            f"{_pct(r['task:time_block_rate'], r['task:time_block_se'])} | "
            f"{r['interaction_tested']:,} |"
        )
    out += [
        "",
        "## Power: two time blocks shifted by +δ, two by −δ",
        "",
        "p = clip(p_task + s_block, 0, 1): with every task near 0.05 a shift of −δ is cut at "
        "0, so the effect on the scores is smaller than δ.",
        "",
        "| design | difficulty | order | δ | runs | share detected | time block | "
        "task × time block |",
        "|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for r in power:
        out.append(
            f"| {r['design']} | {r['difficulty']} | {r['order']} | ±{r['shift']:g} | "
            f"{r['runs']:,} | {_pct(r['share_rate'], r['share_se'])} | "
            f"{_pct(r['time_block_rate'], r['time_block_se'])} | "
            f"{_pct(r['task:time_block_rate'], r['task:time_block_se'])} |"
        )
    out.append("")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--power-runs", type=int, default=200)
    ap.add_argument("--permutations", type=int, default=999)
    ap.add_argument("--shifts", default="0.1,0.2")
    ap.add_argument("--seed", type=int, default=20261129)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    ap.add_argument("--name", default="infra_detection_calibration")
    args = ap.parse_args(argv)
    shifts = [0.0] + [float(s) for s in args.shifts.split(",") if s]
    rng = np.random.default_rng(args.seed)
    start = time.perf_counter()
    rows = []
    for shift in shifts:
        runs = args.runs if shift == 0 else args.power_runs
        for design in DESIGNS:
            for difficulty in DIFFICULTIES:
                for order in ORDERS:
                    t0 = time.perf_counter()
                    row = cell(rng, runs, design, difficulty, order, shift, args.permutations)
                    rows.append(row)
                    print(
                        f"δ={shift:g} {design} {difficulty} {order}: share "
                        f"{100 * row['share_rate']:.1f} % ({time.perf_counter() - t0:.0f} s)",
                        file=sys.stderr,
                        flush=True,
                    )
    meta = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": cpu_model(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "evalnoise": __version__,
        "runs": args.runs,
        "power_runs": args.power_runs,
        "permutations": args.permutations,
        "seed": args.seed,
        "seconds": time.perf_counter() - start,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    with open(args.out / f"{args.name}.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    (args.out / f"{args.name}.md").write_text(render(meta, rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
