"""The phases of one environment trial in its container: the agent, then the verifier.

:class:`TrialPhases` is the part of :class:`evalnoise.runner.environment.EnvironmentBackend`
that runs, in a started trial container, the task's healthcheck, the agent phase (the oracle,
the null agent, or an external agent through the exec protocol, fresh or forked from the
shard's fork server: :mod:`evalnoise.runner.fork_server`) and the verifier phase (in the same
container, or Harbor's separate mode), and reads what they came to into the trial's row
(:mod:`evalnoise.runner.environment` has the whole trial and its outcome table; a multi-step
task runs these phases once per step, :mod:`evalnoise.runner.steps`). :class:`TrialPlan` is
what the phases need of the task, resolved.

**The verdict after an agent failure** (:mod:`evalnoise.verified_after`). When the agent
phase ends in ``timeout`` or ``agent_error`` and the verifier then leaves a valid reward, the
trial is scored by that reward, as Harbor and Terminal-Bench score it: ``status`` ``ok``,
``reward`` the verdict, and the agent's outcome kept as the flag ``verified_after``
(``timeout`` / ``agent_error``; ``error`` and ``phase`` still say what the agent did). The
analysis's ``scoring.after_agent_failure: failure`` reads such trials as the failures they
were (:func:`evalnoise.verified_after.as_failures`). A crash (an ``agent_error`` exit by a
fault signal) stays a crash. A process OOM-killed during the agent phase while the container
and its main process live on is the task's own event: the trial goes on to its verifier,
whose verdict decides, and the kill is the flag ``oom_in_agent``. Docker's
``State.OOMKilled`` is set in both cases, so the two are told apart by what survived
(:func:`evalnoise.runner.engine.main_process_alive`): a kill that ended the container or its
main process is the infrastructure outcome ``oom_killed``.

**OOM kills** are counted in the container's cgroup (:func:`evalnoise.runner.container_procs.
oom_kills`) before and after each phase, so the phase is known even when the process the
kernel killed was a child of the command the runner started. Without a readable cgroup (a
remote engine) a command that died of SIGKILL (exit 137) that the runner did not send counts
as OOM-killed. ``peak_memory_bytes`` is the container cgroup's high-water mark (``memory.peak``
v2, ``memory.max_usage_in_bytes`` v1) over the whole trial, when readable.
"""

from __future__ import annotations

import shutil
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalnoise.runner import contract, separate_verifier
from evalnoise.runner import verifier_integrity as integrity
from evalnoise.runner.engine import join_notes, main_process_alive, remove_trial_container
from evalnoise.runner.exec_protocol import PROTOCOL
from evalnoise.runner.external_agent import AgentOutcome, host_command, run_external_agent
from evalnoise.runner.fork_server import popen_agent
from evalnoise.runner.healthcheck import run_healthcheck
from evalnoise.runner.peak_memory import CGROUP_ROOT, container_memory_dir
from evalnoise.runner.resources import Allocation
from evalnoise.runner.rewards import read_rewards, scoring_reward
from evalnoise.runner.steps import run_steps
from evalnoise.runner.trial import TrialRequest
from evalnoise.runner.trial_container import TrialContainer, read_tail, tar_dir
from evalnoise.runner.trial_network import NO_NETWORK, TrialNetwork, offline_cause
from evalnoise.schema import VERIFIED_AFTER
from evalnoise.tasks.harbor_task import HarborTask

__all__ = ["TrialPhases", "TrialPlan", "agent_oom_outcome", "verdict_after_agent_failure"]


