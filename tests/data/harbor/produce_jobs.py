"""Run Harbor's oracle and nop agents on tasks/ and keep small excerpts of the job folders.

    PYTHONPATH=src:tests python tests/data/harbor/produce_jobs.py [WORK_DIR]

Needs Harbor (tools/install-harbor.sh), the Docker engine and the base image (`evalnoise
image build`); README.md beside this file says what came out and when. The full job folders
stay in WORK_DIR (default: a new temporary folder); jobs/ gets, per job, its config.json and
result.json and, per trial folder, config.json, result.json and the verifier's reward file
and test output (no logs, locks or artifacts).
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

from harbor_tools import run_harbor

HERE = Path(__file__).resolve().parent
TASKS = [HERE / "tasks" / name for name in ("greet", "no-reward", "agent-timeout")]
#: (job name, agent, attempts per task): two oracle attempts give every task two trials
JOBS = (("oracle", "oracle", 2), ("nop", "nop", 1))
KEEP_TRIAL = (
    "config.json",
    "result.json",
    "verifier/reward.txt",
    "verifier/reward.json",
    "verifier/test-stdout.txt",
)


def excerpt(job_dir: Path, out: Path) -> None:
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    for name in ("config.json", "result.json"):
        shutil.copy2(job_dir / name, out / name)
    for trial in sorted(p for p in job_dir.iterdir() if p.is_dir()):
        for rel in KEEP_TRIAL:
            src = trial / rel
            if src.is_file():
                dst = out / trial.name / rel
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, dst)


def main(argv: list[str]) -> int:
    work = Path(argv[0]) if argv else Path(tempfile.mkdtemp(prefix="harbor-jobs-"))
    for job, agent, attempts in JOBS:
        run = run_harbor(
            TASKS,
            jobs_dir=work,
            job_name=job,
            agent=agent,
            n_attempts=attempts,
            n_concurrent=2,
            init=False,
        )
        excerpt(run.job_dir, HERE / "jobs" / job)
        print(f"{job}: {run.by_task()} ({run.wall_seconds:.0f} s) -> {run.job_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
