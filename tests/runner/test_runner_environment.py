"""Environment trials against the real Docker engine: one fresh container per trial, the
agent phase then the verifier, rewards and every way they fail, timeouts, OOM kills in each
phase, users and env, engine errors and cleanup by shard label."""

from __future__ import annotations

import dataclasses
import os
import socket
import threading
import time

import pytest
from env_helpers import env_request, env_trial, make_env_task
from runner_helpers import shard_containers

pytestmark = pytest.mark.docker

REWARD_ONE = "echo 1 > /logs/verifier/reward.txt\n"
#: a verifier reward of 1 when the agent wrote /app/done, else 0
REWARD_IF_DONE = """\
if [ -f /app/done ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt
"""


def assert_no_containers(engine, shard_id):
    assert shard_containers(engine, shard_id) == []


def test_oracle_reward_txt(env_backend, docker_engine, tmp_path):
    folder = make_env_task(
        tmp_path, "txt", test_sh=REWARD_IF_DONE, solve_sh="echo solving; touch /app/done\n"
    )
    row = env_trial(env_backend, folder, "oracle", shard_id="env-txt")
    assert (row["status"], row["reward"], row["phase"]) == ("ok", 1.0, None)
    assert row["rewards_json"] == '{"reward":1.0}'
    assert row["exit_code"] == 0 and row["verifier_exit_code"] == 0
    assert row["image"].startswith("evalnoise-task-test-txt:") and row["image_digest"]
    assert "solving" in row["stdout_tail"]
    assert row["agent_duration_s"] > 0 and row["verifier_duration_s"] > 0
    assert row["duration_s"] >= row["agent_duration_s"] + row["verifier_duration_s"]
    assert row["backend"] == "docker-environment" and row["prediction"] is None
    assert row["oom_kills"] in (0, None) and row["task_digest"]
    assert_no_containers(docker_engine, "env-txt")


def test_null_agent_scores_the_floor(env_backend, tmp_path):
    folder = make_env_task(tmp_path, "null", test_sh=REWARD_IF_DONE, solve_sh="touch /app/done\n")
    row = env_trial(env_backend, folder, "null")
    assert (row["status"], row["reward"], row["exit_code"]) == ("ok", 0.0, None)


def test_reward_json_wins_and_named_rewards_are_kept(env_backend, tmp_path):
    folder = make_env_task(
        tmp_path,
        "json",
        test_sh="""\
        echo 1 > /logs/verifier/reward.txt
        echo '{"reward": 0.25, "style": 1}' > /logs/verifier/reward.json
        echo verifier says hi
        """,
    )
    row = env_trial(env_backend, folder, "null")
    assert (row["status"], row["reward"]) == ("ok", 0.25)
    assert row["rewards_json"] == '{"reward":0.25,"style":1.0}'
    assert "verifier says hi" in row["verifier_output_tail"]


@pytest.mark.parametrize(
    ("test_sh", "problem"),
    [
        ("echo no reward here\nexit 0\n", "no reward file"),
        (": > /logs/verifier/reward.txt\n", "reward.txt is empty"),
        ("echo passed > /logs/verifier/reward.txt\n", "reward.txt is not a number"),
        ("echo 2 > /logs/verifier/reward.txt\n", "outside [0, 1]"),
        ("echo '{\"score\": true}' > /logs/verifier/reward.json\n", "not a finite number"),
        ('echo \'{"a": 1, "b": 0}\' > /logs/verifier/reward.json\n', "declare which one"),
        ("exit 3\n", "no reward file"),  # a crashed verifier leaves no reward
    ],
)
def test_invalid_reward_is_verifier_error_never_zero(env_backend, tmp_path, test_sh, problem):
    folder = make_env_task(tmp_path, "bad", test_sh=test_sh)
    row = env_trial(env_backend, folder, "null")
    assert row["status"] == "verifier_error" and row["phase"] == "verifier"
    assert row["reward"] is None and problem in row["error"]


def test_agent_cannot_plant_a_reward(env_backend, tmp_path):
    folder = make_env_task(
        tmp_path,
        "plant",
        test_sh="echo verifier ran\n",
        solve_sh="echo 1 > /logs/verifier/reward.txt\n",
    )
    row = env_trial(env_backend, folder, "oracle")
    assert row["status"] == "verifier_error" and "no reward file" in row["error"]


