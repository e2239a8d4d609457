#!/usr/bin/env python
"""Per-trial overhead of the evalnoise runner vs a raw ``docker run --rm`` loop.

Both sides run the same no-op agent (``sh -c 'echo {"answer": 1}'`` in the base image) the
same number of times at the same concurrency:

- **raw**: ``docker run --rm --network none IMAGE sh -c ...`` through the docker CLI, from a
  thread pool;
- **runner**: :func:`evalnoise.runner.run_shard` on the docker backend — a fresh hardened
  container per trial (read-only root, tmpfs, cap_drop, init, resource limits, bind mounts),
  labels, per-trial cgroup, logs, answer parsing, an fsynced journal line per trial and the
  atomic Parquet write at the end.

The trials are split into rounds; the two sides alternate (raw, runner, runner, raw, ...)
so drift on a shared machine hits both equally. Prints the trials/s of each side and the
ratio of per-trial wall time (goal: runner ≤ 1.10 × raw). Needs a running engine
(tools/docker-engine.sh) and builds the base image if it is missing.

    python benchmarks/bench_runner.py --trials 40 --concurrency 2 --rounds 4
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pandas as pd

from evalnoise.runner import run_shard
from evalnoise.runner.base_image import build_base_image

NOOP = ["sh", "-c", "echo '{\"answer\": 1}'"]


def raw_round(image: str, n: int, concurrency: int) -> float:
    docker = shutil.which("docker")
    if docker is None:
        sys.exit("bench_runner: the docker CLI is not installed")

    def one(_: int) -> int:
        result = subprocess.run(
            [docker, "run", "--rm", "--network", "none", image, *NOOP], capture_output=True
        )
        if result.returncode != 0 or b'"answer"' not in result.stdout:
            raise RuntimeError(f"raw docker run failed: {result.stderr.decode()[-500:]}")
        return result.returncode

    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        list(pool.map(one, range(n)))
    return time.perf_counter() - t0


def runner_round(image: str, n: int, concurrency: int, workdir: Path, index: int) -> float:
    tasks = pd.DataFrame(
        {
            "task_id": [f"noop-{i:03d}" for i in range(n)],
            "question": ["noop"] * n,
            "answer": ["1"] * n,
            "level": ["0"] * n,
            "cpus": [1.0] * n,
            "memory_mb": [256] * n,
            "time_limit_s": [60.0] * n,
            "sampling_seed": [0] * n,
        }
    )
    agent = {"name": "noop", "image": image, "command": NOOP}
    t0 = time.perf_counter()
    result = run_shard(
        tasks,
        agent,
        "1x",
        [0],
        0,
        "as_incorrect",
        "docker",
        workdir / f"round{index}.journal.jsonl",
        workdir / f"round{index}.parquet",
        concurrency=concurrency,
        progress=False,
    )
    elapsed = time.perf_counter() - t0
    if result.statuses != {"ok": n}:
        raise RuntimeError(f"runner round had non-ok trials: {result.statuses}")
    return elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=40, help="trials per side")
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=4, help="alternating rounds per side")
    parser.add_argument("--image", default=None, help="no-op image (default: the base image)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args(argv)

    image = args.image or build_base_image()
    per_round = max(1, args.trials // args.rounds)
    # warm up both paths (first container start on a fresh engine is slow)
    raw_round(image, args.concurrency, args.concurrency)
    with tempfile.TemporaryDirectory(prefix="evalnoise-bench-") as tmp:
        workdir = Path(tmp)
        runner_round(image, args.concurrency, args.concurrency, workdir, -1)
        raw_times, runner_times = [], []
        for r in range(args.rounds):
            order = ("raw", "runner") if r % 2 == 0 else ("runner", "raw")
            for side in order:
                if side == "raw":
                    raw_times.append(raw_round(image, per_round, args.concurrency))
                else:
                    runner_times.append(
                        runner_round(image, per_round, args.concurrency, workdir, r)
                    )
    n = per_round * args.rounds
    raw_total, runner_total = sum(raw_times), sum(runner_times)
    result = {
        "trials_per_side": n,
        "concurrency": args.concurrency,
        "rounds": args.rounds,
        "raw_trials_per_s": n / raw_total,
        "runner_trials_per_s": n / runner_total,
        "raw_s_per_trial": raw_total / n,
        "runner_s_per_trial": runner_total / n,
        "ratio": runner_total / raw_total,
        "ratio_per_round": [b / a for a, b in zip(raw_times, runner_times, strict=True)],
        "ratio_median_round": statistics.median(
            b / a for a, b in zip(raw_times, runner_times, strict=True)
        ),
        "goal": 1.10,
    }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(
            f"{n} trials per side, concurrency {args.concurrency}, {args.rounds} alternating rounds"
        )
        print(
            f"  raw docker run : {result['raw_trials_per_s']:.2f} trials/s "
            f"({result['raw_s_per_trial'] * 1000:.0f} ms/trial)"
        )
        print(
            f"  evalnoise      : {result['runner_trials_per_s']:.2f} trials/s "
            f"({result['runner_s_per_trial'] * 1000:.0f} ms/trial)"
        )
        print(
            f"  ratio runner/raw: {result['ratio']:.3f} (goal <= 1.10); per round "
            + ", ".join(f"{x:.2f}" for x in result["ratio_per_round"])
        )
    return 0 if result["ratio"] <= result["goal"] else 1


if __name__ == "__main__":
    sys.exit(main())
