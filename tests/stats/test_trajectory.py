"""Trajectory consistency: edit distances against an independent recursive definition,
first divergence and the per-group summary by hand."""

from __future__ import annotations

from functools import cache
from itertools import combinations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalnoise.stats.trajectory import (
    first_divergence,
    levenshtein,
    normalised_edit_distance,
    trajectory_consistency,
)


def reference_levenshtein(a, b):
    """The definition itself, recursively: the last actions match, or one edit."""

    @cache
    def d(i, j):
        if i == 0 or j == 0:
            return i + j
        return min(d(i - 1, j) + 1, d(i, j - 1) + 1, d(i - 1, j - 1) + (a[i - 1] != b[j - 1]))

    return d(len(a), len(b))


def test_known_distances():
    assert levenshtein("kitten", "sitting") == 3
    assert levenshtein("flaw", "lawn") == 2
    assert levenshtein([], ["ls"]) == 1 and levenshtein([], []) == 0
    assert levenshtein(["ls", "cat f", "echo"], ["ls", "echo"]) == 1
    assert normalised_edit_distance(["a", "b"], ["c", "d", "e", "f"]) == 1.0
    assert normalised_edit_distance([], []) == 0.0


actions = st.lists(st.sampled_from(["ls", "cd", "cat", "grep", 7]), max_size=9)


@settings(max_examples=300, deadline=None)
@given(a=actions, b=actions, c=actions)
def test_levenshtein_matches_the_definition_and_is_a_metric(a, b, c):
    d = levenshtein(a, b)
    assert d == reference_levenshtein(tuple(a), tuple(b))
    assert d == levenshtein(b, a)
    assert (d == 0) == (a == b)
    assert levenshtein(a, c) <= d + levenshtein(b, c)
    assert 0.0 <= normalised_edit_distance(a, b) <= 1.0


def test_first_divergence_by_hand():
    assert np.isnan(first_divergence([["a", "b"], ["a", "b"]]))
    assert first_divergence([["a", "b"], ["a", "c"]]) == 2
    assert first_divergence([["x"], ["a"], ["a"]]) == 1
    assert first_divergence([["a"], ["a", "b"]]) == 2  # one trial stopped, one went on
    assert np.isnan(first_divergence([["a"]]))


def test_trajectory_consistency_by_hand():
    seqs = [
        ["ls", "cat"], ["ls", "cat"], ["ls", "cat"],  # task a: one path, all right
        ["ls", "cat"], ["ls", "grep"], ["cd"],  # task b: three paths, one right
        ["x"], ["x"], ["y", "x"],  # task c: two paths, diverge at step 1, none right
    ]  # fmt: skip
    tasks = ["a"] * 3 + ["b"] * 3 + ["c"] * 3
    scores = [1, 1, 1, 1, 0, 0, 0, 0, 0]
    res = trajectory_consistency(seqs, tasks, scores)
    assert res.n_distinct.tolist() == [1, 3, 2]
    b = [["ls", "cat"], ["ls", "grep"], ["cd"]]
    expected_b = np.mean([normalised_edit_distance(p, q) for p, q in combinations(b, 2)])
    assert res.edit_distance.tolist() == pytest.approx([0.0, expected_b, (0 + 0.5 + 0.5) / 3])
    assert expected_b == pytest.approx((0.5 + 1.0 + 1.0) / 3)
    assert np.isnan(res.first_divergence[0]) and res.first_divergence[1:].tolist() == [1, 1]
    assert res.mean_distinct == pytest.approx(2.0)
    assert res.mean_first_divergence == 1.0 and res.share_diverging_by_step_2 == 1.0
    assert (res.n_consistent, res.n_inconsistent) == (1, 2)
    assert res.accuracy_consistent == 1.0 and np.isnan(res.accuracy_consistent_ci_low)
    assert res.accuracy_inconsistent == pytest.approx((1 / 3 + 0) / 2)
    loose = trajectory_consistency(seqs, tasks, scores, consistent_max_distinct=2)
    assert (loose.n_consistent, loose.accuracy_consistent) == (2, 0.5)


def test_intervals_where_every_task_agrees_are_wilsons_on_the_statistics_range():
    from statsmodels.stats.proportion import proportion_confint

    # three tasks, every one four distinct paths of four trials, each diverging at step 1
    seqs = [[f"a{i}", "z"] for i in range(4)] * 3
    tasks = ["a"] * 4 + ["b"] * 4 + ["c"] * 4
    res = trajectory_consistency(seqs, tasks, [0.0] * 12)
    lo, hi = proportion_confint(3, 3, alpha=0.05, method="wilson")
    # distinct paths on [1, 4]: all at the top
    assert res.mean_distinct == 4.0
    assert (res.distinct_ci_low, res.distinct_ci_high) == pytest.approx((1 + 3 * lo, 1 + 3 * hi))
    # first divergence on [1, 3] (the longest sequence + 1): all at the bottom
    lo0, hi0 = proportion_confint(0, 3, alpha=0.05, method="wilson")
    assert res.mean_first_divergence == 1.0
    assert (res.first_divergence_ci_low, res.first_divergence_ci_high) == pytest.approx(
        (1 + 2 * lo0, 1 + 2 * hi0)
    )
    assert res.first_divergence_ci_high > 1.5  # three tasks cannot make it certain
