"""Which Terminal-Bench (core 0.1.1) agents can be told apart from noise?

For every pair of leaderboard submissions, over the tasks both ran (all 80):

- the paired difference of accuracies on task means, d_i = Ȳ_i^A − Ȳ_i^B, with the paired t
  CI and two-sided p (``evalnoise.stats.paired.compare``, n − 1 = 79 df);
- the paired bootstrap CI over tasks (same function, 10,000 resamples, seed 0);
- Holm-adjusted p-values over all pairs (``evalnoise.stats.paired.holm``).

A pair is *distinguishable* when its Holm-adjusted paired-t p is at most ``--alpha``
(family-wise error rate over all 78 pairs). Scores are the leaderboard's: ``is_resolved``
true = 1, false or null = 0; every trial counts, infrastructure outcomes included.

Usage::

    python benchmarks/terminal_bench_pairs.py [PATH] [--alpha 0.05] [--csv pairs.csv]

PATH is a folder of Terminal-Bench submissions (default: shared/data/terminal-bench/
core-0.1.1 beside the repository) or a trials Parquet file made by ``evalnoise import``.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from itertools import combinations
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq

from evalnoise.importers import import_trials
from evalnoise.stats.paired import compare, holm

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO.parent / "shared" / "data" / "terminal-bench" / "core-0.1.1"


def load(path: Path) -> pd.DataFrame:
    """Trials (agent, task_id, trial, score) from a submissions folder or a Parquet file."""
    if path.is_file() and path.suffix == ".parquet":
        table = pq.read_table(path)
    else:
        table = import_trials("terminal-bench", [path]).table
    return table.select(["agent", "task_id", "trial", "score"]).to_pandas()


def pairs_table(
    trials: pd.DataFrame, *, alpha: float = 0.05, n_resamples: int = 10_000, seed: int = 0
) -> pd.DataFrame:
    """One row per agent pair (A ranked above B by mean score): diff, CIs, p, Holm p."""
    means = trials.groupby("agent")["score"].mean().sort_values(ascending=False, kind="stable")
    agents = list(means.index)
    by_agent = {a: g for a, g in trials.groupby("agent")}
    rows = []
    for a, b in combinations(agents, 2):
        ga, gb = by_agent[a], by_agent[b]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            r = compare(
                ga["task_id"].to_numpy(), ga["trial"].to_numpy(), ga["score"].to_numpy(),
                gb["task_id"].to_numpy(), gb["trial"].to_numpy(), gb["score"].to_numpy(),
                names=(a, b), n_resamples=n_resamples, seed=seed,
            )  # fmt: skip
        rows.append({
            "a": a,
            "b": b,
            "n_tasks": r.n_tasks,
            "mean_a": r.mean_a,
            "mean_b": r.mean_b,
            "diff": r.diff,
            "ci_low": r.ci_low,
            "ci_high": r.ci_high,
            "boot_ci_low": r.bootstrap.ci_low,
            "boot_ci_high": r.bootstrap.ci_high,
            "pvalue": r.pvalue,
        })  # fmt: skip
    out = pd.DataFrame(rows)
    out["pvalue_holm"] = holm(out["pvalue"].to_numpy())
    out["distinguishable"] = out["pvalue_holm"] <= alpha
    return out


def _short(agent: str) -> str:
    """``20250923_droid_claude-4-1-opus`` → ``droid_claude-4-1-opus``."""
    head, _, rest = agent.partition("_")
    return rest if head.isdigit() and rest else agent


def render(pairs: pd.DataFrame, alpha: float) -> str:
    lines = [
        "| A | B | acc A | acc B | diff | 95% CI (paired t) | 95% CI (bootstrap) | p | p Holm "
        "| distinguishable |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in pairs.itertuples():
        diff = round(r.diff, 12) + 0.0  # no "-0.0%" from float noise
        lines.append(
            f"| {_short(r.a)} | {_short(r.b)} | {r.mean_a:.1%} | {r.mean_b:.1%} | "
            f"{diff:+.1%} | [{r.ci_low:+.1%}, {r.ci_high:+.1%}] | "
            f"[{r.boot_ci_low:+.1%}, {r.boot_ci_high:+.1%}] | {r.pvalue:.2g} | "
            f"{r.pvalue_holm:.2g} | "
            f"{'yes' if r.distinguishable else 'no'} |"
        )
    n_yes = int(pairs["distinguishable"].sum())
    lines.append("")
    lines.append(
        f"{n_yes} of {len(pairs)} pairs distinguishable at family-wise α = {alpha:g} (Holm); "
        f"{len(pairs) - n_yes} indistinguishable."
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "path",
        nargs="?",
        type=Path,
        default=DEFAULT_DATA,
        help="Terminal-Bench submissions folder or trials Parquet",
    )
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--n-resamples", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--csv", type=Path, help="also write the table as CSV")
    args = parser.parse_args(argv)
    if not args.path.exists():
        print(f"no such file or directory: {args.path}", file=sys.stderr)
        return 2
    trials = load(args.path)
    pairs = pairs_table(trials, alpha=args.alpha, n_resamples=args.n_resamples, seed=args.seed)
    print(render(pairs, args.alpha))
    if args.csv:
        pairs.to_csv(args.csv, index=False, float_format="%.6g")
    return 0


if __name__ == "__main__":
    sys.exit(main())
