"""Which files each rule reads (evalnoise.pipeline.wiring), without Snakemake: the rules'
output patterns are given as a dict, the sequential checkpoint as files in a directory."""

from __future__ import annotations

import copy
import functools
import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalnoise.pipeline.run_plan import RunPlan
from evalnoise.pipeline.sequential import Rect, first_design, shard_ranges
from evalnoise.pipeline.shard_plan import Shard, ShardPlan
from evalnoise.pipeline.wiring import Wiring, fill, group_outputs, round_label

#: the rules' named outputs, as rules/*.smk declare them
OUTPUTS = {
    "sample_tasks": {"tasks": "results/tasks.parquet"},
    "import_trials": {
        "tasks": "results/tasks.parquet",
        "trials": "results/trials/imported.parquet",
        "scores": "results/scores/imported.parquet",
    },
    "build_image": {"info": "results/trials/{agent}/image.json"},
    "canary": {"canary": "results/trials/{agent}/canary.json"},
    "run_trials": {
        "shard": "results/trials/{agent}/{resource_profile}/t{block}/c{chunk}{variant}.parquet",
        "actions": "results/trials/{agent}/{resource_profile}/actions/t{block}/c{chunk}{variant}"
        ".parquet",
    },
    "score": {
        "scores": "results/scores/{agent}/{resource_profile}/t{block}/c{chunk}{variant}.parquet"
    },
    "judge": {
        "judged": "results/judged/{judge}/{agent}/{resource_profile}/t{block}/c{chunk}{variant}"
        ".parquet"
    },
    "compare": {"pair": "results/analysis/pairs/{kind}/{within}/{a}/{b}.json"},
    "attribution": {"summary": "results/analysis/attribution.json", "flaky": "flaky.csv"},
    "summarize": {"groups": "results/analysis/groups.json", "metrics": "results/metrics.json"},
    "sequential_round": {"record": "results/sequential/round-{round}.json"},
    "sequential_summary": {
        "summary": "results/sequential/summary.json",
        "rounds": "results/sequential/rounds.csv",
    },
    "manifest": {"manifest": "results/manifest.json"},
    "report": {"report": "results/report"},
    "record_config": {"config": "results/config.json"},
    "check": {"health": "results/health.json"},
}


class RoundNotRun(Exception):
    """Stands for Snakemake's incomplete-checkpoint signal."""


def wiring(run: RunPlan, records: Path | None = None) -> Wiring:
    outputs = {**OUTPUTS, "analyze_group": group_outputs(run.judge_stage)}

    def round_record(label: str) -> str:
        path = (records or Path("/nonexistent")) / f"round-{label}.json"
        if not path.exists():
            raise RoundNotRun(label)
        return str(path)

    return Wiring(run, outputs.__getitem__, round_record)


def plan_run(config, n_tasks=9) -> RunPlan:
    from evalnoise.pipeline.judges import judge_specs

    plan = ShardPlan.from_config(config, n_tasks)
    return RunPlan(config, plan, None, judge_specs(config["scorer"]["judge"]), n_tasks)


def test_fill_is_format_with_one_value_each():
    assert fill("a/{x}/c{y}{v}.p", x="1", y="0000-0003", v="") == "a/1/c0000-0003.p"
    assert fill("a/{x}.p", x="1", unused="2") == "a/1.p"
    with pytest.raises(KeyError):
        fill("a/{x}/{y}.p", x="1")
    assert round_label(7) == "007"


def test_every_shard_once_with_its_scores_and_judges(default_config):
    run = plan_run(default_config)
    w = wiring(run)
    shards = run.plan.shards()
    trials = w.all_trial_shards()
    assert len(trials) == len(set(trials)) == len(shards) == 16
    assert trials == [fill(OUTPUTS["run_trials"]["shard"], **s.wildcards) for s in shards]
    scores = w.all_score_shards()
    assert [p.replace("results/scores/", "results/trials/") for p in scores] == trials
    judged = w.all_judged_shards()
    assert run.judge_stage and len(judged) == len(run.judges) * len(shards)
    assert w.all_image_infos() == [f"results/trials/{a}/image.json" for a in run.plan.agents]
    # each group's analysis reads the actions beside its own trial shards, each once
    actions = [
        path
        for a, r in run.plan.groups()
        for path in w.group_actions(SimpleNamespace(agent=a, resource_profile=r))
    ]
    assert len(set(actions)) == len(actions)
    assert sorted(actions) == sorted(p.replace("/t0", "/actions/t0", 1) for p in trials)