class TrialPhases:
    """The phases of a trial (module docstring), as methods of the environment backend: they
    use its ``sandbox``, ``reward_key``, ``tampered_environment``, ``cgroup_version``,
    ``fork_servers`` and ``_track``."""

    def _phases(
        self,
        request: TrialRequest,
        row: dict[str, Any],
        trial: TrialPlan,
        box: TrialContainer,
        scratch: Path,
        secrets: dict[str, str],
        texts: dict[str, str | None],
    ) -> None:
        """The agent phase, then the verifier phase; fills ``row`` (module docstring). A
        multi-step task runs them once per step (:func:`evalnoise.runner.steps.run_steps`)."""
        task = trial.task
        if task.healthcheck is not None and task.active_step is None:
            problem = run_healthcheck(box, task.healthcheck, trial.image_user or "0:0")
            if problem is not None:
                row.update(status="infra_error", phase="setup", error=problem)
                return
        if task.steps and task.active_step is None:
            run_steps(self, request, row, trial, box, scratch, secrets, texts)
            return
        guard = None
        if not trial.task.verifier.separate:
            guard = integrity.Guard.before_agent(box, trial.task.tests_dir, trial.verifier_env)
        ooms_start = box.oom_kills()
        t0 = time.monotonic()
        if trial.kind == "oracle":
            outcome = self._oracle(trial, box, scratch)
        elif trial.kind == "external":
            outcome = run_external_agent(
                request,
                box,
                scratch,
                user=trial.agent_user,
                workdir=trial.task.workdir,
                time_limit_s=trial.agent_time_limit_s,
                output_bytes=self.sandbox.exec_output_bytes,
                register=lambda pid: self._track(pid, request.shard_id),
                unregister=lambda pid: self._track(pid, None),
                start=self._agent_start(request),
            )
            row.update(outcome.usage)
            row["agent_steps"] = outcome.steps
            row["actions"] = outcome.actions  # the actions table's, not a TRIALS column
        else:
            outcome = AgentOutcome()
        row["agent_duration_s"] = time.monotonic() - t0
        row["exit_code"] = outcome.exit_code
        texts["stdout"], texts["stderr"] = outcome.stdout, outcome.stderr
        ooms_agent = box.oom_kills()
        status, error = outcome.status, outcome.error
        oom = (
            ooms_agent > ooms_start
            if ooms_agent is not None and ooms_start is not None
            else outcome.sigkilled
        )
        if oom:
            alive = main_process_alive(box.api, box.id, box.main_pid)
            status, error, row["oom_in_agent"] = agent_oom_outcome(
                status, error, alive=alive, limit_bytes=trial.allocation.memory_limit_bytes
            )
        if status:
            row.update(status=status, phase="agent", error=error)
        else:
            row["error"] = error  # a note (a malformed usage report), not a failure
        if not outcome.stopped:
            row["error"] = join_notes(
                row["error"], "the agent's processes could not be stopped: verifier not run"
            )
            return
        if not box.api.inspect_container(box.id)["State"].get("Running"):
            row["error"] = join_notes(row["error"], "the container stopped before the verifier ran")
            if row["status"] is None:
                row.update(status="infra_error", phase="agent")
            return
        if guard is None:
            self._separate_verifier(request, row, trial, box, scratch, secrets)
        else:
            tampered = guard.before_verifier(box, trial.task.tests_dirs)
            row["environment_tampered"] = integrity.tampered_text(tampered)
            self._verifier(row, trial, box, scratch / "verifier", ooms_agent, secrets)
            integrity.judge_tampering(row, self.tampered_environment)
        total = box.oom_kills()
        if total is not None and ooms_start is not None:
            row["oom_kills"] = total - ooms_start

    def _agent_start(self, request: TrialRequest) -> Any:
        """How the external agent's process is made: a child of the shard's fork server for
        a spec with ``fork_server`` (its server shares the agent's env, secrets and run-time
        values, the same for all its trials), else a fresh start."""
        spec = request.agent
        if not spec.fork_server:
            return popen_agent
        shared = {
            **spec.env,
            **request.runtime,
            **request.secrets,
            "EVALNOISE_KIND": "environment",
            "EVALNOISE_PROTOCOL": PROTOCOL,
        }
        return self.fork_servers.starter(request.shard_id, host_command(spec.command), shared)

    def _separate_verifier(
        self,
        request: TrialRequest,
        row: dict[str, Any],
        trial: TrialPlan,
        box: TrialContainer,
        scratch: Path,
        secrets: dict[str, str],
    ) -> None:
        """Harbor's separate mode: a fresh container of the verifier's image, the agent's
        artifacts (or working directory) copied in, the verifier run there."""
        api = box.api
        copies = separate_verifier.separate_copies(
            api, box.id, trial.task.verifier.artifacts, trial.task.workdir
        )
        name = f"evalnoise-{request.shard_id}-{uuid.uuid4().hex[:12]}-verifier"
        verifier_id = separate_verifier.clone_container(
            api, box.id, trial.verifier_image or "", name, trial.env
        )
        try:
            notes = separate_verifier.copy_paths(api, box.id, verifier_id, copies)
            if not copies:
                notes.append("no artifacts declared and no working directory: nothing copied")
            pid = int(api.inspect_container(verifier_id)["State"].get("Pid") or 0)
            cgroup_dir = (
                container_memory_dir(pid, CGROUP_ROOT, self.cgroup_version)
                if self.cgroup_version is not None
                else None
            )
            vbox = TrialContainer(api, verifier_id, cgroup_dir, pid)
            left = integrity.install_tests(vbox, trial.task.tests_dirs)
            row["environment_tampered"] = integrity.tampered_text(left)
            self._verifier(row, trial, vbox, scratch / "verifier", vbox.oom_kills(), secrets)
            integrity.judge_tampering(row, self.tampered_environment)
            for note in notes:
                row["error"] = join_notes(row["error"], f"separate verifier: {note}")
        finally:
            row["error"] = join_notes(row["error"], remove_trial_container(api, verifier_id))

    def _oracle(self, trial: TrialPlan, box: TrialContainer, scratch: Path) -> AgentOutcome:
        """Harbor's oracle: ``solution/`` at /solution, ``/solution/solve.sh`` run with
        ``[solution].env``, its output in /logs/agent/oracle.txt."""
        task = trial.task
        if not task.has_solution:
            return AgentOutcome(status="agent_error", error="the task has no solution/solve.sh")
        box.api.put_archive(box.id, "/", tar_dir(task.solution_dir, "solution", ("solve.sh",)))
        run = box.run(
            "(/solution/solve.sh) > /logs/agent/oracle.txt 2>&1",
            user=trial.agent_user,
            env={**trial.solution_env, "DEBIAN_FRONTEND": "noninteractive"},
            timeout_s=trial.agent_time_limit_s,
            on_timeout="all",
        )
        outcome = AgentOutcome(
            exit_code=run.exit_code,
            stdout=read_tail(scratch / "agent" / "oracle.txt"),
            stopped=run.killed or not run.timed_out,
            sigkilled=run.exit_code == 137 and not run.timed_out,
        )
        if run.timed_out:
            outcome.status = "timeout"
            outcome.error = f"the agent phase ran past its {trial.agent_time_limit_s:g}s limit"
        return outcome

    def _verifier(
        self,
        row: dict[str, Any],
        trial: TrialPlan,
        box: TrialContainer,
        logs: Path,
        ooms_before: int | None,
        secrets: Mapping[str, str],
    ) -> None:
        """``/tests/test.sh`` (its tests installed by the caller) under the verifier's limit,
        then its reward."""
        for entry in logs.iterdir():  # nothing the agent left there counts
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink(missing_ok=True)
        limit = row["verifier_time_limit_s"]
        run = box.run(
            "(/tests/test.sh) > /logs/verifier/test-stdout.txt 2>&1",
            user=trial.verifier_user,
            env=trial.verifier_env,
            timeout_s=limit,
            on_timeout="none",
        )
        row["verifier_exit_code"] = run.exit_code
        row["verifier_duration_s"] = run.duration_s
        output = read_tail(logs / "test-stdout.txt")
        row["verifier_output_tail"] = (
            contract.tail(contract.redact(output, secrets)) if output is not None else None
        )
        ooms = box.oom_kills()
        oom = (
            ooms > ooms_before
            if ooms is not None and ooms_before is not None
            else run.exit_code == 137 and not run.timed_out
        )
        problem = None
        if run.timed_out:
            problem = f"the verifier ran past its {limit:g}s limit"
        else:
            rewards = read_rewards(logs)
            row["rewards_json"] = rewards.to_json()
            problem = rewards.problem
            if rewards.values is not None:
                reward, problem = scoring_reward(rewards.values, self.reward_key)
        if oom:
            message = "the kernel killed a process of the verifier phase at the memory limit"
            if row["status"] is None:
                error = join_notes(message, problem, row["error"])
                row.update(status="oom_killed", phase="verifier", error=error)
            else:
                row["error"] = join_notes(row["error"], f"verifier: {message}")
        elif problem:
            problem = join_notes(problem, offline_cause(trial.task.folder, trial.network))
            if row["status"] is None:
                row.update(
                    status="verifier_error",
                    phase="verifier",
                    error=join_notes(problem, row["error"]),
                )
            else:
                row["error"] = join_notes(row["error"], f"verifier: {problem}")
        elif row["status"] is None:
            row.update(status="ok", reward=reward)
        else:
            verdict_after_agent_failure(row, reward)


