"""``evalnoise correct``: accuracy by an LLM judge, corrected with a labelled subset.

Where a benchmark has no reference scorer, a judge scores every trial and a person labels
some of them. The judge's raw accuracy is biased by its error rates; this command reports
it beside two corrections computed from the labelled subset
(:func:`evalnoise.stats.corrected_accuracy`): Rogan–Gladen (1978), which estimates the
judge's sensitivity and specificity on the labelled trials, and prediction-powered
inference (Angelopoulos et al. 2023), which corrects the judge's mean by its average error
on them. The labelled trials must be a random sample of all trials (not chosen by the
judge's verdict); trials are clustered by task.
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

from evalnoise.errors import InputError
from evalnoise.formatting import dumps, pct
from evalnoise.trial_table import read_any

HELP = "accuracy by an LLM judge, corrected for its errors with a labelled subset"


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "correct",
        help=HELP,
        description=HELP + " (Rogan–Gladen and prediction-powered inference).",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("path", help="trial table: one row per trial, CSV, JSONL or Parquet")
    p.add_argument("--judge", default="judge", metavar="COL", help="the judge's 0/1 verdict")
    p.add_argument(
        "--label",
        default="label",
        metavar="COL",
        help="the human (reference) 0/1 label; empty where the trial is not labelled",
    )
    p.add_argument("--task", default="task_id", metavar="COL", help="column naming the task")
    p.add_argument("--confidence", type=float, default=0.95, help="CI level")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.set_defaults(run=run)


def _column(frame: pd.DataFrame, name: str, path: str) -> np.ndarray:
    if name not in frame.columns:
        raise InputError(
            f"no such column (the file has: {', '.join(map(str, frame.columns))})",
            path=path,
            column=name,
        )
    values = pd.to_numeric(frame[name], errors="coerce")
    bad = values.notna() & ~values.isin([0, 1])
    raw_bad = frame[name].notna() & values.isna() & frame[name].astype(str).str.strip().ne("")
    if bad.any() or raw_bad.any():
        row = int(np.flatnonzero((bad | raw_bad).to_numpy())[0])
        raise InputError(
            f"{frame[name].iloc[row]!r} is not 0 or 1", path=path, row=row + 1, column=name
        )
    return values.to_numpy(dtype=float)


def run(args: argparse.Namespace) -> int:
    from evalnoise.stats import corrected_accuracy

    path = str(args.path)
    frame = read_any(path)
    judge = _column(frame, args.judge, path)
    label = _column(frame, args.label, path)
    if np.isnan(judge).any():
        row = int(np.flatnonzero(np.isnan(judge))[0])
        raise InputError(
            "the judge's verdict is missing", path=path, row=row + 1, column=args.judge
        )
    tasks = frame[args.task].astype(str).to_numpy() if args.task in frame.columns else None
    res = corrected_accuracy(judge, label, tasks=tasks, confidence=args.confidence)
    if args.json:
        print(dumps(res.to_dict()))
        return 0
    conf = f"{args.confidence:.0%}"
    rg, ppi = res.rogan_gladen, res.ppi
    print(f"{res.n_trials} trials, {res.n_labelled} labelled")
    print(f"judge (uncorrected):            {pct(res.naive)}")
    print(
        f"labelled subset (reference):    {pct(res.reference_mean)} ({conf} CI "
        f"[{pct(res.reference_ci_low)}, {pct(res.reference_ci_high)}])"
    )
    print(
        f"Rogan–Gladen (Se, Sp corrected): {pct(rg.estimate)} ({conf} CI [{pct(rg.ci_low)}, "
        f"{pct(rg.ci_high)}]); judge sensitivity {pct(rg.sensitivity)}, specificity "
        f"{pct(rg.specificity)}"
    )
    print(
        f"prediction-powered inference:   {pct(ppi.estimate)} ({conf} CI [{pct(ppi.ci_low)}, "
        f"{pct(ppi.ci_high)}])"
    )
    for warning in res.warnings:
        print(f"warning: {warning}")
    return 0
