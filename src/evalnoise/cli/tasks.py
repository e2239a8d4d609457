"""``evalnoise tasks check PATH``: a Harbor task set (or one task) loaded as a run would.

Prints, per task folder, accepted or refused, every problem (field and reason) and every
warning (:mod:`evalnoise.tasks.check`), then one line of totals and what refused how many;
``--json`` prints a JSON list of ``{"path", "task", "accepted", "problems": [{"field",
"reason"}], "warnings"}`` instead. Exits 0 when every folder is accepted, 1 otherwise (2: the
path is not a task set). A user checks a downloaded benchmark before spending a run on it.
"""

from __future__ import annotations

import argparse
import json

HELP = "check task folders (Harbor format) as a run would load them"
NETWORK_CHOICES = ("as_declared", "offline", "reject")


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``tasks`` (``tasks check``)."""
    p = subparsers.add_parser("tasks", help=HELP, description=HELP + ".")
    sub = p.add_subparsers(dest="tasks_command", metavar="TASKS_COMMAND", required=True)
    c = sub.add_parser(
        "check",
        help="per task folder: accepted or not, every problem and warning",
        description="Load a Harbor task set (a folder of task folders) or one task folder "
        "as a run with benchmark.source: harbor would, and print per folder whether it is "
        "accepted, every problem (field and reason) and every warning. Exit 0 when every "
        "folder is accepted, 1 otherwise.",
    )
    c.add_argument("path", help="a task folder (holding task.toml) or a folder of them")
    c.add_argument(
        "--network",
        choices=NETWORK_CHOICES,
        default="as_declared",
        help="benchmark.network of the run to check for (default: as_declared)",
    )
    c.add_argument("--json", action="store_true", help="print a JSON list, one entry a folder")
    c.set_defaults(run=_check)


def _check(args: argparse.Namespace) -> int:
    from evalnoise.tasks.check import check_tasks, folder_label, refusal_counts

    checks = check_tasks(args.path, network=args.network)
    if args.json:
        print(json.dumps([c.to_json() for c in checks], indent=2))
    else:
        for check in checks:
            mark = "accepted" if check.accepted else "REFUSED "
            print(f"{mark}  {check.task}  [{folder_label(check, args.path)}]")
            for field, reason in check.problems:
                print(f"    problem: {field}: {reason}")
            for warning in check.warnings:
                print(f"    warning: {warning}")
        accepted = sum(c.accepted for c in checks)
        print(
            f"{accepted} of {len(checks)} task folders accepted (benchmark.network: {args.network})"
        )
        counts = refusal_counts(checks)
        if counts:
            print("refused for: " + ", ".join(f"{field} {n}" for field, n in counts.most_common()))
    return 0 if all(c.accepted for c in checks) else 1
