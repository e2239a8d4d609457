"""The judges of a run: the ``scorer.judge`` section as one spec per judge.

``scorer.judge`` holds the settings of an LLM judge; ``scorer.judge.judges`` declares the
judges by name, in order — the levels of the judge facet. Each is an LLM judge whose keys
(:data:`JUDGE_LLM_KEYS`) override the section's (a null or absent key is the section's), or
a rule-based judge (``rule``, :mod:`evalnoise.scorers.rule_judge`) with no other key. The
first is the *primary* judge: the scorer when ``scorer.name`` is ``judge``, and the judge
whose scores ``analysis.score: judge`` analyses. A section without ``judges`` (null) is one
LLM judge named :data:`DEFAULT_JUDGE_NAME`.

Kept apart from :mod:`evalnoise.pipeline.settings`, which every stage's code version hashes:
a change to the judges' settings code reruns only the judge stage and its analysis.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evalnoise.pipeline.settings import ConfigError

__all__ = [
    "DEFAULT_JUDGE_NAME",
    "JUDGE_LLM_KEYS",
    "judge_specs",
    "judge_template_hash",
    "primary_judge",
    "uses_judge_server",
]

#: the keys of an LLM judge (``scorer.judge``) that a judge of ``scorer.judge.judges`` may
#: override
JUDGE_LLM_KEYS = (
    "base_url",
    "model",
    "api_key_env",
    "template",
    "mode",
    "structured",
    "samples",
    "temperature",
    "seed",
    "max_tokens",
)
#: the name of the one judge of a section without ``judges``
DEFAULT_JUDGE_NAME = "llm"


def judge_specs(section: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Every judge of the ``scorer.judge`` section, by name, in the declared order (the
    first is the primary judge). An LLM judge's spec is the section's
    :data:`JUDGE_LLM_KEYS` with its own non-null values over them, ``rule`` None; a rule
    judge's is ``{"rule": RULE}``. Each spec also holds its ``name``.

    Raises :class:`~evalnoise.pipeline.settings.ConfigError` naming the key when a rule
    judge sets a model setting (a rule is all such a judge is).
    """
    base = {key: section.get(key) for key in JUDGE_LLM_KEYS if key in section}
    declared = section.get("judges") or {DEFAULT_JUDGE_NAME: {}}
    specs: dict[str, dict[str, Any]] = {}
    for name, own in declared.items():
        # null is "the section's value" (the schema's default for every key of a judge)
        own = {k: v for k, v in dict(own or {}).items() if v is not None}
        if own.get("rule"):
            extra = [k for k in JUDGE_LLM_KEYS if k in own]
            if extra:
                raise ConfigError(
                    f"config key scorer.judge.judges.{name}.{extra[0]}: judge {name!r} is the "
                    f"rule {own['rule']!r}, which has no model settings; remove it"
                )
            specs[name] = {"name": name, "rule": own["rule"]}
        else:
            specs[name] = {**base, **own, "name": name, "rule": None}
    return specs


def primary_judge(section: Mapping[str, Any]) -> dict[str, Any]:
    """The first judge of :func:`judge_specs`; a spec given already resolved (a ``name``
    and no ``judges`` key) is returned as it is."""
    if "name" in section and "judges" not in section:
        return dict(section)
    return next(iter(judge_specs(section).values()))


def uses_judge_server(spec: Mapping[str, Any]) -> bool:
    """Whether the judge of ``spec`` (:func:`judge_specs`) needs the managed model server:
    an LLM judge without a ``base_url``."""
    return not spec.get("rule") and spec.get("base_url") is None


def judge_template_hash(judge: Mapping[str, Any]) -> str:
    """The hash of what a judge's verdicts mean besides its model, for provenance params:
    an LLM judge's prompt (template file or the mode's defaults), mode and answer schemas
    (:func:`evalnoise.scorers.judge_template.judge_hash`, as the judge hashes them); a rule
    judge's rule, ``template_hash("--rule=" + rule)``. ``judge`` is one spec
    (:func:`judge_specs`) or a ``scorer.judge`` section (its first judge). Reads the
    template file; imports no model code (Snakemake calls it while building the DAG)."""
    from evalnoise.scorers.judge_template import judge_hash, template_hash

    judge = primary_judge(judge)
    if judge.get("rule"):
        return template_hash(f"--rule={judge['rule']}")
    text = None
    if judge["template"]:
        text = Path(judge["template"]).read_text(encoding="utf-8")
    return judge_hash(text, judge.get("mode", "verdict"))
