"""Snakemake entry point of checkpoint `sequential_round`: stop, or what the next round runs
(the loop: evalnoise.pipeline.sequential_round)."""

import json

import pandas as pd

from evalnoise.atomic import write_text
from evalnoise.formatting import dumps
from evalnoise.pipeline.collect import read_levels, read_scores
from evalnoise.pipeline.jobs import log_to
from evalnoise.pipeline.sequential import Rect, SequentialSettings
from evalnoise.pipeline.sequential_round import decide_round, group_trials

log = log_to(snakemake.log[0])
p = snakemake.params
previous = {}
if snakemake.input.previous:
    with open(snakemake.input.previous[0], encoding="utf-8") as handle:
        previous = {u["unit"]: u for u in json.load(handle)["units"]}
# every group's shards, read once (each group's decision reads its own rows)
scores = read_scores(snakemake.input.scores)
levels = read_levels(snakemake.input.tasks)
result = decide_round(
    SequentialSettings(**p.settings),
    int(p.round),
    {g: [Rect.from_list(r) for r in rects] for g, rects in p.design.items()},
    [tuple(g) for g in p.groups],
    previous,
    pd.read_parquet(snakemake.input.tasks, columns=["task_id"])["task_id"],
    lambda agent, profile: group_trials(scores, levels, agent, profile, p.infra_policy),
)
# the words are the summary's (evalnoise.stopping_text): the log gives the numbers
for unit in result.units:
    if unit["round"] != result.round:
        continue  # stopped in an earlier round
    decision = unit["decision"] or {}
    log.info(
        "%s: %s (%s); next: %s new tasks, %s trials per task",
        unit["unit"],
        unit["status"],
        decision.get("action", "stop"),
        decision.get("next_new_tasks", 0),
        decision.get("next_trials_per_task", 0),
    )
write_text(snakemake.output.record, dumps(result.to_record()) + "\n")
