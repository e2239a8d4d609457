"""The local backend: a plain subprocess per trial, for machines with no container engine.

**It isolates much less than the Docker backend.** The agent runs as the runner's user, on the
host's filesystem and network, with the host's view of every process. What it does enforce:

- a memory cap as ``RLIMIT_AS`` (virtual address space, not resident memory) at the resource
  profile's hard memory limit — an allocation beyond it fails inside the agent, which then
  typically exits non-zero: recorded as ``agent_error`` (there is no engine to report an
  OOM kill, so ``oom_killed`` never occurs here);
- the time limit: at the deadline the whole process group (the agent runs in a session of
  its own) is killed with SIGKILL — also after a normal exit, so no child outlives its trial;
- a clean environment: only ``PATH``, ``LANG``, ``HOME``/``TMPDIR`` (a per-trial temp dir), the
  agent's ``env``, its secrets and the ``EVALNOISE_*`` contract variables.

No CPU guarantee or limit and no memory guarantee can be applied: those columns stay null;
``memory_limit_bytes`` records the address-space cap. ``peak_memory_bytes`` is the largest
resident set of any single process of the trial (``ru_maxrss``), not the group's total.
The agent spec's ``command`` is required; ``image`` is ignored. Exit by signal N is recorded
as exit code 128 + N, as a shell would.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from evalnoise.runner import contract
from evalnoise.runner.host_processes import host_environment, kill_marked
from evalnoise.runner.resources import Allocation
from evalnoise.runner.trial import (
    TrialRequest,
    finish_row,
    read_answer_file,
    record_output,
    start_row,
    task_allocation,
    utc_now,
)

NAME = "local"

# Runs in the child before the agent: apply the address-space cap, then become the agent.
_LAUNCHER = """\
import os, resource, sys
limit = int(sys.argv[1])
if limit > 0:
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
try:
    os.execvp(sys.argv[2], sys.argv[2:])
except OSError as exc:
    sys.stderr.write("evalnoise local: cannot run %r: %s\\n" % (sys.argv[2], exc))
    os._exit(127)
