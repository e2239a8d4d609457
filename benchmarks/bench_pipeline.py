#!/usr/bin/env python
"""The whole pipeline at scale: what Snakemake costs around the trials.

For each scale (backend, trials, agents), in a scratch workspace (a copy of the project's
pipeline files, as tests/pipeline/pipeline_helpers.make_workspace makes one, without git or
DVC), with the instant agent of ``benchmarks/agents/instant`` (a real agent program that
answers at once, no model: a container per trial on the Docker backend, a subprocess on the
local one), it measures:

- the DAG: Snakemake's job count and the wall time of ``snakemake -n`` (the DAG build);
- the pipeline: wall time of ``snakemake`` end to end (sampling, image, canary, trials,
  scoring, analysis, report, manifest), and per stage the span (first job start → last job
  end), the summed job time and the peak RSS (largest job, and the stage's jobs at once),
  from a psutil poll (every ``--poll`` s) of Snakemake's process tree: a job is the
  ``.snakemake/scripts/tmp*.<script>.py`` process that runs its script (the rules declare
  no ``benchmark:``), its children (local agents) excluded; Snakemake's own process too;
- the runner alone on the same trials: :func:`evalnoise.runner.run_shard` called directly,
  one call per agent × resource profile over all its tasks and trials, one after the other
  at the pipeline's concurrency (a ``run_trials`` job runs 2 trials at once and, with 2
  cores, one such job runs at a time), in a fresh process; the same backend, image, agent
  spec and resource profiles;
- the size of ``results/``.

The task count is trials / (agents × profiles × ``--trials-per-task``). Shards follow
``shards.target_seconds`` (``--target-seconds``; 0 = the default plan, block_size ×
task_chunk_size) with ``shards.trial_seconds`` = ``--trial-seconds`` (default: per backend).
The judge stage is off (it would need the model server); everything else is the default
config. Writes ``benchmarks/results/pipeline.{md,json}`` (``--out``, ``--name``) and a chart
of cost per trial against trials (``pipeline.svg``); ``--profile-dag`` also writes a cProfile
of ``snakemake -n`` at the largest scale (``<out>/profiles/dag-<scale>-<date>.txt``).

    python benchmarks/bench_pipeline.py --scale docker:1000:1 --scale local:10000:1
    python benchmarks/bench_pipeline.py --issue-grid          # every scale of issue 13

DAG builds alone (``--dag-only``) on a shared machine: ``--repeat N`` times each build N
times and reports the median; ``--baseline DIR`` builds the same scale in a second workspace
made from another tree (a checkout of the code before a change) and alternates the two, so
before and after see the same load; ``--cold-cache`` removes the workspaces'
``.snakemake/evalnoise/`` (the derived ``code_version`` sets, :mod:`evalnoise.provenance`)
before every timed build, as after an edit of the package or the rules.

    python benchmarks/bench_pipeline.py --dag-only --repeat 5 --baseline /tmp/before \
        --scale local:100000:10 --scale local:100000:1 --name dag_build

``scontrol``: where the Slurm client is installed but no controller runs, Snakemake's Slurm
executor plugin waits on ``scontrol show config`` at every start. Unless ``--slurm-probe``
is given, the runs' PATH starts with a ``scontrol`` that fails at once; the first DAG build of
each scale is also timed without that stand-in (``dag_build_s_with_probe``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psutil
import yaml

ROOT = Path(__file__).resolve().parents[1]
# the tests' workspace helpers: one way to copy the project into a scratch workspace
sys.path.insert(0, str(ROOT / "tests" / "pipeline"))
from pipeline_helpers import copy_project, ignore_caches  # noqa: E402

AGENT_DIR = Path(__file__).resolve().parent / "agents" / "instant"
OUT = ROOT / "benchmarks" / "results"
PROJECT_FILES = ("Snakefile", "rules", "scripts", "config", "profiles", "src", "agents", "images")
#: Expected seconds per trial (shards.trial_seconds) when --trial-seconds is not given: the
#: runner's wall time per trial with the instant agent, 2 at once, on an idle 2-core machine
#: (benchmarks/results/comment-measurements.md), so a shard of target_seconds lasts about
#: that. A trial's ``duration_s`` is less: it leaves out container create and removal, and
#: two trials run at once.
TRIAL_SECONDS = {"docker": 0.15, "local": 0.02}
#: Script of a job → stage of the table.
STAGES = {
    "sample_tasks": "sampling",
    "build_image": "setup",
    "canary": "setup",
    "run_trials": "trials",
    "score": "scoring",
    "judge": "scoring",
    "analyze_group": "analysis",
    # the rules analyze_group replaced (a --baseline tree of before it)
    "analyze": "analysis",
    "compare": "analysis",
    "convergence": "analysis",
    "budget": "analysis",
    "attribution": "analysis",
    "judge_quality": "analysis",
    "summarize": "analysis",
    "report": "report",
    "manifest": "manifest",
    "record_config": "other",
    "check": "other",
}
STAGE_ORDER = (
    "sampling",
    "setup",
    "trials",
    "scoring",
    "analysis",
    "report",
    "manifest",
    "other",
    "snakemake",
)
ISSUE_GRID = [
    ("docker", 1000),
    ("docker", 5000),
    ("local", 10000),
    ("local", 100000),
]
_SCRIPT = re.compile(r"\.snakemake/scripts/tmp[^/.]*\.(\w+)\.py$")
PYTHON = os.path.realpath(sys.executable)  # a pyenv shim would add a shell to every trial


@dataclass(frozen=True)
class Scale:
    backend: str
    trials: int
    agents: int
    profiles: int = 2
    trials_per_task: int = 10

    @property
    def tasks(self) -> int:
        per_task = self.agents * self.profiles * self.trials_per_task
        if self.trials % per_task:
            raise ValueError(f"{self.trials} trials is not a multiple of {per_task}")
        return self.trials // per_task

    @property
    def label(self) -> str:
        return f"{self.backend}-{self.trials}-a{self.agents}"


# -- the workspace ------------------------------------------------------------------------


def bench_config(ws: Path, scale: Scale, target: float, trial_seconds: float) -> dict:
    """The default config, with the instant agents, cut to this scale."""
    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text(encoding="utf-8"))
    agent_py = str(ws / "benchmarks" / "agents" / "instant" / "agent.py")
    agents = {}
    for i in range(scale.agents):
        spec: dict[str, Any] = {"env": {"INSTANT_ID": i}}
        if scale.backend == "docker":
            spec["build"] = "benchmarks/agents/instant"
        else:
            spec["command"] = [PYTHON, "-I", "-S", agent_py]
        agents[f"instant{i}"] = spec
    profiles = {"1x": {}, "3x": {"memory_limit_factor": 3.0, "cpu_limit_factor": 3.0}}
    for extra in range(2, scale.profiles):
        profiles[f"{extra + 1}x"] = {
            "memory_limit_factor": extra + 1.0,
            "cpu_limit_factor": extra + 1.0,
        }
    config.update(
        backend=scale.backend,
        agents=agents,
        resource_profiles=dict(list(profiles.items())[: scale.profiles]),
        trials={"count": scale.trials_per_task, "block_size": max(1, scale.trials_per_task // 2)},
        shards={"target_seconds": target or None, "trial_seconds": trial_seconds},
    )
    config["benchmark"]["n"] = scale.tasks
    config["health"]["expected_failures"] = []
    config["scorer"]["judge"]["stage"] = False  # it needs the model server
    return config


def make_workspace(path: Path, config: dict, tree: Path | None = None) -> Path:
    """A workspace of this checkout's project files, or of ``tree``'s (``--baseline``)."""
    copy_project(path, PROJECT_FILES, root=tree or ROOT)
    shutil.copytree(AGENT_DIR, path / "benchmarks" / "agents" / "instant", ignore=ignore_caches)
    (path / "config" / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def tool_env(ws: Path, shim: Path | None) -> dict[str, str]:
    env = dict(os.environ)
    path = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["PATH"] = f"{shim}{os.pathsep}{path}" if shim else path
    env["PYTHONPATH"] = str(ws / "src")
    return env


def snakemake_bin() -> str:
    candidate = Path(sys.executable).with_name("snakemake")
    return str(candidate) if candidate.exists() else "snakemake"


def job_counts(text: str) -> dict[str, int]:
    """The 'Job stats' table of a Snakemake (dry) run as {rule: count}."""
    match = re.search(r"Job stats:\njob\s+count\n[- ]+\n(.*?)\ntotal\s+(\d+)", text, re.S)
    if not match:
        return {}
    counts = {line.split()[0]: int(line.split()[1]) for line in match.group(1).splitlines()}
    counts["total"] = int(match.group(2))
    return counts


# -- watching Snakemake's jobs ------------------------------------------------------------


@dataclass
class Proc:
    script: str
    first: float
    last: float
    rss: int = 0


#: the line :func:`evalnoise.pipeline.jobs.run_script` logs when an in-process job ends
_IN_PROCESS = re.compile(
    r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3}) INFO evalnoise: in-process job (\w+) done: "
    r"([\d.]+) s wall, ([\d.]+) s CPU",
    re.M,
)


def in_process_jobs(ws: Path, since: float) -> list[dict[str, Any]]:
    """The jobs that ran inside Snakemake's process since ``since`` (epoch s), read from the
    line each one's log ends with: rule, start, end, and the CPU seconds of its thread. They
    have no process of their own, so no peak RSS of their own."""
    jobs = []
    for log in (ws / "results" / "logs").rglob("*.log"):
        if log.stat().st_mtime < since:
            continue
        for m in _IN_PROCESS.finditer(log.read_text(encoding="utf-8", errors="replace")):
            end = (
                time.mktime(time.strptime(m.group(1), "%Y-%m-%d %H:%M:%S")) + int(m.group(2)) / 1e3
            )
            if end + 0.002 < since:
                continue
            jobs.append(
                {
                    "rule": m.group(3),
                    "start": end - float(m.group(4)),
                    "end": end,
                    "cpu_s": float(m.group(5)),
                    "maxrss_kb": None,
                    "in_process": True,
                }
            )
    return jobs


@dataclass
class Watcher:
    """Polls a process tree: every job process (by its script), its life and peak RSS."""

    root: int
    poll: float
    procs: dict[tuple[int, float], Proc] = field(default_factory=dict)
    concurrent: dict[str, int] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event)

    def _classify(self, proc: psutil.Process, jobs: set[int]) -> str | None:
        """The script a job's Python process runs; None for anything else: the shell
        Snakemake wraps it in, an agent, and a job's fork before it execs (same cmdline,
        a job as parent)."""
        try:
            cmdline = proc.cmdline()
            parent = proc.ppid()
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            return None
        if len(cmdline) < 2 or not Path(cmdline[0]).name.startswith("python"):
            return None
        if parent in jobs:
            return None
        match = _SCRIPT.search(cmdline[1])
        return match.group(1) if match else None

    def _sample(self) -> None:
        now = time.monotonic()
        try:
            root = psutil.Process(self.root)
            tree = [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            return
        at_once: dict[str, int] = {}
        jobs = {pid for pid, _ in self.procs if pid != self.root}
        for proc in tree:
            try:
                key = (proc.pid, proc.create_time())
                rss = proc.memory_info().rss
            except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                continue
            entry = self.procs.get(key)
            if entry is None:
                script = "snakemake" if proc.pid == self.root else self._classify(proc, jobs)
                if script is None:
                    continue  # an agent, a docker client, a shell: not a job's own process
                entry = self.procs[key] = Proc(script, now, now)
            entry.last = now
            entry.rss = max(entry.rss, rss)
            stage = STAGES.get(entry.script, entry.script)
            at_once[stage] = at_once.get(stage, 0) + rss
        for stage, rss in at_once.items():
            self.concurrent[stage] = max(self.concurrent.get(stage, 0), rss)

    def run(self) -> None:
        while not self._stop.is_set():
            self._sample()
            self._stop.wait(self.poll)

    def start(self) -> threading.Thread:
        thread = threading.Thread(target=self.run, daemon=True)
        thread.start()
        return thread

    def stop(self, thread: threading.Thread) -> None:
        self._stop.set()
        thread.join()

    def stages(self, t0: float, in_process: list[Proc] = ()) -> dict[str, dict[str, Any]]:
        """Per stage: its jobs' processes, and ``in_process`` (jobs that ran inside
        Snakemake's process, on the same clock), which no poll can see."""
        out: dict[str, dict[str, Any]] = {}
        for proc in [*self.procs.values(), *in_process]:
            stage = "snakemake" if proc.script == "snakemake" else STAGES.get(proc.script, "other")
            s = out.setdefault(
                stage, {"jobs": 0, "first": proc.first, "last": proc.last, "busy_s": 0.0, "rss": 0}
            )
            s["jobs"] += 1
            s["first"], s["last"] = min(s["first"], proc.first), max(s["last"], proc.last)
            s["busy_s"] += proc.last - proc.first
            s["rss"] = max(s["rss"], proc.rss)
        table = {}
        for stage in STAGE_ORDER:
            if stage not in out:
                continue
            s = out[stage]
            table[stage] = {
                "jobs_seen": s["jobs"] if stage != "snakemake" else None,
                "start_s": round(s["first"] - t0, 2),
                "span_s": round(s["last"] - s["first"], 2),
                "busy_s": round(s["busy_s"], 2),
                "peak_rss_job_mb": round(s["rss"] / 2**20, 1),
                "peak_rss_at_once_mb": round(self.concurrent.get(stage, 0) / 2**20, 1),
            }
        return table


