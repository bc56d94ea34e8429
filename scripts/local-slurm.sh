#!/usr/bin/env bash
# A real Slurm cluster on this one host for tests and the demo: Debian's
# slurm-wlm (22.05) and munge, installed when missing; one munged on its own
# socket and key, slurmctld, and one slurmd per node (`slurmd -N nodeN`, one
# port each). The nodes describe a small GPU cluster, by default
# 4 nodes x (8 GPUs, 24 CPUs, 500 GB): more than the host has, which
# SlurmdParameters=config_overrides allows. GPUs are declared through gres;
# a GPU entry needs a device file, so character devices are created under
# $SYNERGY_SLURM_DIR/dev (nothing opens them: jobs are not confined to
# devices). Jobs really run, as root, on this host.
#
#   scripts/local-slurm.sh start    # idempotent; prints `export SLURM_CONF=...`
#   scripts/local-slurm.sh status   # exit 0 and print SLURM_CONF when up, 3 when down
#   scripts/local-slurm.sh stop     # idempotent: stops the daemons by their PIDs
#
#   eval "$(scripts/local-slurm.sh start)" && sinfo
#
# start brings up an empty cluster (the state of an earlier run is
# discarded). Configuration, state, logs and PID files are under
# $SYNERGY_SLURM_DIR (/var/lib/synergy/slurm). Shape: SYNERGY_SLURM_NODES,
# _GPUS, _CPUS, _MEM_MB (MiB, Slurm's unit; 476837 MiB = 500 GB);
# ports: SYNERGY_SLURM_PORT (slurmctld; slurmd of node i listens on
# port+1+i).
#
# It is Synergy's testbed for preemptible jobs (docs/slurm.md): every job's
# completion, and every requeue, is recorded by Slurm itself in
# $SYNERGY_SLURM_DIR/log/jobcomp.txt (JobCompType=jobcomp/filetxt); jobs may
# be requeued (JobRequeue=1, so `scontrol requeue`/`requeuehold` work on
# every batch job); and a stopped job gets SYNERGY_SLURM_GRACE seconds
# (default 30) between SIGTERM and SIGKILL (KillWait) to save its
# checkpoint.
set -euo pipefail
# shellcheck source=lib/daemon.sh
. "$(dirname "$0")/lib/daemon.sh"

dir="${SYNERGY_SLURM_DIR:-/var/lib/synergy/slurm}"
nodes="${SYNERGY_SLURM_NODES:-4}"
gpus="${SYNERGY_SLURM_GPUS:-8}"
cpus="${SYNERGY_SLURM_CPUS:-24}"
mem_mb="${SYNERGY_SLURM_MEM_MB:-476837}"
port="${SYNERGY_SLURM_PORT:-16817}"
grace="${SYNERGY_SLURM_GRACE:-30}"
conf="$dir/etc/slurm.conf"
sock="$dir/munge/munge.socket.2"

log() { echo "local-slurm: $*" >&2; }
die() { echo "local-slurm: $*" >&2; exit 1; }

# detached CMD...: run CMD in its own session holding none of the caller's
# file descriptors but stdin/out/err (a lock the caller holds ends with the
# script, not with the daemons).
detached() { # run in the background (&): the exec replaces that subshell
  for fd in /proc/$BASHPID/fd/*; do
    fd="${fd##*/}"
    if [ "$fd" -gt 2 ] 2>/dev/null; then eval "exec $fd>&-" 2>/dev/null || true; fi
  done
  exec setsid "$@"
}

node_names() { local i; for i in $(seq 1 "$nodes"); do echo "node$i"; done; }

