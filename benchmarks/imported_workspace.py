#!/usr/bin/env python
"""A workspace of an imported table of synthetic trials, for ``bench_analysis.py``.

Issue 24's workspace: ``agents`` agents × ``tasks`` tasks × ``trials`` trials, each trial a
Bernoulli draw whose probability is the task's difficulty, Beta(0.8, 0.8), plus 0.05 per agent
after the first (clipped to [0, 1]); the table is ``trials_from`` of a copy of this checkout's
project, and the whole workflow runs once (sequentially, ``--cores 1``), so the analysis and
report stages can be rerun by ``bench_analysis.py``. Importing that many trials is much faster
than running them with the instant agent (benchmarks/results/comment-measurements.md).

    python benchmarks/imported_workspace.py /tmp/ws100k-imp
    python benchmarks/bench_analysis.py /tmp/ws100k-imp/ws --baseline /tmp/before --repeat 3
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_pipeline import ROOT, snakemake_bin, tool_env
from pipeline_helpers import copy_project, no_slurm_probe


def synthetic_trials(agents: int, tasks: int, trials: int, seed: int) -> pd.DataFrame:
    """One row per (agent, task, trial): ``score`` ~ Bernoulli(p_task + 0.05 × agent index),
    p_task ~ Beta(0.8, 0.8)."""
    rng = np.random.default_rng(seed)
    difficulty = rng.beta(0.8, 0.8, tasks)
    task = np.repeat(np.arange(tasks), trials)
    frames = []
    for k in range(agents):
        p = np.clip(difficulty + 0.05 * k, 0.0, 1.0)
        frames.append(
            pd.DataFrame(
                {
                    "agent": f"agent-{chr(ord('a') + k)}",
                    "task_id": np.char.add("t", np.char.zfill(task.astype(str), 5)),
                    "trial": np.tile(np.arange(trials), tasks),
                    "score": (rng.random(task.size) < p[task]).astype(np.int64),
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path", type=Path, help="a new directory; the workspace is PATH/ws")
    parser.add_argument("--agents", type=int, default=2)
    parser.add_argument("--tasks", type=int, default=5000)
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--seed", type=int, default=24)
    args = parser.parse_args(argv)
    ws = copy_project(args.path.resolve() / "ws")
    table = synthetic_trials(args.agents, args.tasks, args.trials, args.seed)
    table.to_parquet(ws / "trials.parquet", index=False)
    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text(encoding="utf-8"))
    config["trials_from"] = "trials.parquet"
    config["columns"]["group"] = "agent"
    config["health"]["expected_failures"] = []
    (ws / "config" / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    env = tool_env(ws, no_slurm_probe())
    subprocess.run([snakemake_bin(), "--cores", "1"], cwd=ws, env=env, check=True)
    print(ws)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
