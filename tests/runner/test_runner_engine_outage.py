"""The Docker engine stops in the middle of a shard: no trial's outcome is the harness's.

Issue 21.11: with the engine stopped (SIGTERM to dockerd) once a shard's journal had rows,
the shard stopped with ``EngineUnavailable``, but the in-flight trial's row had already been
journaled as ``infra_error`` — a permanent 0 under ``as_incorrect`` after the resume. Here a
private engine (its own socket, data and exec roots, so the suite's engine is untouched)
runs a shard of the probe agent; a thread stops it with SIGTERM once two trials are
journaled; the shard must stop with ``EngineUnavailable`` and journal no ``infra_error``;
after the engine is started again, the resume runs every missing trial once and every trial
ends ``ok``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest
from runner_helpers import probe_agent, task_row, tasks_frame

pytestmark = [pytest.mark.docker, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]


class PrivateEngine:
    """A dockerd of its own, started and stopped by this test only (by its pid)."""

    def __init__(self) -> None:
        # a short path: a unix socket's path is limited to 107 bytes
        self.root = Path(tempfile.mkdtemp(prefix="evalnoise-engine-", dir="/tmp"))
        self.sock = self.root / "d.sock"
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"unix://{self.sock}"

    def start(self) -> None:
        extra = subprocess.run(
            ["bash", str(ROOT / "tools" / "docker-engine.sh"), "--print-dockerd-args"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        args = [
            "dockerd",
            "--host",
            self.url,
            "--data-root",
            str(self.root / "data"),
            "--exec-root",
            str(self.root / "exec"),
            "--pidfile",
            str(self.root / "docker.pid"),
            *extra,
        ]
        log = open(self.root / "dockerd.log", "ab")  # the daemon writes it; closed here
        self.proc = subprocess.Popen(args, stdout=log, stderr=log, start_new_session=True)
        log.close()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"dockerd exited: {self.log_tail()}")
            if self.answers():
                return
            time.sleep(0.2)
        raise RuntimeError(f"dockerd did not answer within 60 s: {self.log_tail()}")

    def answers(self) -> bool:
        result = subprocess.run(
            ["docker", "-H", self.url, "info", "--format", "{{.ID}}"],
            capture_output=True,
            timeout=30,
        )
        return result.returncode == 0

    def stop(self) -> None:
        """SIGTERM, as the issue did; wait for the daemon to exit."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=30)

    def log_tail(self) -> str:
        try:
            return (self.root / "dockerd.log").read_text(errors="replace")[-2000:]
        except OSError:
            return ""

    def remove(self) -> None:
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)


@pytest.fixture
def private_engine(docker_engine, probe_image):
    engine = PrivateEngine()
    try:
        engine.start()
        # the probe image, from the suite's engine (no registry to pull from)
        save = subprocess.Popen(["docker", "save", probe_image], stdout=subprocess.PIPE)
        subprocess.run(
            ["docker", "-H", engine.url, "load", "-q"], stdin=save.stdout, check=True, timeout=600
        )
        assert save.wait(timeout=60) == 0
        yield engine
    finally:
        engine.remove()


def _journal_rows(path: Path) -> list[dict]:
    if not path.exists():
        return []
    lines = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    return [r for r in lines if "status" in r]


def test_an_engine_stopped_mid_shard_leaves_no_trial_scored_by_the_harness(
    tmp_path, private_engine, probe_image
):
    import docker

    from evalnoise.runner import EngineUnavailable, run_shard
    from evalnoise.runner.docker_backend import DockerBackend

    tasks = tasks_frame([task_row(f"t{i}", {"op": "sleep", "s": 1.5}) for i in range(8)])
    journal, output = tmp_path / "shard.jsonl", tmp_path / "shard.parquet"

    def run():
        client = docker.DockerClient(base_url=private_engine.url, timeout=120)
        backend = DockerBackend(client=client, measure_peak=False)
        return run_shard(
            tasks,
            probe_agent(probe_image),
            "1x",
            [0],
            0,
            "as_incorrect",
            backend,
            journal,
            output,
            concurrency=2,
            progress=False,
        )

    def stop_when_two_are_journaled():
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and len(_journal_rows(journal)) < 2:
            time.sleep(0.05)
        private_engine.stop()

    stopper = threading.Thread(target=stop_when_two_are_journaled, daemon=True)
    stopper.start()
    with pytest.raises(EngineUnavailable):
        run()
    stopper.join(timeout=120)
    rows = _journal_rows(journal)
    assert 2 <= len(rows) < 8, rows
    # the trials in flight when the engine went were the harness's failures: not journaled
    assert {r["status"] for r in rows} == {"ok"}, [(r["task_id"], r["error"]) for r in rows]
    assert not output.exists()

    private_engine.start()
    result = run()
    assert result.trials == 8 and result.rows == 8
    assert result.statuses == {"ok": 8}
    final = _journal_rows(journal)
    assert sorted((r["task_id"], r["trial"], r["attempt"]) for r in final) == [
        (f"t{i}", 0, 1) for i in range(8)
    ]
