#!/usr/bin/env bash
# A one-node Slurm on this machine, for the srun tests and examples.
#   scripts/slurm_local.sh start     # munged, slurmctld, slurmd (idempotent)
#   scripts/slurm_local.sh stop
#   scripts/slurm_local.sh env       # prints `export SLURM_CONF=...` for srun
#   scripts/slurm_local.sh run CMD   # starts Slurm if needed, then runs CMD with SLURM_CONF set
# Exit code 77 means Slurm could not be started here (the tests skip on it).
# Needs root (it starts the daemons) and Debian's slurm-wlm and munge (scripts/install_deps.sh).
set -uo pipefail

STATE="${CUNUMPY_SLURM_STATE:-/tmp/cunumpy-slurm}"
CONF="$STATE/slurm.conf"
NODE="$(hostname -s)"

fail() {
  echo "slurm_local: $*" >&2
  exit 77
}

write_conf() {
  mkdir -p "$STATE/ctld" "$STATE/d"
  local cpus
  cpus="$(nproc)"
  cat > "$CONF" <<CONF
ClusterName=cunumpy
SlurmctldHost=$NODE
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/builtin
MpiDefault=none
ReturnToService=2
StateSaveLocation=$STATE/ctld
SlurmdSpoolDir=$STATE/d
SlurmctldPidFile=$STATE/slurmctld.pid
SlurmdPidFile=$STATE/slurmd.pid
SlurmctldLogFile=$STATE/slurmctld.log
SlurmdLogFile=$STATE/slurmd.log
SlurmctldPort=6817
SlurmdPort=6818
NodeName=$NODE CPUs=$cpus State=UNKNOWN
PartitionName=local Nodes=$NODE Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
CONF
}

running() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

start() {
  [ "$(id -u)" -eq 0 ] || fail "must run as root to start munged, slurmctld and slurmd"
  command -v slurmctld >/dev/null && command -v munged >/dev/null || fail "slurm-wlm and munge are not installed (run scripts/install_deps.sh)"
  export SLURM_CONF="$CONF"
  if running "$STATE/slurmctld.pid" && running "$STATE/slurmd.pid" && sinfo -h >/dev/null 2>&1; then
    return 0
  fi
  write_conf
  # munge: a key, its run directory, the daemon.
  if [ ! -s /etc/munge/munge.key ]; then
    mkdir -p /etc/munge
    dd if=/dev/urandom bs=1 count=1024 of=/etc/munge/munge.key 2>/dev/null
    chown munge:munge /etc/munge/munge.key 2>/dev/null; chmod 400 /etc/munge/munge.key
  fi
  mkdir -p /run/munge /var/log/munge /var/lib/munge
  chown munge:munge /run/munge /var/log/munge /var/lib/munge 2>/dev/null
  if ! munge -n </dev/null >/dev/null 2>&1; then
    runuser -u munge -- /usr/sbin/munged >/dev/null 2>&1 || /usr/sbin/munged --force >/dev/null 2>&1 || fail "munged did not start"
    sleep 1
  fi
  munge -n </dev/null | unmunge >/dev/null 2>&1 || fail "munge does not work (munge -n | unmunge failed)"
  pkill -x slurmctld 2>/dev/null; pkill -x slurmd 2>/dev/null; sleep 1
  slurmctld -c -f "$CONF" || fail "slurmctld did not start; see $STATE/slurmctld.log"
  slurmd -f "$CONF" || fail "slurmd did not start; see $STATE/slurmd.log"
  for _ in $(seq 1 30); do
    if sinfo -h -o '%T' 2>/dev/null | grep -qE '^(idle|mixed|allocated)'; then
      return 0
    fi
    sleep 1
  done
  fail "the node did not become idle; see $STATE/slurmctld.log and $STATE/slurmd.log"
}

stop() {
  pkill -x slurmd 2>/dev/null
  pkill -x slurmctld 2>/dev/null
  return 0
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  env) echo "export SLURM_CONF=$CONF" ;;
  run)
    shift
    start
    export SLURM_CONF="$CONF"
    exec "$@"
    ;;
  *) echo "usage: $0 start|stop|env|run CMD..." >&2; exit 2 ;;
esac
