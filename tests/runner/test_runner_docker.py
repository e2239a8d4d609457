"""The Docker backend against the real engine: outcomes, limits, hardening, cleanup."""

from __future__ import annotations

import http.server
import json
import threading
import time
import uuid

import docker.errors
import pytest
from runner_helpers import probe_agent, run_one, shard_containers, task_row

from evalnoise.runner.resources import MIB

pytestmark = pytest.mark.docker


def new_shard_id() -> str:
    return "t" + uuid.uuid4().hex[:10]


def exact_peak(backend) -> bool:
    """The backend reads a kernel high-water mark (v1 or v2), not samples that can miss one."""
    return backend.peak_source == "parent"


def seen_cgroup_version(backend, cgroup: dict) -> int:
    """The cgroup version the probe saw from inside its container; it is the engine's."""
    if "memory/memory.limit_in_bytes" in cgroup:
        version = 1
    elif "memory.max" in cgroup:
        version = 2
    else:
        pytest.fail(f"the probe saw neither a v1 nor a v2 cgroup: {cgroup}")
    assert str(version) == backend.cgroup_version
    return version


class Watcher:
    """Sees, from outside, that a trial's container existed while it ran."""

    def __init__(self, client, shard_id):
        self.client, self.shard_id, self.seen = client, shard_id, set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            self.seen.update(shard_containers(self.client, self.shard_id))
            time.sleep(0.05)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def test_ok_trial_records_everything(docker_engine, docker_backend, probe_image):
    shard = new_shard_id()
    row = run_one(
        docker_backend,
        probe_agent(probe_image),
        task_row("t-ok", {"op": "answer", "value": "hello"}),
        shard_id=shard,
    )
    assert row["status"] == "ok" and row["prediction"] == "hello" and row["exit_code"] == 0
    assert row["backend"] == "docker" and row["host"]
    assert row["image"] == probe_image
    assert row["image_digest"] == docker_engine.images.get(probe_image).id
    assert row["started_at"] <= row["ended_at"] and 0 < row["duration_s"] < 20
    if exact_peak(docker_backend):
        assert row["peak_memory_bytes"] > 1 * MIB  # python3 really ran in there
    assert (row["cpu_shares"], row["cpu_quota_cpus"]) == (1024, 1.0)
    assert row["memory_reservation_bytes"] == row["memory_limit_bytes"] == 64 * MIB
    assert row["time_limit_s"] == 20.0
    assert row["score"] is None  # the scorer's job
    assert shard_containers(docker_engine, shard) == []


def test_allocating_past_the_hard_limit_is_oom_killed(docker_engine, docker_backend, probe_image):
    task = task_row("t-mem", {"op": "alloc", "mb": 100}, memory_mb=64)
    row = run_one(docker_backend, probe_agent(probe_image), task, "1x")
    assert row["status"] == "oom_killed", row
    assert row["exit_code"] == 137 and row["prediction"] is None
    assert row["memory_limit_bytes"] == 64 * MIB
    if exact_peak(docker_backend):
        assert row["peak_memory_bytes"] >= 60 * MIB  # it hit the ceiling


def test_the_same_allocation_under_3x_is_ok(docker_engine, docker_backend, probe_image):
    # held a moment, so that a sampled peak (where the host has no peak file) sees it too
    task = task_row("t-mem", {"op": "alloc", "mb": 100, "hold_s": 0.3}, memory_mb=64)
    row = run_one(docker_backend, probe_agent(probe_image), task, "3x")
    assert row["status"] == "ok", row
    assert row["prediction"] == "allocated 100"
    assert row["memory_reservation_bytes"] == 64 * MIB
    assert row["memory_limit_bytes"] == 192 * MIB
    assert row["peak_memory_bytes"] >= 100 * MIB


def test_sleeping_past_the_deadline_is_timeout_and_the_container_is_gone(
    docker_engine, docker_backend, probe_image
):
    shard = new_shard_id()
    task = task_row("t-slow", {"op": "sleep", "s": 60}, time_limit_s=1.0)
    with Watcher(docker_engine, shard) as watcher:
        t0 = time.monotonic()
        row = run_one(docker_backend, probe_agent(probe_image), task, shard_id=shard)
        elapsed = time.monotonic() - t0
    assert row["status"] == "timeout", row
    assert 1.0 <= row["duration_s"] < 5 and elapsed < 10
    assert row["exit_code"] == 137
    assert len(watcher.seen) == 1  # it existed while running ...
    assert shard_containers(docker_engine, shard) == []  # ... and is gone now
    for cid in watcher.seen:
        with pytest.raises(docker.errors.NotFound):
            docker_engine.containers.get(cid)