def test_the_statistics_read_the_reference_or_the_primary_judge(default_config):
    run = plan_run(default_config)
    group = SimpleNamespace(agent="chat", resource_profile="3x")
    reference = wiring(run).group_scores(group)
    assert all(p.startswith("results/scores/chat/3x/") for p in reference)
    assert wiring(run).group_judge_reference(group) == reference
    by_judge = wiring(run).group_judged_by_judge(group)
    assert list(by_judge) == list(run.judges)
    assert [p for paths in by_judge.values() for p in paths] == wiring(run).group_judged(group)

    config = copy.deepcopy(default_config)
    config["analysis"]["score"] = "judge"
    judged = wiring(plan_run(config)).group_scores(group)
    assert judged == by_judge[run.primary_judge]


def test_without_a_judge_stage_nothing_is_judged(default_config):
    config = copy.deepcopy(default_config)
    config["scorer"]["judge"]["stage"] = False
    config["analysis"]["score"] = "judge"  # no stage: the reference is what there is
    run = plan_run(config)
    w = wiring(run)
    group = SimpleNamespace(agent="chat", resource_profile="3x")
    assert w.all_judged_shards() == [] and w.all_judge_quality() == []
    assert w.group_judged(group) == [] and w.group_judge_reference(group) == []
    assert w.judge_quality_params() == {}
    assert w.group_scores(group)[0].startswith("results/scores/")
    assert "judge" not in group_outputs(False) and "judge" in group_outputs(True)
    with_stage = wiring(plan_run(default_config)).judge_quality_params()
    assert set(with_stage) == {"judges", "judged", "reference"}


def test_pairs_and_group_outputs(default_config):
    run = plan_run(default_config)
    w = wiring(run)
    pairs = w.all_pairs()
    kinds = [p.split("/")[3] for p in pairs]
    assert kinds.count("agents") == len(run.plan.agent_pairs()) == 3
    assert kinds.count("resource_profiles") == len(run.plan.profile_pairs()) == 1
    pair = SimpleNamespace(kind="resource_profiles", within="tool_agent_local", a="1x", b="3x")
    assert w.pair_scores_a(pair) == w.scores_of("tool_agent_local", "1x")
    assert w.pair_scores_b(pair) == w.scores_of("tool_agent_local", "3x")
    groups = run.plan.groups()
    assert w.all_stats() == [f"results/analysis/groups/{a}/{r}.json" for a, r in groups]
    assert len(w.all_convergence()) == len(w.all_budgets()) == len(w.all_judge_quality()) == 4
    assert w.attribution_scores() == [p for a, r in groups for p in w.scores_of(a, r)]


def test_the_targets_name_every_artifact_once(default_config):
    w = wiring(plan_run(default_config))
    everything = w.all_outputs()
    assert len(everything) == len(set(everything))
    assert set(w.trial_targets()) <= set(everything)
    assert set(w.analysis_targets()) <= set(everything)
    assert {"results/manifest.json", "results/report", "results/health.json"} <= set(everything)
    # a fixed design still writes the sequential summary (a DVC output), but the report and
    # the summary do not read it
    assert w.sequential_outputs() == list(OUTPUTS["sequential_summary"].values())
    assert w.sequential_records() == w.sequential_report_files() == []
    assert w.sequential_summary_file() == []
    assert w.canary(SimpleNamespace(agent="chat")) == "results/trials/chat/canary.json"


def test_an_imported_table_is_its_own_shards(default_config):
    plan = ShardPlan.from_groups([("m1", "1x"), ("m2", "1x")])
    config = {**default_config, "trials_from": "table.csv"}
    run = RunPlan(config, plan, None, {"llm": {}}, None)
    w = wiring(run)
    assert w.tasks_table() == "results/tasks.parquet"
    assert w.all_image_infos() == [] and w.all_judged_shards() == []
    assert w.all_trial_shards() == ["results/trials/imported.parquet"]
    assert w.all_score_shards() == ["results/scores/imported.parquet"]
    assert w.group_scores(SimpleNamespace(agent="m1", resource_profile="1x")) == [
        "results/scores/imported.parquet"
    ]
    # one file for both groups: the attribution reads it once, each trial once
    assert w.attribution_scores() == ["results/scores/imported.parquet"]
    # an imported table records no actions
    assert w.group_actions(SimpleNamespace(agent="m1", resource_profile="1x")) == []