def test_verifier_timeout_is_verifier_error(env_backend, docker_engine, tmp_path):
    folder = make_env_task(
        tmp_path, "slowverifier", test_sh="sleep 60\n" + REWARD_ONE, verifier_timeout=1.0
    )
    t0 = time.monotonic()
    row = env_trial(env_backend, folder, "null", shard_id="env-vt")
    assert time.monotonic() - t0 < 15
    assert (row["status"], row["phase"], row["reward"]) == ("verifier_error", "verifier", None)
    assert "past its 1s limit" in row["error"]
    assert_no_containers(docker_engine, "env-vt")


def test_agent_timeout_still_runs_the_verifier(env_backend, tmp_path):
    """The agent's processes are killed at its deadline (the verifier sees none of them);
    the verifier's valid reward then decides the trial, as the benchmarks score it: ok, the
    timeout kept as the flag verified_after."""
    folder = make_env_task(
        tmp_path,
        "slowagent",
        solve_sh="touch /app/done\n(sleep 300 &)\nsleep 300\n",
        test_sh="""\
        left=0
        for f in /proc/[0-9]*/cmdline; do
          if tr '\\0' ' ' < "$f" 2>/dev/null | grep -q '^sleep 300'; then left=1; fi
        done
        if [ -f /app/done ]; then done=1; else done=0; fi
        echo "{\\"reward\\": $done, \\"leftover\\": $left}" > /logs/verifier/reward.json
        """,
        agent_timeout=1.5,
    )
    t0 = time.monotonic()
    row = env_trial(env_backend, folder, "oracle")
    assert time.monotonic() - t0 < 15
    assert (row["status"], row["phase"], row["reward"]) == ("ok", "agent", 1.0)
    assert row["verified_after"] == "timeout"
    assert row["rewards_json"] == '{"leftover":0.0,"reward":1.0}'
    assert 1.4 < row["agent_duration_s"] < 10
    assert "past its 1.5s limit" in row["error"]


def test_agent_timeout_without_a_valid_reward_stays_a_timeout(env_backend, tmp_path):
    folder = make_env_task(
        tmp_path, "slownoreward", solve_sh="sleep 300\n", test_sh="true\n", agent_timeout=1.0
    )
    row = env_trial(env_backend, folder, "oracle")
    assert (row["status"], row["phase"], row["reward"]) == ("timeout", "agent", None)
    assert row["verified_after"] is None
    assert "verifier: " in row["error"]  # what the verifier failed at, as a note


def test_time_limits_scale_with_the_profile(env_backend, tmp_path):
    from evalnoise.runner.resources import ResourceProfile

    folder = make_env_task(tmp_path, "scaled", test_sh=REWARD_ONE, agent_timeout=7.0)
    slow = ResourceProfile("slow", time_limit_factor=2.0, memory_limit_factor=3.0)
    request = dataclasses.replace(env_request(folder, "null"), resource_profile=slow)
    row = env_backend.run_trial(request)
    assert (row["time_limit_s"], row["verifier_time_limit_s"]) == (14.0, 40.0)


ALLOCATE = "python3 -c 'x = bytearray(200 * 1024 * 1024); x[::4096] = b\"x\" * len(x[::4096])'\n"


def test_oom_in_the_agent_phase(env_backend, tmp_path):
    """A process of the agent phase OOM-killed while the container lives on is the task's
    own event: the verifier's verdict decides, the kill is the flag oom_in_agent."""
    folder = make_env_task(
        tmp_path,
        "oomagent",
        memory_mb=64,
        solve_sh=ALLOCATE + "touch /app/done\n",
        test_sh=REWARD_IF_DONE,
    )
    row = env_trial(env_backend, folder, "oracle", "1x")
    assert (row["status"], row["reward"], row["oom_in_agent"]) == ("ok", 1.0, True)
    assert row["verified_after"] is None  # the oracle's own exit is not judged
    assert row["memory_limit_bytes"] == 64 * 1024 * 1024
    assert row["rewards_json"] == '{"reward":1.0}'
    assert "container lived on" in row["error"]
    if row["oom_kills"] is not None:
        assert row["oom_kills"] >= 1


#: the container's main process (the idle ``sleep infinity`` under the engine's init) made
#: the OOM killer's first choice (``oom_score_adj`` 1000: a process may raise it unprivileged),
#: then memory allocated past the limit by several small processes, each a smaller choice:
#: the kill ends the container, as any kill of the container's own process does
KILL_THE_MAIN_PROCESS = """\
for p in /proc/[0-9]*; do
  if tr '\\0' ' ' < "$p/cmdline" 2>/dev/null | grep -q '^sleep infinity'; then
    echo 1000 > "$p/oom_score_adj"
  fi
done
for i in 1 2 3 4 5 6 7 8; do
  python3 -c 'import time; x = bytearray(12 << 20); x[::4096] = b"x" * 3072; time.sleep(9)' &
done
wait
"""


