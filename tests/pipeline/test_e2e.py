"""End to end: the real pipeline (Snakemake + DVC + Docker) on a tiny evaluation.

2 agents × 2 resource profiles × 3 tasks × 2 trials, in a fresh git + DVC repository that
holds a copy of the project. The agents are the `build` kind: a tiny stdlib Python agent
(tests/pipeline/tiny_agent) built FROM the runner's base image, right or wrong at random per
trial seed — so the run takes seconds, not the minutes the model-backed default takes. One
test walks through the whole life of an evaluation, since each step builds on the last:

1. `snakemake` runs it all: every trial once, containers removed, report and manifest.
2. `dvc repro` records it and is then up to date; so is `snakemake`.
3. `--forcerun analyze_group` reruns the statistics only, never a trial.
4. `dvc exp run -S config/config.yaml:trials.count=4` runs exactly the 2 new trials per
   task (new blocks; existing shards untouched); `dvc exp show` lists the experiment.
5. `dvc push`, then in a fresh clone `dvc pull` + `snakemake --touch`: nothing reruns.
6. `evalnoise archive` / `evalnoise verify`.

Growing a run by an agent, a task or a profile is tests/pipeline/test_growth.py's; a run
killed mid-trials (or mid-stage) and resumed is tests/pipeline/test_kill_resume.py's.
"""

from __future__ import annotations

import collections
import csv
import io
import json
import shutil
import subprocess
import time

import pytest
from pipeline_helpers import (
    ROOT,
    digests,
    git,
    job_counts,
    journals,
    leftover_containers,
    make_workspace,
    remove_containers,
    run_tool,
)

pytestmark = [pytest.mark.docker, pytest.mark.slow]

TINY = {
    "benchmark": {"n": 3},
    "agents": {
        "steady": {"build": "agents/tiny", "env": {"TINY_SKILL": "a", "TINY_SLEEP_S": 0.2}},
        "shaky": {"build": "agents/tiny", "env": {"TINY_SKILL": "b", "TINY_SLEEP_S": 0.2}},
    },
    "resource_profiles": {
        "1x": {},
        "3x": {"memory_limit_factor": 3.0, "cpu_limit_factor": 3.0},
    },
    "trials": {"count": 2, "block_size": 2},
    "task_chunk_size": 3,
    "analysis": {"convergence": {"subsamples": 50}, "bootstrap": {"resamples": 500}},
    "report": {"png": True},  # the report as a user gets it, PNG copies included
}


@pytest.fixture(scope="module")
def engine(docker_engine):
    return docker_engine


def trial_keys(rows):
    return [
        (r["agent"], r["resource_profile"], r["task_id"], r["trial"], r["attempt"]) for r in rows
    ]


def all_rows(workspace):
    return [row for rows in journals(workspace).values() for row in rows]


def dry_run(workspace, *args):
    return job_counts(run_tool(workspace, "snakemake", "-n", *args).stdout)


def ran(result):
    """The jobs a (real) Snakemake run planned, from the job table it prints before it runs
    them: the same table as a dry run's, without building the DAG twice."""
    return job_counts(result.stdout + result.stderr)


@pytest.fixture
def workspace(tmp_path, engine):
    """The tiny evaluation's repository; containers a failed test left are removed after."""
    ws = make_workspace(tmp_path / "ws", TINY)
    # the repository's real .gitignore, not the helper's stand-in: what users get must keep
    # results/metrics.json (DVC metric, cache: false) in git, or step 7's clone lacks it
    shutil.copy2(ROOT / ".gitignore", ws / ".gitignore")
    git(ws, "add", ".gitignore")
    git(ws, "commit", "-qm", "the repository's .gitignore")
    yield ws
    remove_containers(engine, leftover_containers(engine, ws))


