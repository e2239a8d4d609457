"""A judge's reply read: the decision (or the extracted answer) from plain text or from a
structured JSON reply, and the ``response_format`` that asks a server for the structured one.

Plain text is read by :func:`parse_decision` (the paper's "Decision: TRUE/FALSE" lines, with
the noise small models add); a structured reply by :func:`parse_structured` against the
mode's schema (:data:`VERDICT_SCHEMA`, :data:`EXTRACT_SCHEMA`, or the answer's own from
:func:`evalnoise.scorers.answer_types.answer_spec`). A reply that cannot be read gives a
problem, never a verdict. :mod:`evalnoise.scorers.judge` asks, and re-exports these.
"""

from __future__ import annotations

import json
import re

from evalnoise.scorers.answer_types import AnswerSpec, answer_spec

__all__ = [
    "EXTRACT_SCHEMA",
    "STRUCTURED_FORMS",
    "VERDICT_SCHEMA",
    "parse_decision",
    "parse_structured",
    "response_format",
]

#: The form of a verdict: a short explanation first (the template asks for it first), then
#: the decision. ``maxLength`` keeps a small model from running out of tokens mid-string.
VERDICT_SCHEMA = {
    "type": "object",
    "properties": {
        "explanation": {"type": "string", "maxLength": 160},
        "decision": {"type": "string", "enum": ["TRUE", "FALSE"]},
    },
    "required": ["explanation", "decision"],
}

#: The reply's form for a free-text answer; a number's or a choice's is tighter
#: (:func:`evalnoise.scorers.answer_types.answer_spec`).
EXTRACT_SCHEMA = answer_spec("free text answer").schema
#: how a structured reply is requested: llama.cpp's ``json_object`` + ``schema``, the
#: OpenAI ``json_schema`` form, or none (plain text, parsed by :func:`parse_decision`)
STRUCTURED_FORMS = ("json_object_schema", "json_schema", "text")
_DECISION_FIELD = re.compile(r'"decision"\s*:\s*"(TRUE|FALSE)"')

_NOISE = re.compile(r"[*_`#>\"'“”‘’()\[\]{}|]")
# "Decision:", "Decision =", "Decision - X", "Decision TRUE", "Decision is FALSE", or a
# "Decision" heading alone; not prose such as "decision-making" or "this decision".
_MARKER = re.compile(
    r"\bdecision\b(?:\s*[:=]|\s+[-–—](?=\s)|(?=\s+(?:is\s+)?(?:true|false)\b)|\s*$)", re.IGNORECASE
)
_VERDICT = re.compile(r"\b(true|false)\b", re.IGNORECASE)
_EXPLANATION = re.compile(r"\bexplanation\b\s*[:=\-–—]\s*", re.IGNORECASE)


def _verdicts(text: str) -> set[str]:
    return {m.group(1).upper() for m in _VERDICT.finditer(text)}


def parse_decision(reply: str) -> tuple[bool | None, str, str]:
    """Read a judge reply. Returns ``(verdict, explanation, problem)``.

    ``verdict`` is True/False, or None when the reply has no usable decision; then
    ``problem`` says why (else it is ``""``). ``explanation`` is the text of the last
    ``Explanation:`` section before the decision, or the reply itself.
    """
    lines = reply.splitlines()
    clean = [_NOISE.sub(" ", line) for line in lines]
    marker_rows = [i for i, line in enumerate(clean) if _MARKER.search(line)]
    explanation = _explanation(lines, clean, marker_rows[-1] if marker_rows else len(lines))
    if not marker_rows:
        whole = " ".join(" ".join(clean).split()).strip(" .!:").upper()
        if whole in ("TRUE", "FALSE"):
            return whole == "TRUE", explanation, ""
        return None, explanation, "no Decision line in the reply"
    row = marker_rows[-1]
    # everything after the line's first marker: an echoed 'reply "Decision: TRUE" … reply
    # "Decision: FALSE"' names both verdicts and is ambiguous
    found = _verdicts(clean[row][_MARKER.search(clean[row]).end() :])
    if not found:
        # "### Decision" with the verdict alone on the next non-empty line
        for nxt in clean[row + 1 :]:
            if nxt.strip():
                rest = nxt.strip(" .!:\t").upper()
                if rest in ("TRUE", "FALSE"):
                    found = {rest}
                break
    if len(found) == 1:
        return found.pop() == "TRUE", explanation, ""
    if not found:
        return None, explanation, "the last Decision line has no TRUE or FALSE"
    return None, explanation, "the last Decision line names both TRUE and FALSE"


def _explanation(lines: list[str], clean: list[str], stop: int) -> str:
    start = None
    for i in range(min(stop, len(lines)) - 1, -1, -1):
        m = _EXPLANATION.search(clean[i])
        if m:
            start = i
            break
    if start is None:
        text = "\n".join(lines).strip()
    else:
        first = clean[start][_EXPLANATION.search(clean[start]).end() :]
        text = "\n".join([first, *lines[start + 1 : stop]]).strip()
    return text[:2000]


def parse_structured(
    reply: str, mode: str = "verdict", spec: AnswerSpec | None = None
) -> tuple[object, str, str]:
    """Read a structured reply. Returns ``(value, explanation, problem)``.

    ``verdict`` mode: ``value`` is True/False from ``{"decision": "TRUE"|"FALSE"}``; a
    reply cut short before its JSON closed still counts if its ``decision`` field is
    complete. ``extract`` mode: ``value`` is the ``answer`` string, which must fit the
    answer schema ``spec`` when one is given. ``value`` is None when the reply does not
    have the required form; ``problem`` then says why.
    """
    try:
        # strict=False: a raw newline inside a string is a small model's slip, not a new form
        data = json.loads(reply, strict=False)
    except json.JSONDecodeError:
        data = None
    if mode == "extract":
        if isinstance(data, dict) and isinstance(data.get("answer"), str):
            answer = data["answer"].strip()
            if spec is not None and not spec.admits(answer):
                return None, reply[:2000], f"the answer {answer!r} is not a {spec.kind} answer"
            return answer, f"extracted answer: {answer!r}", ""
        return None, reply[:2000], "the reply is not a JSON object with a string 'answer'"
    if isinstance(data, dict):
        decision = data.get("decision")
        explanation = data.get("explanation")
        explanation = explanation if isinstance(explanation, str) else ""
        if decision in ("TRUE", "FALSE"):
            return decision == "TRUE", explanation[:2000], ""
        return None, explanation[:2000], f"'decision' is {decision!r}, not TRUE or FALSE"
    found = _DECISION_FIELD.findall(reply)
    if len(set(found)) == 1:
        return found[0] == "TRUE", reply[:2000], ""
    return None, reply[:2000], "the reply is not a JSON verdict"


def response_format(form: str, mode: str = "verdict", schema: dict | None = None) -> dict | None:
    """The ``response_format`` of a request in structured ``form`` (None for ``text``);
    ``schema`` defaults to the mode's (:data:`VERDICT_SCHEMA`, :data:`EXTRACT_SCHEMA`)."""
    if schema is None:
        schema = VERDICT_SCHEMA if mode == "verdict" else EXTRACT_SCHEMA
    if form == "json_object_schema":
        return {"type": "json_object", "schema": schema}
    if form == "json_schema":
        return {
            "type": "json_schema",
            "json_schema": {"name": f"evalnoise_{mode}", "schema": schema, "strict": True},
        }
    return None
