"""The G-study engine by simulation: calibration under the null, bias and coverage, speed.

Three parts, each over ``--reps`` replications per design (1,000 by default):

* ``null`` — designs where some components are 0. For each such component, how often its
  95 % interval excludes 0 (the component reported as detected). The first design is the
  one of issue 23: 12 tasks × 8 trials in random order, 4 equal-count time blocks, one host,
  no time or host effect; it is run through the attribution's variance model *before*
  (``attribution.time_effects.variance_components`` at commit ``6931e18``: Henderson III,
  parametric-bootstrap percentile intervals, 1,000 replicates; read from git) and *after*
  (the same function on the G-study engine: REML, MLS intervals).
* ``coverage`` — designs with known non-zero components (normal and 0/1 scores, balanced and
  unbalanced): mean estimate, bias, and how often the interval covers the true component.
  For 0/1 scores p = μ + Σ effects with uniform effects (never outside [0, 1]), so the
  components are the effects' variances and the residual is E[p(1 − p)] = μ(1 − μ) − Σσ².
* ``timing`` — seconds per group for growing numbers of rows, the new engine against the
  old attribution model measured in the same run (a ratio, not a wall-clock target).

Writes ``benchmarks/results/gstudy_calibration.md`` and ``.json``. Usage::

    python benchmarks/gstudy_calibration.py [--reps 1000] [--parts null,coverage,timing]
                                            [--seed 20261126] [--out benchmarks/results]
"""

from __future__ import annotations

import os

# one BLAS thread: on a shared 2-core machine OpenBLAS threads contend, and a factorisation
# is many times slower (benchmarks/results/comment-measurements.md); set before numpy loads
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import importlib.util
import json
import math
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from evalnoise import __version__
from evalnoise.attribution import time_blocks, variance_components
from evalnoise.machine import cpu_model
from evalnoise.stats.gstudy import gstudy

ROOT = Path(__file__).resolve().parents[1]
OLD_COMMIT = "6931e18"
RUN_START = pd.Timestamp("2026-01-01 08:00", tz="UTC")
BEFORE_AFTER = "before: henderson3 + bootstrap; after: reml"


# --- the model before the engine --------------------------------------------------------


def old_variance_components() -> Callable[..., Any]:
    """``variance_components`` as it was at :data:`OLD_COMMIT` (read with ``git show``)."""
    src = subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{OLD_COMMIT}:src/evalnoise/attribution/time_effects.py"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    src = src.replace("from ._common import", "from evalnoise.attribution._trial_frame import")
    src = src.replace("from ._json import", "from evalnoise.attribution._json import")
    path = Path(tempfile.mkdtemp()) / "old_time_effects.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("old_time_effects", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["old_time_effects"] = module
    spec.loader.exec_module(module)
    return module.variance_components


# --- simulated runs ---------------------------------------------------------------------


def random_order_blocks(rng, n: int, n_blocks: int = 4) -> np.ndarray:
    """Trials started in random order, one every 30 s; equal-count time blocks of the
    start times, as the attribution stage forms them."""
    started = RUN_START + pd.to_timedelta(rng.permutation(n) * 30, unit="s")
    return time_blocks(pd.Series(started), n_blocks)


