"""The statistics stages on synthetic score shards, and importing a trial table."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pipeline_helpers import ROOT

from evalnoise.errors import InputError
from evalnoise.pipeline.collect import load_group
from evalnoise.pipeline.imported import import_groups, import_table
from evalnoise.pipeline.stages import (
    analyze_group,
    budget_table,
    compare_groups,
    convergence_table,
    group_outputs,
)
from evalnoise.pipeline.summary import summarize
from evalnoise.schema import SCORES, TASKS, conform
from evalnoise.stats import holm

OPTIONS = {
    "confidence": 0.95,
    "cluster_se": "cr1",
    "quantile": "normal",
    "per_level": True,
    "convergence": {"subsamples": 50, "seed": 0, "tolerance": 0.02},
    "bootstrap": {"resamples": 500, "seed": 0},
    "budget": {"runs": None, "max_tasks": None},
}
AS_INCORRECT = {"mode": "as_incorrect"}


def write_tasks(path, n_tasks=6):
    frame = pd.DataFrame(
        {
            "task_id": [f"t{i}" for i in range(n_tasks)],
            "question": "q",
            "answer": "1",
            "level": ["1" if i % 2 == 0 else "2" for i in range(n_tasks)],
        }
    )
    pq.write_table(conform(pa.Table.from_pandas(frame, preserve_index=False), TASKS), path)
    return path


def write_scores(path, agent, profile, rates, trials=4, statuses=None, seed=0):
    """One score shard: task i is right with probability rates[i]; statuses overrides."""
    rng = np.random.default_rng(seed)
    rows = []
    for i, rate in enumerate(rates):
        for t in range(trials):
            status = (statuses or {}).get((i, t), "ok")
            correct = (
                None
                if status in ("timeout", "oom_killed", "infra_error")
                else bool(rng.random() < rate)
            )
            rows.append(
                {
                    "agent": agent,
                    "resource_profile": profile,
                    "task_id": f"t{i}",
                    "trial": t,
                    "attempt": 1,
                    "status": status,
                    "scorer": "numeric",
                    "correct": correct,
                    "score": None if correct is None else float(correct),
                }
            )
    table = conform(pa.Table.from_pandas(pd.DataFrame(rows), preserve_index=False), SCORES)
    pq.write_table(table, path)
    return path


@pytest.fixture
def shards(tmp_path):
    tasks = write_tasks(tmp_path / "tasks.parquet")
    rates = [0.9, 0.8, 0.2, 0.1, 0.5, 0.6]
    a1 = write_scores(tmp_path / "a1.parquet", "a", "1x", rates, statuses={(0, 1): "oom_killed"})
    a3 = write_scores(tmp_path / "a3.parquet", "a", "3x", rates, seed=1)
    b1 = write_scores(tmp_path / "b1.parquet", "b", "1x", [r / 2 for r in rates], seed=2)
    return tasks, {"a1": a1, "a3": a3, "b1": b1}


def test_infra_policy_decides_how_infra_outcomes_count(shards):
    tasks, files = shards
    counted = load_group([files["a1"]], tasks, "a", "1x", AS_INCORRECT)
    assert len(counted.frame) == 24
    oom = counted.frame[(counted.frame["task"] == "t0") & (counted.frame["trial"] == 1)]
    assert oom["score"].tolist() == [0.0]
    assert counted.counts["oom_killed_attempts"] == 1
    assert counted.counts["infra_error_rate_attempts"] == pytest.approx(1 / 24)
    excluded = load_group([files["a1"]], tasks, "a", "1x", {"mode": "exclude"})
    assert len(excluded.frame) == 23 and excluded.counts["excluded"] == 1
    with pytest.raises(ValueError, match="no trials of agent 'a' under resource profile '9x'"):
        load_group([files["a1"]], tasks, "a", "9x", AS_INCORRECT)


def test_unscored_trials_are_left_out_and_counted(tmp_path):
    tasks = write_tasks(tmp_path / "tasks.parquet", 2)
    path = write_scores(tmp_path / "s.parquet", "a", "1x", [1.0, 0.0], trials=3)
    table = pq.read_table(path).to_pandas()
    table["correct"] = table["correct"].astype("boolean")
    table.loc[0, ["correct", "score"]] = None  # the judge could not decide
    table.loc[0, "judge_status"] = "judge_error"
    pq.write_table(conform(pa.Table.from_pandas(table, preserve_index=False), SCORES), path)
    data = load_group([path], tasks, "a", "1x", AS_INCORRECT)
    assert data.counts["unscored"] == 1
    assert len(data.frame) == 5


def test_analyze_group(shards):
    tasks, files = shards
    data = load_group([files["a1"]], tasks, "a", "1x", AS_INCORRECT)
    stats = analyze_group(data, OPTIONS, policy="as incorrect")
    overall = stats["overall"]
    assert overall["group"] == "a@1x" and overall["agent"] == "a"
    assert overall["n_tasks"] == 6 and overall["n_obs"] == 24
    assert overall["mean"] == pytest.approx(data.frame["score"].mean())
    assert overall["ci_low"] < overall["mean"] < overall["ci_high"]
    assert [r["level"] for r in stats["levels"]] == ["1", "2"]
    assert sum(r["n_obs"] for r in stats["levels"]) == 24
    assert len(stats["per_task"]) == 6
    assert stats["infra"]["infra_attempts"] == 1
    assert 0 < stats["infra"]["infra_ci_high"] < 1
    assert stats["trials_per_task"] == {"min": 4, "max": 4}
    json.dumps(stats, allow_nan=True)  # JSON-ready


def test_compare_and_summarize(shards):
    tasks, files = shards
    groups = {
        key: load_group([files[key]], tasks, key[0], f"{key[1]}x", AS_INCORRECT) for key in files
    }
    agents = compare_groups(groups["a1"], groups["b1"], kind="agents", within="1x", options=OPTIONS)
    assert (agents["a"], agents["b"]) == ("a@1x", "b@1x")
    means = {k: g.frame["score"].mean() for k, g in groups.items()}
    assert agents["diff"] == pytest.approx(means["a1"] - means["b1"])
    profiles = compare_groups(
        groups["a3"], groups["a1"], kind="resource_profiles", within="a", options=OPTIONS
    )
    assert (profiles["a"], profiles["b"]) == ("a@1x", "a@3x")  # sorted, diff = 1x − 3x
    assert profiles["infra_error_rate_a"] == pytest.approx(1 / 24)
    assert profiles["infra_error_rate_b"] == 0

    stats = [analyze_group(g, OPTIONS, policy="as incorrect") for g in groups.values()]
    conv = [convergence_table(g, OPTIONS) for g in groups.values()]
    budgets = [budget_table(s, OPTIONS, max_tasks=None) for s in stats]
    extra = dict(agents, within="3x", a="a@3x", b="b@3x", pvalue=0.01)
    result = summarize(stats, [profiles, agents, extra], conv, budgets, confidence=0.95)
    assert [g["group"] for g in result.groups] == ["a@1x", "a@3x", "b@1x"]
    # Holm over the run's whole family: agents and resource profiles together
    family = result.comparisons
    assert len(family) == 3
    expected = holm(np.array([r["pvalue"] for r in family]))
    assert [r["pvalue_holm"] for r in family] == pytest.approx(list(expected))
    lone = [r for r in family if r["kind"] == "resource_profiles"]
    assert lone[0]["pvalue_holm"] >= lone[0]["pvalue"]
    # a pair file never claims an adjustment over a family of one
    assert "pvalue_holm" not in agents and "pvalue_holm" not in agents["mcnemar"]
    assert list(result.profiles["group"]) == ["a@1x", "a@3x", "b@1x"]
    assert set(result.convergence["group"]) == {"a@1x", "a@3x", "b@1x"}
    assert "a@1x:" in result.summary and "Holm p" in result.summary
    metrics = result.metrics
    assert metrics["groups"]["a@1x"]["n_trials"] == 24
    assert "agents:1x:a@1x-vs-b@1x" in metrics["comparisons"]
    again = summarize(stats, [agents, profiles, extra], conv, budgets, confidence=0.95)
    assert json.dumps(again.metrics) == json.dumps(metrics)  # order-independent


def test_budget_table(shards):
    tasks, files = shards
    stats = analyze_group(
        load_group([files["a1"]], tasks, "a", "1x", AS_INCORRECT), OPTIONS, policy="as incorrect"
    )
    table = budget_table(stats, OPTIONS, max_tasks=None)
    assert (table["budget"] == 24).all()
    assert table["recommended"].sum() == 1
    assert (table["n_tasks"] * table["trials"] <= 24).all()
    capped = budget_table(stats, OPTIONS, max_tasks=6)
    assert capped["n_tasks"].max() <= 6
    stats["overall"]["sigma2_within"] = None
    assert budget_table(stats, OPTIONS, max_tasks=None).empty


@pytest.mark.parametrize(
    ("health", "valid"),
    [
        (None, True),
        ({"max_failure_rate": 0.5, "expected_failures": []}, True),
        # a1's one OOM kill in 24 trials is over a 1 % limit: not a measurement
        ({"max_failure_rate": 0.01, "expected_failures": []}, False),
    ],
)
def test_group_outputs_are_the_three_stages_one_by_one(shards, health, valid):
    """Rule analyze_group computes a group's stats, convergence and budget in one process;
    the numbers are those of the three functions called one by one (as the three rules it
    replaced did), also for a group that is not a measurement (convergence withheld)."""
    tasks, files = shards
    data = load_group([files["a1"]], tasks, "a", "1x", AS_INCORRECT)
    out = group_outputs(data, OPTIONS, policy="as incorrect", health=health, max_tasks=6)
    stats = analyze_group(data, OPTIONS, policy="as incorrect", health=health)
    assert out.stats == stats
    assert stats["health"]["valid"] is valid
    pd.testing.assert_frame_equal(out.convergence, convergence_table(data, OPTIONS, health))
    pd.testing.assert_frame_equal(out.budget, budget_table(stats, OPTIONS, max_tasks=6))
    assert out.convergence.empty is (not valid)
    assert set(out.to_dict()) == {"stats", "convergence", "budget"}


COLUMNS = {
    "group": None,
    "task": "task_id",
    "trial": "trial",
    "score": "correct",
    "resource_profile": None,
    "status": None,
    "level": None,
}


def test_import_a_table():
    path = str(ROOT / "src" / "evalnoise" / "data" / "gpqa_diamond_example.csv")
    columns = dict(COLUMNS, group="model")
    groups = import_groups(path, columns)
    assert len(groups) == 2 and {r for _, r in groups} == {"imported"}
    tasks, trials, scores = import_table(path, columns)
    assert tasks.num_rows == 50
    assert trials.num_rows == scores.num_rows == 500
    assert set(scores.column("scorer").to_pylist()) == {"recorded"}


def test_import_statuses_and_errors(tmp_path):
    path = tmp_path / "t.csv"
    pd.DataFrame(
        {
            "agent": ["x"] * 4,
            "task_id": ["a", "a", "b", "b"],
            "trial": ["r1", "r2", "r1", "r2"],
            "correct": [1, None, 0, 1],
            "status": ["ok", "timeout", "ok", "ok"],
            "rp": ["1x"] * 4,
        }
    ).to_csv(path, index=False)
    columns = dict(COLUMNS, group="agent", status="status", resource_profile="rp")
    _, _, scores = import_table(str(path), columns)
    frame = scores.to_pandas()
    assert frame["trial"].tolist() == [0, 1, 0, 1]
    assert frame.loc[1, "status"] == "timeout" and pd.isna(frame.loc[1, "score"])
    assert import_groups(str(path), columns) == [("x", "1x")]
    # an agent error that left no score (a Harbor agent crash) imports as the agent's
    # failure, as the pipeline's scorer counts one, instead of stopping the import
    errored = tmp_path / "agent_error.csv"
    pd.DataFrame(
        {
            "task_id": ["a", "b"],
            "trial": [0, 0],
            "correct": [1, None],
            "status": ["ok", "agent_error"],
        }
    ).to_csv(errored, index=False)
    _, _, scores = import_table(str(errored), dict(COLUMNS, status="status"))
    assert scores.to_pandas()["score"].tolist() == [1.0, 0.0]
    with pytest.raises(InputError, match="column 'nope'"):
        import_groups(str(path), dict(columns, status="nope"))
    bad = tmp_path / "bad.csv"
    pd.DataFrame(
        {"agent": ["x"], "task_id": ["a"], "trial": [0], "correct": [1], "status": ["crashed"]}
    ).to_csv(bad, index=False)
    with pytest.raises(InputError, match="status 'crashed' is not one of"):
        import_groups(str(bad), dict(COLUMNS, group="agent", status="status"))


def test_unjudged_trials_are_counted_and_make_the_group_incomplete(shards, tmp_path):
    """Issue 21.2: with the judge's server killed mid-stage, the unjudged trials are
    counted in the group's outcomes and make it incomplete (metrics ``valid: false``); the
    judge's parse rate is over the replies that came back, not over every trial sent."""
    from evalnoise.pipeline.judging import judge_quality

    tasks, files = shards
    judged = pq.read_table(files["a3"]).to_pandas()
    judged["scorer"] = "judge:m"
    judged["judge_status"] = "ok"
    judged["judge_votes"] = [[bool(c), bool(c)] for c in judged["correct"]]
    judged["correct"] = judged["correct"].astype("boolean")
    dead = judged.index[:5]  # the server died: no reply
    unparsed = judged.index[5:6]  # a reply that did not parse
    judged.loc[dead, "judge_explanation"] = "judge call failed after 1 attempt(s): refused"
    judged.loc[unparsed, "judge_explanation"] = "unparseable judge reply (no JSON): 'x'"
    for rows in (dead, unparsed):
        judged.loc[rows, ["correct", "score"]] = None
        judged.loc[rows, "judge_status"] = "judge_error"
        judged.loc[rows, "judge_votes"] = pd.Series([None] * len(rows), index=rows)
    path = tmp_path / "judged.parquet"
    pq.write_table(conform(pa.Table.from_pandas(judged, preserve_index=False), SCORES), path)

    record = judge_quality(
        [files["a3"]],
        [path],
        tasks,
        "a",
        "3x",
        options=OPTIONS,
        policy=AS_INCORRECT,
        judge={"mode": "extract", "samples": 2},
    )
    assert (record["unjudged"], record["call_failures"], record["unparsed"]) == (6, 5, 1)
    assert record["parse_rate"] == pytest.approx(18 / 19)  # 19 replies, 18 parsed

    group = load_group([files["a3"]], tasks, "a", "3x", AS_INCORRECT)
    stats = analyze_group(group, OPTIONS, policy="as incorrect")
    result = summarize([stats], [], [], [], confidence=0.95, judge=[record])
    metrics = result.metrics
    entry = metrics["groups"]["a@3x"]
    assert entry["outcomes"]["unjudged"] == 6 and entry["judge"]["unjudged"] == 6
    assert entry["valid"] is False and entry["measurement"] is True
    assert "6 of 24 trials unjudged" in entry["incomplete"][0]
    assert entry["accuracy"] is not None  # the reference scorer's headline is complete
    assert metrics["valid"] is False
    assert any("6 of 24 trials unjudged" in p for p in result.problems)
    assert "6 of 24 UNJUDGED (5 calls failed, 1 reply unparseable)" in result.summary
    (out,) = result.groups
    assert out["health"]["complete"] is False and out["outcomes"]["unjudged"] == 6
