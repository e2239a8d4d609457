"""Evaluation Cards: fields of paper Table 4, the reporting line, computed limitations."""

from __future__ import annotations

import json

import pytest

from evalnoise.report.card_limitations import limitations
from evalnoise.report.cards import ICC_VARIANT, CardContext, card_key, evaluation_card
from evalnoise.report.cards_markdown import card_markdown

GOOD = {
    "group": "agent-a",
    "n_tasks": 100,
    "n_obs": 1600,
    "mean": 0.7,
    "ci_low": 0.64,
    "ci_high": 0.76,
    "se_clustered": 0.03,
    "icc": 0.8,
    "icc_ci_low": 0.76,
    "icc_ci_high": 0.84,
    "icc_se": 0.02,
    "icc_plugin": 0.81,
    "icc_k": 0.98,
    "sigma2_between": 0.15,
    "sigma2_within": 0.04,
    "interpretation": "good",
    "warnings": [],
}

CTX = CardContext(
    benchmark="GAIA",
    benchmark_version="2023 validation, Level 2",
    infra_policy="retry (up to 3 attempts; then as incorrect)",
    backend="docker",
    agents={"agent-a": {"model": "m", "decoding": {"temperature": 0.7, "top_p": 0.9}}},
    resource_profiles={
        "3x": {"memory_guarantee_factor": 1.0, "memory_limit_factor": 3.0, "cpu_limit_factor": None}
    },
    resource_profile="3x",
    run_seed=7,
    seed_rule="sha256(run seed, agent, task, trial)",
    scoring={"scorer": "exact match", "normalization": "lower-case | strip"},
)


def test_no_limitations_for_a_precise_reliable_run() -> None:
    assert limitations(GOOD, trials_min=16, backend="docker", infra_error_rate=0.0) == []


@pytest.mark.parametrize(
    "change,kwargs,expected",
    [
        ({"icc_se": 0.031}, {}, "ICC CI wider than ± 0.06"),
        ({"icc_ci_low": 0.67, "icc_ci_high": 0.93}, {}, "ICC CI wider than ± 0.06"),
        ({}, {"trials_min": 5}, "fewer than 8 trials per task (5)"),
        ({}, {"converged": False}, "had not settled"),
        ({"icc": 0.42, "interpretation": "poor"}, {}, "ICC poor (0.420 < 0.5)"),
        ({"sigma2_between": -0.003}, {}, "negative σ²_between estimate"),
        ({"n_tasks": 12}, {}, "small sample: 12 tasks"),
        (
            {},
            {"infra_error_rate": 0.058, "infra_policy": "as incorrect"},
            "5.8% of trials ended in an infrastructure failure (infra policy: as incorrect)",
        ),
        ({}, {"backend": "local"}, "local backend: weaker isolation"),
        ({"icc": None}, {}, "ICC undefined"),
        ({"warnings": ["only one trial for 3 tasks"]}, {}, "only one trial for 3 tasks"),
    ],
)
def test_each_limitation_is_triggered_by_its_number(change, kwargs, expected) -> None:
    args = {"trials_min": 16, "backend": "docker", "infra_error_rate": 0.0, **kwargs}
    found = limitations({**GOOD, **change}, **args)
    assert len(found) == 1 and expected in found[0], found


def test_ci_and_se_thresholds_are_strict() -> None:
    at_limit = {**GOOD, "icc_se": 0.03, "icc_ci_low": 0.74, "icc_ci_high": 0.86}
    assert limitations(at_limit, trials_min=8) == []


def test_card_fields(example_inputs) -> None:
    rec = {**GOOD, "warnings": ["w"]}
    levels = [
        {**GOOD, "level": "2", "n_tasks": 40, "icc": 0.45, "interpretation": "poor"},
        {**GOOD, "level": "1", "n_tasks": 60},
    ]
    infra = {"infra_error_rate": 0.02, "infra_ci_low": 0.01, "infra_ci_high": 0.035}
    card = evaluation_card(
        rec, CTX, levels=levels, trials_per_task=[16] * 99 + [12], infra=infra, converged=True
    )
    json.dumps(card, allow_nan=False)  # JSON-ready
    assert card["benchmark"] == {"name": "GAIA", "version": "2023 validation, Level 2"}
    assert card["agent"] == {
        "name": "agent-a",
        "model": "m",
        "decoding": {"temperature": 0.7, "top_p": 0.9},
    }
    assert card["trials"]["per_task_min"] == 12 and card["trials"]["per_task_max"] == 16
    assert card["trials"]["run_seed"] == 7 and card["trials"]["seed_method"].startswith("sha")
    m = card["metrics"]
    assert m["icc_variant"] == ICC_VARIANT == "ICC(1,1), one-way random effects"
    assert m["icc_se"] == 0.02 and m["between_query_se"] == 0.03
    assert card["resource_profile"]["name"] == "3x"
    assert card["resource_profile"]["settings"]["memory_limit_factor"] == 3.0
    assert card["infrastructure"] == {
        "backend": "docker",
        "infra_policy": "retry (up to 3 attempts; then as incorrect)",
        "infra_error_rate": 0.02,
        "infra_error_ci_low": 0.01,
        "infra_error_ci_high": 0.035,
    }
    assert [r["level"] for r in card["task_complexity"]["per_level"]] == ["1", "2"]
    # eq. 11 written out by hand from GOOD's numbers (± is half of [0.64, 0.76])
    assert card["reporting_line"] == (
        "70.0% ± 6.0% (95% CI [64.0%, 76.0%]) | ICC 0.800 [0.76, 0.84] good "
        "| between-query SE 0.030"
    )
    assert card["limitations"] == [
        "2.0% of trials ended in an infrastructure failure "
        "(infra policy: retry (up to 3 attempts; then as incorrect))",
        "w",
        "level 2: highly stochastic (ICC 0.450 < 0.5); its results are unreliable from a "
        "single run",
    ]


