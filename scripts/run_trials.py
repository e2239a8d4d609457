"""Snakemake entry point of rule `run_trials`: one shard of trials, resumable."""

from evalnoise.pipeline.jobs import log_to
from evalnoise.pipeline.shards import run_trials_shard
from evalnoise.pipeline.slurm_resources import record_job

log_to(snakemake.log[0])
record_job(snakemake.output.shard, log=snakemake.log[0])  # executor, Slurm job id
p = snakemake.params
run_trials_shard(
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
)
