"""``evalnoise compare RUN_A RUN_B``: a baseline run against a candidate run, group by group.

Each RUN is a results directory (or a project directory holding ``results/``), a trials
file, or a git/DVC revision of ``results/`` in the repository of the current directory (or
``--repo``). The statistics are :func:`evalnoise.pipeline.run_comparison.compare_runs`'; this
module reads the runs, prints, writes ``--output`` and turns the gate's decision into the exit
status: 0 non-inferior, 1 a regression shown, 3 inconclusive (2 stays bad input).
"""

from __future__ import annotations

import argparse
import contextlib
from pathlib import Path
from typing import Any

from evalnoise.errors import InputError
from evalnoise.formatting import dumps, fmt, pct

#: The gate's exit status for each decision; several pairs: a regression anywhere is 1,
#: else any inconclusive pair is 3, else 0.
GATE_EXIT = {"non_inferior": 0, "regression": 1, "inconclusive": 3}


def parse_pairs(values: list[str] | None) -> list[tuple[str, str]]:
    """``--pair BASELINE=CANDIDATE`` values as (baseline, candidate) names."""
    out = []
    for value in values or []:
        a, sep, b = value.partition("=")
        if not sep or not a or not b:
            raise InputError(f"--pair {value!r}: expected BASELINE_GROUP=CANDIDATE_GROUP")
        out.append((a, b))
    return out


def _read_trials_file(path: str, args: argparse.Namespace):
    """A trials file as a run: the analyze command's columns and outcome rules."""
    from evalnoise.cli._columns import resolved_columns
    from evalnoise.cli.analyze import with_outcomes
    from evalnoise.pipeline.run_comparison import Run
    from evalnoise.trial_table import read_any, validate_trials

    raw = read_any(path)
    columns, _ = resolved_columns(raw, args, path=path)
    counted, _ = with_outcomes(raw, columns, args.status, path)
    frame = validate_trials(counted, columns, path=path)
    if args.block is not None:
        if args.block not in counted.columns:
            raise InputError("no such column", path=path, column=args.block)
        frame["block"] = counted[args.block].to_numpy()
    tasks = None
    if "task_id" in counted.columns and "question" in counted.columns:
        tasks = counted[["task_id", "question"]].drop_duplicates("task_id")
    return Run(source=path, kind="trials", frame=frame, tasks=tasks)


@contextlib.contextmanager
def _opened(spec: str, args: argparse.Namespace):
    """The run named by ``spec``: a trials file, a results directory, or a revision."""
    from evalnoise.pipeline.run_sources import (
        is_revision,
        materialised_revision,
        read_results_dir,
    )

    p = Path(spec)
    if p.is_file():
        yield _read_trials_file(spec, args)
    elif p.is_dir():
        yield read_results_dir(p, source=spec)
    elif is_revision(spec, args.repo):
        with materialised_revision(spec, args.repo) as root:
            run = read_results_dir(root, source=spec)
            run.kind = "revision"
            yield run
    else:
        raise InputError(
            f"not a trials file, a results directory or a git revision of {args.repo}",
            path=spec,
        )


def gate_exit(records: list[dict[str, Any]]) -> int:
    """The gate's exit status over every pair (:data:`GATE_EXIT`)."""
    decisions = {r["gate"]["decision"] for r in records}
    if "regression" in decisions:
        return GATE_EXIT["regression"]
    if "inconclusive" in decisions:
        return GATE_EXIT["inconclusive"]
    return GATE_EXIT["non_inferior"]


def run(args: argparse.Namespace) -> int:
    from evalnoise.atomic import write_text
    from evalnoise.pipeline.run_comparison import compare_runs, comparison_record

    if args.gate is not None and args.gate < 0:
        raise InputError(f"--gate {args.gate}: the margin must be >= 0")
    if args.sequential and args.gate is None:
        raise InputError("--sequential is the gate's anytime-valid version: give --gate MARGIN")
    pairs = parse_pairs(args.pair)
    with _opened(args.first, args) as baseline, _opened(args.second, args) as candidate:
        try:
            records = compare_runs(
                baseline,
                candidate,
                pairs,
                confidence=args.confidence,
                n_resamples=args.resamples,
                seed=args.seed,
                margin=args.gate,
                sequential=args.sequential,
            )
        except ValueError as exc:
            raise InputError(str(exc)) from exc
        record = comparison_record(baseline, candidate, records)
    status = 0
    if args.gate is not None:
        status = gate_exit(records)
        record["gate"] = {
            "margin": args.gate,
            "sequential": bool(args.sequential),
            "exit_code": status,
        }
    if args.output:
        write_text(args.output, dumps(record) + "\n")
    if args.json:
        print(dumps(record))
    else:
        print("\n".join(text_lines(record, args.confidence)))
    return status


def _signed(value: Any) -> str:
    text = pct(value)
    return text if text.startswith(("-", "—")) else "+" + text


