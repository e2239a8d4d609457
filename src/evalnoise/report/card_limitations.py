"""The limitations of an Evaluation Card: caveats that follow from the card's own numbers.

Each caveat is a threshold from the literature the paper cites (its precision guideline for
the ICC, its convergence finding, Koo & Li's "poor" reliability, the CLT's small-sample
warning) applied to one group record, or a fact of the run that weakens the numbers (an
infrastructure error rate, the ``local`` backend, a group that is not a measurement of the
agent). Pure functions of the records, no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from evalnoise.formatting import finite_or_none as _finite
from evalnoise.formatting import fmt, pct
from evalnoise.report.health import banner_text, expected_text, health_of

__all__ = [
    "ICC_CI_HALF_WIDTH_MAX",
    "ICC_POOR",
    "ICC_SE_MAX",
    "MIN_TASKS",
    "MIN_TRIALS",
    "level_limitations",
    "limitations",
]

#: The paper's precision guideline: SE(ICC) ≤ 0.03, i.e. a 95 % CI of about ± 0.06.
ICC_SE_MAX = 0.03
ICC_CI_HALF_WIDTH_MAX = 0.06
#: The paper finds ICC converges by 8–16 trials for structured tasks (≥ 32 for complex ones).
MIN_TRIALS = 8
#: Koo & Li (2016): ICC below 0.5 is poor reliability.
ICC_POOR = 0.5
#: Below this many tasks, CLT-based intervals for accuracy are unreliable (the position paper
#: "When Not to Rely on the Central Limit Theorem in LLM Evaluation", cited by the paper).
MIN_TASKS = 30


def _clause(sentence: str) -> str:
    """A sentence continued mid-list: its first letter in lower case."""
    return sentence[0].lower() + sentence[1:]


def limitations(
    record: Mapping[str, Any],
    *,
    trials_min: float | None = None,
    backend: str | None = None,
    infra_error_rate: float | None = None,
    infra_policy: str | None = None,
    converged: bool | None = None,
) -> list[str]:
    """Caveats that follow from the numbers of one card, in this order:

    - the group is not a measurement of the agent (its ``health``), with the reasons; or its
      failures were declared as the experiment (``health.expected_failures``);
    - ICC imprecise: SE(ICC) > :data:`ICC_SE_MAX` or CI half-width > :data:`ICC_CI_HALF_WIDTH_MAX`
      (the paper's guideline);
    - fewer than :data:`MIN_TRIALS` trials per task: ICC may not have converged;
    - convergence analysis: the mean ICC had not settled before using all trials;
    - ICC < :data:`ICC_POOR` (Koo & Li "poor"): single-run results are unreliable;
    - a negative σ²_between estimate (MSB < MSW);
    - fewer than :data:`MIN_TASKS` tasks;
    - a non-zero infrastructure error rate, with the policy that decided how it counts;
    - the ``local`` backend (weaker isolation than a container);
    - the statistics' own warnings.

    Per-level caveats are :func:`level_limitations`
    (:func:`evalnoise.report.cards.evaluation_card` adds them).
    """
    out: list[str] = []
    health = health_of(record)
    banner = banner_text(health)
    if banner is not None:
        out.append(_clause(banner))
    expected = expected_text(health)
    if expected is not None:
        out.append(_clause(expected))
    icc = _finite(record.get("icc"))
    se = _finite(record.get("icc_se"))
    low, high = _finite(record.get("icc_ci_low")), _finite(record.get("icc_ci_high"))
    if icc is None:
        out.append("ICC undefined for these data (see warnings): consistency unknown")
    else:
        half = (high - low) / 2 if low is not None and high is not None else None
        too_wide = half is not None and half > ICC_CI_HALF_WIDTH_MAX
        too_uncertain = se is not None and se > ICC_SE_MAX
        if too_wide or too_uncertain:
            parts = []
            if se is not None:
                parts.append(f"SE {se:.3f}")
            if half is not None:
                parts.append(f"CI ± {half:.3f}")
            out.append(
                f"ICC CI wider than ± {ICC_CI_HALF_WIDTH_MAX:g} ({', '.join(parts)}; "
                f"guideline SE ≤ {ICC_SE_MAX:g}): more tasks or trials needed for a precise ICC"
            )
    if trials_min is not None and trials_min < MIN_TRIALS:
        out.append(
            f"fewer than {MIN_TRIALS} trials per task ({fmt(trials_min, 'g')}): "
            "ICC may not have converged"
        )
    if converged is False:
        out.append(
            "convergence analysis: the mean ICC over subsamples had not settled within "
            "tolerance before all trials were used"
        )
    if icc is not None and icc < ICC_POOR:
        out.append(
            f"ICC poor ({icc:.3f} < {ICC_POOR:g}): single-run results unreliable; "
            "heavier resampling needed"
        )
    s2b = _finite(record.get("sigma2_between"))
    if s2b is not None and s2b < 0:
        out.append(
            f"negative σ²_between estimate ({s2b:.4g}): tasks do not differ more than trial "
            "noise (MSB < MSW); ICC is negative"
        )
    n_tasks = record.get("n_tasks")
    if n_tasks is not None and int(n_tasks) < MIN_TASKS:
        out.append(
            f"small sample: {int(n_tasks)} tasks (< {MIN_TASKS}); CLT-based CIs of accuracy "
            "may be too narrow"
        )
    rate = _finite(infra_error_rate)
    if rate is not None and rate > 0:
        how = f" (infra policy: {infra_policy})" if infra_policy else ""
        out.append(f"{pct(rate)} of trials ended in an infrastructure failure{how}")
    if backend == "local":
        out.append(
            "local backend: weaker isolation (host filesystem and network); no CPU limit and "
            "no memory guarantee, memory capped as address space; OOM kills not observable"
        )
    for warning in record.get("warnings") or ():
        if warning not in out:
            out.append(str(warning))
    return out


def level_limitations(
    levels: Sequence[Mapping[str, Any]], *, group_invalid: bool = False
) -> list[str]:
    """Per task complexity level, sorted by level: a level that is no measurement (unless the
    whole group is not, which :func:`limitations` says once), and a level whose own ICC is
    undefined or below :data:`ICC_POOR` — the paper's "highly stochastic level"."""
    out = []
    for rec in sorted(levels, key=lambda r: str(r["level"])):
        banner = banner_text(health_of(rec))
        if banner is not None and not group_invalid:
            out.append(f"level {rec['level']}: {_clause(banner)}")
        icc = _finite(rec.get("icc"))
        if icc is None:
            out.append(f"level {rec['level']}: ICC undefined")
        elif icc < ICC_POOR:
            out.append(
                f"level {rec['level']}: highly stochastic (ICC {icc:.3f} < {ICC_POOR:g}); "
                "its results are unreliable from a single run"
            )
    return out
