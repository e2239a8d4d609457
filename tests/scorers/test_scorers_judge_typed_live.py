"""The extracting judge with the answer schema that follows the reference's type, against a
real llama-cpp-python server (SmolLM2-135M): every structured reply fits its schema, a
number's extraction is short and agrees with the truth, choices stay in their enum, free
text stays within its bound. Replies in the agents' own phrasings (the ``chat`` agent's
equations and rambling included); the truth of each is known by construction.
"""

from __future__ import annotations

import random

import numpy as np

from evalnoise.models import ChatClient
from evalnoise.scorers import LLMJudge
from evalnoise.scorers.answer_types import answer_spec
from evalnoise.scorers.judge import OK
from evalnoise.stats import judge_agreement

#: How the agents phrase a final number (seen in real trials of `chat` and `tool_agent`).
PHRASES = (
    "{a}",
    "The answer is {a}.",
    "{x} + {y} = {a}",
    "Let me compute: first {x}, then {y}. So the result is {a}.",
    "{a}. This is the result of adding the two numbers.",
    "To solve this, we add {x} and {y}, which equals {a}.",
)


def _number_items(n: int = 24, seed: int = 1):
    rng = random.Random(seed)
    items = []
    for i in range(n):
        x, y = rng.randint(2, 99), rng.randint(2, 99)
        target = x + y
        right = i % 2 == 0
        given = target if right else target + rng.choice([-3, -1, 1, 2, 10])
        phrase = PHRASES[i % len(PHRASES)].format(a=given, x=x, y=y)
        items.append((f"What is {x} + {y}?", phrase, str(target), right))
    return items


def _judge(server, **kwargs) -> LLMJudge:
    client = ChatClient(server.base_url, server.model, timeout=120)
    kwargs.setdefault("max_tokens", 16)
    return LLMJudge(client, mode="extract", structured="json_object_schema", **kwargs)


def _answers(result) -> list[str]:
    import json

    return [json.loads(r)["answer"] for r in result.replies]


def test_a_number_is_extracted_as_digits_only(llama_server):
    judge = _judge(llama_server)
    items = _number_items()
    results = [judge.judge(q, p, t) for q, p, t, _ in items]
    assert [r.status for r in results] == [OK] * len(items)
    for (_, _, target, _), r in zip(items, results, strict=True):
        spec = answer_spec(target)
        assert all(spec.admits(a) for a in _answers(r)), r.replies
        # a few tokens, within the budget the schema sets: never cut short, never rambling
        assert r.completion_tokens < spec.reply_tokens
    verdicts = np.array([float(r.correct) for r in results])
    truth = np.array([float(right) for *_, right in items])
    agreement = judge_agreement(verdicts, truth)
    print(
        f"\nnumbers: kappa {agreement.kappa:.2f}, false accept {agreement.false_accept_rate:.2f}, "
        f"false reject {agreement.false_reject_rate:.2f}"
    )
    assert agreement.kappa >= 0.6
    assert agreement.false_accept_rate <= 0.1


def test_a_choice_stays_in_its_enum(llama_server):
    judge = _judge(llama_server)
    question = "Which is a prime number? (A) 4 (B) 7 (C) 9 (D) 15"
    replies = [
        ("The answer is (B) 7, because 7 has no divisors but 1 and itself.", "B"),
        ("B", "B"),
        ("I would say A, since 4 is small.", "B"),
        ("Option C: 9 is prime.", "B"),
    ]
    results = [judge.judge(question, p, t) for p, t in replies]
    assert [r.status for r in results] == [OK] * len(replies)
    for r in results:
        assert all(a in ("A", "B", "C", "D") for a in _answers(r)), r.replies
    # the bare letter is read as itself
    assert results[1].correct is True


def test_yes_no_and_free_text_stay_in_their_schema(llama_server):
    judge = _judge(llama_server, max_tokens=48)
    yes = judge.judge("Is 7 prime?", "Yes, 7 is a prime number.", "yes")
    assert yes.status == OK and _answers(yes)[0] in ("yes", "no")
    text = judge.judge(
        "Who wrote Hamlet?",
        "Hamlet was written by William Shakespeare around 1600, in London.",
        "William Shakespeare",
    )
    assert text.status == OK
    bound = answer_spec("William Shakespeare").answer["maxLength"]
    assert all(1 <= len(a) <= bound for a in _answers(text))
