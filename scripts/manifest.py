"""Snakemake entry point of rule `manifest`: the run's provenance (results/manifest.json)."""

from pathlib import Path

from evalnoise.manifest import write_manifest
from evalnoise.pipeline.jobs import log_to
from evalnoise.pipeline.outputs import run_manifest
from evalnoise.results_check import recorded_files

log = log_to(snakemake.log[0])
i = snakemake.input
artifacts = [i.tasks, *i.images, *i.trials, *i.scores, *i.judged, *i.analysis]
# every other file under results/ too (journals, canaries, build logs), which `evalnoise
# archive` checks: each is final when this rule runs, whose inputs are every earlier artifact
artifacts += recorded_files(Path(i.tasks).parent)
manifest = run_manifest(
    snakemake.params.config,
    root=Path.cwd(),
    artifacts=artifacts,
    trial_shards=i.trials,
    image_infos=i.images,
)
write_manifest(snakemake.output.manifest, manifest)
log.info("manifest: %d artifacts hashed", len(manifest["artifacts"]))
