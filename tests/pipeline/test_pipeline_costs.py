"""Cost drivers through the schemas and the analysis stages: TRIALS / SCORES columns,
``conform``, shards from before the columns, ``analyze_group``, ``judge_quality`` and
``summarize`` (the judge stage's calls counted once)."""

from __future__ import annotations

import copy

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from evalnoise.costs import Prices
from evalnoise.pipeline.collect import load_group, read_scores
from evalnoise.pipeline.judging import judge_quality
from evalnoise.pipeline.stages import analyze_group
from evalnoise.pipeline.summary import summarize
from evalnoise.runner.shard import rows_to_table
from evalnoise.runner.trial import base_row
from evalnoise.schema import SCORES, TASKS, TRIALS, conform

OPTIONS = {
    "confidence": 0.95,
    "cluster_se": "cr1",
    "quantile": "normal",
    "per_level": False,
}
AS_INCORRECT = {"mode": "as_incorrect"}
TRIAL_COST = ("prompt_tokens", "completion_tokens", "model_calls")
JUDGE_COST = ("judge_calls", "judge_cached", "judge_prompt_tokens", "judge_completion_tokens")


def test_cost_columns_are_nullable_int64():
    for name in TRIAL_COST:
        field = TRIALS.field(name)
        assert field.type == pa.int64() and field.nullable
        assert SCORES.field(name) == field  # a score row is its trial row plus the verdict
    for name in JUDGE_COST:
        assert SCORES.field(name).type == pa.int64() and SCORES.field(name).nullable
        assert TRIALS.get_field_index(name) < 0
    assert TRIALS.field("duration_s").type == pa.float64()  # container seconds


def test_conform_fills_what_an_older_table_lacks():
    old = pa.table(
        {
            "agent": ["a"],
            "resource_profile": ["1x"],
            "task_id": ["t"],
            "trial": [0],
            "attempt": [1],
            "status": ["ok"],
        }
    )
    table = conform(old, TRIALS)
    assert table.schema.equals(TRIALS)
    assert [table.column(c)[0].as_py() for c in TRIAL_COST] == [None, None, None]
    with pytest.raises(ValueError, match="columns not in the schema: tokens"):
        conform(old.append_column("tokens", pa.array([1])), TRIALS)


def test_a_runner_row_is_a_trials_row():
    """Every key of the backends' row is a TRIALS column, and back with the environment
    trials' own columns (the journal's rows too)."""
    from evalnoise.runner import agent_spec
    from evalnoise.runner import resource_profile as make_profile
    from evalnoise.runner.environment import EXTRA_COLUMNS
    from evalnoise.runner.trial import TrialRequest

    request = TrialRequest(
        agent=agent_spec({"name": "a", "command": ["true"]}),
        task={"task_id": "t"},
        resource_profile=make_profile("1x"),
        trial=0,
        attempt=1,
        seed=1,
        shard_id="s",
    )
    row = base_row(request, backend="local", host="h")
    assert [*row, *EXTRA_COLUMNS] == TRIALS.names
    row.update(status="ok", prompt_tokens=12, completion_tokens=3, model_calls=1)
    table = rows_to_table([row])
    assert [table.column(c)[0].as_py() for c in TRIAL_COST] == [12, 3, 1]


def _scores(agent, rows, **extra) -> pa.Table:
    frame = pd.DataFrame(
        [
            {
                "agent": agent,
                "resource_profile": "1x",
                "task_id": f"t{i % 2}",
                "trial": i // 2,
                "attempt": 1,
                "status": "ok",
                "scorer": "numeric",
                "correct": bool(i % 3),
                "score": float(bool(i % 3)),
                **row,
                **extra,
            }
            for i, row in enumerate(rows)
        ]
    )
    return conform(pa.Table.from_pandas(frame, preserve_index=False), SCORES)


@pytest.fixture
def tasks(tmp_path):
    frame = pd.DataFrame({"task_id": ["t0", "t1"], "question": "q", "answer": "1", "level": "1"})
    path = tmp_path / "tasks.parquet"
    pq.write_table(conform(pa.Table.from_pandas(frame, preserve_index=False), TASKS), path)
    return path


