"""Environment trials: the agent, then the verifier, in one fresh container of the task's image.

:class:`EnvironmentBackend` runs trials of Harbor tasks (:mod:`evalnoise.tasks.harbor_task`) with
the same interface as the QA backends (:class:`evalnoise.runner.trial.Backend`): a
:class:`~evalnoise.runner.trial.TrialRequest` whose ``task`` is a row of
:func:`evalnoise.tasks.harbor_folders.environment_task_rows` in, one trial row out.

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
   (SIGKILL; the idle main process stays) and the agent phase ends in ``timeout`` — and, as
   in Harbor, the verifier still runs (see "The verdict after an agent failure").
4. The **verifier phase**: the scratch ``/logs/verifier`` is emptied (nothing the agent put
   there counts), ``/tests`` is removed and written afresh from ``tests/`` (read-only files),
   after what the verifier executes was compared with a snapshot taken before the agent
   phase (:mod:`evalnoise.runner.verifier_integrity`: a change is the row's
   ``environment_tampered`` and, by default, the agent's failure); in Harbor's
   ``separate`` mode the verifier runs instead in a fresh container of the verifier's image
   with the agent's artifacts or working directory copied in. ``bash -c /tests/test.sh`` runs
   (output in ``/logs/verifier/test-stdout.txt``) under ``[verifier].timeout_sec`` × the time
   factor, as ``[verifier].user``, with ``[verifier].env``. Its exit code is recorded and
   otherwise ignored (Harbor's rule); the reward comes from the reward files
   (:mod:`evalnoise.runner.rewards`).
5. The container is removed (force) in a ``finally``, the scratch directory deleted.

A task's ``[environment].healthcheck`` is polled before step 3 (:mod:`evalnoise.runner.
healthcheck`); a multi-step task (``[[steps]]``) runs steps 3 and 4 once per step in the same
container (:mod:`evalnoise.runner.steps`); a task's extra services start before step 2 and
are removed after step 5 (:mod:`evalnoise.runner.compose_services`), on the trial's network
(:mod:`evalnoise.runner.trial_network`, created before them and removed last).

**Outcomes** (the first failure decides the status; later ones are added to ``error``):

==================================================  ==============  ============
what happened                                       status          phase
==================================================  ==============  ============
image build failed / image missing                  infra_error     build
task folder changed or unreadable, a ``${VAR}``     infra_error     setup
of the task's env unset, container not created
the trial's network not created; a service of the   infra_error     setup
task's compose file failed to start or become
healthy; its healthcheck (or a step's, or a
step's ``setup.sh``) failed
agent phase past its deadline, no valid reward      timeout         agent
a process OOM-killed during the agent phase that    oom_killed      agent
ended the container or its main process
external agent: protocol broken, non-zero exit,     agent_error     agent
no ``done``; exit 75 (its model service is gone)    infra_error     agent
oracle: the task has no ``solution/solve.sh``       agent_error     agent
external agent's command cannot be started         infra_error     agent
the container died during the agent phase          infra_error     agent
verifier past its deadline                          verifier_error  verifier
a process OOM-killed during the verifier phase      oom_killed      verifier
no reward file, empty, not a number, outside        verifier_error  verifier
[0, 1], no scoring reward among named ones
the agent changed what the verifier executes        agent_error     verifier
(``environment_tampered``; unless the backend's
``tampered_environment`` is ``verdict``)
engine error (it still answers)                     infra_error     the phase
a valid reward after an agent phase without         ok              —
failure
a valid reward after an agent phase that ended in   ok              agent
``timeout`` or ``agent_error`` (not a crash)
==================================================  ==============  ============

**The verdict after an agent failure** (a ``timeout`` or ``agent_error`` scored by a valid
reward, kept as ``verified_after``) and how OOM kills are told apart: :mod:`evalnoise.runner.
environment_phases`.

``reward`` holds the scoring reward only when the status is ``ok``; whatever the status, the
named rewards the verifier left are in ``rewards_json``. An
engine that stops answering raises :class:`~evalnoise.runner.trial.EngineUnavailable` and the
in-flight trial produces no row.

**Sandbox**: the network the task declared, as the run allows it
(:mod:`evalnoise.runner.trial_network`: none — the container's own loopback only — for a
``no-network`` task or an ``offline`` run, else a network of the trial's own or a named one;
the row's ``network`` says which; a task's extra services, :mod:`evalnoise.runner.
compose_services`, join that network); ``cap_drop=ALL``. The runner itself switches users with
``docker exec --user``, which the runtime does before it applies the capability sets, so that
needs none. A task that
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
import dataclasses
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
from evalnoise.runner import verifier_integrity as integrity
from evalnoise.runner.compose_services import (
    ComposeProject,
    ServicesFailed,
    project_name,
    start_services,
    stop_services,
)
from evalnoise.runner.docker_backend import SHARD_LABEL
from evalnoise.runner.engine import (
    connect_engine,
    container_network,
    join_notes,
    one_line,
    ping_engine,
    remove_trial_container,
)
from evalnoise.runner.environment_phases import TrialPhases, TrialPlan
from evalnoise.runner.exec_protocol import DEFAULT_OUTPUT_BYTES
from evalnoise.runner.fork_server import MARKER_VARIABLE, SCRATCH_TAG, ForkServers
from evalnoise.runner.host_processes import kill_marked
from evalnoise.runner.peak_memory import CGROUP_ROOT, cgroup_version, container_memory_dir
from evalnoise.runner.resources import docker_resource_kwargs
from evalnoise.runner.task_images import TaskImage, TaskImageCache
from evalnoise.runner.trial import (
    TrialRequest,
    finish_row,
    start_row,
    task_allocation,
    utc_now,
)
from evalnoise.runner.trial_container import TrialContainer
from evalnoise.runner.trial_network import (
    NetworkChoice,
    TrialNetwork,
    TrialNetworks,
)
from evalnoise.tasks.harbor_folders import load_harbor_task
from evalnoise.tasks.harbor_task import HarborTask, HarborTaskError, resolve_env, templated_names

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
    "verified_after",
    "oom_in_agent",
    "step_rewards_json",
    "environment_tampered",
)
#: What root needs in a task that switches users: to reach, chown and chmod the other
#: user's files (CHOWN, DAC_OVERRIDE, FOWNER) and to become that user itself (SETUID, SETGID:
#: a verifier's ``su``/``runuser``). Only processes running as root ever hold them.
USER_SWITCH_CAPS = ("CHOWN", "DAC_OVERRIDE", "FOWNER", "SETGID", "SETUID")
LOG_MAX_SIZE = "1m"
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


class EnvironmentBackend(TrialPhases):
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
        network: NetworkChoice | None = None,
        tampered_environment: str = "failure",
    ) -> None:
        if tampered_environment not in integrity.TAMPERED_CHOICES:
            raise ValueError(
                f"tampered_environment must be one of {integrity.TAMPERED_CHOICES}, "
                f"got {tampered_environment!r}"
            )
        engine = connect_engine(client, max_pool_size=max_pool_size)
        self.client, self.host, self.host_cpus = engine.client, engine.host, engine.host_cpus
        #: the cgroup version of /sys/fs/cgroup when the engine is local (None: not readable)
        self.cgroup_version = cgroup_version(CGROUP_ROOT) if engine.local else None
        self.reward_key = reward_key
        # the key decides which trials are ok: it is part of the journal header (the
        # backend's name), so a changed key starts the shard's trials afresh
        self.name = NAME if reward_key is None else f"{NAME}:reward={reward_key}"
        network = network or NetworkChoice()
        if not network.default:  # a public task's trials differ: so does the journal's header
            self.name += f":network={network.key()}"
        self.networks = TrialNetworks(self.client, network)
        #: what a trial whose agent changed what the verifier executes scores as
        #: (:func:`evalnoise.runner.verifier_integrity.judge_tampering`); like the key, part
        #: of the journal header
        self.tampered_environment = tampered_environment
        if tampered_environment != "failure":
            self.name += f":tampered={tampered_environment}"
        self.sandbox = sandbox
        self.scratch_root = Path(scratch_root or tempfile.gettempdir())
        self.environ = os.environ if environ is None else environ
        self.images = images or TaskImageCache(client=self.client, base=base, build_args=build_args)
        self._tasks: dict[str, HarborTask] = {}
        self._tasks_lock = threading.Lock()
        self._agents: dict[int, str] = {}  # external agent process group -> shard id
        self._agents_lock = threading.Lock()
        #: warm processes of the agents whose spec says fork_server (one per shard and agent)
        self.fork_servers = ForkServers(self.scratch_root)

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
        """Kill this shard's external agents and their fork servers, and remove its
        containers."""
        import docker.errors

        with self._agents_lock:
            groups = [g for g, shard in self._agents.items() if shard == shard_id]
        for group in groups:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(group, signal.SIGKILL)
        self.fork_servers.kill(shard_id)
        for container_id in self._shard_container_ids(shard_id):
            with contextlib.suppress(docker.errors.APIError):
                self.client.api.remove_container(container_id, force=True, v=True)

    def cleanup(self, shard_id: str) -> int:
        """Remove what a killed run of ``shard_id`` left: containers (by their shard label),
        external agent processes (recognised by their task file in the shard's scratch
        directories, or their fork server's directory) and the scratch directories. The
        shard's fork servers of this backend are stopped (the shard ends, or starts)."""
        import docker.errors

        self.fork_servers.close(shard_id)
        removed = 0
        for container_id in self._shard_container_ids(shard_id):
            with contextlib.suppress(docker.errors.NotFound):
                self.client.api.remove_container(container_id, force=True, v=True)
                removed += 1
        removed += self.networks.cleanup(shard_id)  # after the containers on them
        stale = [p for p in self.scratch_root.glob(f"evalnoise-env.{shard_id}.*") if p.is_dir()]
        if stale:
            # an external agent a killed run left: its task file points into its scratch
            removed += kill_marked(p / "task.json" for p in stale)
            tag = f"evalnoise-env.{shard_id}.{SCRATCH_TAG}"
            servers = [p for p in stale if p.name.startswith(tag)]
            removed += kill_marked(servers, variable=MARKER_VARIABLE)
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
        row["network"] = None  # until the trial's network is known (evalnoise.runner.trial_network)
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
        verifier_image = self._verifier_image(task, image)
        if not verifier_image.ok:
            self.check()
            error = f"the separate verifier's image: {verifier_image.failure_text()}"
            row.update(status="infra_error", phase="build", error=error)
            return finish_row(row, secrets)
        cap_add = self.sandbox.cap_add
        if switches_users(task, image):
            cap_add += tuple(c for c in self.sandbox.user_switch_caps if c not in cap_add)
        services = task.compose_file is not None
        try:
            network = self.networks.open(task.network_mode, request.shard_id, services=services)
        except Exception as exc:  # the engine's refusal: the trial cannot start
            self.check()
            row.update(status="infra_error", phase="setup", error=f"network: {one_line(exc)}")
            return finish_row(row, secrets)
        row["network"] = network.label
        trial = TrialPlan(
            task, kind, env, verifier_env, solution_env, allocation, cap_add, image.user, network
        )
        trial = dataclasses.replace(trial, verifier_image=verifier_image.tag)
        project = None
        try:
            if services:
                project = self._start_services(request, trial, image)
                trial = dataclasses.replace(trial, env={**project.main_env, **trial.env})
            return self._run_container(request, row, trial, image, secrets)
        except ServicesFailed as exc:
            self.check()
            row.update(status="infra_error", phase="setup", error=one_line(exc, 2000))
            return finish_row(row, secrets)
        finally:
            ignored = project.main_ignored if project is not None else ()
            notes = (
                "keys of main in the task's compose file not applied: " + ", ".join(ignored)
                if ignored
                else None,
                stop_services(project),
                self.networks.close(network),
            )
            row["error"] = join_notes(row["error"], *notes)

    def _start_services(
        self, request: TrialRequest, trial: TrialPlan, image: TaskImage
    ) -> ComposeProject:
        """The task's extra services on the trial's network (:mod:`evalnoise.runner.
        compose_services`), their compose files in a scratch directory of the trial's."""
        assert trial.task.compose_file is not None
        scratch = Path(
            tempfile.mkdtemp(prefix=f"evalnoise-env.{request.shard_id}.", dir=self.scratch_root)
        )
        try:
            return start_services(
                compose_file=trial.task.compose_file,
                image=image.tag,
                network=trial.network.mode,
                shard_id=request.shard_id,
                project_name=project_name(trial.network.mode),
                scratch=scratch,
                cpus=trial.task.cpus,
                memory_mb=trial.task.memory_mb,
                task_env=trial.env,
            )
        except BaseException:
            shutil.rmtree(scratch, ignore_errors=True)
            raise

    def _verifier_image(self, task: HarborTask, image: TaskImage) -> TaskImage:
        """The separate verifier's image (:mod:`evalnoise.tasks.verifier_setup`): its own
        ``docker_image``, built from ``tests/Dockerfile``, or the task's; the task's image
        in shared mode."""
        setup = task.verifier
        if not setup.separate or not (setup.docker_image or setup.dockerfile):
            return image
        own = dataclasses.replace(
            task,
            name=f"{task.name}-verifier",
            docker_image=setup.docker_image,
            build_context=None if setup.docker_image else task.tests_dir,
            digest=f"{task.digest}:verifier",
        )
        return self.images.get(own)

    def _run_container(
        self,
        request: TrialRequest,
        row: dict[str, Any],
        trial: TrialPlan,
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
                network_mode=trial.network.mode,
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
                    **container_network(trial.network.mode),
                    **_aliases(api, trial.network),
                )["Id"]
                if trial.network.also is not None:
                    api.connect_container_to_network(container_id, trial.network.also)
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


def _aliases(api: Any, network: TrialNetwork) -> dict[str, Any]:
    """``create_container``'s networking config: on a network of the trial's own, the
    container answers to ``main`` too (Harbor's name for it, which services may use)."""
    if network.created is None:
        return {}
    endpoint = api.create_endpoint_config(aliases=["main"])
    return {"networking_config": api.create_networking_config({network.mode: endpoint})}


def switches_users(task: HarborTask, image: TaskImage) -> bool:
    """Whether a task runs as more than one user: it names ``[agent].user`` or
    ``[verifier].user``, or its image's ``USER`` is not root (then a root phase handles the
    other user's files, or the other way round)."""
    if task.agent_user or task.verifier_user:
        return True
    return (image.user or "root").split(":")[0] not in ("root", "0")
