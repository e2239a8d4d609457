"""The judge cache: a rollback journal (not WAL, unsafe on network file systems) that two
processes can write at the same time without losing or corrupting a verdict."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from evalnoise.scorers import JudgeCache

N = 150  # puts per writer; half of the keys are shared by both writers

WRITER = """
import sys, time
from pathlib import Path
from evalnoise.scorers import JudgeCache

path, who, n, go = sys.argv[1], sys.argv[2], int(sys.argv[3]), Path(sys.argv[4])
while not go.exists():
    time.sleep(0.001)
with JudgeCache(path) as cache:
    for i in range(n):
        key = f"shared-{i}" if i % 2 else f"{who}-{i}"
        cache.put(key, "T0/seed0", i % 3 == 0, f"by {who}", "reply", "m", "t")
        assert cache.get(key, "T0/seed0") is not None
print("done", who)
"""


def _journal_mode(path: Path) -> str:
    db = sqlite3.connect(str(path))
    try:
        return db.execute("PRAGMA journal_mode").fetchone()[0]
    finally:
        db.close()


def test_two_processes_write_one_cache_at_once(tmp_path: Path) -> None:
    path, go = tmp_path / "judge.sqlite", tmp_path / "go"
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path), who, str(N), str(go)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for who in ("a", "b")
    ]
    time.sleep(0.5)  # both started (and waiting) before either writes
    go.touch()
    for writer in writers:
        out, err = writer.communicate(timeout=60)
        assert writer.returncode == 0, err
        assert out.startswith("done")
    with JudgeCache(path) as cache:
        # each writer's own keys plus the shared ones once: nothing lost, nothing doubled
        assert len(cache) == 2 * (N // 2) + N // 2
        assert cache.get("a-0", "T0/seed0") == (True, "by a", "reply")
        assert cache.get("b-2", "T0/seed0") == (False, "by b", "reply")
        assert cache.get("shared-1", "T0/seed0")[1] in ("by a", "by b")
    assert _journal_mode(path) == "delete"
    assert not path.with_name(path.name + "-wal").exists()
    db = sqlite3.connect(str(path))
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    db.close()


def test_a_cache_left_in_wal_mode_is_converted_and_kept(tmp_path: Path) -> None:
    path = tmp_path / "judge.sqlite"
    with JudgeCache(path) as cache:
        cache.put("k", "T0/seed0", True, "why", "reply", "m", "t")
    db = sqlite3.connect(str(path))
    assert db.execute("PRAGMA journal_mode=WAL").fetchone()[0] == "wal"  # an older version's
    db.close()
    with JudgeCache(path) as cache:
        assert cache.get("k", "T0/seed0") == (True, "why", "reply")
        assert len(cache) == 1
    assert _journal_mode(path) == "delete"
    assert not path.with_name(path.name + "-wal").exists()
    assert not path.with_name(path.name + "-shm").exists()


def test_a_failed_write_leaves_no_transaction_open(tmp_path: Path) -> None:
    with JudgeCache(tmp_path / "judge.sqlite", busy_timeout_s=1) as cache:
        try:
            with cache._write():
                cache._db.execute("INSERT INTO judgements (key) VALUES ('x')")  # NOT NULL fails
        except sqlite3.IntegrityError:
            pass
        assert not cache._db.in_transaction
        cache.put("k", "s", False, "", "", "m", "t")  # the lock was released
        assert len(cache) == 1
