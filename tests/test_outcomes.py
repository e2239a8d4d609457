"""Outcome accounting: crash signals, outcome counts over final attempts, group health.

The real crash (an agent killed by SIGSEGV in a container and as a subprocess) is in
tests/runner/test_runner_crash.py; here are the rules, with examples and the invariants
hypothesis checks: the outcomes partition the trials, only final attempts count, row order
does not matter, and a group is valid exactly when nothing crashed and few enough failed.
"""

from __future__ import annotations

import signal

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalnoise.outcomes import (
    CRASH_SIGNALS,
    OUTCOMES,
    assess_health,
    attempt_order,
    crash_signal,
    crash_signal_name,
    outcome_counts,
)
from evalnoise.schema import STATUSES

PARTITION = list(OUTCOMES)  # unscored is its own outcome: ok means answered and scored

# -- crash_signal -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        (139, "SIGSEGV"),  # docker-init / a shell: 128 + 11
        (-11, "SIGSEGV"),  # subprocess.Popen.returncode
        (132, "SIGILL"),  # a binary built for a CPU with AVX-512 (docs/measurements.md)
        (134, "SIGABRT"),
        (135, "SIGBUS"),
        (136, "SIGFPE"),
        (-6, "SIGABRT"),
        (137, None),  # SIGKILL: the OOM killer or the runner's timeout, not a crash
        (143, None),  # SIGTERM
        (-9, None),
        (0, None),
        (1, None),
        (3, None),
        (75, None),
        (127, None),
        (128, None),
        (None, None),
        (float("nan"), None),
        (pd.NA, None),  # a nullable Int64 column's missing value
        (139.0, "SIGSEGV"),  # a float column
        (np.int64(139), "SIGSEGV"),
        ("139", "SIGSEGV"),
        ("segv", None),
        (139.5, None),
    ],
)
def test_crash_signal_examples(code, expected):
    assert crash_signal_name(code) == expected
    sig = crash_signal(code)
    assert sig == (None if expected is None else int(getattr(signal, expected)))


@given(st.integers(min_value=1, max_value=64))
def test_both_conventions_name_the_same_signal(sig):
    assert crash_signal(128 + sig) == crash_signal(-sig)
    assert (crash_signal(-sig) == sig) == (sig in CRASH_SIGNALS)


@given(st.integers(min_value=-1000, max_value=1000))
def test_crash_signal_is_a_fault_signal_or_none(code):
    sig = crash_signal(code)
    assert sig is None or sig in CRASH_SIGNALS
    if 0 <= code <= 128:  # a plain exit status is never a crash
        assert sig is None


# -- outcome_counts ---------------------------------------------------------------------------

trial_rows = st.lists(
    st.fixed_dictionaries(
        {
            "agent": st.sampled_from(["a", "b"]),
            "resource_profile": st.sampled_from(["1x", "3x"]),
            "task_id": st.sampled_from(["t0", "t1", "t2"]),
            "trial": st.integers(0, 2),
            "status": st.sampled_from(STATUSES),
            "exit_code": st.one_of(
                st.none(), st.sampled_from([0, 1, 3, 75, 137, 139, 132, 134, -11, -9, 143])
            ),
            "score": st.sampled_from([None, 0.0, 1.0]),
        }
    ),
    max_size=40,
)


def frame_of(rows: list[dict]) -> pd.DataFrame:
    """Rows as a trials table; repeated keys become attempts 1, 2, ... in list order."""
    frame = pd.DataFrame(
        rows, columns=["agent", "resource_profile", "task_id", "trial", "status", "exit_code"]
    )
    frame["score"] = pd.array([r["score"] for r in rows], dtype="Float64")
    frame["exit_code"] = pd.array(list(frame["exit_code"]), dtype="Int64")
    key = ["agent", "resource_profile", "task_id", "trial"]
    frame["attempt"] = frame.groupby(key).cumcount() + 1 if rows else pd.Series(dtype=int)
    return frame


def final_attempts(frame: pd.DataFrame) -> pd.DataFrame:
    key = ["agent", "resource_profile", "task_id", "trial"]
    return frame.sort_values("attempt").groupby(key).tail(1)


@settings(max_examples=200, deadline=None)
@given(trial_rows)
def test_outcomes_partition_the_final_attempts(rows):
    frame = frame_of(rows)
    counts = outcome_counts(frame)
    last = final_attempts(frame)
    assert counts["attempts"] == len(frame)
    assert counts["trials"] == len(last)
    assert sum(counts[o] for o in PARTITION) == counts["trials"]
    assert all(counts[o] >= 0 for o in OUTCOMES)
    # each final attempt is in exactly the outcome its status and exit code say
    agent_error = last[last["status"] == "agent_error"]
    crashes = sum(crash_signal(code) is not None for code in agent_error["exit_code"])
    assert counts["crashed"] == crashes
    assert counts["no_answer"] == len(agent_error) - crashes
    for status in ("timeout", "oom_killed", "infra_error"):
        assert counts[status] == int((last["status"] == status).sum())
    unscored = int(((last["status"] == "ok") & last["score"].isna()).sum())
    assert counts["unscored"] == unscored
    assert counts["ok"] == int((last["status"] == "ok").sum()) - unscored


