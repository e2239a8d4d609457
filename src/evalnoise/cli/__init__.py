"""The ``evalnoise`` command line. Each subcommand lives in its own module.

Only the module of the command being run is imported (``evalnoise analyze`` never imports
the runner, the archive or the importers), so a command starts as fast as its own imports
allow and works without the extras the other commands need. ``evalnoise --help`` and an
unknown command load them all, to list every command.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from evalnoise import __version__
from evalnoise.errors import InputError

#: every subcommand, in the order ``evalnoise --help`` lists them
COMMANDS = (
    "analyze",
    "compare",
    "plan",
    "correct",
    "import",
    "archive",
    "verify",
    "run",
    "run-shard",
    "image",
    "tasks",
)


def _add_parsers(sub: argparse._SubParsersAction, command: str | None) -> None:
    """Register ``command``'s parser on ``sub`` (every command's when None).

    Plain imports, one per module, not importlib: evalnoise.pipeline.dependencies follows
    imports statically, and a module is imported only when its command is wanted.
    """
    every = command is None
    if every or command == "analyze":
        from evalnoise.cli import analyze

        analyze.add_parser(sub)
    if every or command == "compare":
        from evalnoise.cli import compare

        compare.add_parser(sub)
    if every or command == "plan":
        from evalnoise.cli import plan

        plan.add_parser(sub)
    if every or command == "correct":
        from evalnoise.cli import correct

        correct.add_parser(sub)
    if every or command == "import":
        from evalnoise.cli import import_

        import_.add_parser(sub)
    if every or command in ("archive", "verify"):
        from evalnoise.cli import archive_verify

        archive_verify.add_parser(sub)  # both: archive and verify
    if every or command == "run":
        from evalnoise.cli import run

        run.add_parser(sub)
    if every or command == "run-shard":
        from evalnoise.cli import run_shard

        run_shard.add_parser(sub)
    if every or command == "image":
        from evalnoise.cli import image

        image.add_parser(sub)
    if every or command == "tasks":
        from evalnoise.cli import tasks

        tasks.add_parser(sub)


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The ``evalnoise`` parser. Given the arguments it will parse, only their command's
    module is loaded (when they start with a known command); otherwise every command's."""
    parser = argparse.ArgumentParser(
        prog="evalnoise",
        description="Is an agent's score real? Trial-to-trial and infrastructure noise in "
        "agentic evaluations: ICC, clustered CIs, paired tests, budgets.",
    )
    parser.add_argument("--version", action="version", version=f"evalnoise {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    # The command is the first argument: the top level has no option that takes a value.
    command = argv[0] if argv and argv[0] in COMMANDS else None
    _add_parsers(sub, command)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(argv)
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
