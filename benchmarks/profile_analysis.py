#!/usr/bin/env python
"""Where the analysis and report jobs of a finished run spend their time (cProfile).

Reruns, in a workspace the pipeline benchmark kept (``bench_pipeline.py --keep``), every
job of the analysis and report stages (``snakemake --forcerun`` of their rules, the trials
and scores untouched: :func:`bench_analysis.forced_rerun`) with each job's Python process
under cProfile: a ``sitecustomize`` on ``PYTHONPATH`` starts the profiler in a process whose
script is a Snakemake job script
(``.snakemake/scripts/tmp*.<rule>.py``) and writes its statistics when it exits. Writes a
text report: per job, its wall time, the time in imports (the outermost ``_find_and_load``
calls' cumulative time) and in reading Parquet, and its top functions by cumulative time;
then, summed over the jobs, the split between start-up (interpreter, imports, Snakemake's
script preamble), reading and the rest (the statistics and the report).

The light rules run inside Snakemake's process (``run:`` + in_process,
evalnoise.pipeline.jobs): the same ``sitecustomize`` wraps ``jobs._run_as_main``, with which
``run_script`` runs a rule's script in one of Snakemake's threads, in a profiler of that
thread (cProfile hooks only the thread that enables it), so each in-process job is profiled
alone too.

    python benchmarks/profile_analysis.py /tmp/evalnoise-bench-local-100000-a1-XXXX/ws \
        --out benchmarks/results/profiles/analysis-local-100000-a1.txt
"""

from __future__ import annotations

import argparse
import io
import os
import pstats
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_analysis import RULES, forced_rerun

_SITECUSTOMIZE = r"""
import os, re, sys
_m = re.search(r"\.snakemake/scripts/tmp[^/.]*\.(\w+)\.py$", sys.argv[0] if sys.argv else "")
if _m and os.environ.get("EVALNOISE_CPROFILE_DIR"):
    import atexit, cProfile, time
    _profile = cProfile.Profile()
    _t0 = time.perf_counter()

    def _dump():
        _profile.disable()
        name = f"{_m.group(1)}-{os.getpid()}-{time.perf_counter() - _t0:.3f}.prof"
        _profile.dump_stats(os.path.join(os.environ["EVALNOISE_CPROFILE_DIR"], name))

    atexit.register(_dump)
    _profile.enable()

if os.environ.get("EVALNOISE_CPROFILE_DIR"):
    # an in-process job (evalnoise.pipeline.jobs.run_script) runs its script with
    # jobs._run_as_main in one of Snakemake's threads: profile that call, in that thread.
    # The module is the workspace's own copy, imported later (the Snakefile puts its src on
    # sys.path), so it is wrapped when it is imported, by a finder that steps in once.
    import cProfile as _cp, importlib.abc as _abc, importlib.util as _util
    import threading as _th, time as _tm

    def _profiled(run_as_main):
        def wrapper(path, snakemake):
            rule = os.path.basename(str(path))[: -len(".py")]
            profile, t0 = _cp.Profile(), _tm.perf_counter()
            profile.enable()
            try:
                return run_as_main(path, snakemake)
            finally:
                profile.disable()
                name = f"{rule}-{os.getpid()}.{_th.get_ident()}-{_tm.perf_counter() - t0:.3f}.prof"
                profile.dump_stats(os.path.join(os.environ["EVALNOISE_CPROFILE_DIR"], name))
        return wrapper

    class _WrapJobs(_abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name != "evalnoise.pipeline.jobs":
                return None
            sys.meta_path.remove(self)
            spec = _util.find_spec(name)
            exec_module = spec.loader.exec_module

            def wrapped_exec(module):
                exec_module(module)
                module._run_as_main = _profiled(module._run_as_main)

            spec.loader.exec_module = wrapped_exec
            return spec

    sys.meta_path.insert(0, _WrapJobs())
"""


