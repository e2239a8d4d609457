"""``evalnoise run [SNAKEMAKE ARGS...]``: ``snakemake`` that recovers from a killed run.

A Snakemake run killed with SIGKILL (or a lost machine, an OOM-killed terminal) leaves its
locks in ``.snakemake/locks/``, and the next ``snakemake`` refuses to start until
``snakemake --unlock``. Unlocking is only safe when no other run is active, which
Snakemake cannot tell. ``evalnoise run`` can:

1. it holds an exclusive ``flock`` on ``.snakemake/evalnoise-run.lock`` while it runs: a
   second ``evalnoise run`` in the same directory refuses to start. The kernel drops the
   lock when its holder dies, however it dies, so a killed run never leaves it held;
2. holding it, with no Snakemake process on this machine working in this directory (a bare
   ``snakemake`` or ``dvc repro`` started beside it), Snakemake's locks can only be stale:
   it says so and runs ``snakemake --unlock``; it also removes the temporaries a killed
   writer left under ``results/`` (:func:`evalnoise.atomic.remove_temporaries`);
3. it runs ``snakemake`` with the given arguments and ``--rerun-incomplete`` (outputs of jobs
   that were running when the run was killed are marked incomplete; Snakemake 9 refuses to
   start on them without it, and rerunning them is always safe here: a ``run_trials`` job
   resumes from its journal, every other job is a function of its inputs), and returns its
   exit code.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import os
import signal
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

from evalnoise._extras import require
from evalnoise.atomic import remove_temporaries

HELP = "run the pipeline (snakemake ARGS...), recovering from a killed run"
DESCRIPTION = """\
Run `snakemake ARGS...` in this directory, recovering from a run that was killed.

