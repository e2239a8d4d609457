"""Prompt and sampling variants: facets the pipeline varies besides tasks and trials.

The config's ``variants`` section declares them (config/README.md, "Variants"):

- ``variants.prompt``: templates of the instruction, each holding ``{question}`` — a list
  (levels named ``p0``, ``p1``, … by position) or a mapping of names to templates;
- ``variants.sampling``: agent settings to vary, ``VAR: [value, …]`` (e.g.
  ``AGENT_TEMPERATURE: [0.2, 0.8]``), for every agent; ``agents.<name>.sampling`` replaces
  it for one agent (``{}``: none).

**Design.** Fully crossed: an agent's variants are every combination of a prompt level and
one value of each sampling variable (:func:`agent_variants`), and every task runs
``trials.count`` trials under every variant — each task sees each variant, equally often.
A variant is a dimension of the shards (agent × resource profile × variant × trial block ×
task chunk), so adding a level adds shards and leaves every other shard as it was.

**Identity.** What a variant changes is its *identity*: the template when it is not
``{question}`` alone, and the sampling values that differ from the agent's own ``env``.
Its ``key`` is the SHA-256 (first 12 hex digits) of that identity's canonical JSON; the
key enters the trial seeds and the shard's order (:mod:`evalnoise.runner.seeds`), the
journal header, and the shard's file names (``c0000-0005.v<key>.parquet``, journal
``t0000-c0000.v<key>.jsonl``: :attr:`Variant.segment`). Names are labels only: renaming a
level, or reordering the list, never moves a shard or changes a seed (the shards are
rewritten with the new labels, their trials resumed from the journals). A variant that
changes nothing — the template ``{question}`` with the agent's own settings — is *neutral*:
empty key, and exactly the shards, seeds and journals of a run without variants, so
declaring variants on a finished run runs only the new levels' trials.

**Assignment order.** A shard holds one variant; the run interleaves variants in time as it
does agents: every variant's shards of trial block 0 before any of block 1
(:func:`evalnoise.pipeline.settings.block_priority`), and within a shard the seeded order
of :func:`evalnoise.runner.seeds.trial_order`, keyed by the variant too.

:func:`check_variants` holds the rules the JSON schema cannot state; it runs when the DAG is
built (:func:`evalnoise.pipeline.settings.check_config`).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from evalnoise.runner.variant import PLACEHOLDER, TrialVariant

__all__ = [
    "KEY_LENGTH",
    "NEUTRAL",
    "NO_VARIANT",
    "SEGMENT_PATTERN",
    "Variant",
    "VariantError",
    "agent_variants",
    "check_variants",
    "declared",
    "env_value",
    "prompt_levels",
    "sampling_label",
    "sampling_levels",
    "variant_key",
]

#: The template that leaves the task's question as it is.
NEUTRAL = PLACEHOLDER
#: Hex digits of a variant key.
KEY_LENGTH = 12
#: A variant's part of a shard's file name: empty for the neutral variant.
SEGMENT_PATTERN = rf"(\.v[0-9a-f]{{{KEY_LENGTH}}})?"


def env_value(value: Any) -> str:
    """A config value as the agent's environment gets it (``true``/``false`` for booleans)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def declared(config: Mapping[str, Any]) -> bool:
    """Whether the config declares any variant (a prompt level or a sampling variable)."""
    section = config.get("variants") or {}
    if section.get("prompt") or section.get("sampling"):
        return True
    return any((agent or {}).get("sampling") for agent in (config.get("agents") or {}).values())


