#!/usr/bin/env bash
# Make sure a Docker engine answers on /var/run/docker.sock; start one if not.
#
# Idempotent and fast when the engine is already up (one `docker info`, no other work).
#   1. installs docker.io and debootstrap with apt-get when they are missing;
#   2. if no engine answers, starts `dockerd --bridge=none --iptables=false --ip-masq=false`
#      in its own session (it outlives this script), logging to $EVALNOISE_DOCKERD_LOG;
#   3. waits until `docker info` answers (at most $EVALNOISE_DOCKERD_WAIT_S seconds).
#
# With --bridge=none containers get network_mode "none" or "host" only; that is all the
# trial runner uses (no image registry is reachable either: images are built locally).
# Concurrent callers serialise on a lock file, so two of them never start two daemons.
#
# cgroups: v1 and hybrid hosts need nothing (dockerd's default driver there is cgroupfs).
# On a unified (v2) host without systemd the daemon is told `native.cgroupdriver=cgroupfs`
# (with systemd running, dockerd's own default, the systemd driver, is kept), and the memory
# and cpu controllers are delegated from the root: inside a cgroup namespace whose root
# holds processes that fails (EBUSY), so those processes are first moved to a leaf
# `init` cgroup, as Docker's own docker:dind entrypoint does. The runner measures peak
# memory on either version (src/evalnoise/runner/docker_backend.py).
#
# Stale pid files: where /var/run is not a tmpfs it keeps docker.pid and containerd's pid
# file from a daemon that is gone (a reboot, a snapshot of the disk). dockerd 20.10 trusts any
# live process with that pid: it then skips starting containerd, dials a socket nobody
# serves and gives up after 60 s ("timeout waiting for containerd to start"). So before
# starting, a pid file whose process is not the program it names is removed.
#
#   tools/docker-engine.sh --print-dockerd-args     print the daemon's arguments, start nothing
#   tools/docker-engine.sh --clear-stale-pidfiles   remove stale pid files, start nothing
#   (EVALNOISE_CGROUP_ROOT, EVALNOISE_SYSTEMD_DIR and EVALNOISE_DOCKER_RUN_DIR point the
#   detection elsewhere, for tests)
set -euo pipefail

SOCK=/var/run/docker.sock
LOG=${EVALNOISE_DOCKERD_LOG:-/var/log/evalnoise-dockerd.log}
WAIT_S=${EVALNOISE_DOCKERD_WAIT_S:-60}
LOCK=/var/run/evalnoise-docker-engine.lock
CGROUP_ROOT=${EVALNOISE_CGROUP_ROOT:-/sys/fs/cgroup}
# sd_booted(3): systemd is the init system iff this directory exists
SYSTEMD_DIR=${EVALNOISE_SYSTEMD_DIR:-/run/systemd/system}
RUN_DIR=${EVALNOISE_DOCKER_RUN_DIR:-/var/run}
DOCKERD_PIDFILE=$RUN_DIR/docker.pid
CONTAINERD_PIDFILE=$RUN_DIR/docker/containerd/containerd.pid

