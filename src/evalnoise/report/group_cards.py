"""One Evaluation Card per group of the report's inputs, with the name of its files.

:func:`group_cards` joins what the inputs say about each agent × resource profile — its
statistics record, its per-level records, its per-task trial counts, its infra row, whether
its ICC converged, the machine and its attribution entry — into
:func:`evalnoise.report.cards.evaluation_card`, in a stable order (agent, then profile).
Two records of one group, or a per-level record of no group, are an error: the report would
otherwise show one of them in silence.

:func:`group_names` is what every section calls the groups (the card's title; an invalid
group's chart label marked "not a measurement"), under the statistics' group names and
under the attribution stage's ``agent@profile`` labels; :func:`infra_validity` gives the
infra table each group's health when the table has none.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from evalnoise.attribution.all_analyses import group_label
from evalnoise.report.attribution_section import card_attribution
from evalnoise.report.card_text import card_title
from evalnoise.report.cards import card_key, evaluation_card
from evalnoise.report.health import NOT_A_MEASUREMENT_SUFFIX, health_of, machine_of
from evalnoise.report.inputs import ReportInputs

__all__ = [
    "GroupCard",
    "GroupNames",
    "card_stems",
    "group_cards",
    "group_names",
    "infra_validity",
]

#: A card's key: (agent, resource profile or None), as :func:`~.cards.card_key` names it.
CardKey = tuple[str, str | None]


@dataclass(frozen=True)
class GroupCard:
    """A group's card: its key, the statistics record it was built from, the stem of its
    files (``cards/<stem>.md``, ``.json``; the anchor ``#card-<stem>``) and the card."""

    key: CardKey
    record: Mapping[str, Any]
    stem: str
    card: dict[str, Any]

    @property
    def group(self) -> str:
        """The group's name in the statistics tables (the record's ``group``)."""
        return str(self.record["group"])


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.") or "x"


def card_stems(keys: Sequence[CardKey]) -> dict[CardKey, str]:
    """File stem per card (``agent__profile``, slugged); distinct names that slug alike get a
    short hash suffix (the first 8 hex digits of SHA-256 of ``agent \\0 profile``)."""
    base = {k: _slug(k[0]) + (f"__{_slug(k[1])}" if k[1] else "") for k in keys}
    seen: dict[str, int] = {}
    for stem in base.values():
        seen[stem] = seen.get(stem, 0) + 1
    out = {}
    for k, stem in base.items():
        if seen[stem] > 1:
            digest = hashlib.sha256(f"{k[0]}\0{k[1] or ''}".encode()).hexdigest()[:8]
            stem = f"{stem}-{digest}"
        out[k] = stem
    return out


def group_cards(inputs: ReportInputs) -> list[GroupCard]:
    """Every group's card, sorted by (agent, resource profile)."""
    context = inputs.card_context
    by_key: dict[CardKey, Mapping[str, Any]] = {}
    for rec in inputs.groups:
        key = card_key(rec, context)
        if key in by_key:
            raise ValueError(f"two group records for agent {key[0]!r}, profile {key[1]!r}")
        by_key[key] = rec
    level_recs: dict[CardKey, list[Mapping[str, Any]]] = {}
    for rec in inputs.levels:
        key = card_key(rec, context)
        if key not in by_key:
            raise ValueError(f"per-level record for unknown agent/profile {key}")
        level_recs.setdefault(key, []).append(rec)
    infra_rows: dict[CardKey, Mapping[str, Any]] = {}
    if inputs.infra is not None:
        for row in inputs.infra.to_dict(orient="records"):
            infra_rows[(str(row["agent"]), str(row["resource_profile"]))] = row
    keys = sorted(by_key, key=lambda k: (k[0], k[1] or ""))
    stems = card_stems(keys)
    machine = machine_of(inputs.manifest)
    per_task = inputs.per_task
    out = []
    for key in keys:
        rec = by_key[key]
        group = str(rec["group"])
        counts: list[int] = []
        if per_task is not None:
            counts = per_task.loc[per_task["group"].astype(str) == group, "n"].astype(int).tolist()
        card = evaluation_card(
            rec,
            context,
            levels=level_recs.get(key, ()),
            trials_per_task=counts,
            infra=infra_rows.get(key),
            converged=_converged(inputs.convergence, group),
            machine=machine,
            attribution=card_attribution(inputs.attribution, group, key),
        )
        out.append(GroupCard(key, rec, stems[key], card))
    return out


@dataclass(frozen=True)
class GroupNames:
    """What the sections call the groups.

    ``groups``: every group name, in card order; ``titles``: group → its card's title
    ("agent @ profile"); ``invalid``: the groups that are not a measurement of the agent;
    ``labels``: invalid group → its chart label; ``attribution_titles`` and
    ``attribution_invalid``: the same under the attribution stage's labels too (it names a
    group ``agent@profile``, the records may name it otherwise)."""

    groups: tuple[str, ...]
    titles: Mapping[str, str]
    invalid: frozenset[str]
    labels: Mapping[str, str]
    attribution_titles: Mapping[str, str]
    attribution_invalid: frozenset[str]


def group_names(cards: Sequence[GroupCard]) -> GroupNames:
    """The :class:`GroupNames` of ``cards`` (from :func:`group_cards`)."""
    titles = {c.group: card_title(c.card) for c in cards}
    invalid = {c.group for c in cards if health_of(c.record)["valid"] is False}
    att_titles = dict(titles)
    att_invalid = set(invalid)
    for c in cards:
        label = group_label(c.key[0], c.key[1])
        att_titles.setdefault(label, card_title(c.card))
        if c.group in invalid:
            att_invalid.add(label)
    return GroupNames(
        groups=tuple(c.group for c in cards),
        titles=titles,
        invalid=frozenset(invalid),
        labels={g: g + NOT_A_MEASUREMENT_SUFFIX for g in invalid},
        attribution_titles=att_titles,
        attribution_invalid=frozenset(att_invalid),
    )


def infra_validity(infra: pd.DataFrame | None, cards: Sequence[GroupCard]) -> pd.DataFrame | None:
    """``infra`` with a ``valid`` column (each row's group health: True, False or None) when
    it has none and some group's health is known; else ``infra`` as it is."""
    if infra is None or "valid" in infra.columns:
        return infra
    known = {c.key: health_of(c.record)["valid"] for c in cards}
    if all(v is None for v in known.values()):
        return infra
    return infra.assign(
        valid=[
            known.get((str(a), str(p)))
            for a, p in zip(infra["agent"], infra["resource_profile"], strict=True)
        ]
    )


def _converged(convergence: pd.DataFrame | None, group: str) -> bool | None:
    """Whether the group's mean ICC settled (``converged_at`` set); None when the table has
    no ``converged_at``, no rows for the group, or no finite ICC for it (undefined)."""
    if convergence is None or "converged_at" not in convergence.columns:
        return None
    part = convergence.loc[convergence["group"].astype(str) == group]
    if not len(part):
        return None
    if (
        "icc_mean" in part.columns
        and not pd.to_numeric(part["icc_mean"], errors="coerce").notna().any()
    ):
        return None
    return bool(pd.notna(part["converged_at"].iloc[0]))
