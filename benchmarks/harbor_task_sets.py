"""How many public Harbor task folders the loader accepts, and why it refuses the rest.

    python benchmarks/harbor_task_sets.py SETS_DIR [--old-src PATH] [-o OUT]

``SETS_DIR`` holds one folder (or symlink) per task set; each set's sub-folders that hold a
``task.toml`` are its task folders (other folders, a README's, are not counted). Every task
folder is checked as a run would load it (:func:`evalnoise.tasks.check.check_tasks`) under each
``benchmark.network`` choice; ``--old-src`` names another checkout's ``src`` whose loader is
measured the same way under its own choices (the loader before a change). Writes
``<OUT>.json`` (every folder's result) and ``<OUT>.md`` (the tables; default OUT:
``benchmarks/results/harbor-task-sets``).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
from pathlib import Path

_OLD = """
import json, sys
from pathlib import Path
from evalnoise.tasks.harbor import _load_one, DEFAULTS
out = {}
for net in sys.argv[2:]:
    rows = []
    for s in sorted(Path(sys.argv[1]).iterdir()):
        for f in sorted(p for p in s.iterdir() if p.is_dir() and (p / "task.toml").is_file()):
            task, problems = _load_one(f.resolve(), net, DEFAULTS)
            rows.append({"set": s.name, "accepted": task is not None,
                         "problems": [{"field": p.field, "reason": p.reason} for p in problems]})
    out[net] = rows
print(json.dumps(out))
"""


def _field(field: str) -> str:
    return field.split(" '")[0] if field.startswith("[[steps]]") else field


def _table(rows: list[dict]) -> list[str]:
    accepted = sum(r["accepted"] for r in rows)
    lines = [f"{accepted} of {len(rows)} accepted ({100 * accepted / len(rows):.1f} %)", ""]
    counts = collections.Counter(
        f for r in rows for f in {_field(p["field"]) for p in r["problems"]}
    )
    if counts:
        lines += ["| refused for | task folders |", "|---|---:|"]
        lines += [f"| `{f}` | {n} |" for f, n in counts.most_common()]
        lines.append("")
    return lines


def _summary(results: dict[str, dict[str, list[dict]]]) -> dict:
    """Per loader and network: the counts, the refusals by field and, when there are at
    most 100, every refused folder with its problems."""
    out: dict = {}
    for when, by_network in results.items():
        out[when] = {}
        for network, rows in by_network.items():
            refused = [r for r in rows if not r["accepted"]]
            fields = collections.Counter(
                f for r in refused for f in {_field(p["field"]) for p in r["problems"]}
            )
            out[when][network] = {
                "task_folders": len(rows),
                "accepted": len(rows) - len(refused),
                "refused_by_field": dict(fields.most_common()),
                "refused": [
                    {"set": r["set"], "task": r.get("task"), "problems": r["problems"]}
                    for r in refused
                ]
                if len(refused) <= 100
                else None,
            }
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("sets")
    parser.add_argument("--old-src", default=None)
    parser.add_argument("-o", "--out", default="benchmarks/results/harbor-task-sets")
    args = parser.parse_args()
    from evalnoise.tasks.check import check_tasks

    sets = sorted(Path(args.sets).iterdir())
    results: dict[str, dict[str, list[dict]]] = {"now": {}}
    for network in ("as_declared", "offline", "reject"):
        rows = []
        for s in sets:
            for check in check_tasks(s, network=network):
                if (Path(check.path) / "task.toml").is_file():
                    rows.append({"set": s.name, **check.to_json()})
        results["now"][network] = rows
    if args.old_src:
        env = {**os.environ, "PYTHONPATH": args.old_src}
        old = subprocess.run(
            [sys.executable, "-c", _OLD, args.sets, "reject", "offline"],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        results["before"] = json.loads(old.stdout)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(f"{args.out}.json").write_text(json.dumps(_summary(results), indent=1))
    sizes = collections.Counter(r["set"] for r in results["now"]["as_declared"])
    md = ["# Public Harbor task folders through the loader", ""]
    md += ["| set | task folders |", "|---|---:|"] + [
        f"| {s} | {n} |" for s, n in sorted(sizes.items())
    ]
    md.append("")
    for when, by_network in results.items():
        for network, rows in by_network.items():
            md += [f"## {when}, benchmark.network: {network}", "", *_table(rows)]
    Path(f"{args.out}.md").write_text("\n".join(md))
    print("\n".join(md))
    return 0


if __name__ == "__main__":
    sys.exit(main())
