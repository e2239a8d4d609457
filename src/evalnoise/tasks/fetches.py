"""Where a Harbor task visibly fetches from the network: its verifier or its Dockerfile.

Terminal-Bench 2.x verifiers install their test runner while they verify (``apt-get install
curl``, ``curl …/uv/install.sh | sh``, ``uvx … pytest``); run without a network, such a
verifier can only fail. :func:`network_fetches` finds these commands by reading the files —
``tests/test.sh`` (and each step's ``steps/<name>/tests/test.sh``) and
``environment/Dockerfile`` — line by line, outside comments: ``curl``, ``wget``, ``apt-get``
/ ``apt`` ``install``/``update``, ``pip install`` (also ``pip3``, ``python -m pip``), ``uv``
``pip install``/``sync``/``add``/``run --with``/``tool install``, ``uvx``, ``git clone``/
``fetch``/``pull``, ``npm``/``yarn``/``pnpm`` ``install``. It is a reading, not a proof: a
fetch hidden in a script the verifier calls is not seen, and a command behind an ``if`` that
never runs is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Fetch", "network_fetches"]

_COMMAND = re.compile(
    r"(?<![\w./-])("
    r"curl|wget"
    r"|apt(?:-get)?\s+(?:-\S+\s+)*(?:install|update)"
    r"|(?:python3?\s+-m\s+)?pip3?\s+(?:-\S+\s+)*install"
    r"|uv\s+(?:pip\s+install|sync|add|tool\s+install|run\s+--with)"
    r"|uvx"
    r"|git\s+(?:clone|fetch|pull)"
    r"|(?:npm|yarn|pnpm)\s+(?:install|add|i)"
    r")(?![\w-])"
)
#: the files read, relative to the task folder (each step's tests are added when present)
_FILES = ("tests/test.sh", "environment/Dockerfile")


@dataclass(frozen=True)
class Fetch:
    """One command that fetches: the file (relative to the task folder), its 1-based line
    and the command word(s) matched."""

    file: str
    line: int
    command: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line} ({self.command})"


def _files(folder: Path) -> list[str]:
    names = list(_FILES)
    steps = folder / "steps"
    if steps.is_dir():
        names += sorted(
            p.relative_to(folder).as_posix() for p in steps.glob("*/tests/test.sh") if p.is_file()
        )
    return names


def network_fetches(folder: str | Path) -> list[Fetch]:
    """Every fetching command in the task folder's verifier scripts and Dockerfile, in file
    and line order (module docstring); an unreadable or missing file gives none."""
    root = Path(folder)
    found = []
    for name in _files(root):
        try:
            text = (root / name).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for number, line in enumerate(text.splitlines(), start=1):
            code = line.split("#", 1)[0] if not line.lstrip().startswith("#") else ""
            match = _COMMAND.search(code)
            if match:
                found.append(Fetch(name, number, " ".join(match.group(1).split())))
    return found