def _cumulative(stats: pstats.Stats, file_part: str, function: str) -> float:
    """The largest cumulative time of a function (the outermost call of a recursive one:
    cProfile counts a recursive call's time once, at its outermost frame)."""
    return max(
        (
            ct
            for (file, _, name), (_, _, _, ct, _) in stats.stats.items()
            if name == function and file_part in file
        ),
        default=0.0,
    )


def job_report(path: Path) -> tuple[dict[str, float | str], str]:
    rule, _, wall = path.stem.rsplit("-", 2)
    stats = pstats.Stats(str(path))
    imports = _cumulative(stats, "importlib._bootstrap", "_find_and_load")
    reading = _cumulative(stats, "pyarrow/parquet/core.py", "read") + _cumulative(
        stats, "pyarrow/parquet/core.py", "read_table"
    )
    text = io.StringIO()
    stats.stream = text
    stats.sort_stats("cumulative").print_stats(20)
    row = {"rule": rule, "wall_s": float(wall), "imports_s": imports, "parquet_read_s": reading}
    return row, text.getvalue()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("workspace", type=Path, help="a workspace kept by bench_pipeline --keep")
    parser.add_argument("--out", type=Path, required=True, help="the text report to write")
    parser.add_argument("--cores", type=int, default=2)
    args = parser.parse_args(argv)
    ws = args.workspace.resolve()
    if not (ws / "Snakefile").is_file() or not (ws / "results" / "report").is_dir():
        parser.error(f"{ws}: not a workspace of a finished run (no Snakefile or results/report)")

    hook = Path(tempfile.mkdtemp(prefix="evalnoise-cprofile-hook-"))
    dumps = Path(tempfile.mkdtemp(prefix="evalnoise-cprofile-"))
    (hook / "sitecustomize.py").write_text(_SITECUSTOMIZE)
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    # the workspace's package first, as the benchmark runs it; the hook after it
    env["PYTHONPATH"] = os.pathsep.join([str(ws / "src"), str(hook)])
    env["EVALNOISE_CPROFILE_DIR"] = str(dumps)
    command, _ = forced_rerun(ws, env, args.cores)
    t0 = time.perf_counter()
    done = subprocess.run(command, cwd=ws, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"snakemake failed ({done.returncode}):\n{done.stderr[-3000:]}")

    rows, details = [], []
    for path in sorted(dumps.glob("*.prof")):
        row, text = job_report(path)
        rows.append(row)
        details.append(f"## {path.stem}\n\n```\n{text.strip()}\n```\n")
    if not rows:
        raise SystemExit("no job was profiled (is sitecustomize shadowed?)")
    total = sum(r["wall_s"] for r in rows)
    imports = sum(r["imports_s"] for r in rows)
    reading = sum(r["parquet_read_s"] for r in rows)
    lines = [
        f"# cProfile of the analysis and report jobs ({ws.name} of {ws.parent.name})",
        "",
        f"`snakemake --forcerun {' '.join(RULES)}`: {len(rows)} jobs, {wall:.1f} s wall "
        f"on {args.cores} cores; the jobs' profiled time summed {total:.1f} s: imports "
        f"{imports:.1f} s ({100 * imports / total:.0f} %), Parquet reads {reading:.1f} s "
        f"({100 * reading / total:.0f} %), the rest {total - imports - reading:.1f} s. "
        "(Under cProfile; each job's interpreter start before the profiler, ~20 ms, "
        "is not in it.)",
        "",
        "| job | profiled s | imports s | Parquet reads s | rest s |",
        "|---|---:|---:|---:|---:|",
    ]
    for r in sorted(rows, key=lambda r: -r["wall_s"]):
        rest = r["wall_s"] - r["imports_s"] - r["parquet_read_s"]
        lines.append(
            f"| {r['rule']} | {r['wall_s']:.2f} | {r['imports_s']:.2f} "
            f"| {r['parquet_read_s']:.2f} | {rest:.2f} |"
        )
    lines += ["", "Top 20 functions by cumulative time, per job:", "", *details]
    text = "\n".join(lines).replace(str(ws), "<workspace>")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text + "\n")
    print("\n".join(lines[: 8 + len(rows)]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