def test_oom_that_ends_the_container_is_oom_killed(env_backend, docker_engine, tmp_path):
    folder = make_env_task(
        tmp_path,
        "oommain",
        memory_mb=64,
        solve_sh=KILL_THE_MAIN_PROCESS + "touch /app/done\n",
        test_sh=REWARD_IF_DONE,
    )
    row = env_trial(env_backend, folder, "oracle", "1x")
    assert (row["status"], row["phase"], row["reward"]) == ("oom_killed", "agent", None)
    assert not row["oom_in_agent"]
    assert "ended the container" in row["error"]
    assert row["rewards_json"] is None  # no verifier without the container


def test_oom_in_the_verifier_phase(env_backend, tmp_path):
    folder = make_env_task(
        tmp_path,
        "oomverifier",
        memory_mb=64,
        solve_sh="touch /app/done\n",
        test_sh=ALLOCATE + REWARD_ONE,
    )
    row = env_trial(env_backend, folder, "oracle", "1x")
    assert (row["status"], row["phase"]) == ("oom_killed", "verifier")
    assert row["reward"] is None


def test_resources_applied_and_recorded(env_backend, docker_engine, tmp_path):
    folder = make_env_task(
        tmp_path,
        "limits",
        cpus=0.5,
        memory_mb=96,
        test_sh="""\
        if [ -f /sys/fs/cgroup/memory.max ]; then m=$(cat /sys/fs/cgroup/memory.max);
        else m=$(cat /sys/fs/cgroup/memory/memory.limit_in_bytes); fi
        if [ "$m" = "$EXPECT" ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt
        """,
        extra_toml=f'[verifier.env]\nEXPECT = "{3 * 96 * 1024 * 1024}"\n',
    )
    row = env_trial(env_backend, folder, "null", "3x")
    assert row["status"] == "ok" and row["reward"] == 1.0
    assert row["memory_limit_bytes"] == 3 * 96 * 1024 * 1024
    assert row["memory_reservation_bytes"] == 96 * 1024 * 1024
    assert row["cpu_quota_cpus"] == 1.5 and row["cpu_shares"] == 512
    assert row["peak_memory_bytes"] is None or row["peak_memory_bytes"] > 0


def test_task_users_and_env(env_backend, tmp_path, monkeypatch):
    """The agent runs as [agent].user and the verifier as [verifier].user, both with no
    capabilities; [environment].env templates come from the runner's environment and their
    values are redacted from the row; [verifier].env reaches the verifier."""
    monkeypatch.setenv("EVALNOISE_TEST_SECRET", "s3cr3t-value")
    folder = make_env_task(
        tmp_path,
        "users",
        solve_sh='id -u > /tmp/agent_uid\necho "token=$TOKEN mode=$MODE"\n',
        test_sh="""\
        [ "$(cat /tmp/agent_uid)" = 65534 ] && [ "$(id -u)" = 0 ] && [ "$LEVEL" = strict ] \\
          && [ "$TOKEN" = s3cr3t-value ] && echo 1 > /logs/verifier/reward.txt
        grep CapEff /proc/self/status
        """,
        environment_toml='[environment.env]\nTOKEN = "${EVALNOISE_TEST_SECRET}"\nMODE = "m1"\n',
    )
    toml = (folder / "task.toml").read_text()
    toml = toml.replace("[agent]\n", '[agent]\nuser = "nobody"\n')
    toml = toml.replace("[verifier]\n", '[verifier]\nuser = "root"\n')
    toml += '\n[verifier.env]\nLEVEL = "strict"\n'
    (folder / "task.toml").write_text(toml)
    from evalnoise.runner.environment import EnvironmentBackend

    backend = EnvironmentBackend(client=env_backend.client, images=env_backend.images)
    row = env_trial(backend, folder, "oracle")
    assert row["status"] == "ok" and row["reward"] == 1.0, row["error"]
    assert "token=[REDACTED] mode=m1" in row["stdout_tail"]
    assert "s3cr3t-value" not in repr(row)
    # a task that switches users: its root verifier holds USER_SWITCH_CAPS, nothing more
    # (CHOWN 0, DAC_OVERRIDE 1, FOWNER 3, SETGID 6, SETUID 7: 0b11001011)
    assert "CapEff:\t00000000000000cb" in row["verifier_output_tail"]


