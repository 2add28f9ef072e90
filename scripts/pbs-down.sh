#!/usr/bin/env bash
# Stop the OpenPBS that scripts/pbs-up.sh started, by PID (from the daemons' lock and pid files; never by
# name), then any process left inside its network namespace (only what pbs-up.sh started lives there).
#
#   sudo scripts/pbs-down.sh            # stop server, datastore, scheduler, mom, comm (PBS_HOME kept)
#   sudo scripts/pbs-down.sh --purge    # ... and remove PBS_HOME, /etc/pbs.conf, /etc/init.d/pbs, the
#                                       # namespace and its hosts file (the installed $PBS_PREFIX stays)
# Same environment as pbs-up.sh (PBS_PREFIX, PBS_HOME_DIR, PBS_NETNS, BASE).
set -uo pipefail
PREFIX=${PBS_PREFIX:-/opt/pbs}
PHOME=${PBS_HOME_DIR:-/var/spool/pbs}
NS=${PBS_NETNS:-rlsched-pbs}
BASE=${BASE:-/tmp/rlsched-pbs}
T0=$(date +%s.%N)
say() { echo "pbs-down.sh [+$(awk -v a="$T0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}') s] $*"; }
[ "$(id -u)" = 0 ] || { echo "pbs-down.sh: must run as root" >&2; exit 1; }

alive() { [ -n "$1" ] && [ -d "/proc/$1" ] && ! grep -q '^State:.*Z' "/proc/$1/status" 2>/dev/null; }
pid_of() {   # the PID in a lock/pid file, if that process is alive and is the expected program
  local p
  [ -r "$1" ] || return 0
  p=$(head -1 "$1" | tr -dc '0-9')
  if [ -n "$p" ] && alive "$p" && grep -q "$2" "/proc/$p/cmdline" 2>/dev/null; then echo "$p"; fi
}
wait_gone() {   # wait_gone SECONDS PID...
  local deadline=$(( $(date +%s) + $1 )); shift
  for p in "$@"; do
    while alive "$p" && [ "$(date +%s)" -lt "$deadline" ]; do sleep 0.1; done
  done
}
NS_OK=0
ip netns exec "$NS" true 2>/dev/null && NS_OK=1

SERVER=$(pid_of "$PHOME/server_priv/server.lock" pbs_server)
SCHED=$(pid_of "$PHOME/sched_priv/sched.lock" pbs_sched)
MOM=$(pid_of "$PHOME/mom_priv/mom.lock" pbs_mom)
COMM=$(pid_of "$PHOME/server_priv/comm.lock" pbs_comm)
PG=$(pid_of "$PHOME/datastore/postmaster.pid" postgres)
say "server=${SERVER:-none} sched=${SCHED:-none} mom=${MOM:-none} comm=${COMM:-none} postgres=${PG:-none}"

# The server first (it saves its state), then its datastore, then the rest (mom kills its jobs on TERM).
if alive "$SERVER"; then
  kill -TERM "$SERVER"
  wait_gone 30 "$SERVER"
fi
if alive "$PG"; then
  kill -INT "$PG"            # postgres "fast" shutdown
  wait_gone 30 "$PG"
fi
for p in $SCHED $MOM $COMM; do kill -TERM "$p" 2>/dev/null; done
wait_gone 15 $SCHED $MOM $COMM
for p in $SERVER $PG $SCHED $MOM $COMM; do
  if alive "$p"; then say "pid $p still alive: KILL"; kill -KILL "$p" 2>/dev/null; fi
done
# Whatever else lives in the namespace was started there by pbs-up.sh or by PBS (job processes, the datastore
# monitor, a lingering qsub helper).
if [ $NS_OK = 1 ]; then
  left=$(ip netns pids "$NS" 2>/dev/null | tr '\n' ' ')
  if [ -n "${left// /}" ]; then
    say "left in namespace $NS: $left(TERM)"
    for p in $left; do kill -TERM "$p" 2>/dev/null; done
    wait_gone 5 $left
    for p in $left; do alive "$p" && kill -KILL "$p" 2>/dev/null; done
  fi
fi
rm -f "$BASE/pids"
say "stopped"

if [ "${1:-}" = "--purge" ]; then
  rm -rf "$PHOME" /etc/pbs.conf /etc/pbs.conf.* /etc/init.d/pbs /var/tmp/pbs_boot_check "/etc/netns/$NS"
  rmdir /etc/netns 2>/dev/null || true
  ip netns delete "$NS" 2>/dev/null || true
  say "purged $PHOME, /etc/pbs.conf, /etc/init.d/pbs, namespace $NS (kept $PREFIX)"
fi
exit 0
