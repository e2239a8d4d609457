"""Several judges as the levels of the judge facet: config, the judge stage's record per
judge, the judges' variance components, and the lines the summary and the cards show.

The judged shards are made by the real scorers (:func:`evalnoise.scorers.score_trials` with
rule judges); a second judge's disagreement is written into a copy of one, vote by vote, so
the expected components are known.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pipeline_helpers import CONFIG_PATH, SCHEMA_PATH

from evalnoise.pipeline.collect import load_group
from evalnoise.pipeline.judges import judge_specs, primary_judge, uses_judge_server
from evalnoise.pipeline.judging import judge_facet_record, judge_quality
from evalnoise.pipeline.settings import ConfigError, check_config, load_schema, with_defaults
from evalnoise.pipeline.stages import analyze_group
from evalnoise.pipeline.summary import judge_summary, summarize
from evalnoise.report.judge_text import judge_text, judges_rows
from evalnoise.schema import SCORES, TASKS, conform
from evalnoise.scorers import score_trials
from evalnoise.scorers.rule_judge import RuleJudge

OPTIONS = {
    "confidence": 0.95,
    "cluster_se": "cr1",
    "quantile": "normal",
    "per_level": False,
    "convergence": {"subsamples": 20, "seed": 0, "tolerance": 0.02},
    "bootstrap": {"resamples": 200, "seed": 0},
    "budget": {"runs": None, "max_tasks": None},
}
AS_INCORRECT = {"mode": "as_incorrect"}
REFERENCE = {"name": "numeric", "numeric": {"pick": "last", "rel_tol": 1e-6, "abs_tol": 1e-9}}
N_TASKS, N_TRIALS = 8, 6


@pytest.fixture
def run(tmp_path):
    """Tasks, trials with real-looking replies, the reference scores, a rule judge's shard."""
    rng = np.random.default_rng(3)
    tasks = pd.DataFrame(
        {
            "task_id": [f"t{i}" for i in range(N_TASKS)],
            "question": [f"What is {i} + {i}?" for i in range(N_TASKS)],
            "answer": [str(2 * i) for i in range(N_TASKS)],
            "level": ["1"] * N_TASKS,
        }
    )
    tasks_path = tmp_path / "tasks.parquet"
    pq.write_table(conform(pa.Table.from_pandas(tasks, preserve_index=False), TASKS), tasks_path)
    rows = []
    for i in range(N_TASKS):
        for t in range(N_TRIALS):
            right = rng.random() < (0.2 + 0.6 * (i % 2))
            value = 2 * i if right else 2 * i + 1
            rows.append(
                {
                    "agent": "a",
                    "resource_profile": "1x",
                    "task_id": f"t{i}",
                    "trial": t,
                    "attempt": 1,
                    "status": "ok",
                    "prediction": f"{i} + {i} = {value}",
                }
            )
    trials = pd.DataFrame(rows)
    paths = {"tasks": tasks_path}
    reference = score_trials(trials, tasks, "numeric", options=REFERENCE["numeric"])
    paths["reference"] = tmp_path / "reference.parquet"
    pq.write_table(reference, paths["reference"])
    rule = score_trials(trials, tasks, "judge", judge=RuleJudge("last_number"))
    paths["rule"] = tmp_path / "rule.parquet"
    pq.write_table(rule, paths["rule"])
    return paths


def _other_judge(path, out, flip):
    """A judge with two votes a trial: the rule judge's verdict, each vote flipped where
    ``flip(task_index, trial, vote)`` says so."""
    frame = pq.read_table(path).to_pandas()
    frame["scorer"] = "judge:m"
    votes = []
    rows = zip(frame["task_id"], frame["trial"], frame["correct"], strict=True)
    for task, trial, verdict in rows:
        i = int(task[1:])
        votes.append([bool(verdict) != flip(i, trial, k) for k in range(2)])
    frame["judge_votes"] = votes
    frame["score"] = [sum(v) / 2 for v in votes]
    frame["correct"] = [None if sum(v) == 1 else sum(v) == 2 for v in votes]
    frame["judge_calls"] = 2
    pq.write_table(conform(pa.Table.from_pandas(frame, preserve_index=False), SCORES), out)
    return out


