"""What a judge says about one answer: the ``judge_status`` vocabulary and :class:`JudgeResult`.

The statuses are the values of the SCORES column ``judge_status``
(:data:`evalnoise.schema.SCORES`). The scorers write them (:mod:`evalnoise.scorers.judge`,
:mod:`evalnoise.scorers.rule_judge`, :mod:`evalnoise.scorers.score_table`) and the judge stage
reads them back (:mod:`evalnoise.pipeline.judging`). They live here, apart from the LLM judge,
so that reading them imports no model client: the numbers of the judge stage do not depend on
the judge's HTTP code (``code_version("analysis")``, :mod:`evalnoise.pipeline.dependencies`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = [
    "AGENT_SETUP_ERROR",
    "CALL_FAILED",
    "JUDGE_ERROR",
    "NOT_APPLICABLE",
    "NO_PREDICTION",
    "OK",
    "SKIPPED_CRASH",
    "SKIPPED_INFRA",
    "VERIFIER_ERROR",
    "JudgeResult",
]

#: a verdict was reached (``correct`` is set, but on a tie of k > 1 votes)
OK = "ok"
#: no verdict: the reply did not parse, or the call failed (:data:`CALL_FAILED`)
JUDGE_ERROR = "judge_error"
#: an infrastructure outcome (timeout, oom_killed, infra_error): never sent to a judge
SKIPPED_INFRA = "skipped_infra"
#: an empty answer: incorrect without asking the judge
NO_PREDICTION = "no_prediction"
#: a crashed trial: there was no answer to score
SKIPPED_CRASH = "skipped_crash"
#: an environment trial whose verifier left no valid reward
VERIFIER_ERROR = "verifier_error"
#: an environment trial whose agent could not be set up in the task's container
AGENT_SETUP_ERROR = "agent_setup_error"
#: a rule judge's trial whose reference is not of the rule's kind: no verdict, not unjudged
NOT_APPLICABLE = "not_applicable"
#: How a ``judge_error``'s explanation starts when no reply came back (the server failed):
#: unjudged, as opposed to a reply that did not parse.
CALL_FAILED = "judge call failed"


@dataclass(frozen=True)
class JudgeResult:
    """One judged answer.

    ``correct`` is None unless ``status == 'ok'`` (and, with k > 1, on a tie). ``score`` is
    the share of TRUE votes (None unless ``ok``). ``votes`` holds each sample's verdict
    (None for a failed sample); ``cached`` how many samples came from the cache, ``calls``
    how many were sent to the server; ``prompt_tokens`` / ``completion_tokens`` the tokens
    of those calls as the server reported them (None: unknown; 0 when no call was made).
    """

    correct: bool | None
    status: str
    explanation: str
    votes: tuple[bool | None, ...] = ()
    cached: int = 0
    replies: tuple[str, ...] = field(default=(), repr=False)
    score: float | None = None
    calls: int = 0
    prompt_tokens: int | None = 0
    completion_tokens: int | None = 0
