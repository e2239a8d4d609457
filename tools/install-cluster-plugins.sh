#!/usr/bin/env bash
# Snakemake's cluster executor plugins (profiles/slurm, profiles/kubernetes), installed beside
# the venv's site-packages rather than in it, so that a Snakemake start can leave them out.
#
#   tools/install-cluster-plugins.sh [VENV]      (default .venv; tools/setup.sh calls it)
#
# Why: Snakemake imports every executor plugin it can find when it starts. The Slurm plugin
# imports pandas and the Kubernetes plugin the Kubernetes client, about half of what
# `import snakemake.cli` costs (benchmarks/results/comment-measurements.md); the Slurm plugin
# also runs `scontrol`, which waits where the Slurm client is installed and no controller
# answers. The test suite starts Snakemake many times, almost always for the local executor.
#
# What it does:
#   VENV/cluster-plugins/          the plugins of tools/cluster-plugins.txt (pinned,
#                                  `pip install --no-deps --target`); their dependencies
#                                  (kubernetes, throttler, pandas, ...) are in the venv
#                                  (pyproject.toml's dev extra)
#   site-packages/evalnoise_cluster_plugins.pth
#                                  puts that folder on sys.path of every Python of the venv,
#                                  unless EVALNOISE_CLUSTER_PLUGINS=0: so
#                                  `snakemake --profile profiles/slurm` finds the plugin as
#                                  before, and a run that sets the variable skips the imports
#                                  (the test suite sets it for every workspace that uses no
#                                  cluster: tests/pipeline/pipeline_helpers.py::tool_env)
# Plugins found in site-packages, where no variable can hide them, are uninstalled from there
# once this folder holds them.
# Idempotent: a stamp holds the requirement file's hash; with it current nothing is installed.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${1:-.venv}
python=$venv/bin/python
requirements=tools/cluster-plugins.txt
target=$(cd "$venv" && pwd)/cluster-plugins
stamp=$target/.evalnoise-stamp
want=$(sha256sum "$requirements" | cut -c1-16)

modules=$(sed -n 's/^\([a-z0-9-]*\)==.*/\1/p' "$requirements" | tr '-' '_')
site=$("$python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
# one line: a .pth line that starts with `import` is run, any other is a path
line="import os, sys; os.environ.get('EVALNOISE_CLUSTER_PLUGINS', '1') == '0' or '$target' in sys.path or sys.path.append('$target')"
if [[ "$(cat "$site/evalnoise_cluster_plugins.pth" 2>/dev/null)" != "$line" ]]; then
  printf '%s\n' "$line" > "$site/evalnoise_cluster_plugins.pth"
fi

if [[ "$(cat "$stamp" 2>/dev/null)" != "$want" ]]; then
  rm -rf "$target"
  "$python" -m pip install --quiet --disable-pip-version-check --no-deps --target "$target" \
    -r "$requirements"
  # their dependencies must be in the venv (pip check sees the folder through the .pth). Not
  # an import: the Slurm plugin runs `scontrol` when imported, which waits where the Slurm
  # client is installed and no controller answers.
  broken=$("$python" -m pip check 2>/dev/null | grep -iE "^snakemake[-_]executor[-_]plugin" || true)
  if [[ -n "$broken" ]]; then
    echo "install-cluster-plugins: a plugin's dependencies are missing from $venv:" >&2
    echo "$broken" >&2
    exit 1
  fi
  echo "$want" > "$stamp"
fi

# the plugins installed into site-packages by an older setup (visible with the folder hidden)
stale=$(EVALNOISE_CLUSTER_PLUGINS=0 "$python" -c "import importlib.util, sys
print(' '.join(m.replace('_', '-') for m in sys.argv[1:] if importlib.util.find_spec(m)))" $modules)
if [[ -n "$stale" ]]; then
  echo "install-cluster-plugins: moving $stale out of site-packages into $target" >&2
  # shellcheck disable=SC2086
  EVALNOISE_CLUSTER_PLUGINS=0 "$python" -m pip uninstall --quiet --yes $stale
fi
