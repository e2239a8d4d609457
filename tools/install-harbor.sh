#!/usr/bin/env bash
# Install Harbor (the Terminal-Bench 2.0 harness, PyPI `harbor`) beside evalnoise, for the
# compatibility checks (tests/compat/) and for producing Harbor job outputs by hand.
# tools/setup.sh calls it and goes on without Harbor when it fails: evalnoise never needs
# Harbor to run.
#
#   tools/install-harbor.sh            install (or check) and print the wrapper's path
#   tools/install-harbor.sh --prefix   print the install folder only, install nothing
#
# What it puts under $EVALNOISE_CACHE_DIR/harbor (default ~/.cache/evalnoise/harbor; with
# XDG_CACHE_HOME, $XDG_CACHE_HOME/evalnoise/harbor — the folder evalnoise.user_cache names):
#   venv/                       Python 3.12 virtualenv with harbor==$HARBOR_VERSION
#   docker/cli-plugins/docker-compose
#                               the `docker compose` v2 plugin (Harbor drives Docker through
#                               it; Debian bookworm's docker.io 20.10 has none), taken from
#                               Debian trixie's `docker-compose` package; this folder is the
#                               DOCKER_CONFIG the wrappers set, so the system's Docker client
#                               configuration is left alone
#   bin/harbor, bin/python      wrappers: Harbor's CLI and Harbor's Python, with telemetry off
#                               (HARBOR_TELEMETRY=0), litellm's cost map read from the package
#                               (LITELLM_LOCAL_MODEL_COST_MAP=True: no fetch at import) and
#                               DOCKER_CONFIG pointing at docker/ above
#   apt/                        the private apt sources list, lists and cache used to fetch
#                               the plugin (the system's apt configuration and state are not
#                               touched: no sources entry, no `apt-get update` of its lists)
#   .installed                  stamp: Harbor version, compose package version, Python
#
# Idempotent and fast: with the stamp current and the files present it exits at once. Needs a
# Python 3.12: $EVALNOISE_HARBOR_PYTHON, else pyenv's newest 3.12 ($PYENV_ROOT, default
# /root/.pyenv... or ~/.pyenv), else python3.12 on PATH; without one it says so and exits 3.
# Traffic goes only to the package registries: PyPI (pip, through the configured index) and
# Debian's archive (apt-get). Concurrent callers serialise on a lock file.
set -euo pipefail

