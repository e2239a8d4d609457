"""The report's pass^k chart: its rows are the statistics' pass^k (checked against
:func:`evalnoise.stats.passk.pass_hat_k` and against enumeration of every k-subset of a task's
trials), withheld groups are left out and named, and the spec is altair's."""

from __future__ import annotations

import itertools
import json

import altair_reference as reference
import numpy as np
import pandas as pd
import pytest

from evalnoise.consistency import reliability_fields
from evalnoise.report import ReportInputs, build_report, charts, specs
from evalnoise.report._render import chart_spec
from evalnoise.report.chart_tables import passk_table
from evalnoise.stats.passk import pass_hat_k, pass_k


def _frame(seed: int, n_tasks: int = 9, n_trials: int = 5) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.05, 0.95, n_tasks)
    return pd.DataFrame(
        [
            {"task": f"t{t}", "trial": k, "score": float(rng.random() < p[t])}
            for t in range(n_tasks)
            for k in range(n_trials)
        ]
    )


def _records() -> tuple[list[dict], dict[str, pd.DataFrame]]:
    frames = {"a@1x": _frame(0), "b@1x": _frame(1, n_trials=4), "c@1x": _frame(2)}
    records = [
        {"group": "a@1x", "withheld": None, **reliability_fields(frames["a@1x"])},
        {"group": "b@1x", "withheld": None, **reliability_fields(frames["b@1x"])},
        # not a measurement: the pipeline writes no pass^k for it (stages.group_outputs)
        {"group": "c@1x", "withheld": "every trial crashed (SIGSEGV)", "pass_k": None},
    ]
    return records, frames


def _enumerated(frame: pd.DataFrame, k: int) -> float:
    """pass^k by brute force: per task, the share of its k-subsets of trials that all
    succeeded; the mean over tasks."""
    per_task = []
    for _, part in frame.groupby("task"):
        wins = part["score"].to_numpy() == 1.0
        subsets = list(itertools.combinations(range(len(wins)), k))
        per_task.append(np.mean([wins[list(s)].all() for s in subsets]))
    return float(np.mean(per_task))


def test_chart_rows_are_the_statistics_pass_hat_k() -> None:
    records, frames = _records()
    rows, left_out = passk_table(records)
    assert left_out == {"c@1x": "withheld: not a measurement of the agent"}
    assert list(dict.fromkeys(rows["group"])) == ["a@1x", "b@1x"]
    for group, frame in frames.items():
        if group == "c@1x":
            continue
        mine = rows[rows["group"] == group]
        n_trials = int(frame.groupby("task").size().min())
        assert mine["k"].tolist() == list(range(1, n_trials + 1))
        counts = frame.groupby("task")["score"].agg(["size", "sum"])
        direct = pass_hat_k(
            counts["size"].to_numpy()[:, None],
            counts["sum"].to_numpy().astype(int)[:, None],
            np.arange(1, n_trials + 1)[None, :],
        ).mean(axis=0)
        assert mine["pass_hat"].to_numpy() == pytest.approx(direct)
        for k in range(1, n_trials + 1):
            assert mine["pass_hat"].iloc[k - 1] == pytest.approx(_enumerated(frame, k))
        full = pass_k(frame["score"].to_numpy(), frame["task"].to_numpy())
        assert mine["ci_low"].to_numpy() == pytest.approx(full.pass_hat_ci_low)
        assert mine["ci_high"].to_numpy() == pytest.approx(full.pass_hat_ci_high)
        # pass^1 is the accuracy (mean of task means); pass^k never rises with k
        accuracy = frame.groupby("task")["score"].mean().mean()
        assert mine["pass_hat"].iloc[0] == pytest.approx(accuracy)
        assert np.all(np.diff(mine["pass_hat"].to_numpy()) <= 1e-12)


def test_spec_is_altairs_and_keeps_missing_intervals_missing() -> None:
    records, _ = _records()
    rows, _ = passk_table(records)
    rows.loc[rows.index[-1], ["ci_low", "ci_high"]] = np.nan
    ours = specs.passk_spec(rows, confidence=0.9)
    theirs = chart_spec(reference.passk_chart(rows, confidence=0.9))
    assert json.dumps(ours, ensure_ascii=False) == json.dumps(theirs, ensure_ascii=False)
    assert json.dumps(chart_spec(charts.passk_chart(rows, confidence=0.9))) == json.dumps(ours)
    data = ours["datasets"][ours["data"]["name"]]
    assert data[-1]["ci_low"] is None and data[-1]["pass_hat"] is not None
    assert "90% CI" in ours["title"]
    with pytest.raises(ValueError, match="missing columns"):
        specs.passk_spec(rows.drop(columns="ci_high"))


def test_report_draws_the_chart_and_names_the_withheld_group(
    example_inputs, tmp_path, monkeypatch
) -> None:
    drawn: list[pd.DataFrame] = []
    original = specs.passk_spec

    def spy(table, **kwargs):
        drawn.append(table.copy())
        return original(table, **kwargs)

    monkeypatch.setattr(specs, "passk_spec", spy)
    inputs = dict(example_inputs)
    withheld = {**inputs["groups"][0], "withheld": "every trial crashed", "pass_k": None}
    inputs["groups"] = [withheld, *inputs["groups"][1:]]
    files = build_report(tmp_path, ReportInputs.of(**inputs))
    assert tmp_path / "pass_hat_k.html" in files and tmp_path / "pass_hat_k.png" in files
    page = (tmp_path / "index.html").read_text(encoding="utf-8")
    section = page[page.index('<section id="pass_hat_k">') :]
    section = section[: section.index("</section>")]
    assert "withheld: not a measurement of the agent" in section
    assert 'data-chart="pass_hat_k"' in section
    (table,) = drawn
    assert withheld["group"] not in set(table["group"])
    (other,) = inputs["groups"][1:]
    assert table["pass_hat"].tolist() == pytest.approx(other["pass_k"]["pass_hat"])
