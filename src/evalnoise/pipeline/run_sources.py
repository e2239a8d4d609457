"""Reading one side of a cross-run comparison: a results directory, or a git/DVC revision of
one (a trials file is read by the command line, with the analyze command's outcome rules).

A results directory is what the pipeline wrote (``results/``, or a project directory holding
one): its effective config (``config.json``), its tasks table and its score shards — the
reference scorer's, or with ``analysis.score: judge`` the primary judge's, as the run's own
statistics read them (:meth:`evalnoise.pipeline.wiring.Wiring.scores_of`). Each group
(agent × resource profile) is collected with the run's own infra policy
(:func:`evalnoise.pipeline.collect.group_data`), so a failed trial counts as the run counted it,
never as a fresh 0.

A revision (``HEAD~1``, a tag, a DVC experiment's commit) of a git repository is materialised
into a temporary directory: from git itself when the revision's tree holds ``results/``,
else with ``dvc get REPO results --rev REV`` from the DVC cache or remote.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pandas as pd

from evalnoise.column_names import group_label
from evalnoise.errors import InputError
from evalnoise.pipeline.collect import group_data, read_scores
from evalnoise.pipeline.effective_config import read_record
from evalnoise.pipeline.judges import judge_specs
from evalnoise.pipeline.run_comparison import Run
from evalnoise.pipeline.settings import infra_policy_spec, judge_stage
from evalnoise.pipeline.stages import group_health

__all__ = [
    "baseline_run",
    "is_results_dir",
    "is_revision",
    "materialised_revision",
    "read_results_dir",
    "results_root",
]

#: The tasks table's columns that say what a task is (compared between runs).
TASK_CONTENT = ("task_id", "question", "answer", "level", "instruction", "reference")


def results_root(path: str | os.PathLike[str]) -> Path | None:
    """The results directory at ``path`` (or at ``path/results``), None if neither is one."""
    p = Path(path)
    for candidate in (p, p / "results"):
        if (candidate / "config.json").is_file() and (candidate / "tasks.parquet").is_file():
            return candidate
    return None


def is_results_dir(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is (or holds) a results directory the pipeline wrote."""
    return results_root(path) is not None


def _score_shards(root: Path, config: dict) -> tuple[list[Path], str]:
    """The shards the run's statistics read, and which scores they are."""
    judged = config.get("analysis", {}).get("score") == "judge" and judge_stage(config)
    if judged:
        primary = next(iter(judge_specs(config["scorer"]["judge"])))
        base, what = root / "judged" / primary, f"judge {primary!r}"
    else:
        base, what = root / "scores", "the reference scorer"
    shards = sorted(base.rglob("*.parquet")) if base.is_dir() else []
    return shards, what


def read_results_dir(path: str | os.PathLike[str], *, source: str | None = None) -> Run:
    """One run from a results directory (module docstring): every group's counted trials
    (``group, task, trial, score, block``; the block is the trial block, trial index ÷
    ``trials.block_size``), the effective config, the tasks and each group's agent and
    resource profile. Raises :class:`InputError` naming the directory when it is not one."""
    root = results_root(path)
    if root is None:
        raise InputError(
            "not a results directory: it has no config.json and tasks.parquet (nor has "
            "its results/)",
            path=str(path),
        )
    record = read_record(root / "config.json")
    if not record or not isinstance(record.get("config"), dict):
        raise InputError("config.json holds no recorded config", path=str(root / "config.json"))
    config = record["config"]
    shards, what = _score_shards(root, config)
    if not shards:
        raise InputError(f"no score shards of {what}", path=str(root))
    scores = read_scores(shards)
    tasks = pd.read_parquet(root / "tasks.parquet")
    levels = dict(zip(tasks["task_id"].astype(str), tasks.get("level", pd.Series(
        [None] * len(tasks))), strict=True))  # fmt: skip
    policy = infra_policy_spec(config)
    block_size = int((config.get("trials") or {}).get("block_size") or 1)
    frames, groups, health = [], {}, {}
    keys = scores[["agent", "resource_profile"]].drop_duplicates()
    for agent, profile in keys.itertuples(index=False):
        data = group_data(scores, levels, agent, profile, policy)
        frame = data.frame[["group", "task", "trial", "score"]].copy()
        stride = _stride(data.attempts)
        frame["block"] = frame["trial"].astype("int64") % stride // block_size
        frames.append(frame)
        groups[group_label(agent, profile)] = (str(agent), str(profile))
        _, verdict, _ = group_health(data, config.get("health"))
        health[data.group] = {
            "valid": verdict.valid,
            "expected": verdict.expected,
            "failure_rate": verdict.failure_rate,
            "reasons": list(verdict.reasons),
        }
    content = [c for c in TASK_CONTENT if c in tasks.columns]
    return Run(
        source=str(source if source is not None else path),
        kind="results",
        frame=pd.concat(frames, ignore_index=True),
        config=config,
        tasks=tasks[content].copy(),
        groups=groups,
        notes=[f"scores of {what}, infra policy {policy['mode']!r}"],
        health=health,
    )


