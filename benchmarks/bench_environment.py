#!/usr/bin/env python
"""The harness cost of an environment trial against a QA trial, measured in one run.

Two sides, the same number of trials at the same concurrency, on the same engine:

- **environment**: :class:`evalnoise.runner.environment.EnvironmentBackend` runs the ``null``
  agent on a trivial Harbor task (its ``test.sh`` writes ``1`` to ``reward.txt``): a fresh
  container of the task's image (limits, labels, bind mounts, the idle main process), the
  tests copied in, ``test.sh`` run through ``docker exec``, the reward read, the container
  removed;
- **qa**: :class:`evalnoise.runner.docker_backend.DockerBackend` runs the instant agent of
  ``benchmarks/agents/instant`` (answers an arithmetic question at once, no model) on one
  question per trial: the QA trial the issue compares with.

Rounds alternate (qa, env, env, qa, …) so drift on a shared machine hits both sides alike.
Both sides call the backend's ``run_trial`` directly from a thread pool (no shard journal on
either side). It reports per-trial wall time of each side, their ratio, and the **harness
ratio**: the environment trial's wall time minus what its verifier took (``verifier_duration_s``;
the null agent takes none) over the QA trial's whole wall time (its agent's run included).
The goal (issue 22): harness ratio ≤ 2. ``verifier_duration_s`` is measured around the
``docker exec`` of ``test.sh``, so it holds the exec's own overhead too (tens of ms): the wall
ratio, which subtracts nothing, is the conservative figure, and the exit status checks both.

    python benchmarks/bench_environment.py --trials 60 --concurrency 1 --rounds 6
    python benchmarks/bench_environment.py --json --out benchmarks/results/environment
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from evalnoise.machine import cpu_model  # noqa: E402
from evalnoise.runner import agent_spec, resource_profile, trial_seed  # noqa: E402
from evalnoise.runner.base_image import (  # noqa: E402
    build_agent_image,
    build_base_image,
    context_digest,
)
from evalnoise.runner.docker_backend import DockerBackend  # noqa: E402
from evalnoise.runner.environment import EnvironmentBackend  # noqa: E402
from evalnoise.runner.trial import TrialRequest  # noqa: E402
from evalnoise.tasks.harbor_folders import environment_task_rows, load_harbor_task  # noqa: E402

INSTANT = ROOT / "benchmarks" / "agents" / "instant"
GOAL = 2.0

TRIVIAL_TASK = {
    "task.toml": (
        'schema_version = "1.4"\n\n[task]\nname = "bench/trivial"\n\n[agent]\ntimeout_sec = 60.0\n'
        '\n[verifier]\ntimeout_sec = 60.0\nenvironment_mode = "shared"\n\n[environment]\n'
        'cpus = 1\nmemory_mb = 256\nnetwork_mode = "no-network"\n'
    ),
    "instruction.md": "Nothing to do.\n",
    "environment/Dockerfile": "ARG BASE\nFROM ${BASE}\nWORKDIR /app\n",
    "tests/test.sh": "#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n",
}


def trivial_task(folder: Path) -> dict:
    for rel, text in TRIVIAL_TASK.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text)
    (row,) = environment_task_rows([load_harbor_task(folder)])
    return row


def instant_image(base: str) -> str:
    files = [p for p in INSTANT.rglob("*") if p.is_file()]
    tag = f"evalnoise-instant:{context_digest(INSTANT, files, prefix=base)}"
    build_agent_image(INSTANT, tag, base)
    return tag


def qa_task(i: int) -> dict:
    return {
        "task_id": f"qa-{i:04d}",
        "question": f"What is {i} + 3?",
        "level": "0",
        "cpus": 1.0,
        "memory_mb": 256,
        "time_limit_s": 60.0,
        "sampling_seed": 0,
    }


def one_round(backend, spec, tasks: list[dict], concurrency: int, shard: str) -> tuple[float, list]:
    profile = resource_profile("1x")

    def run(item):
        i, task = item
        request = TrialRequest(
            agent=spec,
            task=task,
            resource_profile=profile,
            trial=i,
            attempt=1,
            seed=trial_seed(0, spec.name, task["task_id"], i),
            shard_id=shard,
        )
        return backend.run_trial(request)

    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        rows = list(pool.map(run, enumerate(tasks)))
    elapsed = time.perf_counter() - t0
    bad = [r for r in rows if r["status"] != "ok"]
    if bad:
        raise RuntimeError(f"{shard}: non-ok trials: {bad[0]['status']} {bad[0]['error']}")
    return elapsed, rows


def measure(trials: int, concurrency: int, rounds: int) -> dict:
    base = build_base_image()
    qa_spec = agent_spec({"name": "instant", "image": instant_image(base)})
    null_spec = agent_spec({"name": "null"})
    qa_backend = DockerBackend()
    env_backend = EnvironmentBackend(base=base)
    per_round = max(1, trials // rounds)
    with tempfile.TemporaryDirectory(prefix="evalnoise-bench-env-") as tmp:
        row = trivial_task(Path(tmp))
        env_tasks = [row] * per_round
        qa_tasks = [qa_task(i) for i in range(per_round)]
        # warm both paths: the task image build, the first container starts
        one_round(env_backend, null_spec, env_tasks[:concurrency], concurrency, "bench-env")
        one_round(qa_backend, qa_spec, qa_tasks[:concurrency], concurrency, "bench-qa")
        env_s, qa_s, verifier_s, agent_s = [], [], [], []
        for r in range(rounds):
            order = ("qa", "env") if r % 2 == 0 else ("env", "qa")
            for side in order:
                if side == "qa":
                    qa_s.append(
                        one_round(qa_backend, qa_spec, qa_tasks, concurrency, "bench-qa")[0]
                    )
                else:
                    elapsed, rows = one_round(
                        env_backend, null_spec, env_tasks, concurrency, "bench-env"
                    )
                    env_s.append(elapsed)
                    verifier_s.append(sum(r["verifier_duration_s"] for r in rows))
                    agent_s.append(sum(r["agent_duration_s"] for r in rows))
    n = per_round * rounds
    env_per, qa_per = sum(env_s) / n, sum(qa_s) / n
    verifier_per, agent_per = sum(verifier_s) / n, sum(agent_s) / n
    # with concurrency c, c trials overlap: the per-trial share of the verifier's time is
    # its summed time / c
    harness_per = env_per - (verifier_per + agent_per) / concurrency
    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{platform.processor() or platform.machine()}, {_cpus()} cores",
        "cpu_model": cpu_model(),
        "trials_per_side": n,
        "concurrency": concurrency,
        "rounds": rounds,
        "qa_s_per_trial": qa_per,
        "env_s_per_trial": env_per,
        "env_verifier_s_per_trial": verifier_per,
        "env_agent_s_per_trial": agent_per,
        "env_harness_s_per_trial": harness_per,
        "ratio_wall": env_per / qa_per,
        "ratio_harness": harness_per / qa_per,
        "ratio_wall_per_round": [e / q for e, q in zip(env_s, qa_s, strict=True)],
        "ratio_wall_median_round": statistics.median(
            e / q for e, q in zip(env_s, qa_s, strict=True)
        ),
        "goal_ratio_harness": GOAL,
    }


def _cpus() -> int:
    import os

    return os.cpu_count() or 1


def markdown(results: list[dict]) -> str:
    lines = [
        "# Environment trial vs QA trial (benchmarks/bench_environment.py)",
        "",
        "Null agent on a trivial Harbor task (EnvironmentBackend) against the instant agent on "
        "one question (DockerBackend), the same trials per side, alternating rounds. Harness = "
        "environment wall time minus its verifier's and agent's time (the verifier's time "
        "includes its docker exec, so the wall ratio is the conservative figure); goal: "
        f"≤ {GOAL:g}.",
        "",
        "| date | machine | concurrency | trials/side | QA s/trial | env s/trial | env verifier "
        "s/trial | env harness s/trial | wall ratio | harness ratio | per-round wall ratios |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in results:
        lines.append(
            f"| {r['date']} | {r['cpu_model']}, {r['machine'].split(', ')[-1]} | "
            f"{r['concurrency']} | {r['trials_per_side']} | {r['qa_s_per_trial']:.3f} | "
            f"{r['env_s_per_trial']:.3f} | {r['env_verifier_s_per_trial']:.3f} | "
            f"{r['env_harness_s_per_trial']:.3f} | {r['ratio_wall']:.2f} | "
            f"{r['ratio_harness']:.2f} | "
            + ", ".join(f"{x:.2f}" for x in r["ratio_wall_per_round"])
            + " |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=60, help="trials per side")
    parser.add_argument(
        "--concurrency", type=int, action="append", help="repeatable (default: 1 and 2)"
    )
    parser.add_argument("--rounds", type=int, default=6, help="alternating rounds per side")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--out", help="write <out>.json and <out>.md")
    args = parser.parse_args(argv)
    results = [measure(args.trials, c, args.rounds) for c in args.concurrency or [1, 2]]
    if args.out:
        Path(f"{args.out}.json").write_text(json.dumps(results, indent=2) + "\n")
        Path(f"{args.out}.md").write_text(markdown(results))
    print(json.dumps(results, indent=2) if args.json else markdown(results))
    return 0 if all(r["ratio_wall"] <= GOAL for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
