"""The answer schema follows the reference's type (pure functions, table-driven + properties)."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalnoise.scorers.answer_types import (
    ANSWER_KINDS,
    EXTRACT_TEMPLATES,
    answer_spec,
    same_choice,
)
from evalnoise.scorers.judge import (
    EXTRACT_SCHEMA,
    LLMJudge,
    judge_hash,
    parse_structured,
    response_format,
)

KINDS = [
    ("936", "", "number", "^-?[0-9]{1,6}$"),
    ("-12", "", "number", "^-?[0-9]{1,6}$"),
    ("+7", "", "number", "^-?[0-9]{1,6}$"),
    ("12345678", "", "number", "^-?[0-9]{1,10}$"),
    ("1,234,567", "", "number", "^-?[0-9]{1,9}$"),
    ("3.25", "", "number", "^-?[0-9]{1,6}(\\.[0-9]{1,4})?$"),
    (".5", "", "number", "^-?[0-9]{1,6}(\\.[0-9]{1,3})?$"),
    (" 42 ", "", "number", "^-?[0-9]{1,6}$"),
    # a unit, a percent, a fraction, a scale word: not digits only
    ("50%", "", "text", None),
    ("3/4", "", "text", None),
    ("$12", "", "text", None),
    ("3.5 million", "", "text", None),
    ("12 kg", "", "text", None),
    ("Paris", "", "text", None),
    ("William Shakespeare", "", "text", None),
]


@pytest.mark.parametrize(("target", "question", "kind", "pattern"), KINDS)
def test_the_kind_and_pattern_follow_the_reference(target, question, kind, pattern):
    spec = answer_spec(target, question)
    assert spec.kind == kind
    assert spec.answer.get("pattern") == pattern
    assert spec.schema["required"] == ["answer"]
    if kind == "text":
        assert spec.answer["minLength"] == 1
        assert spec.answer["maxLength"] == min(200, max(24, 2 * len(target.strip()) + 8))


CHOICES = [
    ("B", "Pick one: (A) red (B) green (C) blue", ("A", "B", "C")),
    ("(b)", "Pick one:\nA) red\nB) green\nC) blue\nD) pink\nE) grey", ("A", "B", "C", "D", "E")),
    ("C.", "Options: A. one  B. two  C. three", ("A", "B", "C")),
    ("B", "What letter follows A?", ("A", "B", "C", "D")),
    ("F", "Choose.", ("A", "B", "C", "D", "E", "F")),
    # the reference is not among the listed labels: the default range
    ("E", "(A) x (B) y", ("A", "B", "C", "D", "E")),
    ("Yes", "Is 7 prime?", ("yes", "no")),
    ("false", "Is 8 prime?", ("true", "false")),
]


@pytest.mark.parametrize(("target", "question", "choices"), CHOICES)
def test_a_choice_is_an_enum_of_the_listed_labels(target, question, choices):
    spec = answer_spec(target, question)
    assert spec.kind == "choice"
    assert spec.choices == choices
    assert spec.answer == {"type": "string", "enum": list(choices)}
    assert same_choice(
        next(c for c in choices if same_choice(c, target)),
        target,
    )


def test_same_choice_ignores_case_spaces_and_brackets():
    assert same_choice("b", "(B)") and same_choice(" C. ", "c") and same_choice("Yes", "yes")
    assert not same_choice("A", "B") and not same_choice("no", "yes")


def test_no_schema_offers_an_empty_answer_and_no_prompt_a_placeholder():
    for target in ("936", "3.25", "B", "yes", "Paris"):
        spec = answer_spec(target, "(A) a (B) b")
        assert not spec.admits("")
    for kind in ANSWER_KINDS:
        text = EXTRACT_TEMPLATES[kind]
        # the reply is the only variable; no example answer, no "<number>", no JSON to copy
        assert re.findall(r"\{(\w+)\}", text) == ["predicted_answer"]
        assert "<" not in text and '"answer"' not in text


def test_the_reply_budget_fits_the_longest_answer():
    """``{"answer": "242017"}`` took SmolLM2 17 tokens: a budget of 16 cut it short."""
    assert answer_spec("3675").reply_tokens == 16 + 1 + 6  # sign and six digits
    assert answer_spec("12345678").reply_tokens == 16 + 1 + 10
    assert answer_spec("3.25").reply_tokens == 16 + 1 + 6 + 1 + 4
    assert answer_spec("B").reply_tokens == 17
    assert answer_spec("Paris").reply_tokens == 16 + 24


def test_admits_is_the_schema():
    number = answer_spec("936")
    assert number.admits("936") and number.admits("-12") and number.admits("123456")
    assert not number.admits("1234567") and not number.admits("936 apples")
    assert not number.admits("9.5")
    decimal = answer_spec("3.25")
    assert decimal.admits("3.25") and decimal.admits("3") and not decimal.admits("3.")
    choice = answer_spec("B", "(A) a (B) b (C) c")
    assert choice.admits("B") and not choice.admits("D") and not choice.admits("b")
    text = answer_spec("Paris")
    assert text.admits("Paris") and not text.admits("x" * 25)


@given(st.integers(min_value=-(10**12), max_value=10**12))
def test_every_integer_reference_fits_its_own_schema(value):
    spec = answer_spec(str(value))
    assert spec.kind == "number"
    assert spec.admits(str(value))
    assert spec.admits(str(abs(value)))


@given(st.text(min_size=1, max_size=300).filter(lambda t: t.strip()))
def test_every_reference_has_a_kind_and_a_closed_schema(target):
    spec = answer_spec(target)
    assert spec.kind in ANSWER_KINDS
    json.dumps(spec.schema)  # a JSON schema the server can take
    if spec.kind == "text":
        assert 24 <= spec.answer["maxLength"] <= 200


def test_structured_replies_are_read_against_the_schema():
    spec = answer_spec("936")
    assert parse_structured('{"answer": "936"}', "extract", spec)[0] == "936"
    value, _, problem = parse_structured('{"answer": "936 apples"}', "extract", spec)
    assert value is None and "not a number answer" in problem
    # without a spec (the text form of old), any string answer is read
    assert parse_structured('{"answer": "936 apples"}', "extract")[0] == "936 apples"


def test_the_request_carries_the_answer_schema():
    spec = answer_spec("B", "(A) a (B) b")
    fmt = response_format("json_object_schema", "extract", spec.schema)
    assert fmt == {"type": "json_object", "schema": spec.schema}
    assert response_format("json_object_schema", "extract")["schema"] == EXTRACT_SCHEMA


def test_the_hash_covers_the_prompts_and_the_schema_version(monkeypatch):
    import evalnoise.scorers.judge_template as template_module

    extract = judge_hash(None, "extract")
    assert extract != judge_hash(None, "verdict")
    assert judge_hash("Read {predicted_answer}", "extract") != extract
    monkeypatch.setattr(template_module, "SCHEMA_VERSION", "999")
    assert judge_hash(None, "extract") != extract


def test_a_custom_template_serves_every_kind():
    from evalnoise.models import ChatClient

    client = ChatClient("http://127.0.0.1:9/v1", "m")
    judge = LLMJudge(client, mode="extract", template="Answer in {predicted_answer}")
    assert set(judge.templates.values()) == {"Answer in {predicted_answer}"}
    default = LLMJudge(client, mode="extract")
    assert default.templates == EXTRACT_TEMPLATES
    with pytest.raises(ValueError, match="predicted_answer"):
        LLMJudge(client, mode="extract", template="no reply here")
