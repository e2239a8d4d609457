"""External environment agents: a host program that works in the task's container through
the exec protocol (:mod:`evalnoise.runner.exec_protocol`, docs/agent-contract.md).

:func:`run_external_agent` starts the agent's ``command`` on the host with a clean environment
(``PATH``, ``LANG``, a fresh ``HOME``, its own ``env``, secrets and run-time variables, and the
contract's ``EVALNOISE_*`` variables: the instruction is ``EVALNOISE_QUESTION`` and the task
file's ``question``), reads its requests line by line from its stdout, runs each ``exec`` in
the container (:class:`evalnoise.runner.trial_container.TrialContainer`) and answers on its
stdin, until ``done``, its exit, a protocol error or the deadline, which covers the whole
exchange: the agent's own thinking as well as its commands. :class:`AgentOutcome` is what the
agent phase came to — its status is set only when the phase failed — and is also what the
oracle phase reports.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import shlex
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalnoise.runner import contract
from evalnoise.runner.actions import ActionRecorder
from evalnoise.runner.agent_failures import harbor_python, reported_failure
from evalnoise.runner.engine import join_notes, one_line
from evalnoise.runner.exec_protocol import (
    MAX_LINE_BYTES,
    PROTOCOL,
    CappedOutput,
    Done,
    Upload,
    parse_message,
    response,
)
from evalnoise.runner.fork_server import ForkServerFailed, popen_agent
from evalnoise.runner.host_processes import host_environment
from evalnoise.runner.trial import TrialRequest
from evalnoise.runner.trial_container import KILL_GRACE_S, TrialContainer, read_tail


@dataclass
class AgentOutcome:
    """The agent phase's result: a status only if it failed."""

    status: str | None = None
    error: str | None = None
    exit_code: int | None = None
    stdout: str | None = None
    stderr: str | None = None
    #: False when a timed-out agent's processes could not be stopped
    stopped: bool = True
    #: a command died of SIGKILL the runner did not send (OOM evidence without a cgroup)
    sigkilled: bool = False
    steps: int | None = None
    usage: dict[str, int | None] = field(default_factory=dict)
    #: the requests the runner carried out, normalised (:mod:`evalnoise.runner.actions`);
    #: None: not recorded
    actions: list[str] | None = None


#: In an external agent's command: the Python interpreter the runner runs in.
PYTHON = "{python}"
#: In an external agent's command: Harbor's Python (tools/install-harbor.sh's wrapper).
HARBOR_PYTHON = "{harbor_python}"


def host_command(command: tuple[str, ...] | list[str], cwd: str | None = None) -> list[str]:
    """The command as started: :data:`PYTHON` becomes this interpreter (the project's
    environment, where the agents' helpers import), and an argument naming an existing file
    relative to the runner's working directory (``agents/shell_agent/agent.py``) becomes
    absolute (the agent starts in a fresh home). Resolved at start, so the agent spec — part
    of a trial's identity — holds no machine's paths."""
    import sys

    base = Path(cwd or os.getcwd())
    out = []
    for i, part in enumerate(command):
        if part == PYTHON:
            out.append(sys.executable)
        elif part == HARBOR_PYTHON:
            out.append(harbor_python())
        elif i > 0 and not os.path.isabs(part) and "/" in part and (base / part).is_file():
            out.append(str(base / part))
        else:
            out.append(part)
    return out


def exit_status(returncode: int | None) -> int | None:
    """A subprocess's exit status as a shell reports it (killed by signal N → 128 + N)."""
    if returncode is None:
        return None
    return 128 - returncode if returncode < 0 else returncode


