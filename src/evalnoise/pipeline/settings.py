"""The pipeline's configuration: validation with messages that name the key, defaults, specs.

``config/config.yaml`` is checked against ``config/schemas/config.schema.yaml`` (JSON
Schema 2020-12, every object closed with ``additionalProperties: false``).
:func:`check_config` reports every problem as one line that names the dotted key
(``config key trials.cuont: unknown key (allowed: block_size, count)``);
:func:`with_defaults` fills in every default the schema declares. Both are pure functions of
their arguments, so the Snakefile and the tests use the same code.

The rest of this module turns the validated config into the specs the runner, the scorers
and the report take: :func:`agent_spec` (an :class:`evalnoise.runner.AgentSpec` mapping),
:func:`resource_profile_spec`, :func:`infra_policy_spec`, :func:`model_server_spec`; and
the Snakemake job priorities that order trials in time (:func:`block_priority`,
:func:`shard_priority`, :func:`setup_priority`).
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

__all__ = [
    "PROMPT_BATCH",
    "RUNTIME_URL_VAR",
    "ConfigError",
    "agent_image_tag",
    "agent_spec",
    "block_priority",
    "check_config",
    "context_files",
    "infra_policy_spec",
    "judge_stage",
    "load_schema",
    "model_server_spec",
    "read_yaml",
    "resource_profile_spec",
    "roomiest_profile",
    "setup_priority",
    "shard_priority",
    "uses_judge",
    "uses_model_server",
    "with_defaults",
]

#: The variable through which a served agent learns the model server's URL. It is passed at
#: run time (the port is chosen when the server starts), like a secret: it is not part of the
#: agent's identity, so a resumed shard is not mistaken for a different configuration.
RUNTIME_URL_VAR = "AGENT_BASE_URL"

_MAX_ERRORS = 10


class ConfigError(ValueError):
    """The configuration is invalid; the message names every offending key."""


#: libyaml's safe loader where PyYAML was built with it, else the pure-Python one: the same
#: YAML 1.1 documents, and every Snakemake start parses the schema (libyaml is an order of
#: magnitude faster)
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def read_yaml(path: str | os.PathLike[str]) -> Any:
    """The YAML document at ``path``, read with the safe loader (``yaml.safe_load``'s)."""
    with open(path, encoding="utf-8") as handle:
        return yaml.load(handle, Loader=_SAFE_LOADER)


def load_schema(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The config's JSON schema (``config/schemas/config.schema.yaml``)."""
    return read_yaml(path)


# -- validation ----------------------------------------------------------------------------


def _dotted(path: Iterable[Any]) -> str:
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def _key(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix else name


#: config keys that were renamed: old dotted key → new; the old one is refused naming the new
RENAMED_KEYS = {"sequential.first_block": "sequential.first_round"}


def _describe(error: Any) -> list[str]:
    """One line per problem, each naming the dotted config key."""
    where = _dotted(error.absolute_path)
    if error.validator == "additionalProperties" and isinstance(error.instance, Mapping):
        allowed = sorted(error.schema.get("properties", {}))
        extra = sorted(set(error.instance) - set(allowed))
        hint = f" (allowed: {', '.join(allowed)})" if allowed else ""
        keys = [_key(where, str(name)) for name in extra]
        return [
            f"config key {key}: renamed to {RENAMED_KEYS[key]}"
            if key in RENAMED_KEYS
            else f"config key {key}: unknown key{hint}"
            for key in keys
        ]
    if "propertyNames" in error.absolute_schema_path:
        return [
            f"config key {_key(where, str(error.instance))}: name not allowed ({error.message})"
        ]
    if error.validator == "required":
        return [f"config key {where or '(top level)'}: {error.message}"]
    if error.validator in ("oneOf", "anyOf") and error.context:
        # the alternatives whose type the value has say what is wrong inside it; when none
        # has, the value's type is the problem: name every type allowed
        depth = len(list(error.absolute_path))
        wrong_type = [
            e
            for e in error.context
            if e.validator == "type" and len(list(e.absolute_path)) == depth
        ]
        inside = [e for e in error.context if e not in wrong_type]
        if inside:
            return _describe(max(inside, key=lambda e: len(list(e.absolute_path))))
        types = [
            t
            for e in wrong_type
            for t in (
                e.validator_value if isinstance(e.validator_value, list) else [e.validator_value]
            )
        ]
        return [
            f"config key {where or '(top level)'}: {error.instance!r} is not of type "
            + ", ".join(repr(t) for t in dict.fromkeys(types))
        ]
    return [f"config key {where or '(top level)'}: {error.message}"]


def check_config(config: Mapping[str, Any], schema: Mapping[str, Any]) -> None:
    """Raise :class:`ConfigError` listing every violation of ``schema``, by dotted key."""
    from jsonschema import Draft202012Validator

    validator = Draft202012Validator(schema)
    errors = sorted(
        validator.iter_errors(config), key=lambda e: (_dotted(e.absolute_path), e.validator)
    )
    lines: list[str] = []
    for error in errors:
        for line in _describe(error):
            if line not in lines:
                lines.append(line)
    if lines:
        more = len(lines) - _MAX_ERRORS
        shown = lines[:_MAX_ERRORS] + ([f"... and {more} more"] if more > 0 else [])
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(shown))
    # the cross-field rules read the config as the run will see it: every default filled in
    # from the schema (the one place defaults are written)
    defaulted = with_defaults(config, schema)
    _check_semantics(defaulted)
    from evalnoise.pipeline.variants import VariantError, check_variants

    try:
        # with the defaults: a global sampling facet must suit the default agents as well
        check_variants(defaulted)
    except VariantError as exc:
        raise ConfigError(str(exc)) from None


#: agent programs for environment tasks that the runner plays itself
BUILTIN_PROGRAMS = ("oracle", "nop")
#: agent programs for environment tasks that run on the host (the exec protocol)
HOST_PROGRAMS = ("shell_agent",)
#: every agent program for environment tasks
ENVIRONMENT_PROGRAMS = (*BUILTIN_PROGRAMS, *HOST_PROGRAMS)
#: the host program that runs a Harbor agent (``agents.<name>.harbor``) in Harbor's Python
HARBOR_BRIDGE = "agents/harbor_agent/bridge.py"
#: the host program that runs an Inspect agent (``agents.<name>.inspect``)
INSPECT_ADAPTER = "agents/inspect_agent/agent.py"


def _check_environment(config: Mapping[str, Any]) -> None:
    """The rules of a run of environment tasks (``benchmark.source: harbor``), and of
    environment-task agents elsewhere."""
    bench = config.get("benchmark") or {}
    harbor = bench.get("source") == "harbor" and not config.get("trials_from")
    agents = config.get("agents") or {}
    if not harbor:
        for name, agent in agents.items():
            for key, who in (("harbor", "a Harbor"), ("inspect", "an Inspect")):
                if agent.get(key):
                    raise ConfigError(
                        f"config key agents.{name}.{key}: {who} agent works in an environment "
                        "task's container; it needs benchmark.source: harbor"
                    )
            if agent.get("program") in ENVIRONMENT_PROGRAMS:
                raise ConfigError(
                    f"config key agents.{name}.program: {agent['program']!r} is an agent of "
                    "environment tasks; it needs benchmark.source: harbor"
                )
        return
    if not bench.get("path"):
        raise ConfigError("config key benchmark.path: required when benchmark.source is 'harbor'")
    if bench.get("network_name") and bench.get("network", "as_declared") != "as_declared":
        raise ConfigError(
            "config key benchmark.network_name: names the network public-network tasks join, "
            f"which they have only with benchmark.network: as_declared (not {bench['network']!r})"
        )
    if config.get("backend", "docker") != "docker":
        raise ConfigError(
            "config key backend: environment tasks (benchmark.source harbor) run in the "
            "task's own container: use the docker backend"
        )
    scorer = config.get("scorer") or {}
    if scorer.get("name", "numeric") != "reward":
        raise ConfigError(
            "config key scorer.name: environment tasks are scored by their verifier: set it "
            f"to reward (not {scorer.get('name', 'numeric')!r})"
        )
    if (scorer.get("judge") or {}).get("stage", True):
        raise ConfigError(
            "config key scorer.judge.stage: environment tasks have no answer for a judge to "
            "read (their verifier scores them): set it to false"
        )
    for name, agent in agents.items():
        program = agent.get("program")
        if agent.get("harbor") or agent.get("inspect"):
            _check_harbor_agent(name, agent)
            continue
        if program not in ENVIRONMENT_PROGRAMS and not agent.get("command"):
            raise ConfigError(
                f"config key agents.{name}: an agent of environment tasks is program oracle, "
                "nop or shell_agent, or a `command` speaking the exec protocol "
                "(docs/agent-contract.md)"
            )
        if agent.get("build") or agent.get("image"):
            raise ConfigError(
                f"config key agents.{name}.{'build' if agent.get('build') else 'image'}: an "
                "environment task brings its own image; the agent works in it"
            )
        if program in HOST_PROGRAMS and agent.get("model") != "served":
            raise ConfigError(
                f"config key agents.{name}.model: {program} needs a model: set it to served"
            )


def _check_harbor_agent(name: str, agent: Mapping[str, Any]) -> None:
    """A Harbor agent (``agents.<name>.harbor``) or an Inspect agent (``.inspect``) runs the
    other harness's own agent through its adapter: it has no program, command, build or image
    of its own, and a served model is the run's."""
    where = f"config key agents.{name}"
    if agent.get("harbor") and agent.get("inspect"):
        raise ConfigError(f"{where}.inspect: give harbor or inspect, not both")
    key = "harbor" if agent.get("harbor") else "inspect"
    for other in ("program", "command", "build", "image"):
        if agent.get(other):
            raise ConfigError(
                f"{where}.{other}: agents.{name}.{key} runs the other harness's own agent; "
                f"remove {other}"
            )
    served = agent[key].get("model") == "served"
    if served != (agent.get("model") == "served"):
        raise ConfigError(
            f"{where}.model: set it to served exactly when {key}.model is served (the run's "
            "model server is started for the agent's trials)"
        )


def _check_semantics(config: Mapping[str, Any]) -> None:
    """What a JSON schema cannot say."""
    _check_environment(config)
    harbor = (config.get("benchmark") or {}).get("source") == "harbor"
    local = config.get("backend") == "local"
    for name, agent in (config.get("agents") or {}).items():
        where = f"config key agents.{name}"
        kinds = [k for k in ("program", "build", "image") if agent.get(k)]
        if harbor:
            pass  # checked above: environment agents have no image of their own
        elif local:
            if not agent.get("command"):
                raise ConfigError(
                    f"{where}.command: required with the local backend (the "
                    "command run on the host)"
                )
        elif len(kinds) != 1:
            raise ConfigError(
                f"{where}: give exactly one of program, build or image "
                f"(got {', '.join(kinds) or 'none'})"
            )
        if agent.get("program") and agent.get("command"):
            raise ConfigError(f"{where}.command: a program agent runs its own program")
        if agent.get("model") == "served":
            clash = {"AGENT_BASE_URL", "AGENT_MODEL"} & set(agent.get("env") or {})
            if clash:
                raise ConfigError(
                    f"{where}.env.{sorted(clash)[0]}: set by the pipeline for "
                    "a served model; remove it"
                )
    for name, profile in (config.get("resource_profiles") or {}).items():
        for kind in ("memory", "cpu"):
            guarantee = profile.get(f"{kind}_guarantee_factor", 1.0)
            limit = profile.get(f"{kind}_limit_factor", 1.0)
            if limit is not None and guarantee is not None and limit < guarantee:
                raise ConfigError(
                    f"config key resource_profiles.{name}.{kind}_limit_factor: the hard "
                    f"limit ({limit}) is below the guarantee "
                    f"({kind}_guarantee_factor = {guarantee}); a container cannot be "
                    "guaranteed more than it may use"
                )
    known_profiles = set(config.get("resource_profiles") or {})
    for name, agent in (config.get("agents") or {}).items():
        for i, profile in enumerate(agent.get("resource_profiles") or []):
            if known_profiles and profile not in known_profiles:
                raise ConfigError(
                    f"config key agents.{name}.resource_profiles[{i}]: {profile!r} is not a "
                    f"resource profile (resource_profiles: {', '.join(sorted(known_profiles))})"
                )
    expected = (config.get("health") or {}).get("expected_failures") or []
    if expected and not config.get("trials_from"):
        groups = {
            f"{agent}@{profile}"
            for agent, spec in (config.get("agents") or {}).items()
            for profile in config.get("resource_profiles") or {}
            if profile in (spec.get("resource_profiles") or [profile])
        }
        for i, label in enumerate(expected):
            if label not in groups:
                raise ConfigError(
                    f"config key health.expected_failures[{i}]: {label!r} is not a group of "
                    f"this run (groups: {', '.join(sorted(groups))})"
                )
    _check_sequential(config)
    bench = config.get("benchmark") or {}
    if bench.get("source") in ("file", "frames") and not bench.get("path"):
        raise ConfigError(
            f"config key benchmark.path: required when benchmark.source is {bench.get('source')!r}"
        )
    from evalnoise.manifest import SecretInConfigError, check_config_secrets

    try:
        check_config_secrets(config)
    except SecretInConfigError as exc:
        raise ConfigError(
            str(exc).replace("config key '", "config key ").replace("' holds", ": holds", 1)
        ) from None


def _check_sequential(config: Mapping[str, Any]) -> None:
    """The ``sequential`` block's cross-field rules (what its schema cannot say)."""
    seq = config.get("sequential") or {}
    if not seq.get("enabled"):
        return
    key = "config key sequential"
    if config.get("trials_from"):
        raise ConfigError(
            f"{key}.enabled: an imported trial table cannot be extended with more rounds; "
            "plan the next run with `evalnoise plan --from` instead"
        )
    target = seq.get("target", "accuracy")
    if target == "icc" and seq.get("se") is None:
        raise ConfigError(f"{key}.se: required by target 'icc' (e.g. 0.03)")
    # absent: the schema's default (0.15); null: no target at all
    if target in ("accuracy", "difference") and "half_width" in seq and seq["half_width"] is None:
        raise ConfigError(f"{key}.half_width: required by target {target!r}")
    agents = config.get("agents") or {}
    profiles = list(config.get("resource_profiles") or {})
    compare = seq.get("compare")
    if target == "difference":
        if not compare:
            raise ConfigError(f"{key}.compare: the difference target needs two agents")
        for i, name in enumerate(compare):
            if name not in agents:
                raise ConfigError(
                    f"{key}.compare[{i}]: {name!r} is not an agent of this run "
                    f"(agents: {', '.join(sorted(agents))})"
                )
        if compare[0] == compare[1]:
            raise ConfigError(f"{key}.compare: two different agents, got {compare[0]!r} twice")
        shared = [
            r
            for r in profiles
            if all(r in (agents[a].get("resource_profiles") or profiles) for a in compare)
        ]
        if not shared:
            raise ConfigError(
                f"{key}.compare: {compare[0]!r} and {compare[1]!r} share no resource profile"
            )
    elif compare:
        raise ConfigError(f"{key}.compare: only the difference target compares agents")
    first = seq["first_round"]
    first_tasks, first_trials = int(first["tasks"]), int(first["trials"])
    max_trials = seq["max_trials_per_task"]
    if max_trials is None:
        max_trials = config["trials"]["count"]
        trials_key = "trials.count (the default max_trials_per_task)"
    else:
        trials_key = f"{key}.max_trials_per_task"
    if first_trials > int(max_trials):
        raise ConfigError(
            f"{key}.first_round.trials: {first_trials} trials per task in the first round is "
            f"more than {trials_key} = {max_trials}"
        )
    max_tasks = seq.get("max_tasks")
    if max_tasks is not None and first_tasks > int(max_tasks):
        raise ConfigError(
            f"{key}.first_round.tasks: {first_tasks} tasks in the first round is more than "
            f"{key}.max_tasks = {max_tasks}"
        )
    bench = config.get("benchmark") or {}
    if bench.get("source", "generated") == "generated" and "n" in bench:
        pool = int(bench["n"])
        for name, value in (("first_round.tasks", first_tasks), ("max_tasks", max_tasks)):
            if value is not None and int(value) > pool:
                raise ConfigError(
                    f"{key}.{name}: {value} tasks, but the benchmark has benchmark.n = {pool}"
                )


def _resolve(schema: Mapping[str, Any], root: Mapping[str, Any]) -> Mapping[str, Any]:
    """``schema`` with its local ``$ref`` followed; keys beside the ``$ref`` (a property's
    own ``default`` and ``description``) win over the target's."""
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        node: Any = root
        for part in ref[2:].split("/"):
            node = node[part]
        return {**node, **{k: v for k, v in schema.items() if k != "$ref"}}
    return schema


def _fill(instance: Any, schema: Mapping[str, Any], root: Mapping[str, Any]) -> Any:
    schema = _resolve(schema, root)
    if not isinstance(instance, dict):
        return instance
    for name, sub in (schema.get("properties") or {}).items():
        sub = _resolve(sub, root)
        if name not in instance and "default" in sub:
            instance[name] = copy.deepcopy(sub["default"])
        if name in instance:
            instance[name] = _fill(instance[name], sub, root)
    extra = schema.get("additionalProperties")
    if isinstance(extra, Mapping):
        known = set(schema.get("properties") or {})
        for name in list(instance):
            if name not in known:
                instance[name] = _fill(instance[name], extra, root)
    return instance


def with_defaults(config: Mapping[str, Any], schema: Mapping[str, Any]) -> dict[str, Any]:
    """A deep copy of ``config`` with every default of ``schema`` filled in, recursively
    (also inside each agent and resource profile)."""
    return _fill(copy.deepcopy(dict(config)), schema, schema)


# -- specs ---------------------------------------------------------------------------------


def judge_stage(config: Mapping[str, Any]) -> bool:
    """Whether the run has a separate ``judge`` stage beside the reference scorer."""
    scorer = config["scorer"]
    return (
        not config.get("trials_from")
        and scorer["name"] != "judge"
        and bool(scorer["judge"].get("stage", False))
    )


def uses_judge(config: Mapping[str, Any]) -> bool:
    """Whether an LLM judge scores anything in this run (as the scorer or its own stage)."""
    return config["scorer"]["name"] == "judge" or judge_stage(config)


def uses_model_server(config: Mapping[str, Any], agent: str | None = None) -> bool:
    """Whether ``agent``'s trials (or, with ``agent`` None, the judge) need the server."""
    if agent is not None:
        return config["agents"][agent]["model"] == "served"
    return uses_judge(config) and config["scorer"]["judge"]["base_url"] is None


def _env_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def context_files(context: str | os.PathLike[str]) -> list[Path]:
    """The files of a Docker build context that its image depends on (caches excluded)."""
    root = Path(context)
    return sorted(
        p
        for p in root.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    )


def agent_image_tag(name: str, context: str | os.PathLike[str], base_tag: str) -> str:
    """``evalnoise-agent-<name>:<12 hex>``: sha256 of the base image tag and the context's
    relative paths and bytes, so the tag changes exactly when the image's inputs do."""
    from evalnoise.runner.base_image import context_digest

    root = Path(context)
    files = context_files(root)
    if not files:
        raise ConfigError(f"agent {name!r}: build context {str(root)!r} has no files")
    digest = context_digest(root, files, prefix=f"base={base_tag}" + "\n")
    return f"evalnoise-agent-{name.lower()}:{digest}"


def agent_spec(config: Mapping[str, Any], name: str, image: str | None = None) -> dict[str, Any]:
    """The runner's agent spec (:meth:`evalnoise.runner.AgentSpec.from_dict`) of ``name``.

    A served agent gets ``AGENT_BACKEND=http`` (unless set), ``AGENT_MODEL`` = the server's
    alias, host networking, and :data:`RUNTIME_URL_VAR` among the variables passed at run
    time (``runtime_env``: not a secret, so never redacted, and only its name is recorded).
    ``image`` is the image tag (:func:`evalnoise.pipeline.image_stage.ensure_image`; None
    until it is known, and for the local backend).
    """
    agent = config["agents"][name]
    env = {str(k): _env_value(v) for k, v in sorted(agent["env"].items())}
    runtime = []
    served = agent["model"] == "served"
    if served:
        env.setdefault("AGENT_BACKEND", "http")
        env["AGENT_MODEL"] = config["model_server"]["alias"]
        runtime.append(RUNTIME_URL_VAR)
    network = agent["network"] or ("host" if served else "none")
    spec = {
        "name": name,
        "image": image,
        "command": list(agent["command"]) if agent["command"] else None,
        "env": env,
        "secret_env": list(agent["secret_env"]),
        "runtime_env": runtime,
        "network": network,
    }
    program = agent["program"]
    if agent.get("harbor"):
        # Harbor's agent class, run by the bridge in Harbor's Python (docs/agent-contract.md)
        spec["command"] = ["{harbor_python}", HARBOR_BRIDGE]
        spec["env"] = {**env, "HARBOR_AGENT": harbor_agent_json(agent["harbor"])}
        # Harbor imported once per shard, a forked child per trial (evalnoise.runner.fork_server)
        spec["fork_server"] = True
    elif agent.get("inspect"):
        # Inspect's solver, run by the adapter in this Python (the `inspect` extra)
        spec["command"] = ["{python}", INSPECT_ADAPTER]
        spec["env"] = {**env, "INSPECT_AGENT": inspect_agent_json(agent["inspect"])}
    elif program in BUILTIN_PROGRAMS:
        spec["builtin"] = program  # played by the runner in the task's container
    elif program in HOST_PROGRAMS:
        # an external agent: a host program of this checkout, run by the Python the runner
        # runs in (evalnoise.runner.external_agent.host_command resolves both at start)
        spec["command"] = ["{python}", f"agents/{program}/agent.py"]
    return spec


def inspect_agent_json(block: Mapping[str, Any]) -> str:
    """The ``INSPECT_AGENT`` variable of an Inspect agent: its config block with its
    defaults, as canonical JSON (sorted keys, no spaces), part of the trial's identity."""
    value = {
        "solver": block["solver"],
        "tools": list(block.get("tools", ["bash"])),
        "model": block["model"],
        "kwargs": dict(block.get("kwargs") or {}),
        "generate": dict(block.get("generate") or {}),
        "model_args": dict(block.get("model_args") or {}),
    }
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def harbor_agent_json(block: Mapping[str, Any]) -> str:
    """The ``HARBOR_AGENT`` variable of a Harbor agent: its config block (agent, model,
    kwargs) as canonical JSON (sorted keys, no spaces), part of the trial's identity."""
    value = {
        "agent": block["agent"],
        "model": block.get("model"),
        "kwargs": dict(block.get("kwargs") or {}),
    }
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def resource_profile_spec(config: Mapping[str, Any], name: str) -> dict[str, Any]:
    """The runner's resource profile mapping of ``name``."""
    return {"name": name, **dict(config["resource_profiles"][name])}


def infra_policy_spec(config: Mapping[str, Any]) -> dict[str, Any]:
    """The runner's infra policy mapping (``max_attempts`` only for mode ``retry``;
    ``after_agent_failure`` only when ``scoring.after_agent_failure`` is not the default
    ``verdict``, so the default run's params stay as they were)."""
    policy = config["infra_policy"]
    if policy["mode"] == "retry":
        spec = {
            "mode": "retry",
            "max_attempts": policy["max_attempts"],
            "on_exhausted": policy["on_exhausted"],
        }
    else:
        spec = {"mode": policy["mode"]}
    after = (config.get("scoring") or {}).get("after_agent_failure", "verdict")
    if after != "verdict":
        spec["after_agent_failure"] = after
    return spec


#: How many prompt tokens a served model evaluates at once (``n_ubatch``), by who it serves.
#: Both are history-free (:attr:`evalnoise.models.ServerConfig.history_free`). A judge's
#: prompts are long and its replies short, and each is new: in batches a prompt token costs
#: less (``benchmarks/results/prompt-batch-judge.md``). An agent's conversation carries its
#: own replies into its next prompt: one token at a time, the server reuses their cache; in
#: batches it must evaluate them again, for no gain. Agents stay at one token at a time, so
#: a grown run's new trials are sampled as its earlier ones.
PROMPT_BATCH = {"agent": 1, "judge": 512}


def model_server_spec(config: Mapping[str, Any], serves: str = "agent") -> dict[str, Any]:
    """Keyword arguments of :class:`evalnoise.models.ServerConfig` for a server of an agent's
    trials or of a judge (``serves``: a key of :data:`PROMPT_BATCH`)."""
    server = config["model_server"]
    return {
        "model_path": server["model_path"],
        "model_alias": server["alias"],
        "n_ctx": server["n_ctx"],
        "n_threads": server["n_threads"],
        "seed": server["seed"],
        "startup_timeout_s": float(server["startup_timeout_s"]),
        "n_ubatch": PROMPT_BATCH[serves],
    }


# -- trial order ----------------------------------------------------------------------------
# The trial block is the time block (docs/pipeline.md, "Trial order"): Snakemake starts a
# ready job of higher priority first, so every shard of block 0 — of every agent, resource
# profile and task chunk — is preferred to any shard of block 1, and so on. Priorities are
# whole numbers >= 1 one apart: Snakemake's ILP scheduler weighs a priority step of 1 above
# any core-load gain, and would never pick a job of negative priority; the default 0 of
# the other rules stays below every block.


def _limit_key(profile: Mapping[str, Any]) -> tuple[float, float, float]:
    def factor(name: str) -> float:
        value = profile.get(name, 1.0)
        return float("inf") if value is None else float(value)

    return (
        factor("memory_limit_factor"),
        factor("cpu_limit_factor"),
        factor("time_limit_factor"),
    )


def roomiest_profile(profiles: Mapping[str, Mapping[str, Any]]) -> str:
    """The resource profile with the largest hard memory limit (then CPU, then time limit;
    ``null`` = uncapped counts as infinite; ties go to the first name in sorted order): the
    canary's (:mod:`evalnoise.pipeline.canary`), so it gets the most room any trial gets."""
    if not profiles:
        raise ValueError("no resource profiles")
    return sorted(profiles, key=lambda name: tuple(-v for v in _limit_key(profiles[name])))[0]


def block_priority(block: str, blocks: Iterable[str]) -> int:
    """The Snakemake priority of the ``run_trials`` (and ``score``, ``judge``) jobs of trial
    block ``block`` (a label such as ``0004-0007``) in a run of ``blocks``: 1 + the number of
    ``blocks`` that start later. The earliest block gets the highest; a block the plan does
    not list (a shard asked for by name) ranks by its first trial all the same."""
    from evalnoise.pipeline.shard_plan import parse_range

    first = parse_range(block)[0]
    return 1 + sum(1 for other in set(blocks) if parse_range(other)[0] > first)


def shard_priority(block: str, chunk: str, blocks: Iterable[str], chunks: Iterable[str]) -> int:
    """The Snakemake priority of a shard's ``run_trials``, ``score`` and ``judge`` jobs:

        2 × block_priority(block) + (1 if the chunk has the most tasks of ``chunks`` else 0)

    Earlier blocks first, as :func:`block_priority` orders them; within a block, the shards
    of full chunks before those of the shorter last chunk: longest first (LPT), so the short
    shards, and their judge jobs, fill the cores at the end of the run instead of a long one
    running alone. Steps of 1, as the ILP scheduler needs (:func:`block_priority`)."""
    from evalnoise.pipeline.shard_plan import parse_range

    first, last = parse_range(chunk)
    sizes = [b - a + 1 for a, b in map(parse_range, chunks)]
    longest = last - first + 1 >= max(sizes, default=0)
    return 2 * block_priority(block, blocks) + int(longest)


def setup_priority(blocks: Iterable[str]) -> int:
    """The priority of the jobs every shard waits for (an agent's image and canary): above
    every shard's (:func:`shard_priority`), so no group's shards of a later block run while
    another group's first block still waits for its canary."""
    return 2 * (1 + len(set(blocks))) + 2
