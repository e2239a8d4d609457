"""One round of the adaptive evaluation: every unit's decision and the next round's design.

The checkpoint ``sequential_round`` (``rules/sequential.smk``) reads the round's score shards
and the previous round's record, calls :func:`decide_round` and writes
:meth:`RoundResult.to_record` as ``results/sequential/round-NNN.json``. The loop is here,
not in the script, so it is tested without Snakemake.

A unit stopped in an earlier round keeps its record: its groups run no new trials, so its
data has not changed. Every other unit is decided anew (:func:`~evalnoise.pipeline.
sequential.decide_unit`), and a unit that goes on adds the rectangles
:func:`~evalnoise.pipeline.sequential.next_rects` plans to every group of the unit.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import pandas as pd

from evalnoise.pipeline.sequential import (
    GroupTrials,
    Rect,
    SequentialSettings,
    decide_unit,
    next_rects,
    task_count,
    units,
)
from evalnoise.pipeline.shard_plan import group_label

__all__ = ["RoundResult", "decide_round", "group_trials"]


@dataclass(frozen=True)
class RoundResult:
    """What round ``round`` decided (the checkpoint's record, typed)."""

    round: int
    settings: SequentialSettings
    #: the design the round ran: {group label: its rectangles}
    design: Mapping[str, Sequence[Rect]]
    #: the design after it: the round's rectangles and what the next round adds
    next_design: Mapping[str, Sequence[Rect]]
    #: one record per unit (:func:`~evalnoise.pipeline.sequential.decide_unit`'s, with
    #: ``next``: the rectangles the unit adds, as lists)
    units: Sequence[Mapping[str, Any]]

    @property
    def done(self) -> bool:
        """Whether every unit has stopped: no round follows."""
        return all(unit["stopped"] for unit in self.units)

    def to_record(self) -> dict[str, Any]:
        """The JSON-ready record the later rounds, the summary and the wiring read."""

        def lists(design: Mapping[str, Sequence[Rect]]) -> dict[str, list[list[int]]]:
            return {group: [rect.to_list() for rect in rects] for group, rects in design.items()}

        return {
            "round": self.round,
            "done": self.done,
            "target": self.settings.target,
            "goal": self.settings.goal,
            "settings": asdict(self.settings),
            "design": lists(self.design),
            "next_design": lists(self.next_design),
            "tasks": {group: task_count(rects) for group, rects in self.next_design.items()},
            "units": [dict(unit) for unit in self.units],
        }


def decide_round(
    settings: SequentialSettings,
    round_: int,
    design: Mapping[str, Sequence[Rect]],
    groups: Iterable[tuple[str, str]],
    previous: Mapping[str, Mapping[str, Any]],
    task_ids: Iterable[Any],
    trials_of: Callable[[str, str], GroupTrials],
) -> RoundResult:
    """Decide round ``round_`` of every unit of ``groups``.

    ``design``: the rectangles run so far per group label; ``previous``: the previous
    round's unit records by unit label (empty for round 0); ``task_ids``: the tasks table's
    ids in row order (a trial's task row is its index here); ``trials_of(agent, resource
    profile)``: that group's trials (:func:`group_trials`), asked for the units still
    deciding only.
    """
    task_rows = {str(task): row for row, task in enumerate(task_ids)}
    records: list[dict[str, Any]] = []
    next_design = {group: list(rects) for group, rects in design.items()}
    for unit in units(settings, groups):
        before = previous.get(unit.label)
        if before is not None and before["stopped"]:
            records.append(dict(before))
            continue
        record = decide_unit(
            unit,
            [trials_of(agent, profile) for agent, profile in unit.groups],
            design,
            task_rows,
            settings,
            round_,
        )
        added: list[Rect] = []
        if record["decision"] is not None:
            first = group_label(*unit.groups[0])
            added = next_rects(record["decision"], settings.target, design[first], round_ + 1)
        for agent, profile in unit.groups:
            next_design[group_label(agent, profile)] += added
        record["next"] = [rect.to_list() for rect in added]
        records.append(record)
    return RoundResult(round_, settings, dict(design), next_design, records)


def group_trials(
    scores: pd.DataFrame,
    levels: Mapping[str, Any],
    agent: str,
    resource_profile: str,
    infra_policy: Mapping[str, Any],
) -> GroupTrials:
    """One group's trials as a decision reads them, from score shards already read
    (:func:`evalnoise.pipeline.collect.group_data`, the infra policy applied)."""
    from evalnoise.pipeline.collect import group_data

    data = group_data(scores, levels, agent, resource_profile, infra_policy)
    return GroupTrials(
        label=data.group,
        frame=data.frame,
        attempts=len(data.attempts),
        tasks_attempted=int(data.attempts["task_id"].nunique()),
        statuses=data.counts["statuses"],
    )
