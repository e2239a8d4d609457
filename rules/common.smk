# Config validation and the run's plan. Logic lives in the package: the rules call its two
# objects directly, RUN (evalnoise.pipeline.run_plan: the plan and every job's params) and
# WIRING (evalnoise.pipeline.wiring: which files each rule reads, handed the rules' output
# patterns); the few functions here are what needs Snakemake's own helpers (local, ancient).
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


def in_process(script, job):
    """Run a light rule's script (a path relative to rules/, as `script:` takes it) inside
    Snakemake's process: no interpreter or import per job (evalnoise.pipeline.jobs). ``job``
    is the `run:` block's ``locals()``: the arguments Snakemake calls the block with (input,
    output, params, wildcards, log, rule, ...)."""
    run_script(
        os.path.join(workflow.basedir, "rules", script),
        input=job["input"],
        output=job["output"],
        params=job["params"],
        wildcards=job["wildcards"],
        log=job["log"],
        name=job["rule"],
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
