"""Multi-step environment trials (Harbor's ``[[steps]]``): each step's instruction, agent phase
and verifier in the same container, in order, scored by Harbor's reward strategy.

Harbor 0.25's ``MultiStepTrial`` (``harbor/trial/multi_step.py``), with a shared verifier:

1. Before each step, what the previous step's verifier left is removed (``/tests``, and the
   verifier's logs), the step's ``workdir/`` is copied into the container's working directory
   and its ``setup.sh`` runs there (as the step's agent user), then the step's healthcheck
   is polled (:mod:`evalnoise.runner.healthcheck`); a non-zero exit or a failed check ends
   the step with no verdict: ``infra_error``, phase ``setup``.
2. The agent phase with the step's instruction, under the step's agent timeout (its own, else
   the task's) × the profile's time factor, as the step's agent user; the oracle runs the
   step's ``solution/solve.sh`` (else the task's).
3. The verifier: the task's ``tests/`` then the step's ``tests/`` copied to ``/tests`` (the
   step's ``test.sh`` wins when it has one), run under the step's verifier timeout, user and
   env (the task's ``[verifier].env`` updated by the step's). The agent and verifier phases
   are exactly :class:`evalnoise.runner.environment.EnvironmentBackend`'s, one step at a time.

**Early stop** (Harbor's ``_should_stop_after_step``): the remaining steps are skipped after a
step without a verdict (its verifier left no valid reward, ran past its limit, was OOM-killed,
or never ran), and after a step whose rewards fall below its ``min_reward`` (a number gates
``reward``; a table gates each named reward; a missing one counts as −∞).

**Reward across steps** (Harbor's ``_select_multi_step_reward``), over the steps that ran:
``final`` takes the last step's rewards as they are (none if it has no verdict); ``mean``
(the default) the mean of each named reward over the steps with a verdict, a reward a step
lacks counted as 0 there, a step without a verdict left out:

    R_k = (1 / |V|) Σ_{s ∈ V} r_{s,k},   V = steps with a verdict, r_{s,k} = 0 if s has no k.

The trial row: ``rewards_json`` holds the combined rewards, ``step_rewards_json`` each step's
(``[{"step", "status", "rewards"}]``, ``rewards`` null for a step without a verdict);
``reward`` the combined scoring reward when the status is ``ok``. The status is the first
failure of any step (a step's timeout, agent error, OOM kill, verifier error — as for a
single-step trial), named with its step in ``error``; an early stop by ``min_reward`` is a
note there, not a failure. Durations, OOM kills and the agent's usage are summed over the
steps; the exit codes and output tails are the last step's.
"""

from __future__ import annotations

import dataclasses
import json
import shlex
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalnoise.runner.engine import join_notes
from evalnoise.runner.healthcheck import run_healthcheck
from evalnoise.runner.rewards import read_rewards, scoring_reward
from evalnoise.runner.trial_container import tar_dir
from evalnoise.tasks.harbor_task import HarborStep, resolve_env, templated_names

__all__ = ["StepRun", "combine_rewards", "min_reward_failure", "run_steps"]

#: row columns summed over the steps (null when no step has a value)
_SUMMED = (
    "agent_duration_s",
    "verifier_duration_s",
    "oom_kills",
    "agent_steps",
    "prompt_tokens",
    "completion_tokens",
    "model_calls",
)
#: row columns a step sets and the trial row takes from the last step that ran
_LAST = ("exit_code", "verifier_exit_code", "verifier_output_tail")


@dataclass(frozen=True)
class StepRun:
    """One step as it ran: its status (None: ok), phase, error and rewards (None: no
    verdict)."""

    name: str
    status: str | None
    phase: str | None
    error: str | None
    rewards: dict[str, float] | None

    def to_json(self) -> dict[str, Any]:
        return {"step": self.name, "status": self.status or "ok", "rewards": self.rewards}


