#!/usr/bin/env python
"""Does one long ``run_shard`` call get slower per trial as it goes? (issue 21, item 9)

One :func:`evalnoise.runner.run_shard` call runs ``--trials`` trials of the instant agent
(``benchmarks/agents/instant``) on the local backend at ``--concurrency``. Each trial's
journal append is timestamped (a thin wrapper around the shard module's ``_Journal.append``,
the moment a trial counts as done), and the call is cut into windows of ``--window``
trials in the order they were journaled. A window's cost is its wall time divided by its
trials; the figure of merit is the ratio of the **last window's cost to the first's** (1.0:
flat; the first window is measured from the first trial's end, so process start and the
first fork are outside it).

Two sides, each in a fresh Python process, one after the other on the same machine:

- **before**: ``src/evalnoise/runner/shard.py`` as of ``--before`` (a git revision; by
  default the last commit before the fix), loaded from ``git show`` under another module
  name, everything else from this checkout;
- **after**: this checkout's ``shard.py``.

Each side also reports, from inside the process, the futures handed to the thread pool
but not finished, sampled at every journal append (``in_flight`` max/at the first append).
Writes ``benchmarks/results/<name>.{md,json}``.

    python benchmarks/bench_runner_growth.py --trials 50000 --concurrency 2 --window 1000
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
AGENT = Path(__file__).resolve().parent / "agents" / "instant" / "agent.py"
OUT = ROOT / "benchmarks" / "results"
#: the last commit whose shard.py submits every trial up front (issue 21, item 9)
BEFORE = "6931e18"
SHARD = "src/evalnoise/runner/shard.py"


def load_shard_module(rev: str | None, scratch: Path):
    """The shard module of this checkout (``rev`` None) or of git revision ``rev``."""
    if rev is None:
        import evalnoise.runner.shard as module

        return module
    source = subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{rev}:{SHARD}"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    path = scratch / "shard_before.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("evalnoise_shard_before", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def tasks_frame(n_tasks: int):
    import pandas as pd

    n = n_tasks
    return pd.DataFrame(
        {
            "task_id": [f"t{i:05d}" for i in range(n)],
            "question": [f"What is {i} + {i % 7}?" for i in range(n)],
            "answer": [str(i + i % 7) for i in range(n)],
            "level": ["1"] * n,
            "cpus": [1.0] * n,
            "memory_mb": [256] * n,
            "time_limit_s": [60.0] * n,
            "sampling_seed": [0] * n,
        }
    )


def side(rev: str | None, trials: int, trials_per_task: int, concurrency: int) -> dict[str, Any]:
    """One long run_shard call in this process: a timestamp per journaled trial."""
    with tempfile.TemporaryDirectory(prefix="evalnoise-bench-growth-") as tmp:
        scratch = Path(tmp)
        module = load_shard_module(rev, scratch)
        n_tasks = -(-trials // trials_per_task)
        tasks = tasks_frame(n_tasks)
        stamps: list[float] = []
        main_cpu: list[float] = []
        process_cpu: list[float] = []
        in_flight: list[int] = []
        examined: list[int] = []
        original_append = module._Journal.append
        original_submit = module.cf.ThreadPoolExecutor.submit
        original_wait = module.cf.wait
        pending = [0]
        looked_at = [0]
        gc_seconds, gc_started = [0.0], [0.0]
        gc_total: list[float] = []
        rss_mb: list[float] = []
        page_mb = os.sysconf("SC_PAGE_SIZE") / 2**20

        def on_gc(phase: str, _info: dict) -> None:
            if phase == "start":
                gc_started[0] = time.perf_counter()
            else:
                gc_seconds[0] += time.perf_counter() - gc_started[0]

        lock = threading.Lock()

        def wait(fs, *args, **kwargs):
            looked_at[0] += len(fs)
            return original_wait(fs, *args, **kwargs)

        def done(_future) -> None:
            with lock:
                pending[0] -= 1

        def submit(pool, fn, /, *args, **kwargs):
            future = original_submit(pool, fn, *args, **kwargs)
            with lock:
                pending[0] += 1
            future.add_done_callback(done)
            return future

        def append(journal, line: str) -> None:
            original_append(journal, line)
            stamps.append(time.monotonic())
            main_cpu.append(time.thread_time())  # the shard's loop runs in this thread
            process_cpu.append(time.process_time())  # every thread of this process
            in_flight.append(pending[0])
            examined.append(looked_at[0])
            gc_total.append(gc_seconds[0])
            with open("/proc/self/statm", "rb") as statm:
                rss_mb.append(int(statm.read().split()[1]) * page_mb)

        module._Journal.append = append
        module.cf.ThreadPoolExecutor.submit = submit
        module.cf.wait = wait
        gc.callbacks.append(on_gc)
        load_start = os.getloadavg()[0]
        try:
            t0 = time.monotonic()
            result = module.run_shard(
                tasks,
                {"name": "instant", "command": [sys.executable, "-I", "-S", str(AGENT)]},
                "1x",
                list(range(trials_per_task)),
                0,
                "as_incorrect",
                "local",
                scratch / "shard.journal.jsonl",
                scratch / "shard.parquet",
                concurrency=concurrency,
                progress=False,
            )
            wall = time.monotonic() - t0
        finally:
            module._Journal.append = original_append
            module.cf.ThreadPoolExecutor.submit = original_submit
            module.cf.wait = original_wait
            gc.callbacks.remove(on_gc)
    if result.statuses != {"ok": n_tasks * trials_per_task}:
        raise RuntimeError(f"non-ok trials: {result.statuses}")
    # the header is the first append; the trials follow
    return {
        "rev": rev or "working tree",
        "load_average_1min": [round(load_start, 2), round(os.getloadavg()[0], 2)],
        "trials": result.trials,
        "wall_s": wall,
        "stamps": [s - t0 for s in stamps[1:]],
        "main_cpu": main_cpu[1:],
        "process_cpu": process_cpu[1:],
        "in_flight": in_flight[1:],
        "examined": examined[1:],
        "gc": gc_total[1:],
        "rss_mb": rss_mb[1:],
    }


def windows(values: list[float], size: int, scale: float = 1000.0) -> list[float]:
    """Per trial, in consecutive windows of ``size`` journaled trials: the growth of
    ``values`` (a reading taken at each append: a clock, a CPU time, a count) over the window
    divided by its trials, times ``scale``. The first window starts at the first trial's
    append (so it spans ``size - 1`` trials); a last partial window is dropped."""
    ends = list(range(size - 1, len(values), size))
    starts = [0, *ends[:-1]]
    return [scale * (values[b] - values[a]) / (b - a) for a, b in zip(starts, ends, strict=True)]


#: (key in the raw data, scale, label)
SERIES = (
    ("stamps", 1000.0, "wall ms per trial"),
    ("main_cpu", 1000.0, "CPU ms per trial, the shard's thread"),
    ("process_cpu", 1000.0, "CPU ms per trial, the runner's process (all threads, no agents)"),
    ("examined", 1.0, "futures handed to cf.wait per trial"),
    ("gc", 1000.0, "garbage collection ms per trial"),
)


def summarize(raw: dict[str, Any], window: int) -> dict[str, Any]:
    series = {key: windows(raw[key], window, scale) for key, scale, _ in SERIES}
    wall = series["stamps"]
    return {
        "rev": raw["rev"],
        "load_average_1min": raw["load_average_1min"],
        "trials": raw["trials"],
        "wall_s": round(raw["wall_s"], 2),
        "ms_per_trial": round(1000 * raw["wall_s"] / raw["trials"], 2),
        "first_window_ms": round(wall[0], 2),
        "last_window_ms": round(wall[-1], 2),
        "ratio_last_first": round(wall[-1] / wall[0], 3),
        "median_window_ms": round(statistics.median(wall), 2),
        "max_window_ms": round(max(wall), 2),
        "in_flight_first": raw["in_flight"][0],
        "in_flight_max": max(raw["in_flight"]),
        "windows": {key: [round(v, 3) for v in values] for key, values in series.items()},
        "rss_mb_at_window_end": [
            round(raw["rss_mb"][end], 1) for end in range(window - 1, len(raw["rss_mb"]), window)
        ],
    }


def wait_cost(pending: int, repeat: int = 10) -> float:
    """ms of one ``cf.wait(FIRST_COMPLETED)`` over ``pending`` futures of which one is done:
    what the old shard paid per completion with that many trials left."""
    import concurrent.futures as cf

    futures = [cf.Future() for _ in range(pending)]
    futures[-1].set_result(None)
    t0 = time.perf_counter()
    for _ in range(repeat):
        cf.wait(futures, return_when=cf.FIRST_COMPLETED)
    return 1000 * (time.perf_counter() - t0) / repeat


def machine() -> dict[str, Any]:
    from evalnoise.machine import cpu_model

    return {
        "cpu_model": cpu_model(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "load_average_start": [round(x, 2) for x in os.getloadavg()],
    }


def markdown(doc: dict[str, Any]) -> str:
    m = doc["machine"]
    lines = [
        "# One long run_shard call, per-trial cost over the call (bench_runner_growth.py)",
        "",
        f"{doc['date']}; {m['cpu_model']}, {m['cores']} cores, Python {m['python']}, load "
        f"average at start {m['load_average_start']}. `{doc['command']}`",
        "",
        f"One `run_shard` call, {doc['trials']} trials of the instant agent on the local backend"
        f" at concurrency {doc['concurrency']} ({doc['trials_per_task']} trials per task), "
        f"cut into windows of {doc['window']} trials in journal order. *before*: shard.py of "
        f"`{doc['before']}` (every trial submitted to the pool up front); *after*: this "
        "checkout's (bounded submission). In flight = futures submitted and not finished, "
        "sampled at each journal append.",
        "",
        "| side | wall s | ms/trial | first window ms | last window ms | last/first |"
        " median window ms | max window ms | in flight at first append | max in flight |"
        " load avg (1 min) start → end |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for name, s in doc["sides"].items():
        lines.append(
            f"| {name} | {s['wall_s']} | {s['ms_per_trial']} | {s['first_window_ms']} | "
            f"{s['last_window_ms']} | **{s['ratio_last_first']}** | {s['median_window_ms']} | "
            f"{s['max_window_ms']} | {s['in_flight_first']} | {s['in_flight_max']} | "
            f"{s['load_average_1min'][0]} → {s['load_average_1min'][1]} |"
        )
    sides = doc["sides"]
    if "wait_ms_by_pending" in doc:
        lines += [
            "",
            "One `cf.wait(..., FIRST_COMPLETED)` over N futures, one of them done (ms): "
            + ", ".join(f"N = {n}: {ms:.3f}" for n, ms in doc["wait_ms_by_pending"].items())
            + ".",
        ]
    if len(sides) == 2:
        before, after = (sides[k] for k in ("before", "after"))
        lines += [
            "",
            "after/before, ms per trial over the whole call: "
            f"{after['ms_per_trial'] / before['ms_per_trial']:.3f}; in the first window: "
            f"{after['first_window_ms'] / before['first_window_ms']:.3f}.",
        ]
    for key, _, label in SERIES:
        lines += ["", f"Per window of {doc['window']} trials, {label}:", ""]
        names = list(sides)
        lines.append("| window | " + " | ".join(names) + " |")
        lines.append("|---:|" + "---:|" * len(names))
        n = min(len(s["windows"][key]) for s in sides.values())
        for i in range(n):
            cells = " | ".join(f"{sides[name]['windows'][key][i]:.2f}" for name in names)
            lines.append(f"| {i + 1} | {cells} |")
    lines += ["", "Resident memory of the runner's process at each window's end, MB:", ""]
    for name, side_doc in sides.items():
        lines.append(
            f"- {name}: " + ", ".join(f"{v:.0f}" for v in side_doc["rss_mb_at_window_end"])
        )
    if doc.get("notes"):
        lines += ["", "## Notes", ""]
        for note in doc["notes"]:
            lines += [note, ""]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=20000)
    parser.add_argument("--trials-per-task", type=int, default=10)
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--window", type=int, default=1000)
    parser.add_argument("--before", default=BEFORE, help="git revision of the old shard.py")
    parser.add_argument("--sides", default="before,after", help="which sides to run, in this order")
    parser.add_argument("--name", default=None, help="write benchmarks/results/<name>.{md,json}")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--note", action="append", default=[], help="a paragraph for the notes")
    parser.add_argument(
        "--renote", action="store_true", help="only rewrite --name's notes (from its JSON)"
    )
    parser.add_argument("--side-worker", choices=("before", "after"), help=argparse.SUPPRESS)
    parser.add_argument("--raw", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.trials % args.trials_per_task:
        parser.error("--trials must be a multiple of --trials-per-task")

    if args.renote:  # rewrite <name>.md from <name>.json with these notes, run nothing
        path = args.out / f"{args.name}.json"
        doc = json.loads(path.read_text(encoding="utf-8"))
        doc["notes"] = args.note
        path.write_text(json.dumps(doc, indent=2) + "\n")
        (args.out / f"{args.name}.md").write_text(markdown(doc))
        return 0
    if args.side_worker:  # one side, in a fresh process
        rev = args.before if args.side_worker == "before" else None
        raw = side(rev, args.trials, args.trials_per_task, args.concurrency)
        args.raw.write_text(json.dumps(raw), encoding="utf-8")
        return 0

    doc: dict[str, Any] = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "command": "python benchmarks/bench_runner_growth.py "
        + " ".join(argv if argv is not None else sys.argv[1:]),
        "machine": machine(),
        "trials": args.trials,
        "trials_per_task": args.trials_per_task,
        "concurrency": args.concurrency,
        "window": args.window,
        "before": args.before,
        "sides": {},
        "notes": args.note,
        "wait_ms_by_pending": {n: round(wait_cost(n), 3) for n in (4, 1000, 3000, 10000, 50000)},
    }
    with tempfile.TemporaryDirectory(prefix="evalnoise-bench-growth-") as tmp:
        for name in args.sides.split(","):
            raw_path = Path(tmp) / f"{name}.json"
            subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--side-worker",
                    name,
                    "--raw",
                    str(raw_path),
                    "--trials",
                    str(args.trials),
                    "--trials-per-task",
                    str(args.trials_per_task),
                    "--concurrency",
                    str(args.concurrency),
                    "--before",
                    args.before,
                ],
                check=True,
            )
            summary = summarize(json.loads(raw_path.read_text()), args.window)
            doc["sides"][name] = summary
            print(
                f"{name}: {summary['ms_per_trial']} ms/trial, first window "
                f"{summary['first_window_ms']} ms, last {summary['last_window_ms']} ms, "
                f"last/first {summary['ratio_last_first']}, max in flight "
                f"{summary['in_flight_max']}",
                flush=True,
            )
    if args.name:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / f"{args.name}.json").write_text(json.dumps(doc, indent=2) + "\n")
        (args.out / f"{args.name}.md").write_text(markdown(doc))
    print(markdown(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
