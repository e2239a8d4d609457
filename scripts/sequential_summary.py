"""Snakemake entry point of rule `sequential_summary`: why each unit stopped, round by round.

The round records hold statuses and numbers; the words are written here, from
evalnoise.stopping_text (the rule carries code_version("summary"), not the checkpoint's)."""

import json

from evalnoise.atomic import write_csv, write_text
from evalnoise.formatting import dumps
from evalnoise.pipeline.jobs import log_to
from evalnoise.pipeline.sequential import round_rows, summary_record
from evalnoise.stopping_text import unit_reason

log = log_to(snakemake.log[0])
records = []
for path in snakemake.input.rounds:
    with open(path, encoding="utf-8") as handle:
        records.append(json.load(handle))
if records:
    summary = summary_record(records, reason=unit_reason)
else:  # a fixed design: the file says so, and the trials stage's DVC output exists
    summary = {"enabled": False, "units": [], "groups": {}}
table = round_rows(records, reason=unit_reason)
write_csv(snakemake.output.rounds, table)
write_text(snakemake.output.summary, dumps(summary) + "\n")
for unit in summary["units"]:
    log.info(
        "%s: %s after round %d — %s", unit["unit"], unit["status"], unit["round"], unit["reason"]
    )
