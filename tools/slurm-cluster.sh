#!/usr/bin/env bash
# A single-node Slurm cluster on this machine, for running the pipeline with profiles/slurm.
#
#   tools/slurm-cluster.sh start    bring it up (installs Slurm when missing); a fast no-op
#                                   when the node already answers
#   tools/slurm-cluster.sh stop     stop the daemons this script starts (by their pid files)
#   tools/slurm-cluster.sh status   print the node's state; exit 0 iff it takes jobs
#
# Not part of tools/setup.sh: only tests/pipeline/test_slurm.py (which calls `start` itself)
# and someone trying the Slurm profile need it.
#
# What `start` does, idempotently:
#   1. apt-get install --no-install-recommends munge slurm-client slurmctld slurmd, only when
#      a command is missing (Debian's Slurm 22.05);
#   2. writes $EVALNOISE_SLURM_CONF (/etc/slurm/slurm.conf): one node `localhost` whose CPUs
#      and RealMemory (at 85 %) come from `slurmd -C`, proctrack/linuxproc and task/none (no
#      cgroups, no systemd needed), select/cons_tres with CR_Core_Memory (jobs are packed by
#      cores and memory, as on a real cluster), MinJobAge=300, one default partition `main`;
#   3. starts what is not running, without systemd: munged (as user munge), slurmctld,
#      `slurmd -N localhost`;
#   4. waits until `sinfo` shows the node idle (or busy with jobs), at most
#      $EVALNOISE_SLURM_WAIT_S seconds.
#
# Accounting: none (AccountingStorageType=accounting_storage/none, no slurmdbd or MariaDB).
# Without it `sacct` never answers, so the Slurm executor plugin must poll with `squeue`:
# profiles/slurm sets `slurm-status-command: squeue`, which works with and without
# accounting as long as a finished job stays visible to squeue long enough (MinJobAge, here
# 300 s, the Slurm default). docs/pipeline.md says why.
#
# KillWait=5: `scancel` sends SIGTERM, then SIGKILL 5 s later (the default, 30 s, only slows
# down the cancelled-job test). Concurrent callers serialise on a lock file.
set -euo pipefail

CONF=${EVALNOISE_SLURM_CONF:-/etc/slurm/slurm.conf}
WAIT_S=${EVALNOISE_SLURM_WAIT_S:-60}
LOG_DIR=/var/log/slurm
STATE_DIR=/var/lib/slurm
RUN_DIR=/run/evalnoise-slurm
LOCK=/run/evalnoise-slurm-cluster.lock
NODE=localhost
PARTITION=main
PACKAGES=(munge slurm-client slurmctld slurmd)

say() { echo "slurm-cluster.sh: $*" >&2; }

usage() {
    echo "usage: $0 start|stop|status" >&2
    exit 2
}

# The node's state as sinfo reports it ("idle", "mixed", "allocated", "down*", ...), or
# nothing when no controller answers. When this script's controller (on this host) is not
# running, sinfo is not asked: it would wait for its timeout first.
node_state() {
    command -v sinfo >/dev/null 2>&1 || return 0
    if grep -qs "^SlurmctldHost=$(hostname -s)(" "$CONF" && ! pgrep -x slurmctld >/dev/null; then
        return 0
    fi
    timeout 5 sinfo --noheader --nodes="$NODE" --format=%T 2>/dev/null | head -n1 || true
}

takes_jobs() {
    case "$(node_state)" in
        idle | mixed | allocated | completing) return 0 ;;
        *) return 1 ;;
    esac
}

