"""Command line of the runner: ``evalnoise run-shard`` and ``evalnoise image build``.

:func:`add_parsers` registers both on the ``evalnoise`` command's subparsers (each sets
``run``, the evalnoise CLI convention); :func:`run_shard_main` and :func:`image_main` parse
and run them standalone. ``python -m evalnoise.runner.cli run-shard ...`` works as well.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from evalnoise._extras import require
from evalnoise.errors import InputError

RUN_SHARD_HELP = "run one shard of trials (agent × resource profile × trials × tasks)"
IMAGE_HELP = "build container images offline (the base image, agent images)"


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


def configure_run_shard(p: argparse.ArgumentParser) -> None:
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


def configure_image(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="image_command", metavar="IMAGE_COMMAND", required=True)
    b = sub.add_parser(
        "build",
        help="build evalnoise-base:<hash> (debootstrap + docker import; cached)",
        description="Build the base image offline from images/base/base.toml: debootstrap a "
        "Debian root filesystem (cached under ~/.cache/evalnoise) and docker "
        "import it as evalnoise-base:<hash of the inputs>. A no-op when that tag "
        "exists. Prints the tag.",
    )
    b.add_argument(
        "--inputs",
        default=None,
        help="directory holding base.toml (default: $EVALNOISE_BASE_INPUTS, else images/base "
        "of the evalnoise checkout)",
    )
    b.add_argument(
        "--cache-dir",
        default=None,
        help="root filesystem cache (default: $EVALNOISE_CACHE_DIR or ~/.cache/evalnoise)",
    )
    b.add_argument("--force", action="store_true", help="rebuild even if cached")
    b.set_defaults(run=_image_build)
    a = sub.add_parser(
        "build-agent",
        help="build an agent image FROM the base image (offline)",
        description="docker build CONTEXT (whose Dockerfile starts with ARG BASE / FROM "
        "${BASE}) with BASE set to the base image; never pulls, no network in "
        "RUN steps. Prints the image id.",
    )
    a.add_argument("context", help="build context directory with a Dockerfile")
    a.add_argument("--tag", required=True, help="image tag to give the agent image")
    a.add_argument(
        "--base", default=None, help="base image (default: build/find evalnoise-base:<hash>)"
    )
    a.set_defaults(run=_image_build_agent)


def _image_build(args: argparse.Namespace) -> int:
    require("docker", "evalnoise image build")
    from evalnoise.runner.images import build_base_image

    print(build_base_image(inputs_dir=args.inputs, cache_dir=args.cache_dir, force=args.force))
    return 0


def _image_build_agent(args: argparse.Namespace) -> int:
    require("docker", "evalnoise image build-agent")
    from evalnoise.runner.images import build_agent_image, build_base_image

    base = args.base or build_base_image()
    print(build_agent_image(args.context, args.tag, base))
    return 0


def add_parsers(subparsers: argparse._SubParsersAction) -> None:
    """Register ``run-shard`` and ``image`` (``image build``, ``image build-agent``)."""
    p = subparsers.add_parser(
        "run-shard",
        help=RUN_SHARD_HELP,
        description=RUN_SHARD_HELP + ". Resumable: killed at any moment and run again, it "
        "finishes with exactly one row per (task, trial, attempt).",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    configure_run_shard(p)
    p.set_defaults(run=run_shard_command)
    i = subparsers.add_parser("image", help=IMAGE_HELP, description=IMAGE_HELP + ".")
    configure_image(i)


def run_shard_main(argv: Sequence[str] | None = None) -> int:
    """``evalnoise run-shard`` on its own: ``argv`` excludes the subcommand name (the one
    entry point, :func:`evalnoise.cli.main`, and its one error handler)."""
    from evalnoise.cli import main as cli_main

    return cli_main(["run-shard", *(sys.argv[1:] if argv is None else argv)])


def image_main(argv: Sequence[str] | None = None) -> int:
    """``evalnoise image`` on its own: ``argv`` starts with ``build`` or ``build-agent``."""
    from evalnoise.cli import main as cli_main

    return cli_main(["image", *(sys.argv[1:] if argv is None else argv)])


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m evalnoise.runner.cli run-shard|image …``: :func:`evalnoise.cli.main`."""
    from evalnoise.cli import main as cli_main

    return cli_main(sys.argv[1:] if argv is None else list(argv))


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
