"""Resource sensitivity per task: paired exact McNemar across two resource profiles."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar
from statsmodels.stats.multitest import multipletests
from statsmodels_holm import statsmodels_holm

from evalnoise.attribution import resource_sensitivity
from evalnoise.runner.resources import MIB


def run_two_profiles(seed=0, n_tasks=30, n_trials=20, hungry=(0, 1, 2), uncapped=False):
    """One agent under 1x and 3x (or uncapped). Tasks in ``hungry`` need 2× their declared
    memory: under 1x they are OOM-killed most of the time; elsewhere both profiles agree."""
    rng = np.random.default_rng(seed)
    memory_mb = {f"task-{i:02d}": int(m) for i, m in enumerate(rng.integers(256, 4096, n_tasks))}
    p = rng.uniform(0.2, 0.9, n_tasks)
    p[list(hungry)] = 0.9
    rows = []
    for i, (task, mb) in enumerate(memory_mb.items()):
        for k in range(n_trials):
            seed_k = int(rng.integers(0, 2**31))
            for profile, factor in (("1x", 1), ("3x", None if uncapped else 3)):
                limit = None if factor is None else mb * factor * MIB
                oom = i in hungry and profile == "1x" and rng.random() < 0.9
                correct = bool(rng.random() < p[i])
                rows.append(
                    {
                        "agent": "agent-a",
                        "resource_profile": profile,
                        "task_id": task,
                        "trial": k,
                        "attempt": 1,
                        "seed": seed_k,
                        "status": "oom_killed" if oom else "ok",
                        "score": np.nan if oom else float(correct),
                        "memory_limit_bytes": limit,
                        "peak_memory_bytes": (2 if i in hungry else 0.5) * mb * MIB,
                    }
                )
    frame = pd.DataFrame(rows)
    frame["memory_limit_bytes"] = frame["memory_limit_bytes"].astype("Int64")
    need = {t: (2 * mb if int(t[-2:]) in hungry else mb // 2) for t, mb in memory_mb.items()}
    return frame, need


def test_per_task_mcnemar_and_bh_match_statsmodels():
    trials, need = run_two_profiles()
    res = resource_sensitivity(trials, "1x", "3x", memory_mb=need)
    t = res.table
    assert len(t) == 30 and (t["n_pairs"] == 20).all()
    assert (t["b"] + t["c"] <= t["n_pairs"]).all()
    for row in t.itertuples():
        if row.b + row.c == 0:
            assert row.pvalue == 1.0 and not row.tested and row.pvalue_adjusted == 1.0
            continue
        # the exact test uses the discordant counts only
        ref = sm_mcnemar([[0, row.b], [row.c, 0]], exact=True).pvalue
        assert row.pvalue == pytest.approx(ref, rel=1e-12)
    tested = t[t["tested"]]
    ref_bh = multipletests(tested["pvalue"], method="fdr_bh")[1]
    np.testing.assert_allclose(tested["pvalue_adjusted"], ref_bh, rtol=1e-12)
    holm = resource_sensitivity(trials, "1x", "3x", adjust="holm").table
    holm_t = holm[holm["tested"]]
    np.testing.assert_allclose(
        holm_t["pvalue_adjusted"], statsmodels_holm(holm_t["pvalue"]), rtol=1e-12
    )
    # the memory-hungry tasks lead the list, significant, and sit between the limits
    top = set(t["task_id"].head(3))
    assert top == {"task-00", "task-01", "task-02"}
    assert t.set_index("task_id").loc[sorted(top), "significant"].all()
    assert res.n_significant == 3
    between = t.set_index("task_id")["between_limits"]
    assert between[sorted(top)].all() and not between.drop(sorted(top)).any()
    assert (t["c"] >= t["b"]).head(3).all()  # right under 3x, wrong under 1x
    assert (t.head(3)["infra_a"] > 0).all() and (t["infra_b"] == 0).all()
    assert t["pvalue_adjusted"].is_monotonic_increasing
    assert (t["peak_a_bytes"] > 0).all()


def test_uncapped_profile_has_an_infinite_limit():
    trials, need = run_two_profiles(uncapped=True, n_tasks=6, hungry=(0,))
    t = resource_sensitivity(trials, "1x", "3x", memory_mb=need).table.set_index("task_id")
    assert np.isinf(t["limit_b_bytes"]).all()
    assert bool(t.loc["task-00", "between_limits"])
    no_limits = trials.drop(columns="memory_limit_bytes")
    t2 = resource_sensitivity(no_limits, "1x", "3x", memory_mb=need).table
    assert t2["between_limits"].isna().all() and t2["limit_a_bytes"].isna().all()
    t3 = resource_sensitivity(trials, "1x", "3x").table
    assert t3["between_limits"].isna().all() and t3["memory_need_bytes"].isna().all()
    frame_need = pd.DataFrame({"task_id": list(need), "memory_mb": list(need.values())})
    t4 = resource_sensitivity(trials, "1x", "3x", memory_mb=frame_need).table
    pd.testing.assert_series_equal(
        t4["between_limits"],
        resource_sensitivity(trials, "1x", "3x", memory_mb=need).table["between_limits"],
    )


# each example runs the whole pandas pipeline twice (~0.2 s): 25 examples, not 60
@settings(max_examples=25, deadline=None)
@given(
    outcomes=st.lists(
        st.tuples(st.integers(0, 4), st.integers(0, 5), st.booleans(), st.booleans()),
        min_size=1,
        max_size=60,
        unique_by=lambda x: (x[0], x[1]),
    ),
    adjust=st.sampled_from(["bh", "holm"]),
)
def test_swapping_profiles_swaps_b_and_c_and_keeps_p(outcomes, adjust):
    rows = []
    for task, trial, a, b in outcomes:
        for profile, y in (("A", a), ("B", b)):
            rows.append(
                {
                    "resource_profile": profile,
                    "task_id": f"t{task}",
                    "trial": trial,
                    "status": "ok",
                    "correct": y,
                }
            )
    trials = pd.DataFrame(rows)
    ab = resource_sensitivity(trials, "A", "B", adjust=adjust).table.set_index("task_id")
    ba = resource_sensitivity(trials, "B", "A", adjust=adjust).table.set_index("task_id")
    ba = ba.loc[ab.index]
    assert ((ab["pvalue"] >= 0) & (ab["pvalue"] <= 1)).all()
    assert ((ab["pvalue_adjusted"] >= ab["pvalue"] - 1e-15) & (ab["pvalue_adjusted"] <= 1)).all()
    np.testing.assert_array_equal(ab["b"], ba["c"])
    np.testing.assert_array_equal(ab["c"], ba["b"])
    np.testing.assert_allclose(ab["pvalue"], ba["pvalue"], rtol=1e-15)
    np.testing.assert_allclose(ab["pvalue_adjusted"], ba["pvalue_adjusted"], rtol=1e-15)
    np.testing.assert_allclose(ab["diff"], -ba["diff"])
    assert ab["n_pairs"].sum() == len(outcomes)


def test_policy_retries_unpaired_trials_and_json():
    trials, need = run_two_profiles(n_tasks=4, n_trials=4)
    extra = trials.iloc[[0]].assign(trial=99)  # a 1x trial with no 3x partner
    retried = trials.iloc[[1]].assign(attempt=2, status="ok", score=1.0)
    frame = pd.concat([trials, extra, retried], ignore_index=True)
    res = resource_sensitivity(frame, "1x", "3x", memory_mb=need)
    assert res.n_unpaired_a == 1 and res.n_unpaired_b == 0
    assert res.warnings and "no partner" in res.warnings[0]
    out = json.loads(json.dumps(res.to_dict(), allow_nan=True))
    assert out["n_tasks"] == 4 and out["adjust"] == "bh"
    assert set(out["tasks"][0]) >= {
        "task_id",
        "b",
        "c",
        "pvalue",
        "pvalue_adjusted",
        "between_limits",
    }
    excluded = resource_sensitivity(trials, "1x", "3x", policy="exclude")
    assert excluded.table["n_pairs"].sum() < res.table["n_pairs"].sum()


def test_input_checks():
    trials, _ = run_two_profiles(n_tasks=3, n_trials=2)
    with pytest.raises(ValueError, match="differ"):
        resource_sensitivity(trials, "1x", "1x")
    with pytest.raises(ValueError, match="no trials"):
        resource_sensitivity(trials, "1x", "9x")
    with pytest.raises(ValueError, match="one agent"):
        resource_sensitivity(pd.concat([trials, trials.assign(agent="agent-b")]), "1x", "3x")
    with pytest.raises(ValueError, match="adjust"):
        resource_sensitivity(trials, "1x", "3x", adjust="bonferroni")
