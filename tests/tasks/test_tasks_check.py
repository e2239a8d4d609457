"""`evalnoise tasks check`: per folder accepted or not, every problem and warning, the JSON
form, the exit code; the fetch reader behind the offline warning; the DAG-build warning."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from evalnoise.cli import main
from evalnoise.pipeline.sampling import benchmark_warnings
from evalnoise.tasks.check import check_tasks, offline_fetch_warning
from evalnoise.tasks.fetches import Fetch, network_fetches
from evalnoise.tasks.harbor_folders import load_harbor_tasks

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "harbor-tasks"

TB2_TEST_SH = """\
#!/bin/bash
# Install curl
apt-get update
apt-get install -y curl

curl -LsSf https://astral.sh/uv/0.9.5/install.sh | sh
source $HOME/.local/bin/env
uvx -p 3.13 -w pytest==8.4.1 pytest /tests/test_outputs.py
if [ $? -eq 0 ]; then echo 1 > /logs/verifier/reward.txt
else echo 0 > /logs/verifier/reward.txt; fi
"""


def write_task(root: Path, name: str, environment: str, *, test_sh: str = "", extra=None) -> Path:
    folder = root / name
    (folder / "environment").mkdir(parents=True)
    (folder / "tests").mkdir()
    (folder / "task.toml").write_text(
        textwrap.dedent(
            f"""\
            schema_version = "1.4"
            [verifier]
            environment_mode = "shared"
            [environment]
            {environment}
            """
        )
    )
    (folder / "instruction.md").write_text("Do it.\n")
    (folder / "environment" / "Dockerfile").write_text("ARG BASE\nFROM ${BASE}\n")
    (folder / "tests" / "test.sh").write_text(test_sh or "echo 1 > /logs/verifier/reward.txt\n")
    for rel, text in (extra or {}).items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text)
    return folder


@pytest.fixture
def task_set(tmp_path: Path) -> Path:
    root = tmp_path / "set"
    write_task(root, "a-offline", 'network_mode = "no-network"')
    write_task(root, "b-public-fetches", "allow_internet = true", test_sh=TB2_TEST_SH)
    write_task(root, "c-allowlist", 'network_mode = "allowlist"\nallowed_hosts = ["pypi.org"]')
    write_task(
        root,
        "d-mcp",
        'network_mode = "no-network"\n[[environment.mcp_servers]]\nname = "m"\nurl = "http://m"',
    )
    (root / "e-not-a-task").mkdir()
    return root


def test_each_folder_accepted_or_refused_with_field_and_reason(task_set):
    checks = {c.task: c for c in check_tasks(task_set)}
    assert sorted(checks) == [
        "a-offline",
        "b-public-fetches",
        "c-allowlist",
        "d-mcp",
        "e-not-a-task",
    ]
    assert checks["a-offline"].accepted and checks["a-offline"].problems == ()
    assert checks["b-public-fetches"].accepted  # as declared: a network of its own
    assert not checks["c-allowlist"].accepted
    assert checks["c-allowlist"].problems[0][0] == "[environment].network_mode"
    assert "allowlists are not supported" in checks["c-allowlist"].problems[0][1]
    assert checks["d-mcp"].problems == (
        ("[environment].mcp_servers", "MCP servers need network access"),
    )
    assert checks["e-not-a-task"].problems == (("task.toml", "missing: not a Harbor task folder"),)
    # the loader of a run refuses the same folders, with the same problems
    with pytest.raises(Exception) as caught:
        load_harbor_tasks(task_set)
    run_fields = sorted((p.field, p.reason) for p in caught.value.problems)
    check_fields = sorted(p for c in checks.values() for p in c.problems)
    assert run_fields == check_fields


def test_offline_names_the_verifier_that_fetches(task_set):
    checks = {c.task: c for c in check_tasks(task_set, network="offline")}
    (warning,) = checks["b-public-fetches"].warnings
    assert "runs offline" in warning
    assert "tests/test.sh:3 (apt-get update)" in warning and "and 1 more" in warning
    assert checks["a-offline"].warnings == ()  # asks for no network: nothing to miss
    # as declared, the same task gets its network: no warning
    assert {c.task: c for c in check_tasks(task_set)}["b-public-fetches"].warnings == ()
    # rejected outright when the run rejects public tasks
    rejected = {c.task: c for c in check_tasks(task_set, network="reject")}
    assert not rejected["b-public-fetches"].accepted


def test_cli_text_and_exit_codes(task_set, capsys):
    assert main(["tasks", "check", str(task_set)]) == 1
    out = capsys.readouterr().out
    assert "accepted  a-offline  [a-offline]" in out
    assert "REFUSED   d-mcp  [d-mcp]" in out
    assert "    problem: [environment].mcp_servers: MCP servers need network access" in out
    assert "2 of 5 task folders accepted (benchmark.network: as_declared)" in out
    assert "refused for: " in out
    assert main(["tasks", "check", str(task_set / "a-offline")]) == 0
    assert main(["tasks", "check", str(EXAMPLES)]) == 0
    assert "18 of 18 task folders accepted" in capsys.readouterr().out
    assert main(["tasks", "check", str(task_set / "nothing")]) == 2


def test_cli_json(task_set, capsys):
    assert main(["tasks", "check", "--json", "--network", "offline", str(task_set)]) == 1
    entries = json.loads(capsys.readouterr().out)
    assert [e["task"] for e in entries] == [
        "a-offline",
        "b-public-fetches",
        "c-allowlist",
        "d-mcp",
        "e-not-a-task",
    ]
    for entry in entries:
        assert set(entry) == {"path", "task", "accepted", "problems", "warnings"}
        assert Path(entry["path"]).is_dir()
        assert all(set(p) == {"field", "reason"} for p in entry["problems"])
        assert entry["accepted"] == (entry["problems"] == [])
    assert entries[1]["warnings"] and "fetches from the network" in entries[1]["warnings"][0]


@pytest.mark.parametrize(
    ("line", "command"),
    [
        ("apt-get install -y curl", "apt-get install"),
        ("apt-get -qq update", "apt-get -qq update"),
        ("RUN apt update && apt install -y git", "apt update"),
        ("curl -LsSf https://astral.sh/uv/install.sh | sh", "curl"),
        ("wget -q http://x/y", "wget"),
        ("pip install numpy", "pip install"),
        ("python3 -m pip install --user requests", "python3 -m pip install"),
        ("pip3 -q install x", "pip3 -q install"),
        ("uvx -p 3.13 -w pytest==8.4.1 pytest", "uvx"),
        ("uv pip install pytest", "uv pip install"),
        ("uv run --with pytest pytest", "uv run --with"),
        ("git clone https://github.com/x/y", "git clone"),
        ("npm install", "npm install"),
    ],
)
def test_fetching_commands_are_found(tmp_path, line, command):
    folder = write_task(tmp_path, "t", 'network_mode = "public"', test_sh=f"#!/bin/bash\n{line}\n")
    assert network_fetches(folder) == [Fetch("tests/test.sh", 2, command)]


@pytest.mark.parametrize(
    "line",
    [
        "# curl https://example.com  (a comment)",
        "python3 -m pytest /tests",
        "pip --version",
        "echo curling is a sport",
        "uv --version",
        "git status",
        "/usr/bin/mycurl x",
        "pip-audit",
    ],
)
def test_non_fetching_lines_are_not(tmp_path, line):
    folder = write_task(tmp_path, "t", 'network_mode = "public"', test_sh=f"{line}\n")
    assert network_fetches(folder) == []


def test_dockerfile_and_step_tests_are_read(tmp_path):
    folder = write_task(
        tmp_path,
        "t",
        'network_mode = "public"',
        extra={
            "environment/Dockerfile": "ARG BASE\nFROM ${BASE}\nRUN pip install flask\n",
            "steps/two/tests/test.sh": "wget http://x\n",
        },
    )
    assert network_fetches(folder) == [
        Fetch("environment/Dockerfile", 3, "pip install"),
        Fetch("steps/two/tests/test.sh", 1, "wget"),
    ]
    (check,) = check_tasks(folder)
    assert any("its Dockerfile fetches from the network" in w for w in check.warnings)


def test_the_run_says_it_in_one_warning_when_built(task_set, tmp_path):
    root = tmp_path / "ok"
    write_task(root, "a-offline", 'network_mode = "no-network"', test_sh=TB2_TEST_SH)
    write_task(root, "b-public-fetches", "allow_internet = true", test_sh=TB2_TEST_SH)
    write_task(root, "c-public-quiet", "")
    write_task(
        root,
        "d-public-builds",
        "",
        extra={"environment/Dockerfile": "ARG BASE\nFROM ${BASE}\nRUN pip install flask\n"},
    )
    bench = {"source": "harbor", "path": str(root), "network": "offline"}
    (line,) = benchmark_warnings(bench)
    assert "2 task(s) asking for the public network fetch from it in their verifier or " in line
    assert "b-public-fetches, d-public-builds;" in line
    assert "a-offline" not in line and "c-public" not in line
    assert benchmark_warnings({**bench, "network": "as_declared"}) == ()
    tasks = load_harbor_tasks(root, public_network="offline")
    assert offline_fetch_warning(tasks, "offline") == line
