"""A copied or moved checkout: tools/venv_owner.py tells tools/setup.sh that ``.venv`` belongs
to another path, and setup.sh recreates it (issue 16).

Nothing is installed: a fake checkout (a Snakefile and ``src/evalnoise``) gets a venv made by
``python -m venv --without-pip`` (fast), a console script written the way pip writes one, and
the editable install's ``.pth`` the way setuptools writes it; then it is moved with ``mv`` or
copied, as a user would.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
TOOL = REPO / "tools" / "venv_owner.py"
SETUP = REPO / "tools" / "setup.sh"
SITE = f"lib/python{sys.version_info.major}.{sys.version_info.minor}/site-packages"

_spec = importlib.util.spec_from_file_location("venv_owner", TOOL)
assert _spec is not None and _spec.loader is not None
venv_owner = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(venv_owner)


def make_venv(venv: Path, *options: str) -> None:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", *options, str(venv)], check=True)


def install_editable(venv: Path, src: Path) -> None:
    """What ``pip install -e .`` leaves behind: the .pth naming ``src``, and a console script
    whose #! line names the venv's python."""
    (venv / SITE / "__editable__.evalnoise-0.1.0.pth").write_text(f"{src}\n")
    script = venv / "bin" / "evalnoise"
    script.write_text(
        f"#!{venv}/bin/python\n# -*- coding: utf-8 -*-\nimport re\nimport sys\n"
        "from evalnoise import main\nif __name__ == '__main__':\n"
        "    sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])\n"
        "    sys.exit(main())\n"
    )
    script.chmod(0o755)


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    root = tmp_path / "checkout"
    (root / "src" / "evalnoise").mkdir(parents=True)
    (root / "src" / "evalnoise" / "__init__.py").write_text("def main():\n    return 0\n")
    (root / "Snakefile").write_text("")
    make_venv(root / ".venv")
    install_editable(root / ".venv", root / "src")
    return root


def owner(root: Path) -> tuple[int, str]:
    """tools/venv_owner.py as setup.sh runs it (from the checkout, on .venv)."""
    done = subprocess.run(
        [sys.executable, str(TOOL), ".venv", str(root)],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.stderr == ""
    return done.returncode, done.stdout.strip()


def imported_from(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            str(root / ".venv" / "bin" / "python"),
            "-I",
            "-c",
            "import evalnoise; print(evalnoise.__file__)",
        ],
        capture_output=True,
        text=True,
        check=False,
    )


def test_a_venv_made_in_the_checkout_belongs_to_it(checkout: Path) -> None:
    assert owner(checkout) == (0, "")


def test_a_moved_checkout_has_a_venv_of_the_old_path(checkout: Path, tmp_path: Path) -> None:
    moved = tmp_path / "moved"
    subprocess.run(["mv", str(checkout), str(moved)], check=True)
    # what breaks: the console script's interpreter is gone, the editable install with it
    with pytest.raises(FileNotFoundError):
        subprocess.run([str(moved / ".venv" / "bin" / "evalnoise")], check=False)
    assert "No module named 'evalnoise'" in imported_from(moved).stderr
    status, why = owner(moved)
    assert status == venv_owner.FOREIGN_VENV
    assert f"it was made at {checkout / '.venv'}: bin/evalnoise start" in why