# pid_of NAME: the PID in NAME.pid when that process is alive and is ours
# (its command line names our state directory), else nothing.
pid_of() {
  local f="$dir/run/$1.pid" pid
  [ -f "$f" ] || return 0
  pid="$(cat "$f" 2>/dev/null || true)"
  if [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "$dir"; then
    echo "$pid"
  fi
}

# stop_one NAME: TERM, up to 10 s, then KILL (scripts/lib/daemon.sh).
stop_one() { stop_daemon "$1" "$(pid_of "$1")" "$dir/run/$1.pid"; }

need_packages() {
  command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v munged >/dev/null && command -v squeue >/dev/null && return 0
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    log "installing Debian's slurm-wlm and munge"
    apt-get update -qq >&2
    # No init system here: the packages' own services do not start.
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends -o DPkg::Lock::Timeout=600 \
      slurm-wlm slurm-client munge >&2
  fi
  command -v slurmctld >/dev/null && command -v munged >/dev/null || die "slurmctld or munged not found: apt-get install slurm-wlm munge"
}

ctl_ready() { SLURM_CONF="$conf" scontrol ping 2>/dev/null | grep -q 'is UP'; }

# nodes_idle: every node is up (idle, or allocated/mixed by jobs).
nodes_ready() {
  local n
  n="$(SLURM_CONF="$conf" sinfo -h -N -o '%N %t' 2>/dev/null | grep -cE ' (idle|mix|alloc)$' || true)"
  [ "$n" = "$nodes" ]
}

running() {
  [ -n "$(pid_of munged)" ] && [ -n "$(pid_of slurmctld)" ] || return 1
  local n
  for n in $(node_names); do [ -n "$(pid_of "slurmd-$n")" ] || return 1; done
  ctl_ready
}

print_env() { echo "export SLURM_CONF=$conf"; }

write_config() {
  local host i gpu_last=$((gpus - 1))
  case "$grace" in '' | *[!0-9]*) die "SYNERGY_SLURM_GRACE=$grace: want whole seconds" ;; esac
  host="$(hostname -s)"
  mkdir -p "$dir/etc" "$dir/state" "$dir/log" "$dir/run" "$dir/dev"
  for i in $(seq 0 "$gpu_last"); do
    # Character devices with NVIDIA's major number; nothing opens them.
    [ -c "$dir/dev/nvidia$i" ] || mknod "$dir/dev/nvidia$i" c 195 "$i"
  done
  {
    echo "# Written by scripts/local-slurm.sh; rewritten on every start."
    echo "ClusterName=synergy-local"
    echo "SlurmctldHost=$host(127.0.0.1)"
    echo "SlurmctldPort=$port"
    echo "SlurmUser=root"
    echo "SlurmdUser=root"
    echo "AuthType=auth/munge"
    echo "CredType=cred/munge"
    echo "AuthInfo=socket=$sock"
    echo "StateSaveLocation=$dir/state"
    echo "SlurmdSpoolDir=$dir/spool/%n"
    echo "SlurmctldPidFile=$dir/run/slurmctld.daemon.pid"
    echo "SlurmdPidFile=$dir/run/slurmd-%n.daemon.pid"
    echo "SlurmctldLogFile=$dir/log/slurmctld.log"
    echo "SlurmdLogFile=$dir/log/slurmd-%n.log"
    echo "SlurmctldDebug=info"
    echo "SlurmdDebug=info"
    echo "MpiDefault=none"
    echo "ProctrackType=proctrack/linuxproc"
    echo "TaskPlugin=task/none"
    echo "JobAcctGatherType=jobacct_gather/none"
    echo "AccountingStorageType=accounting_storage/none"
    # Slurm's own record of every job's end and requeue (start, end, state,
    # nodes, GPUs): what a replay measures, not our bookkeeping.
    echo "JobCompType=jobcomp/filetxt"
    echo "JobCompLoc=$dir/log/jobcomp.txt"
    echo "JobRequeue=1"
    echo "SchedulerType=sched/backfill"
    echo "SelectType=select/cons_tres"
    echo "SelectTypeParameters=CR_Core_Memory"
    # A job that asks for no memory gets its CPUs' share of the node, not
    # the whole node (Slurm's default without this).
    echo "DefMemPerCPU=$((mem_mb / cpus))"
    echo "GresTypes=gpu"
    echo "SlurmdParameters=config_overrides"
    echo "ReturnToService=2"
    echo "SlurmdTimeout=60"
    echo "MinJobAge=300"
    # The grace a stopped job (scancel, requeue, time limit) gets between
    # SIGTERM and SIGKILL to save its checkpoint.
    echo "KillWait=$grace"
    echo "InactiveLimit=0"
    for i in $(seq 1 "$nodes"); do
      echo "NodeName=node$i NodeHostname=$host NodeAddr=127.0.0.1 Port=$((port + i)) CPUs=$cpus Boards=1 SocketsPerBoard=1 CoresPerSocket=$cpus ThreadsPerCore=1 RealMemory=$mem_mb Gres=gpu:$gpus State=UNKNOWN"
    done
    echo "PartitionName=gpu Nodes=ALL Default=YES MaxTime=INFINITE State=UP"
  } >"$conf.tmp"
  mv -f "$conf.tmp" "$conf"
  echo "Name=gpu File=$dir/dev/nvidia[0-$gpu_last]" >"$dir/etc/gres.conf"
  # Read by slurmd when a cgroup plugin is chosen; none is, but 22.05
  # reads this file when it is there and complains when it is not.
  echo "CgroupPlugin=autodetect" >"$dir/etc/cgroup.conf"
}