def _quality(run, judged, specs):
    return judge_quality(
        [run["reference"]],
        judged,
        run["tasks"],
        "a",
        "1x",
        options=OPTIONS,
        policy=AS_INCORRECT,
        judges=specs,
        reference=REFERENCE,
    )


LLM = {"mode": "extract", "samples": 2, "rule": None, "model": None}


def test_every_judge_is_measured_and_the_best_is_a_real_judge(run, tmp_path):
    # judge "lenient" flips every vote on tasks 0-3: it disagrees with the reference there
    lenient = _other_judge(run["rule"], tmp_path / "lenient.parquet", lambda i, t, k: i < 4)
    record = _quality(
        run,
        {"lenient": [lenient], "last_number": [run["rule"]]},
        {"lenient": {**LLM, "name": "lenient"}, "last_number": {"rule": "last_number"}},
    )
    by_name = {r["name"]: r for r in record["judges"]}
    assert list(by_name) == ["lenient", "last_number"]
    rule = by_name["last_number"]
    assert rule["same_as_reference"] is True and rule["kind"] == "rule"
    assert rule["agreement"]["kappa"] == pytest.approx(1.0)
    assert rule["costs"]["drivers"]["judge_calls"]["total"] == 0
    lenient_rec = by_name["lenient"]
    assert lenient_rec["same_as_reference"] is False and lenient_rec["samples"] == 2
    assert lenient_rec["agreement"]["kappa"] < 0.9
    # the reference's own rule agrees by construction: never the best judge
    assert record["best_judge"] == "lenient"
    # the top level is the first judge's, as with one judge; costs are every judge's
    assert record["name"] == "lenient" and record["mode"] == "extract"
    assert record["agreement"] == lenient_rec["agreement"]
    assert record["costs"]["drivers"]["judge_calls"]["total"] == 2 * N_TASKS * N_TRIALS
    facet = record["judge_facet"]
    assert facet["n_judges"] == 2 and facet["detected_judges"] is True
    names = [c["component"] for c in facet["components"]]
    assert {"judge", "task×judge", "trial×judge:task"} <= set(names)
    assert facet["sigma2_judges"] > 0.05


def test_judges_that_agree_have_no_judge_variance(run, tmp_path):
    same = _other_judge(run["rule"], tmp_path / "same.parquet", lambda i, t, k: False)
    record = _quality(
        run,
        {"same": [same], "last_number": [run["rule"]]},
        {"same": {**LLM, "name": "same"}, "last_number": {"rule": "last_number"}},
    )
    facet = record["judge_facet"]
    assert facet["sigma2_judges"] == pytest.approx(0.0, abs=1e-9)
    assert facet["detected_judges"] is False and facet["share_judges_estimate"] == pytest.approx(
        0.0, abs=1e-9
    )


def test_the_facet_record_is_the_engines_g_study():
    """The record's components are the engine's estimates of the crossed design, named."""
    from evalnoise.stats import gstudy

    rng = np.random.default_rng(0)
    rows = []
    for t in range(6):
        for r in range(5):
            truth = float(rng.random() < 0.5)
            for j, k in (("a", 1), ("b", 3)):
                rows += [(j, f"t{t}", str(r), float(rng.random() < 0.8) * truth) for _ in range(k)]
    votes = pd.DataFrame(rows, columns=["judge", "task", "trial", "vote"])
    record = judge_facet_record(votes, 0.95)
    g = gstudy(votes["vote"], votes[["task", "trial", "judge"]], ["task", "trial:task", "judge"])
    assert [c["component"] for c in record["components"]] == list(g.effects)
    np.testing.assert_allclose([c["sigma2"] for c in record["components"]], g.sigma2)
    assert record["method"] == "reml" and record["balanced"] is False
    one = judge_facet_record(votes[votes["judge"] == "a"], 0.95)
    assert one["components"] == [] and one["warnings"]