@settings(max_examples=100, deadline=None)
@given(trial_rows, st.randoms(use_true_random=False))
def test_row_order_does_not_matter(rows, rnd):
    frame = frame_of(rows)
    order = list(range(len(frame)))
    rnd.shuffle(order)
    assert outcome_counts(frame.iloc[order]) == outcome_counts(frame)


def test_only_the_final_attempt_counts():
    frame = pd.DataFrame(
        {
            "agent": ["a"] * 3,
            "resource_profile": ["1x"] * 3,
            "task_id": ["t", "t", "u"],
            "trial": [0, 0, 0],
            "attempt": [2, 1, 1],  # out of order on purpose
            "status": ["ok", "infra_error", "agent_error"],
            "exit_code": [0, 75, 139],
            "score": [1.0, None, None],
        }
    )
    counts = outcome_counts(frame)
    # every outcome of the table is counted, zeros included (the list is the table's)
    expected = {"ok": 1, "crashed": 1, "trials": 2, "attempts": 3}
    assert counts == {**dict.fromkeys(OUTCOMES, 0), **expected}


def test_status_alone_is_enough_and_then_no_crash_can_be_told():
    counts = outcome_counts(pd.DataFrame({"status": ["ok", "agent_error", "timeout"]}))
    assert (counts["ok"], counts["no_answer"], counts["crashed"]) == (1, 1, 0)
    assert counts["unscored"] == 0 and counts["trials"] == counts["attempts"] == 3


def test_a_crash_needs_agent_error():
    """An exit code of 139 on a row the runner called something else is that something."""
    frame = pd.DataFrame({"status": ["infra_error", "agent_error"], "exit_code": [139, 139]})
    counts = outcome_counts(frame)
    assert (counts["infra_error"], counts["crashed"]) == (1, 1)


def test_an_empty_table():
    counts = outcome_counts(pd.DataFrame({"status": pd.Series([], dtype=str)}))
    assert all(counts[o] == 0 for o in OUTCOMES) and counts["trials"] == 0


def test_a_parquet_round_trip_keeps_the_classification(tmp_path):
    frame = frame_of(
        [
            {"agent": "a", "resource_profile": "1x", "task_id": "t0", "trial": 0,
             "status": "agent_error", "exit_code": 139, "score": None},
            {"agent": "a", "resource_profile": "1x", "task_id": "t1", "trial": 0,
             "status": "agent_error", "exit_code": None, "score": None},
            {"agent": "a", "resource_profile": "1x", "task_id": "t2", "trial": 0,
             "status": "ok", "exit_code": 0, "score": None},
        ]
    )  # fmt: skip
    frame.to_parquet(tmp_path / "t.parquet")
    back = pd.read_parquet(tmp_path / "t.parquet")
    counts = outcome_counts(back)
    assert [counts[o] for o in ("crashed", "no_answer", "ok", "unscored")] == [1, 1, 0, 1]
    assert [crash_signal(c) for c in back["exit_code"]] == [11, None, None]


# -- assess_health ----------------------------------------------------------------------------


def counts_of(**kw) -> dict:
    counts = {o: 0 for o in OUTCOMES}
    counts.update(kw)
    counts["trials"] = sum(counts[o] for o in PARTITION)
    return counts


def test_one_crash_makes_a_group_no_measurement():
    health = assess_health(counts_of(ok=99, crashed=1), crash_examples=["SIGSEGV", "SIGSEGV"])
    assert not health.valid and health.failure_rate == pytest.approx(0.01)
    assert health.reasons == ("1 of 100 trials crashed (SIGSEGV)",)


def test_too_many_failures_make_a_group_no_measurement():
    health = assess_health(counts_of(ok=4, timeout=5, unscored=0, no_answer=1))
    assert not health.valid and health.failure_rate == pytest.approx(0.6)
    assert "6 of 10 trials (60%)" in health.reasons[0] and "5 timeout" in health.reasons[0]


def test_unscored_trials_count_as_failures():
    health = assess_health(counts_of(ok=4, unscored=6))
    assert not health.valid and health.failure_rate == pytest.approx(0.6)
    assert "6 unscored" in health.reasons[0]


def test_the_threshold_itself_is_still_valid():
    assert assess_health(counts_of(ok=5, oom_killed=5)).valid  # 50 % is not more than 50 %
    assert not assess_health(counts_of(ok=5, oom_killed=5), max_failure_rate=0.4).valid


