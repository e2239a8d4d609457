"""Snakemake entry point of rule `build_image`: make sure the agent's image exists."""

import json

from evalnoise.atomic import write_text
from evalnoise.pipeline.image_stage import ensure_image
from evalnoise.pipeline.jobs import log_to

log = log_to(snakemake.log[0])
info = ensure_image(snakemake.config, snakemake.wildcards.agent)
write_text(snakemake.output.info, json.dumps(info, indent=2, sort_keys=True) + "\n")
log.info("agent %s: image %s (%s)", info["agent"], info["image"], info["id"])
