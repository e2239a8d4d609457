"""What machine a run ran on: host, CPU model, cgroup version, and the model runtime's build.

Recorded in the provenance manifest and shown in the report, so a number can be traced to
the hardware and to the instruction set of the native code that produced it (the same seeds
give the same tables on different CPUs only while the runtime runs at all; see
:mod:`evalnoise.models.runtime`).
"""

from __future__ import annotations

import functools
import importlib.util
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

__all__ = ["cgroup_version", "cpu_model", "llama_runtime_info", "machine_info"]

_SYSTEM_INFO = (
    "import llama_cpp, sys; info = llama_cpp.llama_print_system_info(); "
    "sys.stdout.write(info.decode() if isinstance(info, bytes) else str(info))"
)


def cpu_model(cpuinfo: str | os.PathLike[str] = "/proc/cpuinfo") -> str:
    """The first ``model name`` in ``/proc/cpuinfo`` (``platform.processor()`` elsewhere)."""
    try:
        for line in Path(cpuinfo).read_text(encoding="utf-8", errors="replace").splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def cgroup_version(root: str | os.PathLike[str] = "/sys/fs/cgroup") -> str:
    """``"v2"`` (unified), ``"hybrid"`` (v1 controllers plus a v2 mount) or ``"v1"``."""
    root = Path(root)
    if (root / "cgroup.controllers").is_file():
        return "v2"
    if (root / "memory").is_dir():
        return "hybrid" if (root / "unified").is_dir() else "v1"
    return "unknown"


@functools.cache
def llama_runtime_info(python: str | None = None) -> dict[str, Any] | None:
    """The installed llama-cpp-python: version, declared baseline, wheel key, and its CPU
    feature line (``llama_print_system_info``, read in a subprocess so this process does not
    load the native library). None when llama-cpp-python is not installed."""
    from evalnoise.models.runtime import CPU_BASELINE, wheel_key

    python = python or sys.executable
    if python == sys.executable and importlib.util.find_spec("llama_cpp") is None:
        return None
    try:
        proc = subprocess.run(
            [python, "-c", _SYSTEM_INFO], capture_output=True, text=True, timeout=60
        )
        version = subprocess.run(
            [python, "-c", "import importlib.metadata as m; print(m.version('llama_cpp_python'))"],
            capture_output=True,
            text=True,
            timeout=60,
        ).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        return None
    return {
        "version": version or "unknown",
        "cpu_baseline": CPU_BASELINE,
        "wheel_key": wheel_key(),
        "system_info": proc.stdout.strip(),
    }


def machine_info() -> dict[str, Any]:
    """``host``, ``cpu_model``, ``cgroup_version`` and ``llama_cpp`` (or None)."""
    return {
        "host": platform.node(),
        "cpu_model": cpu_model(),
        "cgroup_version": cgroup_version(),
        "llama_cpp": llama_runtime_info(),
    }