def test_a_rerun_count_is_read_beside_its_shard(default_config, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    w = wiring(plan_run(default_config))
    s = Shard("chat", "3x", "0000-0001", "0000-0005").wildcards
    assert w.score_reruns(s) == w.verifier_reruns(s) == 0
    scores = Path(fill(OUTPUTS["score"]["scores"], **s))
    scores.parent.mkdir(parents=True)
    Path(f"{scores}.unjudged-reruns").write_text("2\n", encoding="utf-8")
    assert w.score_reruns(s) == 2
    assert w.judge_reruns({**s, "judge": "llm"}) == 0


# -- sequential mode: the design decided by the rounds so far -----------------------------------


@pytest.fixture
def sequential_run(default_config):
    from evalnoise.pipeline.sequential import SequentialSettings

    config = copy.deepcopy(default_config)
    config["sequential"] = {
        **config["sequential"],
        "enabled": True,
        "first_round": {"tasks": 4, "trials": 2},
    }
    run = plan_run(config, n_tasks=9)
    settings_ = SequentialSettings.from_config(config, 9)
    return RunPlan(config, run.plan, settings_, run.judges, 9)


def write_round(directory: Path, round_: int, next_design: dict, done: bool) -> None:
    record = {"next_design": next_design, "done": done}
    (directory / f"round-{round_label(round_)}.json").write_text(json.dumps(record))


def test_round_zero_is_the_first_design_and_later_rounds_wait(sequential_run, tmp_path):
    w = wiring(sequential_run, tmp_path)
    first = first_design(sequential_run.sequential, sequential_run.plan.groups())
    assert w.sequential_design(0) == first
    group = SimpleNamespace(round="000")
    assert w.sequential_previous_record(group) == []
    assert w.sequential_previous_record(SimpleNamespace(round="002")) == [
        "results/sequential/round-001.json"
    ]
    assert w.sequential_design_param(group) == {
        g: [r.to_list() for r in rects] for g, rects in first.items()
    }
    # the shards of round 0's design, every group's, are what round 0 reads
    scores = w.sequential_round_scores(group)
    assert len(scores) == len(set(scores)) > 0
    with pytest.raises(RoundNotRun):  # the last round is not known before round 0 ran
        w.all_trial_shards()


def test_the_last_rounds_design_makes_the_shards(sequential_run, tmp_path):
    run = sequential_run
    w = wiring(run, tmp_path)
    first = first_design(run.sequential, run.plan.groups())
    grown = {
        group: [*rects, Rect(1, 4, 7, 0, 1)] for group, rects in first.items()
    }  # round 1 adds rows 4-7
    write_round(tmp_path, 0, {g: [r.to_list() for r in rs] for g, rs in grown.items()}, False)
    write_round(tmp_path, 1, {g: [r.to_list() for r in rs] for g, rs in grown.items()}, True)
    assert w.sequential_last_round() == 1
    assert w.sequential_records() == [
        "results/sequential/round-000.json",
        "results/sequential/round-001.json",
    ]
    assert w.sequential_design(1) == grown
    block, chunk = int(run.config["trials"]["block_size"]), int(run.config["task_chunk_size"])
    for agent, profile in run.plan.groups():
        label = f"{agent}@{profile}"
        expected = [
            Shard(agent, profile, b, c) for b, c in shard_ranges(grown[label], block, chunk)
        ]
        assert w.group_shards(agent, profile) == expected
    assert len(w.all_trial_shards()) == sum(
        len(shard_ranges(rects, block, chunk)) for rects in grown.values()
    )
    assert w.sequential_report_files() == list(OUTPUTS["sequential_summary"].values())
    assert w.sequential_summary_file() == ["results/sequential/summary.json"]


@settings(max_examples=40, deadline=None)
@given(
    count=st.integers(1, 12),
    block=st.integers(1, 5),
    n_tasks=st.integers(1, 15),
    chunk=st.integers(1, 6),
)
def test_every_trial_of_every_task_is_in_exactly_one_shard(count, block, n_tasks, chunk):
    from evalnoise.pipeline.settings import with_defaults

    config = with_defaults(
        {
            "agents": {"a": {}, "b": {"resource_profiles": ["1x"]}},
            "resource_profiles": {"1x": {}, "3x": {}},
            "trials": {"count": count, "block_size": block},
            "task_chunk_size": chunk,
        },
        _schema(),
    )
    run = plan_run(config, n_tasks)
    w = wiring(run)
    paths = w.all_trial_shards()
    assert len(paths) == len(set(paths))
    cells = []
    for s in run.plan.shards():
        first, last = run.rows_param(SimpleNamespace(chunk=s.chunk))
        cells += [
            (s.agent, s.resource_profile, row, trial)
            for row in range(first, last + 1)
            for trial in run.trials_param(SimpleNamespace(block=s.block))
        ]
    expected = {
        (a, r, row, trial)
        for a, r in run.plan.groups()
        for row in range(n_tasks)
        for trial in range(count)
    }
    assert len(cells) == len(set(cells)) and set(cells) == expected


@functools.cache
def _schema() -> dict:
    from pipeline_helpers import SCHEMA_PATH

    from evalnoise.pipeline.settings import load_schema

    return load_schema(SCHEMA_PATH)
