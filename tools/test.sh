#!/usr/bin/env bash
# Run the whole test suite: set up (no main job), lint, then every test.
# pytest's "no tests collected" (exit 5) counts as a failure, never as a pass.
# CI is set (as CI sets it): a test that needs the Docker engine, the model stack, the
# browser or a cluster then fails instead of skipping.
set -euo pipefail
export CI="${CI:-true}"
cd "$(dirname "$0")/.."
tools/setup.sh --no-run
export PATH="$PWD/.venv/bin:$PATH"

echo "== lint" >&2
ruff check .
ruff format --check .
snakefmt --check Snakefile rules/
snakemake --lint >/dev/null

echo "== tests" >&2
set +e
# the slowest tests are printed so that the suite's time stays visible in CI logs
python -m pytest --durations=25 "$@"
status=$?
set -e
if [[ $status -eq 5 ]]; then
  echo "pytest collected no tests: the suite is broken" >&2
  exit 1
fi
exit $status
