"""The warm external-agent process (evalnoise.runner.fork_server, agents/common/fork_server.py)
without a container: a probe fork server (tests/runner/agents/fork_probe/agent.py) in this
Python, its children started as a trial starts its agent."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evalnoise.runner.fork_server import (
    MARKER_VARIABLE,
    ForkedAgent,
    ForkServers,
)
from evalnoise.runner.host_processes import host_environment, kill_marked

PROBE = Path(__file__).parent / "agents" / "fork_probe" / "agent.py"
COMMAND = [sys.executable, str(PROBE)]


def alive(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie counts as ended)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def gone(pid: int, within: float = 5.0) -> bool:
    end = time.monotonic() + within
    while time.monotonic() < end:
        if not alive(pid):
            return True
        time.sleep(0.05)
    return False


def marked(variable: str, value: str) -> list[int]:
    """Live processes whose starting environment has ``variable=value``."""
    marker = f"{variable}={value}".encode()
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            environ = (proc / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if marker in environ and alive(int(proc.name)):
            found.append(int(proc.name))
    return found


class Trial:
    """One trial's agent process as run_external_agent starts it: its home, stderr file and
    environment (the shared part plus the trial's own)."""

    def __init__(self, root: Path, name: str, shared: dict[str, str], seed: int) -> None:
        self.dir = root / name
        self.home = self.dir / "home"
        self.home.mkdir(parents=True)
        self.stderr_path = self.dir / "agent-stderr"
        self.env = {
            **host_environment(self.home),
            **shared,
            "EVALNOISE_SEED": str(seed),
            "EVALNOISE_TASK_FILE": str(self.dir / "task.json"),
        }

    def start(self, start, deadline_s: float = 60.0):
        with open(self.stderr_path, "wb") as err:
            return start(COMMAND, self.env, self.home, err, time.monotonic() + deadline_s)

    def seen(self, proc) -> dict:
        line = proc.stdout.readline()
        assert line, f"no output; stderr: {self.stderr_path.read_text()}"
        return json.loads(line)


@pytest.fixture
def servers(tmp_path):
    pool = ForkServers(tmp_path / "scratch")
    (tmp_path / "scratch").mkdir()
    yield pool
    pool.kill()


def test_two_trials_of_a_shard_are_children_of_one_server_with_their_own_seeds_and_logs(
    servers, tmp_path
):
    shared = {"PROBE_MODE": "ok"}
    start = servers.starter("s1", COMMAND, shared)
    trials = [Trial(tmp_path, f"t{i}", shared, seed) for i, seed in enumerate((111, 222))]
    seen = []
    for trial in trials:
        proc = trial.start(start)
        assert isinstance(proc, ForkedAgent)
        seen.append(trial.seen(proc))
        assert proc.wait(timeout=30) == 0
        assert proc.returncode == 0
        proc.stdin.close()
        proc.stdout.close()
    first, second = seen
    # one warm server, imported once, forked twice
    assert first["preloaded"]["done"] and first["ppid"] == second["ppid"]
    assert first["preloaded"]["server_pid"] == first["ppid"]
    assert first["pid"] != second["pid"]
    # each child its own process group (the runner kills a trial by it), env, home and log
    assert first["pgid"] == first["pid"] and second["pgid"] == second["pid"]
    assert (first["seed"], second["seed"]) == ("111", "222")
    assert first["home"] == str(trials[0].home) and first["cwd"] == str(trials[0].home)
    assert second["cwd"] == str(trials[1].home)
    assert trials[0].stderr_path.read_text() == "probe log: seed 111\n"
    assert trials[1].stderr_path.read_text() == "probe log: seed 222\n"
    # random seeded afresh in each child, as in a fresh interpreter
    assert first["random"] != second["random"]
    # the server's marker is in the environment the children started with
    assert first["server_variable"] is None  # the trial's environment replaced the server's
    server_dir = next((tmp_path / "scratch").glob("evalnoise-env.s1.fork-*"))
    assert sorted(marked(MARKER_VARIABLE, str(server_dir))) == [first["ppid"]]


def test_a_child_that_crashes_is_its_exit_code_and_the_server_serves_on(servers, tmp_path):
    start = servers.starter("s1", COMMAND, {"PROBE_MODE": "crash"})
    trial = Trial(tmp_path, "crash", {"PROBE_MODE": "crash"}, 1)
    proc = trial.start(start)
    seen = trial.seen(proc)
    assert proc.wait(timeout=30) == -signal.SIGSEGV
    assert proc.note is None  # its own end, reported by its server
    assert alive(seen["ppid"])
    again = Trial(tmp_path, "after", {"PROBE_MODE": "crash"}, 2)
    proc2 = again.start(start)
    assert again.seen(proc2)["ppid"] == seen["ppid"]
    assert proc2.wait(timeout=30) == -signal.SIGSEGV


def test_a_dead_server_takes_its_children_and_the_next_trial_starts_a_new_one(servers, tmp_path):
    shared = {"PROBE_MODE": "sleep"}
    start = servers.starter("s1", COMMAND, shared)
    sleeping = Trial(tmp_path, "sleeping", shared, 1)
    proc = sleeping.start(start)
    child = sleeping.seen(proc)
    os.kill(child["ppid"], signal.SIGKILL)
    assert proc.wait(timeout=30) == -signal.SIGKILL
    assert "the agent's fork server ended (signal 9)" in proc.note
    assert gone(child["pid"])  # PR_SET_PDEATHSIG
    after = Trial(tmp_path, "after", shared, 2)
    proc2 = after.start(start)
    assert after.seen(proc2)["ppid"] != child["ppid"]
    os.killpg(proc2.pid, signal.SIGKILL)
    assert proc2.wait(timeout=30) == -signal.SIGKILL


def test_kill_leaves_no_process_of_the_shard(servers, tmp_path):
    shared = {"PROBE_MODE": "sleep"}
    start = servers.starter("s1", COMMAND, shared)
    other = servers.starter("s2", COMMAND, shared)
    procs, seen = [], []
    for i, starter in enumerate((start, start, other)):
        trial = Trial(tmp_path, f"t{i}", shared, i)
        procs.append(trial.start(starter))
        seen.append(trial.seen(procs[-1]))
    server = seen[0]["ppid"]
    servers.kill("s1")
    for s in seen[:2]:
        assert gone(s["pid"]) and gone(server)
    for proc in procs[:2]:
        assert proc.wait(timeout=10) == -signal.SIGKILL
    assert not list((tmp_path / "scratch").glob("evalnoise-env.s1.fork-*"))
    # the other shard's server and child are untouched
    assert alive(seen[2]["pid"]) and alive(seen[2]["ppid"])
    servers.close("s2")
    assert gone(seen[2]["pid"]) and gone(seen[2]["ppid"])


def test_a_server_left_by_a_killed_runner_is_found_by_its_marker(tmp_path):
    """The runner SIGKILLed: its scratch directories stay; kill_marked finds the server and
    its children by EVALNOISE_FORK_SERVER (what EnvironmentBackend.cleanup does)."""
    script = f"""
import sys, time
sys.path.insert(0, {str(Path(__file__).parents[2] / "src")!r})
from pathlib import Path
from evalnoise.runner.fork_server import ForkServers
from evalnoise.runner.host_processes import host_environment
pool = ForkServers(Path({str(tmp_path)!r}))
start = pool.starter("s9", {COMMAND!r}, {{"PROBE_MODE": "sleep"}})
home = Path({str(tmp_path / "home")!r}); home.mkdir()
with open(home / "err", "wb") as err:
    proc = start({COMMAND!r}, {{**host_environment(home), "PROBE_MODE": "sleep"}}, home, err,
                 time.monotonic() + 60)
print(proc.stdout.readline().decode(), flush=True)
time.sleep(60)
"""
    runner = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE)
    try:
        seen = json.loads(runner.stdout.readline())
    finally:
        runner.kill()
        runner.wait()
    (server_dir,) = tmp_path.glob("evalnoise-env.s9.fork-*")
    # the runner's end closed the socket: the server kills its children and exits
    assert gone(seen["pid"]) and gone(seen["ppid"])
    assert kill_marked([server_dir], variable=MARKER_VARIABLE) == 0


