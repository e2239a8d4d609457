"""Snakemake entry point of rule `run_trials`: one shard of trials, resumable."""

import os

from evalnoise.pipeline import faults
from evalnoise.pipeline.jobs import log_to
from evalnoise.pipeline.shards import run_trials_shard
from evalnoise.pipeline.slurm_resources import record_job

# a fault of the environment (engine, disk) is said in one line on the terminal too
console = os.fdopen(os.dup(2), "w")
log = log_to(snakemake.log[0])
record_job(snakemake.output.shard, log=snakemake.log[0])  # executor, Slurm job id
p = snakemake.params
w = snakemake.wildcards
faults.job(
    lambda: run_trials_shard(
        tasks_path=snakemake.input.tasks,
        image_info=snakemake.input.image,
        rows=p.rows,
        agent=p.agent,
        resource_profile=p.resource_profile,
        trials=p.trials,
        run_seed=p.run_seed,
        infra_policy=p.infra_policy,
        backend=p.backend,
        journal=p.journal,
        output=snakemake.output.shard,
        concurrency=snakemake.threads,
        server=p.server,
        server_log=snakemake.log[0] + ".server",
        reward_key=p.reward_key,
        variant=getattr(p, "variant", None),
    ),
    name=f"run_trials {w.agent}@{w.resource_profile} t{w.block} c{w.chunk}{w.variant}",
    log_path=snakemake.log[0],
    console=console,
    log=log,
    output=snakemake.output.shard,
    engine_check=faults.engine_probe(p.backend),
)
