"""Faults that will not go away: one line, and a retry only once the cause has cleared.

Issue 21.12: a dead engine or a full disk made every attempt of Snakemake's ``retries: 2``
fail within seconds, each with a ~100-line traceback. ``evalnoise.pipeline.faults.job``
says the cause in one line; a retried attempt runs only once the cause has cleared, and
otherwise ends at once without repeating the line on the console (issue 38.5: an engine
outage fails in seconds, its line said once per job). The faults here are real: a Docker
client on a socket nobody serves, and a write to ``/dev/full`` (ENOSPC from the kernel).
"""

from __future__ import annotations

import io
import logging

import pytest

from evalnoise.pipeline import faults


def _engine_gone(tmp_path):
    import docker

    from evalnoise.runner.docker_backend import DockerBackend

    client = docker.DockerClient(base_url=f"unix://{tmp_path}/no-engine.sock", version="1.41")
    DockerBackend(client=client)  # raises EngineUnavailable


def _disk_full():
    with open("/dev/full", "w") as handle:
        handle.write("x" * 10)
        handle.flush()


def test_faults_are_classified(tmp_path):
    from evalnoise.runner import EngineUnavailable

    with pytest.raises(EngineUnavailable) as info:
        _engine_gone(tmp_path)
    assert faults.fault_of(info.value).kind == "engine"
    with pytest.raises(OSError) as info:
        _disk_full()
    fault = faults.fault_of(info.value, tmp_path / "out" / "shard.parquet")
    assert fault.kind == "disk_full" and f"into {tmp_path / 'out'}" in fault.what
    assert faults.fault_of(ValueError("a bug")) is None
    assert faults.fault_of(KeyError("x")) is None


def _run(body, tmp_path, check=None):
    console = io.StringIO()
    log = logging.getLogger("test-faults")
    with pytest.raises(SystemExit) as info:
        faults.job(
            body,
            name="run_trials a@3x t0000 c000",
            log_path=tmp_path / "job.log",
            console=console,
            log=log,
            engine_check=check,
            output=tmp_path / "shard.parquet",
        )
    assert info.value.code == 1
    return console.getvalue()


def test_an_engine_fault_is_one_line_and_a_retry_ends_at_once(tmp_path, monkeypatch, caplog):
    import time

    out = _run(lambda: _engine_gone(tmp_path), tmp_path)
    assert out.count("\n") == 1 and "Traceback" not in out
    assert out.startswith("run_trials a@3x t0000 c000: the Docker engine does not answer")
    assert "tools/docker-engine.sh" in out

    ran = []

    def still_down():
        _engine_gone(tmp_path)

    # Snakemake's retry: the engine still does not answer, so the body never runs; the
    # attempt ends at once and says so in the job's log only (the console has the line)
    started = time.monotonic()
    with caplog.at_level(logging.ERROR, logger="test-faults"):
        again = _run(lambda: ran.append(1), tmp_path, check=still_down)
    assert time.monotonic() - started < 2.0
    assert ran == [] and again == ""
    assert "retried attempt: the cause has not gone away" in caplog.text

    # a marker an earlier run left (older than the retry window): the line again
    monkeypatch.setattr(faults, "RETRY_WINDOW_S", 0.0)
    again = _run(lambda: ran.append(1), tmp_path, check=still_down)
    assert ran == [] and "again: the cause has not gone away" in again
    assert again.count("\n") == 1

    # with EVALNOISE_ENGINE_WAIT_S the retry waits that long, then gives up
    monkeypatch.setattr(faults, "ENGINE_WAIT_S", 1.5)
    started = time.monotonic()
    _run(lambda: ran.append(1), tmp_path, check=still_down)
    assert 1.5 <= time.monotonic() - started < 4.0 and ran == []

    # the engine answers again: the retry runs, and the marker is gone after it
    assert (
        faults.job(
            lambda: "done",
            name="j",
            log_path=tmp_path / "job.log",
            console=io.StringIO(),
            log=logging.getLogger("t"),
            engine_check=lambda: None,
        )
        == "done"
    )
    assert not faults._marker(tmp_path / "job.log").exists()


def test_a_full_disk_is_one_line_and_not_retried_while_still_full(tmp_path):
    out = _run(_disk_full, tmp_path)
    assert (
        out.count("\n") == 1
        and f"the disk is full (No space left on device) writing into {tmp_path}" in out
    )
    ran = []
    again = _run(lambda: ran.append(1), tmp_path)
    assert ran == [] and again == ""  # the retry ends at once, its line in the log only
    faults._marker(tmp_path / "job.log").unlink()


def test_a_bug_keeps_its_traceback(tmp_path):
    with pytest.raises(ZeroDivisionError):
        faults.job(
            lambda: 1 / 0,
            name="j",
            log_path=tmp_path / "job.log",
            console=io.StringIO(),
            log=logging.getLogger("t"),
        )
