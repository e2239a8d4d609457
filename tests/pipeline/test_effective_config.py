"""The effective config: recorded by every run, and `dvc repro` never quietly rewrites it.

After `snakemake --config ...` (or `--configfile extra.yaml`) grew a run, `dvc repro` — which
only reads config/config.yaml — must refuse to recompute the results with the file's values
and say which keys differ; once the file says the same, it proceeds.
"""

from __future__ import annotations

import json
import shutil

import pytest
import yaml
from pipeline_helpers import run_tool

from evalnoise.pipeline.effective_config import config_diff, config_record, guard_message


def test_config_diff_names_dotted_keys():
    a = {"trials": {"count": 12, "block_size": 4}, "run_seed": 0, "agents": {"x": {"env": {}}}}
    b = {"trials": {"count": 8, "block_size": 4}, "run_seed": 0, "agents": {}}
    assert config_diff(a, b) == [("agents.x", {"env": {}}, None), ("trials.count", 12, 8)]
    assert config_diff(a, a) == []


def test_record_lists_the_overridden_keys():
    record = config_record({"trials": {"count": 12}}, {"trials": {"count": 8}})
    assert record == {"config": {"trials": {"count": 12}}, "overridden": {"trials.count": 12}}
    assert config_record({"a": 1}, {"a": 1})["overridden"] == {}


def test_guard_refuses_only_a_rewrite_of_an_overridden_run():
    grown = config_record({"trials": {"count": 12}}, {"trials": {"count": 8}})
    message = guard_message({"trials": {"count": 8}}, grown, path="results/config.json")
    assert message is not None
    assert "trials.count: results have 12, this run would use 8" in message
    # the same config as the recorded run: fine
    assert guard_message({"trials": {"count": 12}}, grown, path="x") is None
    # the last run used the file as it was: a changed file (dvc exp run -S) is a new run
    plain = config_record({"trials": {"count": 8}}, {"trials": {"count": 8}})
    assert guard_message({"trials": {"count": 16}}, plain, path="x") is None
    assert guard_message({"trials": {"count": 16}}, None, path="x") is None


@pytest.mark.docker
@pytest.mark.slow
def test_dvc_repro_refuses_to_rewrite_a_grown_run(tmp_path, tiny_reference):
    # a copy of the test run's finished tiny evaluation (2 agents x 3 tasks x 2 trials),
    # grown by an override: its first run is the shared one, not one of its own
    ws = tmp_path / "ws"
    shutil.copytree(tiny_reference, ws, symlinks=True)
    (ws / "extra.yaml").write_text("trials:\n  count: 4\n")
    run_tool(ws, "snakemake", "--cores", "2", "--configfile", "extra.yaml")
    record = json.loads((ws / "results" / "config.json").read_text())
    assert record["overridden"] == {"trials.count": 4}
    assert record["config"]["trials"]["count"] == 4

    refused = run_tool(ws, "dvc", "repro", check=False)
    out = refused.stdout + refused.stderr
    assert refused.returncode != 0
    assert "trials.count: results have 4, this run would use 2" in out, out[-3000:]
    # nothing was rewritten: the 4-trial results are still there
    metrics = json.loads((ws / "results" / "metrics.json").read_text())
    assert metrics["groups"]["steady@1x"]["n_trials"] == 3 * 4

    # once config/config.yaml says the same, dvc repro proceeds and runs no new trial
    config_path = ws / "config" / "config.yaml"
    config = yaml.safe_load(config_path.read_text())
    config["trials"]["count"] = 4
    config_path.write_text(yaml.safe_dump(config, sort_keys=False))
    run_tool(ws, "dvc", "repro")
    record = json.loads((ws / "results" / "config.json").read_text())
    assert record["overridden"] == {}
    assert json.loads((ws / "results" / "metrics.json").read_text()) == metrics