def test_card_from_the_example_flags_its_real_weaknesses(example_inputs, example_frame) -> None:
    """The numbers behind these limitations, and the whole reporting line, are checked
    against numpy, statsmodels and pingouin in test_report_cards_independent.py."""
    ctx = example_inputs["card_context"]
    for rec in example_inputs["groups"]:
        card = evaluation_card(rec, ctx, trials_per_task=[5] * 50)
        text = " ".join(card["limitations"])
        # 50 tasks × 5 trials: ICC SE ≈ 0.06, above the 0.03 guideline
        assert "ICC CI wider than ± 0.06" in text
        assert "fewer than 8 trials per task (5)" in text
        trials = example_frame[example_frame["group"] == rec["group"]]
        accuracy = trials.groupby("task")["score"].mean().mean()  # plain mean of task means
        assert card["reporting_line"].startswith(f"{100 * accuracy:.1f}% ± ")


def test_mean_trials_stand_in_when_counts_are_unknown() -> None:
    card = evaluation_card({**GOOD, "n_obs": 650}, CTX)  # 6.5 trials per task on average
    assert card["trials"]["per_task_min"] is None
    assert card["trials"]["per_task_mean"] == 6.5
    assert any("fewer than 8 trials per task (6.5)" in x for x in card["limitations"])


def test_card_key_defaults() -> None:
    assert card_key({"group": "g"}, CTX) == ("g", "3x")
    assert card_key({"group": "g", "agent": "a", "resource_profile": "1x"}, CTX) == ("a", "1x")
    bare = CardContext(benchmark="b", infra_policy="exclude")
    assert card_key({"group": "g"}, bare) == ("g", None)


def test_missing_statistics_are_refused() -> None:
    rec = {k: v for k, v in GOOD.items() if k != "icc_ci_low"}
    with pytest.raises(ValueError, match="icc_ci_low"):
        evaluation_card(rec, CTX)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"benchmark": "", "infra_policy": "as incorrect"},
        {"benchmark": "b", "infra_policy": ""},
        {"benchmark": "b", "infra_policy": "as incorrect", "confidence": 1.0},
    ],
)
def test_card_context_validation(kwargs) -> None:
    with pytest.raises(ValueError):
        CardContext(**kwargs)


def test_markdown_card() -> None:
    rec = {**GOOD, "group": "agent|a", "icc": 0.45, "interpretation": "poor"}
    levels = [{**rec, "level": "3"}]
    card = evaluation_card(rec, CTX, levels=levels, trials_per_task=[4] * 100)
    md = card_markdown(card)
    assert md.startswith("# Evaluation Card: agent|a @ 3x\n")
    assert f"```\n{card['reporting_line']}\n```" in md
    assert "| Agent | agent\\|a |" in md  # pipes in names cannot break the table
    assert "| Trials & seeds | 4 trials per task × 100 tasks = 1600 trials;" in md
    assert "ICC(1,1), one-way random effects" in md
    assert (
        "| Resource profile | 3x — multiples of each task's declared spec — memory: guarantee "
        "1×, hard limit 3×; CPU: guarantee not set, hard limit none (uncapped) |"
    ) in md
    assert "| Infra policy | retry (up to 3 attempts; then as incorrect) |" in md
    assert "## Per task complexity level" in md and "\n| 3 | 100 | 70.0% [64.0%, 76.0%]" in md
    assert "- ICC poor (0.450 < 0.5): single-run results unreliable" in md
    assert md.endswith("\n") and "\n\n\n" not in md


def test_markdown_without_limitations_says_so() -> None:
    card = evaluation_card(GOOD, CTX, trials_per_task=[16] * 100)
    assert card["limitations"] == []
    assert card_markdown(card).endswith("## Limitations\n\n- none detected\n")
