"""When to stop an adaptive evaluation, and what its next block runs.

An adaptive evaluation runs in blocks — after each block of trials it looks at the data and
decides to stop or to run another block (new tasks, more trials per task). The rule is fixed
before the first block (:class:`StoppingRule`: the target and its goal, the budget and the
costs, the caps); after each block :func:`stopping_decision` reads every agent's trials so far
(:class:`AgentTrials`) and says stop or continue, with what and why. The accuracy and
difference targets stop on the anytime-valid interval of
:mod:`evalnoise.stats.accuracy_sequences`, valid at whatever block the rule stops; the icc
target on Bonett's SE. What the next block runs is planned per target in
:mod:`evalnoise.stats._target_decisions`.

References
----------
Waudby-Smith, I. & Ramdas, A. (2024). Estimating means of bounded random variables by
betting. JRSS-B 86(1), 1–27. arXiv:2010.09686.
Cochran, W. G. (1977). Sampling Techniques, 3rd ed., §10.6 (trials per task for the money).
Bonett, D. G. (2002). Sample size requirements for estimating intraclass correlations with
desired precision. Statistics in Medicine 21(9), 1331–1335.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd

from evalnoise.stats._checks import (
    check_finite_number,
    check_probability,
    finite_scores,
    optional_positive_int,
)
from evalnoise.stats._results import DictResult
from evalnoise.stats._target_decisions import icc_decision, last_block_design, sequence_decision
from evalnoise.stats.accuracy_sequences import _entry_units
from evalnoise.stats.confidence_sequences import Method
from evalnoise.stats.icc import icc_oneway

__all__ = ["AgentTrials", "StoppingDecision", "StoppingRule", "stopping_decision"]

Target = Literal["accuracy", "icc", "difference"]


@dataclass(frozen=True, kw_only=True)
class StoppingRule:
    """The stopping rule of an adaptive evaluation, fixed before its first block.

    Checked when made (ValueError): the goal must match the target and be a finite number
    > 0, the costs and the budget finite (c_trial and the budget > 0), the caps positive
    integers. The numbers are stored as floats and ints.

    Attributes
    ----------
    target : ``"accuracy"``, ``"icc"`` or ``"difference"``.
    half_width : target half-width h of the anytime-valid interval (accuracy, difference).
        The bets are tuned to it, so it must not change between blocks.
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


@dataclass(frozen=True, eq=False)
class AgentTrials:
    """One agent's trials so far, one row each, in the order they were sampled.

    Attributes
    ----------
    scores : score per trial in [0, 1] (binary or partial credit).
    tasks : task label per trial.
    blocks : block label per trial: the round of the evaluation in which the trial ran
        (sortable). A task enters the anytime-valid sequence in the first block it appears
        in, with the trials it got there.

    The arrays are checked by :func:`stopping_decision`, whose messages name them
    (``scores`` for agent A, ``scores_b`` for agent B).
    """

    scores: Any
    tasks: Any
    blocks: Any


@dataclass(frozen=True)
class StoppingDecision(DictResult):
    """Stop or continue an adaptive evaluation, what to run next, and why.

    Attributes
    ----------
    stop : True when the evaluation should stop.
    status : ``"target_met"``, ``"budget_spent"``, ``"limit_reached"`` or ``"continue"``.
    action : ``"stop"``, ``"more_tasks"`` or ``"more_trials"``.
    reason : the decision in words, with the numbers behind it.
    target : ``"accuracy"``, ``"icc"`` or ``"difference"``.
    goal : the target half-width (accuracy, difference) or SE (icc).
    achieved : the current half-width of the anytime-valid interval, or the current
        Bonett SE of the ICC.
    estimate, ci_low, ci_high : the current estimate and interval (anytime-valid CS for
        accuracy and difference; the F-based ICC interval for icc).
    n_tasks, n_trials : tasks and trials so far (both agents' trials for a difference).
    spent, remaining : money spent (given, or counted from the costs) and budget − spent.
    sigma2_between, sigma2_within : the variance components planned with (σ²_between
        floored at 0; for a difference, the components of the per-task difference).
    icc : the current ICC(1,1) (of agent A for a difference).
    trials_per_task : the current design's trials per task (the last entry block's; n0 for
        the icc target).
    optimal_trials : Cochran's T* = sqrt((c_task/c_trial)(σ²_w/σ²_b)) (accuracy and
        difference targets).
    gain_per_cost_task, gain_per_cost_trial : the marginal reduction of the target's
        variance per unit of money from one more task, and from one more trial on every task.
    next_new_tasks : new tasks to draw in the next block (0 if none).
    next_trials_per_task : trials each new task gets in the next block, or (action
        ``"more_trials"`` with the icc target) the trial count to top every task up to.
    next_block_cost : the cost of that block.
    warnings : caveats (e.g. the icc target is not anytime-valid).
    """

    stop: bool
    status: str
    action: str
    reason: str
    target: str
    goal: float
    achieved: float
    estimate: float
    ci_low: float
    ci_high: float
    n_tasks: int
    n_trials: int
    spent: float
    remaining: float
    sigma2_between: float
    sigma2_within: float
    icc: float
    trials_per_task: float
    optimal_trials: float
    gain_per_cost_task: float
    gain_per_cost_trial: float
    next_new_tasks: int
    next_trials_per_task: int
    next_block_cost: float
    warnings: tuple[str, ...] = ()


