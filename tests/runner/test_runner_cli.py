"""``evalnoise run-shard`` and ``evalnoise image``: parsers, help, end to end."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from runner_helpers import local_probe_agent, task_row, tasks_frame

from evalnoise.cli import image, main, run_shard
from evalnoise.cli.run_shard import parse_trials
from evalnoise.errors import InputError

SRC = Path(__file__).resolve().parents[2] / "src"


def parser():
    p = argparse.ArgumentParser(prog="evalnoise")
    sub = p.add_subparsers(dest="command", required=True)
    run_shard.add_parser(sub)
    image.add_parser(sub)
    return p


def run_shard_main(argv: list[str]) -> int:
    """``evalnoise run-shard ARGV`` through the one entry point and its error handler."""
    return main(["run-shard", *argv])


@pytest.mark.parametrize(
    "argv,expected",
    [
        (
            ["run-shard", "--help"],
            [
                "--tasks",
                "--agent",
                "--resource-profile",
                "--trials",
                "--run-seed",
                "--infra-policy",
                "--backend",
                "--journal",
                "--concurrency",
                "isolates much less",
            ],
        ),
        (["image", "--help"], ["build", "build-agent"]),
        (["image", "build", "--help"], ["--force", "--cache-dir", "debootstrap"]),
        (["image", "build-agent", "--help"], ["--tag", "--base", "context"]),
    ],
)
def test_every_subcommand_has_help(capsys, argv, expected):
    with pytest.raises(SystemExit) as exit_info:
        parser().parse_args(argv)
    assert exit_info.value.code == 0
    out = " ".join(capsys.readouterr().out.split())
    for word in expected:
        assert word in out


def test_subcommands_dispatch_through_run():
    args = parser().parse_args(
        [
            "run-shard",
            "--tasks",
            "t",
            "--agent",
            "a",
            "--resource-profile",
            "1x",
            "--trials",
            "0",
            "--run-seed",
            "1",
            "--output",
            "o",
        ]
    )
    assert callable(args.run) and args.backend == "docker" and args.concurrency == 1
    assert callable(parser().parse_args(["image", "build"]).run)


def test_parse_trials():
    assert parse_trials("0-4") == [0, 1, 2, 3, 4]
    assert parse_trials("5,0-1, 3") == [0, 1, 3, 5]
    for bad in ["", "a", "3-1", "-1"]:
        with pytest.raises(InputError):
            parse_trials(bad)


def write_tasks(tmp_path, n=4):
    path = tmp_path / "tasks.parquet"
    tasks_frame(
        [task_row(f"task-{i}", {"op": "answer", "value": i}, memory_mb=256) for i in range(n)]
    ).to_parquet(path)
    return path


def test_run_shard_main_end_to_end_local(tmp_path, capsys):
    tasks = write_tasks(tmp_path)
    agent_file = tmp_path / "agent.json"
    agent_file.write_text(json.dumps(local_probe_agent()))
    code = run_shard_main(
        [
            "--tasks",
            str(tasks),
            "--chunk",
            "1/2",
            "--agent",
            str(agent_file),
            "--resource-profile",
            '{"name": "2x", "memory_limit_factor": 2.0}',
            "--trials",
            "0-1",
            "--run-seed",
            "3",
            "--infra-policy",
            "retry:2",
            "--backend",
            "local",
            "--output",
            str(tmp_path / "shard.parquet"),
            "--no-progress",
        ]
    )
    assert code == 0
    rows = pq.read_table(tmp_path / "shard.parquet").to_pylist()
    assert sorted({r["task_id"] for r in rows}) == ["task-2", "task-3"]  # chunk 1 of 2
    assert len(rows) == 4 and {r["resource_profile"] for r in rows} == {"2x"}
    assert {r["memory_limit_bytes"] for r in rows} == {512 * 1024 * 1024}
    assert (tmp_path / "shard.parquet.journal.jsonl").exists()
    assert "4 rows for 4 trials" in capsys.readouterr().err


def test_bad_input_exits_2(tmp_path, capsys):
    tasks = write_tasks(tmp_path, 1)
    code = run_shard_main(
        [
            "--tasks",
            str(tasks),
            "--agent",
            '{"name": "x", "netwrk": "none"}',
            "--resource-profile",
            "1x",
            "--trials",
            "0",
            "--run-seed",
            "1",
            "--backend",
            "local",
            "--output",
            str(tmp_path / "o.parquet"),
        ]
    )
    assert code == 2 and "netwrk" in capsys.readouterr().err
    code = run_shard_main(
        [
            "--tasks",
            str(tmp_path / "missing.parquet"),
            "--agent",
            '{"name": "x"}',
            "--resource-profile",
            "1x",
            "--trials",
            "0",
            "--run-seed",
            "1",
            "--output",
            str(tmp_path / "o.parquet"),
        ]
    )
    assert code == 2
    code = run_shard_main(
        [
            "--tasks",
            str(tasks),
            "--agent",
            '{"name": "x", "command": "x"}',
            "--resource-profile",
            "7x",
            "--trials",
            "0",
            "--run-seed",
            "1",
            "--backend",
            "local",
            "--output",
            str(tmp_path / "o.parquet"),
        ]
    )
    assert code == 2 and "7x" in capsys.readouterr().err


def test_python_dash_m_entry_point(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(SRC))
    result = subprocess.run(
        [sys.executable, "-m", "evalnoise", "run-shard", "--help"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert result.returncode == 0 and "--resource-profile" in result.stdout


@pytest.mark.docker
def test_image_build_prints_the_base_tag(base_image, capsys):
    assert main(["image", "build"]) == 0
    assert capsys.readouterr().out.strip() == base_image
