#!/usr/bin/env python
"""Analysis + report of a finished run against the time to read its trials, before and after.

In a workspace the pipeline benchmark kept (``bench_pipeline.py --keep``), reruns every job
of the analysis and report stages (``snakemake --forcerun`` of their rules; the trials and
scores untouched: ``--rerun-triggers mtime``, and a dry run first checks that no trial or
scoring job is planned) and times each job exactly: a ``sitecustomize`` on ``PYTHONPATH``
records, in every job process (a ``.snakemake/scripts/tmp*.<rule>.py`` script), the process's
creation time, its exit time and its peak RSS. The baseline is a fresh process that reads the
run's score shards (:func:`bench_pipeline.read_cost`: interpreter, imports and the read, what
any job that reads them pays) and the read alone in a running process.

``--baseline TREE`` (a checkout of the code before a change) alternates the workspace's
``src/`` between that tree's and this checkout's, ``--repeat`` times each, so before and after
see the same machine. Writes ``<out>/<name>.{md,json}``.

    git worktree add /tmp/before HEAD~1
    python benchmarks/bench_analysis.py /tmp/evalnoise-bench-local-100000-a1-XXXX/ws \
        --baseline /tmp/before --repeat 3
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_pipeline import (
    OUT,
    ROOT,
    STAGES,
    in_process_jobs,
    job_counts,
    machine,
    read_cost,
    snakemake_bin,
    tool_env,
)
from pipeline_helpers import ignore_caches, no_slurm_probe

#: The rules whose jobs are the analysis and report stages; Snakemake also reruns what
#: depends on them (the manifest, the checks). A tree's workflow has some of them: one
#: ``analyze_group`` per group, or (a tree of before it) ``analyze``, ``convergence``,
#: ``budget`` and ``judge_quality``.
RULES = (
    "analyze_group",
    "analyze",
    "convergence",
    "budget",
    "judge_quality",
    "compare",
    "attribution",
    "summarize",
    "report",
)
#: What a tree brings to the workspace: its package and its workflow (rules, scripts and the
#: workflow profile change together with the package).
TREE_FILES = ("src", "rules", "scripts", "profiles", "Snakefile")
#: Rules a forced rerun of the analysis must never plan.
UPSTREAM = ("sample_tasks", "build_image", "canary", "run_trials", "score", "judge")

#: What every analysis job's process runs before its own work: Snakemake's script preamble
#: and the pipeline's stage functions (pandas, NumPy, the statistics).
_JOB_FLOOR = (
    "import pickle; from snakemake.logging import logger; "
    "from snakemake.iocontainers import Snakemake; "
    "import evalnoise.pipeline.stages, evalnoise.pipeline.collect"
)

_SITECUSTOMIZE = r"""
import os, re, sys
_m = re.search(r"\.snakemake/scripts/tmp[^/.]*\.(\w+)\.py$", sys.argv[0] if sys.argv else "")
if _m and os.environ.get("EVALNOISE_JOB_TIMES"):
    import atexit, json, resource, time
    _site = time.time()
    # the process's age from its start time in clock ticks since boot, against
    # CLOCK_BOOTTIME (ns): /proc/stat's btime is whole seconds, off by up to 1 s
    with open(f"/proc/{os.getpid()}/stat") as f:
        _ticks = int(f.read().rsplit(")", 1)[1].split()[19])
    _age = time.clock_gettime(time.CLOCK_BOOTTIME) - _ticks / os.sysconf("SC_CLK_TCK")

    def _record():
        row = {"rule": _m.group(1), "pid": os.getpid(), "start": _site - _age, "site": _site,
               "end": time.time(),
               "maxrss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}
        with open(os.path.join(os.environ["EVALNOISE_JOB_TIMES"], f"{os.getpid()}.json"), "w") as f:
            json.dump(row, f)

    atexit.register(_record)
"""


def use_tree(ws: Path, tree: Path) -> None:
    """The workspace's package and workflow become ``tree``'s (:data:`TREE_FILES`)."""
    for name in TREE_FILES:
        if (ws / name).is_dir():
            shutil.rmtree(ws / name)
            shutil.copytree(tree / name, ws / name, ignore=ignore_caches)
        else:
            shutil.copy2(tree / name, ws / name)


def workflow_rules(ws: Path) -> set[str]:
    """The names of the rules the workspace's workflow defines."""
    names = set()
    for path in [ws / "Snakefile", *(ws / "rules").glob("*.smk")]:
        names.update(re.findall(r"^(?:rule|checkpoint)\s+(\w+)\s*:", path.read_text(), re.M))
    return names


def forced_rerun(ws: Path, env: dict[str, str], cores: int) -> tuple[list[str], dict[str, int]]:
    """The command that reruns the analysis and report jobs and what it plans, checked by a
    dry run to touch no trial or score: the rerun triggers are modification times only, as
    the workspace's package may be another tree's (a changed ``code_version`` of the runner
    must not rerun the trials)."""
    command = [snakemake_bin(), "--cores", str(cores), "--rerun-triggers", "mtime"]
    command += ["--forcerun", *(r for r in RULES if r in workflow_rules(ws))]
    dry = subprocess.run([*command, "-n"], cwd=ws, env=env, capture_output=True, text=True)
    if dry.returncode != 0:
        raise SystemExit(f"snakemake -n failed:\n{dry.stderr[-3000:]}")
    planned = job_counts(dry.stdout + dry.stderr)
    upstream = {r: planned[r] for r in UPSTREAM if planned.get(r)}
    if upstream:
        raise SystemExit(f"a forced rerun of the analysis would also run {upstream}: stopped")
    return command, planned


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def rerun(ws: Path, env: dict[str, str], cores: int) -> dict[str, Any]:
    """One forced rerun of the analysis and report: per job, its rule, seconds and peak RSS
    (a job in its own process), or its rule, seconds and thread CPU (a job inside Snakemake's
    process); and the CPU seconds of the whole ``snakemake`` command (its process and every
    job process), from which the DAG build is taken off as the dry run's CPU."""
    command, planned = forced_rerun(ws, env, cores)
    cpu0 = _children_cpu()
    subprocess.run([*command, "-n"], cwd=ws, env=env, capture_output=True, check=True)
    dry_cpu = _children_cpu() - cpu0
    times = Path(tempfile.mkdtemp(prefix="evalnoise-job-times-"))
    env = dict(env, EVALNOISE_JOB_TIMES=str(times))
    t0 = time.time()
    cpu0 = _children_cpu()
    done = subprocess.run(command, cwd=ws, env=env, capture_output=True, text=True)
    command_cpu = _children_cpu() - cpu0
    wall = time.time() - t0
    if done.returncode != 0:
        raise SystemExit(f"snakemake failed ({done.returncode}):\n{done.stderr[-3000:]}")
    jobs = [json.loads(p.read_text()) for p in sorted(times.glob("*.json"))]
    jobs += in_process_jobs(ws, t0)
    shutil.rmtree(times)
    timed: dict[str, int] = {}
    for j in jobs:
        timed[j["rule"]] = timed.get(j["rule"], 0) + 1
    # every planned job but the target rule (no process) ran a script and was timed
    missed = {r: n for r, n in planned.items() if r not in ("all", "total") and timed.get(r) != n}
    if missed:
        raise SystemExit(f"planned jobs not timed: {missed} (timed: {timed})")
    mine = [j for j in jobs if STAGES.get(j["rule"]) in ("analysis", "report")]
    return {
        "wall_s": round(wall, 2),
        "command_cpu_s": round(command_cpu, 2),
        "dry_run_cpu_s": round(dry_cpu, 2),
        "in_process_jobs": sum(1 for j in mine if j.get("in_process")),
        "tail_s": round(max(j["end"] for j in mine) - min(j["start"] for j in mine), 2),
        "busy_s": round(sum(j["end"] - j["start"] for j in mine), 2),
        "jobs": len(mine),
        "per_job": sorted(
            (
                {
                    "rule": j["rule"],
                    "seconds": round(j["end"] - j["start"], 3),
                    "in_process": bool(j.get("in_process")),
                    # an in-process job's thread CPU (its log's last line); None for a process
                    "cpu_s": j.get("cpu_s"),
                    "peak_rss_mb": (
                        None if j["maxrss_kb"] is None else round(j["maxrss_kb"] / 1024, 1)
                    ),
                }
                for j in mine
            ),
            key=lambda j: (j["rule"], -j["seconds"]),
        ),
        "other_jobs": sorted(j["rule"] for j in jobs if j not in mine),
    }


def job_floor(ws: Path, env: dict[str, str], repeat: int = 5) -> float:
    """Median wall time of a fresh process that starts the way every analysis job starts
    (interpreter, Snakemake's preamble, the stage functions' imports) and does nothing."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", _JOB_FLOOR], cwd=ws, env=env, check=True)
        times.append(time.perf_counter() - t0)
    return round(statistics.median(times), 3)


def summary(runs: list[dict[str, Any]], read: dict[str, Any], floor: float) -> dict[str, Any]:
    """Medians over the repeats; the ratios to the fresh-process read and to the read alone."""
    busy = statistics.median(r["busy_s"] for r in runs)
    tail = statistics.median(r["tail_s"] for r in runs)
    per_rule: dict[str, list[float]] = {}
    per_rule_cpu: dict[str, list[float]] = {}
    for r in runs:
        totals: dict[str, float] = {}
        cpu: dict[str, float] = {}
        for j in r["per_job"]:
            totals[j["rule"]] = totals.get(j["rule"], 0.0) + j["seconds"]
            if j.get("cpu_s") is not None:
                cpu[j["rule"]] = cpu.get(j["rule"], 0.0) + j["cpu_s"]
        for rule, s in totals.items():
            per_rule.setdefault(rule, []).append(s)
        for rule, s in cpu.items():
            per_rule_cpu.setdefault(rule, []).append(s)
    jobs = runs[0]["jobs"]
    # only a job in its own process pays a start; an in-process job's start is Snakemake's
    processes = jobs - runs[0].get("in_process_jobs", 0)
    beyond = busy - processes * floor
    command_cpu = statistics.median(r["command_cpu_s"] for r in runs)
    dry_cpu = statistics.median(r["dry_run_cpu_s"] for r in runs)
    rss = [j["peak_rss_mb"] for r in runs for j in r["per_job"] if j["peak_rss_mb"] is not None]
    return {
        "busy_s": round(busy, 2),
        "tail_s": round(tail, 2),
        "jobs": jobs,
        "busy_to_read_process": round(busy / read["process_s"], 1),
        "busy_to_jobs_x_read_process": round(busy / (jobs * read["process_s"]), 2),
        "tail_to_read_process": round(tail / read["process_s"], 1),
        "job_processes": processes,
        "job_floor_s": floor,
        "beyond_floor_s": round(beyond, 2),
        "beyond_floor_to_read_process": round(beyond / read["process_s"], 1),
        "command_cpu_s": round(command_cpu, 2),
        "dry_run_cpu_s": round(dry_cpu, 2),
        "beyond_dag_cpu_s": round(command_cpu - dry_cpu, 2),
        "beyond_dag_cpu_to_read_process": round((command_cpu - dry_cpu) / read["process_s"], 1),
        "per_rule_s": {k: round(statistics.median(v), 2) for k, v in sorted(per_rule.items())},
        "per_rule_thread_cpu_s": {
            k: round(statistics.median(v), 2) for k, v in sorted(per_rule_cpu.items())
        },
        "peak_rss_mb": max(rss) if rss else None,
    }


def markdown(doc: dict[str, Any]) -> str:
    read = doc["read"]
    m = doc["machine"]
    lines = [
        "# Analysis + report against reading the trials",
        "",
        f"Workspace `{doc['workspace']}`: {read['rows']:,} score rows. Machine: {m['cpu_model']}, "
        f"{m['cores']} cores, cgroup {m['cgroup']}, Python {m['python']}. {doc['date']}.",
        f"Command: `{doc['command']}`.",
        "",
        f"Reading the score shards: {read['read_s']:.3f} s in a running process; "
        f"{read['process_s']:.3f} s as a fresh process (interpreter, imports and the read: "
        "the least any job that reads them pays).",
        "",
        "Job time = sum over the analysis and report jobs of each job's life: a job in its "
        "own process from the process's creation to its exit, a job inside Snakemake's "
        "process (`run:` + in_process) from its script's start to its end, as its log's last "
        "line says; tail = first job start to last job end. Medians of "
        f"{doc['repeat']} forced reruns per variant, the variants alternating. Start of a job "
        "= a fresh process that starts as every analysis job in its own process does "
        "(interpreter, Snakemake's script preamble, the stage functions' imports) and stops: "
        "what each such job pays before its own work; beyond the starts = job time − job "
        "processes × that. Command CPU = CPU seconds of the whole `snakemake` command (its "
        "process and every job process); beyond the DAG = that − the CPU of its dry run "
        "(parsing the workflow, building the DAG), so the one-off imports in Snakemake's "
        "process that in-process jobs lean on are counted.",
        "",
        "| variant | jobs (own process) | job time s | tail s | job time / read (fresh process) "
        "| start of a job s | job time beyond the starts s | that / read (fresh process) "
        "| command CPU s | beyond the DAG CPU s | that / read (fresh process) "
        "| peak RSS of a job MB |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, v in doc["variants"].items():
        s = v["summary"]
        rss = "—" if s["peak_rss_mb"] is None else f"{s['peak_rss_mb']:.0f}"
        lines.append(
            f"| {name} | {s['jobs']} ({s.get('job_processes', s['jobs'])}) | {s['busy_s']:.1f} "
            f"| {s['tail_s']:.1f} | {s['busy_to_read_process']:.1f} × | {s['job_floor_s']:.2f} "
            f"| {s['beyond_floor_s']:.1f} | {s['beyond_floor_to_read_process']:.1f} × "
            f"| {s['command_cpu_s']:.1f} | {s['beyond_dag_cpu_s']:.1f} "
            f"| {s['beyond_dag_cpu_to_read_process']:.1f} × | {rss} |"
        )
    rules = sorted({r for v in doc["variants"].values() for r in v["summary"]["per_rule_s"]})
    names = list(doc["variants"])
    lines += [
        "",
        "Job time per rule (s, summed over the rule's jobs, median):",
        "",
        "| rule | " + " | ".join(names) + " |",
        "|---|" + "---:|" * len(names),
    ]
    for rule in rules:
        cells = [f"{doc['variants'][n]['summary']['per_rule_s'].get(rule, 0):.2f}" for n in names]
        lines.append(f"| {rule} | " + " | ".join(cells) + " |")
    cpu_rules = sorted(
        {r for v in doc["variants"].values() for r in v["summary"].get("per_rule_thread_cpu_s", {})}
    )
    if cpu_rules:
        lines += [
            "",
            "CPU per rule of the jobs inside Snakemake's process (s, their threads' CPU summed "
            "over the rule's jobs, median; a child process a job starts is in the command CPU, "
            "not here):",
            "",
            "| rule | " + " | ".join(names) + " |",
            "|---|" + "---:|" * len(names),
        ]
        for rule in cpu_rules:
            cells = [
                f"{doc['variants'][n]['summary'].get('per_rule_thread_cpu_s', {}).get(rule, 0):.2f}"
                for n in names
            ]
            lines.append(f"| {rule} | " + " | ".join(cells) + " |")
    if doc.get("notes"):
        lines += ["", "Notes:", "", *(f"- {note}" for note in doc["notes"])]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("workspace", type=Path, help="a workspace kept by bench_pipeline --keep")
    parser.add_argument("--baseline", type=Path, help="a tree of the code before a change")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--name", default="analysis")
    parser.add_argument("--note", action="append", default=[])
    args = parser.parse_args(argv)
    ws = args.workspace.resolve()
    if not (ws / "Snakefile").is_file() or not (ws / "results" / "report").is_dir():
        parser.error(f"{ws}: not a workspace of a finished run (no Snakefile or results/report)")
    if args.baseline and not (args.baseline / "src" / "evalnoise").is_dir():
        parser.error(f"{args.baseline}: no src/evalnoise (not a checkout of this project)")

    hook = Path(tempfile.mkdtemp(prefix="evalnoise-job-times-hook-"))
    (hook / "sitecustomize.py").write_text(_SITECUSTOMIZE)
    env = tool_env(ws, no_slurm_probe())
    env["PYTHONPATH"] = os.pathsep.join([str(ws / "src"), str(hook)])
    variants = {"this checkout": ROOT}
    if args.baseline:
        variants = {"baseline": args.baseline.resolve(), **variants}
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in variants}
    floors: dict[str, list[float]] = {name: [] for name in variants}
    for i in range(args.repeat):
        for name, tree in variants.items():
            use_tree(ws, tree)
            floors[name].append(job_floor(ws, env))
            runs[name].append(rerun(ws, env, args.cores))
            print(f"[{name} {i + 1}/{args.repeat}] {runs[name][-1]['busy_s']} s", file=sys.stderr)
    use_tree(ws, ROOT)
    read = read_cost(ws, env)
    doc = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "workspace": ws.parent.name,
        "command": " ".join([Path(sys.argv[0]).name, *(argv or sys.argv[1:])]),
        "machine": machine(),
        "repeat": args.repeat,
        "read": read,
        "variants": {
            name: {
                "tree": str(tree),
                "summary": summary(runs[name], read, statistics.median(floors[name])),
                "runs": runs[name],
            }
            for name, tree in variants.items()
        },
        "notes": args.note,
        "load_average_after": os.getloadavg(),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{args.name}.json").write_text(json.dumps(doc, indent=2) + "\n")
    (args.out / f"{args.name}.md").write_text(markdown(doc))
    print(markdown(doc))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