def min_reward_failure(
    rewards: Mapping[str, float] | None, thresholds: Mapping[str, float]
) -> str | None:
    """Harbor's ``_min_reward_failure``: ``"KEY=ACTUAL below min_reward T"`` for the first
    threshold not met (a missing reward, or no verdict, counts as −∞), None when all are."""
    for key, threshold in thresholds.items():
        actual = rewards.get(key, float("-inf")) if rewards else float("-inf")
        if actual < threshold:
            return f"{key}={actual:g} below min_reward {threshold:g}"
    return None


def combine_rewards(runs: Sequence[StepRun], strategy: str) -> dict[str, float] | None:
    """The trial's rewards from its steps' (module docstring): ``final`` — the last step's;
    ``mean`` — per named reward, the mean over the steps with a verdict, a missing name 0."""
    if not runs:
        return None
    if strategy == "final":
        return runs[-1].rewards
    valid = [run.rewards for run in runs if run.rewards is not None]
    keys = {key for rewards in valid for key in rewards}
    if not keys:
        return None
    return {key: sum(r.get(key, 0.0) for r in valid) / len(valid) for key in sorted(keys)}


def _workdir(box: Any) -> str:
    """The container's working directory (where Harbor copies a step's ``workdir/``)."""
    exec_id = box.api.exec_create(box.id, ["pwd"], stdout=True, stderr=False, user="0:0")["Id"]
    return box.api.exec_start(exec_id).decode(errors="replace").strip() or "/"


def _clear(directory: Path) -> None:
    for entry in directory.iterdir():
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)


def _prepare(box: Any, step: HarborStep, user: str, time_limit_s: float, first: bool) -> str | None:
    """Before a step: the previous verifier's ``/tests`` removed, the step's ``workdir/``
    copied in and its ``setup.sh`` run; the problem, or None."""
    if not first:
        run = box.run("rm -rf /tests", user="0:0", env=None, timeout_s=60)
        if run.exit_code != 0:
            return f"/tests of the previous step could not be removed (exit {run.exit_code})"
    if step.workdir_dir.is_dir():
        workdir = _workdir(box)
        box.api.put_archive(box.id, "/", tar_dir(step.workdir_dir, workdir.strip("/") or "."))
        if (step.workdir_dir / "setup.sh").is_file():
            script = shlex.quote(f"{workdir.rstrip('/')}/setup.sh")
            run = box.run(f"bash {script}", user=user, env=None, timeout_s=time_limit_s)
            if run.timed_out:
                return f"setup.sh ran past its {time_limit_s:g}s limit"
            if run.exit_code != 0:
                return f"setup.sh exited with code {run.exit_code}"
    if step.healthcheck is not None:
        return run_healthcheck(box, step.healthcheck, user)
    return None


def _verdict(row: Mapping[str, Any], logs: Path) -> dict[str, float] | None:
    """The step's rewards when its verifier ran to the end and left valid ones."""
    duration, limit = row.get("verifier_duration_s"), row.get("verifier_time_limit_s")
    if duration is None or (limit is not None and duration >= limit):
        return None
    if row.get("status") == "oom_killed" and row.get("phase") == "verifier":
        return None
    return read_rewards(logs).values


