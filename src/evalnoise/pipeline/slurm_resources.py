"""What a ``run_trials`` job asks a cluster scheduler for, and which jobs ran a shard.

A trial shard runs ``concurrency`` trials at once (the job's ``threads``), each under the
allocation its resource profile gives the task (:func:`evalnoise.runner.resources.allocate`).
Under Slurm (``profiles/slurm``) the job's request should agree with those allocations, so
the scheduler never packs more trials onto a node than their limits allow, and never kills a
job for holding what its containers were promised:

- ``mem_mb`` = the largest per-trial memory of the shard (the profile's hard limit; the
  guarantee when the profile is uncapped, which leaves the job's allocation as the effective
  cap) × the trials running at once, + the job's own memory (:data:`RUNNER_OVERHEAD_MB`:
  the job step's Snakemake and the one it starts under ``srun``, each parsing the workflow,
  and the trial runner) + the model server's when the agent uses one
  (:data:`SERVER_OVERHEAD_MB`);
- ``cpus_per_task`` = the largest per-trial CPU *guarantee* × the trials running at once
  (CPU limits are bursts above it); the job's ``threads`` for the usual 1-CPU tasks;
- ``runtime`` (minutes, the kill line) = the worst case: every trial uses its whole time
  limit (the profile's factor applied), plus :data:`TRIAL_OVERHEAD_S` for its container,
  and every attempt the infra policy allows is needed, spread over ``concurrency`` slots,
  plus :data:`MARGIN_S` for the job's start (imports, the model server) and end.

"The trials running at once" is ``min(concurrency, trials in the shard)``. With
``backend: docker`` the containers run under the Docker engine, not inside the Slurm job:
the request then reserves the node's capacity for them (what keeps the scheduler from
over-packing a node); with ``backend: local`` the agents run inside the job, and a cluster
that enforces job limits (``TaskPlugin=task/cgroup``) enforces these. A rerun job resumes from
the shard's journal and needs less; the request stays the worst case.

Every ``run_trials`` job records how it ran (:func:`record_job`: executor, Slurm job id,
node) in a small JSON list per shard under ``results/logs/jobs/`` and in the shard's log;
the manifest lists the records (:func:`evalnoise.pipeline.outputs.execution_record`).
"""

from __future__ import annotations

import json
import logging
import math
import os
import platform
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from evalnoise.runner.infra_policies import infra_policy as make_policy
from evalnoise.runner.resources import MIB, allocate, resource_profile

__all__ = [
    "MARGIN_S",
    "RUNNER_OVERHEAD_MB",
    "SERVER_OVERHEAD_MB",
    "TRIAL_OVERHEAD_S",
    "ShardJobResources",
    "job_record_path",
    "read_job_records",
    "record_job",
    "shard_job_resources",
]

#: The job's own memory besides its trials: two Snakemake processes (the job step's and the
#: one it runs under ``srun``: each parses the workflow) and the trial runner, rounded up
#: from a Slurm job's peak (``tests/pipeline/test_slurm.py`` runs such jobs).
RUNNER_OVERHEAD_MB = 768
#: A managed llama.cpp server serving SmolLM2-135M, rounded up from its peak RSS.
SERVER_OVERHEAD_MB = 512
#: Per trial besides its time limit: creating, starting and removing its container.
TRIAL_OVERHEAD_S = 5.0
#: Per job: start-up (imports, a model server's start), writing the shard, slack.
MARGIN_S = 300.0


@dataclass(frozen=True)
class ShardJobResources:
    """A ``run_trials`` job's request: Snakemake resources the Slurm executor maps to
    ``sbatch --cpus-per-task``, ``--mem`` (MB) and ``-t`` (minutes)."""

    cpus_per_task: int
    mem_mb: int
    runtime: int
    #: Trials running at once (``min(concurrency, trials in the shard)``).
    parallel: int
    #: Trial runs in the shard (tasks × trials).
    trials: int

    def resources(self) -> dict[str, int]:
        """The three values Snakemake's ``resources:`` takes."""
        out = asdict(self)
        return {key: out[key] for key in ("cpus_per_task", "mem_mb", "runtime")}


def _task_specs(tasks: Any) -> list[tuple[float, float, float]]:
    """(cpus, memory_mb, time_limit_s) of each task: rows of a TASKS frame or mappings."""
    if hasattr(tasks, "to_dict"):
        tasks = tasks.to_dict("records")
    specs = [(float(t["cpus"]), float(t["memory_mb"]), float(t["time_limit_s"])) for t in tasks]
    if not specs:
        raise ValueError("a shard needs at least one task")
    return specs