# -- one scale ----------------------------------------------------------------------------

_RUNNER_ALONE = r"""
import json, sys, time
from pathlib import Path
import pandas as pd
from evalnoise.pipeline import settings
from evalnoise.pipeline import shard_plan
ShardPlan = getattr(shard_plan, "ShardPlan", None) or shard_plan.Plan  # a baseline's name
from evalnoise.runner import run_shard

ws, out = Path(sys.argv[1]), Path(sys.argv[2])
config = settings.with_defaults(
    __import__("yaml").safe_load((ws / "config/config.yaml").read_text()),
    settings.load_schema(ws / "config/schemas/config.schema.yaml"),
)
tasks = pd.read_parquet(ws / "results/tasks.parquet")
plan = ShardPlan.from_config(config, len(tasks))
trials = list(range(int(config["trials"]["count"])))
t0 = time.perf_counter()
statuses = {}
for agent, profile in plan.groups():
    image = None
    if config["backend"] == "docker":
        info = json.loads((ws / f"results/trials/{agent}/image.json").read_text())
        image = info["image"]
    result = run_shard(
        tasks,
        settings.agent_spec(config, agent, image),
        settings.resource_profile_spec(config, profile),
        trials,
        int(config["run_seed"]),
        settings.infra_policy_spec(config),
        config["backend"],
        out / f"{agent}-{profile}.journal.jsonl",
        out / f"{agent}-{profile}.parquet",
        concurrency=2,
        progress=False,
    )
    for k, v in result.statuses.items():
        statuses[k] = statuses.get(k, 0) + v
print(json.dumps({"seconds": time.perf_counter() - t0, "statuses": statuses}))
"""


