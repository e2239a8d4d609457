"""The stopping rule of an adaptive evaluation (:class:`StoppingRule`), fixed before its first
round, and the codes of what a decision after a round says (:data:`Status`, :data:`Action`,
:data:`Basis`).

Its own module so that the public function (:mod:`evalnoise.stats.stopping`) and the
per-target planning (:mod:`evalnoise.stats._target_decisions`) both read it, and neither
imports the other's importer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from evalnoise.stats._checks import (
    check_finite_number,
    check_probability,
    optional_positive_int,
)
from evalnoise.stats.confidence_sequences import Method

__all__ = ["Action", "Basis", "Status", "StoppingRule", "Target"]

#: what is estimated: accuracy, the ICC, or the paired difference of two agents
Target = Literal["accuracy", "icc", "difference"]
#: why a decision stops, or that it continues
Status = Literal["target_met", "budget_spent", "limit_reached", "continue"]
#: what the next round does
Action = Literal["stop", "more_tasks", "more_trials"]
#: what the plan of the next round rests on: the variance components
#: (``components``; for the icc target Bonett's variance), none estimable yet
#: (``not_estimable``: one task, or one trial each), or no variance observed yet
#: (``no_variance``)
Basis = Literal["components", "not_estimable", "no_variance"]


@dataclass(frozen=True, kw_only=True)
class StoppingRule:
    """The stopping rule of an adaptive evaluation, fixed before its first round.

    Checked when made (ValueError): the goal must match the target and be a finite number
    > 0, the costs and the budget finite (c_trial and the budget > 0), the caps positive
    integers. The numbers are stored as floats and ints.

    Attributes
    ----------
    target : ``"accuracy"``, ``"icc"`` or ``"difference"``.
    half_width : target half-width h of the anytime-valid interval (accuracy, difference).
        The bets are tuned to it, so it must not change between rounds.
    se : target SE of the ICC (icc); the paper's guideline is 0.03.
    budget : total money for the evaluation, including what is spent.
    cost_per_task : c_task, paid once per task (per agent).
    cost_per_trial : c_trial > 0, paid per trial.
    max_trials_per_task, max_tasks : caps (None: unlimited).
    confidence : level of the intervals.
    method : the CS method, see
        :func:`evalnoise.stats.confidence_sequences.mean_confidence_sequence`.
    """

    target: Target = "accuracy"
    half_width: float | None = None
    se: float | None = None
    budget: float
    cost_per_task: float = 0.0
    cost_per_trial: float = 1.0
    max_trials_per_task: int | None = None
    max_tasks: int | None = None
    confidence: float = 0.95
    method: Method = "betting"

    def __post_init__(self) -> None:
        put = object.__setattr__  # frozen: store the checked values once, here
        put(self, "confidence", check_probability(self.confidence))
        target = self.target
        if target not in ("accuracy", "icc", "difference"):
            raise ValueError(f"target must be 'accuracy', 'icc' or 'difference', got {target!r}")
        if target == "icc":
            if self.se is None or self.half_width is not None:
                raise ValueError("the icc target takes se= (and no half_width)")
            put(self, "se", float(self.se))
        else:
            if self.half_width is None or self.se is not None:
                raise ValueError(f"the {target} target takes half_width= (and no se)")
            put(self, "half_width", float(self.half_width))
        if not (math.isfinite(self.goal) and self.goal > 0):
            raise ValueError("the target must be a finite number > 0")
        put(self, "budget", check_finite_number(self.budget, "budget", positive=True))
        put(self, "cost_per_task", check_finite_number(self.cost_per_task, "cost_per_task"))
        c2 = check_finite_number(self.cost_per_trial, "cost_per_trial", positive=True)
        put(self, "cost_per_trial", c2)
        t_cap = optional_positive_int(self.max_trials_per_task, "max_trials_per_task")
        put(self, "max_trials_per_task", t_cap)
        put(self, "max_tasks", optional_positive_int(self.max_tasks, "max_tasks"))
        if self.method not in ("betting", "empirical_bernstein"):
            raise ValueError(
                f"method must be 'betting' or 'empirical_bernstein', got {self.method!r}"
            )

    @property
    def goal(self) -> float:
        """The target's goal: ``se`` for the icc target, else ``half_width``."""
        return float(self.se if self.target == "icc" else self.half_width)  # type: ignore[arg-type]
