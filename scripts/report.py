"""Snakemake entry point of rule `report`: charts, Evaluation Cards, index.html. The
directory is built beside its place and renamed into it: a killed job never leaves a
half-populated results/report.

The attribution files are read with :func:`evalnoise.attribution.read_attribution`: one that
is missing or invalid is named in the report's "Where the noise comes from" section (and
this job's log), never a failed build."""

import json

import pandas as pd

from evalnoise.atomic import atomic_directory
from evalnoise.attribution.tables import read_attribution
from evalnoise.pipeline.jobs import log_to
from evalnoise.pipeline.outputs import run_report


def load(path):
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


log = log_to(snakemake.log[0])
i = snakemake.input
images = {info["agent"]: info["image"] for info in map(load, i.images) if info["image"]}
attribution = read_attribution(i.attribution, i.resource_sensitivity, i.flaky_tasks)
for problem in attribution.problems:
    log.warning("attribution: %s", problem)
comparisons = load(i.comparisons)
sequential, rounds = None, []
if i.sequential:  # sequential mode: summary.json and rounds.csv
    sequential = load(i.sequential[0])
    rounds = pd.read_csv(i.sequential[1]).to_dict("records")
with atomic_directory(snakemake.output.report) as staging:
    files = run_report(
        staging,
        snakemake.params.config,
        groups=load(i.groups),
        comparisons=comparisons["comparisons"],
        skipped=comparisons.get("skipped", []),
        convergence=pd.read_csv(i.convergence),
        budget=pd.read_csv(i.budget),
        profiles=pd.read_csv(i.profiles),
        per_task=pd.read_csv(i.per_task),
        manifest=load(i.manifest),
        images=images,
        attribution=attribution,
        sequential=sequential,
        sequential_rounds=rounds,
    )
log.info("report: %d files", len(files))