def test_analysis_counts_drivers_over_old_and_new_shards(tmp_path, tasks):
    new = _scores(
        "a",
        [
            {"duration_s": 2.0, "prompt_tokens": 100, "completion_tokens": 10, "model_calls": 1},
            {"duration_s": 4.0, "prompt_tokens": 300, "completion_tokens": 30, "model_calls": 3},
        ],
    )
    # a shard written before the cost columns existed
    old = _scores("a", [{"duration_s": 3.0}, {"duration_s": 3.0}]).select(
        [n for n in SCORES.names if n not in TRIAL_COST + JUDGE_COST]
    )
    old = old.set_column(3, "trial", pa.array([2, 2]))
    pq.write_table(new, tmp_path / "new.parquet")
    pq.write_table(old, tmp_path / "old.parquet")
    paths = [tmp_path / "new.parquet", tmp_path / "old.parquet"]
    assert len(read_scores(paths)) == 4
    data = load_group(paths, tasks, "a", "1x", AS_INCORRECT)
    costs = analyze_group(data, OPTIONS, policy="as incorrect")["costs"]
    assert costs["trials"] == 4
    d = costs["drivers"]
    assert d["container_seconds"] == {"n": 4, "missing": 0, "total": 12.0, "mean": 3.0}
    assert d["prompt_tokens"] == {"n": 2, "missing": 2, "total": 400.0, "mean": 200.0}
    assert d["model_calls"] == {"n": 2, "missing": 2, "total": 4.0, "mean": 2.0}
    assert "judge_calls" not in d  # the numeric scorer asked no judge


def _judged(path, calls):
    table = _scores(
        "a",
        [{"judge_calls": c, "judge_cached": 0, "judge_votes": [True]} for c in calls],
        scorer="judge:m",
        judge_status="ok",
    )
    pq.write_table(table, path)
    return path


def test_the_judge_stage_calls_reach_the_group_once(tmp_path, tasks):
    reference = tmp_path / "ref.parquet"
    pq.write_table(_scores("a", [{"duration_s": 1.0}] * 4), reference)
    judged = _judged(tmp_path / "judged.parquet", [2, 2, 1, 0])
    record = judge_quality(
        [reference],
        [judged],
        tasks,
        "a",
        "1x",
        options=OPTIONS,
        policy=AS_INCORRECT,
        judge={"mode": "extract", "samples": 2},
    )
    assert record["costs"]["drivers"]["judge_calls"] == {
        "n": 4,
        "missing": 0,
        "total": 5.0,
        "mean": 1.25,
    }
    assert set(record["costs"]["drivers"]) == {
        "judge_calls",
        "judge_cached",
        "judge_prompt_tokens",
        "judge_completion_tokens",
    }

    def stats_of(paths):
        data = load_group(paths, tasks, "a", "1x", AS_INCORRECT)
        return analyze_group(data, OPTIONS, policy="as incorrect")

    # analysis of the reference scores + the judge stage: the judge's calls come from it
    group = summarize([stats_of([reference])], [], [], [], confidence=0.95, judge=[record])
    costs = group.groups[0]["costs"]
    assert costs["drivers"]["judge_calls"]["total"] == 5.0
    assert costs["drivers"]["container_seconds"]["total"] == 4.0
    # analysis of the judge stage's own scores (analysis.score: judge): still 5 calls, not 10
    group = summarize([stats_of([judged])], [], [], [], confidence=0.95, judge=[record])
    assert group.groups[0]["costs"]["drivers"]["judge_calls"]["total"] == 5.0


def test_prices_in_the_config(default_config_raw, default_config, schema):
    from evalnoise.pipeline.outputs import card_context
    from evalnoise.pipeline.settings import ConfigError, check_config

    # none by default: the drivers are shown, unpriced
    assert set(default_config_raw["prices"].values()) == {None}
    assert not Prices.from_config(card_context(default_config).prices).priced
    config = copy.deepcopy(default_config_raw)
    config["prices"] = {"currency": "USD", "per_million_prompt_tokens": 0.15}
    check_config(config, schema)
    for key, value, message in (
        ("per_judge_call", -0.01, "config key prices.per_judge_call: -0.01 is less than"),
        ("per_call", 1, "config key prices.per_call: unknown key (allowed: currency,"),
        ("currency", 1, "config key prices.currency: 1 is not of type"),
    ):
        bad = copy.deepcopy(config)
        bad["prices"][key] = value
        with pytest.raises(ConfigError, match=message.replace(".", r"\.").replace("(", r"\(")):
            check_config(bad, schema)
    default_config["prices"] = config["prices"]
    assert card_context(default_config).prices["per_million_prompt_tokens"] == 0.15
