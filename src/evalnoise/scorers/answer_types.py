"""What kind of answer a task expects, read off its reference answer: the judge's schema.

An extracting judge (:class:`evalnoise.scorers.judge.LLMJudge` in ``extract`` mode) asks
the model to read the final answer out of a reply, constrained by a JSON schema. How
tightly the schema fits the answer decides how good a small model is at it: measured with
SmolLM2-135M on 60 arithmetic replies, a digits-only answer (``"pattern":
"^-?[0-9]{1,6}$"``) agreed with the truth at κ 0.80 with no false accept, where a free
string let the model ramble to the token limit (docs/measurements.md, "Small judges"). So the schema
follows the reference's type, decided per task by :func:`answer_spec`:

``number``
    The reference, stripped, is a plain number: an optional sign, digits (optionally with
    thousands separators, ``1,234``) and an optional decimal part — ``936``, ``-12``,
    ``3.25``, ``.5``. The answer is a string of digits, ``^-?[0-9]{1,W}$`` with
    W = max(6, integer digits of the reference + 2); a reference with a decimal part also
    allows ``(\\.[0-9]{1,D})?``, D = max(2, its decimals + 2). Compared with the ``numeric``
    scorer. (A reference with a unit, a percent sign, a fraction or a scale word is
    ``text``: a digits-only answer could not say it.)
``choice``
    The reference is one letter, optionally in parentheses or followed by ``.`` or ``)``
    (``B``, ``(c)``), or one of yes/no, true/false. Letters: the options are the labels
    the question lists (``(A) …``, ``A) …``, ``A. …``, ``A: …`` at the start of a line or
    after a space) when the reference is among at least two of them, else A to the
    reference's letter (at least A–D). The answer is an ``enum`` of those labels (upper
    case; yes/no and true/false in lower case); compared as labels, ignoring case and
    parentheses.
``text``
    Anything else. The answer is a bounded string, ``minLength`` 1, ``maxLength``
    L = min(200, max(24, 2 × the reference's length + 8)). Compared with the ``exact``
    scorer (normalised text equality).

The schema never offers an empty answer (an easy way out for a small model), and the
prompts (:data:`EXTRACT_TEMPLATES`) hold no placeholder or example answer the model could
copy into its reply. The length bounds depend on the reference's length only, not on its
content. Since the schema bounds the reply, it also says how many tokens the longest
admissible reply needs (:attr:`AnswerSpec.reply_tokens`): the judge never asks for fewer, so
no reply is cut short of its closing brace (a cut reply would be unparseable, and at a fixed
seed unparseable again on every rerun).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "ANSWER_KINDS",
    "EXTRACT_TEMPLATES",
    "REPLY_OVERHEAD",
    "SCHEMA_VERSION",
    "AnswerSpec",
    "answer_spec",
    "same_choice",
]

ANSWER_KINDS = ("number", "choice", "text")

#: Bumped whenever :func:`answer_spec` changes a schema: part of the judge's template hash,
#: so a cached extraction made under another schema is not reused.
SCHEMA_VERSION = "1"

#: The default extraction prompt per answer kind; ``{predicted_answer}`` is the reply.
EXTRACT_TEMPLATES = {
    "number": (
        "Extract the final answer from the response below. Reply with the answer only.\n"
        "\nResponse: {predicted_answer}\n"
    ),
    "choice": (
        "Which option does the response below give as its final answer? Reply with the "
        "option only.\n\nResponse: {predicted_answer}\n"
    ),
    "text": (
        "Extract the final answer from the response below. Reply with the answer only.\n"
        "\nResponse: {predicted_answer}\n"
    ),
}

#: Tokens of a structured reply besides its answer's characters: ``{"answer": "`` and
#: ``"}`` took 10–11 with SmolLM2's tokenizer; the rest is room for the whitespace the JSON
#: grammar allows.
REPLY_OVERHEAD = 16

_NUMBER = re.compile(r"[-+\u2212]?(?P<int>\d{1,3}(?:,\d{3})+|\d+)?(?:\.(?P<frac>\d+))?")
_LETTER = re.compile(r"\(?([A-Za-z])\)?[.)]?")
_PAIRS = ({"yes", "no"}, {"true", "false"})
# "(A) text", "A) text", "A. text", "A: text" at a line start or after whitespace
_OPTION = re.compile(r"(?:^|(?<=\s))\(?([A-Z])(?:\)|\.|:)\s", re.MULTILINE)


@dataclass(frozen=True)
class AnswerSpec:
    """The kind of a task's answer and the JSON schema of the judge's extraction.

    ``schema`` is the reply's schema, ``{"answer": <answer schema>}``; ``choices`` the
    labels of a ``choice`` answer (empty otherwise).
    """

    kind: str
    answer: dict[str, Any]
    choices: tuple[str, ...] = field(default=())
    #: characters of the longest answer the schema admits
    longest: int = 0

    @property
    def reply_tokens(self) -> int:
        """A reply budget that fits the longest admissible reply: :data:`REPLY_OVERHEAD`
        tokens for the JSON around the answer, plus one a character (SmolLM2 writes a
        number digit by digit: ``{"answer": "242017"}`` took 17 tokens)."""
        return REPLY_OVERHEAD + self.longest

    @property
    def schema(self) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {"answer": self.answer},
            "required": ["answer"],
        }

    def admits(self, value: str) -> bool:
        """Whether ``value`` fits the answer schema (a server that failed to apply the
        schema answers with unconstrained JSON: that reply is not read as an answer)."""
        if self.kind == "choice":
            return value in self.choices
        if not 1 <= len(value) <= self.answer.get("maxLength", len(value)):
            return False
        pattern = self.answer.get("pattern")
        return pattern is None or re.fullmatch(pattern, value) is not None


def answer_spec(target: str, question: str = "") -> AnswerSpec:
    """The :class:`AnswerSpec` of a task from its reference answer ``target`` (and, for
    lettered choices, the options its ``question`` lists); the rules are the module's."""
    ref = target.strip()
    number = _NUMBER.fullmatch(ref)
    if number and (number.group("int") or number.group("frac")):
        digits = max(6, len((number.group("int") or "0").replace(",", "")) + 2)
        pattern = f"-?[0-9]{{1,{digits}}}"
        longest = 1 + digits
        if number.group("frac"):
            decimals = max(2, len(number.group("frac")) + 2)
            pattern += f"(\\.[0-9]{{1,{decimals}}})?"
            longest += 1 + decimals
        return AnswerSpec("number", {"type": "string", "pattern": f"^{pattern}$"}, (), longest)
    lower = ref.lower()
    for pair in _PAIRS:
        if lower in pair:
            choices = tuple(sorted(pair, reverse=True))  # yes/no, true/false
            return AnswerSpec("choice", {"type": "string", "enum": list(choices)}, choices, 5)
    letter = _LETTER.fullmatch(ref)
    if letter:
        label = letter.group(1).upper()
        listed = sorted(set(_OPTION.findall(question)))
        if len(listed) >= 2 and label in listed:
            choices = tuple(listed)
        else:
            last = max(ord(label), ord("D"))
            choices = tuple(chr(c) for c in range(ord("A"), last + 1))
        return AnswerSpec("choice", {"type": "string", "enum": list(choices)}, choices, 1)
    bound = min(200, max(24, 2 * len(ref) + 8))
    return AnswerSpec("text", {"type": "string", "minLength": 1, "maxLength": bound}, (), bound)


def _label(value: str) -> str:
    return value.strip().strip("().").strip().lower()


def same_choice(answer: str, target: str) -> bool:
    """Whether two choice labels are the same, ignoring case, spaces and ``( ) .``."""
    return _label(answer) == _label(target)