def shard_job_resources(
    tasks: Iterable[Mapping[str, Any]] | Any,
    profile: str | Mapping[str, Any],
    *,
    trials: int,
    concurrency: int,
    infra_policy: str | Mapping[str, Any] = "as_incorrect",
    served: bool = False,
    runner_overhead_mb: float = RUNNER_OVERHEAD_MB,
    server_overhead_mb: float = SERVER_OVERHEAD_MB,
    trial_overhead_s: float = TRIAL_OVERHEAD_S,
    margin_s: float = MARGIN_S,
) -> ShardJobResources:
    """The cluster request of one shard (see the module docstring for the formulas).

    ``tasks``: the shard's task rows (a TASKS frame or mappings with ``cpus``,
    ``memory_mb``, ``time_limit_s``); ``profile``: the resource profile (a built-in name or
    its config mapping with ``name``); ``trials``: trial indices per task; ``concurrency``:
    trials at once (the job's threads); ``infra_policy``: its ``max_attempts`` bound the
    attempts per trial; ``served``: the agent needs the managed model server.
    """
    if isinstance(trials, bool) or not isinstance(trials, int) or trials < 1:
        raise ValueError(f"trials must be a positive integer, got {trials!r}")
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ValueError(f"concurrency must be a positive integer, got {concurrency!r}")
    rp = resource_profile(profile)
    specs = _task_specs(tasks)
    allocations = [allocate(cpus, mem, limit, rp) for cpus, mem, limit in specs]
    runs = len(allocations) * trials
    parallel = min(concurrency, runs)
    attempts = make_policy(infra_policy).max_attempts

    per_trial_bytes = max(
        a.memory_limit_bytes if a.memory_limit_bytes is not None else a.memory_reservation_bytes
        for a in allocations
    )
    memory = per_trial_bytes / MIB * parallel + runner_overhead_mb
    if served:
        memory += server_overhead_mb

    per_trial_cpus = max(cpus for cpus, _, _ in specs) * rp.cpu_guarantee_factor
    cpus = max(1, math.ceil(round(per_trial_cpus * parallel, 6)))

    per_trial_s = max(a.time_limit_s for a in allocations) + trial_overhead_s
    seconds = per_trial_s * runs * attempts / parallel + margin_s
    return ShardJobResources(
        cpus_per_task=cpus,
        mem_mb=math.ceil(memory),
        runtime=max(1, math.ceil(seconds / 60)),
        parallel=parallel,
        trials=runs,
    )


# -- which jobs ran a shard -------------------------------------------------------------------


def job_record_path(shard: str | os.PathLike[str]) -> Path:
    """Where the jobs that ran ``shard`` are recorded: ``results/trials/<...>.parquet`` →
    ``results/logs/jobs/trials/<...>.json``. A log, not an artifact: it says how the shard
    was made, not what it holds, so it is neither hashed nor versioned by DVC."""
    path = Path(shard)
    parts = path.parts
    if "results" in parts:
        at = len(parts) - 1 - parts[::-1].index("results")
        return Path(*parts[: at + 1], "logs", "jobs", *parts[at + 1 :]).with_suffix(".json")
    return path.with_name(path.name + ".jobs.json")


def read_job_records(shard: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The records :func:`record_job` left for ``shard``, oldest first ([] if none)."""
    try:
        records = json.loads(job_record_path(shard).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    if not isinstance(records, list):
        return []
    return [r for r in records if isinstance(r, dict)]


def record_job(
    shard: str | os.PathLike[str],
    *,
    log: str | os.PathLike[str] | None = None,
    environ: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Append how this job runs to ``shard``'s job record and log it; returns the record.

    Executor ``slurm`` when ``SLURM_JOB_ID`` is set (the job runs in a Slurm allocation),
    else ``local``; with the Slurm job id, cluster and node. Called when the job starts, so
    a job that is cancelled or killed is recorded too.
    """
    from evalnoise.atomic import write_text

    env = os.environ if environ is None else environ
    job_id = env.get("SLURM_JOB_ID") or None
    record = {
        "executor": "slurm" if job_id else "local",
        "slurm_job_id": job_id,
        "slurm_cluster": env.get("SLURM_CLUSTER_NAME") or None,
        "node": env.get("SLURMD_NODENAME") or platform.node(),
        "log": None if log is None else str(log),
        "started_at": datetime.now(UTC).isoformat().replace("+00:00", "Z"),
    }
    path = job_record_path(shard)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text(path, json.dumps([*read_job_records(shard), record], indent=2) + "\n")
    logging.getLogger(__name__).info(
        "executor: %s%s, node %s (job record: %s)",
        record["executor"],
        f", Slurm job {job_id}" if job_id else "",
        record["node"],
        path,
    )
    return record
