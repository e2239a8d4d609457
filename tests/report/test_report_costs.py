"""Cost drivers and cost on the Evaluation Cards (JSON, Markdown, HTML), with and without
prices: drivers always shown ("not reported" where none was), amounts only with prices,
and a trial that lacked a priced driver never priced as 0."""

from __future__ import annotations

import dataclasses

import pytest

from evalnoise.report import ReportInputs, build_report
from evalnoise.report.card_text import card_rows
from evalnoise.report.cards import CardContext, evaluation_card
from evalnoise.report.cards_markdown import card_markdown

GOOD = {
    "group": "agent-a@3x",
    "agent": "agent-a",
    "resource_profile": "3x",
    "n_tasks": 10,
    "n_obs": 40,
    "mean": 0.7,
    "ci_low": 0.6,
    "ci_high": 0.8,
    "se_clustered": 0.05,
    "icc": 0.8,
    "icc_ci_low": 0.7,
    "icc_ci_high": 0.9,
    "icc_se": 0.02,
    "interpretation": "good",
    "warnings": [],
}


def _d(n, missing, total):
    return {"n": n, "missing": missing, "total": total, "mean": None if not n else total / n}


COSTS = {
    "trials": 40,
    "drivers": {
        "container_seconds": _d(40, 0, 100.0),  # 2.5 s per trial
        "prompt_tokens": _d(36, 4, 7_200_000.0),  # 200 000 per trial; 4 timed out
        "completion_tokens": _d(36, 4, 360_000.0),
        "model_calls": _d(36, 4, 72.0),
        "judge_calls": _d(40, 0, 80.0),
        "judge_cached": _d(40, 0, 0.0),
        "judge_prompt_tokens": _d(0, 40, None),
        "judge_completion_tokens": _d(0, 40, None),
    },
}
CTX = CardContext(benchmark="arith", infra_policy="as incorrect", backend="docker")
PRICES = {
    "currency": "USD",
    "per_container_second": 0.001,
    "per_million_prompt_tokens": 0.5,
    "per_million_completion_tokens": None,
    "per_judge_call": 0.002,
}


def test_drivers_without_prices():
    card = evaluation_card({**GOOD, "costs": COSTS}, CTX)
    costs = card["costs"]
    assert costs["prices"] is None and costs["estimate"] is None
    assert costs["drivers"]["prompt_tokens"]["missing"] == 4
    rows = dict(card_rows(card))
    assert rows["Cost drivers"] == (
        "per trial attempt (mean of 40): container seconds 2.5; prompt tokens 200,000 "
        "(not reported by 4 of 40); completion tokens 10,000 (not reported by 4 of 40); "
        "model calls 2 (not reported by 4 of 40); judge calls 2; judge samples from the "
        "cache 0; judge prompt tokens not reported; judge completion tokens not reported"
    )
    assert rows["Cost"] == "not priced (no prices in the config section prices)"
    assert "| Cost drivers | per trial attempt (mean of 40): " in card_markdown(card)


def test_cost_with_prices_is_a_lower_bound_when_drivers_are_missing():
    card = evaluation_card({**GOOD, "costs": COSTS}, dataclasses.replace(CTX, prices=PRICES))
    est = card["costs"]["estimate"]
    # per trial: 2.5 s × 0.001 + 200 000 × 0.5/1M + 2 calls × 0.002
    assert est["per_trial"] == pytest.approx(0.0025 + 0.1 + 0.004)
    # total: 100 s × 0.001 + 7.2 M × 0.5 + 80 × 0.002 — the 4 trials without tokens
    # are not priced: a lower bound, not 40 × per trial
    assert est["total"] == pytest.approx(0.1 + 3.6 + 0.16)
    assert not est["complete"] and est["missing"] == {"prompt_tokens": 4}
    assert card["costs"]["prices"]["per_million_completion_tokens"] is None  # not priced
    assert dict(card_rows(card))["Cost"] == (
        "per trial attempt 0.106 USD; total at least 3.86 USD over 40 attempts; prices: "
        "container seconds 0.001 each, prompt tokens 0.5 per 1M, judge calls 0.002 each; "
        "not priced where not reported (total is a lower bound): prompt tokens missing in "
        "4 of 40"
    )


def test_complete_drivers_give_n_times_the_cost_per_trial():
    full = {"trials": 4, "drivers": {"container_seconds": _d(4, 0, 10.0)}}
    prices = {"currency": "EUR", "per_container_second": 0.5, "per_judge_call": 1.0}
    card = evaluation_card({**GOOD, "costs": full}, dataclasses.replace(CTX, prices=prices))
    est = card["costs"]["estimate"]
    assert (est["per_trial"], est["total"], est["complete"]) == (1.25, 5.0, True)
    assert est["not_applicable"] == ["per_judge_call"]  # no LLM judge: nothing to price
    text = dict(card_rows(card))["Cost"]
    assert text.startswith("per trial attempt 1.25 EUR; total 5.00 EUR over 4 attempts")
    assert text.endswith("per_judge_call not applied: no LLM judge scored these trials")
    assert "no LLM judge" in dict(card_rows(card))["Cost drivers"]


def test_unknown_drivers_and_old_inputs():
    nobody = {"trials": 3, "drivers": {"prompt_tokens": _d(0, 3, None)}}
    ctx = dataclasses.replace(CTX, prices={"per_million_prompt_tokens": 1.0})
    text = dict(card_rows(evaluation_card({**GOOD, "costs": nobody}, ctx)))["Cost"]
    assert text.startswith("per trial attempt unknown; total unknown over 3 attempts")
    rows = dict(card_rows(evaluation_card(GOOD, ctx)))  # a record from before cost accounting
    assert rows["Cost drivers"] == "not recorded (these results predate cost accounting)"
    assert rows["Cost"] == "not computable: no cost drivers recorded"


def test_cost_rows_are_not_struck_on_an_invalid_card():
    health = {"valid": False, "reasons": ["every trial crashed"], "expected": False}
    card = evaluation_card({**GOOD, "costs": COSTS, "health": health}, CTX)
    md = card_markdown(card)
    assert card["valid"] is False
    assert "| Cost drivers | per trial attempt" in md and "~~per trial" not in md


def test_a_negative_price_is_refused_naming_the_key():
    with pytest.raises(ValueError, match=r"config key prices\.per_judge_call: -1"):
        dataclasses.replace(CTX, prices={"per_judge_call": -1})


def test_report_shows_costs_on_cards_and_index(tmp_path):
    groups = [{**GOOD, "costs": COSTS}]
    build_report(tmp_path / "plain", ReportInputs.of(groups=groups, card_context=CTX))
    index = (tmp_path / "plain" / "index.html").read_text(encoding="utf-8")
    assert "<th>Cost drivers</th>" in index and 'class="cost"' not in index
    build_report(
        tmp_path / "priced",
        ReportInputs.of(groups=groups, card_context=dataclasses.replace(CTX, prices=PRICES)),
    )
    index = (tmp_path / "priced" / "index.html").read_text(encoding="utf-8")
    assert '<tr class="cost"><td></td><td>cost: per trial attempt 0.106 USD; total' in index
    card = (tmp_path / "priced" / "cards").glob("*.md")
    assert "total at least 3.86 USD" in next(card).read_text(encoding="utf-8")
