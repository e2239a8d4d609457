"""attribution_for_trials: one entry point for any trial table — the pipeline's score rows
and an imported log alike — with every check that could not run named, and why; and
read_attribution, which reads the stage's files back without ever raising."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from attribution_synth import make_run

from evalnoise.attribution import (
    AttributionTables,
    TrialColumns,
    attribution_for_trials,
    flaky_tasks,
    policy_sensitivity,
    read_attribution,
)
from evalnoise.attribution.text import attribution_lines
from evalnoise.formatting import dumps
from evalnoise.pipeline.attribution_stage import attribution_tables

OPTIONS = {"confidence": 0.95, "cluster_se": "cr1", "quantile": "normal"}


@pytest.fixture(scope="module")
def run() -> pd.DataFrame:
    """One agent, 16 tasks × 16 trials, 4 time blocks, 2 hosts, 2 tasks prone to infra errors."""
    return make_run(
        n_tasks=16,
        per_cell=4,
        n_hosts=2,
        host_effects=(0.03, -0.03),
        n_flaky=2,
        infra_tasks=2,
        infra_rate=0.7,
        seed=5,
    ).trials


def inspect_shaped(run: pd.DataFrame) -> pd.DataFrame:
    """What `evalnoise import inspect` leaves of a log, under an analyst's own column names:
    task, trial, agent (the model), score, started_at and the outcome — no host, no resource
    profile, no attempt; an errored sample has no score."""
    return pd.DataFrame(
        {
            "task": run["task_id"],
            "trial": run["trial"] + 1,  # Inspect epochs count from 1
            "agent": "openai/gpt-x",
            "score": run["score"],
            "started_at": run["started_at"].dt.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "outcome": run["status"]
            .map({"ok": "ok", "oom_killed": "infra_error", "infra_error": "infra_error"})
            .fillna(run["status"]),
        }
    )


INSPECT = {"task": "task", "status": "outcome"}


def not_run(tables: AttributionTables) -> dict[tuple[str, str], str]:
    return {(n.scope, n.check): n.reason for n in tables.not_run}


def test_an_inspect_shaped_table_gives_the_same_tables(run):
    table = inspect_shaped(run)
    out = attribution_for_trials(table, INSPECT)
    assert out.groups == ["openai/gpt-x"]  # no resource profile column: the agent alone
    g = out.summary["openai/gpt-x"]
    # policy sensitivity: the errors are infra outcomes, so excluding them raises accuracy
    policies = {p["policy"]: p for p in g["policy"]}
    assert policies["exclude"]["mean"] > policies["as_incorrect"]["mean"]
    assert policies["exclude"]["n_excluded"] == int((table["outcome"] != "ok").sum())
    assert policies["retry"]["applicable"] is False
    # the same numbers as the module functions on the pipeline's columns
    direct = policy_sensitivity(run)
    assert [p["mean"] for p in g["policy"][:2]] == pytest.approx(list(direct.mean[:2]))
    # timestamps: the infrastructure share is computed, without a host component
    assert 0.0 <= g["infra_share"] <= 1.0 and g["time_effects_not_computed"] is None
    assert g["hosts"] == 0 and "host" not in g["components"]
    # flaky tasks: the infra-prone tasks are flagged, and every check says whether it ran
    checks = {c["name"]: c for c in g["flaky_checks"]}
    assert checks["infra_concentration"]["ran"] and checks["time_block"]["ran"]
    assert not checks["host"]["ran"] and "no host column" in checks["host"]["reason"]
    assert set(out.flaky.loc[out.flaky["reason"].str.contains("infra"), "task_id"]) == {
        "task-002",
        "task-003",
    }
    want = set(flaky_tasks(run.drop(columns="host")).flagged["task_id"])
    assert set(out.flaky["task_id"]) == want
    # what could not run, and why
    why = not_run(out)
    assert why[("openai/gpt-x", "host")].startswith("no host column")
    assert why[("openai/gpt-x", "scorer_agreement")] == "no rescores given"
    assert why[("openai/gpt-x", "resource_sensitivity")] == (
        "no resource profile column: nothing to compare"
    )
    assert out.resource.empty and "_resource" not in out.summary
    assert attribution_lines(g)[0].startswith("infra policy: as incorrect")  # summary.txt reads it


def test_without_timestamps_the_time_checks_say_so(run):
    table = inspect_shaped(run).drop(columns="started_at")
    out = attribution_for_trials(table, INSPECT)
    g = out.summary["openai/gpt-x"]
    assert g["infra_share"] is None and g["time_blocks"] == 0
    assert g["time_effects_not_computed"].startswith("no timestamps")
    why = not_run(out)
    assert why[("openai/gpt-x", "time_effects")].startswith("no timestamps")
    assert why[("openai/gpt-x", "time_block")].startswith("no timestamps")
    assert "time_block" not in g["flaky_checks_run"]
    assert "not computed (no timestamps" in attribution_lines(g)[1]


def test_end_times_stand_in_for_start_times(run):
    table = inspect_shaped(run).rename(columns={"started_at": "completed_at"})
    out = attribution_for_trials(table, {**INSPECT, "ended_at": "completed_at"})
    assert out.summary["openai/gpt-x"]["infra_share"] is not None
    assert ("*", "started_at") in not_run(out)


def test_without_an_outcome_column_no_infra_check_runs(run):
    table = inspect_shaped(run).drop(columns="outcome")
    table["score"] = table["score"].fillna(0.0)
    out = attribution_for_trials(table, {"task": "task"})
    g = out.summary["openai/gpt-x"]
    assert g["policy_moves_result"] is False
    assert len({p["mean"] for p in g["policy"] if p["applicable"]}) == 1
    why = not_run(out)
    assert why[("*", "policy_sensitivity")].startswith("no outcome (error kind) column")
    assert why[("openai/gpt-x", "infra_concentration")].startswith("no outcome")


def test_text_cells_as_read_from_a_csv(run, tmp_path):
    """A CSV read as text (as `evalnoise analyze` reads files): verdict words, ISO times,
    upper-case outcomes and an unknown outcome value."""
    table = inspect_shaped(run)
    table["score"] = np.where(table["score"] == 1.0, "C", "I")
    table["outcome"] = table["outcome"].str.upper()
    table.loc[0, "outcome"] = "cancelled"
    path = tmp_path / "trials.csv"
    table.to_csv(path, index=False)
    text = pd.read_csv(path, dtype=str, keep_default_na=False, na_values=[""])
    out = attribution_for_trials(text, INSPECT)
    # the same trials as numbers and datetimes, row 0 an answer scored wrong
    same = inspect_shaped(run)
    same["score"] = (same["score"] == 1.0).astype(float)
    same.loc[0, "outcome"] = "agent_error"
    reference = attribution_for_trials(same, INSPECT)
    g, ref = out.summary["openai/gpt-x"], reference.summary["openai/gpt-x"]
    assert g["policy"] == ref["policy"]
    assert g["infra_share"] == pytest.approx(ref["infra_share"])
    assert "cancelled" in not_run(out)[("*", "outcomes")]


def test_the_pipeline_stage_is_this_entry_point(run):
    """Two profiles of one agent, with the pipeline's columns: the stage's tables are the
    entry point's, and its numbers the module functions'."""
    other = run.assign(resource_profile="3x", seed=run["seed"] + 1)
    other["status"] = np.where(other["task_id"].isin(["task-002", "task-003"]), "ok", run["status"])
    other["score"] = np.where(other["status"] == "ok", run["correct"].fillna(True), np.nan)
    ok = other["status"] == "ok"
    other["correct"] = pd.array(np.where(ok, other["score"] == 1, None), dtype="boolean")
    scores = pd.concat([run, other], ignore_index=True)
    tasks = pd.DataFrame({"task_id": sorted(run["task_id"].unique()), "memory_mb": 128})
    groups = [("agent-a", "1x"), ("agent-a", "3x")]
    stage = attribution_tables(
        scores, tasks, policy={"mode": "as_incorrect"}, options=OPTIONS, groups=groups
    )
    direct = attribution_for_trials(
        scores, groups=groups, memory_mb=tasks.set_index("task_id")["memory_mb"]
    )
    assert json.loads(dumps(stage["summary"])) == json.loads(dumps(direct.summary))
    pd.testing.assert_frame_equal(stage["resource"], direct.resource)
    pd.testing.assert_frame_equal(stage["flaky"], direct.flaky)
    assert direct.groups == ["agent-a@1x", "agent-a@3x"]
    (resource,) = direct.summary["_resource"]
    assert resource["memory_need"] == "declared: the task's memory_mb"
    assert set(resource["significant"]) <= {"task-002", "task-003"}
    one = direct.summary["agent-a@1x"]
    assert one["policy"][0]["mean"] == pytest.approx(policy_sensitivity(run).mean[0])
    assert one["hosts"] == 2 and "host" in one["flaky_checks_run"]
    assert not [n for n in direct.not_run if n.check != "scorer_agreement"]


def test_columns_by_role():
    assert TrialColumns.of({"group": "model"}).agent == "model"
    assert TrialColumns.of(None) == TrialColumns()
    with pytest.raises(ValueError, match="unknown column roles"):
        TrialColumns.of({"question": "q"})
    with pytest.raises(ValueError, match="no task column"):
        attribution_for_trials(pd.DataFrame({"trial": [0], "score": [1.0]}))
    with pytest.raises(ValueError, match="neither a score nor a correct"):
        attribution_for_trials(pd.DataFrame({"task_id": ["a"], "trial": [0]}))


def test_a_degenerate_group_is_reported_not_raised(run):
    one_task = run[run["task_id"] == "task-000"]
    out = attribution_for_trials(one_task)
    g = out.summary["agent-a@1x"]
    assert g["policy"][0]["mean"] == pytest.approx(one_task["score"].mean())
    assert g["infra_share"] is None and "two tasks" in g["time_effects_not_computed"]
    assert ("agent-a@1x", "time_effects") in not_run(out)
    nothing = attribution_for_trials(run.assign(status="bogus", score=np.nan).iloc[:0])
    assert nothing.groups == [] and nothing.resource.empty and nothing.flaky.empty


def write_stage_files(tables: AttributionTables, root) -> tuple:
    """The three files as scripts/attribution.py writes them."""
    summary, resource, flaky = root / "attribution.json", root / "r.parquet", root / "f.csv"
    summary.write_text(dumps(tables.summary) + "\n")
    tables.resource.to_parquet(resource, index=False)
    tables.flaky.to_csv(flaky, index=False, float_format="%.6g")
    return summary, resource, flaky


def test_read_attribution_round_trip_and_problems(run, tmp_path):
    other = run.assign(resource_profile="3x")
    tables = attribution_for_trials(pd.concat([run, other], ignore_index=True))
    paths = write_stage_files(tables, tmp_path)
    back = read_attribution(*paths)
    assert back.problems == ()
    assert back.summary == json.loads(dumps(tables.summary))
    assert len(back.resource) == len(tables.resource) and len(back.flaky) == len(tables.flaky)
    assert back.not_run == tables.not_run

    paths[2].unlink()
    paths[1].write_bytes(b"not parquet")
    broken = read_attribution(*paths)
    assert broken.summary == back.summary and broken.resource.empty and broken.flaky.empty
    assert [p.split(": ", 1)[1].split(" (")[0] for p in broken.problems] == ["invalid", "missing"]

    paths[0].write_text("[1, 2]")
    assert "expected a JSON object" in read_attribution(*paths).problems[0]
    paths[0].write_text("{not json")
    assert read_attribution(*paths).summary == {}
    assert read_attribution(None).problems[0] == "attribution.json: not given"
    # no group analysed: the stage writes an empty CSV, which is no problem
    empty = tmp_path / "empty.csv"
    pd.DataFrame().to_csv(empty, index=False)
    assert read_attribution(paths[0], None, empty).flaky.empty
    wrong = tmp_path / "wrong.csv"
    pd.DataFrame({"x": [1]}).to_csv(wrong, index=False)
    assert "lacks column(s) group" in read_attribution(None, None, wrong).problems[-1]


def test_a_share_without_infrastructure_terms_says_so():
    # seen in a real adaptive run: the variance model kept no infra term, and the line read
    # "(; 4 time blocks, 1 host)"
    g = {
        "policy": [{"policy": "as_incorrect", "applicable": True, "mean": 0.44,
                    "ci_low": 0.29, "ci_high": 0.59}],
        "policy_moves_result": False, "infra_share": 0.0, "infra_share_ci_low": 0.0,
        "infra_share_ci_high": 0.0, "infra_components": [], "time_blocks": 4, "hosts": 1,
        "drift_pvalue": 0.32, "flaky_flagged": 0, "flaky_checks_run": ["time_block"],
    }  # fmt: skip
    line = attribution_lines(g)[1]
    assert "(no infrastructure component; 4 time blocks, 1 host)" in line


def test_a_share_whose_interval_reaches_zero_reads_not_detected(noisy_run):
    """No time or host effect: the share's interval reaches 0, so the line says "not
    detected" and prints no share; with the injected effects it prints the share."""
    g = {
        "policy": [{"policy": "as_incorrect", "applicable": True, "mean": 0.44,
                    "ci_low": 0.29, "ci_high": 0.59}],
        "policy_moves_result": False, "infra_share": 0.21, "infra_share_ci_low": 0.0,
        "infra_share_ci_high": 0.52, "infra_share_detected": False,
        "infra_components": ["time_block", "task:time_block"], "time_blocks": 4, "hosts": 1,
        "drift_pvalue": 0.32, "flaky_flagged": 0, "flaky_checks_run": ["time_block"],
    }  # fmt: skip
    line = attribution_lines(g)[1]
    assert line.startswith("infrastructure share of variance: not detected")
    assert "0.21" not in line and "[0.00, 0.52]" in line
    detected = attribution_lines(g | {"infra_share_detected": True, "infra_share_ci_low": 0.05})
    assert detected[1].startswith("infrastructure share of variance 0.21 [0.05, 0.52]")
    out = attribution_for_trials(noisy_run.trials, {"resource_profile": None})
    summary = next(v for k, v in out.summary.items() if not k.startswith("_"))
    assert summary["infra_share_detected"] is True
    assert summary["infra_share_components_ci"]["time_block"]["detected"] is True


