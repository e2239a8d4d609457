"""The ``evalnoise`` command line. Each subcommand lives in its own module."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from evalnoise import __version__
from evalnoise.errors import InputError


def build_parser() -> argparse.ArgumentParser:
    from evalnoise.cli import analyze, archive, compare, correct, plan, run
    from evalnoise.importers import cli as import_cli
    from evalnoise.runner import cli as runner_cli

    parser = argparse.ArgumentParser(
        prog="evalnoise",
        description="Is an agent's score real? Trial-to-trial and infrastructure noise in "
        "agentic evaluations: ICC, clustered CIs, paired tests, budgets.",
    )
    parser.add_argument("--version", action="version", version=f"evalnoise {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in (analyze, compare, plan, correct, import_cli, archive, run):
        module.add_parser(sub)
    runner_cli.add_parsers(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.run(args) or 0)
    except InputError as exc:
        print(f"evalnoise {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
