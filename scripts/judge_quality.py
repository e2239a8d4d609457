"""Snakemake entry point of rule `judge_quality`: every judge against the reference, their
own noise and their variance as a facet, for one agent × resource profile."""

from evalnoise.atomic import write_text
from evalnoise.formatting import dumps
from evalnoise.pipeline.jobs import log_to
from evalnoise.pipeline.judging import judge_quality

log = log_to(snakemake.log[0])
p = snakemake.params
record = judge_quality(
    snakemake.input.reference,
    dict(p.judged),
    snakemake.input.tasks,
    *p.group,
    options=p.analysis,
    policy=p.infra_policy,
    judges=p.judges,
    reference=p.reference,
)
write_text(snakemake.output.stats, dumps(record) + "\n")
for judge in record["judges"]:
    log.info(
        "%s: judge %s: %d sent, parse rate %s, kappa %s",
        record["group"],
        judge["name"],
        judge["sent"],
        judge["parse_rate"],
        (judge["agreement"] or {}).get("kappa"),
    )
log.info("%s: best judge %s", record["group"], record["best_judge"])