def test_unjudged_by_any_judge_makes_the_group_incomplete(run, tmp_path):
    other = _other_judge(run["rule"], tmp_path / "other.parquet", lambda i, t, k: False)
    frame = pq.read_table(other).to_pandas()
    frame["correct"] = frame["correct"].astype("boolean")
    frame.loc[:2, ["correct", "score"]] = None
    frame.loc[:2, "judge_status"] = "judge_error"
    frame.loc[:2, "judge_explanation"] = "judge call failed after 1 attempt(s): refused"
    frame["judge_votes"] = frame["judge_votes"].astype(object)
    for i in range(3):
        frame.at[i, "judge_votes"] = None
    pq.write_table(conform(pa.Table.from_pandas(frame, preserve_index=False), SCORES), other)
    # the first judge is whole: the group is still incomplete
    record = _quality(
        run,
        {"last_number": [run["rule"]], "other": [other]},
        {"last_number": {"rule": "last_number"}, "other": {**LLM, "name": "other"}},
    )
    assert record["unjudged"] == 3 and record["judges"][0]["unjudged"] == 0
    assert record["judges"][1]["unjudged"] == 3 and record["judges"][1]["call_failures"] == 3
    group = load_group([run["reference"]], run["tasks"], "a", "1x", AS_INCORRECT)
    stats = analyze_group(group, OPTIONS, policy="as incorrect")
    result = summarize([stats], [], [], [], confidence=0.95, judge=[record])
    assert result.metrics["groups"]["a@1x"]["outcomes"]["unjudged"] == 3
    assert result.metrics["valid"] is False


def test_the_summary_and_the_cards_show_every_judge(run, tmp_path):
    lenient = _other_judge(run["rule"], tmp_path / "lenient.parquet", lambda i, t, k: i < 2)
    record = _quality(
        run,
        {"smol": [lenient], "last_number": [run["rule"]]},
        {"smol": {**LLM, "name": "smol"}, "last_number": {"rule": "last_number"}},
    )
    group = load_group([run["reference"]], run["tasks"], "a", "1x", AS_INCORRECT)
    stats = analyze_group(group, OPTIONS, policy="as incorrect")
    result = summarize([stats], [], [], [], confidence=0.95, judge=[record])
    text = result.summary
    kappa = record["judges"][0]["agreement"]["kappa"]
    assert "judge smol (extract, 2 samples per trial): accuracy" in text
    assert f"κ = {kappa:.2f}" in text
    assert "    judge last_number: rule last_number, 1 sample per trial: κ = 1.00" in text
    assert "agrees by construction" in text
    assert "    judges as a facet: 2 judges; σ²(judge)" in text
    assert "best judge smol" in text
    entry = result.metrics["groups"]["a@1x"]["judge"]
    assert entry["kappa_by_judge"] == {
        "smol": pytest.approx(kappa, abs=1e-6),
        "last_number": pytest.approx(1.0),
    }
    summary = judge_summary(record)
    rows = judges_rows(summary, "95%")
    assert [k for k, _ in rows] == ["Judge last_number", "Judges as a facet"]
    assert judge_text(summary, "95%").startswith("judge smol (extract")
    # with one judge nothing changes: no name, no extra rows
    single = _quality(run, {"llm": [lenient]}, {"llm": {**LLM, "name": "llm"}})
    assert judges_rows(judge_summary(single), "95%") == []
    assert judge_text(judge_summary(single), "95%").startswith("judge (extract, 2 samples")


