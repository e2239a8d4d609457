# Config validation, the sharding plan, and the named input/param functions every rule file
# shares. Logic lives in the package (evalnoise.pipeline); these functions only look it up.
import os
import platform
import sys

import yaml

from snakemake.exceptions import WorkflowError
from snakemake.io import strip_wildcard_constraints
from snakemake.utils import validate

# This checkout's package, also in Snakemake's own process: the light rules run their scripts
# there (in_process below), and their code must be the code their code_version hashes.
_CHECKOUT_SRC = os.path.join(workflow.basedir, "src")
if (
    os.path.isdir(os.path.join(_CHECKOUT_SRC, "evalnoise"))
    and _CHECKOUT_SRC not in sys.path
):
    sys.path.insert(0, _CHECKOUT_SRC)

from evalnoise.pipeline import effective_config
from evalnoise.pipeline import image_stage
from evalnoise.pipeline import judges as pipeline_judges
from evalnoise.pipeline import settings as pipeline_settings
from evalnoise.machine import cpu_model
from evalnoise.pipeline.canary import roomiest_profile
from evalnoise.pipeline.imported import import_groups
from evalnoise.pipeline.jobs import export_checkout, run_script
from evalnoise.pipeline import sequential as pipeline_sequential
from evalnoise.pipeline import variants as pipeline_variants
from evalnoise.pipeline.shard_plan import (
    NAME_PATTERN,
    RANGE_PATTERN,
    Plan,
    Shard,
    chunk_size,
    group_label,
    journal_path,
    parse_range,
)
from evalnoise.pipeline.sampling import sample_tasks, task_pool_size
from evalnoise.pipeline.shards import judge_rounds, verifier_rounds
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


SCHEMA = "../config/schemas/config.schema.yaml"
# read once per parse: it is used twice below (67 ms each with the pure-Python YAML loader)
SCHEMA_DOC = pipeline_settings.load_schema(
    os.path.join(workflow.basedir, "config", "schemas", "config.schema.yaml")
)
# A crisp message naming the bad key first; then Snakemake's own validation (sets defaults).
try:
    pipeline_settings.check_config(config, SCHEMA_DOC)
except pipeline_settings.ConfigError as error:
    raise WorkflowError(str(error)) from None
validate(config, schema=SCHEMA)


def _read_yaml(path):
    with open(path, encoding="utf-8") as handle:
        return yaml.safe_load(handle) or {}


# What this run is made with, against what results/ were made with (see
# evalnoise.pipeline.effective_config): `dvc repro` never quietly rewrites an overridden run.
CONFIG_RECORD = "results/config.json"
CONFIG_FILE = os.path.join(workflow.basedir, "config", "config.yaml")
EFFECTIVE_CONFIG = effective_config.config_record(
    config,
    pipeline_settings.with_defaults(
        _read_yaml(CONFIG_FILE) if os.path.exists(CONFIG_FILE) else {},
        SCHEMA_DOC,
    ),
)
if os.environ.get(effective_config.GUARD_VARIABLE) == "strict":
    _refusal = effective_config.guard_message(
        config, effective_config.read_record(CONFIG_RECORD), path=CONFIG_RECORD
    )
    if _refusal:
        raise WorkflowError(_refusal)

IMPORTED = bool(config["trials_from"])
TRIALS_DIR = "results/trials"
JUDGE_CACHE = ".evalnoise-cache/judge.sqlite"
ENV = "envs/evalnoise.yaml"

_PLANNED_TASKS = {}


def _planned_tasks():
    """The sampled tasks (what sample_tasks writes), computed once per workflow parse."""
    if "tasks" not in _PLANNED_TASKS:
        _PLANNED_TASKS["tasks"] = sample_tasks(config["benchmark"])
    return _PLANNED_TASKS["tasks"]


try:
    if IMPORTED:
        PLAN = Plan.from_groups(import_groups(config["trials_from"], config["columns"]))
        TASK_POOL = None
    else:
        PLAN = Plan.from_config(config, len(_planned_tasks()))
        TASK_POOL = task_pool_size(config["benchmark"])
    SEQUENTIAL = (
        None
        if IMPORTED
        else pipeline_sequential.SequentialSettings.from_config(
            config, len(_planned_tasks())
        )
    )
