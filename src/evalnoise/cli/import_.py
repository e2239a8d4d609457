"""``evalnoise import FORMAT PATH... -o trials.parquet``: other projects' results as trials.

Register with :func:`add_parser` (sets ``run``, the convention of :mod:`evalnoise.cli`);
:mod:`evalnoise.importers` does the work. The one entry point and its one error handler are
:func:`evalnoise.cli.main`.
"""

from __future__ import annotations

import argparse
import textwrap

from evalnoise.importers import FORMATS, import_trials, write_trials
from evalnoise.outcome_table import describe_statuses

HELP = "convert other projects' evaluation results into a trial table (Parquet)"

DESCRIPTION = """\
Convert evaluation results into evalnoise's trial table (one row per agent, task and trial;
schema evalnoise.schema.TRIALS) and write it as Parquet. Trials are numbered from 0 within
(agent, task) by a deterministic rule per format, stored with the format, the source files,
the counts and the column roles in the file's schema metadata (key "evalnoise"), so that
`evalnoise analyze OUT` and `evalnoise compare OUT A B` need no column flags. A malformed
input stops the import with an error naming the file, the record and the field; nothing is
written.

formats:
  inspect         Inspect AI logs (.eval, zstandard or deflate, or .json; a folder is
                  listed as Inspect lists it, so an eval-set's index files are skipped):
                  epochs are trials, the agent is eval.model plus the run settings that
                  differ between logs of one model (e.g. 'model [seed=42, temperature=0.0]');
                  the seed and generation settings become columns; --scorer picks the
                  scorer when a log has several
  terminal-bench  results.json files or leaderboard submission folders: the agent is the
                  submission folder; failure_mode gives the status; is_resolved null
                  counts as unresolved; an agent timeout or error whose tests gave a
                  verdict is ok, the failure kept in verified_after
  harbor          Harbor job folders (harbor run / harbor job start; Terminal-Bench 2.0's
                  harness), or trial result.json files: each trial folder's result.json
                  is one trial; the agent is agent_info.name[__model]; the score is the
                  reward named by --reward (default 'reward', or the only one); the
                  exception type gives the status (agent timeout → timeout, environment
                  and sandbox failures → infra_error, verifier failures →
                  verifier_error, agent failures → agent_error), never a score of 0; an
                  agent timeout or failure the verifier then decided is ok, the failure
                  kept in verified_after; an incomplete job or a folder that is no trial
                  is said in a warning; tokens, cost and phase times kept
  tau-bench       result JSON lists {task_id, trial, reward, info, traj}: score = reward;
                  the agent is the file name unless --agent
  metr            runs.jsonl: the agent is alias; human baselines dropped unless
                  --include-humans; score = score_binarized (--metr-score raw for score)
  table           any CSV/TSV/JSONL/Parquet: --column-mapping task=COL,score=COL[,trial=COL,
                  agent=COL,status=COL,...]; unmapped fields default to the schema's names
"""

EPILOG = """\
examples:
  evalnoise import terminal-bench results/terminal-bench-core@0.1.1 -o tb.parquet
  evalnoise import harbor jobs/2026-11-26__10-00-00 -o harbor.parquet
  evalnoise import metr all_runs.jsonl --include-humans -o metr.parquet
  evalnoise import table scores.csv --column-mapping task=item_id,trial=epoch,score=score,\
agent=model_id -o gpqa.parquet
"""


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "import",
        help=HELP,
        description=DESCRIPTION
        + "\n"
        + textwrap.fill(
            f"A trial's status is one of: {describe_statuses()} (the outcome table, "
            "evalnoise.outcome_table); a trial without a verdict is never a score of 0.",
            92,
        ),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "format",
        choices=list(FORMATS),
        metavar="FORMAT",
        help=f"source format: {', '.join(FORMATS)}",
    )
    p.add_argument(
        "paths", nargs="+", metavar="PATH", help="input files, or directories searched recursively"
    )
    p.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="OUT",
        help="the Parquet file to write (replaced atomically)",
    )
    p.add_argument(
        "--agent",
        metavar="NAME",
        help="agent name for every row (not for metr, whose runs name theirs)",
    )
    p.add_argument(
        "--resource-profile",
        default="imported",
        metavar="NAME",
        help="resource_profile of every row (default: %(default)s)",
    )
    p.add_argument(
        "--include-humans",
        action="store_true",
        help="metr: keep the human baseline runs (alias 'human')",
    )
    p.add_argument(
        "--metr-score",
        choices=["binarized", "raw"],
        default=None,
        help="metr: score_binarized (default) or the raw score in [0, 1]",
    )
    p.add_argument("--scorer", metavar="NAME", help="inspect: the scorer whose value is the score")
    p.add_argument(
        "--reward",
        metavar="KEY",
        help="harbor: the named reward (verifier_result.rewards) that scores "
        "(default: 'reward', or the only name the trials use)",
    )
    p.add_argument(
        "--column-mapping",
        metavar="KEY=COL,...",
        help="table: which columns hold task, score, trial, agent, status, "
        "prediction, error, started_at, ended_at, duration_s",
    )
    p.set_defaults(run=run)
    return p


def run(args: argparse.Namespace) -> int:
    options = {
        "agent": args.agent,
        "resource_profile": args.resource_profile,
        "include_humans": args.include_humans,
        "score": args.metr_score,
        "scorer": args.scorer,
        "reward": args.reward,
        "column_mapping": args.column_mapping,
    }
    result = import_trials(args.format, args.paths, **options)
    out = write_trials(result, args.output)
    c = result.metadata["counts"]
    print(f"wrote {c['rows']} trials ({c['agents']} agents, {c['tasks']} tasks) to {out}")
    status = ", ".join(f"{k} {v}" for k, v in c["status"].items())
    print(f"status: {status}")
    print(f"trial numbering: {result.metadata['rule']}")
    for line in result.metadata.get("warnings") or ():
        print(f"warning: {line}")
    return 0
