"""A trial's variant: the prompt template and the sampling settings it ran with.

The pipeline can vary what a task's question looks like (a *prompt variant*: a template
around the task's question) and an agent's sampling settings (a *sampling* variant: values
of environment variables such as ``AGENT_TEMPERATURE``); each combination of levels is a
variant, and every task runs under every variant (:mod:`evalnoise.pipeline.variants` builds
them from the config). The runner sees one variant per shard:

- the agent's question is :meth:`TrialVariant.render` of the task's question — every
  ``{question}`` in the template replaced by it, nothing else in the template interpreted
  (a literal ``{`` elsewhere is kept), for question tasks and environment tasks' instructions
  alike; the sampling values arrive already set in the agent spec's ``env``;
- the variant's ``key`` (a digest of what it changes) is part of the trial's identity: the
  trial seed and the shard's order (:mod:`evalnoise.runner.seeds`) and the journal header;
- its labels (``prompt_variant``, ``sampling``) are the trial row's columns of the same
  names: the facets a G study reads.

The *neutral* variant changes nothing (the template ``{question}`` alone, the agent's own
settings): its key is empty, and its trials are exactly the trials of a run without
variants — the same seeds, journal header and task fingerprints.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["PLACEHOLDER", "VARIANT_COLUMNS", "TrialVariant", "trial_variant"]

#: What a prompt template's task question goes in place of.
PLACEHOLDER = "{question}"
#: The trial columns that name a trial's variant (null when the facet was not varied).
VARIANT_COLUMNS = ("prompt_variant", "sampling")


@dataclass(frozen=True)
class TrialVariant:
    """One variant as the runner uses it (see the module docstring).

    ``key`` is empty for the neutral variant; ``template`` is None (or ``{question}``) when
    the question is the task's own; ``prompt_variant`` and ``sampling`` are the labels the
    trial rows carry (None: that facet is not varied in this run).
    """

    key: str = ""
    template: str | None = None
    prompt_variant: str | None = None
    sampling: str | None = None

    def __post_init__(self) -> None:
        if self.template is not None and PLACEHOLDER not in self.template:
            raise ValueError(f"prompt template {self.template!r} has no {PLACEHOLDER}")
        if not isinstance(self.key, str):
            raise ValueError("variant key must be a string")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TrialVariant:
        allowed = {"key", "template", "prompt_variant", "sampling"}
        unknown = set(data) - allowed
        if unknown:
            raise ValueError(f"variant: unknown keys {sorted(unknown)}; expected {sorted(allowed)}")
        return cls(**{k: data[k] for k in allowed if k in data})

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "template": self.template,
            "prompt_variant": self.prompt_variant,
            "sampling": self.sampling,
        }

    @property
    def neutral(self) -> bool:
        return not self.key

    def render(self, question: str) -> str:
        """The question the agent gets: the template with every ``{question}`` replaced by
        ``question`` (``str.replace``, not ``str.format``: braces elsewhere stay literal)."""
        if self.template is None:
            return question
        return self.template.replace(PLACEHOLDER, question)

    def columns(self) -> dict[str, str | None]:
        """The trial row's :data:`VARIANT_COLUMNS`."""
        return {"prompt_variant": self.prompt_variant, "sampling": self.sampling}

    def header(self) -> dict[str, Any]:
        """What the shard's journal header records of the variant: its identity (the key
        and the template; the sampling values are in the agent spec's env). Empty for the
        neutral variant, whose header is a run's without variants; never the labels, so a
        renamed level resumes its journal."""
        if self.neutral:
            return {}
        return {"variant": {"key": self.key, "template": self.template}}


def trial_variant(value: TrialVariant | Mapping[str, Any] | None) -> TrialVariant | None:
    """``value`` as a :class:`TrialVariant` (None stays None: a run without variants)."""
    if value is None or isinstance(value, TrialVariant):
        return value
    return TrialVariant.from_dict(value)