While it runs it holds an exclusive lock (.snakemake/evalnoise-run.lock), so two
`evalnoise run` never work in one directory. Holding it, when no Snakemake process works
here, Snakemake's locks (.snakemake/locks/) can only be left by a killed run: it says so and
runs `snakemake --unlock` first, and removes the temporary files a killed job left under
results/. Snakemake runs with --rerun-incomplete (not with --touch): jobs that were running
when the run was killed run again, a run_trials job resuming from its journal. The exit code
is Snakemake's (1 if another `evalnoise run` is active here).
"""

#: The flock ``evalnoise run`` holds while it runs (under Snakemake's own .snakemake/).
LOCK_FILE = Path(".snakemake") / "evalnoise-run.lock"
#: Where Snakemake keeps the locks of a running (or killed) run.
SNAKEMAKE_LOCKS = Path(".snakemake") / "locks"
#: Arguments after which ``--rerun-incomplete`` is not added: the user chose, or (``--touch``)
#: marking outputs up to date must never bless an incomplete one.
_NO_RERUN_INCOMPLETE = {
    "--rerun-incomplete",
    "--ri",
    "--ignore-incomplete",
    "--ii",
    "--touch",
    "-t",
}
_DIRECTORY = ("-d", "--directory")


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    # No option of its own: every argument is Snakemake's (prefix_chars keeps argparse from
    # reading `--cores 2` as an option of this command).
    p = subparsers.add_parser(
        "run",
        help=HELP,
        usage="evalnoise run [SNAKEMAKE ARGS...]",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        prefix_chars="+",
        add_help=False,
    )
    p.add_argument("snakemake_args", nargs=argparse.REMAINDER, help="arguments of snakemake")
    p.set_defaults(run=run, print_help=p.print_help)


def run(args: argparse.Namespace) -> int:
    argv = list(args.snakemake_args)
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if argv in (["-h"], ["--help"]):
        args.print_help()
        print("\nSnakemake's own arguments: snakemake --help")
        return 0
    require("pipeline", "evalnoise run")
    return run_snakemake(argv)


def run_snakemake(argv: Sequence[str], *, snakemake: Sequence[str] | None = None) -> int:
    """Recover from a killed run if that is safe, then run ``snakemake`` with ``argv``;
    return its exit code (1 when another ``evalnoise run`` is active here)."""
    command = list(snakemake or (sys.executable, "-m", "snakemake"))
    workdir = workdir_of(argv)
    with exclusive(workdir / LOCK_FILE) as holder:
        if holder is not None:
            say(
                f"another `evalnoise run` (pid {holder}) is running in {workdir}; "
                "wait for it to finish"
            )
            return 1
        others = snakemake_processes(workdir)
        if others:
            if snakemake_locked(workdir):
                pid, cmdline = others[0]
                say(
                    f"Snakemake is running in {workdir} (pid {pid}: {cmdline[:120]}); its "
                    "locks are live, so they stay"
                )
        else:
            if snakemake_locked(workdir):
                say(
                    f"Snakemake's locks in {workdir / SNAKEMAKE_LOCKS} were left by a run "
                    "that was killed (no other run is active here): snakemake --unlock"
                )
                unlocked = _call([*command, *argv, "--unlock"])
                if unlocked != 0:
                    say(f"snakemake --unlock failed ({unlocked})")
                    return unlocked
            removed = remove_temporaries(workdir / "results")
            if removed:
                say(
                    f"removed {len(removed)} temporary file(s) a killed job left under "
                    f"{workdir / 'results'}"
                )
        extra = [] if _NO_RERUN_INCOMPLETE.intersection(argv) else ["--rerun-incomplete"]
        return _call([*command, *argv, *extra])


def say(message: str) -> None:
    print(f"evalnoise run: {message}", file=sys.stderr, flush=True)


def workdir_of(argv: Sequence[str]) -> Path:
    """The directory Snakemake works in: ``--directory`` / ``-d`` if given, else here."""
    workdir = "."
    for index, arg in enumerate(argv):
        if arg in _DIRECTORY and index + 1 < len(argv):
            workdir = argv[index + 1]
        elif arg.startswith("--directory="):
            workdir = arg.split("=", 1)[1]
    return Path(workdir).resolve()


@contextlib.contextmanager
def exclusive(path: Path) -> Iterator[int | str | None]:
    """Hold an exclusive flock on ``path`` for the block: yields None when held, else the
    pid recorded by the process that holds it (``"?"`` if unknown), without waiting."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip()
            yield int(holder) if holder.isdigit() else "?"
            return
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        try:
            yield None
        finally:
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def snakemake_locked(workdir: Path) -> bool:
    """Whether Snakemake's lock directory holds any lock."""
    locks = workdir / SNAKEMAKE_LOCKS
    return locks.is_dir() and any(locks.glob("*.lock"))


def snakemake_processes(workdir: Path) -> list[tuple[int, str]]:
    """``(pid, command line)`` of the processes on this machine, other than this one and its
    ancestors, that work in ``workdir`` and run Snakemake or a Snakemake job (its scripts
    live in ``.snakemake/scripts``). Empty where /proc cannot tell (not Linux)."""
    proc = Path("/proc")
    if not proc.is_dir():
        return []
    mine = _ancestors(os.getpid())
    found = []
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) in mine:
            continue
        try:
            if Path(os.readlink(entry / "cwd")).resolve() != workdir:
                continue
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue  # gone, or not ours to read
        if "snakemake" in cmdline:
            found.append((int(entry.name), cmdline.strip()))
    return sorted(found)


def _ancestors(pid: int) -> set[int]:
    out = set()
    while pid > 1 and pid not in out:
        out.add(pid)
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            break
        pid = int(stat.rsplit(")", 1)[1].split()[1])  # the field after the state: ppid
    return out


def _call(command: list[str]) -> int:
    """Run ``command`` to its end; this process ignores Ctrl-C (the child, in the same
    foreground process group, gets it and stops cleanly) and passes SIGTERM and SIGHUP on."""
    child = subprocess.Popen(command)
    forward = {
        sig: signal.signal(sig, lambda number, _frame: child.send_signal(number))
        for sig in (signal.SIGTERM, signal.SIGHUP)
    }
    forward[signal.SIGINT] = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        return child.wait()
    finally:
        for sig, handler in forward.items():
            signal.signal(sig, handler)