def prompt_levels(config: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``(name, template)`` of every prompt level, in the config's order; ``[]`` = none."""
    prompt = (config.get("variants") or {}).get("prompt")
    if not prompt:
        return []
    if isinstance(prompt, Mapping):
        return [(str(name), str(template)) for name, template in prompt.items()]
    return [(f"p{i}", str(template)) for i, template in enumerate(prompt)]


def _sampling_source(config: Mapping[str, Any], agent: str) -> tuple[str, Mapping[str, Any]]:
    """The config key and the map of the sampling variables that apply to ``agent``."""
    own = (config["agents"][agent] or {}).get("sampling")
    if own is not None:
        return f"agents.{agent}.sampling", own
    return "variants.sampling", (config.get("variants") or {}).get("sampling") or {}


def sampling_levels(config: Mapping[str, Any], agent: str) -> dict[str, list[str]]:
    """Variable → values (as the environment gets them) varied for ``agent``, by name."""
    _, source = _sampling_source(config, agent)
    return {str(var): [env_value(v) for v in values] for var, values in sorted(source.items())}


def sampling_label(values: Mapping[str, str]) -> str | None:
    """The ``sampling`` column of a combination: ``A=1,B=x`` by variable (None: none)."""
    return ",".join(f"{var}={values[var]}" for var in sorted(values)) or None


def variant_key(identity: Mapping[str, Any]) -> str:
    """SHA-256 (first :data:`KEY_LENGTH` hex digits) of the identity's canonical JSON;
    ``""`` for the empty identity (the neutral variant)."""
    if not identity:
        return ""
    text = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:KEY_LENGTH]


