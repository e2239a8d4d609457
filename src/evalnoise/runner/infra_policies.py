"""The infra policies: how infrastructure outcomes count toward accuracy, and when the runner
retries. (How much the choice moves the headline is the attribution's policy sensitivity,
:mod:`evalnoise.attribution.policy_sensitivity`.)

``timeout``, ``oom_killed`` and ``infra_error`` are the infrastructure's outcomes
(:data:`evalnoise.schema.INFRA_STATUSES`). The declared policy decides what they mean:

- ``as_incorrect`` — the paper's choice: an infra outcome is a wrong answer (score 0).
- ``exclude`` — infra outcomes are left out of accuracy and counted separately.
- ``retry`` — the runner runs the trial again, up to ``max_attempts`` attempts in all; every
  attempt is its own row (``attempt`` = 1..k). The last attempt counts; earlier attempts are
  kept for infra error rates. A trial whose last attempt is still an infra outcome is then
  handled by ``on_exhausted`` (``as_incorrect`` by default, or ``exclude``).

A *crash* (``agent_error`` with a fault signal, :func:`evalnoise.outcomes.crashed_mask`) has
no answer either: the runtime broke, the agent did not answer wrong. The scorer leaves it
unscored and the policy decides how it counts, as for an infra outcome (it is never
retried: a crash repeats). A group with an undeclared crash has no headline number at all
(:func:`evalnoise.outcomes.assess_health`); the policy's reading of it is shown under its
own label.

In config::

    infra_policy: as_incorrect
    infra_policy: {mode: retry, max_attempts: 3, on_exhausted: as_incorrect}

A trial the verifier decided after the agent failed (``verified_after``,
:mod:`evalnoise.verified_after`) is ``ok``, scored by its verdict. The policy's
``after_agent_failure`` (from the config's ``scoring.after_agent_failure``; ``verdict`` by
default) can read it as the failure it was instead (``failure``): then
:func:`apply_infra_policy` gives it back its agent outcome before it splits the table (a
timeout is then an infra outcome like any other, and the runner retries it under ``retry``).

:func:`apply_infra_policy` is the pure function the analysis uses; :func:`should_retry` is
what the runner asks after each attempt.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

import pandas as pd

from evalnoise.outcomes import attempt_order, crashed_mask
from evalnoise.schema import INFRA_STATUSES, TRIAL_KEY

MODES = ("as_incorrect", "retry", "exclude")
EXHAUSTED_MODES = ("as_incorrect", "exclude")
#: ``after_agent_failure`` values (:data:`evalnoise.verified_after.AFTER_AGENT_FAILURE`)
AFTER_AGENT_FAILURE = ("verdict", "failure")


@dataclass(frozen=True)
class InfraPolicy:
    mode: str = "as_incorrect"
    max_attempts: int = 1
    on_exhausted: str = "as_incorrect"
    #: how a trial verified after an agent failure counts: ``verdict`` or ``failure``
    after_agent_failure: str = "verdict"

    def __post_init__(self) -> None:
        if self.after_agent_failure not in AFTER_AGENT_FAILURE:
            raise ValueError(
                f"infra policy: after_agent_failure must be one of {AFTER_AGENT_FAILURE}, "
                f"got {self.after_agent_failure!r}"
            )
        if self.mode not in MODES:
            raise ValueError(f"infra policy: mode must be one of {MODES}, got {self.mode!r}")
        if self.on_exhausted not in EXHAUSTED_MODES:
            raise ValueError(
                f"infra policy: on_exhausted must be one of {EXHAUSTED_MODES}, "
                f"got {self.on_exhausted!r}"
            )
        if isinstance(self.max_attempts, bool) or not isinstance(self.max_attempts, int):
            raise ValueError("infra policy: max_attempts must be an integer")
        if self.max_attempts < 1:
            raise ValueError("infra policy: max_attempts must be >= 1")
        if self.mode != "retry" and self.max_attempts != 1:
            raise ValueError(
                f"infra policy: max_attempts only applies to mode 'retry' (mode is {self.mode!r})"
            )

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        if self.after_agent_failure == "verdict":  # the default: the record as it always was
            del out["after_agent_failure"]
        return out

    def describe(self) -> str:
        """One line for reports."""
        if self.mode == "retry":
            text = (
                f"retry (up to {self.max_attempts} attempts; then "
                f"{self.on_exhausted.replace('_', ' ')})"
            )
        else:
            text = self.mode.replace("_", " ")
        if self.after_agent_failure == "failure":
            text += "; a verdict after an agent failure counts as that failure"
        return text


def infra_policy(spec: str | Mapping[str, Any] | InfraPolicy) -> InfraPolicy:
    """An :class:`InfraPolicy` from ``as_incorrect``, ``exclude``, ``retry:N`` or a mapping."""
    if isinstance(spec, InfraPolicy):
        return spec
    if isinstance(spec, str):
        mode, _, attempts = spec.partition(":")
        if attempts:
            if mode != "retry":
                raise ValueError(f"infra policy {spec!r}: only 'retry' takes ':N'")
            try:
                return InfraPolicy("retry", int(attempts))
            except ValueError:
                raise ValueError(f"infra policy {spec!r}: N must be an integer") from None
        if mode == "retry":
            return InfraPolicy("retry", 3)
        return InfraPolicy(mode)
    if isinstance(spec, Mapping):
        unknown = set(spec) - {"mode", "max_attempts", "on_exhausted", "after_agent_failure"}
        if unknown:
            raise ValueError(f"infra policy: unknown keys {sorted(unknown)}")
        mode = spec.get("mode", "as_incorrect")
        default_attempts = 3 if mode == "retry" else 1
        return InfraPolicy(
            mode,
            spec.get("max_attempts", default_attempts),
            spec.get("on_exhausted", "as_incorrect"),
            spec.get("after_agent_failure", "verdict"),
        )
    raise TypeError(f"infra policy: expected a name or a mapping, got {type(spec).__name__}")


def should_retry(
    policy: InfraPolicy, status: str, attempt: int, verified_after: str | None = None
) -> bool:
    """Whether the runner starts attempt ``attempt + 1`` after an attempt ended in ``status``
    (an attempt ``verified_after`` an agent failure counts as that failure when the policy's
    ``after_agent_failure`` is ``failure``)."""
    if policy.after_agent_failure == "failure" and verified_after:
        status = verified_after
    return policy.mode == "retry" and status in INFRA_STATUSES and attempt < policy.max_attempts


@dataclass(frozen=True)
class PolicyResult:
    """What :func:`apply_infra_policy` returns.

    ``counted``: one row per trial that counts for accuracy (its last attempt); infra and
    crash rows among them carry ``score`` 0.0 (and ``correct`` False when that column
    exists). ``excluded``: last attempts left out by the policy (infra outcomes and
    crashes). ``superseded``: earlier attempts of retried trials. ``counts``: the numbers
    every report prints.
    """

    counted: pd.DataFrame
    excluded: pd.DataFrame
    superseded: pd.DataFrame
    counts: dict[str, int | float]


def apply_infra_policy(
    trials: pd.DataFrame,
    policy: InfraPolicy | str | Mapping[str, Any],
    *,
    key: tuple[str, ...] | None = None,
) -> PolicyResult:
    """Split a trial (or score) table into the rows that count for accuracy and the rest.

    ``key`` names the columns identifying a trial (default: those of
    :data:`evalnoise.schema.TRIAL_KEY` present in the table); ``attempt`` orders attempts
    (missing = every row is attempt 1).
    Crashes (:func:`evalnoise.outcomes.crashed_mask`) follow the policy as infra outcomes do
    (``crashed_final`` counts them). With ``after_agent_failure`` ``failure``, trials verified
    after an agent failure are first read as that failure
    (:func:`evalnoise.verified_after.as_failures`). Pure: the input is not modified.
    """
    from evalnoise.verified_after import apply_rule

    policy = infra_policy(policy)
    if "status" not in trials.columns:
        raise ValueError("apply_infra_policy: the table has no 'status' column")
    trials = apply_rule(trials, policy.after_agent_failure)
    key = tuple(key) if key is not None else tuple(c for c in TRIAL_KEY if c in trials.columns)
    if not key:
        raise ValueError("apply_infra_policy: no trial key columns (task_id, trial, ...)")
    # never modified below (``counted`` is a copy): the input stands as it is
    frame = trials if "attempt" in trials.columns else trials.assign(attempt=1)
    rows = attempt_order(frame, key)
    if not rows.in_order:
        frame = frame.iloc[rows.order]
    if rows.last.all():  # one attempt a trial: no row is superseded (a copy of 48 columns less)
        last, superseded = frame, frame.iloc[0:0]
    else:
        last, superseded = frame[rows.last], frame[~rows.last]
    infra_last = last["status"].isin(INFRA_STATUSES)
    crashed_last = pd.Series(crashed_mask(last), index=last.index)
    failed_last = infra_last | crashed_last

    if policy.mode == "exclude" or (policy.mode == "retry" and policy.on_exhausted == "exclude"):
        excluded = last[failed_last]
        counted = last[~failed_last].copy()
        scored_incorrect = 0
    else:
        excluded = last.iloc[0:0]
        counted = last.copy()
        counted_infra = failed_last.loc[counted.index]
        if "score" in counted.columns:
            counted["score"] = counted["score"].astype("float64")
            counted.loc[counted_infra, "score"] = 0.0
        else:
            counted["score"] = pd.Series(pd.NA, index=counted.index, dtype="Float64")
            counted.loc[counted_infra, "score"] = 0.0
        if "correct" in counted.columns:
            counted["correct"] = counted["correct"].astype("boolean")
            counted.loc[counted_infra, "correct"] = False
        scored_incorrect = int(counted_infra.sum())

    n_attempts = len(frame)
    n_trials = len(last)
    infra_attempts = int(frame["status"].isin(INFRA_STATUSES).sum())
    counts: dict[str, int | float] = {
        "trials": n_trials,
        "attempts": n_attempts,
        "counted": len(counted),
        "excluded": len(excluded),
        "scored_incorrect_by_policy": scored_incorrect,
        "retried_trials": len(superseded[list(key)].drop_duplicates()) if len(superseded) else 0,
        "superseded_attempts": len(superseded),
        "infra_attempts": infra_attempts,
        "infra_final": int(infra_last.sum()),
        "crashed_final": int(crashed_last.sum()),
        "infra_error_rate_attempts": infra_attempts / n_attempts if n_attempts else float("nan"),
        "infra_error_rate_trials": float(infra_last.mean()) if n_trials else float("nan"),
    }
    for status in INFRA_STATUSES:
        counts[f"{status}_attempts"] = int((frame["status"] == status).sum())
    return PolicyResult(
        counted=counted.reset_index(drop=True),
        excluded=excluded.reset_index(drop=True),
        superseded=superseded.reset_index(drop=True),
        counts=counts,
    )