def runner_alone(ws: Path, env: dict[str, str]) -> dict[str, Any]:
    """The runner on the pipeline's trials, in a fresh process: wall time and peak RSS."""
    out = ws / "runner-alone"
    out.mkdir()
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-c", _RUNNER_ALONE, str(ws), str(out)],
        cwd=ws,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    watcher = Watcher(proc.pid, 0.2)
    thread = watcher.start()
    stdout, stderr = proc.communicate()
    wall = time.perf_counter() - t0
    watcher.stop(thread)
    if proc.returncode != 0:
        raise RuntimeError(f"runner alone failed:\n{stderr[-3000:]}")
    inner = json.loads(stdout.strip().splitlines()[-1])
    usage = round(max((p.rss for p in watcher.procs.values()), default=0) / 2**20, 1)
    return {
        "wall_s": round(wall, 2),
        "run_shard_s": round(inner["seconds"], 2),
        "statuses": inner["statuses"],
        "peak_rss_mb": usage,
    }


_READ = r"""
import json, sys, time
t0 = time.perf_counter()
from pathlib import Path
from evalnoise.pipeline.collect import read_scores
t1 = time.perf_counter()
ws = Path(sys.argv[1])
# the score shards of a run; an imported table's one scores file (trials_from)
shards = sorted(ws.glob("results/scores/*/*/t*/c*.parquet"))
shards = shards or [ws / "results" / "scores" / "imported.parquet"]
frame = read_scores(shards)
t2 = time.perf_counter()
ok = frame["status"] == "ok" if "status" in frame else slice(None)
seconds = frame.loc[ok, "duration_s"] if "duration_s" in frame else frame.iloc[:0, 0]
print(json.dumps({"import_s": t1 - t0, "read_s": t2 - t1, "rows": len(frame),
                  "trial_duration_s": float(seconds.mean()) if len(seconds) else None}))
"""


