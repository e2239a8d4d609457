"""Does a virtualenv belong to this checkout? tools/setup.sh asks before trusting ``.venv``.

    python tools/venv_owner.py VENV CHECKOUT [--package evalnoise]

A venv is not relocatable: copying or moving a checkout carries ``.venv`` along, but its
console scripts (``bin/snakemake``, ``bin/evalnoise``, ``bin/pip``) start the interpreter of
the *old* path (their ``#!`` line), ``bin/activate`` sets the old ``VIRTUAL_ENV``, and the
editable install (``__editable__.evalnoise-*.pth`` or its finder) imports the *old*
checkout's ``src``. ``sys.prefix`` does not tell: Python derives it from where the
interpreter was started, so ``.venv/bin/python`` of a copy reports the copy.

Exit status and one line on stdout saying why:

- 0 (nothing printed): the venv was made here and the package imports from ``CHECKOUT/src``.
- 3: the venv was made at another path (a copied or moved checkout) or its python does not
  start. Only recreating it (``python -m venv --clear``, then reinstalling) fixes the scripts.
- 4: the venv is this checkout's, but the package imports from elsewhere (an editable
  install of another checkout, or a non-editable one) or not at all: reinstalling fixes it.

Standard library only; runs under any Python 3 (setup.sh uses the one that makes the venv).
Reads files, and starts the venv's python once (isolated, ``-I``) to find the package.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

FOREIGN_VENV = 3
FOREIGN_PACKAGE = 4

# `#!/bin/sh` + `'''exec' "<python>" "$0" "$@"`: what pip (distlib) writes when the interpreter
# path is too long for a #! line or holds a space
_SH_EXEC = re.compile(r"^'''exec' (.+)$")
_ACTIVATE = re.compile(r"""^\s*(?:export\s+)?VIRTUAL_ENV=(["'])(.+)\1\s*$""")
#: the scripts named first when they are among the foreign ones
_TELLING = ("snakemake", "evalnoise", "pip")
_FIND = (
    "import importlib.util, sys\n"
    "spec = importlib.util.find_spec(sys.argv[1])\n"
    "print(spec.origin or '' if spec else '')\n"
)


def _same(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    return os.path.realpath(a) == os.path.realpath(b)


def script_interpreter(path: Path) -> str | None:
    """The interpreter a console script starts: its ``#!`` line, or the ``exec`` line of
    pip's ``#!/bin/sh`` form. None when the file is not a script (or names no python)."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(4096).decode("utf-8", "surrogateescape").splitlines()
    except OSError:
        return None
    if not head or not head[0].startswith("#!"):
        return None
    words = head[0][2:].split()
    if not words:
        return None
    interpreter = words[0]
    if interpreter == "/bin/sh" and len(head) > 1 and (match := _SH_EXEC.match(head[1])):
        try:
            interpreter = shlex.split(match.group(1))[0]
        except (ValueError, IndexError):
            return None
    name = os.path.basename(interpreter)
    if not name.startswith("python") or os.path.basename(os.path.dirname(interpreter)) != "bin":
        return None
    return interpreter


def _created_for(config: Path) -> list[str]:
    """The directories ``pyvenv.cfg``'s ``command`` line (Python >= 3.11) could name: every
    tail of the arguments after ``-m venv`` and its options (a path may hold spaces)."""
    try:
        lines = config.read_text(encoding="utf-8", errors="surrogateescape").splitlines()
    except OSError:
        return []
    for line in lines:
        key, sep, value = line.partition("=")
        if not sep or key.strip() != "command" or " -m venv " not in value:
            continue
        words = value.split(" -m venv ", 1)[1].split()
        while words and words[0].startswith("-"):
            option = words.pop(0)
            if option == "--prompt" and words:
                words.pop(0)
        return [" ".join(words[i:]) for i in range(len(words))]
    return []


def foreign_venv(venv: Path) -> str | None:
    """Why ``venv`` was made at another path, or None when everything in it names ``venv``."""
    bin_dir = venv / "bin"
    scripts: dict[str, list[str]] = {}
    try:
        entries = sorted(bin_dir.iterdir())
    except OSError:
        entries = []
    for entry in entries:
        if entry.is_symlink() or not entry.is_file():
            continue
        interpreter = script_interpreter(entry)
        if interpreter is not None and not _same(os.path.dirname(interpreter), bin_dir):
            scripts.setdefault(interpreter, []).append(entry.name)
    if scripts:
        interpreter, names = max(scripts.items(), key=lambda item: len(item[1]))
        name = next((n for n in _TELLING if n in names), names[0])
        more = sum(len(n) for n in scripts.values()) - 1
        others = f" and {more} more" if more else ""
        return (
            f"it was made at {Path(interpreter).parent.parent}: "
            f"bin/{name}{others} start {interpreter}"
        )
    candidates = _created_for(venv / "pyvenv.cfg")
    if candidates and not any(_same(c, venv) for c in candidates):
        return f"it was made at {candidates[0]} (pyvenv.cfg)"
    try:
        lines = (bin_dir / "activate").read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        lines = []
    for line in lines:
        match = _ACTIVATE.match(line)
        if match and not _same(match.group(2), venv):
            return f"it was made at {match.group(2)} (bin/activate)"
    return None


def package_origin(venv: Path, package: str) -> tuple[str | None, str | None]:
    """``(origin, error)``: where the venv's python finds ``package`` (None: nowhere), or
    why that python did not answer. Isolated (``-I``): no PYTHONPATH, no working directory."""
    python = venv / "bin" / "python"
    try:
        done = subprocess.run(
            [str(python), "-I", "-c", _FIND, package],
            capture_output=True,
            text=True,
            cwd=venv,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"its python does not start ({exc})"
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        return None, f"its python failed ({last})"
    return done.stdout.strip() or None, None


def check(venv: Path, checkout: Path, package: str = "evalnoise") -> tuple[int, str]:
    """``(status, reason)`` as the command's exit status and line (see the module doc)."""
    why = foreign_venv(venv)
    if why:
        return FOREIGN_VENV, f"{venv} belongs to another checkout: {why}"
    origin, error = package_origin(venv, package)
    if error:
        return FOREIGN_VENV, f"{venv}: {error}"
    if origin is None:
        return FOREIGN_PACKAGE, f"{venv}: {package} is not installed"
    src = os.path.realpath(checkout / "src")
    if not os.path.realpath(origin).startswith(src + os.sep):
        return FOREIGN_PACKAGE, f"{venv}: {package} imports from {origin}, not from {src}"
    return 0, ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("venv", type=Path)
    parser.add_argument("checkout", type=Path)
    parser.add_argument("--package", default="evalnoise")
    args = parser.parse_args(argv)
    status, reason = check(args.venv.absolute(), args.checkout.absolute(), args.package)
    if reason:
        print(reason)
    return status


if __name__ == "__main__":
    sys.exit(main())
