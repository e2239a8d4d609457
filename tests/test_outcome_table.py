"""The one outcome table: a hypothetical outcome and a hypothetical flag, registered in
:mod:`evalnoise.outcome_table` alone, reach every output — the trial tables' statuses, the
infra policy, ``evalnoise analyze`` (JSON, text, help), ``summary.txt``, ``metrics.json``,
``profiles.csv``, the card (record, text, Markdown), the health check and the report's
outcome table."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from evalnoise import outcome_table
from evalnoise.cli import main
from evalnoise.outcome_table import Flag, Outcome

#: an infrastructure outcome the table does not have
LOST = Outcome(
    "engine_lost",
    "engine_lost (the container engine stopped answering)",
    "engine lost",
    "engine_lost",
    infra=True,
    phase="environment",
)
#: a flag the table does not have, held in a string column of the trial rows
AFTER = Flag("verdict_late", "verdict came late", "the verifier answered after its limit")


@pytest.fixture
def extended(monkeypatch):
    monkeypatch.setattr(outcome_table, "OUTCOME_TABLE", (*outcome_table.OUTCOME_TABLE, LOST))
    monkeypatch.setattr(outcome_table, "FLAG_TABLE", (*outcome_table.FLAG_TABLE, AFTER))


def test_the_table_is_what_every_list_reads():
    from evalnoise import outcomes, schema
    from evalnoise.report import health

    table = outcome_table.OUTCOME_TABLE
    # every list is a view of the table, in its order: a row added there is in all of them
    assert schema.STATUSES == tuple(dict.fromkeys(o.status for o in table))
    assert schema.INFRA_STATUSES == tuple(dict.fromkeys(o.status for o in table if o.infra))
    # and the table holds the statuses the runner and the importers write
    assert {"ok", "agent_error", "timeout", "oom_killed", "infra_error"} <= set(schema.STATUSES)
    assert outcomes.OUTCOMES == tuple(o.name for o in outcome_table.OUTCOME_TABLE)
    assert outcomes.UNDECIDED == tuple(o.name for o in table if not o.decided)
    assert {"verifier_error", "agent_setup_error", "unscored"} <= set(outcomes.UNDECIDED)
    assert health.OUTCOME_HEADERS["no_answer"] == "no answer"
    assert set(outcomes.OUTCOME_LABELS) == set(outcomes.OUTCOMES)
    with pytest.raises(ValueError, match="phase 'lunch'"):
        Outcome("x", "x", "x", "x", phase="lunch")


def test_a_registered_outcome_is_in_every_view(extended):
    from evalnoise import outcomes, schema
    from evalnoise.outcome_table import attempt_columns
    from evalnoise.report import health

    assert "engine_lost" in schema.STATUSES and schema.INFRA_STATUSES[-1] == "engine_lost"
    assert outcomes.OUTCOMES[-1] == "engine_lost"
    assert health.OUTCOME_HEADERS["engine_lost"] == "engine lost"
    assert attempt_columns()[-1] == "engine_lost_attempts"
    assert outcomes.FLAGS[-1] == "verdict_late"


def _trials() -> pd.DataFrame:
    """Agent ``a`` on 3 tasks × 4 trials: task t2's trials 2 and 3 lost the engine, two
    trials on t0 carry the flag (a verdict after an agent timeout)."""
    rows = []
    for i in range(3):
        for t in range(4):
            status = "engine_lost" if (i, t) in ((2, 2), (2, 3)) else "ok"
            rows.append(
                {
                    "agent": "a",
                    "resource_profile": "1x",
                    "task_id": f"t{i}",
                    "trial": t,
                    "attempt": 1,
                    "status": status,
                    "score": None if status != "ok" else float((i + t) % 2),
                    "verdict_late": "timeout" if (i, t) in ((0, 0), (0, 1)) else None,
                }
            )
    return pd.DataFrame(rows)


def test_analyze_counts_the_outcome_and_the_flag(extended, tmp_path, capsys):
    path = tmp_path / "trials.csv"
    _trials().to_csv(path, index=False)
    assert main(["analyze", str(path), "--score", "score", "--json", "--no-attribution"]) == 0
    (record,) = json.loads(capsys.readouterr().out)["groups"]
    assert record["outcomes"]["engine_lost"] == 2 and record["outcomes"]["verdict_late"] == 2
    assert record["outcomes"]["trials"] == 12
    assert main(["analyze", str(path), "--score", "score", "--no-attribution"]) == 0
    out = capsys.readouterr().out
    assert "0 unscored, 2 engine lost; flagged: 2 verdict came late" in out
    with pytest.raises(SystemExit):
        main(["analyze", "--help"])
    assert "agent_setup_error, engine_lost)" in " ".join(capsys.readouterr().out.split())
    with pytest.raises(SystemExit):
        main(["import", "--help"])
    assert "agent_setup_error, engine_lost (the outcome table" in " ".join(
        capsys.readouterr().out.split()
    )


def _group(tmp_path):
    from evalnoise.pipeline.collect import load_group
    from evalnoise.schema import SCORES, TASKS, conform

    tasks = pd.DataFrame({"task_id": ["t0", "t1", "t2"], "question": "q", "answer": "1"})
    tasks_path = tmp_path / "tasks.parquet"
    pq.write_table(conform(pa.Table.from_pandas(tasks, preserve_index=False), TASKS), tasks_path)
    trials = _trials()
    flag = trials.pop("verdict_late")
    trials["scorer"] = "numeric"
    trials["correct"] = trials["score"].map(lambda s: None if np.isnan(s) else bool(s))
    table = conform(pa.Table.from_pandas(trials, preserve_index=False), SCORES)
    # the flag's column is the other helpers' to add to the schema: beside it here
    table = table.append_column(
        "verdict_late", pa.array([None if pd.isna(v) else v for v in flag], pa.string())
    )
    shard = tmp_path / "scores.parquet"
    pq.write_table(table, shard)
    return load_group([shard], tasks_path, "a", "1x", {"mode": "as_incorrect"})


def test_the_pipeline_prints_the_outcome_and_the_flag_everywhere(extended, tmp_path):
    from evalnoise.outcomes import assess_health
    from evalnoise.pipeline.stages import analyze_group
    from evalnoise.pipeline.summary import summarize
    from evalnoise.report.cards import CardContext, evaluation_card
    from evalnoise.report.cards_markdown import card_markdown
    from evalnoise.report.cards_section import card_html
    from evalnoise.report.outcomes_section import outcomes_section

    options = {"confidence": 0.95, "cluster_se": "cr1", "quantile": "normal", "per_level": False}
    data = _group(tmp_path)
    assert data.counts["engine_lost_attempts"] == 2  # the infra policy's count per attempt
    stats = analyze_group(data, options, policy="as incorrect")
    assert stats["outcomes"]["engine_lost"] == 2 and stats["outcomes"]["verdict_late"] == 2
    result = summarize([stats], [], [], [], confidence=0.95)
    assert "2 engine lost; flagged: 2 verdict came late" in result.summary
    metric = result.metrics["groups"]["a@1x"]["outcomes"]
    assert metric["engine_lost"] == 2 and metric["verdict_late"] == 2
    profile = result.profiles.iloc[0]
    assert profile["engine_lost"] == 2 and profile["engine_lost_attempts"] == 2
    (group,) = result.groups
    card = evaluation_card(group, CardContext(benchmark="b", infra_policy="as incorrect"))
    assert card["outcomes"]["engine_lost"] == 2 and card["outcomes"]["verdict_late"] == 2
    html = card_html(card, "a-1x")
    assert ">engine lost</th>" in html and "Flagged: 2 verdict came late" in html
    markdown = card_markdown(card)
    assert "| engine lost | trials | attempts |" in markdown
    assert "Flagged: 2 verdict came late" in markdown
    page = outcomes_section([("a-1x", card)])
    assert 'title="engine_lost (the container engine stopped answering)">engine lost</th>' in page
    assert "2 verdict came late" in page
    # a group that lost the engine on most trials is no measurement, and says which outcome
    health = assess_health({**stats["outcomes"], "ok": 3})
    assert not health.valid and "2 engine_lost" in health.reasons[0]


def test_every_importers_status_table_maps_to_a_status():
    from evalnoise.importers import harbor_jobs, inspect_log, metr, terminal_bench
    from evalnoise.schema import STATUSES

    for table in (
        harbor_jobs.STATUS_OF_EXCEPTION,
        inspect_log.STATUS_OF_LIMIT,
        metr.STATUS_OF_ERROR_SOURCE,
        terminal_bench.STATUS_OF_FAILURE_MODE,
    ):
        assert set(table.values()) <= set(STATUSES)


def test_the_importers_take_the_status(extended, tmp_path):
    from evalnoise.importers import import_trials

    path = tmp_path / "scores.csv"
    _trials().drop(columns="verdict_late").to_csv(path, index=False)
    table = import_trials(
        "table", [path], column_mapping={"task": "task_id", "score": "score", "status": "status"}
    )
    assert (table.table.column("status").to_pandas() == "engine_lost").sum() == 2


def test_a_flag_counts_a_true_boolean_or_a_named_reason():
    from evalnoise.outcomes import flag_counts, flags_text, outcome_counts, outcome_line

    frame = pd.DataFrame(
        {
            "status": ["ok"] * 5,
            "score": [1.0] * 5,
            "oom_in_agent": pd.array([True, False, None, True, False], dtype="boolean"),
            "verified_after": ["timeout", None, "", "agent_error", None],
        }
    )
    # a table without a flag's column counts none of it (environment_tampered here)
    assert flag_counts(frame) == {"verified_after": 2, "oom_in_agent": 2}
    counts = outcome_counts(frame)
    assert flags_text(counts) == "2 verified after an agent failure, 2 OOM kill in the agent phase"
    assert outcome_line(counts).endswith("0 unscored; flagged: " + flags_text(counts))
    assert "flagged" not in outcome_line(outcome_counts(frame[["status", "score"]]))
