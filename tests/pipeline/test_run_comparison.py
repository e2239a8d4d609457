"""evalnoise compare RUN_A RUN_B: two runs of the same benchmark, matched by group and paired
by task; the verdict, the MDD, the gate's exit codes and the comparability check."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from evalnoise.cli import main
from evalnoise.errors import InputError
from evalnoise.pipeline.jobs import run_script
from evalnoise.pipeline.run_comparison import Run, comparability, compare_runs, match_groups
from evalnoise.pipeline.run_sources import read_results_dir

ROOT = Path(__file__).resolve().parents[2]
P_TASK = np.random.default_rng(0).beta(1, 1, 40)  # one benchmark: each task's success rate


def trials(seed, *, scale=1.0, group="agent@3x", n_trials=4, p=P_TASK):
    """One run of an agent on the benchmark: independent Bernoulli trials per task."""
    rng = np.random.default_rng(seed)
    rows = [
        {
            "group": group,
            "task": f"t{i}",
            "trial": str(k),
            "score": float(rng.random() < pi * scale),
        }
        for i, pi in enumerate(p)
        for k in range(n_trials)
    ]
    return pd.DataFrame(rows)


def run(frame, **kw):
    return Run(source="x", kind="trials", frame=frame, **kw)


def test_seed_different_runs_show_no_difference_with_the_mdd():
    (rec,) = compare_runs(run(trials(1)), run(trials(2)), n_resamples=500)
    assert not rec["detected"] and rec["ci_low"] < 0 < rec["ci_high"]
    assert 0 < rec["mdd"] < 0.3
    # B − A, recomputed from the task means by hand
    a, b = trials(1), trials(2)
    by_hand = b.groupby("task")["score"].mean().mean() - a.groupby("task")["score"].mean().mean()
    assert rec["diff"] == pytest.approx(by_hand)
    assert rec["mean_candidate"] - rec["mean_baseline"] == pytest.approx(by_hand)


def test_a_degraded_copy_is_detected_as_a_drop():
    (rec,) = compare_runs(run(trials(1)), run(trials(3, scale=0.6)), n_resamples=500)
    assert rec["detected"] and rec["diff"] < 0 and rec["ci_high"] < 0
    mc = rec["mcnemar"]
    assert mc["baseline_only_right"] > mc["candidate_only_right"]


def test_holm_runs_over_the_pairs():
    a = pd.concat([trials(1), trials(5, group="other@3x")])
    b = pd.concat([trials(2), trials(6, scale=0.6, group="other@3x")])
    recs = compare_runs(run(a), run(b), n_resamples=200)
    assert [r["baseline"] for r in recs] == ["agent@3x", "other@3x"]
    p = np.array([r["pvalue"] for r in recs])
    order = np.argsort(p)
    expected = np.empty(2)
    expected[order[0]] = min(1, 2 * p[order[0]])
    expected[order[1]] = min(1, max(2 * p[order[0]], p[order[1]]))
    assert [r["pvalue_holm"] for r in recs] == pytest.approx(expected)


def test_groups_match_by_name_by_pair_or_one_to_one():
    assert match_groups(["a@1x", "b@1x"], ["b@1x", "c@1x"]) == [("b@1x", "b@1x")]
    assert match_groups(["a@1x"], ["z@1x"]) == [("a@1x", "z@1x")]
    assert match_groups(["a@1x", "b@1x"], ["c@1x"], [("b@1x", "c@1x")]) == [("b@1x", "c@1x")]
    with pytest.raises(ValueError, match="--pair"):
        match_groups(["a@1x", "b@1x"], ["c@1x", "d@1x"])
    with pytest.raises(ValueError, match="not in the candidate"):
        match_groups(["a@1x"], ["c@1x"], [("a@1x", "q@1x")])


CONFIG = {
    "run_seed": 0,
    "trials": {"count": 4, "block_size": 2},
    "benchmark": {"source": "generated", "n": 40},
    "scorer": {"name": "numeric"},
    "infra_policy": {"mode": "as_incorrect", "max_attempts": 3, "on_exhausted": "as_incorrect"},
    "analysis": {"score": "reference"},
    "resource_profiles": {"3x": {"cpu_limit_factor": 3.0}, "1x": {"cpu_limit_factor": 1.0}},
    "agents": {"agent": {"program": "chat", "env": {"AGENT_TEMPERATURE": 0.8}}},
    "model_server": {"alias": "m"},
}


def _config(**changes):
    config = json.loads(json.dumps(CONFIG))
    for dotted, value in changes.items():
        *path, last = dotted.split("__")
        node = config
        for key in path:
            node = node[key]
        node[last] = value
    return config


def _side(frame, config):
    return run(frame, config=config, groups={"agent@3x": ("agent", "3x")})


def test_seed_and_size_differences_leave_runs_comparable():
    rep = comparability(
        _side(trials(1), CONFIG), _side(trials(2), _config(run_seed=1)), "agent@3x", "agent@3x"
    )
    assert rep["comparable"]
    assert [(d["what"], d["affects"]) for d in rep["differences"]] == [("run_seed", False)]


def test_a_changed_scorer_or_profile_or_task_set_is_not_comparable():
    rep = comparability(
        _side(trials(1), CONFIG),
        _side(
            trials(2),
            _config(
                scorer__name="fuzzy", resource_profiles__3x={"x": 1}, resource_profiles__1x={"y": 2}
            ),
        ),
        "agent@3x",
        "agent@3x",
    )
    assert not rep["comparable"]
    affecting = sorted(d["what"] for d in rep["differences"] if d["affects"])
    assert affecting == ["resource_profiles.3x.cpu_limit_factor", "resource_profiles.3x.x",
                         "scorer.name"]  # fmt: skip
    # another group's resource profile is not this pair's business
    assert not any("1x" in d["what"] for d in rep["differences"])
    fewer = trials(2, p=P_TASK[:30])
    rep = comparability(_side(trials(1), CONFIG), _side(fewer, CONFIG), "agent@3x", "agent@3x")
    assert not rep["comparable"] and len(rep["tasks_only_baseline"]) == 10


def test_the_judges_settings_matter_only_when_a_judge_gives_the_scores():
    judged = _config(scorer__name="numeric")
    judged["scorer"]["judge"] = {"stage": True}
    unjudged = json.loads(json.dumps(judged))
    unjudged["scorer"]["judge"]["stage"] = False
    rep = comparability(_side(trials(1), judged), _side(trials(2), unjudged), "agent@3x",
                        "agent@3x")  # fmt: skip
    assert rep["comparable"] and rep["differences"][0]["what"] == "scorer.judge.stage"
    judged["analysis"]["score"] = unjudged["analysis"]["score"] = "judge"
    rep = comparability(_side(trials(1), judged), _side(trials(2), unjudged), "agent@3x",
                        "agent@3x")  # fmt: skip
    assert not rep["comparable"]


def test_the_agents_differences_are_listed_apart():
    cand = _config(agents__agent={"program": "chat", "env": {"AGENT_TEMPERATURE": 0.2}})
    rep = comparability(_side(trials(1), CONFIG), _side(trials(2), cand), "agent@3x", "agent@3x")
    assert rep["comparable"]
    assert [d["what"] for d in rep["agent_differences"]] == ["agent.env.AGENT_TEMPERATURE"]


def test_changed_task_content_is_not_comparable():
    tasks_a = pd.DataFrame({"task_id": [f"t{i}" for i in range(40)], "question": "q"})
    tasks_b = tasks_a.assign(question=["q"] * 39 + ["other"])
    rep = comparability(
        run(trials(1), tasks=tasks_a), run(trials(2), tasks=tasks_b), "agent@3x", "agent@3x"
    )
    assert not rep["comparable"]
    assert rep["differences"][0]["what"].startswith("tasks.question on 1 of 40")


# --- the command line: trials files, results directories, revisions, the gate ----------------


def _write(frame, path):
    frame.rename(columns={"task": "task_id"}).to_csv(path, index=False)
    return str(path)


@pytest.fixture
def files(tmp_path):
    return {
        "a": _write(trials(1), tmp_path / "a.csv"),
        "same": _write(trials(2), tmp_path / "same.csv"),
        "worse": _write(trials(3, scale=0.6), tmp_path / "worse.csv"),
        "better": _write(trials(4, scale=1.4), tmp_path / "better.csv"),
    }


def _compare(capsys, *argv):
    code = main(["compare", *argv, "--group", "group", "--resamples", "300"])
    return code, capsys.readouterr().out


def test_the_gate_exit_codes(files, capsys):
    assert _compare(capsys, files["a"], files["better"], "--gate", "0.05")[0] == 0
    assert _compare(capsys, files["a"], files["worse"], "--gate", "0.05")[0] == 1
    code, out = _compare(capsys, files["a"], files["same"], "--gate", "0.05")
    assert code == 3
    assert "inconclusive" in out and "the MDD reaches the margin with" in out
    # without a gate the comparison itself always succeeds
    assert _compare(capsys, files["a"], files["worse"])[0] == 0


def test_the_sequential_gate_is_wider_and_says_so(files, capsys):
    code, out = _compare(capsys, files["a"], files["worse"], "--gate", "0.05", "--json")
    fixed = json.loads(out)["pairs"][0]
    code_s, out_s = _compare(
        capsys, files["a"], files["worse"], "--gate", "0.05", "--sequential", "--json"
    )
    seq = json.loads(out_s)["pairs"][0]
    assert code == 1
    cs = seq["sequential"]
    assert cs["ci_low"] <= fixed["ci_low"] and cs["ci_high"] >= fixed["ci_high"]
    assert seq["gate"]["ci_low"] == cs["ci_low"]
    assert code_s == {"regression": 1, "inconclusive": 3}[seq["gate"]["decision"]]


def test_text_says_no_difference_detected_with_the_mdd(files, capsys):
    code, out = _compare(capsys, files["a"], files["same"])
    assert code == 0
    assert "no difference detected; a difference smaller than the MDD" in out
    code, out = _compare(capsys, files["a"], files["worse"])
    assert "difference detected (-" in out


def test_bad_runs_and_pairs_are_input_errors(files, tmp_path, capsys):
    assert main(["compare", files["a"], str(tmp_path / "nope")]) == 2
    assert "not a trials file, a results directory or a git revision" in capsys.readouterr().err
    assert main(["compare", files["a"], files["same"], "--group", "group", "--pair", "x"]) == 2
    assert "--pair 'x'" in capsys.readouterr().err
    assert main(["compare", files["a"], files["same"], "--sequential"]) == 2
    # the run options mean nothing for two groups of one table
    assert main(["compare", files["a"], "agent@3x", "agent@3x", "--gate", "0.1"]) == 2
    assert "--gate: only for two runs" in capsys.readouterr().err


def results_dir(root, seed, *, scale=1.0, config=CONFIG):
    """A results directory as the pipeline leaves it: config.json, tasks.parquet and score
    shards of agent@3x (two trial blocks), one trial an infra error."""
    res = root / "results"
    (res / "scores" / "agent" / "3x" / "t0").mkdir(parents=True)
    (res / "scores" / "agent" / "3x" / "t1").mkdir(parents=True)
    (res / "config.json").write_text(json.dumps({"config": config, "overridden": {}}))
    pd.DataFrame({"task_id": [f"t{i}" for i in range(40)], "question": "q", "level": 1}).to_parquet(
        res / "tasks.parquet"
    )
    frame = trials(seed, scale=scale).rename(columns={"task": "task_id"})
    frame = frame.assign(agent="agent", resource_profile="3x", trial=frame["trial"].astype(int),
                         attempt=1, status="ok").drop(columns="group")  # fmt: skip
    frame.loc[0, ["status", "score"]] = ["infra_error", None]
    for block in (0, 1):
        part = frame[frame["trial"] // 2 == block]
        part.to_parquet(res / "scores" / "agent" / "3x" / f"t{block}" / "c0.parquet")
    return res


def test_a_results_directory_counts_failures_by_its_own_policy(tmp_path):
    res = results_dir(tmp_path / "a", 1)
    got = read_results_dir(tmp_path / "a")
    assert got.groups == {"agent@3x": ("agent", "3x")}
    assert len(got.frame) == 160 and sorted(got.frame["block"].unique()) == [0, 1]
    # as_incorrect: the infra error is a counted 0, never dropped
    first = got.frame[(got.frame["task"] == "t0") & (got.frame["trial"] == 0)]
    assert first["score"].tolist() == [0.0]
    excluded = _config(infra_policy__mode="exclude")
    (res / "config.json").write_text(json.dumps({"config": excluded}))
    assert len(read_results_dir(res).frame) == 159


def test_a_results_directory_against_a_trials_file(tmp_path, capsys):
    results_dir(tmp_path / "a", 1)
    csv = _write(trials(1), tmp_path / "same-trials.csv")  # the very same trials as text
    code = main(["compare", str(tmp_path / "a"), csv, "--group", "group", "--json",
                 "--resamples", "200"])  # fmt: skip
    (rec,) = json.loads(capsys.readouterr().out)["pairs"]
    assert code == 0
    # paired trial by trial: only the infra error (a counted 0 in the directory) differs
    assert rec["mcnemar"]["n_pairs"] == 160
    assert rec["mcnemar"]["candidate_only_right"] + rec["mcnemar"]["baseline_only_right"] <= 1


def test_two_results_directories_and_a_git_revision(tmp_path, capsys):
    if shutil.which("git") is None:
        pytest.fail("git is needed to test revisions")
    repo = tmp_path / "repo"
    results_dir(repo, 1)
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "results"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "baseline"], check=True)
    shutil.rmtree(repo / "results")
    results_dir(repo, 3, scale=0.6, config=_config(run_seed=7))
    out_file = tmp_path / "compare" / "head.json"
    code = main(
        ["compare", "HEAD", str(repo), "--repo", str(repo), "--gate", "0.05", "--json",
         "-o", str(out_file), "--resamples", "300"]
    )  # fmt: skip
    printed = json.loads(capsys.readouterr().out)
    assert code == 1
    assert json.loads(out_file.read_text()) == printed
    assert printed["baseline"]["kind"] == "revision" and printed["candidate"]["kind"] == "results"
    (rec,) = printed["pairs"]
    assert rec["detected"] and rec["comparability"]["comparable"]
    assert [d["what"] for d in rec["comparability"]["differences"]] == ["run_seed"]


# --- the compare_runs rule's script, as Snakemake runs it in process --------------------------


def _run_rule(tmp_path, monkeypatch, baseline):
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "results" / "compare" / f"{baseline}.json"
    analysis = {"confidence": 0.95, "bootstrap": {"resamples": 300, "seed": 0}}
    run_script(
        ROOT / "scripts" / "compare_runs.py",
        input=SimpleNamespace(),
        output=SimpleNamespace(record=str(out)),
        params=SimpleNamespace(results="results", analysis=analysis),
        wildcards=SimpleNamespace(baseline=baseline),
        log=[str(tmp_path / "compare.log")],
        name="compare_runs",
    )
    return json.loads(out.read_text())


def test_the_rule_compares_this_run_with_a_baseline_directory(tmp_path, monkeypatch):
    results_dir(tmp_path, 2, config=_config(run_seed=1))  # this run: the candidate
    results_dir(tmp_path / "baselines" / "yesterday", 1)  # baselines/yesterday/results
    rec = _run_rule(tmp_path, monkeypatch, "yesterday")
    (pair,) = rec["pairs"]
    assert rec["baseline"]["source"] == "baselines/yesterday"
    assert not pair["detected"] and pair["mdd"] > 0 and pair["comparability"]["comparable"]
    assert "no difference detected" in (tmp_path / "compare.log").read_text()


def test_the_rule_never_calls_dvc_for_a_baseline(tmp_path, monkeypatch):
    results_dir(tmp_path, 2)
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    (tmp_path / "README").write_text("no results in git\n")
    subprocess.run([*git, "add", "README"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "x"], check=True)
    with pytest.raises(InputError, match="is not in git; materialise it first"):
        _run_rule(tmp_path, monkeypatch, "HEAD")


def test_a_dvc_tracked_revision_is_fetched_with_dvc_get(tmp_path, capsys, monkeypatch):
    dvc = shutil.which("dvc")
    if dvc is None:
        pytest.fail("dvc is needed to test DVC-tracked revisions")
    monkeypatch.setenv("DVC_NO_ANALYTICS", "1")
    repo = tmp_path / "repo"
    results_dir(repo, 1)
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([dvc, "init", "-q"], cwd=repo, check=True)
    subprocess.run([dvc, "add", "-q", "results"], cwd=repo, check=True)
    subprocess.run([*git, "add", "results.dvc", ".gitignore", ".dvc"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "results in DVC"], check=True)
    shutil.rmtree(repo / "results")  # only DVC's cache holds them now
    results_dir(tmp_path / "cand", 3, scale=0.6)
    code = main(["compare", "HEAD", str(tmp_path / "cand"), "--repo", str(repo), "--json",
                 "--resamples", "200"])  # fmt: skip
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["baseline"]["kind"] == "revision"
    (rec,) = out["pairs"]
    assert rec["n_trials_baseline"] == 160 and rec["detected"] and rec["diff"] < 0


def test_a_point_interval_or_a_failed_group_never_passes_the_gate(tmp_path, capsys):
    same = trials(1).assign(score=0.0)  # every task differs by exactly 0
    (rec,) = compare_runs(run(same), run(same.copy()), margin=0.05, n_resamples=200)
    assert rec["degenerate"] and rec["ci_low"] == rec["ci_high"] == 0
    assert rec["gate"]["interval"] == "confidence_sequence"
    assert rec["gate"]["decision"] == "inconclusive" and rec["design"] is None
    # a group that failed more than health allows is no measurement: never non-inferior
    failing = _config()
    failing["health"] = {"max_failure_rate": 0.0, "expected_failures": []}
    results_dir(tmp_path / "a", 1, config=failing)  # one infra error: 1 of 160 failed
    results_dir(tmp_path / "b", 4, scale=1.4, config=failing)
    code = main(["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--gate", "0.05",
                 "--resamples", "200"])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 3
    assert "comparable         NO" in out and "is not a measurement of the agent" in out
