"""Snakemake entry point of rule `run_trials`: one shard of trials, resumable."""

import os

from evalnoise.pipeline import faults
from evalnoise.pipeline.jobs import log_to

# a fault of the environment (engine, disk) is said in one line on the terminal too
console = os.fdopen(os.dup(2), "w")
log = log_to(snakemake.log[0])
p = snakemake.params
w = snakemake.wildcards


def run():
    # imported here: a retried attempt whose fault has not cleared ends before it needs them
    from evalnoise.pipeline.shard_job import ShardFiles, ShardJob
    from evalnoise.pipeline.shards import run_trials_shard
    from evalnoise.pipeline.slurm_resources import record_job

    record_job(snakemake.output.shard, log=snakemake.log[0])  # executor, Slurm job id
    job = ShardJob.from_params(p, tasks_path=snakemake.input.tasks, concurrency=snakemake.threads)
    files = ShardFiles.from_params(
        p,
        output=snakemake.output.shard,
        log=snakemake.log[0],
        image_info=snakemake.input.image,
        actions=snakemake.output.actions,
    )
    return run_trials_shard(job, files)


name = f"run_trials {w.agent}@{w.resource_profile} t{w.block} c{w.chunk}{w.variant}"
faults.job(
    run,
    name=name,
    log_path=snakemake.log[0],
    console=console,
    log=log,
    output=snakemake.output.shard,
    engine_check=faults.engine_probe(p.backend),
)


def name_task_failures():
    """A task whose every trial failed alike (its image did not build), named on the
    console once."""
    import pandas as pd

    from evalnoise.infra_failures import failure_lines, task_failures

    for line in failure_lines(task_failures(pd.read_parquet(snakemake.output.shard))):
        log.warning("%s", line)
        print(f"{name}: {line}", file=console, flush=True)


name_task_failures()
