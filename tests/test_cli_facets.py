"""``evalnoise analyze --facets`` and ``evalnoise plan --from PILOT --facets``: every facet a
table varied in one G study, its D study, the JSON shape, and bad input."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from evalnoise.cli import main
from evalnoise.stats import accuracy, gstudy, total_error


def run_json(capsys, argv):
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.fixture
def table(tmp_path):
    """Two models × 16 tasks × 3 prompt variants × 2 judges × 2 trials, 0/1 scores with a
    prompt and a judge effect shared by every task."""
    rng = np.random.default_rng(7)
    prompt_effect = np.array([0.12, 0.0, -0.12])
    judge_effect = np.array([0.08, -0.08])
    rows = []
    for model, shift in (("m1", 0.0), ("m2", 0.1)):
        for task in range(16):
            p_task = rng.uniform(0.2, 0.7)
            for prompt in range(3):
                for judge in range(2):
                    p = np.clip(p_task + shift + prompt_effect[prompt] + judge_effect[judge], 0, 1)
                    for trial in range(2):
                        rows.append({
                            "model": model, "task_id": f"task-{task:02d}",
                            "prompt": f"v{prompt}", "judge": f"judge-{judge}",
                            "trial": trial, "score": float(rng.random() < p),
                        })  # fmt: skip
    frame = pd.DataFrame(rows)
    path = tmp_path / "facets.csv"
    frame.to_csv(path, index=False)
    return path, frame


def test_analyze_facets_json_has_the_g_and_d_studies(table, capsys):
    path, frame = table
    out = run_json(capsys, ["analyze", str(path), "--group", "model", "--facets", "prompt,judge"])
    assert set(out["gstudy"]) == set(out["dstudy"]) == {"m1", "m2"}
    g = out["gstudy"]["m1"]
    names = [c["component"] for c in g["components"]]
    assert names == ["task_id", "prompt", "judge", "task_id×prompt", "task_id×judge",
                     "prompt×judge", "task_id×prompt×judge", "residual"]  # fmt: skip
    for c in g["components"]:
        assert {"sigma2", "ci_low", "ci_high", "detected", "share"} <= set(c)
        assert c["ci_low"] <= c["sigma2"] <= c["ci_high"]
        assert (c["share"] is None) == (not c["detected"])
    # the same numbers as the engine called directly on the group's rows
    part = frame[frame["model"] == "m1"]
    ref = gstudy(part["score"], part, ["task_id", "prompt", "judge"], mean_of="task_id")
    got = [c["sigma2"] for c in g["components"]]
    np.testing.assert_allclose(got, ref.sigma2, rtol=1e-12)
    te = out["dstudy"]["m1"]["total_error"]
    acc = accuracy(part["score"].to_numpy(), part["task_id"].to_numpy())
    assert te["se_clustered"] == pytest.approx(acc.se_clustered)
    assert te["se"] == pytest.approx(total_error(ref).se)
    assert te["mean"] == pytest.approx(acc.mean)
    # the prompt variants' and judges' shared effects: error the clustered SE cannot see
    assert te["variance_missed"] > 0 and te["se"] > te["se_clustered"]
    proj = out["dstudy"]["m1"]["projections"]
    assert proj[0]["change"] == "as ran" and proj[0]["se"] == pytest.approx(te["se"])
    changes = {p["change"]: p["se"] for p in proj}
    assert changes["task_id ×2"] < te["se"] and changes["prompt ×2"] < te["se"]
    assert out["groups"][0]["n_obs"] == 192  # the usual per-group record is still there


def test_analyze_facets_without_a_trial_column_and_with_nesting(table, tmp_path, capsys):
    _, frame = table
    no_trial = tmp_path / "no_trial.csv"
    frame[frame["model"] == "m1"].drop(columns=["trial", "model"]).to_csv(no_trial, index=False)
    assert main(["analyze", str(no_trial), "--facets", "prompt,judge", "--json"]) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert "no 'trial' column: scores in a design cell are replicates" in captured.err
    assert out["gstudy"]["all"]["residual_includes"] is None  # 2 scores per cell: replicates
    # judges nested in prompts (each prompt variant graded by its own judges)
    nested = frame[frame["model"] == "m1"].assign(judge=lambda f: f["prompt"] + f["judge"])
    nested_path = tmp_path / "nested.csv"
    nested.to_csv(nested_path, index=False)
    out = run_json(capsys, ["analyze", str(nested_path), "--facets", "prompt,judge:prompt"])
    names = [c["component"] for c in out["gstudy"]["all"]["components"]]
    assert names == ["task_id", "prompt", "task_id×prompt", "judge:prompt",
                     "task_id×judge:prompt", "residual"]  # fmt: skip


def test_analyze_facets_text_and_cheapest_design(table, capsys):
    path, _ = table
    argv = ["analyze", str(path), "--group", "model", "--facets", "prompt,judge"]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "G study of task_id × prompt × judge" in text and "total-error SE" in text
    costs = ["--facet-costs", "task=1,prompt=20,judge=40,trial=0.05", "--target-se", "0.05"]
    out = run_json(capsys, [*argv, *costs])
    cheapest = out["dstudy"]["m1"]["cheapest"]
    assert cheapest["se"] <= 0.05 + 1e-12 and cheapest["cost"] > 0
    assert set(cheapest["design"]) == {"task_id", "prompt", "judge", "replicates"}


def test_analyze_facets_bad_input(table, tmp_path, capsys):
    path, frame = table
    assert main(["analyze", str(path), "--facets", "prompt,rater"]) == 2
    assert "'rater'" in capsys.readouterr().err
    holes = frame.copy()
    holes.loc[5, "prompt"] = None
    bad = tmp_path / "holes.csv"
    holes.to_csv(bad, index=False)
    assert main(["analyze", str(bad), "--facets", "prompt"]) == 2
    err = capsys.readouterr().err
    assert "row 6" in err and "'prompt'" in err
    assert main(["analyze", str(path), "--target-se", "0.1"]) == 2
    assert main(["analyze", str(path), "--facets", "prompt,,judge"]) == 2
    assert main(["analyze", str(path), "--facets", "prompt", "--facet-costs", "prompt=x"]) == 2


def test_plan_from_a_pilot_with_every_facet(table, capsys):
    path, frame = table
    base = ["plan", "--from", str(path), "--group", "model", "--facets", "prompt,judge"]
    costs = ["--facet-costs", "task=1,prompt=20,judge=40,trial=0.05"]
    out = run_json(capsys, [*base, *costs, "--budget", "400"])
    plans = {p["group"]: p for p in out["plans"]}
    best = plans["m1"]["dstudy"]["best"]
    assert best["cost"] <= 400 and best["design"]["task_id"] >= 1
    # a brute-force check of the recommendation over a small grid of the other facets
    g = gstudy(frame.loc[frame["model"] == "m1", "score"], frame[frame["model"] == "m1"],
               ["task_id", "prompt", "judge"], mean_of="task_id")  # fmt: skip
    s2 = dict(zip(g.effects, g.sigma2, strict=True))
    c = {"task_id": 1, "prompt": 20, "judge": 40, "trial": 0.05}
    best_var = np.inf
    for p in range(1, 13):
        for j in range(1, 9):
            for r in range(1, 9):
                cost_fixed = c["prompt"] * p + c["judge"] * j
                per_task = c["task_id"] + c["trial"] * p * j * r
                n = int((400 - cost_fixed) // per_task)
                if n < 1:
                    continue
                var = (s2["task_id"] / n + s2["prompt"] / p + s2["judge"] / j
                       + s2["task_id×prompt"] / (n * p) + s2["task_id×judge"] / (n * j)
                       + s2["prompt×judge"] / (p * j) + s2["task_id×prompt×judge"] / (n * p * j)
                       + s2["residual"] / (n * p * j * r))  # fmt: skip
                best_var = min(best_var, var)
    assert best["se"] ** 2 <= best_var * (1 + 1e-9)
    out = run_json(capsys, [*base, *costs, "--target-se", "0.06"])
    assert out["plans"][0]["dstudy"]["cheapest"]["se"] <= 0.06 + 1e-12
    assert main([*base]) == 2  # no goal
    assert main([*base, "--budget", "400", "--target-se", "0.1"]) == 2  # two goals
    assert main(["plan", "--facets", "prompt", "--budget", "10"]) == 2  # no pilot
    assert main(["plan", "--budget", "400", "--target-se", "0.1", "--sigma2-between", "0.1",
                 "--sigma2-within", "0.1"]) == 2  # fmt: skip
    text_argv = [*base, *costs, "--budget", "400"]
    assert main(text_argv) == 0
    assert "the least SE for 400" in capsys.readouterr().out