def read_cost(ws: Path, env: dict[str, str]) -> dict[str, Any]:
    """What reading the run's trials costs, the baseline of the analysis + report target:
    every score shard (the rows the analysis jobs read), read by :func:`collect.read_scores`
    in a fresh process. ``read_s`` is the read alone, ``process_s`` the process's whole wall
    time (interpreter start and imports included: what any job that reads them pays)."""
    t0 = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", _READ, str(ws)], cwd=ws, env=env, capture_output=True, text=True
    )
    wall = time.perf_counter() - t0
    if out.returncode != 0:
        raise RuntimeError(f"reading the scores failed:\n{out.stderr[-3000:]}")
    inner = json.loads(out.stdout.strip().splitlines()[-1])
    return {
        "rows": inner["rows"],
        "read_s": round(inner["read_s"], 3),
        "import_s": round(inner["import_s"], 3),
        "process_s": round(wall, 3),
        "trial_duration_s": (
            None if inner["trial_duration_s"] is None else round(inner["trial_duration_s"], 4)
        ),
    }


def analysis_cost(stages: dict[str, dict[str, Any]]) -> dict[str, float]:
    """The analysis + report stages: their summed job time, and their tail (wall time from
    the end of the last trial or scoring job to the end of the report)."""
    busy = sum(stages[s]["busy_s"] for s in ("analysis", "report") if s in stages)
    ends = [
        stages[s]["start_s"] + stages[s]["span_s"] for s in ("trials", "scoring") if s in stages
    ]
    report = stages.get("report")
    tail = None
    if report is not None and ends:
        tail = round(report["start_s"] + report["span_s"] - max(ends), 2)
    return {"busy_s": round(busy, 2), "tail_s": tail}


def du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


#: The DAG build timed (and profiled): a dry run printing nothing but the job counts.
DRY_RUN = ("-n", "--quiet", "all")
#: What ``--cold-cache`` removes: the derived code_version sets (evalnoise.provenance.CACHE).
DERIVED_CACHE = Path(".snakemake") / "evalnoise"