except (ValueError, OSError) as error:
    raise WorkflowError(f"cannot plan the run: {error}") from None


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


# -- patterns ----------------------------------------------------------------------------------


def _path(pattern):
    """The path a rule declared. Under a default storage provider (the Kubernetes profile)
    Snakemake hands back a storage object whose query is the storage prefix + that path; the
    plain path is mapped to storage again wherever it is used as an input."""
    if getattr(pattern, "is_storage", False):
        prefix = os.path.join(workflow.storage_settings.default_storage_prefix, "")
        query = pattern.storage_object.query
        return query[len(prefix) :] if query.startswith(prefix) else query
    return str(pattern)


def unconstrained(pattern):
    """An output pattern as another rule's input (constraints apply where it is made)."""
    return strip_wildcard_constraints(_path(pattern))


def fill(pattern, **wildcards):
    """``pattern`` with its wildcards filled in."""
    return expand(
        _path(pattern), **{name: [value] for name, value in wildcards.items()}
    )[0]


# -- trials and scores ----------------------------------------------------------------------


def imported_table(wildcards=None):
    """The trials_from table, a local file (never fetched from a storage provider)."""
    return local(config["trials_from"])


def tasks_table(wildcards=None):
    """The tasks table: sampled, or listed from the imported trial table."""
    if IMPORTED:
        return _path(rules.import_trials.output.tasks)
    return _path(rules.sample_tasks.output.tasks)


def image_inputs(wildcards):
    """Files whose change changes the agent's image (none for a ready image). Source files,
    never fetched from a storage provider."""
    return [
        local(path) for path in image_stage.image_inputs(config, wildcards.agent)
    ]


def image_params(wildcards):
    return image_stage.image_params(config, wildcards.agent)


def agent_param(wildcards):
    """The runner's agent spec without its image (read from the build_image output), with
    the shard's sampling variant in its env. Secret values never appear here: only their
    names."""
    spec = pipeline_settings.agent_spec(config, wildcards.agent)
    segment = getattr(wildcards, "variant", "")
    return PLAN.variant(wildcards.agent, segment).apply(spec)


def variant_param(wildcards):
    """The shard's variant as the runner takes it (evalnoise.runner.variant.TrialVariant):
    key, template, labels."""
    return PLAN.variant(wildcards.agent, wildcards.variant).trial_variant().to_dict()


# The `variant` param exists only when the config declares variants, so a run without
# them has exactly the params (and so the finished shards) it always had.
VARIANT_PARAMS = (
    {"variant": variant_param}
    if not IMPORTED and pipeline_variants.declared(config)
    else {}
)


def resource_profile_param(wildcards):
    return pipeline_settings.resource_profile_spec(config, wildcards.resource_profile)


def canary_profile_param(wildcards):
    """The roomiest resource profile, in which the agent's canary trial runs."""
    return pipeline_settings.resource_profile_spec(
        config, roomiest_profile(config["resource_profiles"])
    )


def canary_input(wildcards):
    """The agent's canary record: its trials wait for it. ``ancient``: a canary rerun (on
    another machine, after new tasks) never makes finished shards look stale."""
    if not config["canary"]:
        return []
    return ancient(fill(rules.canary.output.canary, agent=wildcards.agent))


def machine_param(wildcards=None):
    """Host and CPU: a run moved to another machine reruns its canaries."""
    return {"host": platform.node(), "cpu_model": cpu_model()}


def trials_param(wildcards):
    first, last = parse_range(wildcards.block)
    return list(range(first, last + 1))


def rows_param(wildcards):
    return list(parse_range(wildcards.chunk))


def journal_param(wildcards):
    return str(
        journal_path(
            TRIALS_DIR,
            wildcards.agent,
            wildcards.resource_profile,
            wildcards.block,
            wildcards.chunk,
            wildcards.variant,
        )
    )


def infra_policy_param(wildcards=None):
    return pipeline_settings.infra_policy_spec(config)


