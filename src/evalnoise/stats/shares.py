"""When a share of variance is reported, and how large a variance can be: one rule each.

**The detection rule.** A share of the score variance — the infrastructure's (time block,
host, task × time block), the judges' (judge, task × judge) — is a sum of variance
components over the total. It is reported as *detected* when the test or the interval of the
quantity it is made of, the sum of its components, excludes 0; otherwise it is reported as
not detected, with its interval, never as a number that reads as a finding. A component of
the share is reported as detected only when its own test or interval excludes 0 *and* the
share is detected. That is closed testing (Marcus, Peritz & Gabriel 1976): the hypothesis
"every component is 0" (the sum is 0) is tested first, a component's own hypothesis only
under it, so the family's error rate is that of the first test and a component's line can
never say "detected" beside a share's "not detected". With the Westfall–Young min-p family
of :func:`evalnoise.stats.permutation.factor_permutation_test` the sum's test rejects exactly
when a component's adjusted test does, and the rule changes nothing; with intervals (MLS of
the sum and of each component) it removes a component's detection the sum does not back.

**The largest variance.** A score in [a, b] has variance at most (b − a)²/4 (Popoviciu's
inequality; equality for a two-point distribution on a and b), and so has every variance
component of it, and every sum of components: 0.25 for 0/1 scores. An interval's upper end
above that bound says nothing the bound does not, and is cut to it (and said so).

References
----------
Marcus, R., Peritz, E. & Gabriel, K. R. (1976). On closed testing procedures with special
reference to ordered analysis of variance. *Biometrika* 63(3): 655–660.
Popoviciu, T. (1935). Sur les équations algébriques ayant toutes leurs racines réelles.
*Mathematica (Cluj)* 9: 129–145.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._results import DictResult

__all__ = ["ShareDecision", "max_variance", "share_decision"]

#: the rule in words, for records and reports
SHARE_RULE = (
    "a share is detected when the test or interval of the sum of its components excludes 0; "
    "a component only when its own does and the share is detected"
)


@dataclass(frozen=True)
class ShareDecision(DictResult):
    """What is reported as detected in a share of variance (:func:`share_decision`).

    Attributes
    ----------
    detected : the share (the sum of its components) is detected.
    components : the share's components, in the order given.
    component_detected : each component reported as detected (never True when ``detected``
        is False).
    withdrawn : components whose own test or interval excluded 0 but whose share's did not:
        reported as not detected.
    rule : :data:`SHARE_RULE`.
    """

    detected: bool
    components: tuple[str, ...]
    component_detected: tuple[bool, ...]
    withdrawn: tuple[str, ...] = field(default=())
    rule: str = SHARE_RULE

    def __getitem__(self, component: str) -> bool:
        """Whether one component is reported as detected."""
        return self.component_detected[self.components.index(component)]


def share_decision(sum_detected: bool, component_detected: Mapping[str, bool]) -> ShareDecision:
    """The one detection rule for a share of variance (closed testing, module docstring).

    detected = ``sum_detected`` (the test or interval of Σ_k σ²_k excludes 0);
    component k reported detected = (its own test or interval excludes 0) ∧ detected.

    Parameters
    ----------
    sum_detected : the test or interval of the share's quantity, the sum of its components,
        excludes 0.
    component_detected : each component's own test or interval excludes 0.
    """
    share = bool(sum_detected)
    names = tuple(component_detected)
    own = tuple(bool(component_detected[n]) for n in names)
    return ShareDecision(
        detected=share,
        components=names,
        component_detected=tuple(o and share for o in own),
        withdrawn=tuple(n for n, o in zip(names, own, strict=True) if o and not share),
    )


def max_variance(scores: Any = None, *, score_range: tuple[float, float] | None = None) -> float:
    """(b − a)² / 4, the largest variance of a score in [a, b] (Popoviciu's inequality).

    [a, b] is ``score_range`` when given (the scale's bounds, e.g. (0, 1)), else the smallest
    and largest finite value of ``scores`` (for 0/1 scores with both values, (0, 1): 0.25).
    NaN when neither gives a range.
    """
    if score_range is not None:
        a, b = (float(v) for v in score_range)
        if not (np.isfinite(a) and np.isfinite(b)) or b < a:
            raise ValueError(f"score_range must be finite (low, high), got {score_range!r}")
    else:
        y = np.asarray(scores if scores is not None else [], dtype=float).ravel()
        y = y[np.isfinite(y)]
        if y.size == 0:
            return float("nan")
        a, b = float(y.min()), float(y.max())
    return (b - a) ** 2 / 4.0
