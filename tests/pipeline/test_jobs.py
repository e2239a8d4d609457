"""The process a job runs in: a light rule's script inside Snakemake's process
(:func:`evalnoise.pipeline.jobs.run_script`), its log, its failures; and the checkout on
``PYTHONPATH``."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest

from evalnoise.pipeline.jobs import JobFailed, export_checkout, run_script


def _script(tmp_path: Path, body: str, name: str = "job.py") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    return path


def _run(script: Path, log: Path, **params) -> None:
    run_script(
        script,
        input=SimpleNamespace(),
        output=SimpleNamespace(done=str(log.with_suffix(".out"))),
        params=SimpleNamespace(**params),
        wildcards=SimpleNamespace(agent="a"),
        log=[str(log)],
        name="demo",
    )


def test_the_script_sees_the_job_and_logs_to_its_own_file(tmp_path: Path) -> None:
    script = _script(
        tmp_path,
        """
        from evalnoise.pipeline.jobs import log_to
        log = log_to(snakemake.log[0])
        log.info("agent %s, value %s, rule %s", snakemake.wildcards.agent,
                 snakemake.params.value, snakemake.rule)
        with open(snakemake.output.done, "w") as f:
            f.write("ok")
        """,
    )
    log = tmp_path / "logs" / "demo.log"
    _run(script, log, value=7)
    text = log.read_text()
    assert "agent a, value 7, rule demo" in text
    assert "in-process job demo done:" in text
    assert (tmp_path / "logs" / "demo.out").read_text() == "ok"


def test_the_process_descriptors_are_left_alone(tmp_path: Path) -> None:
    # a script's log_to must not point this process's stderr (Snakemake's) at the job log
    script = _script(
        tmp_path, "from evalnoise.pipeline.jobs import log_to\nlog_to(snakemake.log[0])\n"
    )
    before = os.fstat(2)
    _run(script, tmp_path / "x.log")
    after = os.fstat(2)
    assert (before.st_ino, before.st_dev) == (after.st_ino, after.st_dev)


def test_two_jobs_at_once_each_log_only_their_own_records(tmp_path: Path) -> None:
    script = _script(
        tmp_path,
        """
        import time
        from evalnoise.pipeline.jobs import log_to
        log = log_to(snakemake.log[0])
        for i in range(50):
            log.info("job %s line %d", snakemake.params.tag, i)
            time.sleep(0.001)
        """,
    )
    logs = {tag: tmp_path / f"{tag}.log" for tag in ("left", "right")}
    threads = [
        threading.Thread(target=_run, args=(script, logs[tag]), kwargs={"tag": tag}) for tag in logs
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for tag, path in logs.items():
        text = path.read_text()
        other = "right" if tag == "left" else "left"
        assert text.count(f"job {tag} line") == 50
        assert f"job {other} line" not in text


def test_overlapping_jobs_leave_the_process_argv_and_main_module_alone(tmp_path: Path) -> None:
    # Snakemake's worker threads run in-process jobs at once. runpy.run_path swaps
    # sys.argv[0] and sys.modules["__main__"] for the script and puts back what it saw: with
    # two jobs where the first ends while the second runs, the second put back the first's
    # script as Snakemake's own argv[0] and main module. The overlap is forced by events.
    script = _script(
        tmp_path,
        """
        hooks = snakemake.params.hooks
        hooks["seen"].append((snakemake.params.tag, __name__))
        hooks[snakemake.params.tag + " started"].set()
        hooks[snakemake.params.wait].wait(10)
        """,
    )
    hooks = {
        "seen": [],
        "first started": threading.Event(),
        "second started": threading.Event(),
        "first done": threading.Event(),
    }
    argv0, main = sys.argv[0], sys.modules["__main__"]

    def first() -> None:
        _run(script, tmp_path / "first.log", tag="first", wait="second started", hooks=hooks)
        hooks["first done"].set()

    def second() -> None:
        hooks["first started"].wait(10)
        _run(script, tmp_path / "second.log", tag="second", wait="first done", hooks=hooks)

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert hooks["seen"] == [("first", "__main__"), ("second", "__main__")]
    assert sys.argv[0] == argv0
    assert sys.modules["__main__"] is main


def test_a_non_zero_exit_is_an_exception_not_an_exit(tmp_path: Path) -> None:
    script = _script(tmp_path, "import sys\nsys.exit(1)\n")
    log = tmp_path / "exit.log"
    with pytest.raises(JobFailed, match=r"job\.py exited with 1 \(log: .*exit\.log\)"):
        _run(script, log)
    assert "job.py exited with 1" in log.read_text()


def test_a_zero_exit_is_success(tmp_path: Path) -> None:
    _run(_script(tmp_path, "raise SystemExit(0)\n"), tmp_path / "zero.log")


def test_an_exception_is_logged_with_its_traceback_and_raised(tmp_path: Path) -> None:
    script = _script(tmp_path, "raise ValueError('row 3, field score: not a number')\n")
    log = tmp_path / "boom.log"
    with pytest.raises(ValueError, match="row 3, field score"):
        _run(script, log)
    text = log.read_text()
    assert "job.py failed" in text
    assert "Traceback" in text and "row 3, field score: not a number" in text


def test_log_to_in_its_own_process_takes_over_stdout_and_stderr(tmp_path: Path) -> None:
    # the `script:` path (a job in its own process): everything it prints lands in the log
    log = tmp_path / "own" / "job.log"
    code = (
        "import sys, subprocess\n"
        "from evalnoise.pipeline.jobs import log_to\n"
        f"log = log_to({str(log)!r})\n"
        "log.info('logged')\n"
        "print('printed')\n"
        "subprocess.run(['sh', '-c', 'echo child >&2'])\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
    text = log.read_text()
    assert "logged" in text and "printed" in text and "child" in text


def test_export_checkout_puts_the_checkout_first(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "src" / "evalnoise").mkdir(parents=True)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(["/elsewhere", str(tmp_path / "src")]))
    assert export_checkout(tmp_path)
    assert os.environ["PYTHONPATH"].split(os.pathsep) == [str(tmp_path / "src"), "/elsewhere"]
    assert not export_checkout(tmp_path / "nothing")