def agent_oom_outcome(
    status: str | None, error: str | None, *, alive: bool, limit_bytes: int | None
) -> tuple[str | None, str | None, bool]:
    """``(status, error, oom_in_agent)`` of an agent phase in which the kernel OOM-killed a
    process at the memory limit. The container and its main process still alive: the task's
    own event — the status stays the agent's (the verifier decides), the kill is the flag
    ``oom_in_agent`` and a note. Otherwise the kill ended the trial's container: the
    infrastructure outcome ``oom_killed``, unless the agent phase had already timed out."""
    if alive:
        note = (
            f"the kernel killed a process of the agent phase at the memory limit "
            f"({limit_bytes} bytes); the container lived on (oom_in_agent)"
        )
        return status, join_notes(error, note), True
    if status == "timeout":
        return status, error, False
    note = (
        f"the kernel killed a process of the agent phase at the memory limit ({limit_bytes} "
        "bytes), which ended the container"
    )
    return "oom_killed", join_notes(note, error), False


def verdict_after_agent_failure(row: dict[str, Any], reward: float) -> bool:
    """Score a trial whose agent phase ended in ``timeout`` or ``agent_error`` (not a
    crash) by the verifier's valid ``reward``: ``status`` ``ok``, ``reward`` set, the agent's
    outcome kept in ``verified_after`` (:mod:`evalnoise.verified_after`). Returns whether the
    row was such a trial; any other row is left as it is."""
    if row["status"] not in VERIFIED_AFTER:
        return False
    from evalnoise.outcomes import crash_signal  # pandas: only on this path

    if crash_signal(row.get("exit_code")) is not None:
        return False
    row.update(verified_after=row["status"], status="ok", reward=reward)
    return True


@dataclass(frozen=True)
class TrialPlan:
    """What the phases of one trial need of its task, resolved."""

    task: HarborTask
    kind: str
    env: dict[str, str]
    verifier_env: dict[str, str]
    solution_env: dict[str, str]
    allocation: Allocation
    cap_add: tuple[str, ...] = ()
    #: the image's configured USER (None: root), the default of both phases
    image_user: str | None = None
    network: TrialNetwork = NO_NETWORK
    #: the separate verifier's image (shared mode: the task's, unused)
    verifier_image: str | None = None

    @property
    def agent_time_limit_s(self) -> float:
        return self.allocation.time_limit_s

    @property
    def agent_user(self) -> str:
        return self.task.agent_user or self.image_user or "0:0"

    @property
    def verifier_user(self) -> str:
        return self.task.verifier_user or self.image_user or "0:0"
