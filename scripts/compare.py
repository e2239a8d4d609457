"""Snakemake entry point of rule `compare`: one pair of groups, paired tests."""

from evalnoise.atomic import write_text
from evalnoise.formatting import dumps, fmt
from evalnoise.pipeline.collect import group_data, read_levels, read_scores
from evalnoise.pipeline.jobs import log_to
from evalnoise.pipeline.stages import compare_groups

log = log_to(snakemake.log[0])
w, p = snakemake.wildcards, snakemake.params
i = snakemake.input
levels = read_levels(i.tasks)
scores_a = read_scores(i.a)
# one file holds both groups when the trials were imported: read it once
scores_b = scores_a if list(i.b) == list(i.a) else read_scores(i.b)
a = group_data(scores_a, levels, *p.groups["a"], p.infra_policy)
b = group_data(scores_b, levels, *p.groups["b"], p.infra_policy)
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