def agent_server(wildcards):
    """The model server spec the agent's trials need, or None."""
    if pipeline_settings.uses_model_server(config, wildcards.agent):
        return pipeline_settings.model_server_spec(config)
    return None


def agent_server_tokens(wildcards):
    return 1 if pipeline_settings.uses_model_server(config, wildcards.agent) else 0


# The judges of scorer.judge (evalnoise.pipeline.judges.judge_specs), by name, in order:
# each judges every trial in its own shards (results/judged/JUDGE/...); the first is the one
# `scorer.name: judge` and `analysis.score: judge` use.
try:
    JUDGES = pipeline_judges.judge_specs(config["scorer"]["judge"])
except pipeline_settings.ConfigError as error:
    raise WorkflowError(str(error)) from None
PRIMARY_JUDGE = next(iter(JUDGES))


def _judge_spec(wildcards=None):
    """The spec of the judge of a `judge` job (the primary judge elsewhere)."""
    return JUDGES[getattr(wildcards, "judge", PRIMARY_JUDGE)]


def judge_server(wildcards=None):
    """The model server spec the judge (of this job) needs, or None."""
    if pipeline_settings.uses_judge(config) and pipeline_judges.uses_judge_server(
        _judge_spec(wildcards)
    ):
        return pipeline_settings.model_server_spec(config)
    return None


def judge_server_tokens(wildcards=None):
    return 1 if judge_server(wildcards) is not None else 0


def scorer_server(wildcards=None):
    """The model server the reference scorer needs: only when it is the (primary) judge."""
    return judge_server() if config["scorer"]["name"] == "judge" else None


def scorer_server_tokens(wildcards=None):
    return judge_server_tokens() if config["scorer"]["name"] == "judge" else 0


def judge_template_hash(wildcards=None):
    from evalnoise.pipeline.shards import judge_template_hash as template_hash

    if not pipeline_settings.uses_judge(config):
        return None
    return template_hash(_judge_spec(wildcards))


def judge_scorer_param(wildcards):
    """The scorer section as a `judge` job uses it: its judge's spec, comparing with the
    numeric scorer's options."""
    return {**config["scorer"], "name": "judge", "judge": _judge_spec(wildcards)}


def judges_param(wildcards=None):
    """Every judge's spec, by name, in order (for the judges' record of analyze_group)."""
    return JUDGES


# -- collections over the plan ---------------------------------------------------------------


def all_image_infos(wildcards=None):
    if IMPORTED:
        return []
    return [fill(rules.build_image.output.info, agent=agent) for agent in PLAN.agents]


# -- which shards: the fixed design, or (sequential mode) the rounds decided so far ---------------


def _read_json(path):
    import json

    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def _round_label(round_):
    return f"{round_:03d}"


def sequential_record(round_):
    """Round ``round_``'s record. Until it exists this raises Snakemake's incomplete-
    checkpoint signal: Snakemake runs the round, then evaluates the caller again."""
    return _read_json(
        checkpoints.sequential_round.get(round=_round_label(round_)).output.record
    )


def sequential_design(round_):
    """{group label: [Rect]} run up to and including round ``round_``."""
    if round_ == 0:
        return pipeline_sequential.first_design(SEQUENTIAL, PLAN.groups())
    return {
        group: [pipeline_sequential.Rect.from_list(r) for r in rects]
        for group, rects in sequential_record(round_ - 1)["next_design"].items()
    }


def sequential_last_round():
    """The round after which every unit had stopped."""
    round_ = 0
    while not sequential_record(round_)["done"]:
        round_ += 1
    return round_


def group_shards(agent, resource_profile, design=None):
    """The shards of one group: the fixed design's, or those of ``design`` (sequential mode;
    default: the design of the last round)."""
    if SEQUENTIAL is None:
        return PLAN.shards(agent, resource_profile)
    if design is None:
        design = sequential_design(sequential_last_round())
    rects = design[group_label(agent, resource_profile)]
    return [
        Shard(agent, resource_profile, block, chunk)
        for block, chunk in pipeline_sequential.shard_ranges(
            rects, int(config["trials"]["block_size"]), chunk_size(config)
        )
    ]


