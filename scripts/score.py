"""Snakemake entry point of rules `score` and `judge`: score one trial shard (the reference
scorer, or the LLM judge)."""

from evalnoise.pipeline.jobs import log_to
from evalnoise.pipeline.shards import score_shard

log = log_to(snakemake.log[0])
p = snakemake.params
table = score_shard(
    trials_path=snakemake.input.trials,
    tasks_path=snakemake.input.tasks,
    scorer=p.scorer,
    output=snakemake.output[0],
    server=p.server,
    server_log=snakemake.log[0] + ".server",
    judge_cache=p.judge_cache,
)
failed = table.column("judge_status").to_pylist().count("judge_error")
log.info(
    "scored %d trials with %s; %d unscored (judge_error)", table.num_rows, p.scorer["name"], failed
)
