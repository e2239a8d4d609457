"""A task whose image does not build is named where people look (issue 38.3), and the run's
results match its manifest (issue 38.2), through the whole pipeline on the real engine.

A workspace runs the project's ``csv-to-jsonl`` task and a copy of it whose Dockerfile fails
(``RUN ... false``), 2 trials each under the oracle. The broken task's trials are
``infra_error`` with the build log's tail; the task and the log's last line are named on the
console (by its ``run_trials`` job and by the ``check`` rule), in ``summary.txt`` and in the
report. Then ``evalnoise verify --workspace`` finds every file of ``results/`` as the
manifest recorded it, ``evalnoise archive`` packs it, and a byte appended to a result is
refused by name.
"""

from __future__ import annotations

import shutil

import pytest
from pipeline_helpers import ROOT, make_workspace, run_tool

pytestmark = [pytest.mark.docker, pytest.mark.slow]

BROKEN_STEP = "RUN echo the package mirror is unreachable && false\n"
LOG_LINE = "the package mirror is unreachable"


def _workspace(tmp_path):
    config = {
        "benchmark": {"source": "harbor", "path": "tasks", "n": None, "name": "broken"},
        "agents": {"oracle": {"program": "oracle", "resource_profiles": ["3x"]}},
        "resource_profiles": {"3x": {"memory_limit_factor": 3.0, "cpu_limit_factor": 3.0}},
        "trials": {"count": 2, "block_size": 2},
        "task_chunk_size": 4,
        "scorer": {"name": "reward"},
        "analysis": {"convergence": {"subsamples": 20}, "bootstrap": {"resamples": 200}},
    }
    ws = make_workspace(tmp_path / "ws", config)
    source = ROOT / "examples" / "harbor-tasks" / "csv-to-jsonl"
    shutil.copytree(source, ws / "tasks" / "csv-to-jsonl")
    broken = ws / "tasks" / "z-broken-build"  # after csv-to-jsonl: not the canary's task
    shutil.copytree(source, broken)
    toml = broken / "task.toml"
    toml.write_text(toml.read_text().replace("evalnoise/csv-to-jsonl", "evalnoise/z-broken-build"))
    with open(broken / "environment" / "Dockerfile", "a") as handle:
        handle.write(BROKEN_STEP)
    return ws


def test_a_failed_build_is_named_and_the_results_match_the_manifest(tmp_path, docker_engine):
    ws = _workspace(tmp_path)
    result = run_tool(ws, "snakemake", "--cores", "2", check=False, timeout=1800)
    out = result.stdout + result.stderr
    assert result.returncode == 0, out[-4000:]  # 2 of 4 trials failed: still a measurement
    named = "task evalnoise/z-broken-build: image build failed in all 2 trials: build of "
    # the console: the run_trials job and the check rule name the task and the log's end
    assert out.count(named) == 2, out[-4000:]
    line = next(ln for ln in out.splitlines() if named in ln and "run_trials" in ln)
    assert LOG_LINE in line
    summary = (ws / "results" / "analysis" / "summary.txt").read_text()
    (in_summary,) = [ln for ln in summary.splitlines() if named in ln]
    assert LOG_LINE in in_summary and "returned a non-zero code" in in_summary
    print(f"summary.txt: {in_summary.strip()}")
    report = (ws / "results" / "report" / "index.html").read_text()
    assert "Failures of whole tasks" in report and "evalnoise/z-broken-build" in report

    # issue 38.2: a real run's results are what its manifest recorded, archived as they are
    checked = run_tool(ws, "evalnoise", "verify", "--workspace", ".", check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    run_tool(ws, "evalnoise", "archive", "-o", "evaluation.tar.gz")
    run_tool(ws, "evalnoise", "verify", "evaluation.tar.gz")
    with open(ws / "results" / "analysis" / "summary.txt", "ab") as handle:
        handle.write(b"x")
    refused = run_tool(ws, "evalnoise", "archive", "-o", "again.tar.gz", check=False)
    assert refused.returncode == 2 and not (ws / "again.tar.gz").exists()
    assert "changed: results/analysis/summary.txt (manifest sha256 " in refused.stderr
