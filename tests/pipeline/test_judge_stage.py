"""The LLM judge as a stage of the pipeline, with the real model server.

1. With the managed server (SmolLM2-135M, extract mode, 2 samples per trial) and the rule
   judge ``last_number`` (the default's two judges), every trial is judged beside the
   numeric reference by each: one judged shard per judge, each judge's parse rate and κ
   against the reference, the judge's share of variance and the judges' variance as a facet
   reach the summary, groups.json, metrics.json and the cards.
2. A judge server that is down gives ``judge_error`` rows: counted (summary, metrics), the run
   exits non-zero saying so; once the server is back at the same address a plain
   ``snakemake`` judges exactly those trials again and the run is whole.
"""

from __future__ import annotations

import json

import pytest
from model_stack import needs_model
from pipeline_helpers import make_workspace, run_tool

pytestmark = [pytest.mark.docker, pytest.mark.slow, needs_model]

BASE = {
    "benchmark": {"n": 3, "levels": [1]},
    "agents": {"tiny": {"build": "agents/tiny", "env": {"TINY_SKILL": "a"}}},
    "resource_profiles": {"1x": {}},
    "trials": {"count": 2, "block_size": 2},
    "task_chunk_size": 3,
    "analysis": {"convergence": {"subsamples": 20}, "bootstrap": {"resamples": 200}},
}


def _json(ws, path):
    return json.loads((ws / path).read_text(encoding="utf-8"))


def test_the_judge_stage_measures_the_judge(tmp_path, docker_engine):
    config = {**BASE, "scorer": {"judge": {"stage": True, "samples": 2}}}
    ws = make_workspace(tmp_path / "ws", config)
    run_tool(ws, "snakemake", "--cores", "2", timeout=1200)
    judged = sorted((ws / "results" / "judged").rglob("*.parquet"))
    assert [p.relative_to(ws / "results" / "judged").parts[0] for p in judged] == [
        "last_number",
        "llm",
    ]
    (group,) = _json(ws, "results/analysis/groups.json")["groups"]
    judge = group["judge"]
    assert judge["name"] == "llm" and judge["mode"] == "extract" and judge["samples"] == 2
    assert judge["sent"] == 6 and judge["parse_rate"] == 1.0 and judge["judge_errors"] == 0
    # the tiny agent answers with the bare number: extraction is exact, so is the judge
    assert judge["kappa"] is None or judge["kappa"] > 0.5
    assert judge["agreement"] >= 0.9
    assert [j["name"] for j in judge["judges"]] == ["llm", "last_number"]
    assert judge["judges"][1]["same_as_reference"] is True
    quality = _json(ws, "results/analysis/judge/tiny/1x.json")
    assert quality["nested"] is not None and quality["nested"]["n_obs"] == 12
    assert quality["judge_facet"]["n_judges"] == 2
    assert quality["judge_facet"]["n_obs"] == 12 + 6  # 2 votes a trial, and the rule's 1
    summary = (ws / "results" / "analysis" / "summary.txt").read_text()
    assert "judge llm (extract, 2 samples per trial)" in summary and "κ = " in summary
    assert "judge last_number: rule last_number, 1 sample per trial: κ = " in summary
    assert "judges as a facet: 2 judges" in summary
    metrics = _json(ws, "results/metrics.json")
    assert metrics["valid"] is True
    assert metrics["groups"]["tiny@1x"]["judge"]["parse_rate"] == 1.0
    assert set(metrics["groups"]["tiny@1x"]["judge"]["kappa_by_judge"]) == {"llm", "last_number"}
    cards = list((ws / "results" / "report").rglob("*.json"))
    assert any(json.loads(c.read_text()).get("judge") for c in cards)
    index = (ws / "results" / "report" / "index.html").read_text()
    assert "judge llm (extract, 2 samples per trial)" in index and "κ = " in index
    # the per-judge detail is the card's (a row labelled by the judge), not the summary's
    assert "Judge last_number" in index and "rule last_number, 1 sample per trial" in index
    manifest = _json(ws, "results/manifest.json")
    assert manifest["judge_template_sha256"]
    assert set(manifest["judge_template_sha256_by_judge"]) == {"llm", "last_number"}
    assert any(a["path"].startswith("results/judged/llm/") for a in manifest["artifacts"])


def test_a_dead_judge_is_counted_and_the_rerun_fills_it_in(tmp_path, docker_engine):
    from evalnoise.models import DEFAULT_MODEL_ALIAS, LlamaServer, ServerConfig
    from evalnoise.models.server import free_port

    port = free_port()
    judge = {
        "stage": True,
        "samples": 1,
        "base_url": f"http://127.0.0.1:{port}/v1",
        "model": DEFAULT_MODEL_ALIAS,
    }
    ws = make_workspace(tmp_path / "ws", {**BASE, "scorer": {"judge": judge}})
    first = run_tool(ws, "snakemake", "--cores", "2", check=False, timeout=1200)
    out = first.stdout + first.stderr
    assert first.returncode != 0
    assert "6 of 6 trials unjudged by the judge stage (judge_error)" in out, out[-3000:]
    metrics = _json(ws, "results/metrics.json")
    assert metrics["valid"] is False
    assert "unjudged" in (ws / "results" / "analysis" / "summary.txt").read_text()
    # the reference scores are whole: the judge's failure never changed them
    assert metrics["groups"]["tiny@1x"]["n_trials"] == 6

    log = tmp_path / "judge-server.log"
    with LlamaServer(ServerConfig(port=port, log_path=str(log))) as server:
        before = server.request_count()
        second = run_tool(ws, "snakemake", "--cores", "2", timeout=1200)
        assert second.returncode == 0
        # exactly the six failed trials were judged again, once each
        assert server.request_count() - before == 6
    metrics = _json(ws, "results/metrics.json")
    assert metrics["valid"] is True
    assert metrics["groups"]["tiny@1x"]["judge"]["parse_rate"] == 1.0
    again = run_tool(ws, "snakemake", "-n", "--cores", "2")
    assert "Nothing to be done" in again.stdout + again.stderr
