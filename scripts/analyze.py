"""Snakemake entry point of rule `analyze`: one agent × resource profile, overall and per level."""

from evalnoise.atomic import write_text
from evalnoise.formatting import dumps
from evalnoise.pipeline.collect import load_group
from evalnoise.pipeline.jobs import log_to
from evalnoise.pipeline.stages import analyze_group
from evalnoise.runner.policy import infra_policy

log = log_to(snakemake.log[0])
p = snakemake.params
data = load_group(snakemake.input.scores, snakemake.input.tasks, *p.group, p.infra_policy)
stats = analyze_group(
    data, p.analysis, policy=infra_policy(p.infra_policy).describe(), health=p.health
)
write_text(snakemake.output.stats, dumps(stats) + "\n")
log.info(
    "%s: %d tasks, %d counted trials, %d levels; outcomes %s",
    data.group,
    stats["overall"]["n_tasks"],
    stats["overall"]["n_obs"],
    len(stats["levels"]),
    stats["outcomes"],
)
for reason in stats["health"]["reasons"]:
    log.warning(
        "%s: %s%s", data.group, reason, " (expected)" if stats["health"]["expected"] else ""
    )