# running PROGRAM PIDFILE: the pid file names a live process whose command is PROGRAM
running() {
    local pid
    pid=$(cat "$2" 2>/dev/null) || return 1
    [[ "$pid" =~ ^[0-9]+$ ]] || return 1
    [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$1" ]
}

clear_stale_pidfiles() {
    local pidfile program
    for pidfile in "$DOCKERD_PIDFILE" "$CONTAINERD_PIDFILE"; do
        program=dockerd
        [ "$pidfile" = "$CONTAINERD_PIDFILE" ] && program=containerd
        if [ -e "$pidfile" ] && ! running "$program" "$pidfile"; then
            echo "docker-engine.sh: removing stale $pidfile (pid $(cat "$pidfile" 2>/dev/null)" \
                "is not a running $program)" >&2
            rm -f "$pidfile"
        fi
    done
}

cgroup_v2() {  # a unified mount has cgroup.controllers at its root (hybrid: under unified/)
    [ -f "$CGROUP_ROOT/cgroup.controllers" ]
}

dockerd_args() {
    local args=(--bridge=none --iptables=false --ip-masq=false)
    if cgroup_v2 && [ ! -d "$SYSTEMD_DIR" ]; then
        args+=(--exec-opt native.cgroupdriver=cgroupfs)
    fi
    echo "${args[@]}"
}

# v2 without systemd (systemd delegates by itself): let child cgroups (the containers')
# use every controller the root offers.
delegate_v2_controllers() {
    cgroup_v2 && [ ! -d "$SYSTEMD_DIR" ] || return 0
    local wanted
    wanted=$(sed -e 's/^/+/' -e 's/ / +/g' "$CGROUP_ROOT/cgroup.controllers")
    [ -n "$wanted" ] || return 0
    if echo "$wanted" >"$CGROUP_ROOT/cgroup.subtree_control" 2>/dev/null; then
        return 0
    fi
    echo "docker-engine.sh: cgroup v2 root holds processes; moving them to $CGROUP_ROOT/init" >&2
    mkdir -p "$CGROUP_ROOT/init"
    # a process that exits meanwhile cannot be moved: ignore those errors
    xargs -rn1 <"$CGROUP_ROOT/cgroup.procs" >"$CGROUP_ROOT/init/cgroup.procs" 2>/dev/null || :
    echo "$wanted" >"$CGROUP_ROOT/cgroup.subtree_control" || {
        echo "docker-engine.sh: could not delegate cgroup controllers ($wanted)" >&2
        return 1
    }
}

case "${1:-}" in
--print-dockerd-args)
    dockerd_args
    exit 0
    ;;
--clear-stale-pidfiles)
    clear_stale_pidfiles
    exit 0
    ;;
esac

engine_answers() {
    [ -S "$SOCK" ] && timeout 10 docker -H "unix://$SOCK" info >/dev/null 2>&1
}

# Fast path: nothing to do.
if command -v docker >/dev/null 2>&1 && engine_answers; then
    exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
    echo "docker-engine.sh: no engine answers on $SOCK and starting one needs root" >&2
    exit 1
fi

missing=()
if ! command -v dockerd >/dev/null 2>&1 || ! command -v docker >/dev/null 2>&1; then
    missing+=(docker.io)
fi
command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
if [ "${#missing[@]}" -gt 0 ]; then
    echo "docker-engine.sh: installing ${missing[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    apt-get install -y -q docker.io debootstrap
fi

exec 9>"$LOCK"
flock 9

# Another caller may have started it while we waited for the lock.
if engine_answers; then
    exit 0
fi

clear_stale_pidfiles
if running dockerd "$DOCKERD_PIDFILE"; then
    echo "docker-engine.sh: dockerd (pid $(cat "$DOCKERD_PIDFILE")) is running; waiting for it" >&2
else
    mkdir -p "$(dirname "$LOG")"
    # without delegation dockerd still starts; containers with limits would then fail
    delegate_v2_controllers || echo "docker-engine.sh: continuing without it" >&2
    read -r -a args <<<"$(dockerd_args)"
    echo "docker-engine.sh: starting dockerd ${args[*]} (log: $LOG)" >&2
    # setsid + nohup: the daemon is in its own session, so it survives this shell and
    # any process-group kill aimed at whoever called us.
    setsid nohup dockerd "${args[@]}" >>"$LOG" 2>&1 </dev/null &
fi

deadline=$((SECONDS + WAIT_S))
until engine_answers; do
    if [ "$SECONDS" -ge "$deadline" ]; then
        echo "docker-engine.sh: engine did not answer within ${WAIT_S}s; last log lines:" >&2
        tail -n 20 "$LOG" >&2 || true
        exit 1
    fi
    sleep 0.5
done
echo "docker-engine.sh: engine is up ($(docker version --format '{{.Server.Version}}'))" >&2
