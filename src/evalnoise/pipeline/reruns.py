"""How many runs of a shard's job left trials without a verdict: the rerun counters.

A ``run_trials`` job whose verifier left trials without a reward (``verifier_error``), and a
``score`` or ``judge`` job that left trials unjudged (``judge_error``), count one more
*rerun* in a small file beside the shard (``<shard>.unverified-reruns``,
``<shard>.unjudged-reruns``). The rules take the count as a param, so the next plain
``snakemake`` sees a changed param and reruns exactly those jobs, which retry exactly the
failed trials. A count never goes down, so the run after a successful retry sees the same
value and runs nothing. (A changed modification time would not do: Snakemake touches a job's
outputs when the job ends, and ignores an older output whose input's checksum it recorded as
unchanged.)

Snakemake reads the counts while it builds the DAG
(:meth:`evalnoise.pipeline.wiring.Wiring.verifier_reruns` and its siblings), so this module
imports nothing but the atomic writer: the shard runner and the scorers stay off the DAG
build.
"""

from __future__ import annotations

import os
from pathlib import Path

from evalnoise.atomic import write_text

__all__ = ["add_judge_rerun", "add_verifier_rerun", "judge_reruns", "verifier_reruns"]


def _unjudged_file(shard: str | os.PathLike[str]) -> Path:
    return Path(f"{os.fspath(shard)}.unjudged-reruns")


def _unverified_file(shard: str | os.PathLike[str]) -> Path:
    return Path(f"{os.fspath(shard)}.unverified-reruns")


def _read(path: Path) -> int:
    try:
        return int(path.read_text(encoding="utf-8").strip() or 0)
    except (OSError, ValueError):
        return 0


def verifier_reruns(shard: str | os.PathLike[str]) -> int:
    """How many runs of this trial shard's job ended with trials the verifier left without a
    reward (``verifier_error``); 0 when none did. The ``run_trials`` rule takes it as a
    param, so a plain rerun runs the shard's job again and the shard runs exactly those
    trials once more (a new attempt each)."""
    return _read(_unverified_file(shard))


def judge_reruns(shard: str | os.PathLike[str]) -> int:
    """How many runs of this score shard's job ended with unjudged (``judge_error``)
    trials; 0 when none did. The score and judge rules take it as a param (see the module
    docstring)."""
    return _read(_unjudged_file(shard))


def add_verifier_rerun(shard: str | os.PathLike[str]) -> int:
    """Count one more rerun of unverified trials for this trial shard (written atomically);
    returns the new count, :func:`verifier_reruns` + 1."""
    count = verifier_reruns(shard) + 1
    write_text(_unverified_file(shard), f"{count}\n")
    return count


def add_judge_rerun(shard: str | os.PathLike[str]) -> int:
    """Count one more rerun of unjudged trials for this score shard (written atomically);
    returns the new count, :func:`judge_reruns` + 1."""
    count = judge_reruns(shard) + 1
    write_text(_unjudged_file(shard), f"{count}\n")
    return count