def test_declared_failures_keep_the_group_valid_and_say_why():
    health = assess_health(counts_of(crashed=3, oom_killed=7), expected=True)
    assert health.valid and health.expected and len(health.reasons) == 2
    assert health.to_dict()["reasons"] == list(health.reasons)


def test_no_trials_is_no_measurement():
    health = assess_health(counts_of())
    assert not health.valid and health.reasons == ("no trials",)


outcome_numbers = st.fixed_dictionaries({o: st.integers(0, 20) for o in PARTITION})


@given(
    outcome_numbers,
    st.integers(0, 20),
    st.floats(0, 1),
    st.booleans(),
)
def test_health_is_valid_exactly_when_nothing_crashed_and_few_failed(numbers, unscored, cap, exp):
    counts = counts_of(**{**numbers, "unscored": unscored})
    health = assess_health(counts, max_failure_rate=cap, expected=exp)
    trials = counts["trials"]
    good = counts["ok"]
    assert 0.0 <= health.failure_rate <= 1.0
    if trials:
        assert health.failure_rate == pytest.approx((trials - good) / trials)
    measured = trials > 0 and counts["crashed"] == 0 and health.failure_rate <= cap
    assert (health.reasons == ()) == measured
    assert health.valid == (exp or measured)


# --- attempt_order: pandas' sort and duplicated, without building the sorted table -------------

_labels = st.one_of(st.none(), st.sampled_from(["a", "b", "B", "é", "a b", "10", "9"]))


@st.composite
def _attempt_tables(draw):
    n = draw(st.integers(0, 40))
    column = st.lists(_labels, min_size=n, max_size=n)
    frame = pd.DataFrame(
        {
            "agent": pd.array(draw(column), dtype="str"),  # pandas' Arrow-backed strings
            "task_id": draw(column),  # object, with None
            "trial": draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)),
            "prompt_variant": draw(
                st.lists(
                    st.one_of(st.none(), st.sampled_from([0.5, 1.0, float("nan")])),
                    min_size=n,
                    max_size=n,
                )
            ),
            "attempt": draw(st.lists(st.integers(1, 3), min_size=n, max_size=n)),
        }
    )
    frame.index = draw(st.permutations(range(n))) if n else frame.index
    return frame


@settings(max_examples=200, deadline=None)
@given(frame=_attempt_tables())
def test_attempt_order_is_pandas_sort_and_duplicated(frame):
    # The independent implementation: what apply_infra_policy and final_attempts did before.
    key = ["agent", "task_id", "trial", "prompt_variant"]
    ordered = frame.sort_values([*key, "attempt"], kind="mergesort")
    rows = attempt_order(frame, key)
    pd.testing.assert_frame_equal(frame.iloc[rows.order], ordered)
    last = ~ordered.duplicated(subset=key, keep="last")
    first = ~ordered.duplicated(subset=key, keep="first")
    assert rows.last.tolist() == last.tolist()
    assert rows.first.tolist() == first.tolist()
    most = int(ordered.groupby(key, dropna=False).size().max()) if len(frame) else 0
    assert rows.most_attempts == most


@settings(max_examples=200, deadline=None)
@given(
    frame=_attempt_tables(),
    constant=st.sampled_from(["a", "é", None]),
    in_order=st.booleans(),
)
def test_attempt_order_of_constant_columns_and_ordered_tables(frame, constant, in_order):
    # the shapes its shortcuts serve: one group's agent (one value, or none at all), a
    # variant column nobody set, a table already in trial order
    frame = frame.assign(
        agent=pd.array([constant] * len(frame), dtype="str"),
        prompt_variant=[None] * len(frame),
    )
    key = ["agent", "task_id", "trial", "prompt_variant"]
    if in_order:
        frame = frame.sort_values([*key, "attempt"], kind="mergesort")
    ordered = frame.sort_values([*key, "attempt"], kind="mergesort")
    rows = attempt_order(frame, key)
    pd.testing.assert_frame_equal(frame.iloc[rows.order], ordered)
    assert rows.in_order == (rows.order.tolist() == list(range(len(frame))))
    assert rows.in_order or not in_order
    assert rows.last.tolist() == (~ordered.duplicated(subset=key, keep="last")).tolist()
    assert rows.first.tolist() == (~ordered.duplicated(subset=key, keep="first")).tolist()


def test_attempt_order_without_an_attempt_column_is_one_attempt_a_row():
    frame = pd.DataFrame({"task_id": ["b", "a", "b"], "trial": [0, 0, 0]})
    rows = attempt_order(frame, ["task_id", "trial"])
    assert rows.order.tolist() == [1, 0, 2]
    assert rows.first.tolist() == [True, True, False]
    assert rows.last.tolist() == [True, False, True]
    assert rows.most_attempts == 2
