"""Adaptive evaluation in the pipeline: rounds of trials, each decided by a checkpoint.

With ``sequential.enabled`` the pipeline does not run the fixed design (``trials.count``
trials × every task) at once. It runs a first round (``first_round``: a few tasks, two or
more trials each) for every agent × resource profile, then the checkpoint
``sequential_round`` (rules/sequential.smk) reads the scores so far and decides, per *unit*
— a group, or for the ``difference`` target a pair of groups — whether to stop or what the
next round holds (:func:`evalnoise.stats.stopping_decision`):

- **more tasks**: the next rows of the tasks table (its order is seeded and stratified by
  level, evalnoise.pipeline.sampling, so a prefix is a stratified sample drawn before any
  trial ran) with ``next_trials_per_task`` trials each;
- **more trials** (icc target): every task topped up to ``next_trials_per_task`` trials;
  for the accuracy and difference targets "more trials" means the *new* tasks get more
  trials each (trials added to tasks already in an anytime-valid sequence cannot narrow it).

A round's trials form rectangles of (task rows × trial indices) — :class:`Rect` — which are
cut into shards exactly like the fixed design's (trial blocks × task chunks, the same file
names and journals), so a shard of round 2 is an ordinary ``run_trials`` job, and a rerun
resumes its journal. Rectangles of different rounds never overlap, so no trial is run twice.
The stopping rule is anytime-valid (the betting confidence sequence of Waudby-Smith &
Ramdas 2024, Theorem 3): the interval reported at the data-dependent stop still covers with
the stated confidence, however many rounds were checked.

The round record (``results/sequential/round-NNN.json``) holds the design each group ran,
every unit's decision (its status and the numbers behind it), and the design of the next
round; the last record (every unit stopped) gives the shards the statistics read. The
decisions' words (:mod:`evalnoise.stopping_text`) are written by ``sequential_summary``
into ``summary.json`` and ``rounds.csv``, not by the checkpoint: a rewording reruns no
decision.

Everything here is pure (no file I/O): the rule scripts read and write the records.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from evalnoise.pipeline.shard_plan import format_range, group_label

if TYPE_CHECKING:
    import pandas as pd

    from evalnoise.stats.stopping import StoppingRule

__all__ = [
    "DECISION_FIELDS",
    "ROUND_COLUMNS",
    "GroupTrials",
    "Rect",
    "SequentialSettings",
    "Unit",
    "decide_unit",
    "entry_rounds",
    "first_design",
    "next_rects",
    "round_rows",
    "shard_ranges",
    "stopping_rule",
    "summary_record",
    "task_count",
    "trial_counts",
    "units",
]


@dataclass(frozen=True)
class Rect:
    """Trials ``first_trial … last_trial`` on task rows ``first_row … last_row`` (inclusive),
    added in round ``round``."""

    round: int
    first_row: int
    last_row: int
    first_trial: int
    last_trial: int

    def __post_init__(self) -> None:
        if not (0 <= self.first_row <= self.last_row and 0 <= self.first_trial <= self.last_trial):
            raise ValueError(f"empty or negative rectangle: {self}")

    def to_list(self) -> list[int]:
        return [self.round, self.first_row, self.last_row, self.first_trial, self.last_trial]

    @classmethod
    def from_list(cls, values: Sequence[int]) -> Rect:
        return cls(*(int(v) for v in values))

    @property
    def n_trials(self) -> int:
        return (self.last_row - self.first_row + 1) * (self.last_trial - self.first_trial + 1)


@dataclass(frozen=True)
class SequentialSettings:
    """The ``sequential`` config block with its defaults resolved against the run."""

    target: str
    goal: float
    compare: tuple[str, str] | None
    first_tasks: int
    first_trials: int
    max_trials_per_task: int
    max_tasks: int
    budget: float | None
    cost_per_task: float
    cost_per_trial: float
    max_rounds: int
    confidence: float

    @classmethod
    def from_config(cls, config: Mapping[str, Any], n_tasks: int) -> SequentialSettings | None:
        """None when sequential mode is off. ``n_tasks``: rows of the tasks table (the pool).
        ``config`` is the validated config, every default filled in by its schema."""
        seq = config["sequential"]
        if not seq["enabled"]:
            return None
        target = seq["target"]
        goal = seq["se"] if target == "icc" else seq["half_width"]
        first = seq["first_round"]
        max_tasks = int(seq["max_tasks"] or n_tasks)
        if max_tasks > n_tasks:
            raise ValueError(
                f"config key sequential.max_tasks: {max_tasks} tasks, but the tasks table "
                f"holds {n_tasks}"
            )
        first_tasks = int(first["tasks"])
        if first_tasks > max_tasks:
            raise ValueError(
                f"config key sequential.first_round.tasks: {first_tasks} tasks, but at most "
                f"{max_tasks} can run"
            )
        compare = seq["compare"]
        return cls(
            target=target,
            goal=float(goal),
            compare=tuple(compare) if compare else None,
            first_tasks=first_tasks,
            first_trials=int(first["trials"]),
            max_trials_per_task=int(seq["max_trials_per_task"] or config["trials"]["count"]),
            max_tasks=max_tasks,
            budget=None if seq["budget"] is None else float(seq["budget"]),
            cost_per_task=float(seq["cost_per_task"]),
            cost_per_trial=float(seq["cost_per_trial"]),
            max_rounds=int(seq["max_rounds"]),
            confidence=float(config["analysis"]["confidence"]),
        )

    def budget_of(self, n_agents: int) -> float:
        """The unit's budget: as configured, else the fixed design's cost
        n_agents · max_tasks · (c_task + max_trials_per_task · c_trial)."""
        if self.budget is not None:
            return self.budget
        per_task = self.cost_per_task + self.max_trials_per_task * self.cost_per_trial
        return n_agents * self.max_tasks * per_task


def stopping_rule(settings: SequentialSettings, n_agents: int) -> StoppingRule:
    """The stopping rule of a unit of ``n_agents`` agents (its budget:
    :meth:`SequentialSettings.budget_of`); the goal is the SE of the ICC for the icc target,
    else the half-width. A function, not a method of the settings: the settings are read
    while the DAG is built, which must not import the statistics."""
    from evalnoise.stats.stopping import StoppingRule

    icc = settings.target == "icc"
    return StoppingRule(
        target=settings.target,
        half_width=None if icc else settings.goal,
        se=settings.goal if icc else None,
        budget=settings.budget_of(n_agents),
        cost_per_task=settings.cost_per_task,
        cost_per_trial=settings.cost_per_trial,
        max_trials_per_task=settings.max_trials_per_task,
        max_tasks=settings.max_tasks,
        confidence=settings.confidence,
    )


@dataclass(frozen=True)
class Unit:
    """What one decision is about: one group, or (difference) the compared pair of groups.
    ``decides`` is False for a group outside the compared pair: it runs the first round only."""

    label: str
    groups: tuple[tuple[str, str], ...]
    decides: bool = True


def units(settings: SequentialSettings, groups: Iterable[tuple[str, str]]) -> list[Unit]:
    """The units of a run: every group, or for the difference target the compared pair within
    each resource profile both agents run under (other groups run the first round only)."""
    groups = list(groups)
    if settings.target != "difference":
        return [Unit(group_label(a, r), ((a, r),)) for a, r in groups]
    a, b = settings.compare or ("", "")
    have = set(groups)
    out = []
    paired: set[tuple[str, str]] = set()
    for profile in dict.fromkeys(r for _, r in groups):
        if (a, profile) in have and (b, profile) in have:
            out.append(Unit(f"{a} - {b}@{profile}", ((a, profile), (b, profile))))
            paired |= {(a, profile), (b, profile)}
    out += [
        Unit(group_label(g, r), ((g, r),), decides=False) for g, r in groups if (g, r) not in paired
    ]
    return out


def first_design(
    settings: SequentialSettings, groups: Iterable[tuple[str, str]]
) -> dict[str, list[Rect]]:
    """Round 0 of every group: rows 0 … first_tasks − 1 × trials 0 … first_trials − 1."""
    rect = Rect(0, 0, settings.first_tasks - 1, 0, settings.first_trials - 1)
    return {group_label(a, r): [rect] for a, r in groups}


def shard_ranges(rects: Iterable[Rect], block_size: int, chunk_size: int) -> list[tuple[str, str]]:
    """The (trial block, task chunk) labels of the shards covering ``rects``: each rectangle
    cut into blocks of ``block_size`` trials and chunks of ``chunk_size`` rows from its own
    corner. Rectangles do not overlap, so neither do the shards (nor their journals, which
    are keyed by a shard's first trial and first row)."""
    out: list[tuple[str, str]] = []
    for r in rects:
        for t0 in range(r.first_trial, r.last_trial + 1, block_size):
            block = format_range(t0, min(t0 + block_size - 1, r.last_trial))
            for c0 in range(r.first_row, r.last_row + 1, chunk_size):
                out.append((block, format_range(c0, min(c0 + chunk_size - 1, r.last_row))))
    return out


def task_count(rects: Iterable[Rect]) -> int:
    """Task rows in the design (a prefix of the tasks table): 1 + the last row."""
    return 1 + max((r.last_row for r in rects), default=-1)


def trial_counts(rects: Sequence[Rect], n_rows: int) -> np.ndarray:
    """Trials per task row under the design (rectangles of one row never overlap)."""
    counts = np.zeros(n_rows, dtype=np.int64)
    for r in rects:
        counts[r.first_row : r.last_row + 1] += r.last_trial - r.first_trial + 1
    return counts


def entry_rounds(rows: Any, trials: Any, rects: Sequence[Rect]) -> np.ndarray:
    """The round in which each (task row, trial) was added; −1 where no rectangle holds it."""
    rows = np.asarray(rows, dtype=np.int64)
    trials = np.asarray(trials, dtype=np.int64)
    out = np.full(rows.shape, -1, dtype=np.int64)
    for r in rects:
        inside = (
            (rows >= r.first_row)
            & (rows <= r.last_row)
            & (trials >= r.first_trial)
            & (trials <= r.last_trial)
        )
        out[inside] = r.round
    return out


def next_rects(
    decision: Mapping[str, Any], target: str, rects: Sequence[Rect], round_: int
) -> list[Rect]:
    """The rectangles round ``round_`` adds after ``decision`` (a :class:`StoppingDecision`
    as a mapping): none when it stops; the icc target's "more trials" tops every task up to
    ``next_trials_per_task`` trials; otherwise ``next_new_tasks`` new rows with
    ``next_trials_per_task`` trials each."""
    if decision["stop"]:
        return []
    n_rows = task_count(rects)
    want = int(decision["next_trials_per_task"])
    if target == "icc" and decision["action"] == "more_trials":
        counts = trial_counts(rects, n_rows)
        out = []
        start = 0
        for row in range(1, n_rows + 1):
            if row == n_rows or counts[row] != counts[start]:
                have = int(counts[start])
                if have < want:
                    out.append(Rect(round_, start, row - 1, have, want - 1))
                start = row
        return out
    new = int(decision["next_new_tasks"])
    if new < 1 or want < 1:
        return []
    return [Rect(round_, n_rows, n_rows + new - 1, 0, want - 1)]


@dataclass(frozen=True)
class GroupTrials:
    """One group's trials as the decision reads them (from evalnoise.pipeline.collect)."""

    label: str
    #: the trials that count: ``task``, ``trial``, ``score`` (infra policy applied)
    frame: pd.DataFrame
    #: every attempt made (failed and retried ones too): what was paid for
    attempts: int
    #: tasks with at least one attempt
    tasks_attempted: int
    #: outcome counts, for a message when nothing counted
    statuses: Mapping[str, int]


def decide_unit(
    unit: Unit,
    trials: Sequence[GroupTrials],
    design: Mapping[str, Sequence[Rect]],
    task_rows: Mapping[str, int],
    settings: SequentialSettings,
    round_: int,
) -> dict[str, Any]:
    """One unit's decision after round ``round_``, as a JSON-ready record.

    Each counted trial carries the round that added it; the confidence sequence's unit is a
    task with the trials of the round it entered in (evalnoise.stats.accuracy_sequences), and
    trials topped up later count for the variance components only. The money
    spent is c_task · (tasks attempted) + c_trial · (attempts), failed attempts included.
    The decision is :func:`evalnoise.stats.stopping_decision`'s, with one more stop: the round
    limit (``max_rounds``, status ``round_limit``; ``would_have_been`` keeps what the
    decision planned). A unit whose group counted no trial at all stops with status
    ``no_data`` (with the group, its attempts and outcome counts) — a failure is never
    planned on as if it were a score. The record holds statuses and numbers; its words are
    :func:`evalnoise.stopping_text.unit_reason`'s, written by the summary.
    """
    from evalnoise.stats.stopping import AgentTrials, stopping_decision

    labels = [group_label(a, r) for a, r in unit.groups]
    record: dict[str, Any] = {"unit": unit.label, "groups": labels, "round": round_}
    if not unit.decides:
        return record | _stopped("not_compared")
    empty = [g for g in trials if g.frame.empty]
    if empty:
        g = empty[0]
        return record | _stopped(
            "no_data", group=g.label, attempts=g.attempts, outcomes=dict(g.statuses)
        )
    agent_trials = []
    for g in trials:
        rows = g.frame["task"].map(task_rows)
        if rows.isna().any():
            missing = g.frame.loc[rows.isna(), "task"].iloc[0]
            raise ValueError(f"{g.label}: task {missing!r} is not in the tasks table")
        rows = rows.to_numpy(dtype=np.int64)
        trial = g.frame["trial"].to_numpy(dtype=np.int64)
        where = entry_rounds(rows, trial, design[g.label])
        if (where < 0).any():
            i = int(np.flatnonzero(where < 0)[0])
            raise ValueError(
                f"{g.label}: trial {trial[i]} of task row {rows[i]} is outside the design "
                "of the rounds so far"
            )
        # units enter in sampling order within a round (never in an order set by the scores)
        order = np.lexsort((trial, rows))
        score = g.frame["score"].to_numpy(dtype=float)[order]
        agent_trials.append(AgentTrials(score, g.frame["task"].to_numpy()[order], where[order]))
    spent = sum(
        settings.cost_per_task * g.tasks_attempted + settings.cost_per_trial * g.attempts
        for g in trials
    )
    trials_b = agent_trials[1] if settings.target == "difference" else None
    try:
        decision = stopping_decision(
            agent_trials[0], stopping_rule(settings, len(trials)), spent=spent, trials_b=trials_b
        )
    except ValueError as error:
        raise ValueError(f"{unit.label}, round {round_}: {error}") from None
    fields = decision.to_dict()  # NaN → None, tuples → lists: as written
    if not decision.stop and round_ + 1 >= settings.max_rounds:
        planned = ("action", "next_new_tasks", "next_trials_per_task", "next_round_cost")
        fields |= {
            "stop": True,
            "status": "round_limit",
            "action": "stop",
            "max_rounds": settings.max_rounds,
            # what the decision would have run: its words are the round limit's reason
            "would_have_been": {k: fields[k] for k in planned},
            "next_new_tasks": 0,
            "next_trials_per_task": 0,
            "next_round_cost": 0.0,
        }
    return record | {
        "stopped": bool(fields["stop"]),
        "status": fields["status"],
        "decision": fields,
    }


def _stopped(status: str, **numbers: Any) -> dict[str, Any]:
    """A stop of the pipeline's own (``not_compared``, ``no_data``), with the numbers its
    words (:func:`evalnoise.stopping_text.unit_reason`) need."""
    return {"stopped": True, "status": status, "decision": None, **numbers}


#: The decision's numbers that rounds.csv and summary.json carry (StoppingDecision fields).
DECISION_FIELDS = (
    "target",
    "goal",
    "achieved",
    "estimate",
    "ci_low",
    "ci_high",
    "n_tasks",
    "n_trials",
    "spent",
)
#: rounds.csv: one row per unit per round it was decided in
ROUND_COLUMNS = (
    "round",
    "unit",
    "groups",
    "status",
    "action",
    *DECISION_FIELDS,
    "next_new_tasks",
    "next_trials_per_task",
)


def round_rows(
    records: Iterable[Mapping[str, Any]],
    reason: Callable[[Mapping[str, Any]], str] | None = None,
) -> pd.DataFrame:
    """The round records as one table (ROUND_COLUMNS): each unit's decision in each round it
    was decided in (a stopped unit's decision is carried, not repeated); with ``reason``
    (a unit record's words, :func:`evalnoise.stopping_text.unit_reason`) a last column
    ``reason``."""
    import pandas as pd  # the checkpoint's, not the DAG build's (settings only need numpy)

    rows = []
    for rec in records:
        for u in rec["units"]:
            if u["round"] != rec["round"]:
                continue
            d = u.get("decision") or {}
            rows.append(
                {
                    "round": rec["round"],
                    "unit": u["unit"],
                    "groups": " ".join(u["groups"]),
                    "status": u["status"],
                    "action": d.get("action", "stop"),
                    **{k: d.get(k) for k in DECISION_FIELDS},
                    "next_new_tasks": d.get("next_new_tasks", 0),
                    "next_trials_per_task": d.get("next_trials_per_task", 0),
                    **({} if reason is None else {"reason": reason(u)}),
                }
            )
    return pd.DataFrame(rows, columns=[*ROUND_COLUMNS, *([] if reason is None else ["reason"])])


def summary_record(
    records: Sequence[Mapping[str, Any]],
    reason: Callable[[Mapping[str, Any]], str] | None = None,
) -> dict[str, Any]:
    """What the report says about an adaptive run: per unit, how and after which round it
    stopped, its final precision, and the trials its groups ran against the fixed design
    (``max_tasks × max_trials_per_task`` per group); with ``reason`` (a unit record's words,
    :func:`evalnoise.stopping_text.unit_reason`) each unit's ``reason``.

    ``records`` are the round records in order; the last one has every unit stopped.
    """
    if not records:
        raise ValueError("no round records")
    last = records[-1]
    if not last["done"]:
        raise ValueError(f"round {last['round']} is not the last: some units continue")
    settings = last.get("settings") or {}
    fixed = settings.get("max_tasks", 0) * settings.get("max_trials_per_task", 0)
    groups = {}
    for label, rects in last["design"].items():
        rects = [Rect.from_list(r) for r in rects]
        planned = sum(r.n_trials for r in rects)
        groups[label] = {
            "rounds": 1 + max(r.round for r in rects),
            "tasks": task_count(rects),
            "trials": planned,
            "fixed_design_trials": fixed,
            "saved": (1 - planned / fixed) if fixed else None,
        }
    out_units = []
    for u in last["units"]:
        d = u.get("decision") or {}
        out_units.append(
            {
                "unit": u["unit"],
                "groups": u["groups"],
                "round": u["round"],
                "status": u["status"],
                **({} if reason is None else {"reason": reason(u)}),
                **{k: d.get(k) for k in (*DECISION_FIELDS, "remaining", "icc")},
                "warnings": list(d.get("warnings") or []),
            }
        )
    return {
        "enabled": True,
        "target": last["target"],
        "goal": last["goal"],
        "rounds": len(records),
        "settings": settings,
        "units": out_units,
        "groups": groups,
    }
