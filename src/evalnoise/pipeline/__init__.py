"""Pipeline-level logic behind the Snakemake rules (the package never imports Snakemake).

- :mod:`~evalnoise.pipeline.settings` — config validation (messages name the key), defaults,
  and the specs the runner, scorers and report take.
- :mod:`~evalnoise.pipeline.shard_plan` — the shard plan: which trials go in which
  ``run_trials`` job (shards), groups, pairs, journals.
- :mod:`~evalnoise.pipeline.sampling` — the benchmark section → the tasks table.
- :mod:`~evalnoise.pipeline.image_stage` — the ``build_image`` stage: each agent's image,
  built offline when needed.
- :mod:`~evalnoise.pipeline.shards` — run and score one shard (model server managed).
- :mod:`~evalnoise.pipeline.imported` — ``trials_from``: an existing trial table instead.
- :mod:`~evalnoise.pipeline.collect` — score shards → the long frame, infra policy applied.
- :mod:`~evalnoise.pipeline.stages` — the numbers: one group's statistics, convergence and
  budget; one pair's comparison.
- :mod:`~evalnoise.pipeline.summary` — every group and pair in one place, and its text.
- :mod:`~evalnoise.pipeline.outputs` — the run manifest and the report.
- :mod:`~evalnoise.pipeline.jobs` — a job's output into its Snakemake log.
"""

from evalnoise.pipeline.settings import ConfigError, check_config, with_defaults
from evalnoise.pipeline.shard_plan import Shard, ShardPlan, group_label, journal_path

__all__ = [
    "ConfigError",
    "Shard",
    "ShardPlan",
    "check_config",
    "group_label",
    "journal_path",
    "with_defaults",
]
