"""The attribution stage over a run's score rows: policy sensitivity, resource-sensitive tasks,
flaky tasks and time effects reach the summary and metrics."""

from __future__ import annotations

import numpy as np
import pandas as pd

from evalnoise.attribution.text import attribution_lines, resource_line
from evalnoise.pipeline.attribution_stage import attribution_tables

OPTIONS = {"confidence": 0.95, "cluster_se": "cr1", "quantile": "normal"}


def _scores(seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One agent under 1x and 3x on 8 tasks × 6 trials, every task declaring 128 MiB: on
    tasks t0–t3 the agent needs 200 MiB, more than 1x's 128 MiB hard limit and less than
    3x's 384 MiB, so they are OOM-killed under 1x and answered under 3x; the others behave
    alike under both."""
    rng = np.random.default_rng(seed)
    rows = []
    start = pd.Timestamp("2026-11-23T10:00:00Z")
    for p_i, profile in enumerate(("1x", "3x")):
        limit = (128 if profile == "1x" else 384) * 2**20
        for t in range(8):
            for trial in range(6):
                needy = t < 4
                oom = needy and profile == "1x"
                correct = None if oom else bool(rng.random() < (0.8 if t % 2 else 0.3))
                rows.append(
                    {
                        "agent": "a",
                        "resource_profile": profile,
                        "task_id": f"t{t}",
                        "trial": trial,
                        "attempt": 1,
                        "status": "oom_killed" if oom else "ok",
                        "exit_code": 137 if oom else 0,
                        "score": None if correct is None else float(correct),
                        "correct": correct,
                        "memory_limit_bytes": limit,
                        # what the agent used where it could: 200 MiB on t0–t3, else 64
                        "peak_memory_bytes": None if oom else (200 if needy else 64) * 2**20,
                        "started_at": start + pd.Timedelta(seconds=p_i * 1000 + t * 60 + trial),
                        "host": "vm",
                    }
                )
    # the declared spec is the same for every task: the need comes from the measured peaks
    tasks = pd.DataFrame({"task_id": [f"t{t}" for t in range(8)], "memory_mb": [128] * 8})
    return pd.DataFrame(rows), tasks


def test_attribution_singles_out_the_tasks_between_the_limits():
    scores, tasks = _scores()
    out = attribution_tables(
        scores,
        tasks,
        policy={"mode": "as_incorrect"},
        options=OPTIONS,
        groups=[("a", "1x"), ("a", "3x")],
    )
    (resource,) = out["summary"]["_resource"]
    assert resource["between_limits"] == ["t0", "t1", "t2", "t3"]
    assert resource["memory_need"] == "measured: largest peak under 3x"
    assert set(resource["significant"]) <= {"t0", "t1", "t2", "t3"}
    assert "need memory between the two hard limits: t0, t1, t2, t3" in resource_line(resource)
    assert set(out["resource"]["task_id"]) == {f"t{t}" for t in range(8)}
    # 1x: excluding the OOM kills moves the result far beyond its CI
    one = out["summary"]["a@1x"]
    assert one["policy_moves_result"] is True
    lines = attribution_lines(one)
    assert "choice moves the result: YES" in lines[0]
    assert "infrastructure share of variance" in lines[1]
    assert any(line.startswith("noise, one model") for line in lines)
    assert lines[-1].startswith("flaky tasks: ")
    three = out["summary"]["a@3x"]
    assert three["policy_moves_result"] is False
    assert 0.0 <= three["infra_share"] <= 1.0
