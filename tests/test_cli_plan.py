"""``evalnoise plan`` with budgets in money and pilots: JSON shapes, derivations, errors."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from evalnoise.cli import main
from evalnoise.stats import allocation_table, cost_allocation, icc_oneway

MONEY = [
    "plan",
    "--budget",
    "500",
    "--cost-per-task",
    "2",
    "--cost-per-trial",
    "0.25",
    "--sigma2-between",
    "0.1",
    "--sigma2-within",
    "0.15",
]


def run_json(capsys, argv):
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.fixture
def pilot(tmp_path):
    """Two agents × 24 tasks × 4 trials with container seconds and a token cost per trial."""
    rng = np.random.default_rng(0)
    rows = []
    for agent, shift in (("a", 0.0), ("b", 0.2)):
        for task in range(24):
            p = min(1.0, rng.beta(1.0, 1.5) + shift)
            for trial in range(4):
                rows.append(
                    {
                        "agent": agent,
                        "task_id": f"t{task}",
                        "trial": trial,
                        "correct": int(rng.random() < p),
                        "duration_s": float(rng.uniform(20, 100)),
                        "cost_usd": float(rng.uniform(0.01, 0.05)),
                    }
                )
    frame = pd.DataFrame(rows)
    path = tmp_path / "pilot.parquet"
    frame.to_parquet(path)
    return path, frame


def test_money_budget(capsys):
    out = run_json(capsys, MONEY)
    ref = cost_allocation(500.0, 0.1, 0.15, cost_per_task=2.0, cost_per_trial=0.25)
    assert list(out) == [
        "budget",
        "cost_per_task",
        "cost_per_trial",
        "sigma2_between",
        "sigma2_within",
        "optimum",
        "n_candidates",
        "allocations",
        "recommended",
        "max_tasks",
        "tasks_without_cap",
        "pool_bound",
    ]
    assert out["max_tasks"] is None and out["pool_bound"] is False
    rec = out["recommended"]
    assert (rec["n_tasks"], rec["trials"]) == (ref.recommended.n_tasks, ref.recommended.trials)
    assert rec["cost"] <= 500 and rec["se"] == pytest.approx(ref.recommended.se)
    assert out["optimum"]["trials"] == pytest.approx(math.sqrt(2 / 0.25 * 0.15 / 0.1))
    assert out["n_candidates"] == ref.n_tasks.size > len(out["allocations"])
    assert rec in [{k: a[k] for k in rec} for a in out["allocations"]]
    assert all(a["cost"] <= 500 for a in out["allocations"])

    assert main(MONEY) == 0
    text = capsys.readouterr().out
    assert f"recommended: {rec['n_tasks']} tasks × {rec['trials']} trials" in text
    assert "Cochran 1977" in text and "T* = " in text


def test_money_budget_with_caps(capsys):
    out = run_json(capsys, [*MONEY, "--max-tasks", "50", "--max-trials", "6"])
    assert out["recommended"]["n_tasks"] <= 50 and out["recommended"]["trials"] <= 6
    ref = cost_allocation(
        500.0, 0.1, 0.15, cost_per_task=2.0, cost_per_trial=0.25, max_tasks=50, max_trials=6
    )
    assert out["recommended"]["n_tasks"] == ref.recommended.n_tasks
    free = cost_allocation(500.0, 0.1, 0.15, cost_per_task=2.0, cost_per_trial=0.25, max_trials=6)
    assert out["tasks_without_cap"] == free.recommended.n_tasks
    assert out["pool_bound"] == (free.recommended.n_tasks > 50)


def test_pilot_with_container_seconds_and_a_cost_column(capsys, pilot):
    path, frame = pilot
    argv = [
        "plan",
        "--from",
        str(path),
        "--group",
        "agent",
        "--budget",
        "300",
        "--cost-per-task",
        "0.5",
        "--cost-per-trial",
        "0.01",
        "--price-per-container-second",
        "0.002",
        "--cost-column",
        "cost_usd",
    ]
    out = run_json(capsys, argv)
    assert [p["group"] for p in out["plans"]] == ["a", "b"]
    for plan in out["plans"]:
        rows = frame[frame["agent"] == plan["group"]]
        c_trial = 0.01 + rows["duration_s"].mean() * 0.002 + rows["cost_usd"].mean()
        assert plan["cost_per_trial"] == pytest.approx(c_trial)
        assert "duration_s, 96 trials" in plan["cost_per_trial_derivation"]
        assert "mean of cost_usd" in plan["cost_per_trial_derivation"]
        ref = icc_oneway(rows["correct"].to_numpy(float), rows["task_id"].to_numpy())
        assert plan["pilot"]["sigma2_between"] == pytest.approx(ref.sigma2_between)
        assert plan["pilot"]["sigma2_within"] == pytest.approx(ref.sigma2_within)
        assert (plan["pilot"]["n_tasks"], plan["pilot"]["n_obs"]) == (24, 96)
        expect = cost_allocation(
            300.0,
            max(ref.sigma2_between, 0.0),
            ref.sigma2_within,
            cost_per_task=0.5,
            cost_per_trial=c_trial,
        ).recommended
        assert plan["recommended"]["n_tasks"] == expect.n_tasks
        assert plan["recommended"]["trials"] == expect.trials

    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "group a: pilot of 24 tasks, 96 trials" in text
    assert "s mean container time (duration_s, 96 trials) × 0.002 per container-second" in text


def test_pilot_with_a_budget_in_runs(capsys, pilot, tmp_path):
    _, frame = pilot
    one = tmp_path / "one.csv"
    frame[frame["agent"] == "a"].to_csv(one, index=False)
    out = run_json(capsys, ["plan", "--from", str(one), "--budget", "400", "--max-tasks", "100"])
    (plan,) = out["plans"]
    assert plan["group"] == "all"
    ref = icc_oneway(
        frame.loc[frame["agent"] == "a", "correct"].to_numpy(float),
        frame.loc[frame["agent"] == "a", "task_id"].to_numpy(),
    )
    expect = allocation_table(
        400, max(ref.sigma2_between, 0.0), ref.sigma2_within, max_tasks=100
    ).recommended
    assert plan["recommended"]["n_tasks"] == expect.n_tasks
    assert plan["recommended"]["trials"] == expect.trials


def test_runs_mode_is_unchanged(capsys):
    argv = ["plan", "--budget", "400", "--sigma2-between", "5", "--sigma2-within", "1"]
    out = run_json(capsys, argv)
    assert list(out) == [
        "allocations",
        "recommended",
        "max_tasks",
        "tasks_without_cap",
        "pool_bound",
    ]
    assert (out["max_tasks"], out["pool_bound"]) == (None, False)
    assert out["recommended"] == {
        "n_tasks": 400,
        "trials": 1,
        "se": pytest.approx(math.sqrt(5 / 400 + 1 / 400)),
    }


def test_pilot_with_token_and_judge_prices_from_the_recorded_drivers(capsys, pilot, tmp_path):
    # the drivers the pipeline records per trial (evalnoise.costs): tokens may be unreported
    # (null); those trials are left out of the mean, never priced as 0
    path, frame = pilot
    rng = np.random.default_rng(1)
    frame = frame.assign(
        prompt_tokens=pd.array(rng.integers(200, 2000, len(frame)), dtype="Int64"),
        completion_tokens=pd.array(rng.integers(10, 300, len(frame)), dtype="Int64"),
        judge_calls=2,
    )
    frame.loc[frame.index[:5], "prompt_tokens"] = pd.NA
    tokens = tmp_path / "tokens.parquet"
    frame.to_parquet(tokens)
    prices = {
        "--price-per-million-prompt-tokens": "0.15",
        "--price-per-million-completion-tokens": "0.6",
        "--price-per-judge-call": "0.001",
    }
    argv = ["plan", "--from", str(tokens), "--group", "agent", "--budget", "50"]
    argv += [item for pair in prices.items() for item in pair]
    out = run_json(capsys, argv)
    for plan in out["plans"]:
        rows = frame[frame["agent"] == plan["group"]]
        want = (
            rows["prompt_tokens"].astype(float).mean() * 0.15e-6
            + rows["completion_tokens"].astype(float).mean() * 0.6e-6
            + 2 * 0.001
        )
        assert plan["cost_per_trial"] == pytest.approx(want)
        if plan["group"] == "a":  # the five unreported rows are agent a's
            assert "5 did not report it" in plan["cost_per_trial_derivation"]
    code = main(["plan", "--from", str(path), "--budget", "50", "--group", "agent",
                 "--price-per-million-prompt-tokens", "1"])  # fmt: skip
    assert code != 0
    assert "column 'prompt_tokens': no such column for prompt tokens" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--budget", "400.5", "--sigma2-between", "1", "--sigma2-within", "1"], "whole number"),
        (
            ["--budget", "9", "--price-per-container-second", "1", "--sigma2-between", "1"],
            "give --from PILOT",
        ),
        (
            [
                "--budget",
                "1",
                "--cost-per-task",
                "2",
                "--cost-per-trial",
                "1",
                "--sigma2-between",
                "1",
                "--sigma2-within",
                "1",
            ],
            "does not buy one task",
        ),
        (
            [
                "--budget",
                "9",
                "--cost-per-task",
                "2",
                "--sigma2-between",
                "1",
                "--sigma2-within",
                "1",
            ],
            "needs the cost of a trial",
        ),
    ],
)
def test_money_errors_are_one_line(capsys, argv, message):
    assert main(["plan", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err
    assert len(err.strip().splitlines()) == 1


def test_budget_must_be_a_number(capsys):
    with pytest.raises(SystemExit):
        main(["plan", "--budget", "abc"])
    assert "not a number: 'abc'" in capsys.readouterr().err


def test_pilot_errors(capsys, pilot):
    path, _ = pilot
    base = ["plan", "--from", str(path), "--group", "agent", "--budget", "50"]
    assert main([*base, "--price-per-container-second", "1", "--duration-column", "secs"]) == 2
    assert "column 'secs': no such column for container seconds" in capsys.readouterr().err
    assert main(["plan", "--from", str(path), "--group", "agent"]) == 2
    assert "--from needs --budget" in capsys.readouterr().err
    assert main([*base, "--sigma2-between", "0.1"]) == 2
    assert "drop --sigma2-between" in capsys.readouterr().err


def test_plan_with_judge_samples(capsys):
    """Tasks × trials × judge samples: with a costly task and a noisy, cheap judge, more
    than one judge sample per trial is worth buying (Cochran's K* = sqrt(σ²_j c_t / (σ²_w
    c_j)) = sqrt(0.2 · 1 / (0.01 · 0.1)) ≈ 14)."""
    import json

    from evalnoise.cli import main

    argv = [
        "plan", "--budget", "5000", "--sigma2-between", "0.05", "--sigma2-within", "0.01",
        "--sigma2-judge", "0.2", "--cost-per-task", "20", "--cost-per-trial", "1",
        "--cost-per-judge-sample", "0.1", "--json",
    ]  # fmt: skip
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["judge_samples_opt"] > 1
    assert out["recommended"]["judge_samples"] > 1
    ses = {r["judge_samples"]: r["se"] for r in out["by_judge_samples"]}
    assert ses[out["recommended"]["judge_samples"]] == min(ses.values())
    assert out["recommended"]["cost"] <= 5000
    assert (out["max_tasks"], out["pool_bound"]) == (None, False)


def test_plan_with_judge_samples_within_the_task_pool(capsys):
    argv = [
        "plan", "--budget", "1000", "--sigma2-between", "0.04", "--sigma2-within", "0.1",
        "--sigma2-judge", "0.05", "--cost-per-judge-sample", "0.2",
    ]  # fmt: skip
    free = run_json(capsys, argv)
    capped = run_json(capsys, [*argv, "--max-tasks", "20"])
    assert free["recommended"]["n_tasks"] > 20 and free["pool_bound"] is False
    assert capped["recommended"]["n_tasks"] == 20 and capped["pool_bound"] is True
    assert capped["tasks_without_cap"] == free["recommended"]["n_tasks"]
    assert main([*argv, "--max-tasks", "20"]) == 0
    text = capsys.readouterr().out
    assert (
        f"the task pool is the limiting cap: the budget would buy "
        f"{free['recommended']['n_tasks']} tasks, 20 exist (--max-tasks)" in text
    )


def test_pilot_reads_the_group_column_an_import_stored(capsys, pilot, tmp_path):
    """Issue 21.8: a multi-agent table whose Parquet metadata stores the group column (an
    import) plans per agent, each plan named, without --group — as analyze reads it."""
    _, frame = pilot
    csv = tmp_path / "pilot.csv"
    frame.to_csv(csv, index=False)
    imported = tmp_path / "imported.parquet"
    mapping = "task=task_id,trial=trial,score=correct,agent=agent"
    assert (
        main(["import", "table", str(csv), "-o", str(imported), "--column-mapping", mapping]) == 0
    )
    capsys.readouterr()
    assert main(["plan", "--from", str(imported), "--budget", "300"]) == 0
    captured = capsys.readouterr()
    assert "group a: pilot of 24 tasks, 96 trials" in captured.out
    assert "group b: pilot of 24 tasks, 96 trials" in captured.out
    assert "evalnoise plan: " in captured.err  # which columns it used, and why