def all_shards():
    return [s for a, r in PLAN.groups() for s in group_shards(a, r)]


def all_trial_shards(wildcards=None):
    if IMPORTED:
        return [_path(rules.import_trials.output.trials)]
    return [fill(rules.run_trials.output.shard, **s.wildcards) for s in all_shards()]


def all_score_shards(wildcards=None):
    if IMPORTED:
        return [_path(rules.import_trials.output.scores)]
    return [fill(rules.score.output.scores, **s.wildcards) for s in all_shards()]


JUDGE_STAGE = pipeline_settings.judge_stage(config)


def score_rounds(wildcards):
    """Runs of this score shard's job that left trials unjudged: raised by such a run, so a
    plain rerun judges exactly those trials again (evalnoise.pipeline.shards.judge_rounds).
    """
    return judge_rounds(fill(rules.score.output.scores, **wildcards))


def verifier_rounds_param(wildcards):
    """Runs of this trial shard's job that left trials without a verifier's verdict: raised
    by such a run, so a plain rerun runs exactly those trials again
    (evalnoise.pipeline.shards.verifier_rounds)."""
    return verifier_rounds(fill(rules.run_trials.output.shard, **wildcards))


def judge_rounds_param(wildcards):
    return judge_rounds(fill(rules.judge.output.judged, **wildcards))


def all_judged_shards(wildcards=None):
    """The judge stage's shards, every judge's (none without it)."""
    if not JUDGE_STAGE:
        return []
    return [
        fill(rules.judge.output.judged, judge=judge, **s.wildcards)
        for judge in JUDGES
        for s in all_shards()
    ]


def reference_scores_of(agent, resource_profile, design=None):
    if IMPORTED:
        return [_path(rules.import_trials.output.scores)]
    return [
        fill(rules.score.output.scores, **s.wildcards)
        for s in group_shards(agent, resource_profile, design)
    ]


def judged_of(agent, resource_profile, design=None, judges=None):
    """The judge stage's shards of one group: of ``judges`` (names; default: every judge)."""
    if not JUDGE_STAGE:
        return []
    return [
        fill(rules.judge.output.judged, judge=judge, **s.wildcards)
        for judge in (JUDGES if judges is None else judges)
        for s in group_shards(agent, resource_profile, design)
    ]


def scores_of(agent, resource_profile, design=None):
    """The shards the statistics read: the reference scorer's, or with
    ``analysis.score: judge`` the judge stage's (its primary judge's)."""
    if config["analysis"]["score"] == "judge" and JUDGE_STAGE:
        return judged_of(agent, resource_profile, design, judges=[PRIMARY_JUDGE])
    return reference_scores_of(agent, resource_profile, design)


# -- sequential mode: the checkpoint's inputs and params --------------------------------------


def sequential_round_scores(wildcards):
    """Every group's score shards of the design run up to this round."""
    design = sequential_design(int(wildcards.round))
    return [path for a, r in PLAN.groups() for path in scores_of(a, r, design)]


def sequential_previous_record(wildcards):
    round_ = int(wildcards.round)
    if round_ == 0:
        return []
    return [fill(rules.sequential_round.output.record, round=_round_label(round_ - 1))]


def sequential_design_param(wildcards):
    return {
        group: [rect.to_list() for rect in rects]
        for group, rects in sequential_design(int(wildcards.round)).items()
    }


def sequential_settings_param(wildcards=None):
    from dataclasses import asdict

    return asdict(SEQUENTIAL)


def sequential_records(wildcards=None):
    """Every round's record, the first to the last."""
    if SEQUENTIAL is None:
        return []
    return [
        fill(rules.sequential_round.output.record, round=_round_label(round_))
        for round_ in range(sequential_last_round() + 1)
    ]


def sequential_outputs(wildcards=None):
    """results/sequential/{summary.json,rounds.csv}: written in every mode (a fixed design
    says so), so the trials stage's DVC output always exists."""
    return [_path(path) for path in rules.sequential_summary.output]


