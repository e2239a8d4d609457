#!/usr/bin/env bash
# Run the whole test suite: set up (no main job), lint, then every test.
# pytest's "no tests collected" (exit 5) counts as a failure, never as a pass.
# CI is set (as CI sets it): a test that needs the Docker engine, the model stack, the
# browser or a cluster then fails instead of skipping.
set -euo pipefail
export CI="${CI:-true}"
# DVC never phones home from a test's fresh repository (tests/conftest.py sets it as well)
export DVC_NO_ANALYTICS=1
cd "$(dirname "$0")/.."
tools/setup.sh --no-run
export PATH="$PWD/.venv/bin:$PATH"

# What only the tests need, beside what the main job needs (tools/setup.sh). Each step is a
# fast no-op when done: the test tools (the dev extra, and the inspect extra the Inspect
# adapter's tests run; a stamp holds pyproject.toml's hash),
# Snakemake's cluster plugins (the Slurm tests), Chromium (the report's browser test) and
# Harbor 0.25 (tests/compat; under CI those tests fail when it is missing).
echo "== test tools" >&2
dev_stamp=.venv/.evalnoise-dev-deps
want=$(sha256sum pyproject.toml | cut -c1-16)
if [[ "$(cat "$dev_stamp" 2>/dev/null)" != "$want" ]]; then
  python -m pip install --quiet --disable-pip-version-check -e ".[all,dev,inspect]"
  echo "$want" > "$dev_stamp"
fi
tools/install-cluster-plugins.sh .venv
tools/install-browser.sh
harbor_status=0
tools/install-harbor.sh >/dev/null || harbor_status=$?
if [[ $harbor_status -ne 0 ]]; then
  echo "test.sh: Harbor not installed (tools/install-harbor.sh exit $harbor_status)" >&2
fi

echo "== lint" >&2
ruff check .
ruff format --check .
snakefmt --check Snakefile rules/
snakemake --lint >/dev/null

echo "== tests" >&2
# The checkout's package byte-compiled once for every process of the suite that imports it
# from here (the workers, the CLI and runner subprocesses): where PYTHONDONTWRITEBYTECODE is
# set, no process writes the .pyc it compiles, and each compiled the same modules again. The
# .pyc are checked against the source's hash, so a module edited later is read anew.
python -m compileall -q -j 0 --invalidation-mode checked-hash src
set +e
# The slowest tests are printed so that the suite's time stays visible in CI logs. Test files
# run in parallel workers (pytest-xdist), each file whole on one worker, so a module's shared
# fixture (a finished pipeline workspace, a Slurm run) is built once, and the finished tiny
# evaluation that several files read once per run for all workers (tiny_reference,
# tests/pipeline/conftest.py). The suite keeps both cores busy (the line after it prints the
# idle time): most of its CPU is Snakemake's, DVC's and Docker's own start-up in the pipeline
# tests, so it is faster only when it spends less CPU. Files start longest first
# (tests/file_order.py), not in pytest-xdist's default order (most tests first, which handed
# the one-test pipeline files out last). EVALNOISE_TEST_WORKERS=0 runs it in one process.
workers="${EVALNOISE_TEST_WORKERS:-4}"
# the machine's busy and idle CPU seconds (/proc/stat: user nice system idle iowait irq
# softirq steal, in clock ticks), printed with the wall time: idle near 0 says the suite was
# bound by the cores (then only less CPU makes it faster), not by waiting
cpu_ticks() {
  local _ user nice system idle iowait irq softirq steal
  read -r _ user nice system idle iowait irq softirq steal _ < /proc/stat
  echo "$((user + nice + system + irq + softirq + steal)) $((idle + iowait))"
}
read -r busy0 idle0 < <(cpu_ticks)
started=$SECONDS
if [[ "$workers" == 0 ]]; then
  python -m pytest --durations=25 "$@"
else
  python -m pytest -n "$workers" --dist loadfile --no-loadscope-reorder --durations=25 "$@"
fi
status=$?
set -e
# the suite's wall time, with the machine's load beside it (a shared machine's time varies)
read -r busy1 idle1 < <(cpu_ticks)
hz=$(getconf CLK_TCK)
echo "== tests took $((SECONDS - started)) s on $(nproc) cores (machine CPU" \
  "$(((busy1 - busy0) / hz)) s busy, $(((idle1 - idle0) / hz)) s idle); load average now" \
  "$(cut -d' ' -f1-3 /proc/loadavg)" >&2
if [[ $status -eq 5 ]]; then
  echo "pytest collected no tests: the suite is broken" >&2
  exit 1
fi
exit $status
