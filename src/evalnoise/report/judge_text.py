"""The judges in words: an LLM or rule judge beside the reference scorer, for the cards, the
page's summary and ``summary.txt``.

A group record's ``judge`` (:func:`evalnoise.pipeline.judging.judges_summary`) becomes one
line for the first (primary) judge (:func:`judge_text`: accuracy by the judge, parse rate, κ
against the reference with its CI, false accept and reject rates, variance shares) and, with
several judges, one row per other judge and one for the judges as a facet of the G study
(:func:`judges_rows`). A trial the judge could not judge is counted and named (UNJUDGED),
never read as a verdict. Pure functions of the record: the summarize rule hashes this module
(``code_version("summary")``), not the rest of the report.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evalnoise.formatting import fmt, pct

__all__ = ["judge_text", "judges_rows"]


def _judged_text(j: Mapping[str, Any]) -> str:
    """``parsed 100.0% of 96`` or, with unjudged trials, ``16 of 96 UNJUDGED (16 calls
    failed, 0 replies unparseable); parsed 100.0% of the 80 replies``."""
    sent, unjudged = j.get("sent"), j.get("unjudged") or 0
    if not unjudged:
        return f"parsed {pct(j.get('parse_rate'))} of {sent}"
    failed, unparsed = j.get("call_failures"), j.get("unparsed")
    replies = None if failed is None or sent is None else sent - failed
    split = (
        ""
        if failed is None
        else f" ({failed} call{'s' if failed != 1 else ''} failed, {unparsed} "
        f"repl{'ies' if unparsed != 1 else 'y'} unparseable)"
    )
    parsed = f"parsed {pct(j.get('parse_rate'))} of " + (
        f"the {replies} replies" if replies is not None else f"{sent}"
    )
    return f"{unjudged} of {sent} UNJUDGED{split}; {parsed}"


#: what a judge's accuracy reads as in a group that is not a measurement of the agent
WITHHELD_ACCURACY = "no accuracy (withheld: the group is not a measurement of the agent)"


def _accuracy_text(j: Mapping[str, Any], conf: str) -> str:
    """``accuracy 41.7% (95% CI [30.1%, 53.2%])``, or no number at all when the group's
    headline is withheld (``withheld`` in the record): the judge's scores of a group that is
    not a measurement of the agent are no measurement either."""
    if j.get("withheld"):
        return WITHHELD_ACCURACY
    return (
        f"accuracy {pct(j.get('accuracy'))} ({conf} CI [{pct(j.get('ci_low'))}, "
        f"{pct(j.get('ci_high'))}])"
    )


def judge_text(j: Mapping[str, Any], conf: str) -> str:
    """The LLM judge beside the reference scorer: its accuracy, parse rate, kappa against
    the reference with its CI, error rates, and its share of the score variance."""
    samples = j.get("samples") or 1
    # with several judges, the line of the first one names it (judges_rows: the others)
    name = f" {j.get('name')}" if len(j.get("judges") or ()) > 1 else ""
    text = (
        f"judge{name} ({j.get('mode')}, {samples} sample{'s' if samples != 1 else ''} per trial): "
        f"{_accuracy_text(j, conf)}; {_judged_text(j)}; "
        f"κ = {fmt(j.get('kappa'), '.2f')} [{fmt(j.get('kappa_ci_low'), '.2f')}, "
        f"{fmt(j.get('kappa_ci_high'), '.2f')}], false accept {pct(j.get('false_accept_rate'))}, "
        f"false reject {pct(j.get('false_reject_rate'))}"
    )
    if j.get("share_judge") is not None:
        text += (
            f"; variance shares task {fmt(j.get('share_task'), '.2f')} / trial "
            f"{fmt(j.get('share_trial'), '.2f')} / judge {fmt(j.get('share_judge'), '.2f')}"
        )
    if j.get("degenerate"):
        text += f"; DEGENERATE: {j.get('degenerate_reason')}"
    return text


def judges_rows(j: Mapping[str, Any], conf: str) -> list[tuple[str, str]]:
    """With several judges, beside :func:`judge_text` (the first judge's line): one
    ``("Judge NAME", text)`` per other judge — its κ against the reference with its interval,
    false accept and reject rates, parse rate, accuracy by it — and ``("Judges as a facet",
    text)``: the judges' variance components with their intervals and the best judge. Empty
    with one judge."""
    judges = j.get("judges") or []
    if len(judges) < 2:
        return []
    rows = []
    for r in judges[1:]:
        how = f"rule {r.get('rule')}" if r.get("kind") == "rule" else r.get("mode")
        samples = r.get("samples") or 1
        text = (
            f"{how}, {samples} sample{'s' if samples != 1 else ''} per trial: "
            f"κ = {fmt(r.get('kappa'), '.2f')} [{fmt(r.get('kappa_ci_low'), '.2f')}, "
            f"{fmt(r.get('kappa_ci_high'), '.2f')}], false accept "
            f"{pct(r.get('false_accept_rate'))}, false reject {pct(r.get('false_reject_rate'))}; "
            f"{_judged_text(r)}; "
            + (WITHHELD_ACCURACY if j.get("withheld") else f"accuracy {pct(r.get('accuracy'))}")
        )
        if r.get("same_as_reference"):
            text += " (the reference scorer's own rule: agrees by construction)"
        if r.get("degenerate"):
            text += "; DEGENERATE"
        rows.append((f"Judge {r['name']}", text))
    facet = j.get("judge_facet") or {}
    text = f"{len(judges)} judges; " + (
        _facet_text(facet, conf)
        if facet.get("components")
        else "no variance components (too few judged trials)"
    )
    best = next((r for r in judges if r["name"] == j.get("best_judge")), None)
    if best is not None:
        text += f"; best judge {best['name']} (κ = {fmt(best.get('kappa'), '.2f')})"
    rows.append(("Judges as a facet", text))
    return rows


def _sigma2(c: Mapping[str, Any]) -> str:
    return (
        f"σ²({c['component']}) {fmt(c.get('sigma2'), '.4f')} [{fmt(c.get('ci_low'), '.4f')}, "
        f"{fmt(c.get('ci_high'), '.4f')}]"
    )


def _facet_text(facet: Mapping[str, Any], conf: str) -> str:
    """The judges as a facet: the components the judges' share is made of (judge, task ×
    judge) with their intervals, the share by the share rule (detected when the interval of
    their sum excludes 0; a component "detected" only under a detected share), then the
    trial × judge components — judges disagreeing on single trials, in the residual with
    the votes' own noise when each judge voted once — shown as such and not counted."""
    comps = facet.get("components") or []
    # a record from before the share rule has no "counted": judge and task×judge are the share
    counted = [c for c in comps if c.get("counted", c["component"] in ("judge", "task×judge"))]
    apart = [c for c in comps if c not in counted]
    names = " + ".join(f"σ²({c['component']})" for c in counted) or "no judge component"
    detected = bool(facet.get("detected_judges"))
    interval = (
        f"[{fmt(facet.get('sigma2_judges_ci_low'), '.4f')}, "
        f"{fmt(facet.get('sigma2_judges_ci_high'), '.4f')}]"
    )
    if detected:
        which = ", ".join(
            f"{c['component']} {'detected' if c.get('detected') else 'not detected'}"
            for c in counted
        )
        share = (
            f"judges' share {fmt(facet.get('share_judges_estimate'), '.2f')} ({names}, "
            f"σ² {fmt(facet.get('sigma2_judges'), '.4f')} {interval}): {which}"
        )
    else:
        share = (
            f"judges' share: not detected ({names} {fmt(facet.get('sigma2_judges'), '.4f')} "
            f"{interval}; estimate {fmt(facet.get('share_judges_estimate'), '.2f')})"
        )
    cut = any(c.get("ci_high_cut") for c in comps)
    bound = facet.get("variance_bound")
    text = (
        ", ".join(_sigma2(c) for c in counted)
        + f" ({facet.get('method')}, {conf} {facet.get('ci_method')} intervals"
        + (
            f"; upper ends cut at {fmt(bound, '.2f')}, the largest variance of 0/1 votes"
            if cut and bound is not None
            else ""
        )
        + f"); {share}"
    )
    if apart:
        text += "; not in the share: " + ", ".join(
            _sigma2(c)
            + (
                " (judges disagreeing on single trials, confounded with each vote's own noise)"
                if c["component"].startswith("residual")
                else " (judges disagreeing on single trials)"
            )
            for c in apart
        )
    return text
