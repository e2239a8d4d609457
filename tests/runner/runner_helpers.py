"""Helpers shared by the runner tests (fixtures live in conftest.py)."""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path

import pandas as pd

AGENTS = Path(__file__).parent / "agents"
PROBE = AGENTS / "probe"
PROBE_SCRIPT = PROBE / "agent.py"
SEGV = AGENTS / "segv"
SEGV_SCRIPT = SEGV / "agent.py"


def task_row(
    task_id: str,
    question: dict | str,
    *,
    cpus: float = 1.0,
    memory_mb: int = 64,
    time_limit_s: float = 20.0,
    answer: str = "gold-answer",
) -> dict:
    return {
        "task_id": task_id,
        "question": question if isinstance(question, str) else json.dumps(question),
        "answer": answer,
        "level": "1",
        "cpus": cpus,
        "memory_mb": memory_mb,
        "time_limit_s": time_limit_s,
        "sampling_seed": 0,
    }


def tasks_frame(rows: list[dict]) -> pd.DataFrame:
    return pd.DataFrame(rows)


def probe_agent(image: str, **extra) -> dict:
    return {"name": "probe", "image": image, **extra}


def local_probe_agent(**extra) -> dict:
    return {"name": "probe-local", "command": [sys.executable, str(PROBE_SCRIPT)], **extra}


def shard_containers(client, shard_id: str) -> list[str]:
    """IDs of the shard's containers, running or not.

    The low-level listing answers in one call; ``client.containers.list`` inspects each
    container afterwards and races with a container being removed in between.
    """
    found = client.api.containers(all=True, filters={"label": f"evalnoise.shard={shard_id}"})
    return [c["Id"] for c in found]


def run_one(
    backend,
    agent: dict,
    task: dict,
    resource_profile: str = "1x",
    *,
    shard_id: str = "test",
    trial: int = 0,
    attempt: int = 1,
    secrets=None,
    runtime=None,
) -> dict:
    """One trial through ``backend`` (a real backend), as the shard would run it."""
    from evalnoise.runner import agent_spec, trial_seed
    from evalnoise.runner import resource_profile as make_profile
    from evalnoise.runner.trial import TrialRequest

    spec = agent_spec(agent)
    request = TrialRequest(
        agent=spec,
        task=task,
        resource_profile=make_profile(resource_profile),
        trial=trial,
        attempt=attempt,
        seed=trial_seed(0, spec.name, task["task_id"], trial),
        shard_id=shard_id,
        secrets=secrets or {},
        runtime=runtime or {},
    )
    return backend.run_trial(request)


class Recording:
    """A backend that runs nothing: answers ``ok`` at once and records each request
    (``(task_id, trial, attempt)`` in the order the shard's pool starts them).

    ``infra`` names the (task, trial) pairs whose first attempt ends ``timeout`` (for the
    retry test).
    """

    name = "recording"

    def __init__(self, infra: set | None = None) -> None:
        self.requests: list[tuple[str, int, int]] = []
        self.infra = infra or set()
        self._lock = threading.Lock()

    def run_trial(self, request):
        from evalnoise.runner.trial import base_row, finish_row, utc_now

        key = (str(request.task["task_id"]), request.trial)
        with self._lock:
            self.requests.append((*key, request.attempt))
        row = base_row(request, backend=self.name, host=None)
        row["started_at"] = utc_now()
        failed = key in self.infra and request.attempt == 1
        row["status"] = "timeout" if failed else "ok"
        row["prediction"] = None if failed else f"seed {request.seed}"
        return finish_row(row, {})

    def check(self) -> None:
        pass

    def cleanup(self, shard_id: str) -> int:
        return 0

    def abort(self, shard_id: str) -> None:
        pass
