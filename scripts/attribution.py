"""Snakemake entry point of rule `attribution`: where the noise comes from, for the run —
policy sensitivity, resource sensitivity per task, flaky tasks, time and host effects."""

import pandas as pd

from evalnoise.atomic import atomic_path, write_csv, write_text
from evalnoise.attribution.all_analyses import TrialColumns
from evalnoise.formatting import dumps
from evalnoise.pipeline.attribution_stage import attribution_tables
from evalnoise.pipeline.collect import read_scores
from evalnoise.pipeline.jobs import log_to

log = log_to(snakemake.log[0])
p, o = snakemake.params, snakemake.output
out = attribution_tables(
    # only the columns the analyses read: a score shard's other columns cost the read
    read_scores(snakemake.input.scores, columns=TrialColumns().read()),
    pd.read_parquet(snakemake.input.tasks),
    policy=p.infra_policy,
    options=p.analysis,
    groups=[tuple(g) for g in p.groups],
    task_pool=p.task_pool,
    imported=p.imported,
)
write_text(o.summary, dumps(out["summary"]) + "\n")
with atomic_path(o.resource) as tmp:
    out["resource"].to_parquet(tmp, index=False)
write_csv(o.flaky, out["flaky"])
log.info(
    "%d groups; %d resource-sensitivity rows; %d flaky-task flags",
    len(out["summary"]),
    len(out["resource"]),
    len(out["flaky"]),
)
