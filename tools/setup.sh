#!/usr/bin/env bash
# Set up what evalnoise's main job needs on a fresh Debian bookworm machine, then run it.
# Idempotent: every step checks first and is a fast no-op when already done. What only the
# test suite needs (Chromium, Harbor, the test tools, Snakemake's cluster plugins) is
# tools/test.sh's.
#
#   tools/setup.sh            set up, then run the main job on the embedded default config
#   tools/setup.sh --no-run   set up only (what tools/test.sh uses)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
RUN_MAIN=1
[[ "${1:-}" == "--no-run" ]] && RUN_MAIN=0

step() { printf '\n== %s\n' "$*" >&2; }

# --- Python environment -----------------------------------------------------------------
# Reinstall only when the dependency declaration changed (a stamp holds pyproject.toml's hash,
# so editing the dependencies or the extras reinstalls). The `all` extra: the checkout runs
# the pipeline, the Docker backend and the report; the model stack comes from
# install-model.sh.
# A venv is not relocatable: in a copied or moved checkout, .venv's scripts still start the old
# path's python and the editable install imports the old checkout's src (docs/usage.md,
# "Moving or copying a checkout"). tools/venv_owner.py tells, without calling pip: 3 = made
# elsewhere (or its python does not start), recreate it; 4 = evalnoise imports from
# elsewhere, reinstall.
PY=${PYTHON:-python3}
stamp=.venv/.evalnoise-deps
want=$(sha256sum pyproject.toml | cut -c1-16)
if [[ -x .venv/bin/python ]]; then
  owner=0
  why=$("$PY" tools/venv_owner.py .venv "$ROOT") || owner=$?
  case $owner in
    0) ;;
    3)
      echo "setup: $why; recreating .venv (python -m venv --clear) and reinstalling" >&2
      "$PY" -m venv --clear .venv
      ;;
    4)
      if [[ -f "$stamp" ]]; then echo "setup: $why; reinstalling evalnoise into .venv" >&2; fi
      rm -f "$stamp"
      ;;
    *)
      echo "setup: tools/venv_owner.py failed (exit $owner): $why" >&2
      exit 1
      ;;
  esac
elif [[ -e .venv ]]; then
  step "recreating .venv (its python does not start)"
  "$PY" -m venv --clear .venv
else
  step "creating .venv"
  "$PY" -m venv .venv
fi
# The model runtime is a compile of llama.cpp (minutes on 2 cores, once: the wheel is kept in
# the user cache). The build needs only the venv's pip, so it runs while the packages install
# and the base image is made; the wheel is installed after them (two pips must not install
# into one venv at once).
step "offline model: building llama-cpp-python in the background (once; kept in the user cache)"
model_log=$(mktemp)
tools/install-model.sh --build-only .venv >"$model_log" 2>&1 &
model_pid=$!

if [[ "$(cat "$stamp" 2>/dev/null)" != "$want" ]]; then
  step "installing evalnoise and what the main job needs into .venv"
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".[all]"
  echo "$want" > "$stamp"
fi
export PATH="$ROOT/.venv/bin:$PATH"

# --- System pieces ---------------------------------------------------------------------
step "Docker engine (docker.io from Debian, dockerd --bridge=none --iptables=false)"
tools/docker-engine.sh

step "base image (debootstrap of bookworm + docker import; rebuilt only when its inputs change)"
evalnoise image build

step "offline model: llama-cpp-python + SmolLM2 GGUF into .venv"
model_status=0
wait "$model_pid" || model_status=$?
cat "$model_log" >&2
rm -f "$model_log"
if [[ $model_status -ne 0 ]]; then
  echo "setup: building llama-cpp-python failed (tools/install-model.sh --build-only, exit" \
    "$model_status)" >&2
  exit "$model_status"
fi
tools/install-model.sh .venv

# DVC must never phone home: the repository's config says so, and so does the environment of
# every dvc this script starts.
export DVC_NO_ANALYTICS=1
if [[ -d .dvc ]]; then dvc config --quiet core.analytics false >/dev/null 2>&1 || true; fi

if [[ $RUN_MAIN == 1 ]]; then
  step "running the main job: snakemake on the embedded default config"
  # the local executor: no need to import the cluster executor plugins (docs/pipeline.md)
  EVALNOISE_CLUSTER_PLUGINS=0 snakemake --cores "$(nproc)"
  echo >&2
  echo "results are in results/; summary:" >&2
  cat results/analysis/summary.txt
fi
