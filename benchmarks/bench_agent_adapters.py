#!/usr/bin/env python
"""The harness cost of a Harbor agent run through the bridge, against the built-in external
agent's, and Harbor's own run of the same trials (issue 37, item 5).

Three sides, the same trivial Harbor task (its ``test.sh`` writes ``1`` to ``reward.txt``),
agents that do nothing (no model, no command), one trial at a time:

- **external**: an exec-protocol external agent in the project's Python that only says
  ``done`` (``benchmarks/agents/exec_done.py``): the runner's own cost of an external agent —
  a host process started, the task file written, one protocol line read;
- **bridge**: Harbor's ``nop`` through ``agents/harbor_agent/bridge.py`` in Harbor's Python,
  as the pipeline runs a Harbor agent (``fork_server: true``): a child forked per trial from
  the shard's warm bridge process, which imported Harbor once
  (``evalnoise.runner.fork_server``); the same, plus Harbor's agent and environment built.
  The server's start (Harbor's import) is paid once per shard, by its first trial, which is
  timed apart (``bridge_first_trial_s``) and not in the medians;
- **bridge-fresh**: the same bridge started afresh for every trial (no fork server): what
  every trial would pay for Harbor's import;
- **harbor**: ``harbor run`` of Harbor's ``nop`` on the same task (its docker environment,
  ``docker compose``; the task declares ``network_mode = "public"`` for Harbor, whose
  ``no-network`` needs a sidecar from a public image, and the compose overlay of
  ``tests/harbor_tools.py`` gives it no network), per trial = the job's wall time / trials.

The sides' rounds are interleaved (their order rotates from round to round) so drift on a
shared machine hits them alike. The **cost ratio** is bridge / external per-trial wall time
(each trial's agent does nothing, so its wall time is harness); the goal is ≤ 1.5.

    python benchmarks/bench_agent_adapters.py --trials 12 --rounds 4 \
        --out benchmarks/results/agent_adapters
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "tests")]

from evalnoise.machine import cpu_model  # noqa: E402
from evalnoise.runner import agent_spec, resource_profile, trial_seed  # noqa: E402
from evalnoise.runner.base_image import build_base_image  # noqa: E402
from evalnoise.runner.environment import EnvironmentBackend  # noqa: E402
from evalnoise.runner.trial import TrialRequest  # noqa: E402
from evalnoise.tasks.harbor_folders import environment_task_rows, load_harbor_task  # noqa: E402

GOAL = 1.5
TASK = {
    "task.toml": (
        'schema_version = "1.4"\n\n[task]\nname = "bench/trivial"\n\n[agent]\ntimeout_sec = 60.0\n'
        '\n[verifier]\ntimeout_sec = 60.0\nenvironment_mode = "shared"\n\n[environment]\n'
        'cpus = 1\nmemory_mb = 256\nnetwork_mode = "{network}"\n'
    ),
    "instruction.md": "Nothing to do.\n",
    "environment/Dockerfile": "ARG BASE\nFROM ${BASE}\nWORKDIR /app\n",
    "tests/test.sh": "#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n",
    "solution/solve.sh": "#!/bin/bash\ntrue\n",
}
SPECS = {
    "external": {
        "name": "external-done",
        "command": ["{python}", "benchmarks/agents/exec_done.py"],
    },
    "bridge": {
        "name": "harbor-nop",
        "command": ["{harbor_python}", "agents/harbor_agent/bridge.py"],
        "env": {"HARBOR_AGENT": '{"agent":"nop","kwargs":{},"model":null}'},
        "fork_server": True,
    },
    "bridge-fresh": {
        "name": "harbor-nop",
        "command": ["{harbor_python}", "agents/harbor_agent/bridge.py"],
        "env": {"HARBOR_AGENT": '{"agent":"nop","kwargs":{},"model":null}'},
    },
}
SIDES = tuple(SPECS)


def write_task(folder: Path, network: str) -> Path:
    for rel, text in TASK.items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text.replace("{network}", network))
        if rel.endswith(".sh"):
            path.chmod(0o755)
    return folder


def one_round(backend, side: str, row: dict, trials: int) -> list[dict]:
    spec = agent_spec(SPECS[side])
    rows = []
    for i in range(trials):
        request = TrialRequest(
            agent=spec,
            task=row,
            resource_profile=resource_profile("1x"),
            trial=i,
            attempt=1,
            seed=trial_seed(0, spec.name, row["task_id"], i),
            shard_id=f"bench-{side}",
        )
        t0 = time.perf_counter()
        out = backend.run_trial(request)
        out["wall_s"] = time.perf_counter() - t0
        if out["status"] != "ok" or out["reward"] != 1.0:
            raise RuntimeError(f"{side}: {out['status']} {out['error']} {out['stderr_tail']}")
        rows.append(out)
    return rows


def measure(trials: int, rounds: int, harbor_trials: int) -> dict:
    base = build_base_image()
    backend = EnvironmentBackend(base=base)
    per_round = max(1, trials // rounds)
    walls: dict[str, list[float]] = {side: [] for side in SIDES}
    agent: dict[str, list[float]] = {side: [] for side in SIDES}
    first: dict[str, float] = {}
    load = [_load()]
    with tempfile.TemporaryDirectory(prefix="evalnoise-bench-adapters-") as tmp:
        (row,) = environment_task_rows(
            [load_harbor_task(write_task(Path(tmp) / "t", "no-network"))]
        )
        try:
            for side in SIDES:  # warm: the task image, the first interpreter starts, the server
                first[side] = one_round(backend, side, row, 1)[0]["wall_s"]
            for r in range(rounds):
                for side in SIDES[r % len(SIDES) :] + SIDES[: r % len(SIDES)]:
                    for out in one_round(backend, side, row, per_round):
                        walls[side].append(out["wall_s"])
                        agent[side].append(out["agent_duration_s"])
                load.append(_load())
        finally:
            for side in SIDES:
                backend.cleanup(f"bench-{side}")
        harbor = harbor_run(Path(tmp) / "h", base, harbor_trials) if harbor_trials else None
    load.append(_load())
    ext, bri = statistics.median(walls["external"]), statistics.median(walls["bridge"])
    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu_model": cpu_model(),
        "load_average_1m": statistics.median(load),
        "load_average_1m_range": [min(load), max(load)],
        "trials_per_side": len(walls["external"]),
        "external_s_per_trial_median": ext,
        "bridge_s_per_trial_median": bri,
        "bridge_fresh_s_per_trial_median": statistics.median(walls["bridge-fresh"]),
        "bridge_first_trial_s": first["bridge"],
        "external_agent_phase_s_median": statistics.median(agent["external"]),
        "bridge_agent_phase_s_median": statistics.median(agent["bridge"]),
        "bridge_fresh_agent_phase_s_median": statistics.median(agent["bridge-fresh"]),
        "cost_ratio": bri / ext,
        "cost_ratio_fresh": statistics.median(walls["bridge-fresh"]) / ext,
        "harbor_run_trials": harbor_trials,
        "harbor_run_s_per_trial": harbor,
        "goal_cost_ratio": GOAL,
    }


def harbor_run(folder: Path, base: str, trials: int) -> float:
    """Seconds per trial of ``harbor run`` (Harbor's nop) on the task, ``trials`` attempts."""
    from harbor_tools import run_harbor

    task = write_task(folder / "task", "public")
    run = run_harbor([task], jobs_dir=folder / "jobs", agent="nop", base=base, n_attempts=trials)
    return run.wall_seconds / trials


def _load() -> float:
    try:
        return float(Path("/proc/loadavg").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return float("nan")


def markdown(results: list[dict]) -> str:
    lines = [
        "# Harbor agents through the bridge: harness cost (benchmarks/bench_agent_adapters.py)",
        "",
        "Agents that do nothing on a trivial task, one trial at a time; medians of per-trial "
        "wall time. external = an exec-protocol agent in the project's Python that says done; "
        "bridge = Harbor's nop through agents/harbor_agent/bridge.py as the pipeline runs it "
        "(rows with a first-trial time: a child forked per trial from the shard's warm bridge "
        "process, `fork_server: true`; its start, Harbor's import, is paid once per shard by "
        "the first trial, timed apart); bridge fresh = the bridge started afresh for every "
        "trial; harbor = `harbor run` of Harbor's nop (job wall time / trials). Load: the 1-min "
        f"load average during the run (median [min, max]). Goal: bridge / external ≤ {GOAL:g}.",
        "",
        "| date | CPU | load (1 min) | trials/side | external s | bridge s | ratio | bridge "
        "first trial s | bridge fresh s | fresh ratio | external agent phase s | bridge agent "
        "phase s | harbor run s/trial |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]

    def num(value: float | None) -> str:
        return "—" if value is None else f"{value:.2f}"

    for r in results:
        load = f"{r['load_average_1m']:.1f}"
        if "load_average_1m_range" in r:
            low, high = r["load_average_1m_range"]
            load += f" [{low:.1f}, {high:.1f}]"
        # rows before the fork server: their bridge was a fresh start
        fork = "bridge_first_trial_s" in r
        fresh = r.get("bridge_fresh_s_per_trial_median") if fork else r["bridge_s_per_trial_median"]
        lines.append(
            f"| {r['date']} | {r['cpu_model']} | {load} | {r['trials_per_side']} | "
            f"{num(r['external_s_per_trial_median'])} | {num(r['bridge_s_per_trial_median'])} | "
            f"{num(r['cost_ratio'])} | {num(r.get('bridge_first_trial_s'))} | "
            f"{num(fresh)} | "
            f"{num(r.get('cost_ratio_fresh') if fork else r['cost_ratio'])} | "
            f"{num(r['external_agent_phase_s_median'])} | "
            f"{num(r['bridge_agent_phase_s_median'])} | "
            f"{num(r['harbor_run_s_per_trial'])} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=12, help="trials per side")
    parser.add_argument("--rounds", type=int, default=4, help="alternating rounds")
    parser.add_argument("--harbor-trials", type=int, default=4, help="0: skip harbor run")
    parser.add_argument("--out", help="write <out>.json and <out>.md (appending a row)")
    args = parser.parse_args(argv)
    result = measure(args.trials, args.rounds, args.harbor_trials)
    results = [result]
    if args.out:
        previous = Path(f"{args.out}.json")
        if previous.exists():
            results = json.loads(previous.read_text()) + results
        previous.write_text(json.dumps(results, indent=2) + "\n")
        Path(f"{args.out}.md").write_text(markdown(results))
    print(markdown([result]))
    return 0 if result["cost_ratio"] <= GOAL else 1


if __name__ == "__main__":
    sys.exit(main())
