"""The judge's reply parser and template handling (pure functions, table-driven)."""

from __future__ import annotations

import pytest

from evalnoise.scorers.judge import (
    DEFAULT_TEMPLATE,
    JudgeResult,
    agreement,
    cache_key,
    parse_decision,
    render_template,
    template_hash,
)

REPLIES = [
    ("Explanation: same number.\nDecision: TRUE", True),
    ("Explanation: differs.\nDecision: FALSE", False),
    ('"Explanation:" the same\n"Decision:" ("TRUE")', True),
    ("**Explanation:** off by one\n**Decision:** FALSE", False),
    ("Decision: true", True),
    ("decision - False.", False),
    ("### Decision\n\n**TRUE**", True),
    ("Decision: FALSE\nOn reflection they match.\nDecision: TRUE", True),  # last line wins
    ("My decision is TRUE", True),
    ("`Decision: FALSE`", False),
    ("TRUE", True),
    ('"FALSE".', False),
    # unusable: no decision, both verdicts, prose that merely mentions a decision
    ("The answers match.", None),
    ('If they are the same, reply "Decision: TRUE". If they differ, reply "Decision: FALSE"', None),
    ('"Decision:" ("TRUE" or "FALSE")', None),
    ("In a decision-making process the correct answer is FALSE.", None),
    ("Decision:\nI cannot tell.", None),
    ("", None),
]


@pytest.mark.parametrize(("reply", "expected"), REPLIES)
def test_parse_decision(reply, expected):
    verdict, _explanation, problem = parse_decision(reply)
    assert verdict is expected
    assert (problem == "") is (expected is not None)


def test_explanation_is_extracted():
    _, explanation, _ = parse_decision("Intro.\nExplanation: both say 936.\nMore.\nDecision: TRUE")
    assert explanation == "both say 936.\nMore."


def test_render_substitutes_only_the_three_variables_once():
    template = "Q={question} P={predicted_answer} T={target} {other} {json: 1}"
    out = render_template(template, question="{target}", predicted_answer="p", target="t")
    assert out == "Q={target} P=p T=t {other} {json: 1}"


def test_default_template_is_appendix_b():
    for placeholder in ("{question}", "{predicted_answer}", "{target}"):
        assert DEFAULT_TEMPLATE.count(placeholder) == 1
    assert '"Decision:" ("TRUE" or "FALSE")' in DEFAULT_TEMPLATE
    assert DEFAULT_TEMPLATE.startswith("===Task===")


def test_template_hash_is_stable_and_sensitive():
    # pinned: a change to the default prompt or the parser version must be deliberate
    # (parser version 2: structured verdicts and the extract mode)
    assert template_hash() == "9da3c7be82ada099de843c4aa1628e02a4a9f1bd920761bcd76e7d1caf06b15c"
    assert template_hash(DEFAULT_TEMPLATE + " ") != template_hash()
    k = cache_key("m", template_hash(), "q", "t", "p")
    assert k != cache_key("m2", template_hash(), "q", "t", "p")
    assert k != cache_key("m", template_hash(), "q", "t", "p ")
    assert len(k) == 64


def test_agreement_summary():
    results = [
        JudgeResult(True, "ok", "", votes=(True, True, True)),
        JudgeResult(True, "ok", "", votes=(True, False, True)),
        JudgeResult(None, "judge_error", "", votes=(True, None, False)),
        JudgeResult(None, "judge_error", "", votes=(None, None, True)),
    ]  # 1 parsed
    summary = agreement(results)
    assert summary.samples == 3 and summary.n_items == 3
    assert summary.parse_rate == pytest.approx(9 / 12)
    assert summary.pairwise == pytest.approx((1 + 1 / 3 + 0) / 3)
    assert summary.modal == pytest.approx((1 + 2 / 3 + 1 / 2) / 3)
    assert summary.unanimous == pytest.approx(1 / 3)
    empty = agreement([JudgeResult(True, "ok", "", votes=(True,))])
    assert empty.n_items == 0