def test_a_detected_component_is_never_under_a_not_detected_share(noisy_run):
    """The share's line and its components' lines come from one decision (the permutation
    family under the share rule): "time_block detected (share …)" sits in a detected share's
    line, and the noise model's component line says the same; with no time effect every
    line says not detected."""
    out = attribution_for_trials(noisy_run.trials, {"resource_profile": None})
    g = next(v for k, v in out.summary.items() if not k.startswith("_"))
    lines = attribution_lines(g)
    share = next(x for x in lines if x.startswith("infrastructure share"))
    assert share.startswith("infrastructure share of variance 0.")
    assert "time_block detected (share 0." in share and "permutations" in share
    comps = next(x for x in lines if x.strip().startswith("components:"))
    assert "time_block not detected" not in comps and "(permutation p = " in comps

    quiet = make_run(
        seed=4, block_effects=(0, 0, 0, 0), host_effects=(0,), n_hosts=1, n_flaky=0,
        n_tasks=12, per_cell=2,
    )  # fmt: skip
    out = attribution_for_trials(quiet.trials, {"resource_profile": None})
    g = next(v for k, v in out.summary.items() if not k.startswith("_"))
    assert g["infra_share_detected"] is False
    assert not any(c["detected"] for c in g["infra_share_components_ci"].values()
                   if c["detected_by"] == "permutation")  # fmt: skip
    share = next(x for x in attribution_lines(g) if x.startswith("infrastructure share"))
    assert share.startswith("infrastructure share of variance: not detected (time_block not")
    assert " detected (share" not in share


