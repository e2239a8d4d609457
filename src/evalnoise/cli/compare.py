"""``evalnoise compare``: two groups on the same tasks — paired difference, McNemar, bootstrap.

Two forms: ``evalnoise compare PATH A B`` compares groups A and B of one trial table;
``evalnoise compare RUN_A RUN_B`` compares a baseline run with a candidate run
(:mod:`evalnoise.cli.compare_runs`, loaded only for that form).
"""

from __future__ import annotations

import argparse
from typing import Any

from evalnoise.cli._columns import add_column_options, announce, resolved_columns
from evalnoise.cli.analyze import with_outcomes
from evalnoise.errors import InputError
from evalnoise.formatting import dumps, fmt, pct
from evalnoise.stats import compare
from evalnoise.trial_table import read_any, shown_group, validate_trials

HELP = "compare two groups of one run, or a baseline run with a candidate run, on the same tasks"


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "compare",
        help=HELP,
        description=HELP + ": paired task-level difference, McNemar on trial-aligned pairs, "
        "paired bootstrap over tasks, minimum detectable difference. `compare PATH A B`: "
        "groups A and B of one trial table (diff = A − B). `compare RUN_A RUN_B`: each RUN a "
        "results directory, a trials file or a git/DVC revision of results/; groups matched "
        "by name (or --pair), trials paired by task, diff = B − A (B the candidate), p-values "
        "Holm-adjusted over the pairs, and whether the runs are comparable.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument(
        "first",
        metavar="PATH|RUN_A",
        help="trial table (one row per group, task, trial), or the baseline run",
    )
    p.add_argument("second", metavar="A|RUN_B", help="first group, or the candidate run")
    p.add_argument(
        "third", metavar="B", nargs="?", default=None, help="second group (diff = A − B)"
    )
    p.add_argument(
        "--group",
        default=None,
        metavar="COL",
        help="column naming the group (default: the group column the file stores, as "
        "`evalnoise import` writes it)",
    )
    add_column_options(p, group_default="required")
    p.add_argument(
        "--status",
        default="status",
        metavar="COL",
        help="column with each trial's outcome; when the file has it, a failed trial "
        "without a score counts as incorrect and an ok trial without one is left out, as "
        "in analyze",
    )
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.add_argument("--confidence", type=float, default=0.95, help="CI level")
    p.add_argument("--resamples", type=int, default=10_000, help="paired bootstrap resamples")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    runs = p.add_argument_group("two runs (compare RUN_A RUN_B)")
    runs.add_argument(
        "--pair",
        action="append",
        metavar="A=B",
        help="compare the baseline's group A with the candidate's group B (repeatable; "
        "default: every group name both runs have)",
    )
    runs.add_argument(
        "--gate",
        type=float,
        default=None,
        metavar="MARGIN",
        help="regression gate: exit 0 when the lower CI bound of B − A is above −MARGIN "
        "(non-inferior), 1 when the upper bound is below 0 (a regression), 3 when neither",
    )
    runs.add_argument(
        "--sequential",
        action="store_true",
        help="gate on the anytime-valid confidence sequence (valid however often a growing "
        "run is checked)",
    )
    runs.add_argument(
        "--block",
        default=None,
        metavar="COL",
        help="trials file: the column numbering the block (round) a trial ran in, for "
        "--sequential (results directories use the trial block)",
    )
    runs.add_argument(
        "--repo", default=".", metavar="DIR", help="git repository a RUN revision refers to"
    )
    runs.add_argument(
        "--output", "-o", default=None, metavar="FILE", help="also write the JSON record here"
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if args.third is None:
        from evalnoise.cli import compare_runs

        return compare_runs.run(args)
    given = [
        flag
        for flag, value in (
            ("--pair", args.pair),
            ("--gate", args.gate),
            ("--sequential", args.sequential),
            ("--block", args.block),
            ("--output", args.output),
        )
        if value not in (None, False)
    ]
    if given:
        raise InputError(
            f"{', '.join(given)}: only for two runs (compare RUN_A RUN_B), not for two groups "
            "of one table (compare PATH A B)"
        )
    args.path, args.a, args.b = args.first, args.second, args.third
    raw = read_any(args.path)
    columns, used = resolved_columns(raw, args, path=str(args.path))
    if columns.group is None:
        raise InputError(
            "compare needs a group column and the file stores none: give --group COL",
            path=args.path,
        )
    counted, _ = with_outcomes(raw, columns, args.status, str(args.path))
    frame = validate_trials(counted, columns, path=str(args.path))
    present = set(frame["group"].unique())
    for name in (args.a, args.b):
        if name not in present:
            have = ", ".join(repr(shown_group(g)) for g in sorted(present))
            raise InputError(
                f"group {name!r} not found (groups: {have})", path=args.path, column=columns.group
            )
    announce("compare", used)
    a = frame[frame["group"] == args.a]
    b = frame[frame["group"] == args.b]
    res = compare(
        a["task"].to_numpy(),
        a["trial"].to_numpy(),
        a["score"].to_numpy(),
        b["task"].to_numpy(),
        b["trial"].to_numpy(),
        b["score"].to_numpy(),
        names=(args.a, args.b),
        confidence=args.confidence,
        n_resamples=args.resamples,
        seed=args.seed,
    )
    rec: dict[str, Any] = res.to_dict()
    if args.json:
        print(dumps(rec))
        return 0
    m = rec["mcnemar"]
    bs = rec["bootstrap"]
    print(f"{args.a} vs {args.b} on {rec['n_tasks']} common tasks")
    print(f"  accuracy         {pct(rec['mean_a'])} vs {pct(rec['mean_b'])}")
    print(
        f"  difference (a−b) {pct(rec['diff'])}  {args.confidence:.0%} CI "
        f"[{pct(rec['ci_low'])}, {pct(rec['ci_high'])}]  paired SE {fmt(rec['se_paired'])}"
        f"  p = {fmt(rec['pvalue'], '.3g')}"
    )
    if m is None:
        why = next((w for w in rec["warnings"] if w.startswith("McNemar ")), "McNemar n/a")
        print(f"  McNemar          {why.removeprefix('McNemar ')}")
    else:
        print(
            f"  McNemar          n01 = {m['n01']} (a wrong, b right), n10 = {m['n10']}, "
            f"χ² = {fmt(m['statistic'])}, p = {fmt(m['pvalue'], '.3g')} "
            f"(exact {fmt(m['pvalue_exact'], '.3g')})"
        )
    print(
        f"  paired bootstrap {args.confidence:.0%} CI [{pct(bs['ci_low'])}, "
        f"{pct(bs['ci_high'])}], SE {fmt(bs['se'])} ({bs['n_resamples']} resamples, "
        f"seed {bs['seed']})"
    )
    print(f"  minimum detectable difference (α = 0.05, power 0.8): {pct(rec['mdd'])}")
    return 0
