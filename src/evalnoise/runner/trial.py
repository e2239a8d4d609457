"""One trial: what a backend is asked to run, and the row it gives back.

A backend (:class:`evalnoise.runner.docker_backend.DockerBackend`,
:class:`evalnoise.runner.local_backend.LocalBackend`) turns a :class:`TrialRequest` into a
dict with the columns of :data:`evalnoise.schema.TRIALS` (``score`` stays null: the scorer
fills it). A backend never raises for a trial's own failure — that is a status — only for
programming errors or :class:`EngineUnavailable`.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from evalnoise.errors import EngineUnavailable  # re-exported: the runner raises it
from evalnoise.runner.actions import cap_action, reported_trajectory
from evalnoise.runner.contract import (
    AgentOutput,
    AgentSpec,
    classify_exit,
    redact,
    tail,
    task_payload,
    usage_columns,
)
from evalnoise.runner.resources import Allocation, ResourceProfile, allocate
from evalnoise.runner.variant import VARIANT_COLUMNS, TrialVariant

__all__ = [
    "Backend",
    "EngineUnavailable",
    "TrialRequest",
    "base_row",
    "finish_row",
    "read_answer_file",
    "record_output",
    "start_row",
    "task_allocation",
    "utc_now",
]


@dataclass(frozen=True)
class TrialRequest:
    agent: AgentSpec
    task: Mapping[str, Any]
    resource_profile: ResourceProfile
    trial: int
    attempt: int
    seed: int
    shard_id: str
    #: values of the agent's secret_env; never recorded, redacted from captured output
    secrets: Mapping[str, str] = field(default_factory=dict, repr=False)
    #: values of the agent's runtime_env; passed through, not redacted, not recorded
    runtime: Mapping[str, str] = field(default_factory=dict)
    #: the shard's variant (None: a run without variants); ``task["question"]`` is already
    #: rendered with its template
    variant: TrialVariant | None = None

    def payload(self, time_limit_s: float, **paths: str) -> dict[str, Any]:
        """The task JSON this trial's agent gets (see ``contract.task_payload``)."""
        return task_payload(
            self.task,
            agent=self.agent.name,
            resource_profile=self.resource_profile.name,
            trial=self.trial,
            attempt=self.attempt,
            seed=self.seed,
            time_limit_s=time_limit_s,
            **paths,
        )


class Backend(Protocol):
    name: str

    def run_trial(self, request: TrialRequest) -> dict[str, Any]: ...

    def check(self) -> None:
        """Raise :class:`EngineUnavailable` if the engine no longer answers."""
        ...

    def cleanup(self, shard_id: str) -> int:
        """Remove what a killed run of ``shard_id`` left behind; return how many things."""
        ...

    def abort(self, shard_id: str) -> None:
        """Stop every trial of ``shard_id`` that is running now (the shard is stopping)."""
        ...


def utc_now() -> datetime:
    return datetime.now(UTC)


def base_row(request: TrialRequest, *, backend: str, host: str | None) -> dict[str, Any]:
    """The identifying columns of a trial row; the backend fills in the outcome."""
    return {
        "agent": request.agent.name,
        "resource_profile": request.resource_profile.name,
        "task_id": str(request.task["task_id"]),
        "trial": int(request.trial),
        "attempt": int(request.attempt),
        "seed": int(request.seed),
        "status": None,
        "exit_code": None,
        "prediction": None,
        "error": None,
        "duration_s": None,
        "peak_memory_bytes": None,
        "cpu_shares": None,
        "cpu_quota_cpus": None,
        "memory_reservation_bytes": None,
        "memory_limit_bytes": None,
        "time_limit_s": None,
        "stdout_tail": None,
        "stderr_tail": None,
        # the agent's model usage from its answer record (contract.usage_columns)
        "prompt_tokens": None,
        "completion_tokens": None,
        "model_calls": None,
        "started_at": None,
        "ended_at": None,
        # the shard fills these in when it writes its table: they describe the shard's
        # plan (evalnoise.runner.shard), not this attempt
        "time_block": None,
        "run_order": None,
        # the shard's variant (evalnoise.runner.variant): its labels, null without variants
        **(
            request.variant.columns()
            if request.variant is not None
            else dict.fromkeys(VARIANT_COLUMNS)
        ),
        "image": request.agent.image,
        "image_digest": None,
        # the container's network (the agent's `none` / `host`; an environment trial's is its
        # task's, evalnoise.runner.trial_network)
        "network": request.agent.network,
        "backend": backend,
        "host": host,
        "score": None,
    }


def task_allocation(request: TrialRequest, host_cpus: float | None = None) -> Allocation:
    """The resource profile applied to the task's declared ``cpus``, ``memory_mb`` and
    ``time_limit_s`` (:func:`evalnoise.runner.resources.allocate`)."""
    task = request.task
    return allocate(
        float(task["cpus"]),
        float(task["memory_mb"]),
        float(task["time_limit_s"]),
        request.resource_profile,
        host_cpus=host_cpus,
    )


def start_row(
    request: TrialRequest, allocation: Allocation, *, backend: str, host: str | None
) -> dict[str, Any]:
    """A trial's row as it starts (every backend's first step): :func:`base_row` with the
    start time and the ``allocation`` applied to its container (or process) recorded."""
    row = base_row(request, backend=backend, host=host)
    row["started_at"] = utc_now()
    row.update(allocation.to_row())
    return row


def record_output(row: dict[str, Any], output: AgentOutput) -> dict[str, Any]:
    """Fill a completed trial's outcome from the agent's output: status, prediction or
    error (:func:`~evalnoise.runner.contract.classify_exit`), and its reported usage
    (:func:`~evalnoise.runner.contract.usage_columns`; a malformed one adds a note to
    ``error`` and stays null) and trajectory (``actions``, for the actions table:
    :func:`~evalnoise.runner.actions.reported_trajectory`, a malformed one not recorded, with
    a note). Usage and actions are kept whatever the status: the calls were made."""
    status, error = classify_exit(row["exit_code"], output.prediction, output.problem)
    usage, note = usage_columns(output.record)
    row.update(usage)
    row["actions"], trajectory_note = reported_trajectory(output.record)
    note = "; ".join(part for part in (note, trajectory_note) if part) or None
    row["status"] = status
    if status == "ok":
        row["prediction"] = output.prediction
    row["error"] = "; ".join(part for part in (error, note) if part) or None
    return row


def finish_row(
    row: dict[str, Any],
    secrets: Mapping[str, str],
    *,
    stdout: str | None = None,
    stderr: str | None = None,
) -> dict[str, Any]:
    """Redact secrets from every free-text field (before cutting tails) and from the
    recorded ``actions`` (before capping each), set ``ended_at``."""
    if row.get("actions") is not None:
        row["actions"] = [cap_action(redact(a, secrets)) for a in row["actions"]]
    if stdout is not None:
        row["stdout_tail"] = tail(redact(stdout, secrets))
    if stderr is not None:
        row["stderr_tail"] = tail(redact(stderr, secrets))
    for key in ("prediction", "error", "stdout_tail", "stderr_tail"):
        row[key] = redact(row[key], secrets)
    if row["ended_at"] is None:
        row["ended_at"] = utc_now()
    return row


def read_answer_file(path: str | os.PathLike[str], limit: int) -> bytes | None:
    """The agent's answer file, or ``None`` if it is absent or not a regular file.

    Opened without following symlinks: the agent controls the directory, and the runner
    must never read a host file it points at. Reads at most ``limit + 1`` bytes.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks, remaining = [], limit + 1
        while remaining > 0:
            chunk = os.read(fd, min(remaining, 1 << 16))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)
