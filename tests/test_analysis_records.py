"""The group record: one builder for ``evalnoise analyze`` and the pipeline, and an
undefined record with exactly the same keys."""

from __future__ import annotations

import numpy as np
import pytest

from evalnoise.analysis import ESTIMATE_KEYS, analyze_frame, group_stats, undefined_group_record
from evalnoise.pipeline.stages import group_estimates


def _frame():
    import pandas as pd

    rng = np.random.default_rng(3)
    tasks = np.repeat([f"t{i}" for i in range(6)], 4)
    return pd.DataFrame({"group": "g", "task": tasks, "score": rng.integers(0, 2, tasks.size)})


def test_undefined_record_has_every_key_of_a_defined_one():
    frame = _frame()
    defined = group_stats(frame["score"].to_numpy(), frame["task"].to_numpy(), "g")
    undefined = undefined_group_record("g", "nothing counted")
    assert set(defined) == set(undefined)
    assert all(undefined[k] is None for k in ESTIMATE_KEYS)
    assert set(ESTIMATE_KEYS) == set(defined) - {
        "group",
        "n_tasks",
        "n_obs",
        "interpretation",
        "warnings",
    }


def test_cli_and_pipeline_give_the_same_record():
    frame = _frame()
    options = {"confidence": 0.9, "cluster_se": "miller", "quantile": "t"}
    (cli,) = analyze_frame(frame, **options)
    pipeline = group_estimates(frame, "g", options)
    assert cli.keys() == pipeline.keys()
    for key, value in cli.items():
        if isinstance(value, float):
            assert pipeline[key] == pytest.approx(value, nan_ok=True), key
        else:
            assert pipeline[key] == value, key
    assert group_estimates(frame.iloc[:0], "g", options)["interpretation"] == "undefined"
