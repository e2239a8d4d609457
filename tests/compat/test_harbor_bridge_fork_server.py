"""The Harbor bridge as the pipeline runs it (``fork_server: true``): one warm bridge process
per shard imports Harbor once and forks a child per trial (evalnoise.runner.fork_server), on
the real engine, with a probe Harbor agent (tests/compat/harbor_agents/).

- two trials of one shard are children of one server, each with its own seed (in its
  environment and in the command it sends), its own log (the row's ``stderr_tail``) and its
  own draw of ``random``;
- a child that crashes is its trial's ``agent_error`` (exit 139), never a score, and the
  server forks the shard's next trial;
- a shard's abort leaves no process of the shard: not the server, not a child, and no
  container.
"""

from __future__ import annotations

import json
import re
import threading
import time
from pathlib import Path

import pytest
from harbor_tools import harbor_missing
from model_stack import require

from evalnoise.runner import agent_spec, trial_seed
from evalnoise.runner.fork_server import MARKER_VARIABLE
from evalnoise.runner.resources import resource_profile
from evalnoise.runner.trial import TrialRequest
from evalnoise.tasks.harbor_folders import environment_task_rows, load_harbor_task

pytestmark = [pytest.mark.docker, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
TASK = REPO / "examples" / "harbor-tasks" / "csv-to-jsonl"
PROBE_DIR = Path(__file__).parent / "harbor_agents"


def probe_spec(**env: str) -> dict:
    block = {"agent": "evalnoise_probe_agent:ProbeAgent", "kwargs": {}, "model": None}
    return {
        "name": "harbor-probe",
        "command": ["{harbor_python}", str(REPO / "agents/harbor_agent/bridge.py")],
        "env": {
            "HARBOR_AGENT": json.dumps(block, sort_keys=True, separators=(",", ":")),
            "PYTHONPATH": str(PROBE_DIR),
            **env,
        },
        "fork_server": True,
    }


@pytest.fixture(scope="module")
def backend(docker_engine):
    require(harbor_missing() is None, str(harbor_missing()))
    from evalnoise.runner.base_image import build_base_image
    from evalnoise.runner.environment import EnvironmentBackend

    backend = EnvironmentBackend(base=build_base_image(client=docker_engine))
    yield backend
    backend.fork_servers.kill()


@pytest.fixture(scope="module")
def row() -> dict:
    (row,) = environment_task_rows([load_harbor_task(TASK)])
    return row


def request(spec: dict, row: dict, trial: int, shard_id: str) -> TrialRequest:
    return TrialRequest(
        agent=agent_spec(spec),
        task=row,
        resource_profile=resource_profile("1x"),
        trial=trial,
        attempt=1,
        seed=trial_seed(0, spec["name"], row["task_id"], trial),
        shard_id=shard_id,
    )


def probe_line(result: dict) -> dict:
    found = re.search(r"probe seed=(\d+) pid=(\d+) ppid=(\d+) random=(\S+)", result["stderr_tail"])
    assert found, (result["error"], result["stderr_tail"])
    seed, pid, ppid, draw = found.groups()
    return {"seed": seed, "pid": int(pid), "ppid": int(ppid), "random": draw}


def shard_processes(backend, shard_id: str) -> list[int]:
    """Live processes marked by a fork server directory of ``shard_id``."""
    prefix = f"{MARKER_VARIABLE}={backend.scratch_root}/evalnoise-env.{shard_id}.".encode()
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            environ = (proc / "environ").read_bytes().split(b"\0")
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z" and any(v.startswith(prefix) for v in environ):
            found.append(int(proc.name))
    return found


def test_two_trials_of_a_shard_are_forked_children_with_their_own_seeds_and_logs(backend, row):
    shard = "fork-seeds"
    spec = probe_spec()
    try:
        results = [backend.run_trial(request(spec, row, t, shard)) for t in (0, 1)]
    finally:
        backend.cleanup(shard)
    seen = [probe_line(r) for r in results]
    seeds = [str(request(spec, row, t, shard).seed) for t in (0, 1)]
    for result, mine, other in zip(results, seeds, reversed(seeds), strict=True):
        assert (result["status"], result["reward"]) == ("ok", 0.0), result["error"]
        assert f"probe seed={mine} " in result["stderr_tail"]
        assert other not in result["stderr_tail"]
        assert f"echo seed {mine}" in result["stdout_tail"] and other not in result["stdout_tail"]
    assert [s["seed"] for s in seen] == seeds
    assert seen[0]["ppid"] == seen[1]["ppid"]  # one warm bridge per shard
    assert seen[0]["pid"] != seen[1]["pid"]  # a process per trial
    assert seen[0]["random"] != seen[1]["random"]  # random seeded afresh per child
    assert not shard_processes(backend, shard)


def test_a_child_that_crashes_is_agent_error_and_the_server_forks_the_next(backend, row):
    shard = "fork-crash"
    spec = probe_spec(PROBE_MODE="crash", PROBE_TRIAL="0")
    try:
        crashed = backend.run_trial(request(spec, row, 0, shard))
        after = backend.run_trial(request(spec, row, 1, shard))
    finally:
        backend.cleanup(shard)
    assert crashed["status"] == "agent_error", (crashed["error"], crashed["stderr_tail"])
    assert crashed["exit_code"] == 139  # SIGSEGV: a crash stays a crash, whatever the verdict
    assert crashed["reward"] is None and crashed["verified_after"] is None
    assert (after["status"], after["reward"]) == ("ok", 0.0), after["error"]
    assert probe_line(crashed)["ppid"] == probe_line(after)["ppid"]


def test_a_shard_abort_leaves_no_process_and_no_container(backend, row):
    shard = "fork-abort"
    spec = probe_spec(PROBE_MODE="sleep")
    out: dict = {}
    worker = threading.Thread(
        target=lambda: out.update(backend.run_trial(request(spec, row, 0, shard)))
    )
    worker.start()
    try:
        end = time.monotonic() + 120
        while time.monotonic() < end:  # the child registered and past its command
            with backend._agents_lock:
                running = shard in backend._agents.values()
            if running and len(shard_processes(backend, shard)) >= 2:
                break
            time.sleep(0.2)
        assert len(shard_processes(backend, shard)) >= 2, "the server and its child"
        time.sleep(1.0)  # the child is asleep in run()
        backend.abort(shard)
        worker.join(60)
        assert not worker.is_alive()
        # the killed agent (or its removed container) is the trial's outcome, never a score
        assert out["status"] in ("agent_error", "infra_error"), out["error"]
        assert out["reward"] is None
        assert not shard_processes(backend, shard)
        assert not backend._shard_container_ids(shard)
        assert not list(backend.scratch_root.glob(f"evalnoise-env.{shard}.fork-*"))
    finally:
        backend.abort(shard)
        backend.cleanup(shard)