# alive PROGRAM PIDFILE: the pid file names a live process whose command is PROGRAM. A pid
# alone is not enough: where /var/run outlives a boot (or the disk is a snapshot), an old
# pid file can name some other process; that one must neither stand in for the daemon
# nor be killed by `stop`.
alive() {
    local pid
    pid=$(cat "$2" 2>/dev/null) || return 1
    [[ "$pid" =~ ^[0-9]+$ ]] || return 1
    [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$1" ]
}

install_missing() {
    local missing=0
    for command in munged sinfo squeue sbatch scancel slurmctld slurmd; do
        command -v "$command" >/dev/null 2>&1 || missing=1
    done
    [ "$missing" -eq 0 ] && return 0
    say "installing ${PACKAGES[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q >/dev/null
    apt-get install -y -q --no-install-recommends "${PACKAGES[@]}" >/dev/null
}

write_conf() {
    local probe cpus memory
    probe=$(slurmd -C | head -n1)
    cpus=$(sed -n 's/.*\bCPUs=\([0-9]*\).*/\1/p' <<<"$probe")
    memory=$(sed -n 's/.*\bRealMemory=\([0-9]*\).*/\1/p' <<<"$probe")
    if [ -z "$cpus" ] || [ -z "$memory" ]; then
        say "cannot read CPUs and RealMemory from 'slurmd -C': $probe"
        return 1
    fi
    memory=$((memory * 85 / 100))
    mkdir -p "$(dirname "$CONF")"
    local tmp="$CONF.tmp.$$"
    cat >"$tmp" <<EOF
# Written by tools/slurm-cluster.sh: a single-node cluster on this machine.
ClusterName=evalnoise
SlurmctldHost=$(hostname -s)(127.0.0.1)
SlurmUser=root
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SchedulerType=sched/backfill
MpiDefault=none
ReturnToService=2
MinJobAge=300
KillWait=5
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
StateSaveLocation=$STATE_DIR/slurmctld
SlurmdSpoolDir=$STATE_DIR/slurmd
SlurmctldPidFile=$RUN_DIR/slurmctld.pid
SlurmdPidFile=$RUN_DIR/slurmd.pid
SlurmctldLogFile=$LOG_DIR/slurmctld.log
SlurmdLogFile=$LOG_DIR/slurmd.log
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$memory State=UNKNOWN
PartitionName=$PARTITION Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
EOF
    if [ -f "$CONF" ] && cmp -s "$tmp" "$CONF"; then
        rm -f "$tmp"
    else
        mv "$tmp" "$CONF"
        say "wrote $CONF (node $NODE: CPUs=$cpus RealMemory=$memory)"
    fi
}

# The daemons are started with the lock's descriptor closed (9>&-): one that inherited it
# would hold the lock for as long as it runs, and every later start or stop would wait.
start_daemons() {
    install -d -o munge -g munge -m 0755 /run/munge
    install -d -m 0755 "$RUN_DIR" "$LOG_DIR" "$STATE_DIR/slurmctld" "$STATE_DIR/slurmd"
    if [ ! -s /etc/munge/munge.key ]; then
        say "creating /etc/munge/munge.key"
        runuser -u munge -- mungekey --create --keyfile=/etc/munge/munge.key
    fi
    if ! alive munged /run/munge/munged.pid; then
        say "starting munged"
        runuser -u munge -- munged 9>&-
    fi
    if ! alive slurmctld "$RUN_DIR/slurmctld.pid"; then
        say "starting slurmctld (log: $LOG_DIR/slurmctld.log)"
        slurmctld -f "$CONF" 9>&-
    fi
    if ! alive slurmd "$RUN_DIR/slurmd.pid"; then
        say "starting slurmd -N $NODE (log: $LOG_DIR/slurmd.log)"
        slurmd -f "$CONF" -N "$NODE" 9>&-
    fi
}

wait_for_node() {
    local deadline=$((SECONDS + WAIT_S)) state
    until takes_jobs; do
        state=$(node_state)
        case "$state" in
            down* | drain* | fail*)
                # left down by an earlier stop; the daemons are up again
                scontrol update NodeName="$NODE" State=RESUME 2>/dev/null || true
                ;;
        esac
        if [ "$SECONDS" -ge "$deadline" ]; then
            say "node $NODE not idle within ${WAIT_S}s (state: ${state:-no controller}); logs:"
            tail -n 15 "$LOG_DIR/slurmctld.log" "$LOG_DIR/slurmd.log" >&2 || true
            return 1
        fi
        sleep 0.5
    done
}

stop_one() {  # name pidfile
    local name=$1 pidfile=$2 pid
    alive "$name" "$pidfile" || return 0
    pid=$(cat "$pidfile")
    say "stopping $name (pid $pid)"
    kill "$pid"
    for _ in $(seq 1 100); do
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 0.1
    done
    say "$name (pid $pid) did not stop on SIGTERM; sending SIGKILL"
    kill -9 "$pid" 2>/dev/null || true
}

case "${1:-}" in
    start)
        # Fast path: the node answers and takes jobs.
        if takes_jobs; then
            exit 0
        fi
        if [ "$(id -u)" -ne 0 ]; then
            say "no Slurm node answers and starting one needs root"
            exit 1
        fi
        exec 9>"$LOCK"
        flock 9
        takes_jobs && exit 0
        install_missing
        write_conf
        start_daemons
        wait_for_node
        say "up: $(sinfo --noheader --format='%P %D node(s) %c CPUs %m MB %T')"
        ;;
    stop)
        exec 9>"$LOCK"
        flock 9
        # slurmd first, so the controller does not see its node vanish mid-job
        stop_one slurmd "$RUN_DIR/slurmd.pid"
        stop_one slurmctld "$RUN_DIR/slurmctld.pid"
        stop_one munged /run/munge/munged.pid
        ;;
    status)
        state=$(node_state)
        if [ -z "$state" ]; then
            echo "no Slurm controller answers"
            exit 1
        fi
        sinfo
        takes_jobs
        ;;
    *)
        usage
        ;;
esac