def test_a_preload_that_fails_leaves_the_failure_to_the_trial(servers, tmp_path):
    shared = {"PROBE_MODE": "ok", "PROBE_PRELOAD": "fail"}
    start = servers.starter("s1", COMMAND, shared)
    trial = Trial(tmp_path, "t", shared, 5)
    proc = trial.start(start)
    assert isinstance(proc, ForkedAgent)
    assert trial.seen(proc)["preloaded"]["done"] is False
    assert proc.wait(timeout=30) == 0


def test_a_server_that_cannot_start_gives_fresh_starts(servers, tmp_path, capsys):
    shared = {"PROBE_SERVER": "exit"}
    start = servers.starter("s1", COMMAND, shared)
    for i in range(2):
        proc = Trial(tmp_path, f"t{i}", shared, i).start(start)
        assert isinstance(proc, subprocess.Popen)
        assert proc.wait(timeout=30) == 3  # what a fresh start meets
        proc.stdin.close()
        proc.stdout.close()
    assert "did not start: the agent's fork server ended (exit code 3)" in capsys.readouterr().err
    assert not list((tmp_path / "scratch").glob("evalnoise-env.s1.fork-*"))


def test_a_server_not_ready_by_the_deadline_is_a_timeout(servers, tmp_path):
    shared = {"PROBE_MODE": "ok"}
    start = servers.starter("s1", COMMAND, shared)
    with pytest.raises(TimeoutError):
        Trial(tmp_path, "t", shared, 1).start(start, deadline_s=0.0)


def test_a_server_that_died_between_trials_is_replaced_and_its_directory_removed(servers, tmp_path):
    shared = {"PROBE_MODE": "ok"}
    start = servers.starter("s1", COMMAND, shared)
    first = Trial(tmp_path, "t0", shared, 1)
    proc = first.start(start)
    old = first.seen(proc)["ppid"]
    assert proc.wait(timeout=30) == 0
    (old_dir,) = (tmp_path / "scratch").glob("evalnoise-env.s1.fork-*")
    os.kill(old, signal.SIGKILL)
    assert gone(old)
    second = Trial(tmp_path, "t1", shared, 2)
    proc2 = second.start(start)
    assert second.seen(proc2)["ppid"] != old
    assert proc2.wait(timeout=30) == 0
    end = time.monotonic() + 10
    while old_dir.exists() and time.monotonic() < end:
        time.sleep(0.1)
    assert not old_dir.exists()
