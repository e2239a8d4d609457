"""Environment trials: the agent, then the verifier, in one fresh container of the task's image.

:class:`EnvironmentBackend` runs trials of Harbor tasks (:mod:`evalnoise.tasks.harbor`) with
the same interface as the QA backends (:class:`evalnoise.runner.trial.Backend`): a
:class:`~evalnoise.runner.trial.TrialRequest` whose ``task`` is a row of
:func:`evalnoise.tasks.harbor.environment_task_rows` in, one trial row out.

**One trial.**

1. The task's image (:mod:`evalnoise.runner.task_images`, built once per task and cached). A
   failed build is ``infra_error`` (``phase`` = ``build``) with the build log's tail.
2. One container, created fresh: the resource profile applied to the task's ``cpus`` and
   ``memory_mb`` (guarantee and hard limit, :func:`evalnoise.runner.resources.allocate`,
   the applied values in the row); ``[environment].env`` (``${VAR}`` templates resolved from
   the runner's environment, their values redacted from the row); the working directory
   ``[environment].workdir``; the hostname :data:`TRIAL_HOSTNAME` in every trial (a shell
   prompt shows it: an id-named host would make an agent's view differ from trial to
   trial); and an idle main process — the engine's init (``init=True``)
   running ``sleep infinity`` — that stops at once on SIGTERM and is removed with force
   (SIGKILL), so there is no stop grace period. ``/logs/agent`` and ``/logs/verifier`` are
   bind mounts of a per-trial scratch directory on the host.
3. The **agent phase**, under the agent timeout (``[agent].timeout_sec`` × the profile's time
   factor), as ``[agent].user`` (default: the image's user):

   - ``oracle`` — ``solution/`` is copied to ``/solution`` and ``bash -c /solution/solve.sh``
     runs, its output in ``/logs/agent/oracle.txt``, with ``[solution].env`` (Harbor's
     ``OracleAgent``; its exit code is recorded, not judged: the verifier decides);
   - ``null`` — nothing;
   - an **external** agent (a spec with a ``command``) — a host subprocess speaking the exec
     protocol (:mod:`evalnoise.runner.exec_protocol`); each of its commands runs in the
     container with ``docker exec``. The deadline covers the whole exchange: at the
     deadline the subprocess and every command are killed.

   Past the deadline every process the agent phase started in the container is killed
   (SIGKILL; the idle main process stays) and the trial is ``timeout`` — and, as in Harbor,
   the verifier still runs: its rewards are kept in ``rewards_json``.
4. The **verifier phase**: the scratch ``/logs/verifier`` is emptied (nothing the agent put
   there counts), ``tests/`` is copied to ``/tests`` and ``bash -c /tests/test.sh`` runs
   (output in ``/logs/verifier/test-stdout.txt``) under ``[verifier].timeout_sec`` × the time
   factor, as ``[verifier].user``, with ``[verifier].env``. Its exit code is recorded and
   otherwise ignored (Harbor's rule); the reward comes from the reward files
   (:mod:`evalnoise.runner.rewards`).
5. The container is removed (force) in a ``finally``, the scratch directory deleted.

**Outcomes** (the first failure decides the status; later ones are added to ``error``):

==================================================  ==============  ============
what happened                                       status          phase
==================================================  ==============  ============
image build failed / image missing                  infra_error     build
task folder changed or unreadable, a ``${VAR}``     infra_error     setup
of the task's env unset, container not created
agent phase past its deadline                       timeout         agent
a process OOM-killed during the agent phase         oom_killed      agent
external agent: protocol broken, non-zero exit,     agent_error     agent
no ``done``; exit 75 (its model service is gone)    infra_error     agent
oracle: the task has no ``solution/solve.sh``       agent_error     agent
external agent's command cannot be started         infra_error     agent
the container died during the agent phase          infra_error     agent
verifier past its deadline                          verifier_error  verifier
a process OOM-killed during the verifier phase      oom_killed      verifier
no reward file, empty, not a number, outside        verifier_error  verifier
[0, 1], no scoring reward among named ones
engine error (it still answers)                     infra_error     the phase
a valid reward after an agent phase without         ok              —
failure
==================================================  ==============  ============

``reward`` holds the scoring reward only when the status is ``ok``; whatever the status, the
named rewards the verifier left are in ``rewards_json`` (so an agent timeout keeps the
verifier's verdict for a score policy that wants it, without it ever passing for a score). An
engine that stops answering raises :class:`~evalnoise.runner.trial.EngineUnavailable` and the
in-flight trial produces no row.

**OOM kills** are counted in the container's cgroup (:func:`evalnoise.runner.container_procs.
oom_kills`) before and after each phase, so the phase is known even when the process the
kernel killed was a child of the command the runner started. Without a readable cgroup (a
remote engine) a command that died of SIGKILL (exit 137) that the runner did not send counts
as OOM-killed. ``peak_memory_bytes`` is the container cgroup's high-water mark (``memory.peak``
v2, ``memory.max_usage_in_bytes`` v1) over the whole trial, when readable.

**Sandbox**: ``network_mode=none`` always (Harbor's network settings are checked when the task
is loaded); ``cap_drop=ALL``. The runner itself switches users with ``docker exec --user``,
which the runtime does before it applies the capability sets, so that needs none. A task that
runs as more than one user (:func:`switches_users`: ``[agent].user``/``[verifier].user``, or
an image whose ``USER`` is not root) gets :data:`USER_SWITCH_CAPS` back — what a root verifier
needs to read a file the agent's user made private, ``chown`` it, or ``su`` to that user —
and only its root processes hold them (Docker gives non-root users no effective
capabilities). A single-user task keeps none, even as root: root then owns its own files
and nothing more. (The container itself is created as root — its only process is the idle
one — because the engine derives every exec's capabilities from the container's user: a
container created as the image's non-root ``USER`` would leave a root verifier none.)
``Sandbox.cap_add`` adds capabilities to every task. Then
``no-new-privileges``; a PID limit; a writable container layer (the agent must change the
environment); the task's user (the image's ``USER`` or ``[agent].user``/``[verifier].user``),
never the QA sandbox's read-only root and ``nobody``. ``[environment].storage_mb`` is
recorded, not enforced (Harbor does not enforce it on Docker either).

**A remote engine** (``DOCKER_HOST`` on another machine) works with less: the runner cannot
see the container's processes or cgroup there, so a command past its deadline cannot be
killed on its own — a timed-out agent phase then ends the trial without running the verifier
(``error`` says so), a timed-out command of an external agent keeps running — and OOM kills
are inferred from exit code 137, ``peak_memory_bytes`` stays null.

**Row** (:func:`evalnoise.runner.trial.base_row`'s columns plus :data:`EXTRA_COLUMNS`):
``exit_code`` is the agent's (solve.sh's, or the external agent process's; null for
``null``); ``duration_s`` the container's lifetime; ``image``/``image_digest`` the task image's
tag and id; ``stdout_tail`` the agent's output (oracle.txt, or the external agent's protocol
lines), ``stderr_tail`` the external agent's stderr.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import tempfile
import threading
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalnoise.runner import contract
from evalnoise.runner.docker_backend import (
    CGROUP_ROOT,
    SHARD_LABEL,
    cgroup_version,
    container_memory_dir,
)
from evalnoise.runner.engine import (
    connect_engine,
    container_network,
    join_notes,
    one_line,
    ping_engine,
    remove_trial_container,
)
from evalnoise.runner.exec_protocol import DEFAULT_OUTPUT_BYTES
from evalnoise.runner.external_agent import AgentOutcome, run_external_agent
from evalnoise.runner.host_processes import kill_marked
from evalnoise.runner.resources import Allocation, docker_resource_kwargs
from evalnoise.runner.rewards import read_rewards, scoring_reward
from evalnoise.runner.task_images import TaskImage, TaskImageCache
from evalnoise.runner.trial import (
    TrialRequest,
    finish_row,
    start_row,
    task_allocation,
    utc_now,
)
from evalnoise.runner.trial_container import TrialContainer, read_tail, tar_dir
from evalnoise.tasks.harbor import (
    HarborTask,
    HarborTaskError,
    load_harbor_task,
    resolve_env,
    templated_names,
)

NAME = "docker-environment"
AGENT_KINDS = ("oracle", "null", "external")
#: Columns an environment trial row has beyond :func:`evalnoise.runner.trial.base_row`'s.
EXTRA_COLUMNS = (
    "reward",
    "rewards_json",
    "phase",
    "agent_duration_s",
    "verifier_exit_code",
    "verifier_duration_s",
    "verifier_time_limit_s",
    "verifier_output_tail",
    "oom_kills",
    "agent_steps",
    "task_digest",
)
#: What root needs in a task that switches users: to reach, chown and chmod the other
#: user's files (CHOWN, DAC_OVERRIDE, FOWNER) and to become that user itself (SETUID, SETGID:
#: a verifier's ``su``/``runuser``). Only processes running as root ever hold them.
USER_SWITCH_CAPS = ("CHOWN", "DAC_OVERRIDE", "FOWNER", "SETGID", "SETUID")
LOG_MAX_SIZE = "1m"
#: Every environment trial's container: no network but its own loopback (module docstring).
NETWORK_MODE = "none"
_MAIN_COMMAND = ("sleep", "infinity")
#: Every trial container's hostname: the same in every trial, so what an agent sees (a shell
#: prompt shows it) does not vary with the container's id and its trials can repeat.
TRIAL_HOSTNAME = "evalnoise-trial"


def agent_kind(spec: contract.AgentSpec) -> str:
    """Which environment agent a spec is: ``external`` when it has a ``command`` (a host
    program speaking :mod:`evalnoise.runner.exec_protocol`), else its ``builtin``
    (``oracle``, or ``nop``: the null agent), else its name, which must be ``oracle`` or
    ``null``."""
    if spec.command:
        return "external"
    if spec.builtin is not None:
        return "null" if spec.builtin == "nop" else spec.builtin
    if spec.name in ("oracle", "null"):
        return spec.name
    raise ValueError(
        f"agent {spec.name!r}: an environment agent is 'oracle', 'null', or has a command "
        "(an external agent speaking the exec protocol)"
    )


@dataclass(frozen=True)
class Sandbox:
    """Container settings of environment trials beyond the task's and the profile's."""

    pids_limit: int = 1024
    #: capabilities added back after ``cap_drop=ALL`` for every task (none by default)
    cap_add: tuple[str, ...] = ()
    #: added back for a task that switches users (module docstring, "Sandbox")
    user_switch_caps: tuple[str, ...] = USER_SWITCH_CAPS
    #: bytes of a command's output returned to an external agent
    exec_output_bytes: int = DEFAULT_OUTPUT_BYTES


class EnvironmentBackend:
    """Runs environment trials in a Docker engine (``docker.from_env()`` by default).

    ``base`` / ``build_args``: the base image and build arguments of the task images
    (:func:`evalnoise.runner.task_images.ensure_task_image`); ``reward_key``: the named
    reward that scores (:func:`evalnoise.runner.rewards.scoring_reward`); ``sandbox``: the
    container settings. Construction pings the engine (:class:`EngineUnavailable` if it
    does not answer).
    """

    name = NAME

    def __init__(
        self,
        client: Any = None,
        *,
        base: str | None = None,
        build_args: Mapping[str, str] | None = None,
        reward_key: str | None = None,
        sandbox: Sandbox = Sandbox(),
        scratch_root: str | os.PathLike[str] | None = None,
        max_pool_size: int = 32,
        images: TaskImageCache | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        engine = connect_engine(client, max_pool_size=max_pool_size)
        self.client, self.host, self.host_cpus = engine.client, engine.host, engine.host_cpus
        #: the cgroup version of /sys/fs/cgroup when the engine is local (None: not readable)
        self.cgroup_version = cgroup_version(CGROUP_ROOT) if engine.local else None
        self.reward_key = reward_key
        # the key decides which trials are ok: it is part of the journal header (the
        # backend's name), so a changed key starts the shard's trials afresh
        self.name = NAME if reward_key is None else f"{NAME}:reward={reward_key}"
        self.sandbox = sandbox
        self.scratch_root = Path(scratch_root or tempfile.gettempdir())
        self.environ = os.environ if environ is None else environ
        self.images = images or TaskImageCache(client=self.client, base=base, build_args=build_args)
        self._tasks: dict[str, HarborTask] = {}
        self._tasks_lock = threading.Lock()
        self._agents: dict[int, str] = {}  # external agent process group -> shard id
        self._agents_lock = threading.Lock()

    # -- engine health and cleanup ----------------------------------------------------------

    def _track(self, group: int, shard_id: str | None) -> None:
        """Remember (or forget, ``shard_id`` None) a running external agent's process group."""
        with self._agents_lock:
            if shard_id is None:
                self._agents.pop(group, None)
            else:
                self._agents[group] = shard_id

    def check(self) -> None:
        """Raise :class:`EngineUnavailable` unless the engine answers a ping."""
        ping_engine(self.client)

    def _shard_container_ids(self, shard_id: str) -> list[str]:
        found = self.client.api.containers(all=True, filters={"label": f"{SHARD_LABEL}={shard_id}"})
        return [c["Id"] for c in found]

    def abort(self, shard_id: str) -> None:
        """Kill this shard's external agents and remove its containers."""
        import docker.errors

        with self._agents_lock:
            groups = [g for g, shard in self._agents.items() if shard == shard_id]
        for group in groups:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(group, signal.SIGKILL)
        for container_id in self._shard_container_ids(shard_id):
            with contextlib.suppress(docker.errors.APIError):
                self.client.api.remove_container(container_id, force=True, v=True)

    def cleanup(self, shard_id: str) -> int:
        """Remove what a killed run of ``shard_id`` left: containers (by their shard label),
        external agent processes (recognised by their task file in the shard's scratch
        directories) and the scratch directories."""
        import docker.errors

        removed = 0
        for container_id in self._shard_container_ids(shard_id):
            with contextlib.suppress(docker.errors.NotFound):
                self.client.api.remove_container(container_id, force=True, v=True)
                removed += 1
        stale = [p for p in self.scratch_root.glob(f"evalnoise-env.{shard_id}.*") if p.is_dir()]
        if stale:
            # an external agent a killed run left: its task file points into its scratch
            removed += kill_marked(p / "task.json" for p in stale)
            for path in stale:
                shutil.rmtree(path, ignore_errors=True)
                removed += 1
        return removed

    # -- one trial --------------------------------------------------------------------------

    def _task(self, row: Mapping[str, Any]) -> HarborTask:
        """The row's task folder, loaded once per backend; it must still have the digest the
        tasks table recorded. Loaded with public_network="offline": the network check was
        made when the tasks table was built, and the digest proves it is the same folder."""
        folder = str(row["task_dir"])
        with self._tasks_lock:
            task = self._tasks.get(folder)
        if task is None:
            task = load_harbor_task(folder, public_network="offline")
            with self._tasks_lock:
                self._tasks[folder] = task
        expected = row.get("task_digest")
        if expected and expected != task.digest:
            raise ValueError(
                f"task folder {folder} changed after the tasks table was made "
                f"(digest {task.digest[:12]}, table {str(expected)[:12]})"
            )
        return task

    def run_trial(self, request: TrialRequest) -> dict[str, Any]:
        """One environment trial (module docstring); never raises for the trial's own
        failure, only :class:`EngineUnavailable` (no row) and programming errors."""
        spec, row_in = request.agent, request.task
        secrets = dict(request.secrets)
        allocation = task_allocation(request, self.host_cpus)
        row = start_row(request, allocation, backend=self.name, host=self.host)
        row.update(dict.fromkeys(EXTRA_COLUMNS))
        row["image"] = None
        verifier_limit = float(row_in.get("verifier_time_limit_s") or 600.0)
        row["verifier_time_limit_s"] = verifier_limit * request.resource_profile.time_limit_factor
        row["task_digest"] = row_in.get("task_digest")
        try:
            kind = agent_kind(spec)
            task = self._task(row_in)
            env = resolve_env(task.env, self.environ)
            verifier_env = resolve_env(task.verifier_env, self.environ)
            solution_env = resolve_env(task.solution_env, self.environ)
        except KeyError as exc:
            row.update(
                status="infra_error",
                phase="setup",
                error=f"variable {exc.args[0]} of the task's env is not set in the runner's "
                "environment",
            )
            return finish_row(row, secrets)
        except (HarborTaskError, ValueError, OSError) as exc:
            row.update(status="infra_error", phase="setup", error=one_line(exc, 2000))
            return finish_row(row, secrets)
        for mapping, source in (
            (env, task.env),
            (verifier_env, task.verifier_env),
            (solution_env, task.solution_env),
        ):
            for key in templated_names(source):
                secrets[f"env:{key}"] = mapping[key]
        row["task_digest"] = task.digest
        image = self.images.get(task)
        row["image"] = image.tag
        row["image_digest"] = image.image_id
        if not image.ok:
            self.check()  # an engine that went away is not the task's build failure
            row.update(status="infra_error", phase="build", error=image.failure_text())
            return finish_row(row, secrets)
        cap_add = self.sandbox.cap_add
        if switches_users(task, image):
            cap_add += tuple(c for c in self.sandbox.user_switch_caps if c not in cap_add)
        trial = _Trial(task, kind, env, verifier_env, solution_env, allocation, cap_add, image.user)
        return self._run_container(request, row, trial, image, secrets)

    def _run_container(
        self,
        request: TrialRequest,
        row: dict[str, Any],
        trial: _Trial,
        image: TaskImage,
        secrets: dict[str, str],
    ) -> dict[str, Any]:
        import docker.errors
        import requests.exceptions
        from docker.types import LogConfig, Mount

        api = self.client.api
        scratch = Path(
            tempfile.mkdtemp(prefix=f"evalnoise-env.{request.shard_id}.", dir=self.scratch_root)
        )
        container_id = None
        phase = "setup"
        texts: dict[str, str | None] = {"stdout": None, "stderr": None}
        try:
            for name in ("agent", "verifier"):
                (scratch / name).mkdir()
                os.chmod(scratch / name, 0o777)  # the task's user may be anyone
            os.chmod(scratch, 0o755)
            host_config = api.create_host_config(
                network_mode=NETWORK_MODE,
                cap_drop=["ALL"],
                cap_add=list(trial.cap_add) or None,
                security_opt=["no-new-privileges"],
                pids_limit=self.sandbox.pids_limit,
                init=True,
                mounts=[
                    Mount("/logs/agent", str(scratch / "agent"), type="bind", read_only=False),
                    Mount(
                        "/logs/verifier", str(scratch / "verifier"), type="bind", read_only=False
                    ),
                ],
                log_config=LogConfig(
                    type="json-file", config={"max-size": LOG_MAX_SIZE, "max-file": "1"}
                ),
                **docker_resource_kwargs(trial.allocation),
            )
            try:
                container_id = api.create_container(
                    image=image.tag,
                    entrypoint=list(_MAIN_COMMAND),
                    command=[],
                    name=f"evalnoise-{request.shard_id}-{uuid.uuid4().hex[:12]}",
                    labels={
                        SHARD_LABEL: request.shard_id,
                        "evalnoise.agent": request.agent.name,
                        "evalnoise.task_id": str(request.task["task_id"]),
                        "evalnoise.trial": str(request.trial),
                        "evalnoise.attempt": str(request.attempt),
                    },
                    environment=trial.env or None,
                    # root, whatever the image's USER: the engine derives every exec's
                    # capabilities from the container's user, and a root phase of a task that
                    # switches users needs its own (each phase runs as its user, below)
                    user="0:0",
                    working_dir=trial.task.workdir,
                    hostname=TRIAL_HOSTNAME,
                    host_config=host_config,
                    **container_network(NETWORK_MODE),
                )["Id"]
                api.start(container_id)
            except docker.errors.APIError as exc:
                self.check()
                row.update(status="infra_error", phase="setup", error=f"container: {one_line(exc)}")
            else:
                started = time.monotonic()
                row["started_at"] = utc_now()
                main_pid = int(api.inspect_container(container_id)["State"].get("Pid") or 0)
                cgroup_dir = (
                    container_memory_dir(main_pid, CGROUP_ROOT, self.cgroup_version)
                    if self.cgroup_version is not None
                    else None
                )
                box = TrialContainer(api, container_id, cgroup_dir, main_pid)
                phase = "agent"
                self._phases(request, row, trial, box, scratch, secrets, texts)
                phase = "verifier"
                row["duration_s"] = time.monotonic() - started
                row["peak_memory_bytes"] = box.peak()
        except (
            docker.errors.DockerException,
            requests.exceptions.RequestException,
            OSError,
            RuntimeError,
        ) as exc:
            self.check()  # raises EngineUnavailable: no row for this trial
            row.update(status="infra_error", phase=phase, error=f"engine error: {one_line(exc)}")
        finally:
            if container_id is not None:
                row["error"] = join_notes(row["error"], remove_trial_container(api, container_id))
            shutil.rmtree(scratch, ignore_errors=True)
        row["ended_at"] = utc_now()
        return finish_row(row, secrets, stdout=texts["stdout"], stderr=texts["stderr"])

    def _phases(
        self,
        request: TrialRequest,
        row: dict[str, Any],
        trial: _Trial,
        box: TrialContainer,
        scratch: Path,
        secrets: dict[str, str],
        texts: dict[str, str | None],
    ) -> None:
        """The agent phase, then the verifier phase; fills ``row`` (module docstring)."""
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
            )
            row.update(outcome.usage)
            row["agent_steps"] = outcome.steps
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
        if oom and status != "timeout":
            status = "oom_killed"
            error = join_notes(
                f"the kernel killed a process of the agent phase at the memory limit "
                f"({trial.allocation.memory_limit_bytes} bytes)",
                error,
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
        self._verifier(row, trial, box, scratch / "verifier", ooms_agent, secrets)
        total = box.oom_kills()
        if total is not None and ooms_start is not None:
            row["oom_kills"] = total - ooms_start

    def _oracle(self, trial: _Trial, box: TrialContainer, scratch: Path) -> AgentOutcome:
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
        trial: _Trial,
        box: TrialContainer,
        logs: Path,
        ooms_before: int | None,
        secrets: Mapping[str, str],
    ) -> None:
        """tests/ to /tests, ``/tests/test.sh`` under the verifier's limit, then its reward."""
        task = trial.task
        for entry in logs.iterdir():  # nothing the agent left there counts
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink(missing_ok=True)
        box.api.put_archive(box.id, "/", tar_dir(task.tests_dir, "tests", ("test.sh",)))
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


@dataclass(frozen=True)
class _Trial:
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

    @property
    def agent_time_limit_s(self) -> float:
        return self.allocation.time_limit_s

    @property
    def agent_user(self) -> str:
        return self.task.agent_user or self.image_user or "0:0"

    @property
    def verifier_user(self) -> str:
        return self.task.verifier_user or self.image_user or "0:0"


def switches_users(task: HarborTask, image: TaskImage) -> bool:
    """Whether a task runs as more than one user: it names ``[agent].user`` or
    ``[verifier].user``, or its image's ``USER`` is not root (then a root phase handles the
    other user's files, or the other way round)."""
    if task.agent_user or task.verifier_user:
        return True
    return (image.user or "root").split(":")[0] not in ("root", "0")
