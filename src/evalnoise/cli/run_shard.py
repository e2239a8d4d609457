"""``evalnoise run-shard``: one shard of trials (agent × resource profile × trials × tasks).

Register with :func:`add_parser` (sets ``run``, the convention of :mod:`evalnoise.cli`);
:func:`evalnoise.runner.shard.run_shard` does the work. The one entry point and its one
error handler are :func:`evalnoise.cli.main` (``evalnoise run-shard …``, ``python -m
evalnoise run-shard …``).
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from pathlib import Path
from typing import Any

from evalnoise._extras import require
from evalnoise.errors import InputError

HELP = "run one shard of trials (agent × resource profile × trials × tasks)"


def _load_spec(text: str, what: str) -> Any:
    """A spec given inline as JSON, or as the path of a JSON or YAML file."""
    stripped = text.strip()
    if stripped.startswith(("{", "[")):
        try:
            return json.loads(stripped)
        except json.JSONDecodeError as exc:
            raise InputError(f"{what}: invalid JSON: {exc}") from None
    path = Path(text)
    if not path.is_file():
        return text  # a name (a built-in resource profile, a policy keyword)
    raw = path.read_text()
    if path.suffix in (".yaml", ".yml"):
        import yaml

        return yaml.safe_load(raw)
    try:
        return json.loads(raw)
    except json.JSONDecodeError as exc:
        raise InputError(f"invalid JSON: {exc}", path=str(path)) from None


def parse_trials(text: str) -> list[int]:
    """``"0-9"``, ``"0,1,5"`` or ``"0-4,10-14"`` → trial indices (ranges are inclusive)."""
    out: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        try:
            if "-" in part[1:]:
                lo, hi = part.split("-", 1)
                lo_i, hi_i = int(lo), int(hi)
                if hi_i < lo_i:
                    raise ValueError
                out.extend(range(lo_i, hi_i + 1))
            else:
                out.append(int(part))
        except ValueError:
            raise InputError(f"--trials: cannot read {part!r} (use e.g. 0-9 or 0,1,5)") from None
    if not out or min(out) < 0:
        raise InputError("--trials: need one or more non-negative trial indices")
    return sorted(set(out))


def _parse_chunk(text: str) -> tuple[int, int]:
    try:
        k, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise InputError(f"--chunk: expected K/N, got {text!r}") from None
    if n < 1 or not 0 <= k < n:
        raise InputError(f"--chunk: need 0 <= K < N, got {text!r}")
    return k, n


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--tasks", required=True, help="tasks table (Parquet, TASKS schema)")
    p.add_argument(
        "--chunk",
        default=None,
        metavar="K/N",
        help="run only chunk K (0-based) of N contiguous chunks of the tasks sorted by task_id",
    )
    p.add_argument(
        "--agent",
        required=True,
        help="agent spec: JSON/YAML file or inline JSON {name, image, command, env, "
        "secret_env, network, ...}",
    )
    p.add_argument(
        "--resource-profile",
        required=True,
        help="built-in name (1x, 3x, uncapped), JSON/YAML file or inline JSON "
        "{name, memory_guarantee_factor, memory_limit_factor, "
        "cpu_guarantee_factor, cpu_limit_factor, time_limit_factor}",
    )
    p.add_argument("--trials", required=True, help="trial indices, e.g. 0-9 or 0,1,5")
    p.add_argument("--run-seed", type=int, required=True, help="the run's seed")
    p.add_argument(
        "--infra-policy",
        default="as_incorrect",
        help="as_incorrect | exclude | retry:N | JSON {mode, max_attempts, on_exhausted}",
    )
    p.add_argument(
        "--backend",
        choices=["docker", "local"],
        default="docker",
        help="docker (isolated containers) or local (plain subprocesses; isolates much less)",
    )
    p.add_argument("--output", required=True, help="the shard's Parquet file")
    p.add_argument(
        "--journal",
        default=None,
        help="append-only journal (default: OUTPUT.journal.jsonl); must not be "
        "a Snakemake output, or a rerun would delete it",
    )
    p.add_argument("--concurrency", type=int, default=1, help="trials run at once")
    p.add_argument(
        "--shard-id",
        default=None,
        help="label of this shard's containers (default: hash of --output)",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")


def _select_chunk(tasks: Any, chunk: str | None) -> Any:
    if chunk is None:
        return tasks
    k, n = _parse_chunk(chunk)
    ordered = tasks.sort_values("task_id", kind="mergesort").reset_index(drop=True)
    size = len(ordered)
    lo, hi = (k * size) // n, ((k + 1) * size) // n
    return ordered.iloc[lo:hi].reset_index(drop=True)


def run_shard_command(args: argparse.Namespace) -> int:
    import pandas as pd

    if args.backend == "docker":
        require("docker", "evalnoise run-shard --backend docker")

    from evalnoise.runner.shard import run_shard
    from evalnoise.runner.trial import EngineUnavailable

    try:
        tasks = pd.read_parquet(args.tasks)
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read the tasks table: {exc}", path=args.tasks) from None
    tasks = _select_chunk(tasks, args.chunk)
    journal = args.journal or f"{args.output}.journal.jsonl"
    _terminate_on_sigterm()
    try:
        result = run_shard(
            tasks,
            _load_spec(args.agent, "--agent"),
            _load_spec(args.resource_profile, "--resource-profile"),
            parse_trials(args.trials),
            args.run_seed,
            _load_spec(args.infra_policy, "--infra-policy"),
            args.backend,
            journal,
            args.output,
            concurrency=args.concurrency,
            shard_id=args.shard_id,
            progress=not args.no_progress,
        )
    except (EngineUnavailable, BlockingIOError) as exc:
        print(f"evalnoise run-shard: {exc}", file=sys.stderr)
        return 3
    except (ValueError, KeyError, TypeError) as exc:
        raise InputError(str(exc).strip("'\"")) from None
    print(
        f"evalnoise run-shard: {result.output_path}: {result.rows} rows for {result.trials} "
        f"trials ({result.ran} attempts run now, {result.resumed} resumed) "
        f"{json.dumps(result.statuses)} in {result.seconds:.1f}s",
        file=sys.stderr,
    )
    return 0


def _terminate_on_sigterm() -> None:
    """Turn SIGTERM into SystemExit so running containers are removed on the way out."""
    if threading.current_thread() is threading.main_thread():

        def handler(signum: int, frame: Any) -> None:
            raise SystemExit(128 + signum)

        signal.signal(signal.SIGTERM, handler)


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``run-shard``."""
    p = subparsers.add_parser(
        "run-shard",
        help=HELP,
        description=HELP + ". Resumable: killed at any moment and run again, it "
        "finishes with exactly one row per (task, trial, attempt).",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    configure(p)
    p.set_defaults(run=run_shard_command)