def dry_run(ws: Path, env: dict[str, str], cold: bool = False) -> tuple[float, dict[str, int]]:
    if cold:
        shutil.rmtree(ws / DERIVED_CACHE, ignore_errors=True)
    t0 = time.perf_counter()
    out = subprocess.run(
        [snakemake_bin(), *DRY_RUN],
        cwd=ws,
        env=env,
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - t0
    if out.returncode != 0:
        raise RuntimeError(f"snakemake -n failed:\n{out.stderr[-3000:]}")
    return wall, job_counts(out.stdout + out.stderr)


def profile_dag(ws: Path, env: dict[str, str], label: str, out: Path = OUT) -> Path:
    """cProfile of the timed command (``snakemake -n --quiet all``); as text, the top 30 by
    cumulative time, then the top 30 of the workspace's own code (rule files and package),
    named after the scale and the date (``<out>/profiles/dag-<label>-<YYYY-MM-DD>.txt``)."""
    profiles = out / "profiles"
    profiles.mkdir(parents=True, exist_ok=True)
    raw = Path(tempfile.mkdtemp()) / "dag.prof"
    subprocess.run(
        [sys.executable, "-m", "cProfile", "-o", str(raw), snakemake_bin(), *DRY_RUN],
        cwd=ws,
        env=env,
        capture_output=True,
        check=True,
    )
    import io
    import pstats

    text = io.StringIO()
    stats = pstats.Stats(str(raw), stream=text)
    stats.sort_stats("cumulative").print_stats(30)
    text.write(f"\n# The workspace's own code ({ws}: rule files, package), top 30\n")
    stats.print_stats(re.escape(str(ws)), 30)
    shutil.rmtree(raw.parent, ignore_errors=True)
    target = profiles / f"dag-{label}-{datetime.now(UTC):%Y-%m-%d}.txt"
    target.write_text(f"# cProfile of `snakemake -n` ({label}), top 30 by cumulative time\n")
    with open(target, "a", encoding="utf-8") as handle:
        written = text.getvalue()
        pattern = re.escape(str(ws))  # the restriction, printed as its repr
        for path in (repr(pattern)[1:-1], pattern, str(ws)):
            written = written.replace(path, "<workspace>")
        handle.write(written)
    return target


def _relative(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def dag_only(
    scale: Scale,
    args: argparse.Namespace,
    root: Path,
    ws: Path,
    env: dict[str, str],
    dag_probe_s: float | None,
) -> dict[str, Any]:
    """``--dag-only``: ``--repeat`` timed DAG builds of ``ws`` (and, with ``--baseline``, of
    the same scale in a workspace of the baseline tree, alternating which goes first); the
    first build of each workspace (the probe's, or an untimed one) warms Python's bytecode
    caches and Snakemake's directory."""
    trees = {"after": ws}
    if args.baseline is not None:
        config = yaml.safe_load((ws / "config" / "config.yaml").read_text(encoding="utf-8"))
        base = make_workspace(root / "baseline", config, args.baseline)
        (base / "config" / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
        trees["before"] = base
        dry_run(base, tool_env(base, args.shim))  # warm-up, untimed
    if dag_probe_s is None:
        dry_run(ws, env)  # warm-up, untimed
    runs: dict[str, list[float]] = {name: [] for name in trees}
    counts: dict[str, dict[str, int]] = {}
    for i in range(args.repeat):
        order = list(trees) if i % 2 else list(reversed(trees))
        for name in order:
            tree = trees[name]
            seconds, counts[name] = dry_run(tree, tool_env(tree, args.shim), args.cold_cache)
            runs[name].append(round(seconds, 2))
        print(
            f"[{scale.label}] DAG build {i + 1}/{args.repeat}: "
            + ", ".join(f"{name} {runs[name][-1]:.2f}s" for name in trees),
            file=sys.stderr,
            flush=True,
        )
    if "before" in counts and counts["before"] != counts["after"]:
        raise RuntimeError(f"the baseline's DAG differs: {counts['before']} != {counts['after']}")
    profile = None
    if args.profile_dag and scale == args.largest:
        profile = _relative(profile_dag(ws, env, scale.label, args.out))
        if "before" in trees:
            label = f"{scale.label}-baseline"
            base = trees["before"]
            profile_dag(base, tool_env(base, args.shim), label, args.out)
    if not args.keep:
        shutil.rmtree(root, ignore_errors=True)
    row = {
        "dag_profile": profile,
        "label": scale.label,
        "dag_only": True,
        "trials": scale.trials,
        "agents": scale.agents,
        "resource_profiles": scale.profiles,
        "tasks": scale.tasks,
        "shards_target_seconds": args.target or None,
        "jobs": counts["after"].get("total"),
        "jobs_by_rule": counts["after"],
        "cold_cache": args.cold_cache,
        "dag_build_s": round(_median(runs["after"]), 2),
        "dag_build_runs_s": runs["after"],
        "dag_build_s_with_probe": None if dag_probe_s is None else round(dag_probe_s, 2),
        "load_average_after": os.getloadavg(),
    }
    if "before" in runs:
        row["baseline"] = str(args.baseline)
        row["baseline_dag_build_s"] = round(_median(runs["before"]), 2)
        row["baseline_dag_build_runs_s"] = runs["before"]
    return row


def run_scale(scale: Scale, args: argparse.Namespace, shim: Path | None) -> dict[str, Any]:
    trial_seconds = args.trial_seconds.get(scale.backend, TRIAL_SECONDS[scale.backend])
    root = Path(tempfile.mkdtemp(prefix=f"evalnoise-bench-{scale.label}-", dir=args.scratch))
    ws = make_workspace(root / "ws", bench_config(root / "ws", scale, args.target, trial_seconds))
    env = tool_env(ws, shim)
    print(f"[{scale.label}] workspace {ws}", file=sys.stderr, flush=True)
    dag_probe_s = None
    if shim is not None:
        dag_probe_s, _ = dry_run(ws, tool_env(ws, None))
    if args.dag_only:
        return dag_only(scale, args, root, ws, env, dag_probe_s)
    dag_s, counts = dry_run(ws, env)
    print(f"[{scale.label}] DAG {dag_s:.1f}s, {counts.get('total')} jobs", file=sys.stderr)

    t0, epoch0 = time.monotonic(), time.time()
    proc = subprocess.Popen(
        [snakemake_bin(), "--cores", str(args.cores)],
        cwd=ws,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    watcher = Watcher(proc.pid, args.poll)
    thread = watcher.start()
    log, _ = proc.communicate()
    wall = time.monotonic() - t0
    watcher.stop(thread)
    (root / "snakemake.log").write_text(log)
    if proc.returncode != 0:
        raise RuntimeError(f"snakemake failed ({proc.returncode}); log: {root / 'snakemake.log'}")
    # the jobs inside Snakemake's process, from their logs, on the monotonic clock
    inside = [
        Proc(j["rule"], t0 + j["start"] - epoch0, t0 + j["end"] - epoch0)
        for j in in_process_jobs(ws, epoch0)
    ]
    stages = watcher.stages(t0, inside)
    counts = job_counts(log) or counts  # the run prints the same table as the dry run
    print(f"[{scale.label}] pipeline {wall:.1f}s", file=sys.stderr, flush=True)

    alone = runner_alone(ws, env)
    print(f"[{scale.label}] runner alone {alone['wall_s']:.1f}s", file=sys.stderr, flush=True)
    results_bytes = du(ws / "results")
    reading = read_cost(ws, env)
    analysis = analysis_cost(stages)
    profile = None
    if args.profile_dag and scale == args.largest:
        profile = _relative(profile_dag(ws, env, scale.label, args.out))

    from evalnoise.pipeline.shard_plan import ShardPlan

    config = yaml.safe_load((ws / "config" / "config.yaml").read_text())
    from evalnoise.pipeline.settings import load_schema, with_defaults

    config = with_defaults(config, load_schema(ws / "config/schemas/config.schema.yaml"))
    plan = ShardPlan.from_config(config, scale.tasks)
    shards = len(plan.shards())
    row = {
        "label": scale.label,
        "backend": scale.backend,
        "trials": scale.trials,
        "agents": scale.agents,
        "resource_profiles": scale.profiles,
        "tasks": scale.tasks,
        "trials_per_task": scale.trials_per_task,
        "shards_target_seconds": args.target or None,
        "shards_trial_seconds": trial_seconds,
        "shards": shards,
        "trials_per_shard": scale.trials // shards,
        "jobs": counts.get("total"),
        "jobs_by_rule": counts,
        "dag_build_s": round(dag_s, 2),
        "dag_build_s_with_probe": None if dag_probe_s is None else round(dag_probe_s, 2),
        "pipeline_wall_s": round(wall, 2),
        "runner_alone_wall_s": alone["wall_s"],
        "runner_alone_peak_rss_mb": alone["peak_rss_mb"],
        "runner_alone_statuses": alone["statuses"],
        "ratio": round(wall / alone["wall_s"], 3),
        "pipeline_s_per_trial": round(wall / scale.trials, 5),
        "runner_s_per_trial": round(alone["wall_s"] / scale.trials, 5),
        "stages": stages,
        "results_bytes": results_bytes,
        "read": reading,
        "analysis_report": analysis,
        "analysis_report_ratio_to_read": {
            "busy_to_read": round(analysis["busy_s"] / reading["read_s"], 1),
            "busy_to_read_process": round(analysis["busy_s"] / reading["process_s"], 2),
        },
        "dag_profile": profile,
        "load_average_after": os.getloadavg(),
    }
    if not args.keep:
        shutil.rmtree(root, ignore_errors=True)
    return row


# -- the report ---------------------------------------------------------------------------


def machine() -> dict[str, Any]:
    from evalnoise.machine import cgroup_version, cpu_model

    docker = shutil.which("docker")
    version = None
    if docker:
        out = subprocess.run(
            [docker, "version", "--format", "{{.Server.Version}}"], capture_output=True, text=True
        )
        version = out.stdout.strip() or None
    hybrid = Path("/sys/fs/cgroup/unified").is_dir()
    return {
        "cpu_model": cpu_model(),
        "cores": os.cpu_count(),
        "cgroup": cgroup_version() + (" (v1 + v2 hybrid)" if hybrid else ""),
        "docker": version,
        "python": platform.python_version(),
        "load_average_start": os.getloadavg(),
    }


TARGETS = {"docker": 1.15, "local": 1.5}


def markdown(doc: dict[str, Any]) -> str:
    m = doc["machine"]
    lines = [
        "# Pipeline benchmark (benchmarks/bench_pipeline.py)",
        "",
        f"{doc['date']}; {m['cpu_model']}, {m['cores']} cores, cgroup {m['cgroup']}, "
        f"Docker {m['docker']}, Python {m['python']}; load average at start "
        f"{', '.join(f'{x:.1f}' for x in m['load_average_start'])} (absolute times move with "
        "the machine's load; a ratio compares two phases of one scale run one after the "
        "other).",
        "",
        f"Command: `{doc['command']}`",
        "",
    ]
    full = [r for r in doc["runs"] if not r.get("dag_only")]
    if full:
        lines += [
            "| scale | trials | agents × profiles × tasks × trials | shards (mean trials each) "
            "| jobs | DAG build s | pipeline s | runner alone s | ratio | target "
            "| pipeline ms/trial | runner ms/trial | results/ MB |",
            "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
    for r in full:
        goal = TARGETS[r["backend"]]
        dag = f"{r['dag_build_s']:.1f}"
        if r["dag_build_s_with_probe"] is not None:
            dag += f" ({r['dag_build_s_with_probe']:.1f} with the scontrol probe)"
        lines.append(
            f"| {r['label']} | {r['trials']} | {r['agents']} × {r['resource_profiles']} × "
            f"{r['tasks']} × {r['trials_per_task']} | {r['shards']} ({r['trials_per_shard']}) "
            f"| {r['jobs']} | {dag} | {r['pipeline_wall_s']:.1f} | {r['runner_alone_wall_s']:.1f} "
            f"| {r['ratio']:.2f} | ≤ {goal} {'met' if r['ratio'] <= goal else 'MISSED'} "
            f"| {1000 * r['pipeline_s_per_trial']:.1f} | {1000 * r['runner_s_per_trial']:.1f} "
            f"| {r['results_bytes'] / 1e6:.1f} |"
        )
    read = [r for r in full if "read" in r]
    if read:
        lines += [
            "",
            "Analysis + report against reading the trials (target: analysis + report ≤ 3 × the "
            "read at 100,000 trials). *Read*: every score shard by `collect.read_scores` in a "
            "fresh process, the read alone and the whole process (interpreter and imports "
            "included); *analysis + report*: the summed time of those stages' jobs, and their "
            "tail (end of the last trial or scoring job → end of the report).",
            "",
            "| scale | score rows | read s | read process s | analysis + report jobs s "
            "| tail s | jobs / read | jobs / read process |",
            "|---|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for r in read:
            a, q, k = r["read"], r["analysis_report"], r["analysis_report_ratio_to_read"]
            lines.append(
                f"| {r['label']} | {a['rows']} | {a['read_s']:.2f} | {a['process_s']:.2f} "
                f"| {q['busy_s']:.1f} | {q['tail_s']} | {k['busy_to_read']:.0f} "
                f"| {k['busy_to_read_process']:.1f} |"
            )
    if full:
        lines += [
            "",
            "Per stage: span (first job start → last job end, s after `snakemake` started), "
            "summed job time, jobs seen, peak RSS of one job and of the stage's jobs at once "
            "(MB; a job = the Python process running its script, agents excluded, seen by the "
            "poll; a job inside Snakemake's process is timed from its log's last line and has no "
            "RSS of its own: 0, its memory is in the `snakemake` row). `snakemake` is "
            "Snakemake's own process (its span: the whole run).",
            "",
        ]
    dags = [r for r in doc["runs"] if r.get("dag_only")]
    if dags:
        goal = doc["targets"]["dag_build_s"]
        baseline = any("baseline_dag_build_s" in r for r in dags)
        lines += [
            "DAG builds only (`--dag-only`: `snakemake -n`, nothing run; the median of the "
            "timed builds, each build in brackets"
            + (
                "; *before*: the same scale in a workspace of the baseline tree, alternated "
                "with *after*"
                if baseline
                else ""
            )
            + f"; target ≤ {goal} s at 100,000 trials):",
            "",
            "| scale | trials | agents × profiles × tasks | shards.target_seconds | jobs "
            "| code_version cache "
            + ("| before: DAG build s " if baseline else "")
            + "| DAG build s | target |",
            "|---|---:|---|---:|---:|---" + ("|---:" if baseline else "") + "|---:|---|",
        ]
        for r in dags:
            runs = r.get("dag_build_runs_s") or [r["dag_build_s"]]
            cell = f"{r['dag_build_s']:.2f} ({', '.join(f'{s:.2f}' for s in runs)})"
            before = ""
            if baseline:
                old = r.get("baseline_dag_build_runs_s")
                before = (
                    f"| {r['baseline_dag_build_s']:.2f} ({', '.join(f'{s:.2f}' for s in old)}) "
                    if old
                    else "| — "
                )
            target = "—"
            if r["trials"] >= 100_000:
                target = f"≤ {goal} {'met' if r['dag_build_s'] <= goal else 'MISSED'}"
            cache = {True: "cold (removed before each build)", False: "warm"}.get(
                r.get("cold_cache"),
                "—",  # (measured before there was one)
            )
            lines.append(
                f"| {r['label']} | {r['trials']} | {r['agents']} × {r['resource_profiles']} × "
                f"{r['tasks']} | {r['shards_target_seconds'] or 'unset (default plan)'} "
                f"| {r['jobs']} | {cache} {before}| {cell} | {target} |"
            )
        lines.append("")
    for r in doc["runs"]:
        if r.get("dag_only"):
            continue
        lines += [
            f"**{r['label']}** (jobs by rule: "
            + ", ".join(f"{k} {v}" for k, v in r["jobs_by_rule"].items() if k != "total")
            + f"; runner alone peak RSS {r['runner_alone_peak_rss_mb']} MB"
            + (
                f"; shards.trial_seconds {r['shards_trial_seconds']} s, measured mean "
                f"duration_s of an ok trial in the pipeline {r['read']['trial_duration_s']} s)"
                if "read" in r
                else ")"
            ),
            "",
            "| stage | starts at s | span s | summed job s | jobs seen | peak RSS job MB "
            "| peak RSS at once MB |",
            "|---|---:|---:|---:|---:|---:|---:|",
        ]
        for stage, s in r["stages"].items():
            lines.append(
                f"| {stage} | {s['start_s']:.1f} | {s['span_s']:.1f} | {s['busy_s']:.1f} "
                f"| {s['jobs_seen'] if s['jobs_seen'] is not None else '—'} "
                f"| {s['peak_rss_job_mb']:.0f} | {s['peak_rss_at_once_mb']:.0f} |"
            )
        lines.append("")
    if doc.get("notes"):
        lines += ["## Notes", "", *doc["notes"], ""]
    return "\n".join(lines)


def chart(doc: dict[str, Any], path: Path) -> None:
    import altair as alt
    import pandas as pd
    import vl_convert as vlc

    rows = []
    for r in doc["runs"]:
        if r.get("dag_only"):
            continue
        for what, value in (
            ("pipeline", r["pipeline_s_per_trial"]),
            ("runner alone", r["runner_s_per_trial"]),
        ):
            rows.append(
                {
                    "trials": r["trials"],
                    "ms per trial": 1000 * value,
                    "what": what,
                    "run": r["label"],
                }
            )
    data = pd.DataFrame(rows)
    spec = (
        alt.Chart(data, title="Wall time per trial (2 cores, 2 trials at once)")
        .mark_line(point=alt.OverlayMarkDef(size=80, filled=True))
        .encode(
            x=alt.X("trials:Q", scale=alt.Scale(type="log"), title="trials in the run"),
            y=alt.Y("ms per trial:Q", scale=alt.Scale(type="log"), title="ms per trial"),
            color=alt.Color("run:N", title="run"),
            shape=alt.Shape("what:N", title="measured"),
            detail="what:N",
        )
        .properties(width=480, height=300)
    )
    path.write_text(vlc.vegalite_to_svg(spec.to_json()))


def _command(argv: list[str]) -> str:
    """The arguments as typed, the notes' text left out (it is in the notes)."""
    out, skip = [], False
    for arg in argv:
        if skip:
            skip = False
            out.append("…")
            continue
        if arg == "--note":
            skip = True
        elif arg.startswith("--note="):
            arg = "--note=…"
        out.append(arg)
    return " ".join(out)


def parse_scale(text: str, args: argparse.Namespace) -> Scale:
    parts = text.split(":")
    if len(parts) not in (2, 3) or parts[0] not in ("docker", "local"):
        raise argparse.ArgumentTypeError(f"--scale {text!r}: expected BACKEND:TRIALS[:AGENTS]")
    agents = int(parts[2]) if len(parts) == 3 else 1
    scale = Scale(parts[0], int(parts[1]), agents, args.profiles, args.trials_per_task)
    try:
        scale.tasks  # noqa: B018 - refused before anything runs, not when its turn comes
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"--scale {text!r}: {error}") from None
    return scale


def _trial_seconds(text: str) -> dict[str, float]:
    if "=" not in text:
        return dict.fromkeys(TRIAL_SECONDS, float(text))
    out = {}
    for item in text.split(","):
        backend, _, seconds = item.partition("=")
        if backend not in TRIAL_SECONDS:
            raise argparse.ArgumentTypeError(f"unknown backend {backend!r} in {text!r}")
        out[backend] = float(seconds)
    return out


def write_results(doc: dict[str, Any], out: Path, name: str, *, with_chart: bool) -> None:
    """``<out>/<name>.json`` and ``.md``, and with ``with_chart`` the chart (``.svg``)."""
    (out / f"{name}.json").write_text(json.dumps(doc, indent=2) + "\n")
    (out / f"{name}.md").write_text(markdown(doc))
    if with_chart and any(not r.get("dag_only") for r in doc["runs"]):
        chart(doc, out / f"{name}.svg")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--scale",
        action="append",
        default=[],
        help="BACKEND:TRIALS[:AGENTS] (repeatable), e.g. docker:1000:1 local:10000:3",
    )
    parser.add_argument(
        "--issue-grid",
        action="store_true",
        help="issue 13's scales (docker 1,000/5,000, local 10,000/100,000) × --agents-grid",
    )
    parser.add_argument("--agents-grid", default="1,3,10", help="agents per scale of the grid")
    parser.add_argument("--profiles", type=int, default=2, help="resource profiles")
    parser.add_argument("--trials-per-task", type=int, default=10)
    parser.add_argument(
        "--target", type=float, default=60.0, help="shards.target_seconds (0 = default plan)"
    )
    parser.add_argument(
        "--trial-seconds",
        type=_trial_seconds,
        default={},
        help="shards.trial_seconds: SECONDS for every backend, or BACKEND=SECONDS[,...] "
        "(e.g. docker=0.15,local=0.02: a trial's wall time at the run's concurrency, "
        "measured by a small run of this benchmark)",
    )
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--poll", type=float, default=0.2, help="seconds between samples")
    parser.add_argument("--scratch", default=None, help="where workspaces go (default: /tmp)")
    parser.add_argument("--keep", action="store_true", help="keep the workspaces")
    parser.add_argument("--profile-dag", action="store_true", help="cProfile snakemake -n")
    parser.add_argument(
        "--dag-only", action="store_true", help="time the DAG build (snakemake -n) only"
    )
    parser.add_argument("--slurm-probe", action="store_true", help="keep scontrol on PATH")
    parser.add_argument(
        "--repeat", type=int, default=1, help="--dag-only: timed DAG builds per scale (median)"
    )
    parser.add_argument(
        "--baseline",
        type=Path,
        default=None,
        help="--dag-only: also time the DAG build of a workspace made from this tree (the "
        "code before a change), alternating with this checkout's",
    )
    parser.add_argument(
        "--cold-cache",
        action="store_true",
        help="--dag-only: remove .snakemake/evalnoise/ (the derived code_version sets) "
        "before every timed build",
    )
    parser.add_argument("--out", type=Path, default=OUT, help="directory of the results")
    parser.add_argument(
        "--name", default="pipeline", help="file name of the results: <out>/<name>.{md,json}"
    )
    parser.add_argument("--note", action="append", default=[], help="a line for the notes")
    parser.add_argument(
        "--append",
        action="store_true",
        help="add this run's scales to the runs already in <out>/<name>.json",
    )
    parser.add_argument(
        "--render",
        action="store_true",
        help="write <out>/<name>.md and .svg again from <out>/<name>.json, running nothing",
    )
    args = parser.parse_args(argv)
    if args.render:
        doc = json.loads((args.out / f"{args.name}.json").read_text(encoding="utf-8"))
        doc["notes"] = doc.get("notes", []) + args.note
        write_results(doc, args.out, args.name, with_chart=True)
        return 0
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    if (args.baseline is not None or args.cold_cache or args.repeat > 1) and not args.dag_only:
        parser.error("--repeat, --baseline and --cold-cache time DAG builds: use --dag-only")
    if args.baseline is not None:
        args.baseline = args.baseline.resolve()
        if not (args.baseline / "Snakefile").is_file():
            parser.error(f"--baseline {args.baseline}: no Snakefile (not a checkout)")

    try:
        scales = [parse_scale(s, args) for s in args.scale]
    except argparse.ArgumentTypeError as error:
        parser.error(str(error))
    if args.issue_grid:
        for backend, trials in ISSUE_GRID:
            for agents in args.agents_grid.split(","):
                try:
                    scales.append(parse_scale(f"{backend}:{trials}:{agents}", args))
                except argparse.ArgumentTypeError as error:
                    parser.error(f"--issue-grid: {error}")
    if not scales:
        scales = [parse_scale("docker:1000:1", args), parse_scale("local:10000:1", args)]
    args.largest = max(scales, key=lambda s: s.trials)

    shim = None
    if not args.slurm_probe and shutil.which("scontrol"):
        shim = Path(tempfile.mkdtemp(prefix="evalnoise-bench-shim-"))
        (shim / "scontrol").write_text("#!/bin/sh\nexit 1\n")
        (shim / "scontrol").chmod(0o755)
    args.shim = shim

    earlier: dict[str, Any] = {}
    if args.append and (args.out / f"{args.name}.json").is_file():
        earlier = json.loads((args.out / f"{args.name}.json").read_text(encoding="utf-8"))
    doc: dict[str, Any] = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "command": "python benchmarks/bench_pipeline.py " + _command(argv or sys.argv[1:]),
        "machine": machine(),
        "targets": {"ratio": TARGETS, "dag_build_s": 5.0},
        "runs": [],
        "notes": args.note,
    }
    if earlier:
        doc["date"] = f"{earlier['date']} – {datetime.now(UTC):%Y-%m-%d %H:%M} UTC"
        doc["command"] = f"{earlier['command']}; then {doc['command']} --append"
        doc["machine"]["load_average_start"] = earlier["machine"]["load_average_start"]
        doc["runs"] = earlier["runs"]
        doc["notes"] = earlier.get("notes", []) + args.note
    args.out.mkdir(parents=True, exist_ok=True)
    try:
        for scale in scales:
            doc["runs"].append(run_scale(scale, args, shim))
            # written after every scale: a long grid keeps what it measured
            write_results(doc, args.out, args.name, with_chart=False)
    finally:
        if shim is not None:
            shutil.rmtree(shim, ignore_errors=True)
    write_results(doc, args.out, args.name, with_chart=True)
    print(markdown(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
