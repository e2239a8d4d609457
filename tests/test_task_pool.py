"""Designs within the benchmark: the D study, its cheapest and best designs, ``evalnoise
analyze`` (the attribution and ``--facets``), ``evalnoise plan --from --facets`` and the
pipeline's attribution stage never propose more tasks than exist; when a target needs more,
they say so, name the task pool as the limiting cap and give the best design inside it. And
the words of a design line match its numbers (trials per task; no host count without hosts).

The table of issue 39: 18 tasks × 4 trials, difficulty Beta(0.5, 0.5), four time blocks.
Its task-clustered SE is about 0.099, so the attribution's target (half of it) needs 72
tasks, the searched task × time-block design 102: neither exists.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalnoise.attribution._trial_frame import time_blocks
from evalnoise.attribution.text import attribution_lines
from evalnoise.cli import main
from evalnoise.design_text import choice_text, design_text
from evalnoise.pipeline.attribution_stage import attribution_tables
from evalnoise.report.attribution_section import _share_text as share_line
from evalnoise.stats import cheapest_design, variance_model

POOL = 18
CAPPED = "more than the 18 that exist (the task pool is the limiting cap)"


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    """18 tasks × 4 trials, one trial of every task per time block (started in order)."""
    rng = np.random.default_rng(7)
    p = rng.beta(0.5, 0.5, POOL)
    start = pd.Timestamp("2026-01-01T00:00:00Z")
    rows = [
        {
            "task_id": f"t{i:02d}",
            "trial": j,
            "score": float(rng.random() < p[i]),
            "status": "ok",
            "started_at": (start + pd.Timedelta(minutes=j * POOL + i)).isoformat(),
        }
        for j in range(4)
        for i in range(POOL)
    ]
    frame = pd.DataFrame(rows)
    frame["time_block"] = time_blocks(frame["started_at"])
    path = tmp_path_factory.mktemp("pool") / "t18.csv"
    frame.to_csv(path, index=False)
    return path, frame


def _run(capsys, argv: list[str]) -> str:
    assert main(argv) == 0
    return capsys.readouterr().out


def _tasks_in_lines(text: str) -> list[int]:
    """Every "N tasks ×" of the design lines."""
    return [int(n) for n in re.findall(r"(\d+) tasks ×", text)]


def _check_choice(choice: dict, pool: int = POOL) -> None:
    """No design over the pool; a target out of reach names the pool and gives the best
    design inside it."""
    assert choice["max_tasks"] == pool
    if choice["design"] is not None:
        assert choice["design"][choice["task"]] <= pool
    if choice["status"] == "pool_bound":
        assert choice["tasks_needed"] > pool
        if choice["design"] is None:
            assert choice["closest"]["design"][choice["task"]] == pool
            assert f"more than the {pool} that exist (the task pool is the limiting cap)" in (
                choice_text(choice)
            )


def test_analyze_attribution_stays_within_the_table(table, capsys):
    path, _ = table
    text = _run(capsys, ["analyze", str(path)])
    line = next(x.strip() for x in text.splitlines() if "needs" in x and "tasks" in x)
    assert line.startswith("SE 0.050 needs 72 tasks, " + CAPPED + "; the best design inside")
    assert "18 tasks × " in line and "(4 time blocks as ran, " in line
    assert line.endswith("(with 18 tasks no number of trials goes below SE 0.091)")
    assert max(_tasks_in_lines(text)) == POOL
    assert "0 hosts" not in text and "hosts" not in text.split("flaky")[0]
    out = json.loads(_run(capsys, ["analyze", str(path), "--json"]))
    (summary,) = [v for k, v in out["attribution"]["summary"].items() if not k.startswith("_")]
    cheapest = summary["noise"]["dstudy"]["cheapest"]
    assert cheapest["status"] == "pool_bound" and cheapest["tasks_needed"] == 72
    _check_choice(cheapest)
    # a benchmark with more tasks than the table: --max-tasks lifts the cap, and says so
    text = _run(capsys, ["analyze", str(path), "--max-tasks", "100"])
    assert (
        "cheapest design to SE 0.050: 72 tasks × 4 trials per task (4 time blocks as ran, "
        "1 trial in each): SE 0.050, 288 trials" in text
    )


def test_analyze_facets_stays_within_the_table(table, capsys):
    path, _ = table
    argv = ["analyze", str(path), "--facets", "time_block", "--facet-costs", "trial=1"]
    out = json.loads(_run(capsys, [*argv, "--target-se", "0.05", "--json"]))
    (dstudy,) = out["dstudy"].values()
    _check_choice(dstudy["cheapest"])
    assert dstudy["cheapest"]["status"] == "pool_bound"
    text = _run(capsys, [*argv, "--target-se", "0.05"])
    assert "SE 0.050 needs 102 tasks, " + CAPPED in text
    assert max(_tasks_in_lines(text)) == POOL


@pytest.mark.parametrize("goal", [["--target-se", "0.05"], ["--budget", "200"]])
def test_plan_from_facets_honours_max_tasks(table, capsys, goal):
    path, _ = table
    argv = ["plan", "--from", str(path), "--facets", "time_block", *goal, "--max-tasks", "18"]
    out = json.loads(_run(capsys, [*argv, "--json"]))
    (plan,) = out["plans"]
    assert plan["task_pool"] == POOL
    choice = plan["dstudy"]["best" if goal[0] == "--budget" else "cheapest"]
    _check_choice(choice)
    assert choice["status"] == "pool_bound"
    text = _run(capsys, argv)
    assert "task pool: 18 tasks (--max-tasks)" in text
    assert max(_tasks_in_lines(text)) == POOL
    if goal[0] == "--budget":
        assert (
            "the least SE for 200 within the 18 tasks that exist (the budget would buy 200 "
            "tasks; the task pool is the limiting cap): 18 tasks × 11 trials per task" in text
        )
    else:
        assert CAPPED in text


def test_plan_from_says_when_no_pool_is_given(table, capsys):
    path, _ = table
    text = _run(capsys, ["plan", "--from", str(path), "--budget", "400"])
    assert "task pool: not given — a design may have more tasks than the pilot's 18" in text
    text = _run(capsys, ["plan", "--from", str(path), "--budget", "400", "--max-tasks", "18"])
    assert "recommended: 18 tasks × 22 trials" in text
    assert "the task pool is the limiting cap: the budget would buy" in text


def test_plan_refuses_a_bad_max_tasks(table, capsys):
    path, _ = table
    argv = ["plan", "--from", str(path), "--facets", "time_block", "--budget", "200"]
    assert main([*argv, "--max-tasks", "0"]) == 2
    assert "--max-tasks must be a positive integer" in capsys.readouterr().err


def test_the_pipeline_attribution_of_an_imported_table_stays_within_it(table):
    _, frame = table
    scores = frame.assign(agent="a", resource_profile="1x", attempt=1)
    tasks = pd.DataFrame({"task_id": sorted(frame["task_id"].unique())})
    options = {"confidence": 0.95, "cluster_se": "cr1", "quantile": "normal"}
    out = attribution_tables(
        scores, tasks, policy={"mode": "as_incorrect"}, options=options,
        groups=[("a", "1x")], imported=True,
    )  # fmt: skip
    (summary,) = [v for k, v in out["summary"].items() if not k.startswith("_")]
    cheapest = summary["noise"]["dstudy"]["cheapest"]
    assert cheapest["tasks_needed"] == 72
    _check_choice(cheapest)
    lines = "\n".join(attribution_lines(summary))
    assert CAPPED in lines and max(_tasks_in_lines(lines)) == POOL
    # a Harbor set or file of 40 tasks: its pool, not the 18 that ran
    out = attribution_tables(
        scores, tasks, policy={"mode": "as_incorrect"}, options=options,
        groups=[("a", "1x")], task_pool=40,
    )  # fmt: skip
    (summary,) = [v for k, v in out["summary"].items() if not k.startswith("_")]
    _check_choice(summary["noise"]["dstudy"]["cheapest"], pool=40)


@settings(max_examples=60, deadline=None)
@given(
    s2_task=st.floats(0.001, 0.3),
    s2_block=st.floats(0.0, 0.05),
    s2_res=st.floats(0.01, 0.25),
    target=st.floats(0.01, 0.2),
    pool=st.integers(1, 60),
)
def test_the_cheapest_design_never_exceeds_the_pool(s2_task, s2_block, s2_res, target, pool):
    """Against the uncapped search: within the pool the capped one agrees with it; past the
    pool it says how many tasks the uncapped one took, and its designs fit."""
    model = variance_model(
        ["task", "block"],
        {"task": s2_task, "block": s2_block, "task×block": 0.0, "residual": s2_res},
        sizes={"task": 18, "block": 4},
    )
    limits = {"block": (4, 4), "replicate": 8}
    costs = {"replicate": 1.0}  # the budget counts scores
    free = cheapest_design(model, target, costs, limits=limits)
    capped = cheapest_design(model, target, costs, limits=limits, max_free=pool)
    for choice in (capped.recommended, capped.closest):
        assert choice is None or choice.sizes["task"] <= pool
    if free.recommended is None:
        assert capped.status == "unreachable" and capped.recommended is None
    elif free.recommended.sizes["task"] <= pool:
        assert capped.status == "met" and capped.recommended == free.recommended
    else:
        assert capped.status == "pool_bound"
        assert capped.free_needed == free.recommended.sizes["task"]
        if capped.recommended is None:
            assert capped.closest.sizes["task"] == pool
            # the floor (infinitely many trials in the pool) is below every searched design;
            # it may still lie below the target when more trials than the grid holds reach it
            assert capped.floor_se <= capped.closest.se * (1 + 1e-12)
            assert capped.closest.se > target
        else:
            assert capped.recommended.se <= target * (1 + 1e-9)
            assert capped.recommended.cost >= free.recommended.cost


# -- the words match the numbers ------------------------------------------------------------


def test_the_design_line_counts_trials_per_task():
    design = {"task": 41, "time_block": 4, "replicates": 1}
    assert design_text(design, as_ran=True) == (
        "41 tasks × 4 trials per task (4 time blocks as ran, 1 trial in each)"
    )
    assert design_text({"task": 1, "replicates": 1}) == "1 task × 1 trial per task"
    assert design_text(
        {"task_id": 9, "prompt": 3, "judge": 2, "replicates": 2}, task="task_id"
    ) == ("9 tasks × 12 trials per task (3 prompts × 2 judges, 2 trials in each)")
    choice = {
        "goal": "target_se", "target_se": 0.055, "budget": None, "task": "task",
        "design": design, "se": 0.0549, "cost": 164.0, "status": "met",
        "max_tasks": 89, "tasks_needed": None, "closest": None, "warnings": [],
    }  # fmt: skip
    assert choice_text(choice, as_ran=True, cost_unit="trials") == (
        "cheapest design to SE 0.055: 41 tasks × 4 trials per task (4 time blocks as ran, "
        "1 trial in each): SE 0.055, 164 trials"
    )


def _attribution(hosts: int) -> dict:
    return {
        "policy": [], "policy_moves_result": False, "infra_components": ["time_block"],
        "time_blocks": 4, "hosts": hosts, "infra_share_detected": False,
        "infra_share": 0.0, "infra_share_ci_low": 0.0, "infra_share_ci_high": 0.14,
        "drift_pvalue": 0.73, "flaky_flagged": 0, "flaky_checks_run": [],
        "drift_slope": 0.0, "components": {},
    }  # fmt: skip


@pytest.mark.parametrize(("hosts", "words"), [(0, "4 time blocks)"), (1, "4 time blocks, 1 host)"),
                                              (3, "4 time blocks, 3 hosts)")])  # fmt: skip
def test_no_host_count_without_a_host_column(hosts, words):
    summary_line = attribution_lines(_attribution(hosts))[1]
    report_line = share_line(_attribution(hosts))
    assert words in summary_line
    assert ("host" in report_line) == (hosts > 0)
    assert "0 hosts" not in summary_line + report_line
