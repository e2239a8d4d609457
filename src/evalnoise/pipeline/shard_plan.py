"""The shard plan: which trials go in which ``run_trials`` job (shard), and the groups and
pairs an evaluation consists of.

Not to be confused with ``evalnoise plan`` (:mod:`evalnoise.cli.plan`), which sizes a study:
how many tasks and trials it needs.

A *shard* is agent × resource profile × variant × trial block × task chunk. Blocks and
chunks are named by the inclusive index range they cover (``0000-0003``), so a shard's file
never depends on the total trial or task count: raising ``trials.count`` from 8 to 16 (blocks of
4) adds the blocks ``0008-0011`` and ``0012-0015`` and leaves ``0000-0003`` and
``0004-0007`` as they were.

A *variant* is a combination of prompt and sampling levels
(:mod:`evalnoise.pipeline.variants`); its shards' files carry its key
(``c0000-0005.v<key>.parquet``), the neutral variant's — the only one of a run without
variants — none, so those files are a run's without variants. Adding a level adds its
shards only.

A shard's journal (:func:`journal_path`) is keyed by the *first* trial and the *first* task
row of the shard only (and its variant). A block or chunk that grows (a partial last block
when the count is not a multiple of the block size; a last chunk when tasks are added) gets
a new file name but the same journal, so the trials it already ran are resumed from the
journal, not run again.

**Shard size.** By default a shard holds ``trials.block_size`` trial indices ×
``task_chunk_size`` tasks. A shard's job costs a fixed start (a Python interpreter, imports,
the journal, the Parquet write) and a score job beside it, so shards of
trials that take milliseconds are mostly start. With ``shards.target_seconds`` set,
:func:`chunk_size` widens the task chunks so a shard holds about that many seconds of trials
(at ``shards.trial_seconds`` each). The chunk size is a function of those constants only,
never of the trial or task *count*, so growth stays exact under it as well; changing the
option itself re-cuts the chunks, and trials of a shard whose first row moved run again.

A *group* is agent × resource profile (one analysis each). Pairs compare every two agents
within a resource profile, and every two resource profiles within an agent (the
infrastructure experiment).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import Any

from evalnoise.column_names import ENVIRONMENT_TASK_COLUMNS, group_label

__all__ = [
    "NAME_PATTERN",
    "RANGE_PATTERN",
    "Shard",
    "ShardPlan",
    "chunk_size",
    "format_range",
    "group_label",
    "journal_path",
    "parse_range",
    "plain_rows_digest",
    "ranges",
    "slug",
    "task_rows_digest",
]

#: Agent and resource profile names as wildcards (the config schema also caps the length).
#: No braces: Snakemake embeds constraints in its output patterns.
NAME_PATTERN = r"[A-Za-z0-9][A-Za-z0-9_-]*"
#: A block or chunk label: inclusive 0-based index range, at least 4 digits each.
RANGE_PATTERN = r"[0-9][0-9][0-9][0-9]+-[0-9][0-9][0-9][0-9]+"
_RANGE = re.compile(r"^(\d{4,})-(\d{4,})$")


def format_range(first: int, last: int) -> str:
    return f"{first:04d}-{last:04d}"


def parse_range(label: str) -> tuple[int, int]:
    """``"0004-0007"`` → ``(4, 7)``."""
    match = _RANGE.match(label)
    if not match:
        raise ValueError(f"not an index range: {label!r} (expected e.g. 0004-0007)")
    first, last = int(match.group(1)), int(match.group(2))
    if last < first:
        raise ValueError(f"empty index range {label!r}")
    return first, last


def ranges(total: int, size: int) -> list[tuple[int, int]]:
    """``[0, total)`` cut into consecutive inclusive ranges of ``size`` (the last may be short)."""
    if size < 1:
        raise ValueError("size must be >= 1")
    return [(start, min(start + size, total) - 1) for start in range(0, total, size)]


def slug(name: str) -> str:
    """A wildcard- and file-safe form of a name from an imported table (``a/b.c`` → ``a-b-c``)."""
    text = re.sub(r"[^A-Za-z0-9_-]+", "-", str(name)).strip("-_")
    return text or "x"


def _slugs(names: Iterable[str]) -> dict[str, str]:
    """slug → name; names whose slugs collide get a short hash suffix."""
    import hashlib

    names = sorted(set(names))
    base = {n: slug(n) for n in names}
    seen = [b for b in base.values()]
    out = {}
    for name, text in base.items():
        if seen.count(text) > 1 or not re.match(f"^{NAME_PATTERN}$", text):
            text = f"{text}-{hashlib.sha256(name.encode()).hexdigest()[:6]}"
        out[text] = name
    return out


def chunk_size(config: Mapping[str, Any]) -> int:
    """Tasks per shard: ``task_chunk_size``, or more when ``shards.target_seconds`` asks for
    shards that last longer.

    With ``shards.target_seconds`` = S and ``shards.trial_seconds`` = d (the expected
    duration of one trial), a shard should hold about S / d trials; its block holds
    ``trials.block_size`` trial indices, so it gets ``ceil(S / (d × block_size))`` tasks, and
    never fewer than ``task_chunk_size``. ``trials.count`` and the number of tasks play no
    part: raising either adds shards and leaves the existing ones (and their journals) as
    they were. Unset (the default), the plan is exactly the one without the option.
    """
    base = int(config["task_chunk_size"])
    shards = config.get("shards") or {}
    target = shards.get("target_seconds")
    if target is None:
        return base
    per_trial = float(shards.get("trial_seconds") or 1.0)
    if target <= 0 or per_trial <= 0:
        raise ValueError("shards.target_seconds and shards.trial_seconds must be > 0")
    block = int(config["trials"]["block_size"])
    # a small tolerance: 60 s / 0.02 s per trial is 3000 trials, not 3000.0000000000005
    wanted = math.ceil(float(target) / (per_trial * block) - 1e-9)
    return max(base, wanted)


def task_rows_digest(tasks: Any, chunk: str) -> str:
    """SHA-256 (16 hex) of the task rows a chunk covers, every column: what a shard's trials
    and scores depend on in the tasks table.

    The ``run_trials`` and ``score`` rules take the tasks table as ``ancient`` and this as a
    param: adding a task rewrites ``results/tasks.parquet``, and as a plain input that made
    *every* shard's job rerun — the trials were resumed from the journals, but every trial
    shard was rewritten, rescored and every statistic recomputed. With the digest, exactly
    the shards whose rows changed (a grown last chunk, a changed task spec) rerun.

    Snakemake asks once per ``run_trials`` and ``score`` job while it builds the DAG, and
    every agent × resource profile shares the chunks. The digest is a function of the rows'
    JSON alone, so it is kept per SHA-256 of that JSON (:func:`_rows_json_digest`): rows
    seen before skip the re-encoding, most of the cost.
    """
    import hashlib

    first, last = parse_range(chunk)
    rows = tasks.iloc[first : last + 1]
    # question tasks leave the environment tasks' columns null: without them, their digest
    # (and so every finished shard) stays what it was before environment tasks existed
    unused = [c for c in ENVIRONMENT_TASK_COLUMNS if c in rows and rows[c].isna().all()]
    raw = rows.drop(columns=unused).to_json(orient="records", date_format="iso")
    return _rows_json_digest(hashlib.sha256(raw.encode()).digest(), raw)


def plain_rows_digest(rows: Sequence[Mapping[str, Any]], chunk: str) -> str | None:
    """:func:`task_rows_digest` of the same table given as plain rows (dicts of str, int,
    float and None, as :func:`evalnoise.pipeline.sampling.generated_rows` gives them),
    without pandas; None when that cannot be promised, and the caller asks pandas.

    ``task_rows_digest`` hashes the rows as pandas writes them to JSON and reads them back,
    and pandas writes a float with 10 decimals (``to_json``'s ``double_precision``). A float
    comes back unchanged exactly when ``float(f"{x:.10f}") == x`` and pandas writes it in
    fixed notation (|x| < 1e15); an int when it fits int64. Any other value: None.
    """
    first, last = parse_range(chunk)
    part = rows[first : last + 1]
    unused = {c for c in ENVIRONMENT_TASK_COLUMNS if all(row.get(c) is None for row in part)}
    records = [{k: v for k, v in row.items() if k not in unused} for row in part]
    for record in records:
        for value in record.values():
            if isinstance(value, bool) or not (
                value is None
                or isinstance(value, str)
                or (isinstance(value, int) and -(2**63) <= value < 2**63)
                or (
                    isinstance(value, float)
                    and math.isfinite(value)
                    and abs(value) < 1e15
                    and float(f"{value:.10f}") == value
                )
            ):
                return None
    return _records_digest(records)


def _records_digest(records: list[dict[str, Any]]) -> str:
    """SHA-256 (16 hex) of the records encoded canonically (sorted keys, compact, UTF-8): the
    digest both :func:`task_rows_digest` and :func:`plain_rows_digest` give."""
    import hashlib
    import json

    text = json.dumps(records, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


_ROWS_DIGESTS: dict[bytes, str] = {}  # SHA-256 of the rows' JSON → their task_rows_digest
_ROWS_DIGESTS_KEPT = 4096


def _rows_json_digest(key: bytes, raw: str) -> str:
    """The digest of rows given as pandas' ``records`` JSON ``raw`` (``key``: its SHA-256):
    the records re-encoded canonically (sorted keys, compact, UTF-8), hashed."""
    found = _ROWS_DIGESTS.get(key)
    if found is None:
        import json

        found = _records_digest(json.loads(raw))
        if len(_ROWS_DIGESTS) >= _ROWS_DIGESTS_KEPT:
            _ROWS_DIGESTS.clear()
        _ROWS_DIGESTS[key] = found
    return found


def _variants(config: Mapping[str, Any], agent: str) -> tuple[Any, ...]:
    from evalnoise.pipeline.variants import agent_variants

    return agent_variants(config, agent)


def journal_path(
    root: str | Path, agent: str, resource_profile: str, block: str, chunk: str, variant: str = ""
) -> Path:
    """The journal of a shard: keyed by its first trial and first task row only, and by its
    variant's :attr:`~evalnoise.pipeline.variants.Variant.segment` (``""``: neutral)."""
    first_trial, _ = parse_range(block)
    first_row, _ = parse_range(chunk)
    return (
        Path(root)
        / agent
        / resource_profile
        / "journals"
        / f"t{first_trial:04d}-c{first_row:04d}{variant}.jsonl"
    )


@dataclass(frozen=True)
class Shard:
    agent: str
    resource_profile: str
    block: str
    chunk: str
    #: the variant's segment of the file names (``""``: the neutral variant, or none)
    variant: str = ""

    @property
    def wildcards(self) -> dict[str, str]:
        return {
            "agent": self.agent,
            "resource_profile": self.resource_profile,
            "block": self.block,
            "chunk": self.chunk,
            "variant": self.variant,
        }

    @property
    def trials(self) -> list[int]:
        first, last = parse_range(self.block)
        return list(range(first, last + 1))

    @property
    def rows(self) -> tuple[int, int]:
        return parse_range(self.chunk)


@dataclass(frozen=True)
class ShardPlan:
    """Agents, resource profiles, blocks and chunks of one run (or the groups of a table)."""

    agents: tuple[str, ...]
    resource_profiles: tuple[str, ...]
    blocks: tuple[str, ...] = ()
    chunks: tuple[str, ...] = ()
    #: (agent, resource profile) present; None = the full cross product
    present: tuple[tuple[str, str], ...] | None = None
    #: wildcard → name in the data of agents and of resource profiles (imported tables)
    agent_names: Mapping[str, str] | None = None
    profile_names: Mapping[str, str] | None = None
    #: agent → its variants (:class:`evalnoise.pipeline.variants.Variant`, from
    #: :func:`~evalnoise.pipeline.variants.agent_variants`); None = one neutral variant each
    #: (a run without variants, an imported table). Typed loosely: this module is imported
    #: by jobs that only name shards, which must not depend on the variants' code.
    variants: Mapping[str, tuple[Any, ...]] | None = None

    @classmethod
    def from_config(cls, config: Mapping[str, Any], n_tasks: int) -> ShardPlan:
        """The plan of a pipeline run over ``n_tasks`` sampled tasks: every agent under the
        resource profiles it lists (``agents.<name>.resource_profiles``; all by default),
        under each of its variants."""
        trials = config["trials"]
        profiles = tuple(config["resource_profiles"])
        present = None
        if any(agent.get("resource_profiles") for agent in config["agents"].values()):
            present = tuple(
                (name, r)
                for name, agent in config["agents"].items()
                for r in profiles
                if r in (agent.get("resource_profiles") or profiles)
            )
        return cls(
            agents=tuple(config["agents"]),
            resource_profiles=profiles,
            present=present,
            blocks=tuple(
                format_range(a, b)
                for a, b in ranges(int(trials["count"]), int(trials["block_size"]))
            ),
            chunks=tuple(format_range(a, b) for a, b in ranges(int(n_tasks), chunk_size(config))),
            variants={name: _variants(config, name) for name in config["agents"]},
        )

    @classmethod
    def from_groups(cls, groups: Iterable[tuple[str, str]]) -> ShardPlan:
        """The plan of an imported table: only the (agent, resource profile) groups it has.

        Names become wildcards through :func:`slug` (``openai/gpt-5`` → ``openai-gpt-5``);
        :meth:`names` maps them back to the names in the table.
        """
        groups = sorted(set(groups))
        agents = _slugs(a for a, _ in groups)
        profiles = _slugs(r for _, r in groups)
        to_agent = {v: k for k, v in agents.items()}
        to_profile = {v: k for k, v in profiles.items()}
        return cls(
            agents=tuple(sorted(agents)),
            resource_profiles=tuple(sorted(profiles)),
            present=tuple(sorted((to_agent[a], to_profile[r]) for a, r in groups)),
            agent_names=agents,
            profile_names=profiles,
        )

    def names(self, agent: str, resource_profile: str) -> tuple[str, str]:
        """The names in the data of an (agent, resource profile) pair of wildcards."""
        return (
            (self.agent_names or {}).get(agent, agent),
            (self.profile_names or {}).get(resource_profile, resource_profile),
        )

    def groups(self) -> list[tuple[str, str]]:
        if self.present is not None:
            return list(self.present)
        return [(a, r) for a in self.agents for r in self.resource_profiles]

    def agent_variants(self, agent: str) -> tuple[Any, ...]:
        """The variants ``agent`` runs under (one neutral variant without variants)."""
        from evalnoise.pipeline.variants import NO_VARIANT

        return (self.variants or {}).get(agent) or (NO_VARIANT,)

    def variant(self, agent: str, segment: str) -> Any:
        """The variant of ``agent`` whose file-name segment is ``segment``."""
        for variant in self.agent_variants(agent):
            if variant.segment == segment:
                return variant
        raise KeyError(f"agent {agent!r} has no variant {segment!r} in this plan")

    def shards(self, agent: str | None = None, resource_profile: str | None = None) -> list[Shard]:
        """Every shard, or those of one agent and/or resource profile."""
        return [
            Shard(a, r, b, c, v.segment)
            for a, r in self.groups()
            if (agent is None or a == agent) and (resource_profile is None or r == resource_profile)
            for v in self.agent_variants(a)
            for b in self.blocks
            for c in self.chunks
        ]

    def agent_pairs(self) -> list[tuple[str, str, str]]:
        """``(resource_profile, a, b)`` for every two agents (a < b) within a profile."""
        have = set(self.groups())
        return [
            (r, a, b)
            for r in self.resource_profiles
            for a, b in combinations(sorted(self.agents), 2)
            if (a, r) in have and (b, r) in have
        ]

    def profile_pairs(self) -> list[tuple[str, str, str]]:
        """``(agent, a, b)`` for every two resource profiles (a < b) within an agent."""
        have = set(self.groups())
        return [
            (g, a, b)
            for g in self.agents
            for a, b in combinations(sorted(self.resource_profiles), 2)
            if (g, a) in have and (g, b) in have
        ]
