"""The multiverse of the analysis stage: the scorer (the reference scorer and every judge of
the judge stage) and the infra policy are factors, and each cell is the single analysis it
names — the group's statistics run on that scorer's shards under that policy
(:func:`evalnoise.pipeline.collect.load_group` and
:func:`evalnoise.pipeline.stages.group_estimates`, the judge stage's "accuracy by the judge")."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from evalnoise.attribution import policy_sensitivity
from evalnoise.pipeline.collect import load_group
from evalnoise.pipeline.judging import scorer_rows
from evalnoise.pipeline.stages import group_estimates, group_outputs, multiverse_settings
from evalnoise.schema import SCORES, TASKS, conform

OPTIONS = {
    "score": "reference",
    "confidence": 0.95,
    "cluster_se": "cr1",
    "quantile": "normal",
    "per_level": False,
    "convergence": {"subsamples": 20, "seed": 0, "tolerance": 0.02},
    "bootstrap": {"resamples": 200, "seed": 0},
    "budget": {"runs": None, "max_tasks": None},
}
N_TASKS, N_TRIALS = 8, 4
INFRA = {(0, 1), (3, 2), (5, 0)}  # (task, trial) whose first attempt was OOM-killed
RETRIED = {(0, 1), (5, 0)}  # ... and retried once, successfully
FLAGGED = {(2, 0), (6, 3)}  # the agent timed out, the verifier still gave a verdict


def _shard(path, scorer: str, flip: float, seed: int):
    """One scorer's shard of group a@1x: the same attempts, each verdict the truth flipped
    with probability ``flip``; no verdict for an infra outcome."""
    truth = (
        np.random.default_rng(0).random((N_TASKS, N_TRIALS))
        < np.linspace(0.1, 0.9, N_TASKS)[:, None]
    )
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(N_TASKS):
        for t in range(N_TRIALS):
            attempts = [("oom_killed", 1), ("ok", 2)] if (i, t) in RETRIED else []
            if (i, t) in INFRA and (i, t) not in RETRIED:
                attempts = [("oom_killed", 1)]
            attempts = attempts or [("ok", 1)]
            for status, attempt in attempts:
                verdict = None
                if status == "ok":
                    verdict = bool(truth[i, t] ^ (rng.random() < flip))
                rows.append(
                    {
                        "agent": "a",
                        "resource_profile": "1x",
                        "task_id": f"t{i}",
                        "trial": t,
                        "attempt": attempt,
                        "status": status,
                        "scorer": scorer,
                        "correct": verdict,
                        "score": None if verdict is None else float(verdict),
                        "verified_after": "timeout" if (i, t) in FLAGGED else None,
                    }
                )
    table = conform(pa.Table.from_pandas(pd.DataFrame(rows), preserve_index=False), SCORES)
    pq.write_table(table, path)
    return path


@pytest.fixture
def run(tmp_path):
    tasks = pd.DataFrame(
        {"task_id": [f"t{i}" for i in range(N_TASKS)], "question": "q", "answer": "1",
         "level": "1"}
    )  # fmt: skip
    tasks_path = tmp_path / "tasks.parquet"
    pq.write_table(conform(pa.Table.from_pandas(tasks, preserve_index=False), TASKS), tasks_path)
    shards = {
        "reference": _shard(tmp_path / "reference.parquet", "numeric", 0.0, 1),
        "llm": _shard(tmp_path / "llm.parquet", "judge:llm", 0.3, 2),
        "last_number": _shard(tmp_path / "last_number.parquet", "judge:last_number", 0.1, 3),
    }
    return tasks_path, shards


def _first_attempts(path, out):
    frame = pd.read_parquet(path)
    pq.write_table(
        conform(pa.Table.from_pandas(frame[frame["attempt"] == 1], preserve_index=False), SCORES),
        out,
    )
    return out


def _universe(run, policy, options=OPTIONS):
    tasks, shards = run
    data = load_group([shards["reference"]], tasks, "a", "1x", policy)
    judged = {"llm": [shards["llm"]], "last_number": [shards["last_number"]]}
    if options["score"] == "judge":  # the headline reads the first judge's shards
        data = load_group(judged["llm"], tasks, "a", "1x", policy)
    scorers = scorer_rows([shards["reference"]], judged, "a", "1x")
    settings = multiverse_settings(policy, options, scorers)
    out = group_outputs(data, options, policy="p", multiverse=settings)
    return out.stats["overall"]


def _cell(universe, **levels):
    fixed = {"estimand": "task_means", "verdict_after_failure": "verifier_decides",
             "cluster_se": "cr1", **levels}  # fmt: skip
    (hit,) = [c for c in universe["cells"] if all(c[f] == v for f, v in fixed.items())]
    return hit


def test_every_scorer_and_policy_cell_is_its_single_analysis(run, tmp_path) -> None:
    tasks, shards = run
    overall = _universe(run, {"mode": "retry", "max_attempts": 2})
    universe = overall["multiverse"]
    assert universe["levels"]["judge"] == ["reference", "llm", "last_number"]
    assert universe["levels"]["infra_policy"] == ["as_incorrect", "exclude", "retry"]
    assert universe["levels"]["verdict_after_failure"] == [
        "verifier_decides",
        "agent_failure_scores_0",
    ]
    assert set(universe["factors"]) == {"estimand", "infra_policy", "verdict_after_failure",
                                        "judge", "cluster_se"}  # fmt: skip
    assert universe["n_cells"] == 2 * 3 * 2 * 3 * 2 == len(universe["cells"])
    # the reference cell is the run's own analysis: the declared policy, the reference scorer
    assert universe["reference"]["infra_policy"] == "retry"
    assert universe["reference"]["judge"] == "reference"
    assert universe["headline"] == pytest.approx(overall["mean"])
    for name, shard in shards.items():
        first = _first_attempts(shard, tmp_path / f"{name}-first.parquet")
        single = {
            # as_incorrect and exclude count the first attempt of every trial
            "as_incorrect": load_group([first], tasks, "a", "1x", {"mode": "as_incorrect"}),
            "exclude": load_group([first], tasks, "a", "1x", {"mode": "exclude"}),
            "retry": load_group([shard], tasks, "a", "1x", {"mode": "retry", "max_attempts": 2}),
        }
        for policy, data in single.items():
            expected = group_estimates(data.frame, data.group, OPTIONS)
            cell = _cell(universe, judge=name, infra_policy=policy)
            assert cell["mean"] == pytest.approx(expected["mean"]), (name, policy)
            assert (cell["ci_low"], cell["ci_high"]) == pytest.approx(
                (expected["ci_low"], expected["ci_high"])
            ), (name, policy)
            assert cell["n_trials"] == len(data.frame)
        # the stricter reading of a flagged trial: the load_group of the "failure" rule
        strict = load_group(
            [first], tasks, "a", "1x", {"mode": "as_incorrect", "after_agent_failure": "failure"}
        )
        cell = _cell(
            universe,
            judge=name,
            infra_policy="as_incorrect",
            verdict_after_failure="agent_failure_scores_0",
        )
        assert cell["mean"] == pytest.approx(group_estimates(strict.frame, "g", OPTIONS)["mean"])


def test_policy_sensitivity_is_the_multiverse_policy_column(run) -> None:
    tasks, shards = run
    universe = _universe(run, {"mode": "as_incorrect"})["multiverse"]
    attempts = load_group([shards["reference"]], tasks, "a", "1x", {"mode": "as_incorrect"})
    ps = policy_sensitivity(attempts.attempts)
    for i, policy in enumerate(ps.policy):
        cell = _cell(universe, judge="reference", infra_policy=policy)
        assert ps.mean[i] == pytest.approx(cell["mean"])
        assert (ps.ci_low[i], ps.ci_high[i]) == pytest.approx((cell["ci_low"], cell["ci_high"]))


def test_the_judge_moves_the_headline_and_the_summary_line_says_so(run) -> None:
    from types import SimpleNamespace

    from evalnoise.consistency_text import multiverse_line

    universe = _universe(run, {"mode": "as_incorrect"})["multiverse"]
    cells = pd.DataFrame(universe["cells"])
    others = ["estimand", "infra_policy", "verdict_after_failure", "cluster_se"]
    wide = cells.pivot_table(index=others, columns="judge", values="mean")
    by_hand = float((wide.max(axis=1) - wide.min(axis=1)).max())
    assert universe["influence"]["judge"] == pytest.approx(by_hand) and by_hand > 0
    assert universe["low"] == pytest.approx(cells["mean"].min())
    assert universe["high"] == pytest.approx(cells["mean"].max())
    most = max(universe["influence"], key=universe["influence"].get)
    assert universe["most_influential"] == most
    line = multiverse_line(SimpleNamespace(**universe))
    assert f"over {len(cells)} analyses" in line and f"{most} moves it most" in line


def test_with_analysis_score_judge_the_first_judge_is_the_reference_cell(run) -> None:
    retry = {"mode": "retry", "max_attempts": 2}  # the policy that made the retries
    overall = _universe(run, retry, {**OPTIONS, "score": "judge"})
    universe = overall["multiverse"]
    assert universe["reference"]["judge"] == "llm"
    assert universe["headline"] == pytest.approx(overall["mean"])
