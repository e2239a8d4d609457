"""Trajectory consistency through the analysis stage: a group's score shard and the actions
table beside its trials → the record's ``trajectory_consistency``, checked against an
independent computation on the same actions (a brute-force recursive edit distance, the
task-clustered interval written out), and the words, metrics, card row and report table that
carry it; a group whose trials recorded nothing says "not recorded", a withheld one has none."""

from __future__ import annotations

import json
import math
from functools import cache
from itertools import combinations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from scipy import stats as scipy_stats
from test_pipeline_stages import OPTIONS

from evalnoise.consistency_text import TRAJECTORIES_NOT_RECORDED, reliability_lines
from evalnoise.group_records import GroupMetrics, GroupRecord
from evalnoise.pipeline.collect import counted_actions, load_group, read_actions
from evalnoise.pipeline.stages import analyze_group
from evalnoise.report.card_text import card_fields
from evalnoise.report.cards import CardContext, evaluation_card
from evalnoise.report.trajectory_section import trajectory_rows, trajectory_section
from evalnoise.runner.actions import actions_table
from evalnoise.schema import SCORES, TASKS, conform
from evalnoise.stats.trajectory import trajectory_consistency

RETRY = {"mode": "retry", "max_attempts": 2}

#: per task: each trial's (score, actions); t2's trial 1 was retried — its first attempt's
#: actions ("lost attempt") must not count, the second's do
TRIALS = {
    "t0": [(1.0, ["ls", "cat a"])] * 4,
    "t1": [
        (1.0, ["ls", "cat a"]),
        (0.0, ["ls", "cat b"]),
        (1.0, ["ls", "cat a"]),
        (0.0, ["pwd"]),
    ],
    "t2": [
        (0.0, ["echo x", "ls", "rm y"]),
        (1.0, ["echo x", "ls"]),
        (0.0, []),
        (1.0, ["echo x", "ls", "rm y"]),
    ],
    "t3": [(1.0, ["a", "b", "c", "d"])] * 3 + [(0.0, ["a", "b", "c", "e"])],
    "t4": [(0.0, ["z"])] * 4,
}


def _tasks(path):
    frame = pd.DataFrame({"task_id": list(TRIALS), "question": "q", "answer": "1", "level": "1"})
    pq.write_table(conform(pa.Table.from_pandas(frame, preserve_index=False), TASKS), path)
    return path


def _shards(tmp_path, agent="a", statuses=None):
    scores, rows = [], []
    for task, trials in TRIALS.items():
        for trial, (score, actions) in enumerate(trials):
            status = (statuses or {}).get((task, trial), "ok")
            attempts = [1, 2] if (task, trial) == ("t2", 1) else [1]
            for attempt in attempts:
                lost = attempt < attempts[-1]
                key = {
                    "agent": agent,
                    "resource_profile": "3x",
                    "task_id": task,
                    "trial": trial,
                    "attempt": attempt,
                }
                scores.append(
                    key
                    | {
                        "status": "timeout" if lost else status,
                        "scorer": "numeric",
                        "correct": None if lost or status != "ok" else bool(score),
                        "score": None if lost or status != "ok" else score,
                    }
                )
                rows.append(key | {"actions": ["lost attempt"] if lost else actions})
    path = tmp_path / f"{agent}.scores.parquet"
    table = conform(pa.Table.from_pandas(pd.DataFrame(scores), preserve_index=False), SCORES)
    pq.write_table(table, path)
    actions = tmp_path / f"{agent}.actions.parquet"
    pq.write_table(actions_table(rows), actions)
    return path, actions


@cache
def _lev(a: tuple, b: tuple) -> int:
    """The Levenshtein distance by its recursive definition (no shared code)."""
    if not a or not b:
        return len(a) + len(b)
    return min(_lev(a[1:], b) + 1, _lev(a, b[1:]) + 1, _lev(a[1:], b[1:]) + (a[0] != b[0]))


def _first_divergence(seqs):
    if len(set(seqs)) == 1:
        return math.nan
    for step in range(max(map(len, seqs))):
        if len({s[step] if step < len(s) else None for s in seqs}) > 1:
            return step + 1
    raise AssertionError


def _wald(values, low=0.0, high=1.0):
    v = np.asarray([x for x in values if not math.isnan(x)], dtype=float)
    z = scipy_stats.norm.ppf(0.975)
    half = z * v.std(ddof=1) / math.sqrt(v.size)
    return v.mean(), max(low, v.mean() - half), min(high, v.mean() + half)


