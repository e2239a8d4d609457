"""The workflow as Snakemake sees it: lint, the cluster profiles' dry runs, trials_from."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import pytest
from pipeline_helpers import (
    CLUSTER_WORKSPACES,
    copy_project,
    job_counts,
    no_slurm_probe,
    prepare_copy,
    run_tool,
)

#: What a dry run of the embedded default plans on a fresh checkout: 4 groups (chat@3x,
#: tool_agent@3x, tool_agent_local@1x and @3x) × 2 trial blocks × 2 task chunks shards, each
#: scored by the reference and judged by both judges (llm, last_number); compare = 3 agent
#: pairs in 3x + 1 profile pair;
#: sequential_summary writes results/sequential/ (a fixed design says so: a DVC output).
DEFAULT_JOBS = {
    "sample_tasks": 1,
    "sequential_summary": 1,
    "build_image": 3,
    "canary": 3,
    "run_trials": 16,
    "score": 16,
    "judge": 32,
    "analyze_group": 4,
    "compare": 4,
    "attribution": 1,
    "summarize": 1,
    "manifest": 1,
    "report": 1,
    "record_config": 1,
    "check": 1,
    "all": 1,
}
GPQA = "src/evalnoise/data/gpqa_diamond_example.csv"


@pytest.fixture
def checkout(tmp_path):
    """The project's files (the workflow, the package it imports, the agents it builds),
    without the checkout's results or Snakemake state. The package too: run_tool imports it
    from the copy's src/, and a src/ holding only the data file let the jobs import whichever
    evalnoise the environment had installed — another checkout's, whose functions this
    checkout's scripts need not find."""
    return prepare_copy(copy_project(tmp_path / "ws"))


@pytest.fixture(scope="module")
def dry_checkout(tmp_path_factory):
    """One :func:`checkout` for the tests that only read the workflow (dry runs, lint)."""
    return prepare_copy(copy_project(tmp_path_factory.mktemp("dry") / "ws"))


def test_default_dry_run(dry_checkout):
    assert job_counts(run_tool(dry_checkout, "snakemake", "-n").stdout) == DEFAULT_JOBS


@pytest.mark.parametrize(
    ("profile", "plugins"),
    [
        ("slurm", ["snakemake_executor_plugin_slurm"]),
        ("kubernetes", ["snakemake_executor_plugin_kubernetes", "snakemake_storage_plugin_fs"]),
    ],
)
@pytest.mark.parametrize("workflow_profile", [True, False])
def test_cluster_profiles_dry_run(dry_checkout, profile, plugins, workflow_profile):
    missing = [p for p in plugins if importlib.util.find_spec(p) is None]
    if missing:
        pytest.skip(f"not installed: {', '.join(missing)}")
    CLUSTER_WORKSPACES.add(dry_checkout.resolve())  # its Snakemake needs the plugins
    args = ["-n", "--profile", f"profiles/{profile}"]
    if not workflow_profile:
        args += ["--workflow-profile", "none"]
    result = run_tool(dry_checkout, "snakemake", *args)
    assert job_counts(result.stdout) == DEFAULT_JOBS
    assert f"profiles/{profile}" in result.stderr


def test_the_cluster_plugins_load_unless_the_run_opts_out():
    """tools/install-cluster-plugins.sh: Snakemake finds the Slurm and Kubernetes executor
    plugins (as `--profile profiles/slurm` needs), except where EVALNOISE_CLUSTER_PLUGINS=0
    (the suite's local runs: the imports cost 0.4 s of CPU per Snakemake start)."""
    probe = (
        "from snakemake.scheduling.job_scheduler import registry; "
        "print(' '.join(sorted(registry.plugins)))"
    )
    found = {}
    for gate in ("1", "0"):
        env = dict(os.environ, EVALNOISE_CLUSTER_PLUGINS=gate)
        env["PATH"] = os.pathsep.join([str(no_slurm_probe()), env["PATH"]])
        out = subprocess.run(
            [sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True
        )
        found[gate] = set(out.stdout.split())
    assert {"slurm", "kubernetes"} <= found["1"], found
    assert not {"slurm", "kubernetes"} & found["0"], found
    assert "local" in found["0"] and "local" in found["1"]


@pytest.mark.parametrize("imported", [False, True])
def test_lint_is_clean(dry_checkout, imported):
    args = ["--lint"]
    if imported:
        args += ["--config", f"trials_from={GPQA}", "columns={group: model}"]
    result = run_tool(dry_checkout, "snakemake", *args)
    assert "Congratulations, your workflow is in a good condition!" in result.stdout + result.stderr


@pytest.mark.slow
def test_trials_from_runs_no_trial(checkout):
    """An imported table: analysis, comparisons and report run on it; no trial rule exists."""
    config = ["--config", f"trials_from={GPQA}", "columns={group: model}"]
    # the job table the run prints before its jobs: what a dry run would plan
    run = run_tool(checkout, "snakemake", *config)
    planned = job_counts(run.stdout + run.stderr)
    assert planned["import_trials"] == 1
    assert "run_trials" not in planned and "sample_tasks" not in planned
    assert planned["compare"] == 1 and planned["analyze_group"] == 2
    metrics = json.loads((checkout / "results" / "metrics.json").read_text())
    assert sorted(metrics["groups"]) == [
        "openai/gpt-5-nano-2025-08-07@imported",
        "openai/gpt-5.4-mini-2026-03-17@imported",
    ]
    assert all(g["n_trials"] == 250 and g["n_tasks"] == 50 for g in metrics["groups"].values())
    # the same numbers as `evalnoise analyze` on the same table
    cli = json.loads(
        run_tool(checkout, "evalnoise", "analyze", GPQA, "--group", "model", "--json").stdout
    )
    for record in cli["groups"]:
        mine = metrics["groups"][f"{record['group']}@imported"]
        for key, theirs in (("accuracy", "mean"), ("ci_low", "ci_low"), ("icc", "icc")):
            assert mine[key] == pytest.approx(record[theirs], abs=1e-6)
    assert (checkout / "results" / "report" / "index.html").is_file()
    assert job_counts(run_tool(checkout, "snakemake", "-n", *config).stdout) == {}
