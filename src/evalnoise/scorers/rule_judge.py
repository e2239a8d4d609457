"""Rule-based judges: a fixed rule reads the answer out of a reply, no model.

A level of the judge facet beside the LLM judges (config ``scorer.judge.judges``): it costs nothing,
never fails, and is deterministic (one vote per trial). Measured on 60 arithmetic replies
(docs/measurements.md, "Small judges"), the last number in the reply was right on 0.95 of them,
better than SmolLM2-135M extracting (0.90).

Rules
-----
``last_number``
    The last number in the reply (:func:`evalnoise.scorers.deterministic.parse_numbers`),
    compared with the reference by the ``numeric`` scorer (its ``rel_tol``/``abs_tol``).
    A reply without a number is incorrect. This *is* the ``numeric`` reference scorer with
    ``pick: last``: against that reference it agrees by construction (the judge stage says
    so, :func:`same_as_reference`).
``last_choice``
    The last standalone label of the reference's choices in the reply (a letter, or yes/no,
    true/false; :func:`evalnoise.scorers.answer_types.answer_spec`), compared as labels. A
    reply naming none is incorrect.

A rule judges only references of its kind (a number, a choice): any other trial is
``not_applicable`` (no verdict; not sent, not unjudged), as infrastructure outcomes are
``skipped_infra``. Empty replies and infrastructure outcomes are treated exactly as by the
LLM judge (:class:`evalnoise.scorers.judge.LLMJudge`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from evalnoise.schema import INFRA_STATUSES
from evalnoise.scorers.answer_types import answer_spec, same_choice
from evalnoise.scorers.deterministic import numeric
from evalnoise.scorers.verdicts import (
    NO_PREDICTION,
    NOT_APPLICABLE,
    OK,
    SKIPPED_INFRA,
    JudgeResult,
)

__all__ = ["NOT_APPLICABLE", "RULES", "RuleJudge", "same_as_reference"]

RULES = ("last_number", "last_choice")
_KIND = {"last_number": "number", "last_choice": "choice"}


class RuleJudge:
    """A judge that applies ``rule`` (one of :data:`RULES`); the interface of
    :class:`~evalnoise.scorers.judge.LLMJudge` that :func:`evalnoise.scorers.score_trials`
    uses (``judge``, ``model``, ``calls``, ``close``)."""

    def __init__(self, rule: str, *, numeric_options: Mapping[str, Any] | None = None) -> None:
        if rule not in RULES:
            raise ValueError(f"judge rule must be one of {RULES}, not {rule!r}")
        self.rule = rule
        self.numeric_options = {
            k: v for k, v in dict(numeric_options or {}).items() if k in ("rel_tol", "abs_tol")
        }
        #: judge calls that reached a model: never any
        self.calls = 0

    @property
    def model(self) -> str:
        return f"rule:{self.rule}"

    def judge(
        self, question: str, prediction: str | None, target: str, *, status: str = "ok"
    ) -> JudgeResult:
        """Judge one answer. ``status`` is the trial's status: infra outcomes are skipped."""
        if status in INFRA_STATUSES:
            return JudgeResult(
                None, SKIPPED_INFRA, f"infrastructure outcome {status!r}: not judged"
            )
        spec = answer_spec(target, question)
        if spec.kind != _KIND[self.rule]:
            return JudgeResult(
                None,
                NOT_APPLICABLE,
                f"rule {self.rule} reads a {_KIND[self.rule]}; the reference is {spec.kind}",
            )
        if prediction is None or not prediction.strip():
            return JudgeResult(
                False, NO_PREDICTION, "empty prediction: incorrect without judging", score=0.0
            )
        if self.rule == "last_number":
            match = numeric(prediction, target, pick="last", **self.numeric_options)
            verdict, explanation = match.correct, f"last number: {match.explanation}"
        else:
            found = _last_label(prediction, spec.choices)
            verdict = found is not None and same_choice(found, target)
            explanation = f"last choice: {found!r} vs {target.strip()!r}"
        return JudgeResult(verdict, OK, explanation, votes=(verdict,), score=float(verdict))

    def close(self) -> None:
        """Nothing to release (the LLM judge's interface)."""


def _last_label(text: str, choices: tuple[str, ...]) -> str | None:
    """The last of ``choices`` standing alone in ``text`` (a letter case-sensitively, as a
    label is written; yes/no and true/false in any case)."""
    words = [c for c in choices if len(c) > 1]
    letters = [c for c in choices if len(c) == 1]
    parts = []
    if letters:
        parts.append(r"(?<![\w'])(?:" + "|".join(map(re.escape, letters)) + r")(?![\w'])")
    if words:
        parts.append(r"(?i:\b(?:" + "|".join(map(re.escape, words)) + r")\b)")
    found = re.findall("|".join(parts), text)
    return found[-1] if found else None


def same_as_reference(rule: str | None, reference: Mapping[str, Any]) -> bool:
    """Whether a rule judge is the reference scorer itself: ``last_number`` against the
    ``numeric`` scorer with ``pick: last`` (and, as the judge stage passes them, the same
    tolerances). Its agreement with that reference is 1 by construction, no measurement
    of a judge."""
    if rule != "last_number" or reference.get("name") != "numeric":
        return False
    return (reference.get("numeric") or {}).get("pick", "last") == "last"