def stopping_decision(
    trials: AgentTrials,
    rule: StoppingRule,
    *,
    spent: float | None = None,
    trials_b: AgentTrials | None = None,
) -> StoppingDecision:
    r"""Decide after a block: stop, or continue with more tasks or more trials per task.

    Targets
    -------
    ``StoppingRule(target="accuracy", half_width=h)``: stop when the anytime-valid interval
    for accuracy (:func:`evalnoise.stats.accuracy_sequences.confidence_sequence` with bets
    tuned to h, ``tuning_half_width=h``) has half-width <= h. Its coverage holds at the block
    where this rule (or the budget) stops, however often it was checked — provided h is the
    same at every check.

    ``StoppingRule(target="difference", half_width=h)``: the same for the paired difference
    of two agents (:func:`evalnoise.stats.accuracy_sequences.paired_confidence_sequence`; B's
    trials in ``trials_b``). Costs are per agent: a new paired task costs both agents' share.

    ``StoppingRule(target="icc", se=s)``: stop when Bonett's SE of ICC(1,1)
    (:func:`evalnoise.stats.icc_oneway`, all trials) is <= s — the paper's guideline is
    SE(ICC) <= 0.03. This is a precision rule on a fixed-sample SE, not an anytime-valid
    interval; the decision says so in ``warnings``.

    Order of the checks: target met → limits (``max_tasks`` reached for the accuracy and
    difference targets; both caps reached for icc) → budget (the remaining money buys no
    further block) → continue.

    More tasks or more trials (paper eq. 9–10 with costs)
    -----------------------------------------------------
    With n tasks of T trials, Var = (σ²_b + σ²_w/T)/n. One more task costs
    c_task + T·c_trial and lowers Var by −∂Var/∂n = (σ²_b + σ²_w/T)/n²; one more trial on
    every task costs n·c_trial and lowers it by −∂Var/∂T = σ²_w/(nT²). Per unit of money
    the trial wins exactly when T < T* = sqrt((c_task/c_trial)(σ²_w/σ²_b)) (Cochran 1977,
    §10.6): within-task variance dominates relative to what a task costs. With c_task = 0
    (the paper's eq. 10, a budget counted in runs) T* = 0 and more tasks always win. The
    variance components are :func:`evalnoise.stats.icc_oneway`'s, from every trial so far
    (σ²_between floored at 0).

    For the accuracy and difference targets "more trials" means the *next new tasks* get
    more trials each: the anytime-valid sequence is over tasks with their entry trials, so
    trials added to tasks already in it cannot narrow it. ``next_trials_per_task`` is the
    whole T minimizing (σ²_b + σ²_w/T)(c_task + T·c_trial) within ``max_trials_per_task``
    (:func:`evalnoise.stats.planning.optimal_trials_per_task`), and the action is
    ``"more_trials"`` when it exceeds the current T, else ``"more_tasks"`` (with fewer
    trials each if the current T is past the optimum). The next block draws as many new
    tasks as the last block did, fewer if the budget or ``max_tasks`` says so.

    For the icc target every trial counts, so "more trials" tops every task up by one
    trial; the gains use Bonett's variance f(k, n) = 2(1−ρ)²(1+(k−1)ρ)²/(k(k−1)(n−1)):
    −∂f/∂n = f/(n−1) per task, −∂f/∂k = f·(1/k + 1/(k−1) − 2ρ/(1+(k−1)ρ)) per trial on all
    n tasks.

    Parameters
    ----------
    trials : the trials so far (agent A for a difference).
    rule : the stopping rule: target and goal, budget, costs, caps, confidence, CS method.
    spent : money spent so far; default n_tasks·c_task + n_trials·c_trial.
    trials_b : agent B's trials (difference only).

    Returns
    -------
    StoppingDecision
    """
    paired = rule.target == "difference"
    if paired and trials_b is None:
        raise ValueError("the difference target needs trials_b (agent B's trials)")
    if not paired and trials_b is not None:
        raise ValueError("trials_b is for the difference target only")
    c1, c2 = rule.cost_per_task, rule.cost_per_trial
    y = finite_scores(trials.scores, "scores", unit=True)
    agents = [(y, np.asarray(trials.tasks), np.asarray(trials.blocks))]
    if trials_b is not None:
        yb = finite_scores(trials_b.scores, "scores_b", unit=True)
        agents.append((yb, np.asarray(trials_b.tasks), np.asarray(trials_b.blocks)))
    n_trials = sum(a[0].size for a in agents)
    if spent is None:
        spent_v = c1 * sum(pd.unique(a[1]).size for a in agents) + c2 * n_trials
    else:
        spent_v = check_finite_number(spent, "spent")
    remaining = rule.budget - spent_v

    u = _entry_units(agents)
    n_tasks = int(u.labels.size)
    last_new, t_cur = last_block_design(u.entry, u.count[:, 0])
    icc_res = icc_oneway(y, agents[0][1], confidence=rule.confidence)
    ctx = dict(
        remaining=remaining, n_tasks=n_tasks, last_new=last_new,
        level=f"{100 * rule.confidence:g}%",
    )  # fmt: skip
    base = dict(
        target=rule.target, goal=rule.goal, n_tasks=n_tasks, n_trials=n_trials, spent=spent_v,
        remaining=remaining, icc=float(icc_res.icc),
    )  # fmt: skip
    if rule.target == "icc":
        fields = icc_decision(rule, icc_res, u, ctx, base)
    else:
        fields = sequence_decision(rule, agents, icc_res, u, t_cur, ctx, base)
    return StoppingDecision(**fields)
