#!/usr/bin/env python
"""Growth at scale: a finished run made bigger runs exactly its new trials, nothing else.

``tests/pipeline/test_growth.py`` checks this on 3 tasks; this measures it on a run the
pipeline benchmark kept (``bench_pipeline.py --keep``), thousands of trials, in steps:

1. ``trials.count`` doubled (new trial blocks on every task);
2. ``benchmark.n`` raised by ``--add-tasks`` tasks (new rows of the tasks table; the last,
   partial task chunk grows and resumes from its journal).

After each step it checks, over every shard journal of the workspace, that each trial row
that existed before is unchanged (the same ``started_at``: none ran again) and that exactly
the expected new (agent, resource profile, task, trial) rows were added; it counts the
jobs Snakemake ran per rule, times the step, and ends with a dry run that must plan
nothing. Writes ``benchmarks/results/growth.{md,json}`` (``--out``, ``--name``).

    python benchmarks/bench_growth.py /tmp/evalnoise-bench-local-10000-a1-XXXX/ws
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "pipeline"))
from pipeline_helpers import job_counts, journals, run_tool  # noqa: E402

OUT = ROOT / "benchmarks" / "results"
_KEY = ("agent", "resource_profile", "task_id", "trial", "attempt")


def trial_rows(ws: Path) -> dict[tuple, str]:
    """(agent, profile, task, trial, attempt) → started_at, over every shard journal."""
    rows: dict[tuple, str] = {}
    for path, journal in journals(ws).items():
        for row in journal:
            key = tuple(row[k] for k in _KEY)
            if key in rows:
                raise RuntimeError(f"{path}: trial {key} is in two journals")
            rows[key] = row["started_at"]
    return rows


def snakemake(ws: Path, *args: str) -> tuple[float, str]:
    t0 = time.perf_counter()
    # the workspace's own package, a failing scontrol first (no Slurm probe)
    done = run_tool(ws, "snakemake", *args, timeout=24 * 3600)
    return time.perf_counter() - t0, done.stdout + done.stderr


def step(ws: Path, name: str, change, expected_new: int, cores: int) -> dict[str, Any]:
    config_path = ws / "config" / "config.yaml"
    config = yaml.safe_load(config_path.read_text(encoding="utf-8"))
    change(config)
    config_path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    before = trial_rows(ws)
    wall, log = snakemake(ws, "--cores", str(cores))
    after = trial_rows(ws)
    changed = sum(1 for k, v in before.items() if after.get(k) != v)
    new = len(set(after) - set(before))
    _, dry = snakemake(ws, "-n")
    planned_after = job_counts(dry).get("total", 0)
    row = {
        "step": name,
        "trials_before": len(before),
        "new_trials_expected": expected_new,
        "new_trials_run": new,
        "old_trials_rerun_or_lost": changed,
        "exact": new == expected_new and changed == 0,
        "jobs": job_counts(log),
        "wall_s": round(wall, 2),
        "ms_per_new_trial": round(1000 * wall / max(new, 1), 2),
        "jobs_planned_after": planned_after,
    }
    print(f"[growth] {name}: {row}", file=sys.stderr, flush=True)
    return row


def markdown(doc: dict[str, Any]) -> str:
    lines = [
        "# Growth at scale (benchmarks/bench_growth.py)",
        "",
        f"{doc['date']}; {doc['machine']}. Workspace: {doc['scale']} (a run of "
        "`bench_pipeline.py --keep`, local backend, the instant agent).",
        "",
        "| step | trials before | new trials expected | new trials run | old trials rerun "
        "or lost | exact | jobs run (by rule) | wall s | ms per new trial | jobs planned "
        "after |",
        "|---|---:|---:|---:|---:|---|---|---:|---:|---:|",
    ]
    for r in doc["steps"]:
        jobs = ", ".join(f"{k} {v}" for k, v in r["jobs"].items() if k != "total")
        lines.append(
            f"| {r['step']} | {r['trials_before']} | {r['new_trials_expected']} "
            f"| {r['new_trials_run']} | {r['old_trials_rerun_or_lost']} "
            f"| {'yes' if r['exact'] else 'NO'} | {jobs} | {r['wall_s']:.1f} "
            f"| {r['ms_per_new_trial']:.1f} | {r['jobs_planned_after']} |"
        )
    lines += ["", *doc.get("notes", [])]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("workspace", type=Path, help="a workspace kept by bench_pipeline --keep")
    parser.add_argument("--add-tasks", type=int, default=50)
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--name", default="growth")
    parser.add_argument("--note", action="append", default=[])
    args = parser.parse_args(argv)
    ws = args.workspace.resolve()
    config = yaml.safe_load((ws / "config" / "config.yaml").read_text(encoding="utf-8"))
    groups = sum(
        len(spec.get("resource_profiles") or config["resource_profiles"])
        for spec in config["agents"].values()
    )
    tasks, count = int(config["benchmark"]["n"]), int(config["trials"]["count"])
    label = re.sub(r"^evalnoise-bench-|-[^-]+$", "", ws.parent.name)

    def doubled(c):
        c["trials"]["count"] = 2 * count

    def more_tasks(c):
        c["benchmark"]["n"] = tasks + args.add_tasks

    steps = [
        step(
            ws, f"trials.count {count} → {2 * count}", doubled, groups * tasks * count, args.cores
        ),
        step(
            ws,
            f"benchmark.n {tasks} → {tasks + args.add_tasks}",
            more_tasks,
            groups * args.add_tasks * 2 * count,
            args.cores,
        ),
    ]
    from evalnoise.machine import cgroup_version, cpu_model

    doc = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{cpu_model()}, {os.cpu_count()} cores, cgroup {cgroup_version()}",
        "scale": label,
        "steps": steps,
        "notes": args.note,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{args.name}.json").write_text(json.dumps(doc, indent=2) + "\n")
    (args.out / f"{args.name}.md").write_text(markdown(doc))
    print(markdown(doc))
    return 0 if all(r["exact"] and r["jobs_planned_after"] == 0 for r in steps) else 1


if __name__ == "__main__":
    sys.exit(main())