"""
_READ_TAIL_BYTES = 1 << 20


def _read_tail(path: Path, limit: int = _READ_TAIL_BYTES) -> str:
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - limit))
            return handle.read().decode("utf-8", "replace")
    except OSError:
        return ""


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _exit_code(status: int) -> int:
    code = os.waitstatus_to_exitcode(status)
    return 128 - code if code < 0 else code


class LocalBackend:
    """Runs each trial as a subprocess of this machine (see the module docstring)."""

    name = NAME

    def __init__(self, *, scratch_root: str | os.PathLike[str] | None = None) -> None:
        self.host = socket.gethostname()
        self.scratch_root = Path(scratch_root or tempfile.gettempdir())
        self._running: dict[int, str] = {}  # pgid -> shard id
        self._lock = threading.Lock()

    def check(self) -> None:
        """The local backend has no engine that could go away."""

    def cleanup(self, shard_id: str) -> int:
        """Kill processes a killed run left behind, then remove its scratch dirs.

        A leftover process is recognised by its environment: ``EVALNOISE_TASK_FILE`` points
        into one of this shard's scratch dirs.
        """
        stale = [p for p in self.scratch_root.glob(f"evalnoise-trial.{shard_id}.*") if p.is_dir()]
        if not stale:
            return 0
        killed = kill_marked(p / "task.json" for p in stale)
        for path in stale:
            shutil.rmtree(path, ignore_errors=True)
        return killed + len(stale)

    def abort(self, shard_id: str) -> None:
        with self._lock:
            groups = [pgid for pgid, shard in self._running.items() if shard == shard_id]
        for pgid in groups:
            _kill_group(pgid)

    def applied(self, request: TrialRequest) -> Allocation:
        """What this backend can enforce of the resource profile's allocation."""
        full = task_allocation(request)
        return Allocation(
            cpu_shares=None,
            cpu_quota_cpus=None,
            memory_reservation_bytes=None,
            memory_limit_bytes=full.memory_limit_bytes,
            time_limit_s=full.time_limit_s,
        )

    def run_trial(self, request: TrialRequest) -> dict[str, Any]:
        spec = request.agent
        secrets = dict(request.secrets)
        allocation = self.applied(request)
        row = start_row(request, allocation, backend=NAME, host=self.host)
        row["image"] = None
        row["network"] = "host"  # a host process: the host's network, whatever the spec says
        if not spec.command:
            row.update(
                status="infra_error",
                error=f"agent {spec.name!r}: the local backend needs a command",
            )
            return finish_row(row, secrets)
        if shutil.which(spec.command[0]) is None:
            row.update(status="infra_error", error=f"command not found: {spec.command[0]!r}")
            return finish_row(row, secrets)

        workdir = Path(
            tempfile.mkdtemp(prefix=f"evalnoise-trial.{request.shard_id}.", dir=self.scratch_root)
        )
        stdout_path, stderr_path = workdir / "stdout", workdir / "stderr"
        try:
            outdir, home = workdir / "out", workdir / "tmp"
            outdir.mkdir()
            home.mkdir()
            task_path, output_path = workdir / "task.json", outdir / contract.OUTPUT_FILE
            payload = request.payload(allocation.time_limit_s, output_path=str(output_path))
            contract.write_task_file(task_path, payload)
            env = host_environment(home)
            env.update(
                contract.agent_environment(
                    payload,
                    spec,
                    secrets,
                    task_path=str(task_path),
                    output_path=str(output_path),
                    runtime=request.runtime,
                )
            )
            argv = [
                sys.executable,
                "-I",
                "-S",
                "-c",
                _LAUNCHER,
                str(allocation.memory_limit_bytes or 0),
                *spec.command,
            ]
            with open(stdout_path, "wb") as out, open(stderr_path, "wb") as err:
                try:
                    proc = subprocess.Popen(
                        argv,
                        stdin=subprocess.DEVNULL,
                        stdout=out,
                        stderr=err,
                        cwd=home,
                        env=env,
                        start_new_session=True,
                        close_fds=True,
                    )
                except OSError as exc:
                    row.update(status="infra_error", error=f"could not start: {exc}")
                    return finish_row(row, secrets)
            t0 = time.monotonic()
            with self._lock:
                self._running[proc.pid] = request.shard_id
            try:
                status, rusage, timed_out = self._wait(proc, t0 + allocation.time_limit_s)
            finally:
                with self._lock:
                    self._running.pop(proc.pid, None)
            row["duration_s"] = time.monotonic() - t0
            row["ended_at"] = utc_now()
            row["exit_code"] = _exit_code(status)
            row["peak_memory_bytes"] = int(rusage.ru_maxrss) * 1024
            stdout = _read_tail(stdout_path)
            if timed_out:
                row.update(
                    status="timeout", error=f"killed at the {allocation.time_limit_s:g}s time limit"
                )
            else:
                answer = read_answer_file(output_path, contract.MAX_ANSWER_BYTES)
                record_output(row, contract.parse_output(answer, stdout))
            return finish_row(row, secrets, stdout=stdout, stderr=_read_tail(stderr_path))
        finally:
            shutil.rmtree(workdir, ignore_errors=True)

    @staticmethod
    def _wait(proc: subprocess.Popen[bytes], deadline: float) -> tuple[int, Any, bool]:
        """Wait for ``proc`` until ``deadline``; kill its process group in every case.

        The group is killed while the leader is still an unreaped zombie (``WNOWAIT``), so
        its id cannot have been reused. Returns (wait status, rusage, timed out).
        """
        pid, delay, timed_out = proc.pid, 0.001, False
        while True:
            info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            if info is not None:
                break
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                timed_out = True
                _kill_group(pid)
                break
            time.sleep(min(delay, remaining, 0.05))
            delay *= 2
        _kill_group(pid)  # stragglers the agent left in its group
        _, status, rusage = os.wait4(pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)  # tell Popen it is reaped
        return status, rusage, timed_out
