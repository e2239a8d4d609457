"""Snakemake entry point of rule `judge_quality`: the judge against the reference, and its
own noise, for one agent × resource profile."""

from evalnoise.atomic import write_text
from evalnoise.formatting import dumps
from evalnoise.pipeline.jobs import log_to
from evalnoise.pipeline.judging import judge_quality

log = log_to(snakemake.log[0])
p = snakemake.params
record = judge_quality(
    snakemake.input.reference,
    snakemake.input.judged,
    snakemake.input.tasks,
    *p.group,
    options=p.analysis,
    policy=p.infra_policy,
    judge=p.judge,
)
write_text(snakemake.output.stats, dumps(record) + "\n")
agreement = record["agreement"] or {}
log.info(
    "%s: %d sent to the judge, parse rate %s, kappa %s",
    record["group"],
    record["sent"],
    record["parse_rate"],
    agreement.get("kappa"),
)
