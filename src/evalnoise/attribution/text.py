"""The attribution's lines of text: what ``summary.txt`` and ``evalnoise analyze`` print.

One implementation for both, so the pipeline's summary and the CLI's output of the same
trials read the same.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evalnoise.design_text import choice_text, facet_count

__all__ = [
    "attribution_lines",
    "infra_components_text",
    "noise_lines",
    "resource_finding",
    "resource_line",
]


def _p(value: Any) -> str:
    return "—" if value is None else f"{100 * float(value):.1f}%"


def _f(value: Any, spec: str = ".2f") -> str:
    return "—" if value is None else format(float(value), spec)


def _pv(value: Any) -> str:
    return "—" if value is None else f"{float(value):.2g}"


def infra_components_text(a: Mapping[str, Any]) -> str | None:
    """Each infrastructure component's decision, as the share rule makes it
    (:func:`evalnoise.stats.shares.share_decision`): ``time_block detected (share 0.10,
    p = 0.002), task:time_block not detected (p = 0.41)``. None for a record without the
    permutation test's p-values."""
    per = a.get("infra_share_components_ci") or {}
    names = list(a.get("infra_components") or ())
    if not any((per.get(n) or {}).get("pvalue") is not None for n in names):
        return None  # a record from before the permutation test
    parts = []
    for name in names:
        c = per.get(name) or {}
        if c.get("pvalue") is None:
            parts.append(f"{name} not tested (too few trials per cell)")
        elif not c.get("detected") and c.get("testable") is False:
            parts.append(
                f"{name} not testable at this design (p = {_pv(c['pvalue'])}; the smallest "
                f"p these trials can give is {_pv(c['min_pvalue'])})"
            )
        elif c.get("detected"):
            parts.append(f"{name} detected (share {_f(c.get('share'))}, p = {_pv(c['pvalue'])})")
        else:
            parts.append(f"{name} not detected (p = {_pv(c['pvalue'])})")
    return ", ".join(parts)


def attribution_lines(a: Mapping[str, Any]) -> list[str]:
    """Policy sensitivity, the infrastructure share of variance, drift and flaky tasks.

    The share is printed as a number only when it is detected (``infra_share_detected``:
    the permutation test of its components rejects), and then with each component's
    decision — "time_block detected (share …), task:time_block not detected" — so the
    share's line and its components' never disagree; otherwise the line says "not detected"
    and gives the components' p-values and the share's interval."""
    parts = []
    for row in a["policy"]:
        name = row["policy"].replace("_", " ")
        if not row["applicable"]:
            parts.append(f"{name} n/a")
        else:
            parts.append(f"{name} {_p(row['mean'])} [{_p(row['ci_low'])}, {_p(row['ci_high'])}]")
    moves = "YES — the policy moves the result" if a["policy_moves_result"] else "no"
    if a.get("time_effects_not_computed"):
        share = f"infrastructure share of variance: not computed ({a['time_effects_not_computed']})"
        flaky = (
            f"flaky tasks: {a['flaky_flagged']} (checks run: {', '.join(a['flaky_checks_run'])})"
        )
        return [
            f"infra policy: {' | '.join(parts)}; choice moves the result: {moves}",
            share,
            flaky,
        ]
    where = (
        # the same words as the report's share line when the model kept no infra term
        f"{' + '.join(a['infra_components']) or 'no infrastructure component'}; "
        f"{facet_count('time_block', a['time_blocks'])}"
        # a table with no host column has no host count to give
        + (f", {facet_count('host', a['hosts'])}" if a["hosts"] else "")
    )
    decisions = infra_components_text(a)
    test = (
        f"permutation test within tasks, {a['infra_share_permutations']} permutations; "
        if decisions is not None and a.get("infra_share_permutations")
        else ""
    )
    interval = f"[{_f(a['infra_share_ci_low'])}, {_f(a['infra_share_ci_high'])}]"
    if a.get("infra_share_detected", True) is False and a["infra_components"]:
        # no evidence of a share: say so, not a number
        why = (
            f"{decisions}; {test}share {interval}"
            if decisions is not None
            else f"the interval of its variance reaches 0: share {interval}"
        )
        share = (
            f"infrastructure share of variance: not detected ({why}; {where}); "
            f"drift p = {_f(a['drift_pvalue'], '.2g')}"
        )
    else:
        share = (
            f"infrastructure share of variance {_f(a['infra_share'])} {interval}"
            + (f": {decisions}" if decisions else "")
            + f" ({test}{where}); drift p = {_f(a['drift_pvalue'], '.2g')}"
        )
    flaky = f"flaky tasks: {a['flaky_flagged']} (checks run: {', '.join(a['flaky_checks_run'])})"
    return [
        f"infra policy: {' | '.join(parts)}; choice moves the result: {moves}",
        share,
        *noise_lines(a.get("noise")),
        flaky,
    ]


