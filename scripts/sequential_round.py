"""Snakemake entry point of checkpoint `sequential_round`: stop, or what the next round runs."""

import json

import pandas as pd

from evalnoise.atomic import write_text
from evalnoise.formatting import dumps
from evalnoise.pipeline.collect import group_data, read_levels, read_scores
from evalnoise.pipeline.jobs import log_to
from evalnoise.pipeline.sequential import (
    GroupTrials,
    Rect,
    SequentialSettings,
    decide_unit,
    next_rects,
    task_count,
    units,
)
from evalnoise.pipeline.shard_plan import group_label

log = log_to(snakemake.log[0])
p = snakemake.params
settings = SequentialSettings(**p.settings)
round_ = int(p.round)
design = {g: [Rect.from_list(r) for r in rects] for g, rects in p.design.items()}
previous = {}
if snakemake.input.previous:
    with open(snakemake.input.previous[0], encoding="utf-8") as handle:
        previous = {u["unit"]: u for u in json.load(handle)["units"]}
tasks = pd.read_parquet(snakemake.input.tasks, columns=["task_id"])
task_rows = {str(t): i for i, t in enumerate(tasks["task_id"])}


# every group's shards, read once (each group's decision reads its own rows)
scores = read_scores(snakemake.input.scores)
levels = read_levels(snakemake.input.tasks)


def group_trials(agent, resource_profile):
    data = group_data(scores, levels, agent, resource_profile, p.infra_policy)
    return GroupTrials(
        label=data.group,
        frame=data.frame,
        attempts=len(data.attempts),
        tasks_attempted=int(data.attempts["task_id"].nunique()),
        statuses=data.counts["statuses"],
    )


records = []
next_design = {g: list(rects) for g, rects in design.items()}
for unit in units(settings, [tuple(g) for g in p.groups]):
    before = previous.get(unit.label)
    if before is not None and before["stopped"]:
        records.append(before)  # decided in an earlier round; its data has not changed
        continue
    record = decide_unit(
        unit,
        [group_trials(a, r) for a, r in unit.groups],
        design,
        task_rows,
        settings,
        round_,
    )
    records.append(record)
    added = []
    if record["decision"] is not None:
        first = group_label(*unit.groups[0])
        added = next_rects(record["decision"], settings.target, design[first], round_ + 1)
    for a, r in unit.groups:
        next_design[group_label(a, r)] += added
    # the words are the summary's (evalnoise.stopping_text): the log gives the numbers
    decision = record["decision"] or {}
    log.info(
        "%s: %s (%s); next: %s new tasks, %s trials per task",
        unit.label,
        record["status"],
        decision.get("action", "stop"),
        decision.get("next_new_tasks", 0),
        decision.get("next_trials_per_task", 0),
    )
    record["next"] = [rect.to_list() for rect in added]

out = {
    "round": round_,
    "done": all(u["stopped"] for u in records),
    "target": settings.target,
    "goal": settings.goal,
    "settings": p.settings,
    "design": {g: [r.to_list() for r in rects] for g, rects in design.items()},
    "next_design": {g: [r.to_list() for r in rects] for g, rects in next_design.items()},
    "tasks": {g: task_count(rects) for g, rects in next_design.items()},
    "units": records,
}
write_text(snakemake.output.record, dumps(out) + "\n")