def run_external_agent(
    request: TrialRequest,
    box: TrialContainer,
    scratch: Path,
    *,
    user: str,
    workdir: str | None,
    time_limit_s: float,
    output_bytes: int,
    register: Callable[[int], None] = lambda pid: None,
    unregister: Callable[[int], None] = lambda pid: None,
    start: Callable[..., Any] = popen_agent,
) -> AgentOutcome:
    """Run ``request.agent`` (a spec with a ``command``) against the container ``box`` until
    it says ``done``, exits, breaks the protocol or runs out of ``time_limit_s``; each of its
    commands runs as ``user``. ``scratch`` is a private host directory (its HOME, task file
    and stderr). ``register``/``unregister`` receive the agent's process group id (so a
    stopping shard can kill it). ``start(command, env, cwd, stderr, deadline)`` makes the
    agent's process: a fresh one (:func:`~evalnoise.runner.fork_server.popen_agent`), or a
    child of the shard's fork server (:mod:`evalnoise.runner.fork_server`). The outcome's
    status is None when the agent did its part."""
    spec, limit = request.agent, time_limit_s
    deadline = time.monotonic() + limit
    home = scratch / "home"
    payload, env = _agent_setup(request, scratch, home, user=user, workdir=workdir, limit=limit)
    outcome = AgentOutcome(steps=0)
    recorder = ActionRecorder.for_trial(
        box, scratch=str(scratch), home=str(home), task_dir=payload["task_dir"], workdir=workdir
    )
    outcome.actions = recorder.actions
    transcript = CappedOutput(2 * contract.TAIL_BYTES)
    stderr_path = scratch / "agent-stderr"
    with open(stderr_path, "wb") as err:
        try:
            proc = start(host_command(spec.command), env, home, err, deadline)
        except TimeoutError as exc:  # a fork server still importing at the deadline
            return AgentOutcome(status="timeout", error=f"external agent: {exc}")
        except ForkServerFailed as exc:  # its fork server died: the agent's own process
            return AgentOutcome(status="agent_error", error=str(exc))
        except OSError as exc:
            return AgentOutcome(
                status="infra_error", error=f"external agent could not start: {exc}"
            )
    register(proc.pid)
    reader = LineReader(proc.stdout)
    record: dict[str, Any] | None = None
    try:
        while True:
            try:
                line = reader.readline(deadline)
            except TimeoutError:
                outcome.status = "timeout"
                break
            if line is None:
                break  # the agent closed its stdout: it ended
            transcript.write(line + b"\n")
            try:
                message = parse_message(line)
            except ValueError as exc:
                outcome.status, outcome.error = "agent_error", f"exec protocol: {exc}"
                break
            if isinstance(message, Done):
                record = message.record
                break
            outcome.steps += 1
            recorder.record(message)
            if isinstance(message, Upload):
                _answer(proc, _upload(box, message, deadline))
                continue
            left = deadline - time.monotonic()
            wanted = message.timeout_s if message.timeout_s is not None else left
            output = CappedOutput(output_bytes)
            run = box.run(
                message.command,
                user=user,
                env=None,
                timeout_s=min(wanted, left),
                output=output,
                on_timeout="all" if wanted >= left else "tree",
            )
            if run.exit_code == 137 and not run.timed_out:
                outcome.sigkilled = True
            if run.timed_out and wanted >= left:
                outcome.status, outcome.stopped = "timeout", run.killed
                break
            try:
                proc.stdin.write(
                    response(
                        run.exit_code,
                        output,
                        timed_out=run.timed_out,
                        duration_s=run.duration_s,
                    )
                )
                proc.stdin.flush()
            except (BrokenPipeError, ValueError):
                continue  # it stopped listening: read what it says last, then its EOF
        if outcome.status == "timeout":
            outcome.error = f"the agent phase ran past its {limit:g}s limit"
            outcome.stopped = outcome.stopped and box.kill_agent_processes()
        elif outcome.status is None:
            _agent_exit(proc, deadline, record, outcome)
    finally:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            proc.stdin.close()
        proc.stdout.close()
        proc.wait()
        unregister(proc.pid)
    if outcome.exit_code is None and outcome.status != "timeout":
        outcome.exit_code = exit_status(proc.returncode)
    outcome.error = join_notes(outcome.error, getattr(proc, "note", None))
    if record is not None:
        _take_record(record, outcome)
    outcome.stdout = transcript.text()
    outcome.stderr = read_tail(stderr_path)
    return outcome


def _agent_setup(
    request: TrialRequest,
    scratch: Path,
    home: Path,
    *,
    user: str,
    workdir: str | None,
    limit: float,
) -> tuple[dict[str, Any], dict[str, str]]:
    """The agent's task file (``scratch/task.json``) and environment: its own ``home``, the
    contract's variables, the exec protocol's. A multi-step task calls this once per step:
    the home carries over, the task file is the step's."""
    home.mkdir(exist_ok=True)
    task_path = scratch / "task.json"
    payload = request.payload(limit)
    payload.pop("output_path", None)
    payload.update(kind="environment", protocol=PROTOCOL, workdir=workdir, user=user)
    # the task folder, absolute (the pipeline's task table holds it relative to the checkout,
    # and the agent starts in its own home): Harbor's oracle reads its solution/ there
    task_dir = request.task.get("task_dir")
    payload["task_dir"] = str(Path(task_dir).resolve()) if task_dir else None
    contract.write_task_file(task_path, payload)
    env = host_environment(home)
    env.update(
        contract.agent_environment(
            payload,
            request.agent,
            request.secrets,
            task_path=str(task_path),
            output_path="",
            runtime=request.runtime,
        )
    )
    env.pop("EVALNOISE_OUTPUT", None)
    env.update(EVALNOISE_KIND="environment", EVALNOISE_PROTOCOL=PROTOCOL)
    return payload, env