def sequential_report_files(wildcards=None):
    """The report's Adaptive evaluation section reads [summary.json, rounds.csv] (sequential
    mode only)."""
    if SEQUENTIAL is None:
        return []
    return [
        _path(rules.sequential_summary.output.summary),
        _path(rules.sequential_summary.output.rounds),
    ]


def sequential_summary_file(wildcards=None):
    """results/sequential/summary.json in sequential mode (summary.txt and the report say
    why each agent stopped), else nothing."""
    if SEQUENTIAL is None:
        return []
    return [_path(rules.sequential_summary.output.summary)]


def group_scores(wildcards):
    """The score shards of one agent × resource profile."""
    return scores_of(wildcards.agent, wildcards.resource_profile)


def group_judge_reference(wildcards):
    """The reference scorer's shards of one group, which its judges are set against (none
    without a judge stage)."""
    if not JUDGE_STAGE:
        return []
    return reference_scores_of(wildcards.agent, wildcards.resource_profile)


def group_judged(wildcards):
    """Every judge's shards of one group."""
    return judged_of(wildcards.agent, wildcards.resource_profile)


def group_judged_by_judge(wildcards):
    """{judge: its shards of one group}, for the judges' record of analyze_group."""
    return {
        judge: judged_of(wildcards.agent, wildcards.resource_profile, judges=[judge])
        for judge in JUDGES
    }


# What analyze_group writes for one group: its statistics, ICC convergence and budget table,
# and with a judge stage its judges' record. Declared per config (not an always-written "no
# judge" file): the DAG names exactly the files a run makes, and adding a judge stage makes
# the groups' jobs rerun because their declared outputs grew.
GROUP_OUTPUTS = {
    "stats": "results/analysis/groups/{agent}/{resource_profile}.json",
    "convergence": "results/analysis/convergence/{agent}/{resource_profile}.csv",
    "budget": "results/analysis/budget/{agent}/{resource_profile}.csv",
    **(
        {"judge": "results/analysis/judge/{agent}/{resource_profile}.json"}
        if JUDGE_STAGE
        else {}
    ),
}
# The judges' params exist only with a judge stage, so a judge spec edited in a run without
# one reruns no group's statistics.
JUDGE_QUALITY_PARAMS = (
    {
        "judges": judges_param,
        "judged": group_judged_by_judge,
        "reference": config["scorer"],
    }
    if JUDGE_STAGE
    else {}
)


def _group_output(key, agent, resource_profile):
    return fill(
        getattr(rules.analyze_group.output, key),
        agent=agent,
        resource_profile=resource_profile,
    )


def _pair_groups(wildcards):
    if wildcards.kind == "agents":
        return (wildcards.a, wildcards.within), (wildcards.b, wildcards.within)
    return (wildcards.within, wildcards.a), (wildcards.within, wildcards.b)


def pair_scores_a(wildcards):
    return scores_of(*_pair_groups(wildcards)[0])


def pair_scores_b(wildcards):
    return scores_of(*_pair_groups(wildcards)[1])


def pair_groups_param(wildcards):
    """The two groups' (agent, resource profile) names in the data."""
    first, second = _pair_groups(wildcards)
    return {"a": list(PLAN.names(*first)), "b": list(PLAN.names(*second))}


def group_param(wildcards):
    """The group's (agent, resource profile) names in the data."""
    return list(PLAN.names(wildcards.agent, wildcards.resource_profile))


def all_stats(wildcards=None):
    return [_group_output("stats", a, r) for a, r in PLAN.groups()]


def all_convergence(wildcards=None):
    return [_group_output("convergence", a, r) for a, r in PLAN.groups()]


def attribution_scores(wildcards=None):
    """Every group's score shards, as the statistics read them."""
    return [path for a, r in PLAN.groups() for path in scores_of(a, r)]


def plan_groups_param(wildcards=None):
    """The run's (agent, resource profile) pairs, as their names in the data."""
    return [list(PLAN.names(a, r)) for a, r in PLAN.groups()]


def all_judge_quality(wildcards=None):
    if not JUDGE_STAGE:
        return []
    return [_group_output("judge", a, r) for a, r in PLAN.groups()]


def all_budgets(wildcards=None):
    return [_group_output("budget", a, r) for a, r in PLAN.groups()]


