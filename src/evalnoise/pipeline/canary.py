"""The canary: one trial of an agent on a tiny task before any of its trials run.

A sweep of hundreds of trials whose agent cannot run at all (a native library that crashes
on this CPU, an image without its runtime, a model server that never answers) produces
hundreds of failures that look like an agent scoring 0 %. The canary runs first — one trial
of the agent on :data:`CANARY_QUESTION`, in the roomiest resource profile, with the
resources of the most demanding sampled task — and must end ``ok`` with an answer; the
answer need not be right. Otherwise :class:`CanaryFailed` stops the run before the sweep,
with one message naming the agent, the resource profile, the exit code or signal, the last
lines of stderr, and what to check.

The canary's own trial is recorded (``results/trials/<agent>/canary.json``) but never
counted: it is not a sample of the benchmark.
"""

from __future__ import annotations

import json
import os
import platform
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from evalnoise.outcomes import crash_signal_name

__all__ = [
    "CANARY_QUESTION",
    "CANARY_TASK_ID",
    "CanaryFailed",
    "canary_message",
    "canary_task",
    "run_canary",
]

CANARY_TASK_ID = "__canary__"
CANARY_QUESTION = "What is 2 + 3? Answer with the number only."
_STDERR_LINES = 12


class CanaryFailed(RuntimeError):
    """The canary trial did not end ``ok`` with an answer; the message says why."""


def canary_task(tasks: pd.DataFrame) -> pd.DataFrame:
    """The one-row tasks table of the canary: :data:`CANARY_QUESTION` with the largest
    ``cpus``, ``memory_mb`` and ``time_limit_s`` among ``tasks`` (so the canary gets the
    most room any trial of the sweep gets). Environment tasks bring their own container and
    verifier, which a question cannot stand for: their canary is the first task itself."""
    if is_environment(tasks):
        return tasks.iloc[[0]].reset_index(drop=True)

    def largest(column: str) -> Any:
        if column not in tasks or tasks[column].isna().all():
            return None
        return tasks[column].max()

    return pd.DataFrame(
        {
            "task_id": [CANARY_TASK_ID],
            "question": [CANARY_QUESTION],
            "answer": ["5"],
            "level": ["canary"],
            "cpus": pd.array([largest("cpus")], dtype="Float64"),
            "memory_mb": pd.array([largest("memory_mb")], dtype="Int64"),
            "time_limit_s": pd.array([largest("time_limit_s")], dtype="Float64"),
            "sampling_seed": pd.array([None], dtype="Int64"),
        }
    )


def is_environment(tasks: pd.DataFrame) -> bool:
    """Whether the tasks are environment tasks (the tasks table's ``kind``)."""
    return "kind" in tasks and bool(tasks["kind"].eq("environment").any())


def _tail(text: Any, lines: int = _STDERR_LINES) -> str:
    if not isinstance(text, str) or not text.strip():
        return "(empty)"
    return "\n".join("    " + line for line in text.strip().splitlines()[-lines:])


def _advice(row: Mapping[str, Any]) -> str:
    status, code = row.get("status"), row.get("exit_code")
    signal_name = crash_signal_name(code)
    if signal_name == "SIGILL":
        return (
            "the agent's native code uses an instruction this CPU does not have: a library "
            "built for another machine (e.g. with -march=native). Rebuild the model runtime "
            "for the declared baseline (tools/install-model.sh) and the agent's image."
        )
    if signal_name is not None:
        return (
            f"the agent's process crashed ({signal_name}). If it loads a model, check the "
            "runtime's CPU feature line in the stderr above (llama.cpp's AMX path crashes "
            "for batches > 1, llama.cpp #20824) and rebuild it with tools/install-model.sh; "
            "run the agent's image by hand on this task to see the crash."
        )
    if status == "oom_killed":
        return (
            "the agent needs more memory than the roomiest profile's hard limit "
            f"({_mib(row.get('memory_limit_bytes'))}): raise the tasks' memory_mb or that "
            "profile's memory_limit_factor."
        )
    if status == "timeout":
        return (
            f"the agent did not finish within {row.get('time_limit_s')} s on a one-line "
            "question: is the model server slow or unreachable, or the time limit too low?"
        )
    if status == "infra_error":
        return (
            "the agent or the runner reports an unavailable service (the model server, the "
            "Docker engine): see the server log beside this job's log and the error above."
        )
    return (
        "the agent ended without an answer: see its stderr above; it must write "
        '{"answer": ...} to $EVALNOISE_OUTPUT and exit 0 (docs/agent-contract.md).'
    )


