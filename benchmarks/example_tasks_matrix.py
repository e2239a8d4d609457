#!/usr/bin/env python
"""The example Harbor tasks (examples/harbor-tasks) under the oracle and the null agent at
the 1x, 1.5x and 3x resource profiles (hard limit = factor × the task's declared cpus and
memory_mb; guarantee = the declared values), through the environment runner.

Writes a table per task and profile: status, reward, the phase of a failure, the peak memory
of the container, the agent phase's time and the trial's wall time — what a perfect agent
(the oracle) loses as headroom shrinks, and the floor (null). Needs a running engine; builds
the base image and the task images if they are missing.

    python benchmarks/example_tasks_matrix.py --out benchmarks/results/harbor-example-tasks
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from evalnoise.runner import agent_spec, trial_seed  # noqa: E402
from evalnoise.runner.environment import EnvironmentBackend  # noqa: E402
from evalnoise.runner.resources import ResourceProfile  # noqa: E402
from evalnoise.runner.trial import TrialRequest  # noqa: E402
from evalnoise.tasks.harbor_folders import environment_task_rows, load_harbor_tasks  # noqa: E402

PROFILES = {
    name: ResourceProfile(name, 1.0, factor, 1.0, factor, 1.0)
    for name, factor in (("1x", 1.0), ("1.5x", 1.5), ("3x", 3.0))
}
MIB = 1024 * 1024


def run(tasks_dir: Path, agents: list[str], profiles: list[str], concurrency: int) -> list[dict]:
    tasks = load_harbor_tasks(tasks_dir)
    rows = {row["task_id"]: row for row in environment_task_rows(tasks)}
    sensitive = {t.name for t in tasks if "resource-sensitive" in t.metadata.get("tags", [])}
    backend = EnvironmentBackend()
    for task in tasks:  # build every image first, so builds do not count in trial times
        image = backend.images.get(task)
        if not image.ok:
            print(f"{task.name}: {image.failure_text()}", file=sys.stderr)
    plan = [(t, a, p) for p in profiles for a in agents for t in rows]

    def one(item):
        task_id, agent, profile = item
        spec = agent_spec({"name": agent})
        request = TrialRequest(
            agent=spec,
            task=rows[task_id],
            resource_profile=PROFILES[profile],
            trial=0,
            attempt=1,
            seed=trial_seed(0, agent, task_id, 0),
            shard_id="example-matrix",
        )
        t0 = time.perf_counter()
        row = backend.run_trial(request)
        return {
            "task_id": task_id,
            "resource_sensitive": task_id in sensitive,
            "agent": agent,
            "resource_profile": profile,
            "status": row["status"],
            "reward": row["reward"],
            "rewards_json": row["rewards_json"],
            "phase": row["phase"],
            "memory_limit_mib": (row["memory_limit_bytes"] or 0) / MIB,
            "cpu_quota_cpus": row["cpu_quota_cpus"],
            "peak_memory_mib": None
            if row["peak_memory_bytes"] is None
            else row["peak_memory_bytes"] / MIB,
            "agent_duration_s": row["agent_duration_s"],
            "time_limit_s": row["time_limit_s"],
            "wall_s": time.perf_counter() - t0,
            "error": (row["error"] or "")[:200] or None,
        }

    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        return list(pool.map(one, plan))


def markdown(results: list[dict], seconds: float, concurrency: int) -> str:
    lines = [
        "# Example Harbor tasks: oracle and null at 1x / 1.5x / 3x",
        "",
        f"{datetime.now(UTC):%Y-%m-%d %H:%M UTC}; {len(results)} trials at concurrency "
        f"{concurrency} in {seconds:.0f} s (benchmarks/example_tasks_matrix.py). Hard limit = "
        "factor × declared cpus / memory_mb; ★ = resource-sensitive task.",
        "",
        "| task | agent | profile | status | reward | phase | limit MiB | peak MiB | agent s "
        "| limit s |",
        "|---|---|---|---|---:|---|---:|---:|---:|---:|",
    ]
    for r in sorted(results, key=lambda r: (r["task_id"], r["agent"], r["resource_profile"])):
        peak = "" if r["peak_memory_mib"] is None else f"{r['peak_memory_mib']:.0f}"
        reward = "" if r["reward"] is None else f"{r['reward']:g}"
        agent_s = "" if r["agent_duration_s"] is None else f"{r['agent_duration_s']:.2f}"
        star = " ★" if r["resource_sensitive"] else ""
        lines.append(
            f"| {r['task_id']}{star} | {r['agent']} | {r['resource_profile']} | {r['status']} "
            f"| {reward} | {r['phase'] or ''} | {r['memory_limit_mib']:.0f} | {peak} | "
            f"{agent_s} | {r['time_limit_s']:g} |"
        )
    lines += ["", "Oracle accuracy per profile (reward of `ok` trials; failures count 0):", ""]
    for profile in PROFILES:
        mine = [r for r in results if r["agent"] == "oracle" and r["resource_profile"] == profile]
        if not mine:
            continue
        solved = sum(1 for r in mine if r["status"] == "ok" and r["reward"] == 1.0)
        infra = {}
        for r in mine:
            if r["status"] != "ok":
                infra[r["status"]] = infra.get(r["status"], 0) + 1
        lines.append(f"- {profile}: {solved}/{len(mine)} solved; not ok: {infra or 'none'}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", default=str(ROOT / "examples" / "harbor-tasks"))
    parser.add_argument("--agent", action="append", help="oracle and/or null (default both)")
    parser.add_argument("--profile", action="append", help="1x, 1.5x, 3x (default all)")
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--out", help="write <out>.json and <out>.md")
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    results = run(
        Path(args.tasks),
        args.agent or ["oracle", "null"],
        args.profile or list(PROFILES),
        args.concurrency,
    )
    seconds = time.perf_counter() - t0
    text = markdown(results, seconds, args.concurrency)
    if args.out:
        Path(f"{args.out}.json").write_text(json.dumps(results, indent=2) + "\n")
        Path(f"{args.out}.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
