"""An engine outage fails the run in seconds, each job saying so once (issue 38.5).

A private engine (its own socket, data and exec roots: the suite's engine is untouched) runs
a small evaluation of the tiny agent through ``evalnoise run``. Once a trial is journaled the
engine is stopped (SIGTERM). Before, every ``run_trials`` job failed within 0.1 s, the
profile's ``retries: 2`` ran it again twice, each retry waiting 30 s for the engine, and the
run exited ~65 s after the engine stopped. Now a retry whose engine still does not answer
ends at once and silently (its line is in its log): the run exits within seconds, each
failed job's line on the console once. With the engine started again, ``evalnoise run``
resumes: every trial ends once, finished ones are not run again.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pipeline_helpers import journals, make_workspace, tool_env, venv_tool

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "runner"))
from test_runner_engine_outage import PrivateEngine

pytestmark = [pytest.mark.docker, pytest.mark.slow]

CONFIG = {
    "benchmark": {"n": 3},
    "agents": {"steady": {"build": "agents/tiny", "env": {"TINY_SKILL": "a", "TINY_SLEEP_S": 1}}},
    "resource_profiles": {"1x": {}},
    "trials": {"count": 6, "block_size": 6},
    "task_chunk_size": 3,
    "analysis": {"convergence": {"subsamples": 20}, "bootstrap": {"resamples": 200}},
}
#: how long after the engine stopped the run may take to exit (it took 65 s before)
EXIT_WITHIN_S = 20.0


@pytest.fixture
def private_engine(docker_engine):
    from evalnoise.runner.base_image import build_base_image

    base_image = build_base_image(client=docker_engine)
    engine = PrivateEngine()
    try:
        engine.start()
        # the base image, from the suite's engine (no registry to pull from)
        save = subprocess.Popen(["docker", "save", base_image], stdout=subprocess.PIPE)
        subprocess.run(
            ["docker", "-H", engine.url, "load", "-q"], stdin=save.stdout, check=True, timeout=600
        )
        assert save.wait(timeout=60) == 0
        yield engine
    finally:
        engine.remove()


def _rows(ws: Path) -> int:
    return sum(len(rows) for rows in journals(ws).values())


def test_an_engine_outage_fails_the_run_in_seconds_and_a_rerun_resumes(tmp_path, private_engine):
    ws = make_workspace(tmp_path / "ws", CONFIG)
    env = {**tool_env(ws), "DOCKER_HOST": private_engine.url}
    run = subprocess.Popen(
        [venv_tool("evalnoise"), "run", "--cores", "2"],
        cwd=ws,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 600
        while _rows(ws) < 1:
            assert run.poll() is None, run.stdout.read()[-4000:]
            assert time.monotonic() < deadline, "no trial was journaled"
            time.sleep(0.2)
        private_engine.stop()
        stopped = time.monotonic()
        out, _ = run.communicate(timeout=300)
        elapsed = time.monotonic() - stopped
    finally:
        if run.poll() is None:
            run.kill()
    print(f"engine stopped -> evalnoise run exited: {elapsed:.1f} s (exit {run.returncode})")
    assert run.returncode != 0, out[-4000:]
    assert elapsed < EXIT_WITHIN_S, out[-4000:]
    # each failed job's line once: no retry repeats it
    # (the job logs Snakemake shows after a failure hold every attempt's line: not these)
    lines = [ln for ln in out.splitlines() if ln.startswith("run_trials ") and "Docker" in ln]
    jobs = {ln.split(":", 1)[0] for ln in lines}
    assert lines and len(lines) == len(jobs), "\n".join(lines)
    assert "again: the cause has not gone away" not in out
    done = _rows(ws)
    assert 1 <= done < 18

    # the engine back, `evalnoise run` resumes: every trial once, none run twice
    private_engine.start()
    again = subprocess.run(
        [venv_tool("evalnoise"), "run", "--cores", "2"],
        cwd=ws,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    rows = [r for shard in journals(ws).values() for r in shard]
    errors = {str(r.get("error"))[:300] for r in rows if r["status"] != "ok"}
    assert again.returncode == 0, "\n".join(errors) + (again.stdout + again.stderr)[-2000:]
    keys = [(r["task_id"], r["trial"]) for r in rows if r["status"] == "ok"]
    assert len(keys) == 18 and len(set(keys)) == 18
    assert os.path.exists(ws / "results" / "analysis" / "summary.txt")
