"""Snakemake entry point of rule `canary`: one trial of the agent before its sweep."""

import os
import sys

from evalnoise.pipeline.canary import CanaryFailed, run_canary
from evalnoise.pipeline.jobs import log_to

# The failure message goes to the terminal as well as to the log: it is the one thing the
# user must read.
console = os.fdopen(os.dup(2), "w")
log = log_to(snakemake.log[0])
p = snakemake.params
try:
    record = run_canary(
        tasks_path=snakemake.input.tasks,
        image_info=snakemake.input.image,
        agent=p.agent,
        resource_profile=p.resource_profile,
        run_seed=p.run_seed,
        backend=p.backend,
        output=snakemake.output.canary,
        server=p.server,
        server_log=snakemake.log[0] + ".server",
        reward_key=p.reward_key,
        network=p.network,
    )
except CanaryFailed as failure:
    log.error("%s", failure)
    print(f"\n{failure}\n", file=console, flush=True)
    sys.exit(1)
log.info(
    "canary of %s under %s: %s in %.1fs, answer %r",
    record["agent"],
    record["resource_profile"],
    record["status"],
    record["duration_s"] or 0.0,
    record["prediction"],
)
