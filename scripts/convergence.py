"""Snakemake entry point of rule `convergence`: ICC over growing trial counts, one group."""

from evalnoise.atomic import atomic_path
from evalnoise.pipeline.collect import load_group
from evalnoise.pipeline.jobs import log_to
from evalnoise.pipeline.stages import convergence_table

log = log_to(snakemake.log[0])
p = snakemake.params
data = load_group(snakemake.input.scores, snakemake.input.tasks, *p.group, p.infra_policy)
table = convergence_table(data, p.analysis, p.health)
with atomic_path(snakemake.output.table) as tmp:
    table.to_csv(tmp, index=False, float_format="%.6g")
log.info("%s: %d convergence rows", data.group, len(table))
