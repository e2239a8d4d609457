"""The multiverse: every cell is the single analysis it names; the range and the influence
by hand; the pooled interval against statsmodels' cluster-robust OLS."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from evalnoise.attribution import policy_sensitivity
from evalnoise.consistency_text import multiverse_line
from evalnoise.multiverse import multiverse, multiverse_for_group
from evalnoise.runner.infra_policies import apply_infra_policy
from evalnoise.stats import accuracy
from evalnoise.stats._task_intervals import pooled_mean_interval


def _group(seed=0, n_tasks=12, n_trials=4, infra=0.1, flagged=0.08):
    rng = np.random.default_rng(seed)
    p = rng.beta(1.2, 1.2, n_tasks)
    rows = []
    for t in range(n_tasks):
        for k in range(n_trials):
            infra_error = rng.random() < infra
            rows.append(
                {
                    "task_id": f"t{t}",
                    "trial": k,
                    "status": "infra_error" if infra_error else "ok",
                    "score": None if infra_error else float(rng.random() < p[t]),
                    "score_llm": None if infra_error else float(rng.random() < p[t]),
                    "agent_failed": (not infra_error) and bool(rng.random() < flagged),
                }
            )
    return pd.DataFrame(rows)


def _cell(res, **levels):
    (hit,) = [c for c in res.cells if all(c[f] == v for f, v in levels.items())]
    return hit


def test_every_cell_is_its_single_analysis():
    trials = _group()
    res = multiverse(trials, judges={"reference": "score", "llm": "score_llm"})
    assert res.factors == ("estimand", "infra_policy", "verdict_after_failure", "judge",
                           "cluster_se")  # fmt: skip
    assert res.levels["infra_policy"] == ("as_incorrect", "exclude")  # nothing retried
    assert res.n_cells == 2 * 2 * 2 * 2 * 2
    for se in ("cr1", "miller"):
        for policy in ("as_incorrect", "exclude"):
            # the single analysis: the policy applied, then accuracy of the scored trials
            counted = apply_infra_policy(trials, policy).counted
            scored = counted[counted["score"].notna()]
            single = accuracy(scored["score"].to_numpy(float), scored["task_id"].to_numpy(),
                              cluster_se=se)  # fmt: skip
            cell = _cell(res, estimand="task_means", infra_policy=policy, judge="reference",
                         verdict_after_failure="verifier_decides", cluster_se=se)  # fmt: skip
            assert cell["mean"] == pytest.approx(single.mean)
            assert (cell["ci_low"], cell["ci_high"]) == pytest.approx(
                (single.ci_low, single.ci_high)
            )
        # the policy sensitivity is this factor's column (read from the same cells)
        ps = policy_sensitivity(trials, cluster_se=se)
        for i, policy in enumerate(ps.policy[:2]):
            cell = _cell(res, estimand="task_means", infra_policy=policy, judge="reference",
                         verdict_after_failure="verifier_decides", cluster_se=se)  # fmt: skip
            assert (ps.mean[i], ps.ci_low[i], ps.ci_high[i]) == pytest.approx(
                (cell["mean"], cell["ci_low"], cell["ci_high"])
            )
    # the stricter reading: a flagged trial scores 0, as_incorrect counts an infra error as 0
    strict = trials.assign(score=trials["score"].mask(trials["agent_failed"], 0.0))
    y = strict["score"].fillna(0.0).to_numpy()
    acc = accuracy(y, strict["task_id"].to_numpy())
    cell = _cell(res, estimand="task_means", infra_policy="as_incorrect", judge="reference",
                 verdict_after_failure="agent_failure_scores_0", cluster_se="cr1")  # fmt: skip
    assert cell["mean"] == pytest.approx(acc.mean) and cell["n_trials"] == len(trials)
    # the judge's column, pooled over trials, infra errors excluded
    ok = trials[trials["status"] == "ok"]
    cell = _cell(res, estimand="pooled", infra_policy="exclude", judge="llm",
                 verdict_after_failure="verifier_decides", cluster_se="cr1")  # fmt: skip
    assert cell["mean"] == pytest.approx(ok["score_llm"].mean())


def test_the_range_and_the_influence_by_hand():
    res = multiverse(_group(3), judges={"reference": "score", "llm": "score_llm"})
    cells = res.to_frame()
    assert res.low == cells["mean"].min() and res.high == cells["mean"].max()
    assert res.spread == pytest.approx(res.high - res.low)
    assert res.influence["cluster_se"] == 0.0  # the SE never moves the mean
    assert res.interval_influence["cluster_se"] > 0
    # the judge's influence: the largest |mean(reference) − mean(llm)| with the rest fixed
    others = ["estimand", "infra_policy", "verdict_after_failure", "cluster_se"]
    wide = cells.pivot_table(index=others, columns="judge", values="mean")
    assert res.influence["judge"] == pytest.approx((wide["reference"] - wide["llm"]).abs().max())
    assert res.most_influential == max(res.influence, key=res.influence.get)
    assert res.headline == _cell(res, estimand="task_means", infra_policy="as_incorrect",
                                 judge="reference", verdict_after_failure="verifier_decides",
                                 cluster_se="cr1")["mean"]  # fmt: skip
    line = multiverse_line(res)
    assert line.startswith("the analysis choices move the headline by ")
    assert f"{res.most_influential} moves it most" in line


def test_retries_add_the_retry_policy_and_a_plain_frame_varies_only_estimand_and_se():
    trials = _group(5).assign(attempt=1)
    retried = trials[trials["status"] == "infra_error"].assign(attempt=2, status="ok", score=1.0)
    res = multiverse(pd.concat([trials, retried]))
    assert res.levels["infra_policy"] == ("as_incorrect", "exclude", "retry")
    plain = trials[trials["status"] == "ok"][["task_id", "trial", "score"]]
    res = multiverse_for_group(plain.rename(columns={"task_id": "task"}))
    assert res.factors == ("estimand", "cluster_se")
    assert any("no trial is flagged" in n for n in res.notes)


def test_pooled_interval_is_statsmodels_cluster_robust_ols():
    import statsmodels.api as sm

    rng = np.random.default_rng(1)
    counts = rng.integers(1, 7, 15)  # unbalanced
    tasks = np.repeat(np.arange(15), counts)
    y = (rng.random(tasks.size) < np.repeat(rng.random(15), counts)).astype(float)
    fit = sm.OLS(y, np.ones((y.size, 1))).fit(cov_type="cluster", cov_kwds={"groups": tasks})
    mean, se, _lo, _hi = pooled_mean_interval(y, tasks, 0.95)
    assert mean == pytest.approx(fit.params[0]) and se == pytest.approx(fit.bse[0], rel=1e-10)
    # balanced: the pooled mean is the mean of task means, with accuracy's interval
    tasks = np.repeat(np.arange(10), 4)
    y = (rng.random(40) < 0.5).astype(float)
    acc = accuracy(y, tasks)
    assert pooled_mean_interval(y, tasks, 0.95)[2:] == pytest.approx((acc.ci_low, acc.ci_high))
    miller = accuracy(y, tasks, cluster_se="miller")
    assert pooled_mean_interval(y, tasks, 0.95, cluster_se="miller")[1] == pytest.approx(
        miller.se_clustered
    )


def test_when_no_choice_moves_the_headline_none_is_named():
    plain = _group(7, infra=0.0, flagged=0.0)[["task_id", "trial", "status", "score"]]
    res = multiverse(plain)
    assert res.spread == 0 and res.most_influential is None
    assert multiverse_line(res).endswith("no choice moves it (estimand, cluster_se varied)")


def test_a_declared_level_that_is_no_choice_stands_for_its_equal():
    """exclude without an infra outcome is as_incorrect; retry without a retry is its
    on_exhausted policy; the stricter verdict without a flagged trial is the verifier's."""
    plain = _group(9, infra=0.0, flagged=0.0)
    res = multiverse(
        plain,
        reference={"infra_policy": "retry", "verdict_after_failure": "agent_failure_scores_0"},
    )
    assert res.reference["infra_policy"] == "as_incorrect"
    assert res.reference["verdict_after_failure"] == "verifier_decides"
    acc = accuracy(plain["score"].to_numpy(float), plain["task_id"].to_numpy())
    assert res.headline == pytest.approx(acc.mean)
    with pytest.raises(ValueError, match="reference judge"):
        multiverse(plain, reference={"judge": "nobody"})
