"""Per-task table and the Wilson interval behind paper Fig. 1."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.proportion import proportion_confint

from evalnoise.analysis import PER_TASK_COLUMNS, per_task_table
from evalnoise.stats.proportion import wilson_interval


@pytest.mark.parametrize("k,n", [(0, 5), (1, 5), (3, 5), (5, 5), (17, 64), (64, 64), (1, 1)])
@pytest.mark.parametrize("confidence", [0.9, 0.95, 0.99])
def test_wilson_matches_statsmodels(k: int, n: int, confidence: float) -> None:
    low, high = wilson_interval(k / n, n, confidence)
    ref_low, ref_high = proportion_confint(k, n, alpha=1 - confidence, method="wilson")
    assert float(low) == pytest.approx(ref_low, abs=1e-12)
    assert float(high) == pytest.approx(ref_high, abs=1e-12)


def test_wilson_is_vectorised_and_stays_in_unit_interval() -> None:
    p = np.array([0.0, 0.2, 1.0])
    n = np.array([3, 10, 3])
    low, high = wilson_interval(p, n)
    assert low.shape == high.shape == (3,)
    assert np.all((low >= 0) & (low <= p) & (p <= high) & (high <= 1))
    assert low[0] == 0.0 and high[2] == 1.0
    assert high[0] > 0 and low[2] < 1  # not degenerate at the boundaries


def test_wilson_narrows_with_more_trials() -> None:
    widths = [np.subtract(*wilson_interval(0.5, n)[::-1]) for n in (4, 16, 64)]
    assert widths[0] > widths[1] > widths[2]


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"mean": 0.5, "n": 0}, "n must be"),
        ({"mean": 1.5, "n": 3}, "mean must lie"),
        ({"mean": 0.5, "n": 3, "confidence": 1.0}, "confidence"),
    ],
)
def test_wilson_rejects_bad_input(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        wilson_interval(**kwargs)


def test_per_task_table_counts_means_and_order() -> None:
    frame = pd.DataFrame(
        {
            "group": ["a"] * 5 + ["b"] * 3,
            "task": ["t1", "t1", "t2", "t2", "t3", "t1", "t1", "t1"],
            "trial": ["1", "2", "1", "2", "1", "1", "2", "3"],
            "score": [1.0, 0.0, 1.0, 1.0, 0.0, 0.5, 0.5, 1.0],
        }
    )
    out = per_task_table(frame, confidence=0.95)
    assert tuple(out.columns) == PER_TASK_COLUMNS
    assert out[["group", "task"]].values.tolist() == [
        ["a", "t2"],
        ["a", "t1"],
        ["a", "t3"],
        ["b", "t1"],
    ]
    assert out["n"].tolist() == [2, 2, 1, 3]
    assert out["mean"].tolist() == pytest.approx([1.0, 0.5, 0.0, 2 / 3])
    low, high = wilson_interval(0.5, 2)
    assert out.loc[1, "ci_low"] == pytest.approx(float(low))
    assert out.loc[1, "ci_high"] == pytest.approx(float(high))


def test_per_task_table_rejects_missing_columns() -> None:
    with pytest.raises(ValueError, match="score"):
        per_task_table(pd.DataFrame({"group": ["a"], "task": ["t"]}))


def test_per_task_table_on_the_example(example_frame: pd.DataFrame) -> None:
    out = per_task_table(example_frame)
    assert len(out) == 100  # 2 models × 50 items
    assert set(out["n"]) == {5}
    assert (out["ci_low"] <= out["mean"]).all() and (out["mean"] <= out["ci_high"]).all()
    # the grand mean over equal-sized tasks is the mean of task means
    for group, part in example_frame.groupby("group"):
        assert out.loc[out["group"] == group, "mean"].mean() == pytest.approx(part["score"].mean())