def test_the_life_of_an_evaluation(tmp_path, engine, workspace):
    ws = workspace
    clock = [time.monotonic()]
    timings = {}

    def lap(name):
        now = time.monotonic()
        timings[name] = round(now - clock[0], 1)
        clock[0] = now

    # 1. the first run: every trial exactly once ------------------------------------------
    assert ran(run_tool(ws, "snakemake"))["run_trials"] == 4
    rows = all_rows(ws)
    assert len(rows) == 2 * 2 * 3 * 2
    assert len(set(trial_keys(rows))) == len(rows)
    assert not leftover_containers(engine, ws)
    results = ws / "results"
    for name in (
        "analysis/summary.txt",
        "analysis/groups.json",
        "metrics.json",
        "manifest.json",
        "report/index.html",
        "report/cards.json",
    ):
        assert (results / name).is_file(), name
    metrics = json.loads((results / "metrics.json").read_text())
    assert set(metrics["groups"]) == {"steady@1x", "steady@3x", "shaky@1x", "shaky@3x"}
    assert all(g["n_trials"] == 6 for g in metrics["groups"].values())
    assert len(metrics["comparisons"]) == 4  # 2 agent pairs + 2 resource-profile pairs
    manifest = json.loads((results / "manifest.json").read_text())
    hashed = {a["path"] for a in manifest["artifacts"]}
    assert "results/tasks.parquet" in hashed and "results/metrics.json" in hashed
    parquet = [p for p in hashed if p.startswith("results/trials/") and p.endswith(".parquet")]
    # one trial shard per group and, beside it, its actions table (evalnoise.runner.actions)
    actions = [p for p in parquet if "/actions/" in p]
    assert len(parquet) - len(actions) == 4 and len(actions) == 4
    # every file the run made before the manifest is hashed (evalnoise archive checks them)
    from evalnoise.results_check import recorded_files

    made = {f"results/{p.relative_to(results).as_posix()}" for p in recorded_files(results)}
    assert made == {p for p in hashed if p.startswith("results/")}
    assert manifest["started_at"] and manifest["ended_at"] > manifest["started_at"]
    assert len(manifest["images"]) == 2  # one tag per agent (same tiny build context)
    cards = json.loads((results / "report" / "cards.json").read_text())["cards"]
    assert len(cards) == 4
    # report.png: each chart's PNG copy beside its page
    pages = {p.stem for p in (results / "report").glob("*.html")} - {"index"}
    assert pages and {p.stem for p in (results / "report").glob("*.png")} == pages

    lap("first run")

    # 2. DVC records the run and is then up to date -----------------------------------------
    run_tool(ws, "dvc", "repro")
    again = run_tool(ws, "dvc", "repro")
    assert "Data and pipelines are up to date" in again.stdout + again.stderr
    assert dry_run(ws) == {}  # `snakemake -n`: nothing to be done (DVC kept the mtimes)
    status = run_tool(ws, "dvc", "status")
    assert "up to date" in status.stdout
    git(ws, "add", "dvc.lock")
    git(ws, "commit", "-qm", "run")

    lap("dvc repro")

    # 3. rerunning a stage never reruns a trial -----------------------------------------------
    before = digests(sorted(results.glob("trials/*/*/journals/*.jsonl")))
    forced = ran(run_tool(ws, "snakemake", "--forcerun", "analyze_group"))
    assert forced["analyze_group"] == 4 and "run_trials" not in forced and "score" not in forced
    assert digests(before) == before

    lap("forcerun analyze_group")

    # 4. more trials: only the new ones run (as a DVC experiment) ------------------------------
    old_shards = sorted(results.glob("trials/*/*/t*/c*.parquet"))
    old = {p: p.stat().st_mtime_ns for p in old_shards} | {
        p: p.stat().st_mtime_ns for p in results.glob("scores/*/*/t*/c*.parquet")
    }
    run_tool(ws, "dvc", "exp", "run", "-S", "config/config.yaml:trials.count=4")
    assert {p: p.stat().st_mtime_ns for p in old} == old  # existing shards untouched
    assert digests(before) == before  # and their journals
    rows = all_rows(ws)
    assert len(rows) == 2 * 2 * 3 * 4 and len(set(trial_keys(rows))) == len(rows)
    new = collections.Counter(r["trial"] for r in rows if r["trial"] >= 2)
    assert new == {2: 12, 3: 12}  # exactly 2 new trials per task per agent × profile
    shown = list(csv.DictReader(io.StringIO(run_tool(ws, "dvc", "exp", "show", "--csv").stdout)))
    experiments = [r for r in shown if r["Experiment"]]
    assert [r["trials.count"] for r in experiments] == ["4"]
    assert experiments[0]["groups.shaky@1x.n_trials"] == "12"  # its metrics, listed
    assert (
        json.loads((results / "metrics.json").read_text())["groups"]["shaky@1x"]["n_trials"] == 12
    )

    lap("dvc exp run")

    # 5. restore elsewhere: dvc pull + snakemake --touch reruns nothing ------------------------
    run_tool(ws, "dvc", "repro")
    git(ws, "add", "-A")
    git(ws, "commit", "-qm", "final")
    assert git(ws, "ls-files", "results/metrics.json").strip() == "results/metrics.json"
    run_tool(ws, "dvc", "push")
    assert any((tmp_path / "evalnoise-dvc-remote").iterdir())  # the default remote
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(ws), str(clone)], check=True)
    run_tool(clone, "dvc", "pull")
    run_tool(clone, "snakemake", "--touch")
    # `dvc pull` checks files out within milliseconds in no particular order; one
    # `--touch` has been seen to leave statistics stale (never a trial, score or judge job:
    # those are what must not rerun). A second `--touch` settles them.
    first = dry_run(clone)
    assert not {"run_trials", "score", "judge", "sample_tasks"} & set(first), first
    if first:
        run_tool(clone, "snakemake", "--touch")
    # (nothing changed since the first dry run when it planned nothing: it is the answer)
    assert (dry_run(clone) if first else first) == {}
    restored = run_tool(clone, "snakemake").stderr
    assert "run_trials" not in restored
    pulled = digests(sorted(clone.glob("results/trials/*/*/journals/*.jsonl")))
    kept = digests(sorted(results.glob("trials/*/*/journals/*.jsonl")))
    assert sorted(pulled.values()) == sorted(kept.values())

    lap("restore")

    # 6. one verifiable file -----------------------------------------------------------------
    run_tool(ws, "evalnoise", "archive", "-o", "evaluation.tar.gz")
    verified = run_tool(ws, "evalnoise", "verify", "evaluation.tar.gz")
    assert verified.returncode == 0
    archive = ws / "evaluation.tar.gz"
    with open(archive, "r+b") as handle:  # a changed byte is caught
        handle.seek(archive.stat().st_size // 2)
        byte = handle.read(1)
        handle.seek(-1, 1)
        handle.write(bytes([byte[0] ^ 0xFF]))
    assert run_tool(ws, "evalnoise", "verify", "evaluation.tar.gz", check=False).returncode != 0
    lap("archive")
    print("e2e step timings (s):", timings)