@pytest.fixture
def group(tmp_path):
    tasks = _tasks(tmp_path / "tasks.parquet")
    scores, actions = _shards(tmp_path)
    data = load_group([scores], tasks, "a", "3x", RETRY)
    stats = analyze_group(data, OPTIONS, policy="retry", actions=read_actions([actions]))
    return data, read_actions([actions]), stats


def test_the_records_numbers_are_the_statistic_on_the_counted_trials_actions(group):
    data, actions, stats = group
    t = stats["overall"]["trajectory_consistency"]
    seqs = {task: [tuple(a) for _, a in trials] for task, trials in TRIALS.items()}
    means = {task: np.mean([s for s, _ in trials]) for task, trials in TRIALS.items()}
    distinct = [len(set(s)) for s in seqs.values()]
    edit = [
        np.mean([_lev(a, b) / max(len(a), len(b), 1) for a, b in combinations(s, 2)])
        for s in seqs.values()
    ]
    diverge = [_first_divergence(s) for s in seqs.values()]
    assert t["recorded"] is True
    assert (t["n_tasks"], t["n_trials"], t["trials_per_task"]) == (5, 20, 4)
    assert t["mean_distinct"] == pytest.approx(np.mean(distinct))
    m, lo, hi = _wald(distinct, high=4.0)
    assert (t["distinct_ci_low"], t["distinct_ci_high"]) == pytest.approx((lo, hi))
    m, lo, hi = _wald(edit)
    assert (t["mean_edit_distance"], t["edit_distance_ci_low"], t["edit_distance_ci_high"]) == (
        pytest.approx((m, lo, hi))
    )
    m, lo, hi = _wald(diverge, low=1.0, high=5.0)
    assert (t["mean_first_divergence"], t["first_divergence_ci_low"]) == pytest.approx((m, lo))
    assert t["first_divergence_ci_high"] == pytest.approx(hi)
    assert t["share_diverging_by_step_2"] == pytest.approx(2 / 3)  # t1, t2 at 1; t3 at 4
    consistent = [means[k] for k, d in zip(TRIALS, distinct, strict=True) if d == 1]
    others = [means[k] for k, d in zip(TRIALS, distinct, strict=True) if d > 1]
    assert (t["n_consistent"], t["n_inconsistent"]) == (2, 3)
    assert t["accuracy_consistent"] == pytest.approx(np.mean(consistent))
    assert t["accuracy_inconsistent"] == pytest.approx(np.mean(others))
    # and the statistic itself on the same counted actions
    joined = counted_actions(actions, data)
    assert "lost attempt" not in set(joined["action"].dropna())
    res = trajectory_consistency(
        [tuple(seqs[k][i]) for k in TRIALS for i in range(4)],
        [k for k in TRIALS for _ in range(4)],
        [s for trials in TRIALS.values() for s, _ in trials],
    )
    for name in (
        "mean_distinct",
        "mean_edit_distance",
        "mean_first_divergence",
        "accuracy_consistent_ci_low",
        "accuracy_inconsistent_ci_high",
    ):
        assert t[name] == pytest.approx(getattr(res, name)), name


def test_a_group_without_consistent_tasks_says_so():
    from types import SimpleNamespace

    from evalnoise.consistency_text import trajectory_line

    res = trajectory_consistency([["a"], ["b"], ["c"], ["d"]], ["x", "x", "y", "y"], [0, 1, 0, 0])
    line = trajectory_line(res)
    assert "no task consistent (accuracy 25.0%" in line and "on 2 tasks)" in line
    t = SimpleNamespace(**{**res.to_dict(), "trials_per_task": 2, "n_tasks": 2})
    assert trajectory_line(t) == line


def test_the_first_divergence_by_hand():
    # t1 diverges at step 1 (pwd against ls), t2 at 1 ([] has no step 1), t3 at step 4
    assert [_first_divergence([tuple(a) for _, a in TRIALS[k]]) for k in ("t1", "t2", "t3")] == [
        1,
        1,
        4,
    ]


def test_its_words_metrics_card_and_report_table(group):
    _, _, stats = group
    record = GroupRecord.from_dict(stats["overall"])
    assert GroupRecord.from_dict(record.to_dict()) == record
    (line,) = [x for x in reliability_lines(record) if x.startswith("trajectories over 5 tasks:")]
    assert "distinct paths per 4 trials" in line and "on 2 consistent tasks" in line
    metrics = GroupMetrics.from_record(record, infra_error_rate=0.0, show_readings=False)
    assert metrics.to_dict()["trajectory_consistency"]["mean_distinct"] == pytest.approx(2.0)
    card = evaluation_card(stats["overall"], CardContext(benchmark="b", infra_policy="retry"))
    fields = {k: v for k, v, _ in card_fields(card)}
    assert fields["Trajectories"].startswith("over 5 tasks: 2.0 distinct paths per 4 trials")
    (row,) = trajectory_rows([("a__3x", card)])
    t = stats["overall"]["trajectory_consistency"]
    low, high = t["distinct_ci_low"], t["distinct_ci_high"]
    assert row[:4] == ["a @ 3x", "5", "4", f"2.0 [{low:.1f}, {high:.1f}]"]
    assert row[6].endswith("(2 tasks)") and row[7].endswith("(3 tasks)")
    assert "<h2>Trajectories</h2>" in trajectory_section([("a__3x", card)], 0.95)


