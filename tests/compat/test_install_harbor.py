"""tools/install-harbor.sh: where it installs, and its refusal without Python 3.12.

Both run without network and without touching an existing install: ``--prefix`` installs
nothing, and the missing-Python check comes before any download.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from harbor_tools import INSTALL_SCRIPT, harbor_home


def _run(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(INSTALL_SCRIPT), *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **env},
    )


def test_prefix_follows_the_cache_dir_like_the_helpers(tmp_path: Path, monkeypatch) -> None:
    cache = tmp_path / "cache"
    proc = _run("--prefix", env={"EVALNOISE_CACHE_DIR": str(cache)})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(cache / "harbor")
    monkeypatch.setenv("EVALNOISE_CACHE_DIR", str(cache))
    assert harbor_home() == cache / "harbor"
    assert not cache.exists()  # --prefix installs nothing


def test_without_python_312_it_says_so_and_exits_3(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    fake = tmp_path / "python3.11-only"
    fake.write_text("#!/bin/sh\nexit 1\n")
    fake.chmod(0o755)
    proc = _run(env={"EVALNOISE_CACHE_DIR": str(cache), "EVALNOISE_HARBOR_PYTHON": str(fake)})
    assert proc.returncode == 3
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "no Python 3.12 found" in lines[0], proc.stderr
    assert not cache.exists()


def test_a_bad_argument_is_refused(tmp_path: Path) -> None:
    proc = _run("--frobnicate", env={"EVALNOISE_CACHE_DIR": str(tmp_path)})
    assert proc.returncode == 2
    assert "usage" in proc.stderr
