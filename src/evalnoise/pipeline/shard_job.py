"""One ``run_trials`` job as two typed records: what it runs and the files it uses.

:class:`ShardJob` is what the shard runs — its task rows, agent, resource profile, trial
block, run seed, variant, reward key, infra policy, backend, concurrency and model server;
:class:`ShardFiles` is where it keeps things — the journal, the Parquet output, the model
server's log and the agent's image record. :func:`evalnoise.pipeline.shards.run_trials_shard`
takes both.

A job's record is read in one place, :meth:`ShardJob.from_params` and
:meth:`ShardFiles.from_params`, from the rule's ``params`` as
:class:`evalnoise.pipeline.run_plan.RunPlan` makes them (plain JSON values: Snakemake hashes
them for its rerun triggers, so their names and structure stay as they are) plus what the
job's input, output, log and threads say. Every field is checked on construction: a bad one
raises :class:`ShardJobError` naming the field and the value. Nothing here reads a file.
"""

from __future__ import annotations

import operator
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

__all__ = ["BACKENDS", "ShardFiles", "ShardJob", "ShardJobError"]

#: the trial backends a shard runs on (:func:`evalnoise.runner.shard.make_backend`)
BACKENDS = ("docker", "local")
#: the server log sits beside the job's log, under this suffix
SERVER_LOG_SUFFIX = ".server"

_MISSING = object()


class ShardJobError(ValueError):
    """A shard job's field is missing or not what the runner takes; the message names it."""


def _bad(field: str, expected: str, value: Any) -> ShardJobError:
    return ShardJobError(f"shard job: {field} must be {expected}, got {value!r}")


def _integer(field: str, value: Any, *, minimum: int | None = None) -> int:
    """``value`` as an int (an int-like such as a numpy integer, never a bool or a str)."""
    if isinstance(value, bool):
        raise _bad(field, "an integer", value)
    try:
        number = operator.index(value)
    except TypeError:
        raise _bad(field, "an integer", value) from None
    if minimum is not None and number < minimum:
        raise _bad(field, f"an integer >= {minimum}", value)
    return number


def _integers(field: str, value: Any, expected: str) -> tuple[int, ...]:
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        raise _bad(field, expected, value)
    try:
        return tuple(_integer(field, item, minimum=0) for item in value)
    except ShardJobError:
        raise _bad(field, expected, value) from None


def _mapping(field: str, value: Any, *, required: tuple[str, ...] = ()) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise _bad(field, "a mapping", value)
    missing = [key for key in required if key not in value]
    if missing:
        raise _bad(field, f"a mapping with {', '.join(missing)}", value)
    return dict(value)


def _path(field: str, value: Any, *, optional: bool = False) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str | os.PathLike) or not os.fspath(value):
        raise _bad(field, "a path" + (" or None" if optional else ""), value)
    return os.fspath(value)


def _param(params: Any, name: str, default: Any = _MISSING) -> Any:
    """``params[name]`` of a mapping or ``params.name`` of a Snakemake ``params`` object."""
    if isinstance(params, Mapping):
        value = params.get(name, default)
    else:
        value = getattr(params, name, default)
    if value is _MISSING:
        raise ShardJobError(f"shard job: the job's params lack {name!r}")
    return value