def test_time_limit_factor_scales_the_deadline(docker_backend, probe_image):
    from evalnoise.runner import ResourceProfile

    slow = ResourceProfile("slow", time_limit_factor=3.0)
    task = task_row("t-slow", {"op": "sleep", "s": 1.0}, time_limit_s=0.7)
    from runner_helpers import run_one as run

    assert run(docker_backend, probe_agent(probe_image), task, "1x")["status"] == "timeout"
    row = run(docker_backend, probe_agent(probe_image), task, slow)
    assert row["status"] == "ok" and row["time_limit_s"] == pytest.approx(2.1)


def test_a_crashing_agent_is_agent_error_and_removed(docker_engine, docker_backend, probe_image):
    shard = new_shard_id()
    with Watcher(docker_engine, shard) as watcher:
        row = run_one(
            docker_backend,
            probe_agent(probe_image),
            task_row("t-crash", {"op": "crash"}),
            shard_id=shard,
        )
    assert row["status"] == "agent_error" and row["exit_code"] == 3
    assert "about to crash" in row["stderr_tail"]
    assert len(watcher.seen) == 1 and shard_containers(docker_engine, shard) == []


def test_exit_75_unreachable_service_is_infra_error(docker_backend, probe_image):
    row = run_one(
        docker_backend, probe_agent(probe_image), task_row("t", {"op": "crash", "code": 75})
    )
    assert (row["status"], row["exit_code"]) == ("infra_error", 75)
    assert "unreachable" in row["error"]


def test_no_answer_is_agent_error(docker_backend, probe_image):
    row = run_one(docker_backend, probe_agent(probe_image), task_row("t", {"op": "no_answer"}))
    assert row["status"] == "agent_error" and row["exit_code"] == 0
    assert "no answer file" in row["error"]
    assert "I have nothing to say" in row["stdout_tail"]


def test_stdout_fallback(docker_backend, probe_image):
    row = run_one(
        docker_backend,
        probe_agent(probe_image),
        task_row("t", {"op": "stdout_answer", "value": [1, 2]}),
    )
    assert row["status"] == "ok" and row["prediction"] == "[1, 2]"


def test_a_missing_image_is_infra_error(docker_engine, docker_backend):
    shard = new_shard_id()
    row = run_one(
        docker_backend,
        probe_agent("evalnoise-no-such-image:404"),
        task_row("t", {"op": "answer", "value": 1}),
        shard_id=shard,
    )
    assert row["status"] == "infra_error", row
    assert "image not found" in row["error"]
    assert row["image_digest"] is None
    assert shard_containers(docker_engine, shard) == []


def test_a_failing_start_is_infra_error_and_removed(docker_engine, docker_backend, probe_image):
    shard = new_shard_id()
    # runc cannot resolve the user: the container is created but does not start
    row = run_one(
        docker_backend,
        probe_agent(probe_image, user="no-such-user"),
        task_row("t", {"op": "answer", "value": 1}),
        shard_id=shard,
    )
    assert row["status"] == "infra_error" and "start failed" in row["error"], row
    assert row["image_digest"] == docker_engine.images.get(probe_image).id
    assert shard_containers(docker_engine, shard) == []


def test_a_missing_agent_binary_is_agent_error(docker_backend, probe_image):
    # with init=True the init process starts fine and reports exit 127: the image does not
    # follow the contract, which is the agent's failure, not the infrastructure's
    row = run_one(
        docker_backend,
        probe_agent(probe_image, command=["/no/such/binary"]),
        task_row("t", {"op": "answer", "value": 1}),
    )
    assert row["status"] == "agent_error" and row["exit_code"] == 127, row


def test_an_unreachable_engine_stops_the_shard_before_any_trial(tmp_path, monkeypatch):
    import docker
    from runner_helpers import tasks_frame

    from evalnoise.runner import EngineUnavailable, run_shard
    from evalnoise.runner.docker_backend import DockerBackend

    client = docker.DockerClient(base_url=f"unix://{tmp_path}/no-engine.sock", version="1.41")
    with pytest.raises(EngineUnavailable):
        DockerBackend(client=client)
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    with pytest.raises(EngineUnavailable):
        run_shard(
            tasks_frame([task_row("t", {"op": "answer", "value": 1})]),
            probe_agent("whatever"),
            "1x",
            [0],
            0,
            "as_incorrect",
            "docker",
            tmp_path / "j.jsonl",
            tmp_path / "out.parquet",
        )
    assert not (tmp_path / "out.parquet").exists()


def introspect(docker_backend, image, resource_profile="1x", **task_kw):
    row = run_one(
        docker_backend,
        probe_agent(image),
        task_row("t-intro", {"op": "introspect"}, **task_kw),
        resource_profile,
    )
    assert row["status"] == "ok", row
    return row, json.loads(row["prediction"])


