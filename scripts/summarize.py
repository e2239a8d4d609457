"""Snakemake entry point of rule `summarize`: all groups and pairs; tables; metrics.json."""

import json
from dataclasses import replace

import pandas as pd

from evalnoise.atomic import write_csv, write_text
from evalnoise.formatting import dumps
from evalnoise.pipeline.jobs import log_to
from evalnoise.pipeline.summary import summarize, summary_lines


def load(paths):
    out = []
    for path in paths:
        with open(path, encoding="utf-8") as handle:
            out.append(json.load(handle))
    return out


log = log_to(snakemake.log[0])
i, o = snakemake.input, snakemake.output
s = summarize(
    load(i.stats),
    load(i.pairs),
    [pd.read_csv(p) for p in i.convergence],
    [pd.read_csv(p) for p in i.budget],
    confidence=snakemake.params.confidence,
    judge=load(i.judge),
    attribution=load([i.attribution])[0],
)
if i.sequential:  # sequential mode: why each agent stopped where it did
    sequential = load([i.sequential[0]])[0]
    lines = "\n".join(summary_lines(sequential))
    s = replace(s, summary=s.summary.rstrip("\n") + "\n\n" + lines + "\n")
    s.metrics["sequential"] = {
        u["unit"]: {
            "status": u["status"],
            "round": u["round"],
            "achieved": u.get("achieved"),
            "trials": sum(sequential["groups"][g]["trials"] for g in u["groups"]),
        }
        for u in sequential["units"]
    }
write_text(o.groups, dumps({"groups": s.groups, "levels": s.levels}) + "\n")
write_text(o.comparisons, dumps({"comparisons": s.comparisons, "skipped": s.skipped}) + "\n")
write_text(o.summary, s.summary)
write_text(o.metrics, dumps(s.metrics) + "\n")
write_csv(o.convergence, s.convergence)
write_csv(o.budget, s.budget)
write_csv(o.profiles, s.profiles)
write_csv(o.per_task, s.per_task)
log.info("%d groups, %d comparisons, %d skipped", len(s.groups), len(s.comparisons), len(s.skipped))
for problem in s.problems:
    log.warning("%s", problem)
