#!/usr/bin/env bash
# Stop the test cluster of scripts/slurm-up.sh: cancel its jobs, then stop only the daemons it (and its
# resume.sh) started — slurmd, slurmctld, slurmdbd, then MariaDB — by the PIDs in their pidfiles, and every instance of the local cloud provider
# (scripts/local-cloud-provider, records in $BASE/provider/instances), by the PID in its record, checked
# against the process start time it recorded so that a recycled PID is never killed.
# Idempotent: nothing running is not an error.
#   BASE=/tmp/rlsched-slurm scripts/slurm-down.sh          (KEEP_MUNGE=1 leaves munged running)
set -uo pipefail
BASE=${BASE:-/tmp/rlsched-slurm}
CONF=$BASE/etc/slurm.conf
alive() { [ -e "/proc/$1" ] && ! grep -q '^State:.*Z' "/proc/$1/status" 2>/dev/null; }   # zombies are dead
stop() {  # pidfile
  [ -f "$1" ] || return 0
  local pid; pid=$(cat "$1")
  case "$pid" in ''|*[!0-9]*) echo "slurm-down.sh: ignoring $1 (no PID in it)" >&2; rm -f "$1"; return 0;; esac
  if alive "$pid"; then
    kill "$pid"
    for _ in $(seq 1 50); do alive "$pid" || break; sleep 0.1; done
    if alive "$pid"; then echo "slurm-down.sh: SIGKILL $pid ($1)" >&2; kill -KILL "$pid"; fi
  fi
  rm -f "$1"
}
if [ -f "$BASE/run/slurmctld.pid" ] && alive "$(cat "$BASE/run/slurmctld.pid")"; then
  # Cancel jobs first: slurmstepd and job processes outlive slurmd.
  export SLURM_CONF=$CONF
  jobs=$(timeout 10 squeue -h -o %i 2>/dev/null)
  # shellcheck disable=SC2086
  [ -n "$jobs" ] && timeout 10 scancel --quiet $jobs 2>/dev/null
  for _ in $(seq 1 100); do
    [ -z "$(timeout 10 squeue -h -t R,CG,CF -o %i 2>/dev/null)" ] && break
    sleep 0.2
  done
fi
# Provider instances: each record is one line "PID STATE START_TICKS" (START_TICKS: field 22 of /proc/PID/stat).
started_at() {  # pid -> start time in clock ticks (the fields after the parenthesised command name)
  local stat; stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  # shellcheck disable=SC2086
  set -- ${stat##*) }
  echo "${20:-}"
}
for f in "$BASE"/provider/instances/*; do
  [ -f "$f" ] || continue
  read -r pid _ start < "$f" || true
  case "$pid$start" in ''|*[!0-9]*) echo "slurm-down.sh: ignoring $f (not a provider record)" >&2; rm -f "$f"; continue;; esac
  if alive "$pid" && [ "$(started_at "$pid")" = "$start" ]; then
    kill "$pid"
    for _ in $(seq 1 50); do alive "$pid" || break; sleep 0.1; done
    if alive "$pid"; then echo "slurm-down.sh: SIGKILL $pid ($f)" >&2; kill -KILL "$pid"; fi
  fi
  rm -f "$f"
done
for f in "$BASE"/run/slurmd-*.pid; do stop "$f"; done
stop "$BASE/run/slurmctld.pid"          # its child slurmscriptd exits with it
stop "$BASE/run/slurmdbd.pid"           # after the controller, which sends it the last job records
stop "$BASE/run/mariadb.pid"            # last: slurmdbd writes to it (the server flushes and exits on SIGTERM)
[ "${KEEP_MUNGE:-0}" = 1 ] || stop /run/munge/munged.pid
# The sudoers rule slurm-up.sh wrote for this cluster's provider (the hooks, as slurm, start root slurmds).
for f in /etc/sudoers.d/rlsched-test-*; do
  [ -f "$f" ] && grep -qF -- "--dir $BASE/provider " "$f" && rm -f "$f"
done
exit 0
