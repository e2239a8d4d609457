"""Snakemake entry point of rule `report`: charts, Evaluation Cards, index.html. The
directory is built beside its place and renamed into it: a killed job never leaves a
half-populated results/report.

The inputs are read into one :class:`evalnoise.report.inputs.ReportInputs`; its attribution
tables come from :func:`evalnoise.attribution.read_attribution`: a file that is missing or
invalid is named in the report's "Where the noise comes from" section (and this job's log),
never a failed build."""

import json

from evalnoise.atomic import atomic_directory
from evalnoise.pipeline.jobs import log_to
from evalnoise.pipeline.outputs import card_context
from evalnoise.report.build import build_report
from evalnoise.report.inputs import ReportInputs


def load(path):
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


log = log_to(snakemake.log[0])
i = snakemake.input
images = {info["agent"]: info["image"] for info in map(load, i.images) if info["image"]}
inputs = ReportInputs.read(
    card_context(snakemake.params.config, images=images),
    groups=i.groups,
    comparisons=i.comparisons,
    convergence=i.convergence,
    budget=i.budget,
    profiles=i.profiles,
    per_task=i.per_task,
    manifest=i.manifest,
    attribution=i.attribution,
    resource_sensitivity=i.resource_sensitivity,
    flaky_tasks=i.flaky_tasks,
    sequential=list(i.sequential),
)
for problem in inputs.attribution.problems:
    log.warning("attribution: %s", problem)
png = snakemake.params.config["report"]["png"]
with atomic_directory(snakemake.output.report) as staging:
    files = build_report(staging, inputs, png=png)
log.info("report: %d files", len(files))
