"""Snakemake entry point of rule `compare`: one pair of groups, paired tests."""

from evalnoise.atomic import write_text
from evalnoise.formatting import dumps, fmt
from evalnoise.pipeline.collect import load_group
from evalnoise.pipeline.jobs import log_to
from evalnoise.pipeline.stages import compare_groups

log = log_to(snakemake.log[0])
w, p = snakemake.wildcards, snakemake.params
a = load_group(snakemake.input.a, snakemake.input.tasks, *p.groups["a"], p.infra_policy)
b = load_group(snakemake.input.b, snakemake.input.tasks, *p.groups["b"], p.infra_policy)
within = a.resource_profile if w.kind == "agents" else a.agent
record = compare_groups(a, b, kind=w.kind, within=within, options=p.analysis, health=p.health)
write_text(snakemake.output.pair, dumps(record) + "\n")
if record["skipped"]:
    log.warning("%s vs %s: not compared: %s", record["a"], record["b"], record["reason"])
else:
    log.info(
        "%s − %s: diff %.4f, p %s",
        record["a"],
        record["b"],
        record["diff"],
        fmt(record["pvalue"], ".4g"),
    )
