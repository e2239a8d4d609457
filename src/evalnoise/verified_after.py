"""The verifier's verdict after an agent failure: the flag a trial keeps, and the two readings.

When the agent phase ends in ``timeout`` or ``agent_error`` and the verifier then runs and
leaves a valid reward, the benchmarks score the trial by that reward (Harbor's mean over
``verifier_result.rewards``; Terminal-Bench's ``is_resolved``, which the leaderboard counts
for trials that timed out but passed their tests). evalnoise records such a trial as
``status = "ok"`` with its reward as the score, and keeps the agent's failure as a flag: the
trial column ``verified_after`` (``timeout`` / ``agent_error``; null for every other trial).
A process the kernel killed at the memory limit during the agent phase while the trial's
container lived on is the task's own event too: the verdict decides, and the kill is the
flag ``oom_in_agent`` (an OOM kill that ends the container or its main process stays the
infrastructure outcome ``oom_killed``).

Two rules read these trials (config ``scoring.after_agent_failure``):

- ``verdict`` (the default, the benchmarks' rule): the verdict is the score;
- ``failure`` (the stricter reading): the trial counts as the agent failure it was —
  :func:`as_failures` gives it back its agent outcome (``timeout``: an infrastructure
  outcome, the infra policy decides; ``agent_error``: incorrect, score 0, as the scorer
  scores an agent error). The reading under the other rule is shown beside the headline
  (:func:`evalnoise.analysis.failure_readings`).

A crash (``agent_error`` with a fault signal) is never verified after: it is a broken
runtime (:mod:`evalnoise.outcomes`), and stays a crash whatever the verifier said. Trials
without a verdict (``verifier_error``, ``unscored``) are never a 0 under either rule.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from evalnoise.schema import VERIFIED_AFTER

__all__ = [
    "AFTER_AGENT_FAILURE",
    "VERIFIED_AFTER",
    "apply_rule",
    "as_failures",
    "verified_mask",
]

#: The rules of ``scoring.after_agent_failure``; the first is the default.
AFTER_AGENT_FAILURE = ("verdict", "failure")


def verified_mask(trials: pd.DataFrame) -> np.ndarray:
    """Which rows the verifier decided after an agent failure: ``verified_after`` is one of
    :data:`VERIFIED_AFTER` (all False without the column)."""
    if "verified_after" not in trials.columns:
        return np.zeros(len(trials), dtype=bool)
    return trials["verified_after"].isin(VERIFIED_AFTER).to_numpy(dtype=bool)


def as_failures(trials: pd.DataFrame) -> pd.DataFrame:
    """The stricter reading of a trial (or score) table: every row verified after an agent
    failure gets that failure back as its status — ``timeout`` with no score (an
    infrastructure outcome: the infra policy decides), ``agent_error`` with score 0 and
    ``correct`` False (the scorer's rule for an agent error). ``verified_after`` stays, so
    the row still says what the verifier decided; ``reward`` (the verifier's scoring reward,
    kept only on ``ok`` rows) is cleared. Pure: the input is not modified; a table with no
    such row is returned as it is."""
    mask = verified_mask(trials)
    if not mask.any():
        return trials
    out = trials.copy()
    failure = out.loc[mask, "verified_after"].astype(str)
    out.loc[mask, "status"] = failure
    timed_out = pd.Series(False, index=out.index)
    timed_out.loc[failure.index] = (failure == "timeout").to_numpy()
    erred = pd.Series(mask, index=out.index) & ~timed_out
    if "score" in out.columns:
        out["score"] = pd.to_numeric(out["score"], errors="coerce").astype("float64")
        out.loc[timed_out, "score"] = np.nan
        out.loc[erred, "score"] = 0.0
    if "correct" in out.columns:
        out["correct"] = out["correct"].astype("boolean")
        out.loc[timed_out, "correct"] = pd.NA
        out.loc[erred, "correct"] = False
    if "reward" in out.columns:
        out["reward"] = pd.to_numeric(out["reward"], errors="coerce").astype("float64")
        out.loc[mask, "reward"] = np.nan
    return out


def apply_rule(trials: pd.DataFrame, rule: str | None) -> pd.DataFrame:
    """``trials`` read under ``rule`` (:data:`AFTER_AGENT_FAILURE`; None = the default):
    as they are for ``verdict``, :func:`as_failures` for ``failure``."""
    rule = rule or AFTER_AGENT_FAILURE[0]
    if rule not in AFTER_AGENT_FAILURE:
        raise ValueError(
            f"after_agent_failure must be one of {', '.join(AFTER_AGENT_FAILURE)}, got {rule!r}"
        )
    return as_failures(trials) if rule == "failure" else trials
