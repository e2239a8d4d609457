"""The tests' forked Snakemake runs (snakemake_forks.py) against the real ``snakemake``
command: same exit codes, same output, same files; the run's own cwd, environment,
PYTHONPATH and streams; a killed client takes its run with it."""

from __future__ import annotations

import os
import signal
import subprocess
import textwrap
import time
from pathlib import Path

import pytest
import snakemake_forks
from pipeline_helpers import job_counts, snakemake_bin, tool_env

SNAKEFILE = """
import os, sys
import forkprobe

with open("runner.pid", "w") as fh:
    fh.write(str(os.getpid()))
print("probe", os.path.relpath(forkprobe.__file__), os.environ.get("FORK_TEST_VALUE"),
      sys.argv[1:], [os.path.relpath(p) for p in sys.path[:3]])

rule all:
    input: "out.txt"

rule make:
    output: "out.txt"
    params: value=os.environ.get("FORK_TEST_VALUE", "")
    shell: "echo {params.value} > {output}"

rule fails:
    shell: "exit 3"

rule sleeps:
    shell: "echo $$ > sleep.pid; exec sleep 30"
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "Snakefile").write_text(textwrap.dedent(SNAKEFILE))
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "forkprobe.py").write_text("")
    return tmp_path


def _env(project: Path) -> dict[str, str]:
    env = tool_env(project)
    env.update(FORK_TEST_VALUE="forty-two", PYTHONPATH=str(project / "lib"))
    return env


def _both(project: Path, *args: str) -> list[subprocess.CompletedProcess[str]]:
    results = []
    for command in (
        [snakemake_bin(), *args],
        snakemake_forks.command(snakemake_bin(), list(args)),
    ):
        for leftover in ("out.txt", "runner.pid"):
            (project / leftover).unlink(missing_ok=True)
        results.append(
            subprocess.run(
                command, cwd=project, env=_env(project), capture_output=True, text=True, timeout=120
            )
        )
    return results


#: lines that differ between any two runs: timestamps, the run's id, its log file
_PER_RUN = ("[", "Date:", "Workflow ID:", "Complete log", "Elapsed time")


def _lines(text: str) -> list[str]:
    return [
        line
        for line in text.splitlines()
        if not line.strip().startswith(_PER_RUN) and "snakemake.log" not in line
    ]


def test_a_forked_run_is_the_commands_run(project: Path) -> None:
    real, forked = _both(project, "--cores", "1")
    assert real.returncode == forked.returncode == 0, forked.stderr
    assert _lines(forked.stdout) == _lines(real.stdout)
    assert _lines(forked.stderr) == _lines(real.stderr)
    assert "probe lib/forkprobe.py forty-two ['--cores', '1']" in forked.stdout
    assert (project / "runner.pid").exists()
    assert (project / "out.txt").read_text() == "forty-two\n"


def test_a_forked_dry_run_and_failures_exit_as_the_command(project: Path) -> None:
    real, forked = _both(project, "-n", "--cores", "1")
    assert real.returncode == forked.returncode == 0
    assert job_counts(forked.stdout) == job_counts(real.stdout) == {"all": 1, "make": 1}

    real, forked = _both(project, "fails", "--cores", "1")
    assert real.returncode == forked.returncode == 1
    assert "exit 3" in real.stderr and "exit 3" in forked.stderr

    real, forked = _both(project, "--no-such-option")
    assert real.returncode == forked.returncode == 2
    assert _lines(forked.stderr) == _lines(real.stderr)


def test_a_killed_client_takes_its_run_with_it(project: Path) -> None:
    with pytest.raises(subprocess.TimeoutExpired):
        subprocess.run(
            snakemake_forks.command(snakemake_bin(), ["sleeps", "--cores", "1"]),
            cwd=project,
            env=_env(project),
            capture_output=True,
            timeout=4,
        )
    runner = int((project / "runner.pid").read_text())
    deadline = time.monotonic() + 10
    while Path(f"/proc/{runner}").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not Path(f"/proc/{runner}").exists()
    sleeper = project / "sleep.pid"
    if sleeper.exists():  # the job's own process outlives a killed Snakemake, as it does
        try:
            os.kill(int(sleeper.read_text()), signal.SIGKILL)
        except ProcessLookupError:
            pass
