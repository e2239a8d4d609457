#!/usr/bin/env bash
# Set up everything evalnoise needs on a fresh Debian bookworm machine, then run the main job.
# Idempotent: every step checks first and is a fast no-op when already done.
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
# so editing the dependencies or the extras reinstalls). Every extra: the checkout runs the
# pipeline, the Docker backend and the report; the model stack comes from install-model.sh.
# A venv is not relocatable: in a copied or moved checkout, .venv's scripts still start the old
# path's python and the editable install imports the old checkout's src (README, "Moving or
# copying a checkout"). tools/venv_owner.py tells (no pip call, ~0.1 s): 3 = made elsewhere
# (or its python does not start), recreate it; 4 = evalnoise imports from elsewhere, reinstall.
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
if [[ "$(cat "$stamp" 2>/dev/null)" != "$want" ]]; then
  step "installing evalnoise and its dependencies into .venv"
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".[all,dev]"
  echo "$want" > "$stamp"
fi
export PATH="$ROOT/.venv/bin:$PATH"
# Snakemake's Slurm and Kubernetes plugins, beside site-packages: a Snakemake start that sets
# EVALNOISE_CLUSTER_PLUGINS=0 skips importing them (0.4 s of CPU, and the Slurm plugin's
# `scontrol`, which waits 9 s where no controller answers; the test suite sets it)
tools/install-cluster-plugins.sh .venv

# --- System pieces ---------------------------------------------------------------------
step "Chromium (the report's browser test)"
tools/install-browser.sh

step "offline model: llama-cpp-python (built from source once; pip caches the wheel) + SmolLM2 GGUF"
tools/install-model.sh .venv

step "Docker engine (docker.io from Debian, dockerd --bridge=none --iptables=false)"
tools/docker-engine.sh

step "base image (debootstrap of bookworm + docker import; rebuilt only when its inputs change)"
evalnoise image build

# Harbor itself (Python 3.12 venv + the docker compose plugin) for the compatibility tests:
# evalnoise never needs it to run, so a machine without a Python 3.12 goes on without it
# (the compatibility tests then say what is missing; under CI they fail).
step "Harbor 0.25 beside evalnoise (tests/compat; tools/install-harbor.sh)"
harbor_status=0
tools/install-harbor.sh >/dev/null || harbor_status=$?
if [[ $harbor_status -ne 0 ]]; then
  echo "setup: Harbor not installed (tools/install-harbor.sh exit $harbor_status);" \
    "evalnoise runs without it" >&2
fi

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