def test_a_withheld_group_shows_no_accuracy_by_any_judge(run, tmp_path):
    """Issue 38.4: a group whose headline is withheld (here 20 of 48 trials crashed) shows no
    accuracy in the judge's line of summary.txt, in metrics.json or on its card; the judges'
    agreement and the group's labelled readings stay."""
    from evalnoise.report.card_text import card_rows
    from evalnoise.report.cards import CardContext, evaluation_card

    frame = pq.read_table(run["reference"]).to_pandas()
    crashed = frame.index < 20
    frame.loc[crashed, "status"] = "agent_error"
    frame["exit_code"] = frame["exit_code"].astype("Int64")
    frame.loc[crashed, "exit_code"] = 139
    frame["correct"] = frame["correct"].astype("boolean")
    frame.loc[crashed, ["score", "correct"]] = None
    crashes = tmp_path / "crashes.parquet"
    pq.write_table(conform(pa.Table.from_pandas(frame, preserve_index=False), SCORES), crashes)
    lenient = _other_judge(run["rule"], tmp_path / "lenient.parquet", lambda i, t, k: i < 2)
    record = _quality(
        run,
        {"smol": [lenient], "last_number": [run["rule"]]},
        {"smol": {**LLM, "name": "smol"}, "last_number": {"rule": "last_number"}},
    )
    assert record["accuracy"]["mean"] is not None  # the judge stage alone knows no health
    stats = analyze_group(
        load_group([crashes], run["tasks"], "a", "1x", AS_INCORRECT), OPTIONS, policy="x"
    )
    assert stats["overall"]["withheld"]
    result = summarize([stats], [], [], [], confidence=0.95, judge=[record])
    text = result.summary
    assert "judge smol (extract, 2 samples per trial): no accuracy (withheld" in text
    assert "readings: over the trials that answered" in text
    assert not re.search(r"accuracy \d", text), text
    metric = result.metrics["groups"]["a@1x"]
    assert metric["accuracy"] is None and metric["judge"]["accuracy"] is None
    assert metric["judge"]["kappa"] is not None and metric["readings"]["answered"]["accuracy"]
    (group,) = result.groups
    assert group["judge"]["accuracy"] is None and group["judge"]["withheld"]
    assert all(j["accuracy"] is None for j in group["judge"]["judges"])
    card = evaluation_card(group, CardContext(benchmark="b", infra_policy="x"))
    assert card["metrics"]["accuracy"] is None and card["judge"]["accuracy"] is None
    judge_rows = [v for k, v in card_rows(card) if k.startswith("Judge")]
    assert judge_rows and all("no accuracy (withheld" in v for v in judge_rows[:2])


# -- config ------------------------------------------------------------------------------------


def _config(judge):
    import yaml

    config = yaml.safe_load(CONFIG_PATH.read_text())
    config["scorer"]["judge"] = {**config["scorer"]["judge"], **judge}
    return config


def test_the_default_config_declares_an_llm_judge_and_the_rule():
    """The default: SmolLM2 extracting (few tokens) and the free rule beside it."""
    import yaml

    schema = load_schema(SCHEMA_PATH)
    config = with_defaults(yaml.safe_load(CONFIG_PATH.read_text()), schema)
    check_config(config, schema)
    specs = judge_specs(config["scorer"]["judge"])
    assert [s.get("rule") for s in specs.values()] == [None, "last_number"]
    first = next(iter(specs.values()))
    assert first["mode"] == "extract" and first["max_tokens"] <= 16
    assert primary_judge(config["scorer"]["judge"]) == first
    assert [uses_judge_server(s) for s in specs.values()] == [True, False]


def test_a_section_without_judges_is_one_llm_judge():
    schema = load_schema(SCHEMA_PATH)
    config = with_defaults(_config({"judges": None, "samples": 3}), schema)
    check_config(config, schema)
    (spec,) = judge_specs(config["scorer"]["judge"]).values()
    assert spec["name"] == "llm" and spec["samples"] == 3 and spec["rule"] is None


def test_judges_inherit_the_section_and_override_it():
    schema = load_schema(SCHEMA_PATH)
    config = with_defaults(
        _config({"samples": 2, "judges": {"a": {}, "b": {"samples": 1, "seed": 5}}}), schema
    )
    check_config(config, schema)
    specs = judge_specs(config["scorer"]["judge"])
    assert (specs["a"]["samples"], specs["b"]["samples"], specs["b"]["seed"]) == (2, 1, 5)
    only_rules = with_defaults(_config({"judges": {"r": {"rule": "last_number"}}}), schema)
    rules_only = judge_specs(only_rules["scorer"]["judge"]).values()
    assert not any(uses_judge_server(s) for s in rules_only)