@dataclass(frozen=True)
class ShardJob:
    """What one shard runs: the rows ``rows[0] … rows[1]`` (inclusive, 0-based, in file
    order) of the tasks table at ``tasks_path``, each for every trial index of ``trials``,
    by ``agent`` (the runner's spec, without its image) under ``resource_profile``, seeded
    from ``run_seed`` (a trial's seed is ``trial_seed(run_seed, agent, task, trial,
    variant key)``, :func:`evalnoise.runner.seeds.trial_seed`), retried as ``infra_policy``
    says, on ``backend`` with ``concurrency`` trials at once. ``server`` is the managed model
    server's spec (None when the agent needs none), ``reward_key`` names the reward that
    scores an environment task, ``variant`` is the prompt / sampling variant
    (:class:`evalnoise.runner.variant.TrialVariant` as a mapping; None without variants).
    """

    tasks_path: str
    rows: tuple[int, int]
    agent: Mapping[str, Any]
    resource_profile: Mapping[str, Any]
    trials: tuple[int, ...]
    run_seed: int
    infra_policy: Mapping[str, Any]
    backend: str
    concurrency: int = 1
    server: Mapping[str, Any] | None = None
    reward_key: str | None = None
    variant: Mapping[str, Any] | None = None
    #: what a public-network environment task gets: ``{"mode": "as_declared" | "offline",
    #: "name": NAME | None}`` (:class:`evalnoise.runner.trial_network.NetworkChoice`); None:
    #: the default (as_declared, a network per trial)
    network: Mapping[str, Any] | None = None
    #: what a trial whose agent changed what the verifier executes scores as
    #: (:data:`evalnoise.runner.verifier_integrity.TAMPERED_CHOICES`)
    tampered_environment: str = "failure"

    def __post_init__(self) -> None:
        rows = _integers("rows", self.rows, "[first, last] task rows, 0 <= first <= last")
        if len(rows) != 2 or rows[0] > rows[1]:
            raise _bad("rows", "[first, last] task rows, 0 <= first <= last", self.rows)
        trials = _integers("trials", self.trials, "a non-empty list of trial indices >= 0")
        if not trials:
            raise _bad("trials", "a non-empty list of trial indices >= 0", self.trials)
        if self.backend not in BACKENDS:
            raise _bad("backend", " or ".join(map(repr, BACKENDS)), self.backend)
        if self.reward_key is not None and not isinstance(self.reward_key, str):
            raise _bad("reward_key", "a str or None", self.reward_key)
        if self.tampered_environment not in ("failure", "verdict"):
            raise _bad("tampered_environment", "'failure' or 'verdict'", self.tampered_environment)
        checked = {
            "tasks_path": _path("tasks_path", self.tasks_path),
            "rows": rows,
            "agent": _mapping("agent", self.agent, required=("name",)),
            "resource_profile": _mapping(
                "resource_profile", self.resource_profile, required=("name",)
            ),
            "trials": trials,
            "run_seed": _integer("run_seed", self.run_seed),
            "infra_policy": _mapping("infra_policy", self.infra_policy, required=("mode",)),
            "concurrency": _integer("concurrency", self.concurrency, minimum=1),
            "server": None if self.server is None else _mapping("server", self.server),
            "variant": None if self.variant is None else _mapping("variant", self.variant),
            "network": None
            if self.network is None
            else _mapping("network", self.network, required=("mode", "name")),
        }
        for name, value in checked.items():
            object.__setattr__(self, name, value)

    @classmethod
    def from_params(
        cls, params: Any, *, tasks_path: str | os.PathLike[str], concurrency: int = 1
    ) -> ShardJob:
        """The job of a ``run_trials`` rule: its ``params`` (a mapping, or Snakemake's
        ``params`` object) hold ``rows``, ``agent``, ``resource_profile``, ``trials``,
        ``run_seed``, ``infra_policy``, ``backend``, ``server``, ``reward_key``, ``network`` and,
        in a run with variants, ``variant`` (other params are Snakemake's rerun triggers); the tasks
        table is the job's input, ``concurrency`` its threads."""
        return cls(
            tasks_path=tasks_path,
            rows=_param(params, "rows"),
            agent=_param(params, "agent"),
            resource_profile=_param(params, "resource_profile"),
            trials=_param(params, "trials"),
            run_seed=_param(params, "run_seed"),
            infra_policy=_param(params, "infra_policy"),
            backend=_param(params, "backend"),
            concurrency=concurrency,
            server=_param(params, "server", None),
            reward_key=_param(params, "reward_key", None),
            variant=_param(params, "variant", None),
            network=_param(params, "network", None),
            tampered_environment=_param(params, "tampered_environment", "failure"),
        )

    def to_dict(self) -> dict[str, Any]:
        """The fields as plain JSON values (tuples as lists)."""
        return {f.name: _plain(getattr(self, f.name)) for f in fields(self)}


@dataclass(frozen=True)
class ShardFiles:
    """Where one shard keeps things: ``journal`` (append-only, survives reruns; its path
    also names the shard's containers), ``output`` (the trial shard, written atomically),
    ``server_log`` (the managed model server's log, None for none), ``image_info``
    (the agent's image record of :func:`evalnoise.pipeline.image_stage.ensure_image`,
    None when the agent spec is complete without it) and ``actions`` (the trials' actions,
    :data:`evalnoise.schema.ACTIONS`, written beside the shard; None: not written)."""

    journal: str
    output: str
    server_log: str | None = None
    image_info: str | None = None
    actions: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "journal", _path("journal", self.journal))
        object.__setattr__(self, "output", _path("output", self.output))
        object.__setattr__(self, "server_log", _path("server_log", self.server_log, optional=True))
        object.__setattr__(self, "image_info", _path("image_info", self.image_info, optional=True))
        object.__setattr__(self, "actions", _path("actions", self.actions, optional=True))

    @classmethod
    def from_params(
        cls,
        params: Any,
        *,
        output: str | os.PathLike[str],
        log: str | os.PathLike[str],
        image_info: str | os.PathLike[str] | None,
        actions: str | os.PathLike[str] | None = None,
    ) -> ShardFiles:
        """The files of a ``run_trials`` job: the journal from its ``params``, the shard
        and its actions from its outputs, the server's log beside the job's ``log``
        (``<log>.server``)."""
        return cls(
            journal=_param(params, "journal"),
            output=output,
            server_log=os.fspath(log) + SERVER_LOG_SUFFIX,
            image_info=image_info,
            actions=None if actions is None else os.fspath(actions),
        )

    def to_dict(self) -> dict[str, Any]:
        """The fields as plain JSON values."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    return value
