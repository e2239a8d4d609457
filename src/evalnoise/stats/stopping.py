"""When to stop an adaptive evaluation, and what its next round runs.

An adaptive evaluation runs in rounds — after each round of trials it looks at the data and
decides to stop or to run another round (new tasks, more trials per task). The rule is fixed
before the first round (:class:`StoppingRule`: the target and its goal, the budget and the
costs, the caps); after each round :func:`stopping_decision` reads every agent's trials so far
(:class:`AgentTrials`) and says stop or continue, with what and why. The accuracy and
difference targets stop on the anytime-valid interval of
:mod:`evalnoise.stats.accuracy_sequences`, valid at whatever round the rule stops; the icc
target on Bonett's SE. What the next round runs is planned per target in
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

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd

from evalnoise.stats._checks import check_finite_number, finite_scores
from evalnoise.stats._results import DictResult
from evalnoise.stats._target_decisions import icc_decision, last_round_design, sequence_decision
from evalnoise.stats.accuracy_sequences import entry_units
from evalnoise.stats.icc import icc_oneway
from evalnoise.stats.stopping_rule import Action, Basis, Status, StoppingRule, Target

__all__ = ["AgentTrials", "StoppingDecision", "StoppingRule", "stopping_decision"]


@dataclass(frozen=True, eq=False)
class AgentTrials:
    """One agent's trials so far, one row each, in the order they were sampled.

    Attributes
    ----------
    scores : score per trial in [0, 1] (binary or partial credit).
    tasks : task label per trial.
    rounds : round label per trial: the round of the evaluation in which the trial ran
        (sortable). A task enters the anytime-valid sequence in the first round it appears
        in, with the trials it got there.

    The arrays are checked by :func:`stopping_decision`, whose messages name them
    (``scores`` for agent A, ``scores_b`` for agent B).
    """

    scores: Any
    tasks: Any
    rounds: Any


@dataclass(frozen=True)
class StoppingDecision(DictResult):
    """Stop or continue an adaptive evaluation, what to run next, and the numbers why.

    The decision holds codes and numbers only; :func:`evalnoise.stopping_text.decision_text`
    words it (outside the statistics, so rewording a reason reruns no decision).

    Attributes
    ----------
    stop : True when the evaluation should stop.
    status : ``"target_met"``, ``"budget_spent"``, ``"limit_reached"`` or ``"continue"``
        (:data:`evalnoise.stats.stopping_rule.Status`).
    action : ``"stop"``, ``"more_tasks"`` or ``"more_trials"``.
    basis : what the plan rests on (:data:`evalnoise.stats.stopping_rule.Basis`): the
        variance components (``"components"``), none estimable yet (``"not_estimable"``:
        one task, or one trial per task) or no variance observed yet (``"no_variance"``).
    target : ``"accuracy"``, ``"icc"`` or ``"difference"``.
    goal : the target half-width (accuracy, difference) or SE (icc).
    confidence : the level of the intervals.
    budget : the rule's budget.
    cost_per_task, cost_per_trial : the rule's costs (per agent).
    max_tasks, max_trials_per_task : the rule's caps (None: unlimited).
    achieved : the current half-width of the anytime-valid interval, or the current
        Bonett SE of the ICC.
    estimate, ci_low, ci_high : the current estimate and interval (anytime-valid CS for
        accuracy and difference; the F-based ICC interval for icc).
    n_tasks, n_trials : tasks and trials so far (both agents' trials for a difference).
    spent, remaining : money spent (given, or counted from the costs) and budget − spent.
    sigma2_between, sigma2_within : the variance components planned with (σ²_between
        floored at 0; for a difference, the components of the per-task difference).
    icc : the current ICC(1,1) (of agent A for a difference).
    trials_per_task : the current design's trials per task (the last entry round's; n0 for
        the icc target).
    optimal_trials : Cochran's T* = sqrt((c_task/c_trial)(σ²_w/σ²_b)) (accuracy and
        difference targets; inf when σ²_b = 0 < c_task, NaN when both are 0: any T).
    dominant : which variance dominates for the cost (accuracy and difference targets with
        basis ``"components"``): ``"within"`` when T* exceeds the current trials per task
        (more trials per new task pay), else ``"between"``; None otherwise.
    gain_per_cost_task, gain_per_cost_trial : the marginal reduction of the target's
        variance per unit of money from one more task, and from one more trial on every task.
    next_new_tasks : new tasks to draw in the next round (0 if none).
    next_trials_per_task : trials each new task gets in the next round, or (action
        ``"more_trials"`` with the icc target) the trial count to top every task up to.
    next_round_cost : the cost of that round.
    sequence_tasks : the tasks in the anytime-valid sequence (accuracy, difference; the
        tasks for icc).
    most_trials_per_task : the most trials any task has (icc; the trials per task of the
        last entry round for the other targets).
    planned_trials_per_task : the trials a new task would get next (also when the budget
        stops the evaluation).
    planned_task_cost : the cost of one more task with them (both agents' for a difference).
    planned_top_up_cost : the cost of one more trial on every task (icc; NaN otherwise).
    warnings : caveats (e.g. the icc target is not anytime-valid).
    """

    stop: bool
    status: Status
    action: Action
    basis: Basis
    target: Target
    goal: float
    confidence: float
    budget: float
    cost_per_task: float
    cost_per_trial: float
    max_tasks: int | None
    max_trials_per_task: int | None
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
    dominant: Literal["within", "between"] | None
    gain_per_cost_task: float
    gain_per_cost_trial: float
    next_new_tasks: int
    next_trials_per_task: int
    next_round_cost: float
    sequence_tasks: int
    most_trials_per_task: int
    planned_trials_per_task: int
    planned_task_cost: float
    planned_top_up_cost: float
    warnings: tuple[str, ...] = ()


def stopping_decision(
    trials: AgentTrials,
    rule: StoppingRule,
    *,
    spent: float | None = None,
    trials_b: AgentTrials | None = None,
) -> StoppingDecision:
    r"""Decide after a round: stop, or continue with more tasks or more trials per task.

    Targets
    -------
    ``StoppingRule(target="accuracy", half_width=h)``: stop when the anytime-valid interval
    for accuracy (:func:`evalnoise.stats.accuracy_sequences.confidence_sequence` with bets
    tuned to h, ``tuning_half_width=h``) has half-width <= h. Its coverage holds at the round
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
    further round) → continue.

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
    (:func:`evalnoise.stats.cost_allocation.optimal_trials_per_task`), and the action is
    ``"more_trials"`` when it exceeds the current T, else ``"more_tasks"`` (with fewer
    trials each if the current T is past the optimum). The next round draws as many new
    tasks as the last round did, fewer if the budget or ``max_tasks`` says so.

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
    agents = [(y, np.asarray(trials.tasks), np.asarray(trials.rounds))]
    if trials_b is not None:
        yb = finite_scores(trials_b.scores, "scores_b", unit=True)
        agents.append((yb, np.asarray(trials_b.tasks), np.asarray(trials_b.rounds)))
    n_trials = sum(a[0].size for a in agents)
    if spent is None:
        spent_v = c1 * sum(pd.unique(a[1]).size for a in agents) + c2 * n_trials
    else:
        spent_v = check_finite_number(spent, "spent")
    remaining = rule.budget - spent_v

    u = entry_units(agents)
    n_tasks = int(u.labels.size)
    last_new, t_cur = last_round_design(u.entry, u.count[:, 0])
    icc_res = icc_oneway(y, agents[0][1], confidence=rule.confidence)
    ctx = dict(remaining=remaining, n_tasks=n_tasks, last_new=last_new)
    base = dict(
        target=rule.target, goal=rule.goal, confidence=rule.confidence, budget=rule.budget,
        cost_per_task=c1, cost_per_trial=c2, max_tasks=rule.max_tasks,
        max_trials_per_task=rule.max_trials_per_task, n_tasks=n_tasks, n_trials=n_trials,
        spent=spent_v, remaining=remaining, icc=float(icc_res.icc),
    )  # fmt: skip
    if rule.target == "icc":
        fields = icc_decision(rule, icc_res, u, ctx, base)
    else:
        fields = sequence_decision(rule, agents, icc_res, u, t_cur, ctx, base)
    return StoppingDecision(**fields)
