"""Flaky-task triage: infra concentration, time block, host, scorer self-agreement."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from statsmodels.stats.multitest import multipletests

from evalnoise.attribution import CHECKS, flaky_tasks


def test_injected_flaky_and_infra_prone_tasks_are_flagged(noisy_run):
    res = flaky_tasks(noisy_run.trials)
    flagged = res.flagged.set_index("task_id")
    assert set(flagged.index) == set(noisy_run.flaky) | set(noisy_run.infra_tasks)
    for task in noisy_run.infra_tasks:
        assert flagged.loc[task, "checks"] == ["infra_concentration"]
        assert flagged.loc[task, "reason"].startswith("infra outcomes concentrate on this task")
    for task in noisy_run.flaky:
        assert flagged.loc[task, "checks"] == ["time_block"]
        assert "block 1" in flagged.loc[task, "reason"]
    # strongest evidence first
    assert res.flagged["rank"].tolist() == list(range(1, len(res.flagged) + 1))
    assert list(res.flagged["task_id"][:2]) == sorted(noisy_run.infra_tasks)
    assert res.flagged["pvalue_adjusted"].is_monotonic_increasing
    assert res.checks_run == ("infra_concentration", "time_block", "host")
    skipped = {c.name: c for c in res.checks if not c.ran}
    assert skipped["scorer_agreement"].description == "no rescores given"
    assert all(c.description for c in res.checks)
    assert [c.name for c in res.checks] == list(CHECKS)


def test_infra_evidence_matches_scipy_fisher_and_statsmodels_bh(noisy_run):
    trials = noisy_run.trials
    res = flaky_tasks(trials)
    ev = res.evidence[res.evidence["check"] == "infra_concentration"].set_index("task_id")
    infra = trials["status"].isin(["timeout", "oom_killed", "infra_error"])
    big_n, big_x = len(trials), int(infra.sum())
    for task in ev.index[:10]:
        here = (trials["task_id"] == task).to_numpy()
        x, n = int(infra[here].sum()), int(here.sum())
        table = [[x, n - x], [big_x - x, big_n - n - big_x + x]]
        ref = stats.fisher_exact(table, alternative="greater")
        assert ev.loc[task, "pvalue"] == pytest.approx(ref.pvalue, rel=1e-9)
        if np.isfinite(ref.statistic):
            assert ev.loc[task, "statistic"] == pytest.approx(ref.statistic, rel=1e-12)
    np.testing.assert_allclose(
        ev["pvalue_adjusted"], multipletests(ev["pvalue"], method="fdr_bh")[1]
    )
    tb = res.evidence[res.evidence["check"] == "time_block"]
    assert (tb["test"] == "fisher_exact").all() and tb["pvalue"].between(0, 1).all()


def test_a_task_that_fails_on_one_host():
    rng = np.random.default_rng(3)
    rows = []
    for t in range(20):
        for k in range(24):
            host = f"host-{k % 3}"
            p = 0.05 if (t == 7 and host == "host-2") else 0.8
            rows.append(
                {
                    "task_id": f"task-{t:02d}",
                    "trial": k,
                    "status": "ok",
                    "score": float(rng.random() < p),
                    "host": host,
                }
            )
    res = flaky_tasks(pd.DataFrame(rows))
    assert res.flagged["task_id"].tolist() == ["task-07"]
    assert res.flagged["checks"][0] == ["host"]
    assert "on host-2" in res.flagged["reason"][0]
    ran = dict((c.name, c.ran) for c in res.checks)
    assert ran == {
        "infra_concentration": True,
        "time_block": False,
        "host": True,
        "scorer_agreement": False,
    }
    assert "started_at" in res.checks[1].description


def _rescores():
    rows = []
    for t in range(12):
        for k in range(6):
            for rep in range(3):
                # the exact scorer flips on task-03's trial 0; the judge is noisy on task-05
                exact = not (t == 3 and k == 0 and rep == 1)
                judge = not (t == 5 and rep == 2) and not (t == 9 and k == 0 and rep == 1)
                rows.append({"task_id": f"task-{t:02d}", "trial": k, "scorer": "exact",
                             "correct": exact})  # fmt: skip
                rows.append({"task_id": f"task-{t:02d}", "trial": k, "scorer": "judge:qwen",
                             "correct": judge})  # fmt: skip
    rows.append({"task_id": "task-00", "trial": 0, "scorer": "judge:qwen", "correct": None})
    return pd.DataFrame(rows)


def test_scorer_self_agreement():
    trials = pd.DataFrame(
        {
            "task_id": [f"task-{t:02d}" for t in range(12) for _ in range(6)],
            "trial": [k for _ in range(12) for k in range(6)],
            "status": "ok",
            "score": 1.0,
        }
    )
    res = flaky_tasks(trials, rescores=_rescores())
    top = res.flagged.iloc[0]
    assert top["task_id"] == "task-03" and top["test"] == "deterministic_self_agreement"
    assert np.isnan(top["pvalue"]) and "'exact'" in top["reason"]
    judge = res.flagged.set_index("task_id").loc["task-05"]
    assert judge["checks"] == ["scorer_agreement"] and judge["pvalue_adjusted"] <= 0.05
    assert "6 of 6 rescored answers" in judge["reason"]
    assert "task-09" not in set(res.flagged["task_id"])  # one stray disagreement: noise
    summary = res.scorer_summary.set_index("scorer")
    assert summary.loc["exact", "answers_disagreeing"] == 1
    assert bool(summary.loc["exact", "deterministic"])
    assert summary.loc["judge:qwen", "answers_disagreeing"] == 7
    assert not bool(summary.loc["judge:qwen", "deterministic"])
    json.loads(json.dumps(res.to_dict(), allow_nan=True))


def test_nothing_flagged_still_says_what_was_checked():
    trials = pd.DataFrame(
        {"task_id": ["a", "a", "b", "b"], "trial": [0, 1, 0, 1], "status": "ok",
         "score": [1.0, 0.0, 1.0, 1.0]}
    )  # fmt: skip
    res = flaky_tasks(
        trials, rescores=pd.DataFrame(columns=["task_id", "trial", "scorer", "correct"])
    )
    assert res.flagged.empty and list(res.flagged.columns)[:3] == ["rank", "task_id", "reason"]
    out = res.to_dict()
    assert out["flagged"] == [] and out["checks_run"] == ["infra_concentration"]
    assert [c["name"] for c in out["checks"]] == list(CHECKS)
    assert "no attempt ended in an infra outcome" in out["checks"][0]["description"]
    assert "no answer was scored twice" in out["checks"][3]["description"]


def test_input_checks(noisy_run):
    with pytest.raises(ValueError, match="one group"):
        flaky_tasks(pd.concat([noisy_run.trials, noisy_run.trials.assign(agent="b")]))
    with pytest.raises(ValueError, match="alpha"):
        flaky_tasks(noisy_run.trials, alpha=0)
    with pytest.raises(ValueError, match="lacks"):
        flaky_tasks(noisy_run.trials, rescores=pd.DataFrame({"task_id": ["x"]}))


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), n_blocks=st.integers(2, 5))
def test_row_order_does_not_change_the_triage(seed, n_blocks):
    rng = np.random.default_rng(seed)
    n = 80
    start = pd.Timestamp("2025-01-01", tz="UTC") + pd.to_timedelta(rng.permutation(n), unit="m")
    trials = pd.DataFrame(
        {
            "task_id": rng.integers(0, 6, n).astype(str),
            "trial": np.arange(n),
            "status": rng.choice(["ok", "ok", "ok", "timeout"], n),
            "score": rng.integers(0, 2, n).astype(float),
            "started_at": start,
            "host": rng.choice(["h1", "h2"], n),
        }
    )
    a = flaky_tasks(trials, n_time_blocks=n_blocks)
    b = flaky_tasks(trials.sample(frac=1.0, random_state=seed), n_time_blocks=n_blocks)
    key = ["task_id", "check"]
    ea = a.evidence.sort_values(key).reset_index(drop=True)
    eb = b.evidence.sort_values(key).reset_index(drop=True)
    pd.testing.assert_frame_equal(ea, eb)
    assert ((ea["pvalue"] >= 0) & (ea["pvalue"] <= 1)).all()
    assert (ea["pvalue_adjusted"] >= ea["pvalue"] - 1e-12).all()
