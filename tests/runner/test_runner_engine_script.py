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
