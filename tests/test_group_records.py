"""The typed group record and the artifacts that hold it: every key is a field, every field a key.

The artifacts are made by the code that writes them, from small tables: ``evalnoise analyze
--json`` (a table without statuses, one with a valid and a withheld group, one whose trials
shared a seed), the pipeline's ``groups.json`` (its ``groups`` and ``levels``, with a judge
and costs) and ``metrics.json`` (its ``groups``, with the D study's total error and the
attribution's infrastructure share). A key that no field of
:class:`evalnoise.group_records.GroupRecord` (or :class:`~evalnoise.group_records.GroupMetrics`)
declares fails here, and so does a field that no artifact writes.
"""

from __future__ import annotations

import json
from dataclasses import fields

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from evalnoise.cli import main
from evalnoise.group_records import GroupMetrics, GroupRecord, MetricsReading, Reading
from evalnoise.infra_failures import TaskFailure

OPTIONS = {
    "confidence": 0.95,
    "cluster_se": "cr1",
    "quantile": "normal",
    "per_level": True,
    "convergence": {"subsamples": 20, "seed": 0, "tolerance": 0.02},
    "bootstrap": {"resamples": 200, "seed": 0},
    "budget": {"runs": None, "max_tasks": None},
}


def _names(cls) -> set[str]:
    return {f.name for f in fields(cls)}


def _required(cls) -> set[str]:
    return {f.name for f in fields(cls) if not f.metadata.get("optional")}


def _check(entries, cls) -> set[str]:
    """Every entry's keys are fields of ``cls`` and hold every required field; returns the
    keys seen."""
    assert entries
    seen: set[str] = set()
    for entry in entries:
        extra = set(entry) - _names(cls)
        assert not extra, f"keys without a field of {cls.__name__}: {sorted(extra)}"
        missing = _required(cls) - set(entry)
        assert not missing, f"fields of {cls.__name__} without a key: {sorted(missing)}"
        seen |= set(entry)
    return seen


def _analyze_entries(tmp_path, capsys) -> list[dict]:
    rng = np.random.default_rng(0)
    rows = []
    for task in range(4):
        for trial in range(4):
            rows.append(("healthy", f"t{task}", trial, "ok", 0, float(rng.random() < 0.6), 42))
            crashed = trial > 0
            rows.append(
                ("crasher", f"t{task}", trial, "agent_error" if crashed else "ok", 139, None, 7)
            )
    frame = pd.DataFrame(
        rows, columns=["agent", "task_id", "trial", "status", "exit_code", "score", "seed"]
    )
    frame.loc[frame["agent"] == "crasher", "score"] = frame["score"].where(
        frame["status"] != "ok", 1.0
    )
    entries = []
    with_status = tmp_path / "status.csv"
    frame.to_csv(with_status, index=False)
    plain = tmp_path / "plain.csv"
    frame[frame["agent"] == "healthy"].drop(columns=["status", "exit_code", "agent"]).to_csv(
        plain, index=False
    )
    for path, extra in ((with_status, ["--group", "agent"]), (plain, [])):
        argv = ["analyze", str(path), "--score", "score", "--json", "--no-attribution", *extra]
        assert main(argv) == 0
        entries += json.loads(capsys.readouterr().out)["groups"]
    assert any(e.get("withheld") for e in entries) and any("outcomes" not in e for e in entries)
    return entries


