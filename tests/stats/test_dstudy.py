"""The D study: total-error SE, projections, optimal designs (closed forms, brute force)."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest

from evalnoise.stats import (
    accuracy,
    best_design,
    cheapest_design,
    dstudy,
    gstudy,
    model_of,
    total_error,
    variance_model,
)


def _crossed(rng, n_task=12, n_prompt=3, n_judge=2, reps=2, s=(0.03, 0.004, 0.003, 0.2)):
    t, p, j, _ = np.meshgrid(
        np.arange(n_task), np.arange(n_prompt), np.arange(n_judge), np.arange(reps),
        indexing="ij",
    )  # fmt: skip
    t, p, j = t.ravel(), p.ravel(), j.ravel()
    y = (
        rng.normal(0, math.sqrt(s[0]), n_task)[t]
        + rng.normal(0, math.sqrt(s[1]), n_prompt)[p]
        + rng.normal(0, math.sqrt(s[2]), n_judge)[j]
        + rng.normal(0, math.sqrt(s[3]), t.size)
    )
    return y, {"task": t, "prompt": p, "judge": j}


def test_projection_formula_and_the_design_that_ran():
    """Σ σ²(α)/π(α); for a balanced design the D study at the sizes that ran is the G
    study's variance of the mean of task means."""
    rng = np.random.default_rng(0)
    y, facets = _crossed(rng)
    g = gstudy(y, facets, ["task", "prompt", "judge"], mean_of="task")
    te = total_error(g)
    d = dstudy(g)
    assert d.variance[0] == pytest.approx(te.variance, rel=1e-12)
    s2 = dict(zip(g.effects, g.sigma2, strict=True))
    d2 = dstudy(g, {"task": 40, "prompt": [1, 5]}, replicates=3)
    for row, var in zip(d2.sizes, d2.variance, strict=True):
        n_t, n_p, n_j = row
        expected = (
            s2["task"] / n_t + s2["prompt"] / n_p + s2["judge"] / n_j
            + s2["task×prompt"] / (n_t * n_p) + s2["task×judge"] / (n_t * n_j)
            + s2["prompt×judge"] / (n_p * n_j) + s2["task×prompt×judge"] / (n_t * n_p * n_j)
            + s2["residual"] / (n_t * n_p * n_j * 3)
        )  # fmt: skip
        assert var == pytest.approx(expected, rel=1e-12)
    np.testing.assert_allclose(d2.contribution.sum(axis=1), d2.variance, rtol=1e-12)
    records = json.loads(json.dumps(d2.to_records()))
    assert records[0]["task"] == 40 and records[1]["prompt"] == 5
    with pytest.raises(ValueError, match="not a facet"):
        dstudy(g, {"rater": 2})


def test_total_error_of_one_facet_is_the_clustered_t_interval():
    """Tasks alone, trials replicated: V̂ = MS_task/(Tn), ν = T − 1 — the task-clustered
    interval with a t quantile (CR1 SE of the mean of task means)."""
    rng = np.random.default_rng(1)
    task = np.repeat(np.arange(15), 6)
    y = rng.normal(0, 0.5, 15)[task] + rng.normal(0, 0.5, task.size)
    g = gstudy(y, {"task": task}, ["task"], mean_of="task")
    assert g.sigma2_raw[0] > 0
    acc = accuracy((y - y.min()) / np.ptp(y), task, quantile="t")
    te = total_error(g, se_clustered=acc.se_clustered * np.ptp(y))
    assert te.df == pytest.approx(14.0)
    assert te.se == pytest.approx(acc.se_clustered * np.ptp(y), rel=1e-12)
    scale = np.ptp(y)
    assert te.ci_low == pytest.approx(acc.ci_low * scale + y.min(), rel=1e-10)
    assert te.ci_high == pytest.approx(acc.ci_high * scale + y.min(), rel=1e-10)
    assert te.variance_missed == 0 and te.se_ratio == pytest.approx(1.0)


def test_what_the_clustered_se_misses():
    rng = np.random.default_rng(2)
    y, facets = _crossed(rng)
    g = gstudy(y, facets, ["task", "prompt", "judge"], mean_of="task")
    te = total_error(g)
    inside = dict(zip(te.components, te.in_clustered, strict=True))
    assert inside == {
        "task": True, "prompt": False, "judge": False, "task×prompt": True, "task×judge": True,
        "prompt×judge": False, "task×prompt×judge": True, "residual": True,
    }  # fmt: skip
    missed = sum(c for c, i in zip(te.contribution, te.in_clustered, strict=True) if not i)
    assert te.variance_missed == pytest.approx(missed)
    assert te.variance_clustered_part + te.variance_missed == pytest.approx(te.variance)
    assert json.loads(json.dumps(te.to_dict()))["cluster"] == "task"


