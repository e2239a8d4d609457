"""tools/docker-engine.sh on each kind of cgroup host: the daemon arguments it would use.

Run with ``--print-dockerd-args`` (it starts nothing) against temp directories laid out like
/sys/fs/cgroup of a v1, a hybrid and a unified (v2) host, with and without systemd.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "tools" / "docker-engine.sh"
BASE_ARGS = ["--bridge=none", "--iptables=false", "--ip-masq=false"]
CGROUPFS = ["--exec-opt", "native.cgroupdriver=cgroupfs"]


def layout(root: Path, kind: str) -> Path:
    if kind == "v2":
        root.mkdir(parents=True)
        (root / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
    else:
        (root / "memory").mkdir(parents=True)
        if kind == "hybrid":
            (root / "unified").mkdir()
            (root / "unified" / "cgroup.controllers").write_text("\n")
    return root


def dockerd_args(tmp_path: Path, kind: str, systemd: bool) -> list[str]:
    systemd_dir = tmp_path / "run-systemd-system"
    if systemd:
        systemd_dir.mkdir()
    env = dict(
        os.environ,
        EVALNOISE_CGROUP_ROOT=str(layout(tmp_path / "cgroup", kind)),
        EVALNOISE_SYSTEMD_DIR=str(systemd_dir),
    )
    done = subprocess.run(
        ["bash", str(SCRIPT), "--print-dockerd-args"],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return done.stdout.split()


@pytest.mark.parametrize(
    ("kind", "systemd", "extra"),
    [
        ("v1", False, []),
        ("v1", True, []),
        ("hybrid", False, []),  # this project's hosts: the memory controller is v1
        ("v2", False, CGROUPFS),  # no systemd to ask for cgroups: the daemon manages them
        ("v2", True, []),  # dockerd's default there, the systemd driver
    ],
)
def test_dockerd_arguments_per_cgroup_layout(tmp_path, kind, systemd, extra):
    assert dockerd_args(tmp_path, kind, systemd) == BASE_ARGS + extra


def test_this_host_gets_the_arguments_its_cgroups_call_for():
    done = subprocess.run(
        ["bash", str(SCRIPT), "--print-dockerd-args"],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    v2 = Path("/sys/fs/cgroup/cgroup.controllers").exists()
    systemd = Path("/run/systemd/system").is_dir()
    assert done.stdout.split() == BASE_ARGS + (CGROUPFS if v2 and not systemd else [])


def clear_stale_pidfiles(run_dir: Path) -> str:
    done = subprocess.run(
        ["bash", str(SCRIPT), "--clear-stale-pidfiles"],
        env=dict(os.environ, EVALNOISE_DOCKER_RUN_DIR=str(run_dir)),
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return done.stderr


def started_as(tmp_path: Path, program: str) -> subprocess.Popen:
    """A live process whose command name (/proc/PID/comm) is ``program``."""
    binary = tmp_path / program
    binary.write_bytes(Path("/bin/sleep").read_bytes())
    binary.chmod(0o755)
    return subprocess.Popen([str(binary), "60"])


def pid_files(run_dir: Path, dockerd: int, containerd: int) -> tuple[Path, Path]:
    """docker.pid and containerd.pid under ``run_dir`` (laid out as /var/run), holding these."""
    (run_dir / "docker" / "containerd").mkdir(parents=True)
    dockerd_pid = run_dir / "docker.pid"
    containerd_pid = run_dir / "docker" / "containerd" / "containerd.pid"
    dockerd_pid.write_text(str(dockerd))
    containerd_pid.write_text(f"{containerd}\n")
    return dockerd_pid, containerd_pid


def test_pid_files_naming_some_other_live_process_are_removed(tmp_path):
    # What broke CI: /var/run survived from another boot, containerd.pid named a pid that a
    # different process held, and dockerd waited 60 s for a containerd that never started.
    other = started_as(tmp_path, "sleep")
    try:
        run_dir = tmp_path / "run"
        dockerd_pid, containerd_pid = pid_files(run_dir, other.pid, other.pid)
        message = clear_stale_pidfiles(run_dir)
    finally:
        other.kill()
        other.wait()
    assert not dockerd_pid.exists()
    assert not containerd_pid.exists()
    assert "is not a running containerd" in message


def test_pid_files_of_gone_processes_are_removed_and_live_ones_kept(tmp_path):
    gone = subprocess.Popen(["true"])
    gone.wait()
    containerd = started_as(tmp_path, "containerd")
    try:
        run_dir = tmp_path / "run"
        dockerd_pid, containerd_pid = pid_files(run_dir, gone.pid, containerd.pid)
        clear_stale_pidfiles(run_dir)
        assert not dockerd_pid.exists()
        assert containerd_pid.read_text().strip() == str(containerd.pid)
    finally:
        containerd.kill()
        containerd.wait()


def test_no_pid_files_is_no_error(tmp_path):
    assert clear_stale_pidfiles(tmp_path) == ""
