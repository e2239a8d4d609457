"""The portable model runtime: llama-cpp-python built for a declared CPU baseline.

llama.cpp's CPU backend, built with its defaults, targets the *build* machine's instruction
set (``GGML_NATIVE=ON``). A wheel built on an AVX-512 machine then dies with SIGILL on any
CPU without AVX-512, and on an AMX machine the weights are repacked into an AMX buffer whose
``ggml_backend_amx_mul_mat`` segfaults for batches larger than one token (llama.cpp issue
#20824). evalnoise therefore builds llama-cpp-python once, with native detection off and an
explicit baseline — x86-64-v3 (AVX, AVX2, FMA, F16C, BMI2), every AVX-512 and AMX option
off — into a wheelhouse keyed by the version and the flags. The host venv and the agent
runtime image both install *that wheel*; nothing compiled on the host is copied into an
image.

:func:`forbidden_instruction_count` is the check that the baseline holds: the disassembly
of a baseline library must not name an AVX-512 (``zmm``/``k`` mask) or AMX (``tmm``)
register.

The build leaves out llama.cpp's ``common`` library: the Python bindings load ``libllama``
and ``libggml*`` only, and llama-cpp-python forces ``common`` on (its ``CMakeLists.txt``)
although nothing it ships calls it. :data:`LLAMA_PROJECT_INCLUDE` is CMake code run right
after llama.cpp's own ``project()`` (CMake's ``CMAKE_PROJECT_<name>_INCLUDE``), before its
``option(LLAMA_BUILD_COMMON …)``: it turns the library off without editing the sources.

Run as ``python -m evalnoise.models.runtime cmake-args|project-include|wheel-key|wheelhouse``
to print what ``tools/install-model.sh`` needs.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

__all__ = [
    "CPU_BASELINE",
    "FORBIDDEN_REGISTERS",
    "LLAMA_CMAKE_ARGS",
    "LLAMA_PROJECT_INCLUDE",
    "LLAMA_VERSION",
    "forbidden_instruction_count",
    "ggml_libraries",
    "portable_wheel",
    "wheel_key",
    "wheelhouse",
]

LLAMA_VERSION = "0.3.36"
CPU_BASELINE = "x86-64-v3 (SSE4.2, AVX, AVX2, FMA, F16C, BMI2); no AVX-512, no AMX"
LLAMA_CMAKE_ARGS = (
    "-DLLAVA_BUILD=OFF",
    "-DGGML_NATIVE=OFF",
    "-DGGML_BACKEND_DL=OFF",
    "-DGGML_CPU_ALL_VARIANTS=OFF",
    "-DGGML_SSE42=ON",
    "-DGGML_AVX=ON",
    "-DGGML_AVX2=ON",
    "-DGGML_FMA=ON",
    "-DGGML_F16C=ON",
    "-DGGML_BMI2=ON",
    "-DGGML_AVX_VNNI=OFF",
    "-DGGML_AVX512=OFF",
    "-DGGML_AVX512_VBMI=OFF",
    "-DGGML_AVX512_VNNI=OFF",
    "-DGGML_AVX512_BF16=OFF",
    "-DGGML_AMX_TILE=OFF",
    "-DGGML_AMX_INT8=OFF",
    "-DGGML_AMX_BF16=OFF",
)
#: CMake code included after llama.cpp's ``project()`` (module docstring): ``common`` off
LLAMA_PROJECT_INCLUDE = (
    'set(LLAMA_BUILD_COMMON OFF CACHE BOOL "llama.cpp common: unused by the bindings" FORCE)\n'
)
#: registers that exist only beyond the baseline: AVX-512 (zmm0-31, mask k0-7) and AMX tiles
FORBIDDEN_REGISTERS = re.compile(r"%(?:zmm\d+|tmm\d+|k[0-7])\b")


def wheel_key() -> str:
    """``<version>-<hash of the CMake flags and the project include>``: a new flag set is a
    new build, never a reuse."""
    spec = "\n".join([*LLAMA_CMAKE_ARGS, LLAMA_PROJECT_INCLUDE])
    digest = hashlib.sha256(spec.encode()).hexdigest()[:12]
    return f"{LLAMA_VERSION}-{digest}"


def wheelhouse() -> Path:
    """Directory holding the portable wheel (``EVALNOISE_WHEELHOUSE`` overrides).

    Outside the checkout, so a fresh clone on the same machine reuses the build.
    """
    root = os.environ.get("EVALNOISE_WHEELHOUSE")
    if root:
        base = Path(root)
    else:
        cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        base = Path(cache) / "evalnoise" / "wheels"
    return base / f"llama-cpp-python-{wheel_key()}"


def portable_wheel() -> Path:
    """The portable llama-cpp-python wheel built by ``tools/install-model.sh``."""
    house = wheelhouse()
    wheels = sorted(house.glob(f"llama_cpp_python-{LLAMA_VERSION}-*.whl"))
    if not wheels:
        raise FileNotFoundError(
            f"no portable llama-cpp-python {LLAMA_VERSION} wheel in {house}; "
            "run tools/install-model.sh (it builds one for the baseline "
            f"{CPU_BASELINE})"
        )
    return wheels[-1]


def ggml_libraries(root: str | os.PathLike[str]) -> list[Path]:
    """Every ``libggml*.so`` and ``libllama*.so`` below ``root`` (an installed tree)."""
    root = Path(root)
    found = [p for p in root.rglob("*.so*") if p.name.startswith(("libggml", "libllama"))]
    return sorted(p for p in found if p.is_file() and not p.is_symlink())


def forbidden_instruction_count(
    libraries: Iterable[str | os.PathLike[str]], *, seen: dict[str, int] | None = None
) -> dict[str, int]:
    """Instructions that name an AVX-512 or AMX register, per library (``objdump -d``).

    A baseline build has 0 in every library: gcc emits such registers only when AVX-512 or
    AMX code generation was enabled for some translation unit.

    The count is a function of a file's bytes, so each distinct content (SHA-256) is
    disassembled once: a wheel stores every library three times (``libx.so``, ``libx.so.0``,
    ``libx.so.0.25.3``; zip has no symlinks) and in two folders. ``seen`` (content digest →
    count) carries that memo across calls, e.g. over the host venv, the wheel and a staged
    image context that hold the same bytes.
    """
    objdump = shutil.which("objdump")
    if objdump is None:
        raise FileNotFoundError("objdump not found (Debian package binutils)")
    seen = {} if seen is None else seen
    counts = {}
    for lib in libraries:
        digest = hashlib.sha256(Path(lib).read_bytes()).hexdigest()
        if digest not in seen:
            proc = subprocess.run(
                [objdump, "-d", "--no-show-raw-insn", str(lib)],
                capture_output=True,
                text=True,
                check=True,
            )
            seen[digest] = sum(
                1 for line in proc.stdout.splitlines() if FORBIDDEN_REGISTERS.search(line)
            )
        counts[str(lib)] = seen[digest]
    return counts


def _main(argv: list[str]) -> int:
    commands = {
        "cmake-args": lambda: " ".join(LLAMA_CMAKE_ARGS),
        "project-include": lambda: LLAMA_PROJECT_INCLUDE.rstrip("\n"),
        "wheel-key": wheel_key,
        "wheelhouse": lambda: str(wheelhouse()),
        "version": lambda: LLAMA_VERSION,
        "baseline": lambda: CPU_BASELINE,
    }
    if len(argv) != 1 or argv[0] not in commands:
        print(
            f"usage: python -m evalnoise.models.runtime {{{'|'.join(commands)}}}", file=sys.stderr
        )
        return 2
    print(commands[argv[0]]())
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