def _mib(value: Any) -> str:
    if value is None or pd.isna(value):
        return "uncapped"
    return f"{int(value) / 2**20:.0f} MiB"


def _canary_task_text(row: Mapping[str, Any]) -> str:
    if row.get("task_id") not in (None, CANARY_TASK_ID):
        return f"the first environment task {row['task_id']!r}" + (
            f" (phase {row['phase']})" if isinstance(row.get("phase"), str) else ""
        )
    return f"the one-line task {CANARY_QUESTION!r}"


def canary_message(agent: str, resource_profile: str, row: Mapping[str, Any]) -> str:
    """The one message a failed canary stops the run with."""
    code = row.get("exit_code")
    signal_name = crash_signal_name(code)
    how = f"exit code {code}" if code is not None and not pd.isna(code) else "no exit code"
    if signal_name:
        how += f" ({signal_name})"
    error = row.get("error")
    return (
        f"canary failed: agent {agent!r} under resource profile {resource_profile!r} (the "
        f"roomiest) ended {row.get('status')} with {how}"
        + (f": {error}" if isinstance(error, str) and error else "")
        + f" on {_canary_task_text(row)}. No trial of this agent was run.\n"
        f"  last lines of stderr:\n{_tail(row.get('stderr_tail'))}\n"
        + (
            f"  last lines of stdout:\n{_tail(row.get('stdout_tail'))}\n"
            if isinstance(row.get("stdout_tail"), str) and row["stdout_tail"].strip()
            else ""
        )
        + f"  what to check: {_advice(row)}\n"
        "  (set `canary: false` in the config to run the sweep anyway)"
    )


def run_canary(
    *,
    tasks_path: str | os.PathLike[str],
    image_info: str | os.PathLike[str] | None,
    agent: Mapping[str, Any],
    resource_profile: Mapping[str, Any],
    run_seed: int,
    backend: str,
    output: str | os.PathLike[str],
    server: Mapping[str, Any] | None = None,
    server_log: str | os.PathLike[str] | None = None,
    environ: Mapping[str, str] | None = None,
    reward_key: str | None = None,
    network: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Run the canary trial of ``agent`` under ``resource_profile``; write its record to
    ``output`` (JSON) if it passes, raise :class:`CanaryFailed` if not. A question's canary
    passes when the trial ends ``ok`` with an answer, an environment task's when it ends
    ``ok`` (the verifier left a valid reward, whatever it is)."""
    from evalnoise.atomic import write_text
    from evalnoise.formatting import dumps
    from evalnoise.pipeline.shard_job import ShardFiles, ShardJob
    from evalnoise.pipeline.shards import run_trials_shard

    tasks = canary_task(pd.read_parquet(tasks_path))
    environment = is_environment(tasks)
    with tempfile.TemporaryDirectory(prefix="evalnoise-canary-") as tmp:
        tasks_file = Path(tmp) / "tasks.parquet"
        tasks.to_parquet(tasks_file, index=False)
        shard = Path(tmp) / "canary.parquet"
        job = ShardJob(
            tasks_path=tasks_file,
            rows=(0, 0),
            agent=agent,
            resource_profile=resource_profile,
            trials=(0,),
            run_seed=run_seed,
            infra_policy={"mode": "as_incorrect"},
            backend=backend,
            server=server,
            reward_key=reward_key,
            network=network,
        )
        files = ShardFiles(
            journal=Path(tmp) / "canary.journal",
            output=shard,
            server_log=server_log,
            image_info=image_info,
        )
        run_trials_shard(job, files, environ=environ)
        row = pd.read_parquet(shard).iloc[-1].to_dict()
    name, profile = str(agent["name"]), str(resource_profile["name"])
    passed = row.get("status") == "ok" and (environment or isinstance(row.get("prediction"), str))
    if not passed:
        raise CanaryFailed(canary_message(name, profile, row))
    record = {
        "agent": name,
        "resource_profile": profile,
        "status": row["status"],
        "exit_code": None if pd.isna(row.get("exit_code")) else int(row["exit_code"]),
        "prediction": row["prediction"],
        "duration_s": None if pd.isna(row.get("duration_s")) else float(row["duration_s"]),
        "host": platform.node(),
        "image": row.get("image"),
        "stderr_tail": row.get("stderr_tail"),
    }
    write_text(output, dumps(record) + "\n")
    return record


def read_canary(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A canary record written by :func:`run_canary`."""
    return json.loads(Path(path).read_text(encoding="utf-8"))
