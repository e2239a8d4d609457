# Config validation, the run's plan, and the named input/param functions every rule file
# shares. Logic lives in the package: the plan and every job's params in
# evalnoise.pipeline.run_plan, which files each rule reads in evalnoise.pipeline.wiring;
# the functions here are their methods, handed the rules' output patterns.
import os
import sys

from snakemake.exceptions import WorkflowError
from snakemake.io import strip_wildcard_constraints

# This checkout's package, also in Snakemake's own process: the light rules run their scripts
# there (in_process below), and their code must be the code their code_version hashes.
_CHECKOUT_SRC = os.path.join(workflow.basedir, "src")
if (
    os.path.isdir(os.path.join(_CHECKOUT_SRC, "evalnoise"))
    and _CHECKOUT_SRC not in sys.path
):
    sys.path.insert(0, _CHECKOUT_SRC)

from evalnoise.pipeline import effective_config
from evalnoise.pipeline import settings as pipeline_settings
from evalnoise.pipeline import variants as pipeline_variants
from evalnoise.pipeline.image_stage import image_inputs as _image_inputs
from evalnoise.pipeline.jobs import export_checkout, run_script
from evalnoise.pipeline.shard_plan import NAME_PATTERN, RANGE_PATTERN
from evalnoise.pipeline.run_plan import PlanError, RunPlan
from evalnoise.pipeline.wiring import Wiring, group_outputs
from evalnoise.provenance import code_version

# Jobs import evalnoise from this checkout, also inside a `--sdm conda` environment
# (envs/evalnoise.yaml holds the third-party packages only).
export_checkout(workflow.basedir)


def in_process(script, input, output, params, wildcards, log, name):
    """Run a light rule's script (a path relative to rules/, as `script:` takes it) inside
    Snakemake's process: no interpreter or import per job (evalnoise.pipeline.jobs)."""
    run_script(
        os.path.join(workflow.basedir, "rules", script),
        input=input,
        output=output,
        params=params,
        wildcards=wildcards,
        log=log,
        name=name,
        config=config,
    )


# read once per parse (libyaml where PyYAML has it): it is used three times below
SCHEMA_DOC = pipeline_settings.load_schema(
    os.path.join(workflow.basedir, "config", "schemas", "config.schema.yaml")
)
# Every violation, each naming its key, and the cross-field rules; then the schema's defaults
# filled in, as snakemake.utils.validate(set_default=True) fills them (a test holds the two
# equal) without parsing the schema again in pure Python and building a second validator
# (a noticeable part of every Snakemake start).
try:
    pipeline_settings.check_config(config, SCHEMA_DOC)
except pipeline_settings.ConfigError as error:
    raise WorkflowError(str(error)) from None
config.update(pipeline_settings.with_defaults(config, SCHEMA_DOC))

# What this run is made with, against what results/ were made with (see
# evalnoise.pipeline.effective_config): `dvc repro` never quietly rewrites an overridden run.
CONFIG_RECORD = "results/config.json"
EFFECTIVE_CONFIG = effective_config.run_record(
    config, os.path.join(workflow.basedir, "config", "config.yaml"), SCHEMA_DOC
)
_refusal = effective_config.strict_refusal(config, os.environ, CONFIG_RECORD)
if _refusal:
    raise WorkflowError(_refusal)

try:
    RUN = RunPlan.from_config(config)
except (PlanError, pipeline_settings.ConfigError) as error:
    raise WorkflowError(str(error)) from None
for _warning in RUN.warnings:
    print(f"evalnoise: warning: {_warning}", file=sys.stderr)
IMPORTED = RUN.imported
PLAN = RUN.plan
TASK_POOL = RUN.task_pool
JUDGE_STAGE = RUN.judge_stage
JUDGE_CACHE = ".evalnoise-cache/judge.sqlite"
ENV = "envs/evalnoise.yaml"


wildcard_constraints:
    agent=NAME_PATTERN,
    judge=NAME_PATTERN,
    resource_profile=NAME_PATTERN,
    within=NAME_PATTERN,
    a=NAME_PATTERN,
    b=NAME_PATTERN,
    block=RANGE_PATTERN,
    chunk=RANGE_PATTERN,
    variant=pipeline_variants.SEGMENT_PATTERN,
    kind="agents|resource_profiles",
    round="[0-9][0-9][0-9]",


# -- the rules' output patterns, as evalnoise.pipeline.wiring reads them ----------------------


def _path(pattern):
    """The path a rule declared. Under a default storage provider (the Kubernetes profile)
    Snakemake hands back a storage object whose query is the storage prefix + that path; the
    plain path is mapped to storage again wherever it is used as an input."""
    if getattr(pattern, "is_storage", False):
        prefix = os.path.join(workflow.storage_settings.default_storage_prefix, "")
        query = pattern.storage_object.query
        return query[len(prefix) :] if query.startswith(prefix) else query
    return str(pattern)