@dataclass(frozen=True)
class Variant:
    """One combination of levels for one agent (see the module docstring).

    ``prompt`` is the prompt level's name (None: no prompt facet), ``template`` its template
    (None when it is the neutral ``{question}``), ``sampling`` the value of every varied
    variable, ``env`` those values that differ from the agent's own env (what the variant
    changes), ``key`` the digest of what it changes.
    """

    prompt: str | None = None
    template: str | None = None
    sampling: Mapping[str, str] = field(default_factory=dict)
    env: Mapping[str, str] = field(default_factory=dict)

    @property
    def identity(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.template is not None:
            out["prompt"] = self.template
        if self.env:
            out["env"] = dict(sorted(self.env.items()))
        return out

    @property
    def key(self) -> str:
        return variant_key(self.identity)

    @property
    def segment(self) -> str:
        """The variant's part of its shards' file names (``""`` when neutral)."""
        key = self.key
        return f".v{key}" if key else ""

    @property
    def labels(self) -> dict[str, str | None]:
        """The trial columns ``prompt_variant`` and ``sampling``."""
        return {"prompt_variant": self.prompt, "sampling": sampling_label(self.sampling)}

    def trial_variant(self) -> TrialVariant:
        """The runner's view (:class:`evalnoise.runner.variant.TrialVariant`)."""
        return TrialVariant(key=self.key, template=self.template, **self.labels)

    def apply(self, spec: Mapping[str, Any]) -> dict[str, Any]:
        """The runner's agent spec (:func:`evalnoise.pipeline.settings.agent_spec`) with the
        variant's settings in its env; the spec itself when the variant changes none."""
        if not self.env:
            return dict(spec)
        return {**spec, "env": dict(sorted({**spec["env"], **self.env}.items()))}


#: The one variant of an agent in a run without variants.
NO_VARIANT = Variant()


def agent_variants(config: Mapping[str, Any], agent: str) -> tuple[Variant, ...]:
    """Every variant of ``agent``: the prompt levels × each sampling variable's values, in
    the config's order (prompt slowest); ``(NO_VARIANT,)`` when nothing varies for it."""
    prompts: list[tuple[str | None, str | None]] = list(prompt_levels(config)) or [(None, None)]
    levels = sampling_levels(config, agent)
    own_env = {
        str(k): env_value(v) for k, v in ((config["agents"][agent] or {}).get("env") or {}).items()
    }
    names = list(levels)
    out = []
    for (name, template), values in itertools.product(
        prompts, itertools.product(*(levels[n] for n in names))
    ):
        chosen = dict(zip(names, values, strict=True))
        out.append(
            Variant(
                prompt=name,
                template=None if template in (None, NEUTRAL) else template,
                sampling=chosen,
                env={k: v for k, v in chosen.items() if own_env.get(k) != v},
            )
        )
    return tuple(out)


# -- the rules a schema cannot state -------------------------------------------------------------

#: Names of variables that hold credentials: never varied through the config.
_SECRET_NAME = re.compile(r"(?i)(api[_-]?key|secret|token|password|passwd|credential)")


class VariantError(ValueError):
    """A variant declaration is invalid; the message names the config key."""


def _level_value(value: Any) -> Any:
    """What makes two sampling values the same level: the number, when the text the agent
    receives reads as one (1, 1.0 and "1.0" alike), else that text."""
    text = env_value(value)
    try:
        return float(text)
    except ValueError:
        return text


def _check_prompt(config: Mapping[str, Any]) -> None:
    prompt = (config.get("variants") or {}).get("prompt")
    if not prompt:
        return
    if isinstance(prompt, Mapping):
        where = {str(name): f"variants.prompt.{name}" for name in prompt}
    else:
        where = {f"p{i}": f"variants.prompt[{i}]" for i in range(len(prompt))}
    seen: dict[str, str] = {}
    for name, template in prompt_levels(config):
        key = where[name]
        if PLACEHOLDER not in template:
            raise VariantError(
                f"config key {key}: the template has no {PLACEHOLDER} (where the task's "
                f"question goes): {template[:60]!r}"
            )
        if template in seen:
            raise VariantError(
                f"config key {key}: the same template as {seen[template]} (duplicate level)"
            )
        seen[template] = key


def _check_sampling(config: Mapping[str, Any]) -> None:
    agents = config.get("agents") or {}
    for name, agent in agents.items():
        source_key, source = _sampling_source(config, name)
        env = (agent or {}).get("env") or {}
        for var, values in source.items():
            key = f"config key {source_key}.{var}"
            if _SECRET_NAME.search(str(var)):
                raise VariantError(
                    f"{key}: looks like a credential; secrets are never varied through the "
                    "config (agents.<name>.secret_env names them)"
                )
            if var not in env:
                taken = ", ".join(sorted(env)) or "none"
                hint = (
                    f"declare it in agents.{name}.env, or give agents.{name}.sampling"
                    if source_key == "variants.sampling"
                    else f"declare it in agents.{name}.env"
                )
                raise VariantError(
                    f"{key}: agent {name!r} does not take {var} (the settings in its env: "
                    f"{taken}); {hint}"
                )
            seen: dict[Any, int] = {}
            for i, value in enumerate(values):
                level = _level_value(value)
                if level in seen:
                    raise VariantError(
                        f"{key}[{i}]: {value!r} is the same level as [{seen[level]}] "
                        "(duplicate level)"
                    )
                seen[level] = i


def check_variants(config: Mapping[str, Any]) -> None:
    """Raise :class:`VariantError` naming the key of the first problem of the ``variants``
    section and the agents' ``sampling``: a template without ``{question}``, a duplicate
    level, a variable the agent does not take (not in its ``env``), a credential-named
    variable, variants of an imported table or of an adaptive (sequential) run. ``config``
    has the schema's defaults filled in (the default agents are checked too)."""
    if not declared(config):
        return
    section = config.get("variants") or {}
    which = "variants" if section.get("prompt") or section.get("sampling") else "agents"
    if config.get("trials_from"):
        raise VariantError(
            f"config key {which}: an imported trial table is not run, so it has no variants "
            "to run; analyse its own facet columns with `evalnoise analyze --facets`"
        )
    if (config.get("sequential") or {}).get("enabled"):
        raise VariantError(
            f"config key {which}: variants are not supported in adaptive mode "
            "(sequential.enabled): its rounds decide tasks and trials per agent only"
        )
    _check_prompt(config)
    _check_sampling(config)
    for name in config.get("agents") or {}:
        keys = [v.key for v in agent_variants(config, name)]
        if len(set(keys)) != len(keys):  # distinct levels give distinct identities
            raise VariantError(f"config key agents.{name}: two variants change the same things")