def null_attribution(rng, n_tasks=12, trials=8, hosts=1, balanced=False):
    """Tasks of random difficulty, no time or host effect."""
    p = rng.uniform(0.05, 0.95, n_tasks)
    task = np.repeat(np.arange(n_tasks), trials)
    y = (rng.random(task.size) < p[task]).astype(float)
    if balanced:
        block = np.tile(np.repeat(np.arange(4), trials // 4), n_tasks)
    else:
        block = random_order_blocks(rng, task.size)
    host = rng.integers(0, hosts, task.size) if hosts > 1 else None
    return y, task, block, host


def uniform(rng, var: float, size) -> np.ndarray:
    """Zero-mean uniform effects of variance ``var``."""
    a = math.sqrt(3.0 * var)
    return rng.uniform(-a, a, size)


def crossed(rng, n_task, n_prompt, n_judge, reps, comps, mu=0.6, binary=True, drop=0.0):
    """task × prompt × judge, ``reps`` scores per cell; ``comps`` variances of task,
    prompt, judge, task×prompt, task×judge, prompt×judge, task×prompt×judge."""
    t, p, j, _ = np.meshgrid(
        np.arange(n_task), np.arange(n_prompt), np.arange(n_judge), np.arange(reps),
        indexing="ij",
    )  # fmt: skip
    t, p, j = t.ravel(), p.ravel(), j.ravel()
    eff = (
        uniform(rng, comps.get("task", 0), n_task)[t]
        + uniform(rng, comps.get("prompt", 0), n_prompt)[p]
        + uniform(rng, comps.get("judge", 0), n_judge)[j]
        + uniform(rng, comps.get("task×prompt", 0), (n_task, n_prompt))[t, p]
        + uniform(rng, comps.get("task×judge", 0), (n_task, n_judge))[t, j]
        + uniform(rng, comps.get("prompt×judge", 0), (n_prompt, n_judge))[p, j]
        + uniform(rng, comps.get("task×prompt×judge", 0), (n_task, n_prompt, n_judge))[t, p, j]
    )
    prob = mu + eff
    y = (rng.random(prob.size) < prob).astype(float) if binary else prob + rng.normal(
        0, math.sqrt(comps.get("residual", 0.1)), prob.size)  # fmt: skip
    keep = rng.random(y.size) >= drop
    return y[keep], {"task": t[keep], "prompt": p[keep], "judge": j[keep]}


def nested(rng, n_task, trials, samples, s_task, s_trial, mu=0.5, drop=0.0):
    """0/1 judge verdicts: task rate μ + a, trial rate + b, each sample Bernoulli."""
    ta = np.repeat(np.arange(n_task), trials * samples)
    tr = np.tile(np.repeat(np.arange(trials), samples), n_task)
    p = mu + uniform(rng, s_task, n_task)[ta] + uniform(rng, s_trial, (n_task, trials))[ta, tr]
    y = (rng.random(p.size) < p).astype(float)
    keep = rng.random(y.size) >= drop
    return y[keep], {"task": ta[keep], "trial": tr[keep]}


def brennan_pxrt(rng, drop=0.0):
    """p × (r:t) with 10 persons, 3 tasks, 4 raters per task and Brennan's (2001) Synthetic
    Data Set No. 4 components as the truth; normal effects."""
    comps = {"p": 0.4731, "t": 0.3252, "p×t": 0.5596, "r:t": 0.6475, "residual": 2.3802}
    p, t, r = np.meshgrid(np.arange(10), np.arange(3), np.arange(4), indexing="ij")
    p, t, r = p.ravel(), t.ravel(), r.ravel()
    y = (
        5.0
        + rng.normal(0, math.sqrt(comps["p"]), 10)[p]
        + rng.normal(0, math.sqrt(comps["t"]), 3)[t]
        + rng.normal(0, math.sqrt(comps["p×t"]), (10, 3))[p, t]
        + rng.normal(0, math.sqrt(comps["r:t"]), (3, 4))[t, r]
        + rng.normal(0, math.sqrt(comps["residual"]), p.size)
    )
    keep = rng.random(y.size) >= drop
    return y[keep], {"p": p[keep], "t": t[keep], "r": r[keep]}, comps


# --- the parts --------------------------------------------------------------------------


def _rate(hits: int, n: int) -> dict[str, float]:
    return {"rate": hits / n, "mc_se": math.sqrt(max(hits, 1) * (n - hits) / n) / n, "n": n}


def part_null(reps: int, seed: int, log) -> list[dict]:
    rows = []
    rng = np.random.default_rng(seed)
    old = old_variance_components()
    # the design, before and after
    hits = {k: 0 for k in ("old_infra", "old_share10", "old_block", "old_tb")}
    hits |= {k: 0 for k in ("new_infra", "new_share10", "new_block", "new_tb", "new_point10")}
    t0 = time.perf_counter()
    for r in range(reps):
        y, task, block, _ = null_attribution(rng)
        o = old(y, task, block, None, n_boot=1000, seed=r)
        n = variance_components(y, task, block, None)
        oi = dict(zip(o.components, o.ci_low, strict=True))
        hits["old_infra"] += o.infra_share_ci_low > 0
        hits["old_share10"] += o.infra_share > 0.10
        hits["old_block"] += oi.get("time_block", 0) > 0
        hits["old_tb"] += oi.get("task:time_block", 0) > 0
        det = dict(zip(n.components, n.detected, strict=True))
        hits["new_infra"] += n.infra_detected
        hits["new_point10"] += n.infra_share > 0.10
        hits["new_share10"] += n.infra_detected and n.infra_share > 0.10
        hits["new_block"] += bool(det.get("time_block", False))
        hits["new_tb"] += bool(det.get("task:time_block", False))
    log(f"null: issue design {time.perf_counter() - t0:.0f} s")
    design = "attribution: 12 tasks × 8 trials, random order, 4 time blocks, 1 host"
    for comp, ok, nk in (
        ("infrastructure share (sum)", "old_infra", "new_infra"),
        ("time_block", "old_block", "new_block"),
        ("task:time_block", "old_tb", "new_tb"),
    ):
        rows.append({"design": design, "component": comp, "scores": "0/1", "method": BEFORE_AFTER,
                     "before": _rate(hits[ok], reps), "after": _rate(hits[nk], reps)})  # fmt: skip
    rows.append({"design": design, "component": "infrastructure share > 0.10 reported",
                 "scores": "0/1", "method": BEFORE_AFTER,
                 "before": _rate(hits["old_share10"], reps),
                 "after": _rate(hits["new_share10"], reps),
                 "note": f"after, point estimate > 0.10 (reported as not detected unless its "
                         f"interval excludes 0): {hits['new_point10'] / reps:.3f}"})  # fmt: skip

    def engine_null(name, gen, nulls, scores="0/1", **kw):
        counts = dict.fromkeys(nulls, 0)
        method = None
        t1 = time.perf_counter()
        for _ in range(reps):
            y, facets, spec = gen()
            g = gstudy(y, facets, spec, **kw)
            method = g.method
            for c in nulls:
                counts[c] += bool(g.detected[g.index(c)])
        log(f"null: {name} {time.perf_counter() - t1:.0f} s")
        for c in nulls:
            rows.append({"design": name, "component": c, "scores": scores, "method": method,
                         "after": _rate(counts[c], reps)})  # fmt: skip

    def attribution_hosts(balanced):
        y, task, block, host = null_attribution(rng, n_tasks=12, trials=8, hosts=2)
        facets = {"task": task, "time_block": block, "host": host}
        from evalnoise.stats.gdesign import Design, Facet

        d = Design(
            (Facet("task"), Facet("time_block"), Facet("host")),
            effects=(("task",), ("time_block",), ("host",), ("task", "time_block")),
        )
        return y, facets, d

    engine_null(
        "attribution: 12 tasks × 8 trials, random order, 4 time blocks, 2 hosts at random",
        lambda: attribution_hosts(False),
        ["time_block", "host", "task×time_block"],
    )

    def attribution_balanced():
        y, task, block, _ = null_attribution(rng, balanced=True)
        from evalnoise.stats.gdesign import Design, Facet

        d = Design((Facet("task"), Facet("time_block")),
                   effects=(("task",), ("time_block",), ("task", "time_block")))  # fmt: skip
        return y, {"task": task, "time_block": block}, d

    engine_null(
        "attribution: 12 tasks × 8 trials, 2 per time block (balanced)",
        attribution_balanced,
        ["time_block", "task×time_block"],
    )
    null_comps = ["prompt", "judge", "task×prompt", "task×judge", "prompt×judge",
                  "task×prompt×judge"]  # fmt: skip
    for drop, label in ((0.0, "balanced"), (0.2, "20 % of scores missing")):
        engine_null(
            f"task × prompt × judge: 20 × 3 × 2, 2 trials per cell, {label}",
            lambda drop=drop: (
                *crossed(rng, 20, 3, 2, 2, {"task": 0.03}, drop=drop),
                ["task", "prompt", "judge"],
            ),
            null_comps,
        )
    for drop, label in ((0.0, "balanced"), (0.25, "25 % of judge samples missing")):
        engine_null(
            f"judge samples: 30 tasks × 6 trials × 3 samples, no trial effect, {label}",
            lambda drop=drop: (
                *nested(rng, 30, 6, 3, 0.03, 0.0, drop=drop),
                ["task", "trial:task"],
            ),
            ["trial:task"],
        )
    return rows


def part_coverage(reps: int, seed: int, log) -> list[dict]:
    rows = []
    rng = np.random.default_rng(seed + 1)

    def run(name, gen, truth, scores, **kw):
        est, cover, det, width = [], [], [], []
        method = None
        t1 = time.perf_counter()
        for _ in range(reps):
            y, facets, spec = gen()
            g = gstudy(y, facets, spec, **kw)
            method = g.method
            idx = [g.index(c) for c in truth]
            tv = np.array(list(truth.values()))
            est.append(g.sigma2[idx])
            cover.append((g.ci_low[idx] <= tv) & (tv <= g.ci_high[idx]))
            det.append(g.detected[idx])
            width.append(g.ci_high[idx] - g.ci_low[idx])
        log(f"coverage: {name} {time.perf_counter() - t1:.0f} s")
        est, cover, det = np.array(est), np.array(cover), np.array(det)
        for i, (c, tv) in enumerate(truth.items()):
            rows.append({
                "design": name, "component": c, "scores": scores, "method": method,
                "truth": tv, "mean": float(est[:, i].mean()),
                "bias": float(est[:, i].mean() - tv),
                "bias_mc_se": float(est[:, i].std(ddof=1) / math.sqrt(reps)),
                "coverage": _rate(int(cover[:, i].sum()), reps),
                "detected": float(det[:, i].mean()),
                "median_width": float(np.median(np.array(width)[:, i])),
            })  # fmt: skip

    for drop, label in ((0.0, "balanced"), (0.15, "15 % of scores missing")):
        truth = brennan_pxrt(rng)[2]
        run(
            f"p × (r:t), 10 × 3 × 4, Brennan's Synthetic No. 4 components, {label}",
            lambda drop=drop: (*brennan_pxrt(rng, drop)[:2], ["p", "t", "r:t"]),
            truth,
            "normal",
        )
    comps = {"task": 0.02, "prompt": 0.004, "judge": 0.003, "task×prompt": 0.004}
    mu = 0.6
    res = mu * (1 - mu) - sum(comps.values())
    for drop, label in ((0.0, "balanced"), (0.2, "20 % of scores missing")):
        run(
            f"task × prompt × judge: 30 × 4 × 3, 2 trials per cell, {label}",
            lambda drop=drop: (
                *crossed(rng, 30, 4, 3, 2, comps, mu=mu, drop=drop),
                ["task", "prompt", "judge"],
            ),
            {**comps, "task×judge": 0.0, "residual": res},
            "0/1",
        )
    s_task, s_trial = 0.03, 0.02
    for drop, label in ((0.0, "balanced"), (0.25, "25 % of judge samples missing")):
        run(
            f"judge samples: 60 tasks × 6 trials × 3 samples, {label}",
            lambda drop=drop: (
                *nested(rng, 60, 6, 3, s_task, s_trial, drop=drop),
                ["task", "trial:task"],
            ),
            {"task": s_task, "trial:task": s_trial, "residual": 0.25 - s_task - s_trial},
            "0/1",
        )

    def attribution():
        n_tasks, trials = 40, 16
        task = np.repeat(np.arange(n_tasks), trials)
        block = random_order_blocks(rng, task.size)
        host = rng.integers(0, 2, task.size)
        p = (
            0.5
            + uniform(rng, 0.03, n_tasks)[task]
            + uniform(rng, 0.004, 4)[block]
            + uniform(rng, 0.002, 2)[host]
            + uniform(rng, 0.006, (n_tasks, 4))[task, block]
        )
        y = (rng.random(p.size) < p).astype(float)
        from evalnoise.stats.gdesign import Design, Facet

        d = Design(
            (Facet("task"), Facet("time_block"), Facet("host")),
            effects=(("task",), ("time_block",), ("host",), ("task", "time_block")),
        )
        return y, {"task": task, "time_block": block, "host": host}, d

    run(
        "attribution: 40 tasks × 16 trials, random order, 4 time blocks, 2 hosts at random",
        attribution,
        {
            "task": 0.03,
            "time_block": 0.004,
            "host": 0.002,
            "task×time_block": 0.006,
            "residual": 0.25 - 0.042,
        },
        "0/1",
    )
    return rows


def part_timing(seed: int, log) -> list[dict]:
    rng = np.random.default_rng(seed + 2)
    old = old_variance_components()
    rows = []

    def clock(fn, repeat=3):
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        return float(np.median(times))

    for n_rows in (1_000, 10_000, 100_000):
        n_tasks = n_rows // 10
        task = np.repeat(np.arange(n_tasks), 10)
        p = rng.uniform(0.1, 0.9, n_tasks)
        y = (rng.random(task.size) < p[task]).astype(float)
        block = random_order_blocks(rng, task.size)
        t_new = clock(lambda y=y, task=task, block=block: variance_components(y, task, block))
        t_old = clock(lambda y=y, task=task, block=block: old(y, task, block, n_boot=1000))
        rows.append({"design": f"attribution (task × time block), {n_tasks:,} tasks × 10 trials",
                     "rows": n_rows, "method": "reml", "seconds": t_new,
                     "baseline": "before (Henderson III + 1,000 bootstrap replicates)",
                     "baseline_seconds": t_old, "ratio": t_new / t_old})  # fmt: skip
        log(f"timing: attribution {n_rows} rows: {t_new:.3f} s vs {t_old:.3f} s")
        for drop, method in ((0.0, "anova"), (0.1, "reml")):
            y2, facets = nested(rng, max(n_rows // 30, 2), 10, 3, 0.03, 0.02, drop=drop)
            t_j = clock(lambda y2=y2, f=facets: gstudy(y2, f, ["task", "trial:task"]))
            rows.append({"design": f"judge samples (task / trial / sample), {len(y2):,} scores",
                         "rows": len(y2), "method": method, "seconds": t_j})  # fmt: skip
            log(f"timing: nested {len(y2)} rows {method}: {t_j:.3f} s")
        for drop, method in ((0.0, "anova"), (0.1, "reml")):
            nt = max(n_rows // 24, 2)
            y3, facets = crossed(rng, nt, 4, 3, 2, {"task": 0.03, "prompt": 0.003}, drop=drop)
            t_c = clock(lambda y3=y3, f=facets: gstudy(y3, f, ["task", "prompt", "judge"]),
                        repeat=1 if n_rows >= 100_000 and drop else 3)  # fmt: skip
            rows.append({"design": f"task × prompt × judge ({nt:,} × 4 × 3 × 2), {len(y3):,} "
                         "scores", "rows": len(y3), "method": method, "seconds": t_c})  # fmt: skip
            log(f"timing: crossed {len(y3)} rows {method}: {t_c:.3f} s")
    return rows


# --- output -----------------------------------------------------------------------------


def _pct(r: dict | None) -> str:
    if not r:
        return "—"
    return f"{100 * r['rate']:.1f} % (± {100 * r['mc_se']:.1f})"


def render(meta: dict, null: list[dict], cov: list[dict], timing: list[dict]) -> str:
    out = ["# The G-study engine by simulation", ""]
    out.append(
        f"{meta['date']} · {meta['cpu']} · Python {meta['python']} · numpy {meta['numpy']} · "
        f"evalnoise {meta['evalnoise']} · {meta['reps']:,} replications per design · "
        f"seed {meta['seed']}. Script: `benchmarks/gstudy_calibration.py`."
    )
    out.append("")
    if null:
        out += [
            "## Calibration under the null",
            "",
            "How often a component that is 0 is reported as detected (its 95 % interval "
            "excludes 0); at most 5 % is the requirement, 2.5 % the nominal rate of a "
            "two-sided interval's lower end. *Before*: the attribution's Henderson III with "
            f"parametric-bootstrap percentile intervals (commit `{OLD_COMMIT}`); *after*: the "
            "G-study engine (REML or ANOVA, MLS intervals). ± is the Monte Carlo SE.",
            "",
            "| design | scores | component | method | before | after |",
            "|---|---|---|---|---:|---:|",
        ]
        for r in null:
            out.append(
                f"| {r['design']} | {r['scores']} | {r['component']} | {r.get('method', 'reml')}"
                f" | {_pct(r.get('before'))} | {_pct(r.get('after'))} |"
            )
        notes = [r["note"] for r in null if r.get("note")]
        out += ["", *[f"- {n}" for n in notes], ""]
    if cov:
        out += [
            "## Bias and coverage with known components",
            "",
            "Mean of the estimates (REML or ANOVA, truncated at 0) against the truth, and how "
            "often the 95 % MLS interval covers it.",
            "",
            "| design | scores | method | component | truth | mean | bias (± MC SE) "
            "| coverage | detected | median width |",
            "|---|---|---|---|---:|---:|---:|---:|---:|---:|",
        ]
        for r in cov:
            out.append(
                f"| {r['design']} | {r['scores']} | {r['method']} | {r['component']} | "
                f"{r['truth']:.4g} | {r['mean']:.4g} | {r['bias']:+.4f} (± {r['bias_mc_se']:.4f})"
                f" | {_pct(r['coverage'])} | {100 * r['detected']:.1f} % | "
                f"{r['median_width']:.4g} |"
            )
        out.append("")
    if timing:
        out += [
            "## Seconds per group",
            "",
            "Median of 3 runs on a shared 2-core machine (other work running); the ratio is "
            "against the model before the engine, measured in the same run.",
            "",
            "| design | scores | method | seconds | before (s) | ratio |",
            "|---|---:|---|---:|---:|---:|",
        ]
        for r in timing:
            base = f"{r['baseline_seconds']:.3f}" if "baseline_seconds" in r else "—"
            ratio = f"{r['ratio']:.2f}" if "ratio" in r else "—"
            out.append(
                f"| {r['design']} | {r['rows']:,} | {r['method']} | {r['seconds']:.3f} | "
                f"{base} | {ratio} |"
            )
        out.append("")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=20261126)
    ap.add_argument("--parts", default="null,coverage,timing")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    ap.add_argument("--name", default="gstudy_calibration")
    args = ap.parse_args(argv)
    parts = set(args.parts.split(","))

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    meta = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": cpu_model(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "evalnoise": __version__,
        "reps": args.reps,
        "seed": args.seed,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    done: dict[str, list] = {"null": [], "coverage": [], "timing": []}

    def write() -> None:  # after every part, so a long run keeps what it has
        (args.out / f"{args.name}.json").write_text(
            json.dumps({**meta, **done}, indent=2, sort_keys=True, default=float) + "\n"
        )
        (args.out / f"{args.name}.md").write_text(
            render(meta, done["null"], done["coverage"], done["timing"])
        )

    if "null" in parts:
        done["null"] = part_null(args.reps, args.seed, log)
        write()
    if "coverage" in parts:
        done["coverage"] = part_coverage(args.reps, args.seed, log)
        write()
    if "timing" in parts:
        done["timing"] = part_timing(args.seed, log)
        write()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
