"""One parse of the workflow: the validated config planned into shards, and every job's params.

``rules/common.smk`` builds one :class:`RunPlan` from the validated config while Snakemake
parses the workflow, and its params functions are this class's methods: each takes the job's
wildcards (any object with the wildcard names as attributes) and returns what the job's
script reads. Nothing here knows Snakemake; the file lists the rules read are
:mod:`evalnoise.pipeline.wiring`'s.

A run either samples its tasks and runs trials (:meth:`RunPlan.from_config` plans shards of
agent × resource profile × variant × trial block × task chunk,
:class:`evalnoise.pipeline.shard_plan.ShardPlan`), or imports an existing trial table
(``trials_from``: only the table's groups, no shards).
"""

from __future__ import annotations

import functools
import platform
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from evalnoise.pipeline import image_stage as pipeline_images
from evalnoise.pipeline import judges as pipeline_judges
from evalnoise.pipeline import settings as pipeline_settings
from evalnoise.pipeline import variants as pipeline_variants
from evalnoise.pipeline.shard_plan import (
    ShardPlan,
    journal_path,
    parse_range,
    plain_rows_digest,
    task_rows_digest,
)

__all__ = ["TRIALS_DIR", "PlanError", "RunPlan"]

#: Where trial shards and their journals live (``results/trials/<agent>/<profile>/…``).
TRIALS_DIR = "results/trials"


class PlanError(ValueError):
    """The run cannot be planned (tasks unreadable, a bad variant, a bad sequential block)."""


