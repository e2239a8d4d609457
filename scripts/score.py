"""Snakemake entry point of rules `score` and `judge`: score one trial shard (the reference
scorer, or the LLM judge)."""

from evalnoise.pipeline import faults
from evalnoise.pipeline.jobs import job_console, log_to
from evalnoise.pipeline.shards import score_shard

# a fault of the environment (disk, model server) is said in one line on the terminal too
console = job_console()
log = log_to(snakemake.log[0])
p = snakemake.params
w = snakemake.wildcards
table = faults.job(
    lambda: score_shard(
        trials_path=snakemake.input.trials,
        tasks_path=snakemake.input.tasks,
        scorer=p.scorer,
        output=snakemake.output[0],
        server=p.server,
        server_log=snakemake.log[0] + ".server",
        judge_cache=p.judge_cache,
    ),
    name=f"{snakemake.rule} {w.agent}@{w.resource_profile} t{w.block} c{w.chunk}",
    log_path=snakemake.log[0],
    console=console,
    log=log,
    output=snakemake.output[0],
)
failed = table.column("judge_status").to_pylist().count("judge_error")
log.info(
    "scored %d trials with %s; %d unscored (judge_error)", table.num_rows, p.scorer["name"], failed
)