def _take_record(record: dict[str, Any], outcome: AgentOutcome) -> None:
    """The ``done`` record's usage (the cost drivers) and, when the agent reports the
    exception that ended it (agents/harbor_agent/bridge.py), that failure as the status."""
    outcome.usage, note = contract.usage_columns(record)
    outcome.error = join_notes(outcome.error, note)
    if outcome.status is None and record.get("error") is not None:
        outcome.status, reported = reported_failure(record["error"])
        outcome.error = join_notes(reported, outcome.error)


def _upload(box: TrialContainer, message: Upload, deadline: float) -> bytes:
    """Unpack an ``upload``'s archive into its directory as root; the answer line."""
    import docker.errors

    run = box.run(
        f"mkdir -p -- {shlex.quote(message.target)}",
        user="0:0",
        env=None,
        timeout_s=max(1.0, deadline - time.monotonic()),
    )
    error = None
    if run.exit_code != 0:
        error = f"mkdir {message.target}: exit code {run.exit_code}"
    else:
        try:
            if not box.api.put_archive(box.id, message.target, message.archive):
                error = f"the engine refused the archive for {message.target}"
        except docker.errors.APIError as exc:
            error = f"upload to {message.target}: {one_line(exc)}"
    answer = {"ok": True} if error is None else {"ok": False, "error": error}
    return (json.dumps(answer) + "\n").encode("utf-8")


def _answer(proc: subprocess.Popen[bytes], line: bytes) -> None:
    """Send one answer line; an agent that stopped listening is read to its end."""
    with contextlib.suppress(BrokenPipeError, ValueError):
        proc.stdin.write(line)
        proc.stdin.flush()


def _agent_exit(
    proc: subprocess.Popen[bytes],
    deadline: float,
    record: dict[str, Any] | None,
    outcome: AgentOutcome,
) -> None:
    """After ``done`` (or end of output): the agent's exit decides its status."""
    with contextlib.suppress(OSError):
        proc.stdin.close()
    try:
        proc.wait(timeout=max(0.0, min(KILL_GRACE_S, deadline - time.monotonic())))
    except subprocess.TimeoutExpired:
        if record is None:
            outcome.status = "timeout"
            outcome.error = "the agent closed its output but did not exit before its deadline"
            return
        return  # it said done; a slow exit is not held against it (it is killed)
    code = exit_status(proc.returncode)
    outcome.exit_code = code
    if code == contract.EXIT_INFRA_UNAVAILABLE:
        outcome.status = "infra_error"
        outcome.error = f"exit code {code}: the agent reports a service it needs was unreachable"
    elif code != 0:
        outcome.status, outcome.error = "agent_error", f"exit code {code}"
    elif record is None:
        outcome.status = "agent_error"
        outcome.error = 'the agent ended without {"done": true}'


class LineReader:
    """Lines from a pipe with a deadline (``TimeoutError``); None at end of file."""

    def __init__(self, pipe: Any) -> None:
        self.fd = pipe.fileno()
        self.buffer = bytearray()
        self.eof = False
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.fd, selectors.EVENT_READ)

    def readline(self, deadline: float) -> bytes | None:
        """The next line without its newline; None at end of file; ``TimeoutError`` when
        ``deadline`` (monotonic seconds) passes first."""
        while True:
            end = self.buffer.find(b"\n")
            if end >= 0:
                line = bytes(self.buffer[:end])
                del self.buffer[: end + 1]
                return line
            if len(self.buffer) > MAX_LINE_BYTES:
                line = bytes(self.buffer)
                self.buffer.clear()
                return line  # parse_message rejects it
            if self.eof:
                if self.buffer:
                    line = bytes(self.buffer)
                    self.buffer.clear()
                    return line
                return None
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            if not self.selector.select(timeout=left):
                continue
            data = os.read(self.fd, 65536)
            if not data:
                self.eof = True
            self.buffer += data