def _outputs(rule):
    """A rule's named outputs: {key: path pattern}, in declared order."""
    return {key: _path(path) for key, path in getattr(rules, rule).output.items()}


def _round_record(label):
    """Round ``label``'s record. Until it exists this raises Snakemake's incomplete-
    checkpoint signal: Snakemake runs the round, then evaluates the caller again."""
    return checkpoints.sequential_round.get(round=label).output.record


WIRING = Wiring(RUN, _outputs, _round_record)


def unconstrained(pattern):
    """An output pattern as another rule's input (constraints apply where it is made)."""
    return strip_wildcard_constraints(_path(pattern))


# -- trials, scores, judges: inputs and params (evalnoise.pipeline.run_plan) -------------------


def imported_table(wildcards=None):
    """The trials_from table, a local file (never fetched from a storage provider)."""
    return local(config["trials_from"])


def image_inputs(wildcards):
    """Files whose change changes the agent's image; source files, never fetched from a
    storage provider."""
    return [local(path) for path in _image_inputs(config, wildcards.agent)]


def canary_input(wildcards):
    """The agent's canary record: its trials wait for it. ``ancient``: a canary rerun (on
    another machine, after new tasks) never makes finished shards look stale."""
    path = WIRING.canary(wildcards)
    return [] if path is None else ancient(path)


task_rows_param = RUN.task_rows_param
shard_priority = RUN.shard_priority
tasks_table = WIRING.tasks_table
image_params = RUN.image_params
agent_param = RUN.agent_param
VARIANT_PARAMS = RUN.variant_params()
resource_profile_param = RUN.resource_profile_param
canary_profile_param = RUN.canary_profile_param
machine_param = RUN.machine_param
trials_param = RUN.trials_param
rows_param = RUN.rows_param
journal_param = RUN.journal_param
infra_policy_param = RUN.infra_policy_param
agent_server = RUN.agent_server
agent_server_tokens = RUN.agent_server_tokens
judge_server = RUN.judge_server
judge_server_tokens = RUN.judge_server_tokens
scorer_server = RUN.scorer_server
scorer_server_tokens = RUN.scorer_server_tokens
judge_template_hash = RUN.judge_template_hash
judge_scorer_param = RUN.judge_scorer_param
score_rounds = WIRING.score_rounds
verifier_rounds_param = WIRING.verifier_rounds
judge_rounds_param = WIRING.judge_rounds
# a shard's Slurm request (evalnoise.pipeline.slurm_resources): local runs ignore it
run_trials_cpus = RUN.run_trials_cpus
run_trials_mem_mb = RUN.run_trials_mem_mb
run_trials_runtime = RUN.run_trials_runtime

# -- collections over the plan, the sequential checkpoint, analysis (evalnoise.pipeline.wiring)

all_image_infos = WIRING.all_image_infos
all_trial_shards = WIRING.all_trial_shards
all_score_shards = WIRING.all_score_shards
all_judged_shards = WIRING.all_judged_shards
sequential_round_scores = WIRING.sequential_round_scores
sequential_previous_record = WIRING.sequential_previous_record
sequential_design_param = WIRING.sequential_design_param
sequential_settings_param = RUN.sequential_settings_param
sequential_records = WIRING.sequential_records
sequential_report_files = WIRING.sequential_report_files
sequential_summary_file = WIRING.sequential_summary_file
group_scores = WIRING.group_scores
group_judge_reference = WIRING.group_judge_reference
group_judged = WIRING.group_judged
group_actions = WIRING.group_actions
GROUP_OUTPUTS = group_outputs(JUDGE_STAGE)
JUDGE_QUALITY_PARAMS = WIRING.judge_quality_params()
group_param = RUN.group_param
pair_scores_a = WIRING.pair_scores_a
pair_scores_b = WIRING.pair_scores_b
pair_groups_param = RUN.pair_groups_param
attribution_scores = WIRING.attribution_scores
plan_groups_param = RUN.plan_groups_param
all_stats = WIRING.all_stats
all_convergence = WIRING.all_convergence
all_budgets = WIRING.all_budgets
all_judge_quality = WIRING.all_judge_quality
all_pairs = WIRING.all_pairs
analysis_outputs = WIRING.analysis_outputs

# -- targets: a target names every file a later step reads (evalnoise.pipeline.wiring) --------
trial_targets = WIRING.trial_targets
analysis_targets = WIRING.analysis_targets
all_outputs = WIRING.all_outputs
