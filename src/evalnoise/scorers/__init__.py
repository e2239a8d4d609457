"""Scorers: is a trial's answer correct?

- :mod:`evalnoise.scorers.deterministic` — ``exact``, ``numeric``, ``gaia``, ``fuzzy``.
- :mod:`evalnoise.scorers.judge` — ``LLMJudge`` with the paper's Appendix B prompt, a
  persistent cache and repeated judging; ``template_hash()`` for provenance.
- :mod:`evalnoise.scorers.rule_judge` — ``RuleJudge``: a fixed rule reads the answer, no model.
- :mod:`evalnoise.scorers.verdicts` — the ``judge_status`` vocabulary and ``JudgeResult``.
- :mod:`evalnoise.scorers.score_table` — ``score_trials``: TRIALS rows → SCORES rows.

The names below are loaded on first access (PEP 562 ``__getattr__``): importing one
submodule (a deterministic scorer, the judge statuses) does not import the LLM judge and its
model client, so what reads a status or scores a number does not depend on the judge's HTTP
code (``code_version``, :mod:`evalnoise.pipeline.dependencies`).
"""

from __future__ import annotations

from typing import Any

from evalnoise import _lazy

__all__ = [
    "DEFAULT_TEMPLATE",
    "DETERMINISTIC_SCORERS",
    "SCORER_NAMES",
    "Agreement",
    "JudgeCache",
    "JudgeResult",
    "LLMJudge",
    "Match",
    "agreement",
    "exact",
    "fuzzy",
    "gaia",
    "normalize_text",
    "numeric",
    "parse_decision",
    "score_trials",
    "template_hash",
    "token_set_ratio",
]

_MODULES = {
    "DETERMINISTIC_SCORERS": "deterministic",
    "Match": "deterministic",
    "exact": "deterministic",
    "fuzzy": "deterministic",
    "gaia": "deterministic",
    "normalize_text": "deterministic",
    "numeric": "deterministic",
    "token_set_ratio": "deterministic",
    "DEFAULT_TEMPLATE": "judge",
    "Agreement": "judge",
    "JudgeCache": "judge",
    "LLMJudge": "judge",
    "agreement": "judge",
    "parse_decision": "judge",
    "template_hash": "judge",
    "JudgeResult": "verdicts",
    "SCORER_NAMES": "score_table",
    "score_trials": "score_table",
}


def __getattr__(name: str) -> Any:
    return _lazy.load(globals(), _MODULES, name)


def __dir__() -> list[str]:
    return _lazy.names(globals(), __all__)