def test_single_user_task_has_no_capabilities(env_backend, tmp_path):
    folder = make_env_task(
        tmp_path,
        "nocaps",
        solve_sh="grep CapEff /proc/self/status; id -u\n",
        test_sh="grep CapEff /proc/self/status\n" + REWARD_ONE,
    )
    row = env_trial(env_backend, folder, "oracle")
    assert row["status"] == "ok"
    assert row["stdout_tail"] == "CapEff:\t0000000000000000\n0\n"
    assert row["verifier_output_tail"] == "CapEff:\t0000000000000000\n"


def test_image_user_is_the_default_and_root_verifier_reads_its_files(env_backend, tmp_path):
    """An image whose USER is not root: the agent runs as that user by default; a root
    verifier ([verifier].user) can still read the files the agent made private."""
    folder = make_env_task(
        tmp_path,
        "imageuser",
        dockerfile="ARG BASE\nFROM ${BASE}\nRUN useradd -m -u 1001 worker\nUSER worker\n"
        "WORKDIR /home/worker\n",
        solve_sh="umask 077; id -un > mine.txt; grep CapEff /proc/self/status\n",
        test_sh="""\
        [ "$(cat /home/worker/mine.txt)" = worker ] && echo 1 > /logs/verifier/reward.txt
        """,
    )
    toml = (folder / "task.toml").read_text().replace("[verifier]\n", '[verifier]\nuser = "root"\n')
    (folder / "task.toml").write_text(toml)
    row = env_trial(env_backend, folder, "oracle")
    assert (row["status"], row["reward"]) == ("ok", 1.0), row["error"]
    assert row["stdout_tail"] == "CapEff:\t0000000000000000\n"  # the agent's user: none


def test_unset_env_variable_is_infra_error(env_backend, tmp_path):
    folder = make_env_task(
        tmp_path,
        "unset",
        test_sh=REWARD_ONE,
        environment_toml='[environment.env]\nKEY = "${EVALNOISE_SURELY_UNSET_VAR}"\n',
    )
    row = env_trial(env_backend, folder, "null")
    assert (row["status"], row["phase"]) == ("infra_error", "setup")
    assert "EVALNOISE_SURELY_UNSET_VAR" in row["error"]


def test_oracle_without_solution_is_an_agent_error_the_verifier_decides(env_backend, tmp_path):
    """The oracle fails (no solve.sh); the verifier then writes a valid reward, which decides
    the trial (the benchmarks' rule), and the agent's failure stays a flag."""
    folder = make_env_task(tmp_path, "nosolution", test_sh=REWARD_ONE)
    row = env_trial(env_backend, folder, "oracle")
    assert (row["status"], row["verified_after"], row["phase"]) == ("ok", "agent_error", "agent")
    assert "no solution/solve.sh" in row["error"]
    assert row["rewards_json"] == '{"reward":1.0}'


def test_changed_task_folder_is_infra_error(env_backend, tmp_path):
    folder = make_env_task(tmp_path, "changed", test_sh=REWARD_ONE)
    request = env_request(folder, "null")
    (folder / "tests" / "test.sh").write_text("#!/bin/bash\necho 0 > /logs/verifier/reward.txt\n")
    from evalnoise.runner.environment import EnvironmentBackend

    fresh = EnvironmentBackend(client=env_backend.client, images=env_backend.images)
    row = fresh.run_trial(request)
    assert (row["status"], row["phase"]) == ("infra_error", "setup")
    assert "changed after the tasks table was made" in row["error"]


def test_missing_prebuilt_image_is_infra_error(env_backend, tmp_path):
    folder = make_env_task(
        tmp_path,
        "prebuilt",
        test_sh=REWARD_ONE,
        environment_toml='docker_image = "evalnoise-no-such-image:0"\n',
    )
    row = env_trial(env_backend, folder, "null")
    assert (row["status"], row["phase"]) == ("infra_error", "build")
    assert "not in the engine" in row["error"]


def test_engine_error_is_infra_error(env_backend, tmp_path):
    """The engine answers but refuses the container: a row, not an exception."""
    from evalnoise.runner.environment import EnvironmentBackend, Sandbox

    folder = make_env_task(tmp_path, "refused", test_sh=REWARD_ONE)
    backend = EnvironmentBackend(
        client=env_backend.client,
        images=env_backend.images,
        sandbox=Sandbox(cap_add=("NOT_A_CAPABILITY",)),
    )
    row = env_trial(backend, folder, "null")
    assert (row["status"], row["phase"]) == ("infra_error", "setup")
    assert "container:" in row["error"]


