"""The effective config: what a run was actually made with, and a guard against quiet rewrites.

A run's config is ``config/config.yaml`` plus whatever ``--configfile`` / ``--config``
changed. ``dvc repro`` only ever reads ``config/config.yaml``: after a run grown with
``snakemake --configfile extra.yaml`` (``trials.count: 12``), a ``dvc repro`` would quietly
recompute every statistic from 8 trials per task while the 12-trial files stay on disk.

So every run records its effective config in ``results/config.json`` (rule
``record_config``) together with the keys that differed from ``config/config.yaml``
(``overridden``). Under ``dvc repro`` (its stage commands set
``EVALNOISE_CONFIG_GUARD=strict``) a run refuses to start when the recorded run was made
with overrides that the config it is about to use does not have — the message names each
key with both values and says how to proceed. Plain ``snakemake`` runs may change the config
freely (that is how a run grows); they only say what changed.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = [
    "GUARD_VARIABLE",
    "config_diff",
    "config_record",
    "guard_message",
    "read_record",
    "run_record",
    "strict_refusal",
]

GUARD_VARIABLE = "EVALNOISE_CONFIG_GUARD"
_SHOWN = 8


def _normal(value: Any) -> Any:
    """JSON's view of a value (tuples → lists, keys → strings), for comparison."""
    return json.loads(json.dumps(value, sort_keys=True, default=str))


def config_diff(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[tuple[str, Any, Any]]:
    """``(dotted key, value in a, value in b)`` for every leaf where ``a`` and ``b`` differ
    (a key missing on one side has the value ``None`` there)."""
    out: list[tuple[str, Any, Any]] = []

    def walk(x: Any, y: Any, where: str) -> None:
        if isinstance(x, dict) and isinstance(y, dict):
            for key in sorted(set(x) | set(y)):
                walk(x.get(key), y.get(key), f"{where}.{key}" if where else str(key))
        elif x != y:
            out.append((where, x, y))

    walk(_normal(dict(a)), _normal(dict(b)), "")
    return out


def config_record(config: Mapping[str, Any], file_config: Mapping[str, Any]) -> dict[str, Any]:
    """What ``results/config.json`` holds: the effective ``config`` and the keys in which
    it differs from ``file_config`` (``config/config.yaml`` with defaults filled in)."""
    return {
        "config": _normal(dict(config)),
        "overridden": {key: ours for key, ours, _ in config_diff(config, file_config)},
    }


def read_record(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The recorded effective config, or None if there is none (or it is unreadable)."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def guard_message(
    config: Mapping[str, Any], record: Mapping[str, Any] | None, *, path: str
) -> str | None:
    """Why a strict (``dvc repro``) run must not start, or None.

    It must not when the results were made with overrides (``record["overridden"]``) and
    the config it is about to use differs from the recorded one."""
    if not record or not record.get("overridden"):
        return None
    diff = config_diff(record.get("config") or {}, config)
    if not diff:
        return None
    lines = [f"{key}: results have {old!r}, this run would use {new!r}" for key, old, new in diff]
    more = len(lines) - _SHOWN
    shown = lines[:_SHOWN] + ([f"... and {more} more"] if more > 0 else [])
    return (
        f"{path} says the results on disk were made with a config that differs from "
        "config/config.yaml (via --configfile or --config), and this run would silently "
        "recompute them with config/config.yaml:\n  "
        + "\n  ".join(shown)
        + "\nPut those values into config/config.yaml (then `dvc repro`), or keep running "
        "`snakemake` with the same --configfile/--config; to recompute from "
        f"config/config.yaml on purpose, delete {path} first."
    )


def run_record(
    config: Mapping[str, Any], config_file: str | os.PathLike[str], schema: Mapping[str, Any]
) -> dict[str, Any]:
    """:func:`config_record` of ``config`` against ``config_file`` (``config/config.yaml``;
    absent: ``{}``) with every default of ``schema`` filled in: what ``record_config``
    writes."""
    from evalnoise.pipeline.settings import read_yaml, with_defaults

    file_config: Mapping[str, Any] = {}
    if os.path.exists(config_file):
        file_config = read_yaml(config_file) or {}
    return config_record(config, with_defaults(file_config, schema))


def strict_refusal(
    config: Mapping[str, Any], environ: Mapping[str, str], record_path: str
) -> str | None:
    """:func:`guard_message` of the record at ``record_path`` when ``environ`` sets
    :data:`GUARD_VARIABLE` to ``strict`` (``dvc repro``), else None (plain runs may grow)."""
    if environ.get(GUARD_VARIABLE) != "strict":
        return None
    return guard_message(config, read_record(record_path), path=record_path)