def run_steps(
    backend: Any,
    request: Any,
    row: dict[str, Any],
    trial: Any,
    box: Any,
    scratch: Path,
    secrets: dict[str, str],
    texts: dict[str, str | None],
) -> None:
    """Every step of ``trial``'s task in ``box``, in order (module docstring); fills ``row``.

    ``backend`` is the :class:`evalnoise.runner.environment.EnvironmentBackend` whose
    ``_phases`` runs one step's agent and verifier phases on a copy of the trial made for the
    step."""
    task = trial.task
    factor = request.resource_profile.time_limit_factor
    runs: list[StepRun] = []
    outputs: list[str] = []
    stop_note = None
    logs = scratch / "verifier"
    for index, step in enumerate(task.steps):
        step_row = {
            **row,
            **dict.fromkeys(("status", "phase", "error", "reward", "rewards_json")),
            **dict.fromkeys((*_SUMMED, *_LAST, "actions")),
            "verifier_time_limit_s": step.verifier_timeout_s * factor,
        }
        _clear(logs)
        agent_user = step.agent_user or trial.agent_user
        problem = None
        try:
            verifier_env = resolve_env(step.verifier_env, backend.environ)
        except KeyError as exc:
            problem = f"variable {exc.args[0]} of the step's verifier env is not set"
            verifier_env = {}
        for key in templated_names(step.verifier_env):
            if key in verifier_env:
                secrets[f"env:{key}"] = verifier_env[key]
        allocation = dataclasses.replace(
            trial.allocation, time_limit_s=step.agent_timeout_s * factor
        )
        problem = problem or _prepare(box, step, agent_user, allocation.time_limit_s, index == 0)
        if problem is not None:
            runs.append(StepRun(step.name, "infra_error", "setup", problem, None))
            break
        solution = step.solution_dir / "solve.sh"
        step_task = dataclasses.replace(
            task,
            active_step=step,
            instruction=step.instruction,
            agent_user=step.agent_user or task.agent_user,
            verifier_user=step.verifier_user or task.verifier_user,
            has_solution=solution.is_file() if step.solution_dir.is_dir() else task.has_solution,
        )
        step_trial = dataclasses.replace(
            trial, task=step_task, allocation=allocation, verifier_env=verifier_env
        )
        step_request = dataclasses.replace(
            request, task={**request.task, "question": step.instruction}
        )
        step_texts: dict[str, str | None] = {"stdout": None, "stderr": None}
        backend._phases(step_request, step_row, step_trial, box, scratch, secrets, step_texts)
        rewards = _verdict(step_row, logs)
        status = None if step_row["status"] == "ok" else step_row["status"]
        runs.append(StepRun(step.name, status, step_row["phase"], step_row["error"], rewards))
        for key in _SUMMED:
            if step_row.get(key) is not None:
                row[key] = (row.get(key) or 0) + step_row[key]
        for key in _LAST:
            row[key] = step_row.get(key)
        if step_row.get("actions") is not None:  # the steps' actions, one after another
            row["actions"] = [*(row.get("actions") or ()), *step_row["actions"]]
        if step_texts["stdout"]:
            outputs.append(f"[step {step.name}]\n{step_texts['stdout']}")
        if step_texts["stderr"]:
            texts["stderr"] = step_texts["stderr"]
        if rewards is None:
            break
        if step.min_reward is not None:
            failure = min_reward_failure(rewards, step.min_reward)
            if failure is not None:
                if index + 1 < len(task.steps):
                    stop_note = (
                        f"stopped after step {step.name!r} ({index + 1} of {len(task.steps)}): "
                        f"{failure}"
                    )
                break
    texts["stdout"] = "\n".join(outputs) if outputs else None
    _finish(row, runs, task.reward_strategy or "mean", backend.reward_key, stop_note)


def _finish(
    row: dict[str, Any],
    runs: Sequence[StepRun],
    strategy: str,
    reward_key: str | None,
    stop_note: str | None,
) -> None:
    combined = combine_rewards(runs, strategy)
    row["step_rewards_json"] = json.dumps([r.to_json() for r in runs], separators=(",", ":"))
    row["rewards_json"] = (
        None if combined is None else json.dumps(combined, sort_keys=True, separators=(",", ":"))
    )
    failed = [r for r in runs if r.status is not None]
    notes = [f"step {r.name!r}: {r.error}" for r in runs if r.error]
    if failed:
        first = failed[0]
        row.update(status=first.status, phase=first.phase)
        row["error"] = join_notes(*notes, stop_note)
        return
    problem = None
    if combined is None:
        problem = "no step left a valid reward"
    else:
        reward, problem = scoring_reward(combined, reward_key)
    if problem is not None:
        row.update(status="verifier_error", phase="verifier")
        row["error"] = join_notes(problem, *notes, stop_note)
        return
    row.update(status="ok", reward=reward)
    row["error"] = join_notes(*notes, stop_note)