def test_a_group_that_recorded_nothing_says_not_recorded(tmp_path):
    tasks = _tasks(tmp_path / "tasks.parquet")
    scores, _ = _shards(tmp_path)
    data = load_group([scores], tasks, "a", "3x", RETRY)
    for actions in (None, read_actions([])):
        stats = analyze_group(data, OPTIONS, policy="retry", actions=actions)
        t = stats["overall"]["trajectory_consistency"]
        assert t == {"recorded": False, "n_tasks": 0, "n_trials": 0}
        record = GroupRecord.from_dict(stats["overall"])
        assert TRAJECTORIES_NOT_RECORDED in reliability_lines(record)
        metrics = GroupMetrics.from_record(record, infra_error_rate=0.0, show_readings=False)
        assert "trajectory_consistency" not in metrics.to_dict()
        card = evaluation_card(stats["overall"], CardContext(benchmark="b", infra_policy="x"))
        assert {k: v for k, v, _ in card_fields(card)}["Trajectories"].startswith("not recorded")
        assert trajectory_rows([("a__3x", card)])[0][1] == "not recorded"


def test_a_withheld_group_has_no_trajectories(tmp_path):
    tasks = _tasks(tmp_path / "tasks.parquet")
    crashed = {(k, i): "agent_error" for k in TRIALS for i in range(4)}
    scores, actions = _shards(tmp_path, statuses=crashed)
    data = load_group([scores], tasks, "a", "3x", RETRY)
    stats = analyze_group(data, OPTIONS, policy="retry", actions=read_actions([actions]))
    assert stats["overall"]["withheld"]
    assert "trajectory_consistency" not in stats["overall"]
    record = GroupRecord.from_dict(stats["overall"])
    assert not [x for x in reliability_lines(record) if "trajectories" in x]
    card = evaluation_card(stats["overall"], CardContext(benchmark="b", infra_policy="x"))
    assert "Trajectories" not in {k for k, _, _ in card_fields(card)}
    assert trajectory_section([("a__3x", card)], 0.95) == ""


def test_analyze_json_reads_the_actions_beside_a_trial_table(tmp_path, capsys):
    from evalnoise.cli import main

    trials = pd.DataFrame(
        [
            {"agent": "a", "task_id": task, "trial": i, "score": score}
            for task, runs in TRIALS.items()
            for i, (score, _) in enumerate(runs)
        ]
    )
    trials.to_csv(tmp_path / "trials.csv", index=False)
    rows = [
        {
            "agent": "a",
            "resource_profile": "3x",
            "task_id": task,
            "trial": i,
            "attempt": 1,
            "actions": actions,
        }
        for task, runs in TRIALS.items()
        for i, (_, actions) in enumerate(runs)
    ]
    # an earlier attempt of t0's trial 0: the last attempt's actions count
    rows.append(dict(rows[0], attempt=0, actions=["an earlier attempt"]))
    pq.write_table(actions_table(rows), tmp_path / "actions.parquet")
    argv = ["analyze", str(tmp_path / "trials.csv"), "--group", "agent", "--json"]
    assert main([*argv, "--no-attribution", "--actions", str(tmp_path / "actions.parquet")]) == 0
    (group,) = json.loads(capsys.readouterr().out)["groups"]
    t = group["trajectory_consistency"]
    assert t["recorded"] and (t["n_tasks"], t["n_trials"]) == (5, 20)
    assert t["mean_distinct"] == pytest.approx(2.0) and t["n_consistent"] == 2
    assert main([*argv, "--no-attribution"]) == 0
    (group,) = json.loads(capsys.readouterr().out)["groups"]
    assert group["trajectory_consistency"]["recorded"] is False
    pd.DataFrame({"task_id": ["t0"], "trial": [0]}).to_parquet(tmp_path / "bad.parquet")
    assert main([*argv, "--actions", str(tmp_path / "bad.parquet")]) == 2
    assert "lacks the columns ['step', 'action']" in capsys.readouterr().err