def test_a_copied_checkout_runs_the_original(checkout: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(checkout, copy, symlinks=True)
    # what breaks: the copy silently imports (and would hash) the original's sources
    assert imported_from(copy).stdout.strip() == str(checkout / "src/evalnoise/__init__.py")
    assert f"#!{checkout}/.venv/bin/python" in (copy / ".venv/bin/evalnoise").read_text()
    status, why = owner(copy)
    assert status == venv_owner.FOREIGN_VENV
    assert str(checkout / ".venv" / "bin" / "python") in why


def test_recreating_the_venv_and_reinstalling_repairs_it(checkout: Path, tmp_path: Path) -> None:
    moved = tmp_path / "moved"
    subprocess.run(["mv", str(checkout), str(moved)], check=True)
    make_venv(moved / ".venv", "--clear")
    status, why = owner(moved)
    assert (status, why) == (
        venv_owner.FOREIGN_PACKAGE,
        f"{moved}/.venv: evalnoise is not installed",
    )
    install_editable(moved / ".venv", moved / "src")
    assert owner(moved) == (0, "")
    assert imported_from(moved).stdout.strip() == str(moved / "src/evalnoise/__init__.py")


def test_without_console_scripts_pyvenv_cfg_and_activate_tell(
    checkout: Path, tmp_path: Path
) -> None:
    (checkout / ".venv" / "bin" / "evalnoise").unlink()
    moved = tmp_path / "moved"
    subprocess.run(["mv", str(checkout), str(moved)], check=True)
    install_editable(moved / ".venv", moved / "src")
    (moved / ".venv" / "bin" / "evalnoise").unlink()
    assert owner(moved) == (
        venv_owner.FOREIGN_VENV,
        f"{moved}/.venv belongs to another checkout: it was made at {checkout}/.venv (pyvenv.cfg)",
    )
    config = moved / ".venv" / "pyvenv.cfg"
    config.write_text(re.sub(r"(?m)^command = .*\n", "", config.read_text()))
    status, why = owner(moved)
    assert status == venv_owner.FOREIGN_VENV
    assert why.endswith(f"it was made at {checkout}/.venv (bin/activate)")


def test_evalnoise_from_another_checkout_is_reinstalled(checkout: Path, tmp_path: Path) -> None:
    other = tmp_path / "other" / "src"
    (other / "evalnoise").mkdir(parents=True)
    (other / "evalnoise" / "__init__.py").write_text("")
    (checkout / ".venv" / SITE / "__editable__.evalnoise-0.1.0.pth").write_text(f"{other}\n")
    status, why = owner(checkout)
    assert status == venv_owner.FOREIGN_PACKAGE
    assert f"evalnoise imports from {other}/evalnoise/__init__.py, not from " in why


def test_a_checkout_reached_through_a_symlink_is_the_same(checkout: Path, tmp_path: Path) -> None:
    link = tmp_path / "link"
    link.symlink_to(checkout)
    assert owner(link) == (0, "")


def test_a_python_that_does_not_start_means_recreate(checkout: Path) -> None:
    python = checkout / ".venv" / "bin" / "python"
    python.unlink()
    python.symlink_to(checkout / "no-such-python")
    status, why = owner(checkout)
    assert status == venv_owner.FOREIGN_VENV
    assert "its python does not start" in why


@pytest.mark.parametrize(
    ("text", "interpreter"),
    [
        ("#!/a/.venv/bin/python3.11\nimport sys\n", "/a/.venv/bin/python3.11"),
        # pip's form for a path with a space (or longer than a #! line allows)
        (
            "#!/bin/sh\n'''exec' \"/a b/.venv/bin/python\" \"$0\" \"$@\"\n' '''\nimport sys\n",
            "/a b/.venv/bin/python",
        ),
        ("#!/usr/bin/env python3\n", None),
        ("#!/bin/bash\necho hi\n", None),
        ("plain text\n", None),
    ],
)
def test_script_interpreter(tmp_path: Path, text: str, interpreter: str | None) -> None:
    script = tmp_path / "script"
    script.write_text(text)
    assert venv_owner.script_interpreter(script) == interpreter


def setup_venv_block(root: Path) -> subprocess.CompletedProcess[str]:
    """setup.sh's own venv check (from ``PY=`` to the install step), run in ``root`` with a
    python whose ``-m venv`` makes venvs without pip (fast; nothing is installed)."""
    text = SETUP.read_text()
    start = text.index("PY=${PYTHON:-python3}\n")
    end = text.index('step "offline model: building', start)
    tools = root / "tools"
    tools.mkdir(exist_ok=True)
    shutil.copy(TOOL, tools / TOOL.name)
    (root / "pyproject.toml").write_text("")
    python = root.parent / "python-without-pip"
    python.write_text(
        "#!/bin/sh\n"
        f'if [ "$1" = -m ] && [ "$2" = venv ]; then shift 2; '
        f'exec "{sys.executable}" -m venv --without-pip "$@"; fi\n'
        f'exec "{sys.executable}" "$@"\n'
    )
    python.chmod(0o755)
    script = (
        "set -euo pipefail\nROOT=$PWD\nstep() { printf '\\n== %s\\n' \"$*\" >&2; }\n"
        + text[start:end]
    )
    env = {**os.environ, "PYTHON": str(python)}
    return subprocess.run(
        ["bash", "-c", script], cwd=root, env=env, capture_output=True, text=True, check=False
    )


def test_setup_leaves_its_own_venv_alone(checkout: Path) -> None:
    stamp = checkout / ".venv" / ".evalnoise-deps"
    stamp.write_text("0123456789abcdef\n")
    done = setup_venv_block(checkout)
    assert (done.returncode, done.stderr) == (0, "")
    assert stamp.exists()


def test_setup_recreates_the_venv_of_a_moved_checkout(checkout: Path, tmp_path: Path) -> None:
    moved = tmp_path / "moved"
    subprocess.run(["mv", str(checkout), str(moved)], check=True)
    (moved / ".venv" / ".evalnoise-deps").write_text("0123456789abcdef\n")
    done = setup_venv_block(moved)
    assert done.returncode == 0, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"setup: {moved}/.venv belongs to another checkout: it was made at")
    assert lines[0].endswith("; recreating .venv (python -m venv --clear) and reinstalling")
    # cleared: the stamp is gone (so setup reinstalls), the scripts of the old path too
    assert not (moved / ".venv" / ".evalnoise-deps").exists()
    assert not (moved / ".venv" / "bin" / "evalnoise").exists()
    assert venv_owner.foreign_venv(moved / ".venv") is None
