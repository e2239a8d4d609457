"""Snakemake entry point of rule `report`: charts, Evaluation Cards, index.html. The
directory is built beside its place and renamed into it: a killed job never leaves a
half-populated results/report.

The report is built with :func:`evalnoise.report.build_report` directly (the arguments
:func:`evalnoise.pipeline.outputs.run_report` gives it, plus the attribution stage's results,
which run_report does not pass on). The attribution files are read with
:func:`evalnoise.attribution.read_attribution`: one that is missing or invalid is named in
the report's "Where the noise comes from" section, never a failed build."""

import json

import pandas as pd

from evalnoise.atomic import atomic_directory
from evalnoise.attribution.tables import read_attribution
from evalnoise.pipeline.jobs import log_to
from evalnoise.pipeline.outputs import _KIND_LABELS, card_context
from evalnoise.report import build_report


def load(path):
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def kind(record):
    return {**record, "kind": _KIND_LABELS.get(record["kind"], record["kind"])}


def table(frame):
    return frame if len(frame) else None


log = log_to(snakemake.log[0])
i = snakemake.input
images = {info["agent"]: info["image"] for info in map(load, i.images) if info["image"]}
groups, comparisons = load(i.groups), load(i.comparisons)
pairs = pd.DataFrame(
    [
        {
            **{k: r[k] for k in ("a", "b", "diff", "ci_low", "ci_high")},
            "p_paired_holm": r.get("p_paired_holm"),
            "kind": kind(r)["kind"],
        }
        for r in comparisons["comparisons"]
    ]
)
attribution = read_attribution(i.attribution, i.resource_sensitivity, i.flaky_tasks)
for problem in attribution.problems:
    log.warning("attribution: %s", problem)
with atomic_directory(snakemake.output.report) as staging:
    files = build_report(
        staging,
        groups=groups["groups"],
        card_context=card_context(snakemake.params.config, images=images),
        per_task=table(pd.read_csv(i.per_task)),
        convergence=table(pd.read_csv(i.convergence)),
        comparisons=table(pairs),
        budget=table(pd.read_csv(i.budget)),
        infra=table(pd.read_csv(i.profiles)),
        levels=groups["levels"],
        manifest=load(i.manifest),
        skipped_comparisons=[kind(r) for r in comparisons.get("skipped", [])],
        attribution=attribution,
    )
log.info("report: %d files", len(files))