def pair_lines(r: dict[str, Any], confidence: float) -> list[str]:
    """One pair in words: the numbers, the verdict with the MDD, comparability, the gate."""
    level = f"{confidence:.0%}"
    lines = [
        f"{r['baseline']} → {r['candidate']} on {r['n_tasks']} common tasks "
        f"({r['n_trials_baseline']} and {r['n_trials_candidate']} trials)",
        f"  accuracy           {pct(r['mean_baseline'])} → {pct(r['mean_candidate'])}",
        f"  difference (B − A) {_signed(r['diff'])}  {level} CI [{pct(r['ci_low'])}, "
        f"{pct(r['ci_high'])}]  p = {fmt(r['pvalue'], '.3g')} "
        f"(Holm {fmt(r['pvalue_holm'], '.3g')})",
    ]
    mc = r["mcnemar"]
    if mc is not None:
        lines.append(
            f"  McNemar            right only in the candidate {mc['candidate_only_right']}, "
            f"only in the baseline {mc['baseline_only_right']}, p = "
            f"{fmt(mc['pvalue'], '.3g')} (Holm {fmt(mc.get('pvalue_holm'), '.3g')}; trials "
            "of a task are not independent: the paired t is the test)"
        )
    mdd = pct(r["mdd"])
    if r["detected"]:
        verdict = f"difference detected ({_signed(r['diff'])})"
    elif r["degenerate"]:
        verdict = (
            "no difference detected; every task differs by the same amount, so the design "
            "gives no spread to size the MDD from"
        )
    else:
        verdict = (
            f"no difference detected; a difference smaller than the MDD {mdd} would go "
            "unseen at this design"
        )
    lines.append(f"  MDD (α 0.05, 80 %) {mdd}")
    lines.append(f"  verdict            {verdict}")
    comp = r["comparability"]
    affecting = [d for d in comp["differences"] if d["affects"]]
    other = [d for d in comp["differences"] if not d["affects"]]
    head = "yes" if comp["comparable"] else "NO"
    lines.append(f"  comparable         {head}")
    for why in comp["not_measurements"]:
        lines.append(f"    {why}")
    lines += [f"    note: {note}" for note in comp["notes"]]
    for d in affecting:
        lines.append(f"    differs: {d['what']}: {d['baseline']!r} → {d['candidate']!r}")
    if other:
        shown = ", ".join(f"{d['what']} {d['baseline']!r} → {d['candidate']!r}" for d in other[:4])
        more = f" and {len(other) - 4} more" if len(other) > 4 else ""
        lines.append(f"    differs without changing the measurement: {shown}{more}")
    for d in comp["agent_differences"][:6]:
        lines.append(f"    agent: {d['what']}: {d['baseline']!r} → {d['candidate']!r}")
    if r["sequential"] is not None:
        s = r["sequential"]
        lines.append(
            f"  anytime-valid CS   [{pct(s['ci_low'])}, {pct(s['ci_high'])}] over "
            f"{s['n_tasks'][-1]} tasks (estimate {_signed(s['mean'])})"
        )
        lines += [f"    {w}" for w in s["warnings"]]
    if r["gate"] is not None:
        g = r["gate"]
        words = {
            "non_inferior": f"non-inferior: the lower bound {pct(g['ci_low'])} is above "
            f"−{pct(g['margin'])}",
            "regression": f"regression: the upper bound {pct(g['ci_high'])} is below 0"
            + (" (by less than the margin)" if g["within_margin"] else ""),
            "inconclusive": f"inconclusive: [{pct(g['ci_low'])}, {pct(g['ci_high'])}] "
            f"neither clears −{pct(g['margin'])} nor lies below 0",
        }[g["decision"]]
        lines.append(f"  gate               {words}")
        lines += [f"    {why}" for why in g["why"]]
        d = r["design"]
        if g["decision"] == "inconclusive" and d is not None:
            trials = (
                f"or {d['trials_needed']} trials per task ({d['more_trials']} more) on these tasks"
                if d["trials_needed"] is not None
                else "more trials per task alone cannot reach it"
            )
            lines.append(
                f"    the MDD reaches the margin with {d['tasks_needed']} tasks "
                f"({d['more_tasks']} more) at {fmt(d['trials'], '.3g')} trials per task, "
                f"{trials}"
            )
    for w in r["warnings"]:
        lines.append(f"  note: {w}")
    return lines


def text_lines(record: dict[str, Any], confidence: float) -> list[str]:
    """The whole comparison in words."""
    b, c = record["baseline"], record["candidate"]
    lines = [
        f"baseline (A):  {b['source']} ({b['kind']}; {', '.join(b['groups'])})",
        f"candidate (B): {c['source']} ({c['kind']}; {', '.join(c['groups'])})",
    ]
    for r in record["pairs"]:
        lines.append("")
        lines += pair_lines(r, confidence)
    if record["gate"] is not None:
        g = record["gate"]
        lines += ["", f"gate exit status {g['exit_code']} (0 non-inferior, 1 regression, 3 "
                  "inconclusive)"]  # fmt: skip
    return lines