def test_total_error_interval_covers_where_the_clustered_one_does_not():
    """Prompt and judge effects shared by every task: over 300 simulated runs the
    total-error interval covers the true mean about 95 % of the time, the clustered one far
    less (benchmarks/messing_total_error.py has the full table)."""
    rng = np.random.default_rng(3)
    cover_total = cover_cl = 0
    reps = 300
    for _ in range(reps):
        y, facets = _crossed(rng, n_task=40, n_prompt=4, n_judge=3, s=(0.03, 0.01, 0.01, 0.2))
        g = gstudy(y, facets, ["task", "prompt", "judge"], mean_of="task")
        te = total_error(g)
        cover_total += te.ci_low <= 0.0 <= te.ci_high
        means = np.bincount(facets["task"], weights=y) / np.bincount(facets["task"])
        se = means.std(ddof=1) / math.sqrt(means.size)
        cover_cl += abs(means.mean()) <= 1.959964 * se
    assert cover_total / reps >= 0.92
    assert cover_cl / reps <= 0.80


def _brute(s2, costs, budget=None, target=None, n_max=400):
    best = None
    for n, p, j, r in itertools.product(range(1, n_max + 1), range(1, 7), range(1, 5), range(1, 5)):
        var = (s2["task"] / n + s2["prompt"] / p + s2["judge"] / j + s2["task×prompt"] / (n * p)
               + s2["residual"] / (n * p * j * r))  # fmt: skip
        cost = costs["task"] * n + costs["prompt"] * p + costs["judge"] * j
        cost += costs["trial"] * n * p * j * r
        if budget is not None and cost <= budget * (1 + 1e-12):
            key = (var, -n)
        elif target is not None and var <= target**2 * (1 + 1e-12):
            key = (cost, var)
        else:
            continue
        if best is None or key < best[0]:
            best = (key, var, cost)
    return best


def test_best_and_cheapest_designs_match_brute_force():
    model = variance_model(
        ["task", "prompt", "judge"],
        {"task": 0.03, "prompt": 0.004, "judge": 0.002, "task×prompt": 0.006, "residual": 0.2},
        replicate="trial",
    )
    costs = {"task": 1.0, "prompt": 15.0, "judge": 25.0, "trial": 0.05}
    s2 = dict(zip(model.effects, model.sigma2, strict=True))
    limits = {"prompt": 6, "judge": 4, "trial": 4}
    for budget in (150.0, 400.0):
        res = best_design(model, budget, costs, limits=limits)
        _, var, cost = _brute(s2, costs, budget=budget)
        assert res.recommended.variance == pytest.approx(var, rel=1e-12)
        assert res.recommended.cost <= budget
    for target in (0.06, 0.045):
        res = cheapest_design(model, target, costs, limits=limits, max_free=400)
        _, var, cost = _brute(s2, costs, target=target)
        assert res.recommended.cost == pytest.approx(cost, rel=1e-12)
        assert res.recommended.se <= target * (1 + 1e-12)
    # a target below what more tasks can reach: buy more prompts and judges, or nothing
    floor = math.sqrt(0.004 / 6 + 0.002 / 4)
    res = cheapest_design(model, floor * 0.99, costs, limits=limits)
    assert res.recommended is None and "already exceed" in res.warnings[0]
    per_prompt = res.best_by("prompt")
    assert list(per_prompt["value"]) == [1, 2, 3, 4, 5, 6]


def test_model_validation():
    with pytest.raises(ValueError, match="no effect"):
        variance_model(["task"], {"task": 1.0, "prompt": 1.0, "residual": 1.0})
    with pytest.raises(ValueError, match="residual"):
        variance_model(["task"], {"task": 1.0})
    model = variance_model(["task"], {"task": 1.0, "residual": 1.0})
    with pytest.raises(ValueError, match="cost of 'host'"):
        best_design(model, 10, {"host": 1.0})
    with pytest.raises(ValueError, match="costs nothing"):
        best_design(model, 10, {"replicate": 0.0})
    rng = np.random.default_rng(4)
    y, facets = _crossed(rng)
    g = gstudy(y, facets, ["task", "prompt", "judge"], mean_of="task")
    m = model_of(g, replicate="trial")
    assert m.replicated and m.sizes == {"task": 12.0, "prompt": 3.0, "judge": 2.0}