def _stride(attempts: pd.DataFrame) -> int:
    """The stride of :func:`evalnoise.pipeline.collect.variant_trials` for one group (one
    more than its largest trial index), so a variant's trial number maps back to its trial
    index."""
    return int(attempts["trial"].max()) + 1 if len(attempts) else 1


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, check=False)


def is_revision(spec: str, repo: str | os.PathLike[str] = ".") -> bool:
    """Whether ``spec`` names a commit of the git repository at ``repo``."""
    if shutil.which("git") is None:
        return False
    return (
        _git(Path(repo), "rev-parse", "--verify", "--quiet", f"{spec}^{{commit}}").returncode == 0
    )


@contextmanager
def materialised_revision(
    spec: str, repo: str | os.PathLike[str] = ".", *, allow_dvc: bool = True
) -> Iterator[Path]:
    """A temporary directory holding ``results/`` as of revision ``spec`` of ``repo``,
    removed on exit (module docstring); without ``allow_dvc`` only from git (a pipeline rule
    never calls dvc). Raises :class:`InputError` saying what failed."""
    top = _git(Path(repo), "rev-parse", "--show-toplevel")
    if top.returncode != 0:
        raise InputError("not inside a git repository", path=str(repo))
    root = Path(top.stdout.decode().strip())
    with tempfile.TemporaryDirectory(prefix="evalnoise-compare-") as tmp:
        out = Path(tmp)
        listed = _git(root, "ls-tree", "--name-only", f"{spec}:results")
        if listed.returncode == 0 and b"config.json" in listed.stdout.split(b"\n"):
            archive = out / "results.tar"
            made = _git(root, "archive", "--format=tar", "-o", str(archive), spec, "results")
            if made.returncode != 0:
                raise InputError(
                    f"git archive of results/ at {spec} failed: "
                    f"{made.stderr.decode(errors='replace').strip()}",
                    path=str(root),
                )
            with tarfile.open(archive) as tar:
                tar.extractall(out, filter="data")
        elif not allow_dvc:
            raise InputError(
                f"results/ at {spec} is not in git; materialise it first (e.g. `dvc get . "
                f"results --rev {spec} -o baselines/{spec}`) and name that directory",
                path=str(root),
            )
        else:
            dvc = shutil.which("dvc")
            if dvc is None:
                raise InputError(
                    f"results/ at {spec} is not in git and dvc is not installed to fetch it",
                    path=str(root),
                )
            got = subprocess.run(
                [dvc, "get", str(root), "results", "--rev", spec, "-o", str(out / "results")],
                capture_output=True,
                check=False,
                env={**os.environ, "DVC_NO_ANALYTICS": "1"},
            )
            if got.returncode != 0:
                why = got.stderr.decode(errors="replace").strip().splitlines()
                raise InputError(
                    f"dvc get results --rev {spec} failed: {why[-1] if why else got.returncode}",
                    path=str(root),
                )
        yield out / "results"


@contextmanager
def baseline_run(
    name: str, *, baselines: str | os.PathLike[str] = "baselines", repo: str = "."
) -> Iterator[Run]:
    """The baseline the ``compare_runs`` rule names: the results directory
    ``baselines/NAME`` when there is one, else revision ``NAME`` of ``repo`` from git alone
    (a rule never calls dvc: materialise a DVC-tracked baseline into ``baselines/`` first)."""
    local = Path(baselines) / name
    if local.is_dir():
        yield read_results_dir(local, source=str(local))
        return
    if not is_revision(name, repo):
        raise InputError(
            f"no baseline {name!r}: neither a results directory {local} nor a git revision"
        )
    with materialised_revision(name, repo, allow_dvc=False) as root:
        run = read_results_dir(root, source=name)
        run.kind = "revision"
        yield run