HARBOR_VERSION=${EVALNOISE_HARBOR_VERSION:-0.25.0}
# Debian trixie's docker-compose ships the v2 CLI plugin (/usr/libexec/docker/cli-plugins)
COMPOSE_SUITE=trixie
DEBIAN_MIRROR=${EVALNOISE_DEBIAN_MIRROR:-http://deb.debian.org/debian}
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg

if [ -n "${EVALNOISE_CACHE_DIR:-}" ]; then
    CACHE=$EVALNOISE_CACHE_DIR
else
    CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/evalnoise
fi
H=$CACHE/harbor

if [ "${1:-}" = "--prefix" ]; then
    echo "$H"
    exit 0
elif [ $# -gt 0 ]; then
    echo "usage: tools/install-harbor.sh [--prefix]" >&2
    exit 2
fi

find_python312() {
    if [ -n "${EVALNOISE_HARBOR_PYTHON:-}" ]; then
        echo "$EVALNOISE_HARBOR_PYTHON"
        return
    fi
    local root candidate
    for root in "${PYENV_ROOT:-}" /root/.pyenv "$HOME/.pyenv"; do
        [ -n "$root" ] && [ -d "$root/versions" ] || continue
        # newest 3.12.x first (version order, not text order: 3.12.10 after 3.12.9)
        candidate=$(ls -d "$root"/versions/3.12.* 2>/dev/null | sort -V | tail -n 1 || true)
        if [ -n "$candidate" ] && [ -x "$candidate/bin/python3.12" ]; then
            echo "$candidate/bin/python3.12"
            return
        fi
    done
    command -v python3.12 || true
}

PY312=$(find_python312)
if [ -z "$PY312" ] || ! "$PY312" -c 'import sys, venv; sys.exit(sys.version_info[:2] != (3, 12))' 2>/dev/null; then
    echo "install-harbor.sh: no Python 3.12 found (looked at \$EVALNOISE_HARBOR_PYTHON, pyenv's versions/3.12.*, python3.12 on PATH); Harbor $HARBOR_VERSION needs Python >= 3.12" >&2
    exit 3
fi

KEY="harbor==$HARBOR_VERSION compose=$COMPOSE_SUITE python=$("$PY312" -c 'import platform; print(platform.python_version())')"
STAMP=$H/.installed
PLUGIN=$H/docker/cli-plugins/docker-compose

current() {
    [ "$(head -n 1 "$STAMP" 2>/dev/null)" = "$KEY" ] && [ -x "$H/venv/bin/harbor" ] \
        && [ -x "$PLUGIN" ] && [ -x "$H/bin/harbor" ] && [ -x "$H/bin/python" ]
}

if current; then
    echo "$H/bin/harbor"
    exit 0
fi

mkdir -p "$H"
exec 9>"$H/.lock"
flock 9
if current; then  # another caller finished while we waited
    echo "$H/bin/harbor"
    exit 0
fi
rm -f "$STAMP"
start=$(date +%s)

# --- Harbor in its own venv ------------------------------------------------------------
if ! "$H/venv/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('harbor') != '$HARBOR_VERSION')" 2>/dev/null; then
    echo "install-harbor.sh: installing harbor $HARBOR_VERSION into $H/venv ($PY312)" >&2
    rm -rf "$H/venv"
    "$PY312" -m venv "$H/venv"
    # --no-compile: byte-compiling every package costs more CPU than the rest of the install
    # (benchmarks/results/comment-measurements.md); Python compiles what Harbor imports on use
    "$H/venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-compile \
        "harbor==$HARBOR_VERSION" 2> >(grep -v "^WARNING: Location 'file:" >&2)
fi

# --- the docker compose v2 plugin, from Debian trixie, with a private apt ---------------
if [ ! -x "$PLUGIN" ]; then
    echo "install-harbor.sh: fetching docker-compose from Debian $COMPOSE_SUITE (private apt state in $H/apt)" >&2
    A=$H/apt
    rm -rf "$A"
    mkdir -p "$A/etc/preferences.d" "$A/etc/sources.list.d" "$A/state/lists/partial" \
        "$A/cache/archives/partial" "$A/download"
    echo "deb [signed-by=$KEYRING] $DEBIAN_MIRROR $COMPOSE_SUITE main" >"$A/etc/sources.list"
    : >"$A/state/status"  # an empty dpkg status: this apt knows of no installed package
    APT_OPTS=(
        -o "Dir::Etc::sourcelist=$A/etc/sources.list"
        -o "Dir::Etc::sourceparts=$A/etc/sources.list.d"
        -o "Dir::Etc::preferences=$A/etc/preferences"
        -o "Dir::Etc::preferencesparts=$A/etc/preferences.d"
        -o "Dir::State=$A/state"
        -o "Dir::State::status=$A/state/status"
        -o "Dir::Cache=$A/cache"
        -o "Acquire::Languages=none"
        -o "APT::Get::List-Cleanup=false"
        -o "Debug::NoLocking=true"
        -o "APT::Sandbox::User=root"
    )
    apt-get -qq "${APT_OPTS[@]}" update
    (cd "$A/download" && apt-get -qq "${APT_OPTS[@]}" download docker-compose)
    deb=$(ls "$A"/download/docker-compose_*.deb)
    dpkg-deb -f "$deb" Version >"$A/compose-version"
    mkdir -p "$A/extract"
    dpkg -x "$deb" "$A/extract"
    found=$(find "$A/extract" -path '*/cli-plugins/docker-compose' -type f | head -n 1)
    if [ -z "$found" ]; then
        echo "install-harbor.sh: $deb holds no cli-plugins/docker-compose" >&2
        exit 1
    fi
    mkdir -p "$H/docker/cli-plugins"
    install -m 0755 "$found" "$PLUGIN.tmp"
    mv "$PLUGIN.tmp" "$PLUGIN"
    # keep the .deb's version; drop the lists, the .deb and the unpacked tree
    rm -rf "$A/state/lists" "$A/cache" "$A/extract" "$A/download"
fi

# --- wrappers -------------------------------------------------------------------------
mkdir -p "$H/bin"
for name in harbor python; do
    cat >"$H/bin/$name.tmp" <<EOF
#!/bin/sh
# Written by evalnoise's tools/install-harbor.sh: Harbor $HARBOR_VERSION, offline-friendly.
export HARBOR_TELEMETRY=0
export LITELLM_LOCAL_MODEL_COST_MAP=True
export DOCKER_CONFIG="$H/docker"
exec "$H/venv/bin/$name" "\$@"
EOF
    chmod 0755 "$H/bin/$name.tmp"
    mv "$H/bin/$name.tmp" "$H/bin/$name"
done

# check before stamping: the plugin runs, Harbor imports
DOCKER_CONFIG=$H/docker docker compose version >&2 || {
    echo "install-harbor.sh: 'docker compose version' fails with DOCKER_CONFIG=$H/docker" >&2
    exit 1
}
"$H/bin/harbor" --version >&2
{
    echo "$KEY"
    echo "compose package: $(cat "$H/apt/compose-version" 2>/dev/null || echo unknown)"
    echo "installed in $(($(date +%s) - start)) s on $(date -u +%Y-%m-%dT%H:%M:%SZ)"
} >"$STAMP"
echo "$H/bin/harbor"
