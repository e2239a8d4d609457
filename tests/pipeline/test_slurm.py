"""The pipeline on a real Slurm cluster gives the results of the local executor.

A single-node cluster on this machine (``tools/slurm-cluster.sh start``: slurmctld, slurmd,
munge; no accounting, so ``profiles/slurm`` polls job states with ``squeue``) runs the tiny
evaluation — 2 agents × 1 resource profile × 3 tasks × 2 trials, the stdlib agent of
tests/pipeline/tiny_agent in real containers — in one workspace, and the local executor runs
it in another, at the same time (``evalnoise run --cores 2``: the test run's shared tiny
evaluation, pipeline_helpers.finished_reference, which test_kill_resume.py's reference is
too; made here unless another file made it first). In the Slurm workspace:

1. ``snakemake --workflow-profile none --profile profiles/slurm --retries 0 all_trials``:
   every job of the trials stage (tasks, images, canaries, trial shards) is an sbatch job.
   While one trial shard's job runs (``TINY_SLEEP_S`` widens each trial), it is cancelled
   with ``scancel <job id>``, the id read from the job record the shard's job writes when it
   starts (:func:`evalnoise.pipeline.slurm_resources.record_job`). With no retries left the
   run fails, and the error names the Slurm job, its state and its Slurm log.
2. The same command as shipped (retries on): the cancelled shard is resubmitted and resumes
   from its journal — nothing lost, nothing run twice.
3. ``snakemake``: scores, statistics, manifest and report, locally (set
   ``EVALNOISE_SLURM_FULL_DAG=1`` to run step 2 on the whole DAG under Slurm instead: every
   job is a Slurm job, ~4 more minutes here, since each costs a Slurm round trip).

**What "identical" means** (as in test_kill_resume.py): the trial and score tables are
identical in every column — agent, profile, task, trial, attempt, seed, status, exit code,
prediction, limits, image, host, score — except the wall-clock measurements of each trial
(``duration_s``, ``peak_memory_bytes``, ``started_at``, ``ended_at``); every statistic in
results/metrics.json is identical except those computed from *when* trials ran (the
attribution stage's time-block variance share and drift: ``infra_share*``, ``drift_*``, ...),
which differ between any two runs; the manifest's artifact digests are identical for every
artifact that holds no time (tasks, image records, comparisons, convergence, budget,
per-task and resource-profile tables), and the others — trial and score shards,
metrics.json, summary.txt, groups.json (its cost drivers: container seconds) — are
identical once those measurements are masked.

The last test pushes the Slurm-made results to a local directory remote and restores them
in a fresh clone (``dvc pull``; ``dvc status`` clean; ``snakemake --touch`` and nothing to
do) — the way results move between the cluster and another machine.

Without a cluster (or the means to start one: root and apt) the tests skip; with ``CI`` set
they fail.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pandas as pd
import pytest
from model_stack import require
from pipeline_helpers import (
    NOISE_LINES,
    ROOT,
    SLURM_WORKSPACES,
    TINY_REFERENCE,
    WHEN_TEXT,
    digests,
    finished_reference,
    git,
    job_counts,
    journals,
    leftover_containers,
    make_workspace,
    run_tool,
    shared_root,
    tool_env,
    venv_tool,
    without_when,
)

pytestmark = [pytest.mark.docker, pytest.mark.slow]

CLUSTER = ROOT / "tools" / "slurm-cluster.sh"
SLURM = ("--workflow-profile", "none", "--profile", "profiles/slurm")
FULL_DAG = os.environ.get("EVALNOISE_SLURM_FULL_DAG", "").strip() not in ("", "0")

#: The test run's shared tiny evaluation: the local executor's results are its finished
#: workspace (pipeline_helpers.finished_reference, also test_kill_resume.py's reference).
TINY = TINY_REFERENCE
N_TRIALS = 2 * 1 * 3 * 2
#: The shard whose Slurm job is cancelled, and what names it.
VICTIM = "results/trials/steady/1x/t0000-0001/c0000-0002.parquet"
VICTIM_RECORD = "results/logs/jobs/trials/steady/1x/t0000-0001/c0000-0002.json"
VICTIM_LOG = "results/logs/run_trials/steady/1x/t0000-0001-c0000-0002.log"
# the plugin joins the job's wildcards with "_": the last, the variant, is empty without variants
VICTIM_SLURM_LOG = "results/logs/slurm/rule_run_trials/steady_1x_0000-0001_0000-0002_/{job}.log"

#: Wall-clock measurements of a trial: the only columns two runs of it may differ in.
MEASURED = ["duration_s", "peak_memory_bytes", "started_at", "ended_at"]
TRIAL_KEY = ["agent", "resource_profile", "task_id", "trial", "attempt"]


@pytest.fixture(scope="module")
def slurm_cluster():
    """A Slurm cluster that takes jobs: the running one, else one this fixture starts (and
    stops afterwards)."""
    require(
        importlib.util.find_spec("snakemake_executor_plugin_slurm") is not None,
        "snakemake-executor-plugin-slurm is not installed",
    )
    started = False
    if subprocess.run([CLUSTER, "status"], capture_output=True).returncode != 0:
        start = subprocess.run([CLUSTER, "start"], capture_output=True, text=True, timeout=900)
        require(
            start.returncode == 0,
            f"no Slurm cluster: tools/slurm-cluster.sh start failed: {start.stderr[-2000:]}",
        )
        started = True
    yield
    if started:
        subprocess.run([CLUSTER, "stop"], capture_output=True, timeout=120)


def _rows(path: Path) -> list[dict]:
    if not path.exists():
        return []
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [r for r in rows if "journal" not in r]


def _cancel_running_shard(workspace: Path, proc: subprocess.Popen) -> tuple[str, int]:
    """Wait until the victim shard's Slurm job has journaled some trials but not all, then
    scancel it; returns (job id, trials journaled at that moment)."""
    record = workspace / VICTIM_RECORD
    journal = workspace / "results/trials/steady/1x/journals/t0000-c0000.jsonl"
    deadline = time.monotonic() + 400
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the Slurm run ended before its shard could be cancelled"
        done = len(_rows(journal))
        if record.exists() and 1 <= done:
            job = json.loads(record.read_text())[-1]["slurm_job_id"]
            assert done < 6, "the shard finished before it could be cancelled"
            subprocess.run(["scancel", job], check=True)
            return job, done
        time.sleep(0.05)
    raise AssertionError("no trial of the shard was journaled in time")


@pytest.fixture(scope="module")
def runs(tmp_path_factory, docker_engine, slurm_cluster):
    """The tiny evaluation made by the local executor and on the cluster (module doc)."""
    root = tmp_path_factory.mktemp("slurm")
    slurm = make_workspace(root / "slurm", TINY)
    SLURM_WORKSPACES.add(slurm.resolve())  # its Snakemake asks the real scontrol
    timings = {}
    clock = time.monotonic()
    # the local executor's run: the test run's shared tiny evaluation, made (or waited for,
    # when another worker makes it) while the Slurm run goes on
    local_run = ThreadPoolExecutor(1)
    local_future = local_run.submit(finished_reference, shared_root(tmp_path_factory))
    try:
        # 1. the trials stage under Slurm; a shard's job cancelled, no retries left
        first = subprocess.Popen(
            [venv_tool("snakemake"), *SLURM, "--retries", "0", "all_trials"],
            cwd=slurm,
            env=tool_env(slurm),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        try:
            job, done = _cancel_running_shard(slurm, first)
            output, _ = first.communicate(timeout=300)
        finally:
            if first.poll() is None:
                first.kill()
        timings["slurm: trials stage until the cancelled job failed"] = round(
            time.monotonic() - clock, 1
        )
        at_cancel = _rows(slurm / "results/trials/steady/1x/journals/t0000-c0000.jsonl")
        cancelled_log = (slurm / VICTIM_LOG).read_text()  # Snakemake empties it on a rerun
        # 2. as shipped: the cancelled shard is resubmitted and resumes
        clock2 = time.monotonic()
        run_tool(slurm, "snakemake", *SLURM, *([] if FULL_DAG else ["all_trials"]), timeout=900)
        timings["slurm: rerun" + (" (whole DAG)" if FULL_DAG else " (trials stage)")] = round(
            time.monotonic() - clock2, 1
        )
        # 3. the rest locally (nothing left with EVALNOISE_SLURM_FULL_DAG)
        clock3 = time.monotonic()
        run_tool(slurm, "snakemake")
        timings["local: the rest in the Slurm workspace"] = round(time.monotonic() - clock3, 1)
        local = local_future.result(timeout=900)
        timings["local: ready (made concurrently, or shared)"] = round(time.monotonic() - clock, 1)
    finally:
        local_run.shutdown(wait=True)  # a build in progress finishes (or fails) first
    print("test_slurm timings (s):", timings)
    return {
        "root": root,
        "local": local,
        "slurm": slurm,
        "first_rc": first.returncode,
        "first_output": output,
        "cancelled_job": job,
        "journaled_when_cancelled": done,
        "at_cancel": at_cancel,
        "cancelled_log": cancelled_log,
    }


# -- what is compared ---------------------------------------------------------------------------


def _table(workspace: Path, kind: str) -> pd.DataFrame:
    frames = [
        pd.read_parquet(p) for p in sorted(workspace.glob(f"results/{kind}/*/*/t*/c*.parquet"))
    ]
    frame = pd.concat(frames, ignore_index=True)
    return frame.sort_values(TRIAL_KEY).reset_index(drop=True)


#: Group metrics of the attribution stage. When the time-block design of a group leaves no
#: residual degrees of freedom (its trials ran in bursts: a cancelled shard resumed later),
#: the stage reports the group "not_computed" and these are null — a function of when trials
#: ran too.
ATTRIBUTION_KEYS = ("infra_share", "flaky_tasks", "policy_moves_result")


def _comparable(metrics: dict, other: dict) -> dict:
    """``metrics`` without what depends on when trials ran (see WHEN_KEYS, ATTRIBUTION_KEYS)."""
    out = without_when(metrics)
    for name, group in out["groups"].items():
        theirs = other["groups"].get(name, {})
        if group.get("flaky_tasks") is None or theirs.get("flaky_tasks") is None:
            for key in ATTRIBUTION_KEYS:
                group.pop(key, None)
    return out


def _masked(path: Path) -> object:
    """What of an artifact must not depend on when its trials ran."""
    if path.suffix == ".parquet":
        frame = pd.read_parquet(path).drop(columns=MEASURED, errors="ignore")
        return frame.sort_values(TRIAL_KEY).reset_index(drop=True).to_csv(index=False)
    if path.suffix == ".json":
        return without_when(json.loads(path.read_text()))
    return WHEN_TEXT.sub("<when>", path.read_text())


#: The attribution block of a group in summary.txt (a "not computed" line instead, see above).
ATTRIBUTION_LINES = re.compile(
    r"^ *(infra policy:|infrastructure share of variance|flaky tasks:|attribution: not computed)"
    r".*\n",
    re.M,
)


def _masked_pair(ours: Path, theirs: Path) -> tuple[object, object]:
    """Both artifacts without what depends on when trials ran."""
    if ours.name == "metrics.json":
        mine, other = json.loads(ours.read_text()), json.loads(theirs.read_text())
        return _comparable(mine, other), _comparable(other, mine)
    if ours.name == "summary.txt":
        texts = [ours.read_text(), theirs.read_text()]
        if any("attribution: not computed" in text for text in texts):
            texts = [ATTRIBUTION_LINES.sub("", text) for text in texts]
        return tuple(WHEN_TEXT.sub("<when>", NOISE_LINES.sub("", text)) for text in texts)
    return _masked(ours), _masked(theirs)


def _artifacts(workspace: Path) -> dict[str, str]:
    manifest = json.loads((workspace / "results" / "manifest.json").read_text())
    return {a["path"]: a["sha256"] for a in manifest["artifacts"]}


# -- the tests --------------------------------------------------------------------------------


def test_slurm_results_are_the_local_results(runs):
    local, slurm = runs["local"], runs["slurm"]
    for kind in ("trials", "scores"):
        mine, theirs = _table(slurm, kind), _table(local, kind)
        assert len(mine) == N_TRIALS
        for column in ("status", "prediction", "seed", "score"):  # outcomes, answers, seeds
            pd.testing.assert_series_equal(mine[column], theirs[column])
        pd.testing.assert_frame_equal(mine.drop(columns=MEASURED), theirs.drop(columns=MEASURED))
    assert set(_table(slurm, "trials")["status"]) == {"ok"}

    metrics = {w: json.loads((w / "results" / "metrics.json").read_text()) for w in (slurm, local)}
    assert _comparable(metrics[slurm], metrics[local]) == _comparable(
        metrics[local], metrics[slurm]
    )
    assert len(metrics[slurm]["groups"]) == 2 and len(metrics[slurm]["comparisons"]) == 1

    # the manifest's digests: identical, but for what holds a measurement of the run
    ours, theirs = _artifacts(slurm), _artifacts(local)
    assert set(ours) == set(theirs)
    stages = ("results/tasks.parquet", "results/trials/", "results/scores/", "results/analysis/")
    # the manifest hashes every file those stages wrote (results/ checked against it by
    # `evalnoise archive`): the tasks, 2 groups' images, canaries, trial and score shards, the
    # trial shards' actions tables, and the analysis's run-wide and per-group files
    staged = sorted(p for p in ours if p.startswith(stages))
    assert len(staged) == 32, staged
    differ = {p for p in ours if ours[p] != theirs[p]}
    may_differ = {
        *(p for p in ours if re.fullmatch(r"results/(trials|scores)/.*/c[^/]*\.parquet", p)),
        "results/metrics.json",
        "results/analysis/summary.txt",
        "results/analysis/groups.json",  # the groups' cost drivers: container seconds
        # the same per group, and what the manifest hashes since it covers all of results/:
        # each canary's trial and each journal's rows (the shards' rows, compared above)
        *(p for p in ours if re.fullmatch(r"results/analysis/groups/.*\.json", p)),
        *(p for p in ours if re.fullmatch(r"results/trials/[^/]*/canary\.json", p)),
        *(p for p in ours if re.fullmatch(r"results/trials/.*/journals/.*\.jsonl", p)),
        # the attribution's drift test reads the trials' wall-clock times
        "results/analysis/attribution.json",
    }
    assert differ <= may_differ, f"differ in more than measurements: {differ - may_differ}"
    for path in differ:
        if path.endswith((".jsonl", "/canary.json", "/attribution.json")):
            # a journal's rows are its shard's, compared above without measurements; a
            # canary is one measured trial (its duration), proven ok in both runs; the
            # attribution's drift is over the trials' start times
            continue
        mine, other = _masked_pair(slurm / path, local / path)
        assert mine == other, path
    identical = set(ours) - may_differ
    assert {p for p in identical if p.startswith("results/analysis/")} == {
        f"results/analysis/{name}"
        for name in (
            "comparisons.json",
            "convergence.csv",
            "budget.csv",
            "per_task.csv",
            "resource_profiles.csv",
            # and the per-group and run-wide records behind them (the manifest hashes all)
            "flaky_tasks.csv",
            "resource_sensitivity.parquet",
            "budget/shaky/1x.csv",
            "budget/steady/1x.csv",
            "convergence/shaky/1x.csv",
            "convergence/steady/1x.csv",
            "pairs/agents/1x/shaky/steady.json",
        )
    }

    # the manifest says where the trials ran
    execution = {
        w: json.loads((w / "results" / "manifest.json").read_text())["execution"]
        for w in (slurm, local)
    }
    assert execution[local]["executors"] == ["local"]
    assert execution[slurm]["executors"] == ["slurm"]
    jobs = execution[slurm]["trial_jobs"]
    assert all(j["executor"] == "slurm" and j["slurm_job_id"].isdigit() for j in jobs)
    assert sorted(j["shard"] for j in jobs) == sorted(
        [VICTIM, VICTIM, "results/trials/shaky/1x/t0000-0001/c0000-0002.parquet"]
    )


def test_a_cancelled_shard_fails_by_name_and_resumes(runs, docker_engine):
    slurm, job = runs["slurm"], runs["cancelled_job"]
    # no retries left: the run fails, naming the Slurm job, its state and its logs
    assert runs["first_rc"] != 0
    output = runs["first_output"]
    assert f"SLURM-job '{job}' failed, SLURM status is: 'CANCELLED'" in output
    slurm_log = VICTIM_SLURM_LOG.format(job=job)
    assert slurm_log in output and VICTIM_LOG in output
    assert f"*** JOB {job} ON localhost CANCELLED" in (slurm / slurm_log).read_text()
    assert f"executor: slurm, Slurm job {job}," in runs["cancelled_log"]

    # the rerun resumed: what was journaled before the cancel was kept and not run again
    at_cancel = runs["at_cancel"]
    assert 1 <= len(at_cancel) < 6
    rows = [r for rs in journals(slurm).values() for r in rs]
    keys = [tuple(r[k] for k in TRIAL_KEY) for r in rows]
    assert len(rows) == N_TRIALS and len(set(keys)) == N_TRIALS
    started = dict(zip(keys, (r["started_at"] for r in rows), strict=True))
    for row in at_cancel:
        assert started[tuple(row[k] for k in TRIAL_KEY)] == row["started_at"]
    records = json.loads((slurm / VICTIM_RECORD).read_text())
    assert len(records) == 2 and records[0]["slurm_job_id"] == job  # cancelled, resumed
    assert records[1]["slurm_job_id"] not in (None, job)
    log = (slurm / VICTIM_LOG).read_text()  # the resumed job's
    assert f"executor: slurm, Slurm job {records[1]['slurm_job_id']}," in log
    assert f"({6 - len(at_cancel)} attempts run now, {len(at_cancel)} resumed)" in log
    # and the containers the cancelled job left behind were removed by the resumed one
    assert not leftover_containers(docker_engine, slurm)


def test_slurm_results_restore_elsewhere_with_dvc(runs, tmp_path):
    """dvc push to a directory remote, dvc pull in a fresh clone: `dvc status` clean and
    nothing for Snakemake to do (once `snakemake --touch` has restored the order of mtimes)."""
    slurm = runs["slurm"]
    run_tool(slurm, "dvc", "repro")
    remote = tmp_path / "remote"
    run_tool(slurm, "dvc", "remote", "add", "-d", "elsewhere", str(remote))
    git(slurm, "add", "-A")
    git(slurm, "commit", "-qm", "results made on the cluster")
    run_tool(slurm, "dvc", "push")
    assert any(remote.iterdir())
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(slurm), str(clone)], check=True)
    run_tool(clone, "dvc", "pull")
    status = run_tool(clone, "dvc", "status")
    assert "Data and pipelines are up to date" in status.stdout + status.stderr
    # One `snakemake --touch` is not always enough: when the pull leaves a canary older than
    # its image record, Snakemake plans the canary and skips checking every job below the
    # canary's ancient() edge (snakemake/snakemake#4166); a second pass finds them.
    for _ in range(2):
        run_tool(clone, "snakemake", "--touch")
        planned = job_counts(run_tool(clone, "snakemake", "-n").stdout)
        if not planned:
            break
    assert planned == {}  # (the last dry run's answer: nothing changed since)
    assert "Data and pipelines are up to date" in run_tool(clone, "dvc", "status").stdout
    for pattern in ("results/trials/*/*/t*/c*.parquet", "results/trials/*/*/journals/*.jsonl"):
        pulled = digests(sorted(clone.glob(pattern)))
        made = digests(sorted(slurm.glob(pattern)))
        assert sorted(pulled.values()) == sorted(made.values()) and pulled
    manifest = json.loads((clone / "results" / "manifest.json").read_text())
    assert manifest["execution"]["executors"] == ["slurm"]