def _component(c: Mapping[str, Any]) -> str:
    name = c["component"]
    untestable = "; not testable at this design" if c.get("testable") is False else ""
    test = (
        f" (permutation p = {_pv(c.get('pvalue'))}{untestable})"
        if c.get("detected_by") == "permutation"
        else ""
    )
    if not c.get("detected"):
        return (
            f"{name} not detected [{_f(c.get('ci_low'), '.3g')}, {_f(c.get('ci_high'), '.3g')}]"
            + test
        )
    share = c.get("share") if c.get("share") is not None else c.get("share_estimate")
    return (
        f"{name} {_f(c['sigma2'], '.3g')} [{_f(c.get('ci_low'), '.3g')}, "
        f"{_f(c.get('ci_high'), '.3g')}] share {_f(share)}{test}"
    )


def noise_lines(noise: Mapping[str, Any] | None) -> list[str]:
    """Every source of noise in one model (:func:`evalnoise.facets.noise_record`): each
    variance component with its interval and share ("not detected" when its interval reaches
    0, or for a time or host component when its permutation test does not reject), the
    total-error SE of the accuracy beside the task-clustered SE, and what buys a
    smaller one (the D study)."""
    if not noise or not noise.get("gstudy"):
        return []
    g, d = noise["gstudy"], noise["dstudy"]
    te = d["total_error"]
    ratio = te.get("se_ratio")
    head = (
        f"noise, one model ({g.get('method')}; intervals {g.get('ci_method')}): total-error SE "
        f"{_f(te['se'], '.3f')} (95% CI [{_p(te['ci_low'])}, {_p(te['ci_high'])}]) beside the "
        f"task-clustered SE {_f(te.get('se_clustered'), '.3f')}"
        + (f" (× {ratio:.2f})" if ratio is not None else "")
    )
    comps = "components: " + " | ".join(_component(c) for c in g["components"])
    lines = [head, "  " + comps]
    doubled = [p for p in d.get("projections", ()) if p["change"] != "as ran"]
    if doubled:
        lines.append(
            "  D study, SE if doubled: "
            + ", ".join(f"{p['change'].replace(' ×2', '')} → {_f(p['se'], '.3f')}" for p in doubled)
        )
    cheapest = d.get("cheapest")
    if cheapest:
        lines.append("  " + choice_text(cheapest, as_ran=True, cost_unit="trials"))
    return lines


def resource_finding(r: Mapping[str, Any]) -> str:
    """What one agent's resource comparison found: how many tasks change outcome between
    the two profiles (exact McNemar per task, adjusted across tasks: ``significant`` means
    q ≤ alpha) and how many need memory between the two hard limits."""
    sig = list(r.get("significant") or ())
    between = list(r.get("between_limits") or ())
    return (
        f"{len(sig)} of {r.get('n_tasks')} tasks change outcome "
        f"({r.get('adjust', 'BH')}, q ≤ {float(r.get('alpha', 0.05)):g})"
        + (f": {', '.join(sig)}" if sig else "")
        + f"; {len(between)} need memory between the two hard limits"
        + (f": {', '.join(between)}" if between else "")
        + (f" (need: {r['memory_need']})" if r.get("memory_need") else "")
    )


def resource_line(r: Mapping[str, Any]) -> str:
    """The summary's line of one agent's resource comparison (:func:`resource_finding`)."""
    return (
        f"resource sensitivity ({r['agent']}: {r['profile_a']} vs {r['profile_b']}): "
        + resource_finding(r)
    )
