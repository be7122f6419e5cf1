#!/usr/bin/env bash
# A single-node Slurm on this machine, for the cluster executor's tests.
#   scripts/slurm-local.sh start DIR   # slurmctld + slurmd on localhost, state in DIR
#   scripts/slurm-local.sh stop DIR    # stops them (and munged, if started here)
# Runs as root (SlurmUser=root), on private ports (16817, 16818), with its state,
# spool, logs and slurm.conf in DIR; one partition `quarry` with this machine's
# cores. The commands find the cluster through SLURM_CONF=DIR/slurm.conf
# (`start` prints the line to export). Installs slurm-wlm and munge through
# scripts/setup-system.sh when they are missing. A munge key is made in
# /etc/munge if there is none.
set -euo pipefail
cmd=${1:-}
dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || { echo "usage: $0 start|stop DIR" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)

stop() {
  for pid_file in "$dir/slurmd.pid" "$dir/slurmctld.pid"; do
    if [ -s "$pid_file" ]; then
      pid=$(cat "$pid_file")
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -9 "$pid" 2>/dev/null || true
      rm -f "$pid_file"
    fi
  done
  if [ -s "$dir/munged.started" ]; then
    pid=$(cat "$dir/munged.started")
    kill "$pid" 2>/dev/null || true
    rm -f "$dir/munged.started"
  fi
}

if [ "$cmd" = stop ]; then
  stop
  exit 0
fi
[ "$cmd" = start ] || { echo "usage: $0 start|stop DIR" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "$0: the test cluster runs as root" >&2; exit 1; }

command -v slurmctld >/dev/null && command -v munged >/dev/null || "$here/setup-system.sh"

mkdir -p "$dir"/{state,spool}
# munge: a key (once per machine), and the daemon if none runs.
if [ ! -s /etc/munge/munge.key ]; then
  mkdir -p /etc/munge
  dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
  chown munge:munge /etc/munge/munge.key 2>/dev/null || true
  chmod 0400 /etc/munge/munge.key
fi
if ! munge -n >/dev/null 2>&1; then
  mkdir -p /run/munge /var/log/munge /var/lib/munge
  chown munge:munge /run/munge /var/log/munge /var/lib/munge 2>/dev/null || true
  runuser -u munge -- /usr/sbin/munged
  for _ in $(seq 50); do munge -n >/dev/null 2>&1 && break; sleep 0.1; done
  pgrep -u munge -n munged > "$dir/munged.started" || true
  munge -n >/dev/null || { echo "$0: munged did not start" >&2; exit 1; }
fi

node=$(hostname -s)
cores=$(nproc)
cat > "$dir/slurm.conf" <<CONF
ClusterName=quarrytest
SlurmctldHost=$node(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=16817
SlurmdPort=16818
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/backfill
# Array tasks start as soon as cores free up: Slurm's default batch_sched_delay
# of 3 s held each wave of tasks back by about 3 s (docs/guide/cluster.md).
SchedulerParameters=batch_sched_delay=0
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
SlurmdTimeout=30
InactiveLimit=0
KillWait=2
MinJobAge=30
MaxArraySize=100001
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cores State=UNKNOWN
PartitionName=quarry Nodes=$node Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
CONF
export SLURM_CONF="$dir/slurm.conf"
slurmctld -i
slurmd
for _ in $(seq 100); do
  state=$(sinfo -h -N -o %t 2>/dev/null | head -1 || true)
  case "$state" in idle*|mix*|alloc*) break ;; esac
  [ "$state" = "down" ] || [ "$state" = "down*" ] && scontrol update nodename="$node" state=resume >/dev/null 2>&1 || true
  sleep 0.2
done
state=$(sinfo -h -N -o %t 2>/dev/null | head -1 || true)
case "$state" in
  idle*|mix*|alloc*) ;;
  *) echo "$0: the node did not come up (state '$state'); logs in $dir" >&2
     tail -5 "$dir/slurmctld.log" "$dir/slurmd.log" >&2 || true
     stop; exit 1 ;;
esac
echo "export SLURM_CONF=$dir/slurm.conf"