def test_the_share_line_follows_the_components_decisions():
    """A record whose time block is detected and task × time block is not reads so, in the
    summary and in the report, beside the share."""
    from evalnoise.report.attribution_section import _share_text

    g = {
        "policy": [{"policy": "as_incorrect", "applicable": True, "mean": 0.44,
                    "ci_low": 0.29, "ci_high": 0.59}],
        "policy_moves_result": False, "infra_share": 0.21, "infra_share_ci_low": 0.0,
        "infra_share_ci_high": 0.52, "infra_share_detected": True,
        "infra_share_pvalue": 0.004, "infra_share_permutations": 999,
        "infra_share_components_ci": {
            "time_block": {"detected": True, "share": 0.18, "pvalue": 0.004,
                           "detected_by": "permutation"},
            "task:time_block": {"detected": False, "share": 0.03, "pvalue": 0.41,
                                "detected_by": "permutation"},
        },
        "infra_components": ["time_block", "task:time_block"], "time_blocks": 4, "hosts": 1,
        "drift_pvalue": 0.32, "flaky_flagged": 0, "flaky_checks_run": ["time_block"],
    }  # fmt: skip
    line = attribution_lines(g)[1]
    assert line.startswith(
        "infrastructure share of variance 0.21 [0.00, 0.52]: time_block detected (share 0.18, "
        "p = 0.004), task:time_block not detected (p = 0.41) (permutation test within tasks, "
        "999 permutations;"
    )
    report = _share_text(g)
    assert "time_block detected (share 0.18, p = 0.004), task:time_block not detected" in report
    # a component the test could not take (no cell with two trials) is said to be untested
    untested = {**g["infra_share_components_ci"]["task:time_block"], "pvalue": None}
    comps = {**g["infra_share_components_ci"], "task:time_block": untested}
    line = attribution_lines(g | {"infra_share_components_ci": comps})[1]
    assert "task:time_block not tested (too few trials per cell)" in line