@pytest.mark.parametrize(
    ("judges", "message"),
    [
        ({"r": {"rule": "last_number", "samples": 2}}, "judges.r.samples: judge 'r' is the rule"),
        ({"r": {"rule": "first_number"}}, "judges.r.rule"),
        ({"bad name": {}}, "judges.bad name: name not allowed"),
        ({"a": {"temprature": 1}}, "judges.a.temprature: unknown key"),
        ({}, "judges"),
    ],
)
def test_bad_judges_are_named(judges, message):
    schema = load_schema(SCHEMA_PATH)
    with pytest.raises(ConfigError, match=message):
        config = with_defaults(_config({"judges": judges}), schema)
        check_config(config, schema)
        judge_specs(config["scorer"]["judge"])  # what the workflow does next, at parse time


def test_with_one_vote_a_trial_the_residual_is_shown_apart_from_the_judges_share():
    """One vote per judge and trial (the default: an LLM judge at T = 0 and a rule): the
    residual holds the trial × judge interaction confounded with each vote's own noise; it is
    shown as such and the judges' share is judge + task × judge only."""
    rng = np.random.default_rng(1)
    rows = []
    for t in range(8):
        for r in range(5):
            truth = float(rng.random() < 0.5)
            rows.append(("rule", f"t{t}", str(r), truth))
            rows.append(("llm", f"t{t}", str(r), truth if rng.random() < 0.8 else 1 - truth))
    votes = pd.DataFrame(rows, columns=["judge", "task", "trial", "vote"])
    record = judge_facet_record(votes, 0.95)
    assert record["residual_includes"] == "trial×judge:task" and record["balanced"] is True
    by_name = {c["component"]: c["sigma2"] for c in record["components"]}
    assert record["sigma2_judges"] == pytest.approx(by_name["judge"] + by_name["task×judge"])
    counted = {c["component"]: c["counted"] for c in record["components"]}
    assert counted == {
        "task": False, "trial:task": False, "judge": True, "task×judge": True, "residual": False
    }  # fmt: skip
    summary = judge_summary(
        {"mode": "extract", "samples": 1, "sent": 1, "judges": [], "judge_facet": record}
    )
    names = [c["component"] for c in summary["judge_facet"]["components"]]
    assert names == ["judge", "task×judge", "residual (trial×judge:task)"]


@pytest.mark.parametrize("mode", ["verdict", "extract"])
def test_the_pipelines_template_hash_is_the_judges_own(mode):
    """The hash the judge rules take as a param (computed while Snakemake builds the DAG) is
    the one the LLM judge keys its cache with."""
    from evalnoise.models import ChatClient
    from evalnoise.pipeline.judges import judge_template_hash
    from evalnoise.scorers import LLMJudge

    spec = {"name": "llm", "rule": None, "template": None, "mode": mode}
    judge = LLMJudge(ChatClient(base_url="http://127.0.0.1:9/v1", model="m"), mode=mode)
    try:
        assert judge_template_hash(spec) == judge.template_hash()
    finally:
        judge.close()
    assert judge_template_hash({"name": "n", "rule": "last_number"}) != judge.template_hash()


def test_the_template_hash_loads_no_model_code(tmp_path):
    import json
    import subprocess
    import sys
    from pathlib import Path

    src = Path(__file__).resolve().parents[2] / "src"
    out = tmp_path / "modules.json"
    code = (
        "import json, sys\n"
        "from evalnoise.pipeline.judges import judge_template_hash\n"
        "judge_template_hash({'name': 'llm', 'rule': None, 'template': None, 'mode': 'extract'})\n"
        f"open({str(out)!r}, 'w').write(json.dumps(list(sys.modules)))\n"
    )
    env = {"PYTHONPATH": str(src), "PATH": "/usr/bin:/bin"}
    subprocess.run([sys.executable, "-c", code], check=True, cwd=tmp_path, env=env)
    modules = set(json.loads(out.read_text()))
    assert "evalnoise.scorers.judge_template" in modules
    assert "evalnoise.scorers.judge" not in modules
    assert not {m for m in modules if m.startswith("evalnoise.models")}


