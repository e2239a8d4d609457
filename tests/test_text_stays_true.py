"""Comments and docstrings say why, not what was measured once: no timings in the code's text.

A timing measured on one machine on one day is false on the next: it belongs in
``benchmarks/results/`` (``benchmarks/results/comment-measurements.md`` holds the ones that
were quoted in the code), and the code keeps the reason in a line that cites it. This test
reads the comments and docstrings of ``src/``, ``agents/``, ``scripts/``, ``benchmarks/*.py``,
``tools/*.sh`` and the rules (their lines with a ``#``) and fails on the patterns that are a
measurement and nothing else: a number of milliseconds or CPU-seconds, "took / takes / was /
about / ~ N s", "(measured: …)".

Not checked, because the words have true uses a pattern cannot tell apart: a plain "N s" (a
default timeout, a Slurm setting), and history words ("no longer" also says that an engine
stops answering; "used to" says what a file is for). Those are held by review.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

MEASUREMENT = re.compile(
    r"\d[\d.,]*\s?(CPU-s|CPU s|ms)\b"
    r"|\b\d[\d.,]*\s?s (of CPU|CPU)\b"
    r"|(\b(took|takes|was|about)\s+~?|~)\d[\d.,]*\s?(s|ms|min|minutes|seconds)\b"
    r"|\(measured:",
    re.IGNORECASE,
)


def python_texts(source: str) -> list[tuple[int, str]]:
    """The comments and docstrings of a Python source, line by line: ``(line, text)``."""
    texts = [
        (tok.start[0], tok.string)
        for tok in tokenize.generate_tokens(io.StringIO(source).readline)
        if tok.type == tokenize.COMMENT
    ]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            first = node.body[0] if node.body else None
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                for i, line in enumerate(first.value.value.splitlines()):
                    texts.append((first.lineno + i, line))
    return texts


def shell_texts(source: str) -> list[tuple[int, str]]:
    return [(i, line) for i, line in enumerate(source.splitlines(), 1) if "#" in line]


def _files() -> list[Path]:
    found = [p for d in ("src", "agents", "scripts") for p in (ROOT / d).rglob("*.py")]
    found += (ROOT / "benchmarks").glob("*.py")
    found += (ROOT / "tools").glob("*.sh")
    found += [*(ROOT / "rules").glob("*.smk"), ROOT / "Snakefile"]
    return sorted(p for p in found if "__pycache__" not in p.parts)


def measurements(path: Path) -> list[str]:
    source = path.read_text(encoding="utf-8")
    texts = python_texts(source) if path.suffix == ".py" else shell_texts(source)
    return [
        f"{path.relative_to(ROOT)}:{line}: {text.strip()}"
        for line, text in texts
        if MEASUREMENT.search(text)
    ]


def test_no_measured_timing_in_comments_or_docstrings():
    found = [hit for path in _files() for hit in measurements(path)]
    assert not found, (
        "measured timings in the code's text (move the number to benchmarks/results/, keep "
        "the reason):\n" + "\n".join(f"  {hit}" for hit in found)
    )


def test_the_pattern():
    hits = [
        "# a container took 0.25 CPU-s",
        "# (measured: 2–17 ms later)",
        "# this takes ~0.1 s",
        '"""The import was 1.3 s."""',
        "# about 10 s",
    ]
    misses = [
        "# verifier timeout 600 s (Harbor's default)",
        "# KillWait=5: SIGKILL 5 s later",
        "# 60 s / 0.02 s per trial is 3000 trials",
        "# if the engine no longer answers",
        "# ms since the epoch",
    ]
    assert all(MEASUREMENT.search(h) for h in hits)
    assert not any(MEASUREMENT.search(m) for m in misses)