def all_pairs(wildcards=None):
    pattern = rules.compare.output.pair
    out = [
        fill(pattern, kind="agents", within=r, a=a, b=b)
        for r, a, b in PLAN.agent_pairs()
    ]
    out += [
        fill(pattern, kind="resource_profiles", within=g, a=a, b=b)
        for g, a, b in PLAN.profile_pairs()
    ]
    return out


def analysis_outputs(wildcards=None):
    """What summarize makes (the tables, summary and metrics the report reads)."""
    return [_path(path) for path in rules.summarize.output]


# -- targets -----------------------------------------------------------------------------------
# A target names every file a later step reads, not only the last ones. Snakemake makes a
# missing file only for a job that must run: a target's missing input, or a consumer that is
# out of date. A file deleted, or never finished by a killed run (Snakemake removes a job's
# outputs before it starts it), under an up-to-date consumer is not rebuilt, and `snakemake`
# says "Nothing to be done" while results/ lacks it; as a target it is rebuilt, and then
# everything that reads it.


def trial_targets(wildcards=None):
    """The trials stage: tasks, each agent's image record, every trial shard, and (sequential
    mode) the rounds that decided which shards there are. Not the
    canaries: nothing reads one after its agent's trials, and one rebuilt (absent, it is no
    longer `ancient`) would make all the agent's shards look stale."""
    return [
        tasks_table(),
        *all_image_infos(),
        *all_trial_shards(),
        *sequential_outputs(),
    ]


def analysis_targets(wildcards=None):
    """The analysis stage: every group, pair, convergence and budget file, and the summary."""
    return [
        *all_stats(),
        *all_pairs(),
        *all_convergence(),
        *all_budgets(),
        *all_judge_quality(),
        *[_path(path) for path in rules.attribution.output],
        *analysis_outputs(),
    ]


def all_outputs(wildcards=None):
    """Everything `snakemake` builds by default: every artifact of every stage."""
    return [
        *trial_targets(),
        *all_score_shards(),
        *all_judged_shards(),
        *analysis_targets(),
        _path(rules.manifest.output.manifest),
        _path(rules.report.output.report),
        _path(rules.record_config.output.config),
        _path(rules.check.output.health),
    ]


# -- cluster resources of run_trials (profiles/slurm) ------------------------------------------
# A shard's Slurm request follows from its trials and resource profile
# (evalnoise.pipeline.slurm_resources), so Slurm's limits and the containers' agree. Local
# runs ignore them (resources are scheduler tokens there).


_RUN_TRIALS_REQUESTS = {}


def _run_trials_request(wildcards, threads):
    """A shard's Slurm request, computed once per shard (three resources ask for it)."""
    key = (
        wildcards.agent,
        wildcards.resource_profile,
        wildcards.block,
        wildcards.chunk,
        threads,
    )
    if key not in _RUN_TRIALS_REQUESTS:
        _RUN_TRIALS_REQUESTS[key] = _shard_request(wildcards, threads)
    return _RUN_TRIALS_REQUESTS[key]


def _shard_request(wildcards, threads):
    from evalnoise.pipeline.slurm_resources import shard_job_resources

    first, last = parse_range(wildcards.chunk)
    return shard_job_resources(
        _planned_tasks().iloc[first : last + 1],
        resource_profile_param(wildcards),
        trials=len(trials_param(wildcards)),
        concurrency=threads,
        infra_policy=infra_policy_param(),
        served=bool(agent_server_tokens(wildcards)),
    )


def run_trials_cpus(wildcards, threads):
    """Slurm --cpus-per-task of a shard: its trials' CPU guarantees at once."""
    return _run_trials_request(wildcards, threads).cpus_per_task


def run_trials_mem_mb(wildcards, threads):
    """Slurm --mem of a shard: its trials' memory limits at once + the runner's own."""
    return _run_trials_request(wildcards, threads).mem_mb


def run_trials_runtime(wildcards, threads):
    """Slurm -t (minutes) of a shard: every trial at its time limit, every attempt."""
    return _run_trials_request(wildcards, threads).runtime
