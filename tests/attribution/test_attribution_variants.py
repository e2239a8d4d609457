"""Prompt and sampling variants in the pipeline's model of the noise (the attribution stage).

A group that varied the prompt (or the sampling settings) gets their components in its G
study — main effect and interaction with the task, never infrastructure — against
statsmodels' REML on a balanced design; a table without variants gets the model it always
had; and the infra policies, the resource comparison and the time model keep a (task,
trial) that ran under two variants as two trials.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm

from evalnoise.attribution import (
    INFRA_COMPONENTS,
    policy_sensitivity,
    resource_sensitivity,
    time_effects,
    variance_components,
)
from evalnoise.attribution.all_analyses import attribution_for_trials


def crossed(seed: int, *, n_tasks=12, n_prompts=3, n_blocks=4, per_cell=2, sd=None):
    """Scores of a balanced task × prompt × time-block design (no time effect); the prompts
    shift every task's score by -0.2, 0, +0.2, … (a prompt effect of variance ≈ 0.04)."""
    sd = sd or {"task": 0.2, "task:prompt": 0.1, "residual": 0.2}
    rng = np.random.default_rng(seed)
    t, p, b, _ = np.meshgrid(
        np.arange(n_tasks), np.arange(n_prompts), np.arange(n_blocks), np.arange(per_cell),
        indexing="ij",
    )  # fmt: skip
    t, p, b = t.ravel(), p.ravel(), b.ravel()
    y = (
        0.5
        + rng.normal(0, sd["task"], n_tasks)[t]
        + np.linspace(-0.2, 0.2, n_prompts)[p]
        + rng.normal(0, sd["task:prompt"], (n_tasks, n_prompts))[t, p]
        + rng.normal(0, sd["residual"], t.size)
    )
    return y, t, p, b


def _mixedlm(df: pd.DataFrame, vcf: dict) -> dict:
    df = df.assign(one=1)
    model = sm.MixedLM.from_formula("y ~ 1", groups="one", re_formula="0", vc_formula=vcf, data=df)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = model.fit(reml=True, method="nm", maxiter=5000)
    return dict(zip(model.exog_vc.names, fit.vcomp, strict=True)) | {"residual": fit.scale}


def test_a_prompt_facet_is_a_component_of_its_own_as_mixedlm_finds_it():
    y, t, p, b = crossed(3)
    res = variance_components(y, t, b, interaction=True, extra_facets={"prompt_variant": p})
    assert res.components == (
        "task",
        "time_block",
        "prompt_variant",
        "task:prompt_variant",
        "task:time_block",
        "residual",
    )
    assert res.infra_components == ("time_block", "task:time_block")
    assert not set(res.infra_components) & {"prompt_variant", "task:prompt_variant"}
    df = pd.DataFrame({"y": y, "task": t, "prompt": p, "block": b})
    df["tp"], df["tb"] = t * 10 + p, t * 10 + b
    ref = _mixedlm(
        df,
        {
            "task": "0 + C(task)",
            "prompt": "0 + C(prompt)",
            "tp": "0 + C(tp)",
            "block": "0 + C(block)",
            "tb": "0 + C(tb)",
        },
    )
    names = {"task": "task", "prompt_variant": "prompt", "task:prompt_variant": "tp"}
    names |= {"time_block": "block", "task:time_block": "tb", "residual": "residual"}
    for ours, theirs in names.items():
        assert res[ours] == pytest.approx(max(ref[theirs], 0.0), rel=2e-2, abs=1e-3), ours
    # the prompt's variance is not the infrastructure's: the infra share stays small
    assert res["prompt_variant"] > 0.005 and res.infra_share < 0.05
    assert set(INFRA_COMPONENTS) >= set(res.infra_components)


def test_one_level_adds_nothing_and_bad_facets_are_refused():
    y, t, p, b = crossed(4)
    plain = variance_components(y, t, b)
    same = variance_components(y, t, b, extra_facets={"prompt_variant": np.zeros_like(t)})
    assert same.components == plain.components
    np.testing.assert_allclose(same.sigma2_raw, plain.sigma2_raw, rtol=1e-12)
    with pytest.raises(ValueError, match="clashes"):
        variance_components(y, t, b, extra_facets={"host": p})
    with pytest.raises(ValueError, match="same length"):
        variance_components(y, t, b, extra_facets={"prompt_variant": p[:-1]})


def table(seed: int = 5) -> pd.DataFrame:
    """A score table of one agent under two profiles, three prompt variants, 2 trials each
    (the same trial index under every variant), started in a random order."""
    y, t, p, _ = crossed(seed, n_blocks=1, per_cell=4)
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(
        {
            "agent": "a",
            "resource_profile": np.where(np.arange(t.size) % 4 < 2, "1x", "3x"),
            "task_id": [f"t{i:02d}" for i in t],
            "trial": np.arange(t.size) % 2,
            "prompt_variant": [f"p{i}" for i in p],
            "sampling": None,
            "attempt": 1,
            "status": "ok",
            "correct": y > 0.5,
            "score": (y > 0.5).astype(float),
            "started_at": pd.Timestamp("2026-01-01", tz="UTC")
            + pd.to_timedelta(rng.permutation(t.size), unit="s"),
        }
    )
    return frame


def test_the_attribution_keeps_variants_apart_and_models_them():
    frame = table()
    one = frame[frame["resource_profile"] == "3x"]
    policy = policy_sensitivity(one)
    # every (variant, trial) counts, not one row per (task, trial)
    assert policy.n_counted[policy.policy.index("as_incorrect")] == len(one)
    sens = resource_sensitivity(frame, "1x", "3x")
    assert int(sens.table["n_pairs"].sum()) == len(one)  # paired within the variant
    times = time_effects(one, n_time_blocks=2)
    assert {"prompt_variant", "task:prompt_variant"} <= set(times.components.components)
    without = time_effects(one.drop(columns=["prompt_variant", "sampling"]), n_time_blocks=2)
    assert "prompt_variant" not in without.components.components
    out = attribution_for_trials(frame, groups=[("a", "3x")])
    gstudy = out.summary["a@3x"]["noise"]["gstudy"]
    assert gstudy["sizes"]["prompt_variant"] == 3
    found = {c["component"]: c for c in gstudy["components"]}
    assert found["prompt_variant"]["detected"]  # prompts shift every task by ±0.2