def test_a_component_the_design_cannot_detect_is_said_to_be_not_testable():
    """The default run's design: 9 tasks × 4 trials over 4 time blocks, only two tasks whose
    trials differ. No arrangement of those trials could reach p ≤ 0.05, so the record marks
    the time components not testable and the lines say so, instead of "not detected (p = 1)";
    a design that can detect says "not detected" as before."""
    rng = np.random.default_rng(2)
    rows = []
    for t in range(9):
        outcomes = [1, 1, 1, 0] if t in (2, 4) else [0, 0, 0, 0]
        for k in range(4):
            rows.append({"task_id": f"t{t}", "trial": k, "status": "ok",
                         "score": float(outcomes[k]),
                         "started_at": pd.Timestamp("2026-01-01") + pd.Timedelta(
                             seconds=int(k * 60 + rng.integers(0, 30)))})  # fmt: skip
    out = attribution_for_trials(pd.DataFrame(rows), {"resource_profile": None})
    g = next(v for k, v in out.summary.items() if not k.startswith("_"))
    comps = g["infra_share_components_ci"]
    assert comps["time_block"]["testable"] is False
    assert comps["time_block"]["min_pvalue"] > 0.05 and not comps["time_block"]["detected"]
    share = next(x for x in attribution_lines(g) if x.startswith("infrastructure share"))
    assert "time_block not testable at this design (p = " in share
    assert "the smallest p these trials can give is" in share
    noise = [c for c in (g["noise"] or {}).get("gstudy", {}).get("components", [])
             if c["component"] == "time_block"]  # fmt: skip
    assert all(c["testable"] is False for c in noise)

    many = make_run(seed=4, block_effects=(0, 0, 0, 0), host_effects=(0,), n_hosts=1,
                    n_flaky=0, n_tasks=12, per_cell=2)  # fmt: skip
    out = attribution_for_trials(many.trials, {"resource_profile": None})
    g = next(v for k, v in out.summary.items() if not k.startswith("_"))
    assert g["infra_share_components_ci"]["time_block"]["testable"] is True
    share = next(x for x in attribution_lines(g) if x.startswith("infrastructure share"))
    assert "time_block not detected (p = " in share and "not testable" not in share