class _Proxy:
    """A unix-socket relay to the real engine that can be cut: the engine "goes away"."""

    def __init__(self, path: str, target: str = "/var/run/docker.sock") -> None:
        self.path, self.target = path, target
        self.server = socket.socket(socket.AF_UNIX)
        self.server.bind(path)
        self.server.listen(16)
        self.sockets: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            upstream = socket.socket(socket.AF_UNIX)
            upstream.connect(self.target)
            self.sockets += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(a: socket.socket, b: socket.socket) -> None:
        try:
            while data := a.recv(65536):
                b.sendall(data)
        except OSError:
            pass
        for s in (a, b):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def cut(self) -> None:
        self.server.close()
        os.unlink(self.path)
        for s in self.sockets:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def test_engine_gone_raises_without_a_row_and_cleanup_finds_the_container(
    env_backend, docker_engine, tmp_path
):
    import docker

    from evalnoise.runner.environment import EnvironmentBackend
    from evalnoise.runner.trial import EngineUnavailable
    from evalnoise.tasks.harbor_folders import load_harbor_task

    folder = make_env_task(
        tmp_path, "gone", test_sh=REWARD_ONE, solve_sh="sleep 30\n", agent_timeout=60
    )
    # build the image through the real socket first: only the trial goes through the relay
    env_backend.images.get(load_harbor_task(folder, public_network="offline"))
    proxy = _Proxy(str(tmp_path / "engine.sock"))
    client = docker.DockerClient(base_url=f"unix://{proxy.path}", timeout=30)
    backend = EnvironmentBackend(client=client, images=env_backend.images)
    outcome: dict = {}

    def run() -> None:
        try:
            outcome["row"] = env_trial(backend, folder, "oracle", shard_id="env-gone")
        except EngineUnavailable as exc:
            outcome["raised"] = exc

    worker = threading.Thread(target=run)
    worker.start()
    deadline = time.monotonic() + 20
    while not shard_containers(docker_engine, "env-gone") and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(1.0)  # the agent phase is under way
    proxy.cut()
    worker.join(60)
    assert "row" not in outcome and isinstance(outcome.get("raised"), EngineUnavailable)
    assert shard_containers(docker_engine, "env-gone")  # left behind, labelled
    assert env_backend.cleanup("env-gone") >= 1
    assert_no_containers(docker_engine, "env-gone")


def test_abort_and_cleanup_by_shard_label(env_backend, docker_engine, tmp_path):
    folder = make_env_task(
        tmp_path, "abort", test_sh=REWARD_ONE, solve_sh="sleep 60\n", agent_timeout=120
    )
    rows: list = []
    worker = threading.Thread(
        target=lambda: rows.append(env_trial(env_backend, folder, "oracle", shard_id="env-ab"))
    )
    worker.start()
    deadline = time.monotonic() + 20
    while not shard_containers(docker_engine, "env-ab") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert shard_containers(docker_engine, "env-ab")
    time.sleep(0.5)
    env_backend.abort("env-ab")
    worker.join(30)
    assert not worker.is_alive()
    assert rows and rows[0]["status"] != "ok"
    assert_no_containers(docker_engine, "env-ab")
    assert env_backend.cleanup("env-ab") == 0


def test_idle_main_process_stops_at_once_on_sigterm(env_backend, docker_engine, tmp_path):
    """``docker stop`` (SIGTERM, then SIGKILL after 10 s) returns at once: the container's
    init forwards SIGTERM to the idle main command, which exits."""
    folder = make_env_task(tmp_path, "stop", test_sh=REWARD_ONE, solve_sh="sleep 60\n")
    rows: list = []
    worker = threading.Thread(
        target=lambda: rows.append(env_trial(env_backend, folder, "oracle", shard_id="env-stop"))
    )
    worker.start()
    deadline = time.monotonic() + 20
    while not (ids := shard_containers(docker_engine, "env-stop")) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)
    t0 = time.monotonic()
    docker_engine.api.stop(ids[0], timeout=10)
    assert time.monotonic() - t0 < 5
    worker.join(30)
    assert rows and rows[0]["status"] != "ok"
    assert_no_containers(docker_engine, "env-stop")