start_munge() {
  mkdir -p "$dir/munge"
  chmod 700 "$dir/munge"
  if [ ! -s "$dir/munge/munge.key" ]; then
    dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
  fi
  chmod 400 "$dir/munge/munge.key"
  detached munged --foreground --force --socket="$sock" --key-file="$dir/munge/munge.key" \
    --pid-file="$dir/munge/munged.pid" --seed-file="$dir/munge/munged.seed" --log-file="$dir/log/munged.log" \
    </dev/null >>"$dir/log/munged.out" 2>&1 &
  echo $! >"$dir/run/munged.pid"
  for _ in $(seq 50); do [ -S "$sock" ] && munge -n -S "$sock" >/dev/null 2>&1 && return 0; sleep 0.1; done
  tail -20 "$dir/log/munged.log" >&2 || true
  die "munged did not come up in 5 s (log: $dir/log/munged.log)"
}

start() {
  if running; then
    log "already running (slurmctld on 127.0.0.1:$port, $nodes nodes)"
    print_env
    return 0
  fi
  need_packages
  stop_all
  rm -rf "$dir/state" "$dir/spool" "$dir/log/jobcomp.txt"
  write_config
  start_munge
  log "starting slurmctld $(slurmctld -V | awk '{print $2}') on 127.0.0.1:$port"
  SLURM_CONF="$conf" detached slurmctld -D -i -f "$conf" </dev/null >>"$dir/log/slurmctld.out" 2>&1 &
  echo $! >"$dir/run/slurmctld.pid"
  for _ in $(seq 150); do
    ctl_ready && break
    [ -n "$(pid_of slurmctld)" ] || { tail -30 "$dir/log/slurmctld.log" "$dir/log/slurmctld.out" >&2 || true; die "slurmctld exited (log: $dir/log/slurmctld.log)"; }
    sleep 0.2
  done
  ctl_ready || die "slurmctld did not answer in 30 s (log: $dir/log/slurmctld.log)"
  local n
  for n in $(node_names); do
    mkdir -p "$dir/spool/$n"
    SLURM_CONF="$conf" detached slurmd -D -N "$n" -f "$conf" </dev/null >>"$dir/log/slurmd-$n.out" 2>&1 &
    echo $! >"$dir/run/slurmd-$n.pid"
  done
  for _ in $(seq 150); do nodes_ready && break; sleep 0.2; done
  if ! nodes_ready; then
    SLURM_CONF="$conf" sinfo -N -l >&2 || true
    die "not all $nodes nodes came up in 30 s (logs: $dir/log/slurmd-*.log)"
  fi
  log "ready: $nodes nodes x ($gpus GPUs, $cpus CPUs, $mem_mb MiB); logs in $dir/log"
  print_env
}

stop_all() {
  local n
  # Jobs still running are the daemons' children (slurmstepd): cancel them
  # first so that nothing outlives the cluster.
  if [ -n "$(pid_of slurmctld)" ] && ctl_ready; then
    SLURM_CONF="$conf" scancel --full --quiet --user=root 2>/dev/null || true
  fi
  for n in $(node_names); do stop_one "slurmd-$n"; done
  stop_one slurmctld
  stop_one munged
}

stop() {
  stop_all
  rm -rf "$dir/state" "$dir/spool"
}

status() {
  if running; then
    log "running: slurmctld pid $(pid_of slurmctld) on 127.0.0.1:$port, $nodes slurmd, munged pid $(pid_of munged)"
    print_env
    return 0
  fi
  log "not running (slurmctld pid: $(pid_of slurmctld); munged pid: $(pid_of munged))"
  return 3
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