def _pipeline(tmp_path):
    """``summarize``'s output for two groups (one with levels and a judge) and the metrics
    of one with the attribution's noise model and infrastructure share."""
    from evalnoise.pipeline.collect import load_group
    from evalnoise.pipeline.stages import analyze_group
    from evalnoise.pipeline.summary import metrics, summarize
    from evalnoise.schema import SCORES, TASKS, conform

    tasks = pd.DataFrame(
        {
            "task_id": [f"t{i}" for i in range(6)],
            "question": "q",
            "answer": "1",
            "level": ["1", "2"] * 3,
        }
    )
    tasks_path = tmp_path / "tasks.parquet"
    pq.write_table(conform(pa.Table.from_pandas(tasks, preserve_index=False), TASKS), tasks_path)
    rng = np.random.default_rng(1)
    rows = []
    for agent in ("a", "b", "c"):
        for i in range(6):
            for t in range(4):
                # b: one timeout; c: crashes (withheld) and an unscored trial (incomplete)
                status = "timeout" if (agent, i, t) == ("b", 0, 0) else "ok"
                status = "agent_error" if agent == "c" and t > 1 else status
                correct = None if status != "ok" else bool(rng.random() < 0.5)
                correct = None if (agent, i, t) == ("c", 0, 0) else correct
                rows.append(
                    {
                        "agent": agent,
                        "resource_profile": "1x",
                        "task_id": f"t{i}",
                        "trial": t,
                        "attempt": 1,
                        "status": status,
                        "scorer": "numeric",
                        "correct": correct,
                        "score": None if correct is None else float(correct),
                        "exit_code": 139 if status == "agent_error" else 0,
                    }
                )
    shard = tmp_path / "scores.parquet"
    table = conform(pa.Table.from_pandas(pd.DataFrame(rows), preserve_index=False), SCORES)
    pq.write_table(table, shard)
    # the actions beside the trials: a's (its trials take one of two paths), none of b's
    from evalnoise.runner.actions import actions_table

    acted = [dict(r, actions=["ls", f"cat {r['trial'] % 2}"]) for r in rows if r["agent"] == "a"]
    actions = actions_table(acted).to_pandas()
    stats = [
        analyze_group(
            load_group([shard], tasks_path, agent, "1x", {"mode": "as_incorrect"}),
            OPTIONS,
            policy="as incorrect",
            actions=actions,
        )
        for agent in ("a", "b", "c")
    ]
    # a task whose every trial failed alike, as scripts/analyze_group.py adds it
    failure = TaskFailure("t0", "build", trials=4, of=4, reason="image build failed")
    stats[0]["task_failures"] = [failure.to_dict()]
    judge = {"group": "a@1x", "mode": "extract", "samples": 1, "sent": 24}
    result = summarize(stats, [], [], [], confidence=0.95, judge=[judge])
    records = [GroupRecord.from_dict(g) for g in result.groups]
    total = {"se": 0.1, "ci_low": 0.05, "ci_high": 0.2, "se_clustered": 0.09}
    attribution = {
        "a@1x": {
            "noise": {"dstudy": {"total_error": total}},
            "infra_share": 0.1,
            "policy_moves_result": False,
            "flaky_flagged": 0,
        }
    }
    more = metrics(stats, records, [], attribution)
    return result, more


def test_every_artifact_key_is_a_field_and_every_field_a_key(tmp_path, capsys):
    seen = _check(_analyze_entries(tmp_path, capsys), GroupRecord)
    result, more = _pipeline(tmp_path)
    seen |= _check(result.groups, GroupRecord)
    seen |= _check(result.levels, GroupRecord)
    assert seen == _names(GroupRecord), f"fields no artifact writes: {_names(GroupRecord) - seen}"
    entries = [*result.metrics["groups"].values(), *more["groups"].values()]
    metric_keys = _check(entries, GroupMetrics)
    assert metric_keys == _names(GroupMetrics), _names(GroupMetrics) - metric_keys
    for entry in entries:
        for reading in (entry.get("readings") or {}).values():
            assert set(reading) == _names(MetricsReading)
    for entry in result.groups:
        for reading in (entry.get("readings") or {}).values():
            assert set(reading) == _names(Reading)


def test_a_record_reads_back_as_it_was_written(tmp_path):
    result, _ = _pipeline(tmp_path)
    for entry in [*result.groups, *result.levels]:
        record = GroupRecord.from_dict(json.loads(json.dumps(entry)))
        assert record.to_dict() == entry
    with pytest.raises(ValueError, match=r"keys \['accuracy'\] are no field of GroupRecord"):
        GroupRecord.from_dict({**result.groups[0], "accuracy": 0.5})


def test_a_withheld_record_has_no_estimate_and_no_headline():
    record = GroupRecord(group="g", n_tasks=3, n_obs=9, mean=0.4, ci_low=0.2, ci_high=0.6)
    withheld = record.with_estimates_withheld("not a measurement of the agent (crashed)")
    assert withheld.headline is None and withheld.mean is None and withheld.icc is None
    assert withheld.interpretation == "withheld" and withheld.n_obs == 9
    assert record.headline == 0.4
