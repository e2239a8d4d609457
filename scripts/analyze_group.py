"""Snakemake entry point of rule `analyze_group`: one agent × resource profile, its score
shards read once; its statistics (overall and per level), ICC convergence, budget table and,
with a judge stage, its judges' record. Everything is computed before anything is written."""

import pandas as pd

from evalnoise.atomic import write_csv, write_text
from evalnoise.formatting import dumps
from evalnoise.infra_failures import FAILURE_COLUMNS, task_failures
from evalnoise.pipeline.collect import load_group, read_actions, read_scores
from evalnoise.pipeline.jobs import log_to
from evalnoise.pipeline.stages import group_outputs, multiverse_settings
from evalnoise.runner.infra_policies import infra_policy

log = log_to(snakemake.log[0])
i, o, p = snakemake.input, snakemake.output, snakemake.params
data = load_group(i.scores, i.tasks, *p.group, p.infra_policy)
pool = p.max_tasks  # the benchmark's tasks; an imported table's pool is the tasks it has
if pool is None and p.imported:
    pool = len(pd.read_parquet(i.tasks, columns=["task_id"]))
scorers = None
if getattr(o, "judge", None):  # with a judge stage, the scorer is a factor of the multiverse
    from evalnoise.pipeline.judging import scorer_rows

    scorers = scorer_rows(i.reference, dict(p.judged), *p.group)
out = group_outputs(
    data,
    p.analysis,
    policy=infra_policy(p.infra_policy).describe(),
    health=p.health,
    max_tasks=pool,
    # the trials' actions (none for an imported table: "not recorded")
    actions=read_actions(i.actions) if not p.imported else None,
    multiverse=multiverse_settings(p.infra_policy, p.analysis, scorers),
)
judges = None
if getattr(o, "judge", None):  # declared only when the config has a judge stage
    from evalnoise.pipeline.judging import judge_quality

    judges = judge_quality(
        i.reference,
        dict(p.judged),
        i.tasks,
        *p.group,
        options=p.analysis,
        policy=p.infra_policy,
        judges=p.judges,
        reference=p.reference,
    )

# failures of a whole task (a build that failed), named once each: read with the trials'
# errors, which the statistics leave out
rows = read_scores(i.scores, payload=True, columns=FAILURE_COLUMNS)
mine = rows[(rows["agent"] == p.group[0]) & (rows["resource_profile"] == p.group[1])]
out.stats["task_failures"] = [f.to_dict() for f in task_failures(mine)]

write_text(o.stats, dumps(out.stats) + "\n")
write_csv(o.convergence, out.convergence)
write_csv(o.budget, out.budget)
if judges is not None:
    write_text(o.judge, dumps(judges) + "\n")

stats = out.stats
log.info(
    "%s: %d tasks, %d counted trials, %d levels; outcomes %s",
    data.group,
    stats["overall"]["n_tasks"],
    stats["overall"]["n_obs"],
    len(stats["levels"]),
    stats["outcomes"],
)
for reason in stats["health"]["reasons"]:
    log.warning(
        "%s: %s%s", data.group, reason, " (expected)" if stats["health"]["expected"] else ""
    )
log.info(
    "%s: %d convergence rows, %d allocations", data.group, len(out.convergence), len(out.budget)
)
for judge in (judges or {}).get("judges", ()):
    log.info(
        "%s: judge %s: %d sent, parse rate %s, kappa %s",
        data.group,
        judge["name"],
        judge["sent"],
        judge["parse_rate"],
        (judge["agreement"] or {}).get("kappa"),
    )
if judges is not None:
    log.info("%s: best judge %s", data.group, judges["best_judge"])
