"""`evalnoise correct`: a judge with known error rates, a random labelled subset, and the
corrected accuracy covering the truth where the judge's raw accuracy does not."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from evalnoise.cli import main


def _table(tmp_path, seed: int = 1):
    """2000 trials on 200 tasks, true accuracy 0.40; the judge accepts 20 % of wrong answers
    and rejects 10 % of right ones (so its raw accuracy is ≈ 0.48); 400 random labels."""
    rng = np.random.default_rng(seed)
    tasks = np.repeat([f"t{i}" for i in range(200)], 10)
    truth = (rng.random(2000) < 0.40).astype(int)
    judge = np.where(truth == 1, rng.random(2000) > 0.10, rng.random(2000) < 0.20).astype(int)
    label = np.full(2000, np.nan)
    picked = rng.choice(2000, 400, replace=False)
    label[picked] = truth[picked]
    path = tmp_path / "judged.csv"
    pd.DataFrame({"task_id": tasks, "judge": judge, "label": label}).to_csv(path, index=False)
    return path, truth.mean()


def test_corrections_cover_the_truth_the_raw_judge_misses(tmp_path, capsys):
    path, truth = _table(tmp_path)
    assert main(["correct", str(path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["n_labelled"] == 400 and out["n_trials"] == 2000
    assert out["naive"] > truth + 0.05  # the judge's own accuracy is biased upward
    for name in ("rogan_gladen", "ppi"):
        est = out[name]
        assert est["ci_low"] <= truth <= est["ci_high"], (name, est, truth)
    assert abs(out["rogan_gladen"]["sensitivity"] - 0.90) < 0.07
    assert abs(out["rogan_gladen"]["specificity"] - 0.80) < 0.07


def test_text_output_and_bad_input(tmp_path, capsys):
    path, _ = _table(tmp_path)
    assert main(["correct", str(path)]) == 0
    text = capsys.readouterr().out
    assert "Rogan–Gladen" in text and "prediction-powered inference" in text
    bad = tmp_path / "bad.csv"
    pd.DataFrame({"task_id": ["a", "b"], "judge": [1, "maybe"], "label": [1, None]}).to_csv(
        bad, index=False
    )
    assert main(["correct", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "row 2" in err and "judge" in err