def _two_judge_votes(flip) -> pd.DataFrame:
    """9 tasks × 4 trials, a rule judge voting the truth and an LLM judge voting it except
    where ``flip(task, trial)``: the default run's chat@3x (6 right of 36; the LLM judge
    rejects 2 of them)."""
    right = {(0, 0), (0, 1), (0, 2), (1, 0), (2, 0), (2, 1)}
    rows = []
    for t in range(9):
        for r in range(4):
            truth = float((t, r) in right)
            rows.append(("last_number", f"t{t}", str(r), truth))
            rows.append(("llm", f"t{t}", str(r), 1.0 - truth if flip(t, r) else truth))
    return pd.DataFrame(rows, columns=["judge", "task", "trial", "vote"])


def _facet_line(record) -> str:
    judges = [
        {"name": "llm", "mode": "extract", "samples": 1},
        {"name": "last_number", "kind": "rule", "rule": "last_number", "samples": 1},
    ]
    summary = judge_summary(
        {"mode": "extract", "samples": 1, "sent": 36, "judges": [], "judge_facet": record}
    )
    rows = judges_rows({"judges": judges, "judge_facet": summary["judge_facet"]}, "95%")
    return dict(rows)["Judges as a facet"]


def test_two_judges_that_disagree_once_have_no_detected_judges_share():
    """One disagreement puts the residual's χ² interval above 0 (judges disagreeing on a
    single trial, confounded with each vote's own noise); the judges' share — judge + task ×
    judge — is not detected, and the line shows the residual apart, not as judge variance."""
    record = judge_facet_record(_two_judge_votes(lambda t, r: (t, r) == (0, 2)), 0.95)
    comps = {c["component"]: c for c in record["components"]}
    assert comps["residual"]["ci_low"] > 0 and comps["residual"]["counted"] is False
    assert record["detected_judges"] is False and record["share_judges"] is None
    assert not comps["judge"]["detected"] and not comps["task×judge"]["detected"]
    assert record["sigma2_judges"] == pytest.approx(
        comps["judge"]["sigma2"] + comps["task×judge"]["sigma2"]
    )
    line = _facet_line(record)
    assert "judges' share: not detected (σ²(judge) + σ²(task×judge)" in line
    assert "not in the share: σ²(residual (trial×judge:task))" in line
    assert "confounded with each vote's own noise" in line


def test_an_upper_bound_above_025_for_0_1_votes_is_cut_and_said():
    """σ²(judge) has one degree of freedom with two judges: its MLS upper end (1.57 on the
    default run's votes) is above 0.25, the largest variance of a 0/1 vote: cut, and said."""
    from evalnoise.stats import gstudy

    votes = _two_judge_votes(lambda t, r: (t, r) in {(0, 2), (2, 1)})
    raw = gstudy(votes["vote"], votes[["task", "trial", "judge"]], ["task", "trial:task", "judge"],
                 score_range=(0.0, 10.0))  # fmt: skip
    assert raw.ci_high[raw.index("judge")] > 1.0  # what the interval says unbounded
    record = judge_facet_record(votes, 0.95)
    comps = {c["component"]: c for c in record["components"]}
    assert comps["judge"]["ci_high"] == pytest.approx(0.25) and comps["judge"]["ci_high_cut"]
    assert all(c["ci_high"] <= 0.25 for c in record["components"])
    assert record["sigma2_judges_ci_high"] <= 0.25 and record["variance_bound"] == 0.25
    assert "upper ends cut at 0.25, the largest variance of 0/1 votes" in _facet_line(record)


def test_a_detected_judges_share_names_its_components():
    """A judge that accepts every trial of three tasks: task × judge is detected, and so is
    the share; the line reads each component's decision beside the share."""
    record = judge_facet_record(_two_judge_votes(lambda t, r: t in (3, 4, 5)), 0.95)
    assert record["detected_judges"] is True
    assert record["share_judges"] == pytest.approx(record["share_judges_estimate"])
    line = _facet_line(record)
    assert "judges' share 0." in line and "task×judge detected" in line