def test_hardening_defaults(docker_backend, probe_image):
    _, report = introspect(docker_backend, probe_image)
    assert (report["uid"], report["gid"]) == (65534, 65534)
    assert report["CapEff"] == "0000000000000000"
    assert report["NoNewPrivs"] == "1"
    assert report["root_writable"] is False
    assert report["tmp_writable"] is True and report["cwd"] == "/tmp"
    assert report["task_file_writable"] is False
    assert report["pid1"].endswith("docker-init")
    assert report["interfaces"] == ["lo"]  # network_mode none
    # its own loopback works (network_disabled: no libnetwork hook, runc brings lo up)
    assert report["loopback"] is True, report["loopback"]
    assert "answer" not in report["task"]
    assert report["task"]["seed"] == int(report["env"]["EVALNOISE_SEED"])


def test_applied_limits_are_the_recorded_ones(docker_backend, probe_image):
    row, report = introspect(docker_backend, probe_image, "3x", cpus=0.5, memory_mb=100)
    cg = report["cgroup"]
    if seen_cgroup_version(docker_backend, cg) == 1:
        assert int(cg["memory/memory.limit_in_bytes"]) == row["memory_limit_bytes"] == 300 * MIB
        assert int(cg["memory/memory.memsw.limit_in_bytes"]) == row["memory_limit_bytes"]
        assert int(cg["memory/memory.soft_limit_in_bytes"]) == row["memory_reservation_bytes"]
        assert int(cg["cpu/cpu.shares"]) == row["cpu_shares"] == 512
        quota = int(cg["cpu/cpu.cfs_quota_us"]) / int(cg["cpu/cpu.cfs_period_us"])
        assert quota == pytest.approx(row["cpu_quota_cpus"]) == 1.5
        assert cg["pids/pids.max"] == "256"
    else:
        assert int(cg["memory.max"]) == row["memory_limit_bytes"] == 300 * MIB
        assert int(cg["memory.low"]) == row["memory_reservation_bytes"]
        assert cg.get("memory.swap.max", "0") == "0"  # no swap beyond the limit, as on v1
        quota, period = cg["cpu.max"].split()
        assert int(quota) / int(period) == pytest.approx(row["cpu_quota_cpus"]) == 1.5
        assert cg["pids.max"] == "256"


def test_cpu_limit_clamped_to_the_engine_host(docker_backend, probe_image):
    row, report = introspect(docker_backend, probe_image, "3x", cpus=1.0)
    host = docker_backend.host_cpus
    assert row["cpu_quota_cpus"] == min(3.0, host)
    cg = report["cgroup"]
    if seen_cgroup_version(docker_backend, cg) == 1:
        quota, period = int(cg["cpu/cpu.cfs_quota_us"]), int(cg["cpu/cpu.cfs_period_us"])
    else:
        quota, period = map(int, cg["cpu.max"].split())
    assert quota / period == pytest.approx(row["cpu_quota_cpus"])


def test_uncapped_applies_no_hard_limit(docker_backend, probe_image):
    row, report = introspect(docker_backend, probe_image, "uncapped")
    assert row["memory_limit_bytes"] is None and row["cpu_quota_cpus"] is None
    cg = report["cgroup"]
    if seen_cgroup_version(docker_backend, cg) == 1:
        assert int(cg["memory/memory.limit_in_bytes"]) > 2**50  # unlimited
        assert cg["cpu/cpu.cfs_quota_us"] == "-1"
    else:
        assert cg["memory.max"] == "max"
        assert cg["cpu.max"].split()[0] == "max"


def test_secrets_reach_the_agent_but_no_artifact(docker_backend, probe_image, monkeypatch):
    secret = "sk-" + uuid.uuid4().hex
    agent = probe_agent(probe_image, secret_env=["PROBE_TEST_SECRET"])
    row = run_one(
        docker_backend,
        agent,
        task_row("t", {"op": "echo_env", "name": "PROBE_TEST_SECRET"}),
        secrets={"PROBE_TEST_SECRET": secret},
    )
    assert row["status"] == "ok"
    assert row["prediction"] == "[REDACTED]"  # the agent did see it, and echoed it
    assert "the secret is [REDACTED]" in row["stdout_tail"]
    assert "stderr says [REDACTED]" in row["stderr_tail"]
    assert secret not in json.dumps(row, default=str)


class _Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"hello-from-host"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def local_http_server():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def test_network_none_cannot_reach_127_0_0_1(docker_backend, probe_image, local_http_server):
    row = run_one(
        docker_backend,
        probe_agent(probe_image),
        task_row("t-net", {"op": "http", "port": local_http_server}),
    )
    assert row["status"] == "ok"
    assert row["prediction"].startswith("unreachable:"), row["prediction"]


def test_host_network_reaches_127_0_0_1(docker_backend, probe_image, local_http_server):
    row = run_one(
        docker_backend,
        probe_agent(probe_image, network="host"),
        task_row("t-net", {"op": "http", "port": local_http_server}),
    )
    assert row["status"] == "ok"
    assert row["prediction"] == "reached:hello-from-host"
