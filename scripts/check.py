"""Snakemake entry point of rule `check`: the run fails, listing why, when a group is not a
measurement of the agent or trials are unscored or unjudged (after the report shows it)."""

import json
import sys

from evalnoise.atomic import write_text
from evalnoise.formatting import dumps
from evalnoise.infra_failures import failure_lines
from evalnoise.pipeline.jobs import job_console, log_to
from evalnoise.pipeline.summary import health_problems

console = job_console()
log = log_to(snakemake.log[0])
with open(snakemake.input.groups, encoding="utf-8") as handle:
    groups = json.load(handle)["groups"]
problems = health_problems(groups)
# failures of a task (an image that did not build, tampering) named whether or not they
# made a group fail its health check
failures = [
    f"{g['group']}: {line}" for g in groups for line in failure_lines(g.get("task_failures", []))
]
if failures and not problems:
    note = "the run finished; failures of whole tasks:\n  " + "\n  ".join(failures)
    log.warning("%s", note)
    print(f"\n{note}\n", file=console, flush=True)
if problems:
    message = (
        "the run finished, but some numbers are not measurements (the report and "
        "summary flag them):\n  "
        + "\n  ".join(problems + failures)
        + "\n  Fix the cause, or declare the failures to be the experiment in "
        "health.expected_failures."
    )
    log.error("%s", message)
    print(f"\n{message}\n", file=console, flush=True)
    sys.exit(1)
record = {
    "valid": True,
    "groups": {
        g["group"]: {"outcomes": g["outcomes"], "health": g["health"]}
        for g in sorted(groups, key=lambda g: g["group"])
    },
}
write_text(snakemake.output.health, dumps(record) + "\n")
log.info("%d groups, all measurements of their agents", len(groups))
