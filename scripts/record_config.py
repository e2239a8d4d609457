"""Snakemake entry point of rule `record_config`: results/config.json, the effective config
this run was made with and the keys that differ from config/config.yaml."""

from evalnoise.atomic import write_text
from evalnoise.formatting import dumps
from evalnoise.pipeline.jobs import log_to

log = log_to(snakemake.log[0])
record = snakemake.params.record
write_text(snakemake.output.config, dumps(record) + "\n")
overridden = record["overridden"]
if overridden:
    log.info("made with overrides of config/config.yaml: %s", ", ".join(sorted(overridden)))
else:
    log.info("made with config/config.yaml as it is")