@dataclass(frozen=True)
class RunPlan:
    """The validated config of one run with its plan; the params of every job."""

    config: Mapping[str, Any]
    plan: ShardPlan
    #: :class:`evalnoise.pipeline.sequential.SequentialSettings`, None for a fixed design
    sequential: Any
    #: the judges of ``scorer.judge`` (:func:`evalnoise.pipeline.judges.judge_specs`)
    judges: Mapping[str, Mapping[str, Any]]
    #: how many tasks the benchmark could give (None for an imported table)
    task_pool: int | None
    #: the sampled tasks (``sample_tasks``), computed once per parse and only when asked for
    sample: Callable[[], Any] = field(repr=False, compare=False, default=lambda: None)
    #: the same tasks as plain rows where the source gives them without pandas (the
    #: generated benchmark: ``sampling.generated_rows``), else None
    rows: Callable[[], Any] = field(repr=False, compare=False, default=lambda: None)
    #: what the run says about its tasks when it is built (one line each)
    warnings: tuple[str, ...] = ()
    _requests: dict[tuple[Any, ...], Any] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> RunPlan:
        """Plan the run of a validated config (every schema default filled in).

        Sampled: ``ShardPlan.from_config(config, n)`` over the n sampled tasks, with the
        sequential settings when ``sequential.enabled``. Imported (``trials_from``):
        ``ShardPlan.from_groups`` of the table's (agent, resource profile) groups. Raises
        :class:`PlanError` ("cannot plan the run: …") when the plan fails, and
        :class:`evalnoise.pipeline.settings.ConfigError` for a bad judge.
        """
        from evalnoise.pipeline.sampling import (
            benchmark_warnings,
            generated_rows,
            sample_tasks,
            task_pool_size,
        )
        from evalnoise.pipeline.sequential import SequentialSettings

        benchmark = config["benchmark"]
        sample = functools.cache(lambda: sample_tasks(benchmark))
        plain = benchmark["source"] == "generated" and not config["trials_from"]
        rows = functools.cache(lambda: generated_rows(benchmark) if plain else None)
        try:
            if config["trials_from"]:
                from evalnoise.pipeline.imported import import_groups

                groups = import_groups(config["trials_from"], config["columns"])
                plan, pool, sequential = ShardPlan.from_groups(groups), None, None
                warnings: tuple[str, ...] = ()
            else:
                n_tasks = len(rows() if plain else sample())
                plan = ShardPlan.from_config(config, n_tasks)
                pool = task_pool_size(benchmark)
                sequential = SequentialSettings.from_config(config, n_tasks)
                warnings = benchmark_warnings(benchmark)
        except (ValueError, OSError) as error:
            raise PlanError(f"cannot plan the run: {error}") from None
        judges = pipeline_judges.judge_specs(config["scorer"]["judge"])
        return cls(
            config, plan, sequential, judges, pool, sample=sample, rows=rows, warnings=warnings
        )

    # -- the run as a whole ---------------------------------------------------------------------

    @property
    def imported(self) -> bool:
        """Whether the trials come from a table (``trials_from``) instead of being run."""
        return bool(self.config["trials_from"])

    @property
    def network_param(self) -> dict[str, Any] | None:
        """What a public-network environment task's trials get (``benchmark.network`` and
        ``network_name``, :class:`evalnoise.runner.trial_network.NetworkChoice`); None when
        the benchmark has no environment tasks or the run rejects public ones."""
        benchmark = self.config["benchmark"]
        if benchmark["source"] != "harbor" or benchmark["network"] == "reject":
            return None
        return {"mode": benchmark["network"], "name": benchmark.get("network_name")}

    @property
    def judge_stage(self) -> bool:
        """Whether the judges score every trial in their own stage (``results/judged/``)."""
        return pipeline_settings.judge_stage(self.config)

    @property
    def primary_judge(self) -> str:
        """The first judge: the one ``scorer.name: judge`` and ``analysis.score: judge`` use."""
        return next(iter(self.judges))

    def planned_tasks(self) -> Any:
        """The sampled tasks (what ``sample_tasks`` writes), computed once per parse."""
        return self.sample()

    def variant_params(self) -> dict[str, Any]:
        """``{"variant": variant_param}`` when the config declares variants, else ``{}``: a
        run without them has exactly the params (and so the finished shards) it always had."""
        if not self.imported and pipeline_variants.declared(self.config):
            return {"variant": self.variant_param}
        return {}

    # -- a shard's params -----------------------------------------------------------------------

    def image_params(self, wildcards: Any) -> dict[str, Any]:
        """What the agent's image is built from
        (:func:`evalnoise.pipeline.image_stage.image_params`)."""
        return pipeline_images.image_params(self.config, wildcards.agent)

    def agent_param(self, wildcards: Any) -> dict[str, Any]:
        """The runner's agent spec without its image (read from the build_image output), with
        the shard's variant applied (its env). Secret values never appear: only names."""
        spec = pipeline_settings.agent_spec(self.config, wildcards.agent)
        segment = getattr(wildcards, "variant", "")
        return self.plan.variant(wildcards.agent, segment).apply(spec)

    def variant_param(self, wildcards: Any) -> dict[str, Any]:
        """The shard's variant as the runner takes it (key, template, labels:
        :class:`evalnoise.runner.variant.TrialVariant`)."""
        return self.plan.variant(wildcards.agent, wildcards.variant).trial_variant().to_dict()

    def resource_profile_param(self, wildcards: Any) -> dict[str, Any]:
        """The shard's resource profile spec."""
        return pipeline_settings.resource_profile_spec(self.config, wildcards.resource_profile)

    def canary_profile_param(self, wildcards: Any = None) -> dict[str, Any]:
        """The roomiest resource profile (largest hard limits), where the canary trial runs."""
        name = pipeline_settings.roomiest_profile(self.config["resource_profiles"])
        return pipeline_settings.resource_profile_spec(self.config, name)

    def machine_param(self, wildcards: Any = None) -> dict[str, str]:
        """Host and CPU model: a run moved to another machine reruns its canaries."""
        from evalnoise.machine import cpu_model

        return {"host": platform.node(), "cpu_model": cpu_model()}

    def trials_param(self, wildcards: Any) -> list[int]:
        """The trial indices of the shard's block: ``0004-0007`` → [4, 5, 6, 7]."""
        first, last = parse_range(wildcards.block)
        return list(range(first, last + 1))

    def rows_param(self, wildcards: Any) -> list[int]:
        """The first and last task row of the shard's chunk: ``0000-0005`` → [0, 5]."""
        return list(parse_range(wildcards.chunk))

    def task_rows_param(self, wildcards: Any) -> str:
        """The digest of the shard's task rows (:func:`evalnoise.pipeline.shard_plan.
        task_rows_digest`); from the plain rows when the source gives them and they hash
        without pandas (:func:`~evalnoise.pipeline.shard_plan.plain_rows_digest`), the same
        digest either way."""
        rows = self.rows()
        digest = None if rows is None else plain_rows_digest(rows, wildcards.chunk)
        return digest or task_rows_digest(self.planned_tasks(), wildcards.chunk)

    def shard_priority(self, wildcards: Any) -> int:
        """The Snakemake priority of the shard's jobs
        (:func:`evalnoise.pipeline.settings.shard_priority`)."""
        w = wildcards
        return pipeline_settings.shard_priority(
            w.block, w.chunk, self.plan.blocks, self.plan.chunks
        )

    def journal_param(self, wildcards: Any) -> str:
        """The shard's journal (:func:`evalnoise.pipeline.shard_plan.journal_path`)."""
        w = wildcards
        path = journal_path(TRIALS_DIR, w.agent, w.resource_profile, w.block, w.chunk, w.variant)
        return str(path)

    def infra_policy_param(self, wildcards: Any = None) -> dict[str, Any]:
        """The declared infra policy (:func:`evalnoise.pipeline.settings.infra_policy_spec`)."""
        return pipeline_settings.infra_policy_spec(self.config)

    def agent_server(self, wildcards: Any) -> dict[str, Any] | None:
        """The model server spec the agent's trials need, or None."""
        if pipeline_settings.uses_model_server(self.config, wildcards.agent):
            return pipeline_settings.model_server_spec(self.config)
        return None

    def agent_server_tokens(self, wildcards: Any) -> int:
        """The ``model_server`` resource of the agent's jobs: 1 with a served model, else 0."""
        return 1 if pipeline_settings.uses_model_server(self.config, wildcards.agent) else 0

    # -- judges ---------------------------------------------------------------------------------

    def judge_spec(self, wildcards: Any = None) -> Mapping[str, Any]:
        """The spec of a ``judge`` job's judge (the primary judge for any other job)."""
        return self.judges[getattr(wildcards, "judge", self.primary_judge)]

    def judge_server(self, wildcards: Any = None) -> dict[str, Any] | None:
        """The model server spec the judge (of this job) needs, or None."""
        if pipeline_settings.uses_judge(self.config) and pipeline_judges.uses_judge_server(
            self.judge_spec(wildcards)
        ):
            return pipeline_settings.model_server_spec(self.config, "judge")
        return None

    def judge_server_tokens(self, wildcards: Any = None) -> int:
        """1 when the judge (of this job) needs the model server, else 0."""
        return 1 if self.judge_server(wildcards) is not None else 0

    def scorer_server(self, wildcards: Any = None) -> dict[str, Any] | None:
        """The model server the reference scorer needs: only when it is the (primary) judge."""
        return self.judge_server() if self.config["scorer"]["name"] == "judge" else None

    def scorer_server_tokens(self, wildcards: Any = None) -> int:
        """The ``model_server`` resource of a ``score`` job."""
        return self.judge_server_tokens() if self.config["scorer"]["name"] == "judge" else 0

    def judge_template_hash(self, wildcards: Any = None) -> str | None:
        """The judge's template hash (:func:`evalnoise.pipeline.judges.judge_template_hash`),
        None when no judge scores anything."""
        if not pipeline_settings.uses_judge(self.config):
            return None
        return pipeline_judges.judge_template_hash(self.judge_spec(wildcards))

    def judge_scorer_param(self, wildcards: Any) -> dict[str, Any]:
        """The scorer section as a ``judge`` job uses it: its judge's spec, comparing with
        the numeric scorer's options."""
        return {**self.config["scorer"], "name": "judge", "judge": self.judge_spec(wildcards)}

    def judges_param(self, wildcards: Any = None) -> Mapping[str, Mapping[str, Any]]:
        """Every judge's spec, by name, in order (for the judges' record of analyze_group)."""
        return self.judges

    # -- groups, pairs, sequential mode ---------------------------------------------------------

    def group_param(self, wildcards: Any) -> list[str]:
        """The group's (agent, resource profile) names in the data."""
        return list(self.plan.names(wildcards.agent, wildcards.resource_profile))

    def pair_groups_param(self, wildcards: Any) -> dict[str, list[str]]:
        """The two groups' (agent, resource profile) names in the data."""
        first, second = pair_groups(wildcards)
        return {"a": list(self.plan.names(*first)), "b": list(self.plan.names(*second))}

    def plan_groups_param(self, wildcards: Any = None) -> list[list[str]]:
        """The run's (agent, resource profile) pairs, as their names in the data."""
        return [list(self.plan.names(a, r)) for a, r in self.plan.groups()]

    def sequential_settings_param(self, wildcards: Any = None) -> dict[str, Any]:
        """The sequential settings as a dict (``dataclasses.asdict``)."""
        return asdict(self.sequential)

    # -- a shard's cluster request (profiles/slurm) ---------------------------------------------

    def shard_request(self, wildcards: Any, threads: int) -> Any:
        """A shard's Slurm request (:func:`evalnoise.pipeline.slurm_resources.
        shard_job_resources` over its task rows), computed once per shard and ``threads``."""
        w = wildcards
        key = (w.agent, w.resource_profile, w.block, w.chunk, threads)
        if key not in self._requests:
            from evalnoise.pipeline.slurm_resources import shard_job_resources

            first, last = parse_range(w.chunk)
            self._requests[key] = shard_job_resources(
                self.planned_tasks().iloc[first : last + 1],
                self.resource_profile_param(w),
                trials=len(self.trials_param(w)),
                concurrency=threads,
                infra_policy=self.infra_policy_param(),
                served=bool(self.agent_server_tokens(w)),
            )
        return self._requests[key]

    def run_trials_cpus(self, wildcards: Any, threads: int) -> int:
        """Slurm --cpus-per-task of a shard: its trials' CPU guarantees at once."""
        return self.shard_request(wildcards, threads).cpus_per_task

    def run_trials_mem_mb(self, wildcards: Any, threads: int) -> int:
        """Slurm --mem of a shard: its trials' memory limits at once + the runner's own."""
        return self.shard_request(wildcards, threads).mem_mb

    def run_trials_runtime(self, wildcards: Any, threads: int) -> int:
        """Slurm -t (minutes) of a shard: every trial at its time limit, every attempt."""
        return self.shard_request(wildcards, threads).runtime


def pair_groups(wildcards: Any) -> tuple[tuple[str, str], tuple[str, str]]:
    """The two (agent, resource profile) groups a ``compare`` job sets against each other:
    ``kind`` ``agents`` compares agents a and b within resource profile ``within``;
    ``resource_profiles`` compares profiles a and b within agent ``within``."""
    w = wildcards
    if w.kind == "agents":
        return (w.a, w.within), (w.b, w.within)
    return (w.within, w.a), (w.within, w.b)
