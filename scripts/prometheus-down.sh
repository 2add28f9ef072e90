#!/usr/bin/env bash
# Stop the Prometheus of scripts/prometheus-up.sh by its PID and remove its temporary storage.
set -uo pipefail
PROM_BASE=${PROM_BASE:-/tmp/rlsched-prometheus}
alive() { [ -e "/proc/$1" ] && ! grep -q '^State:.*Z' "/proc/$1/status" 2>/dev/null; }
pidfile=$PROM_BASE/prometheus.pid
if [ -f "$pidfile" ]; then
  pid=$(cat "$pidfile")
  case "$pid" in ''|*[!0-9]*) echo "prometheus-down.sh: no PID in $pidfile" >&2;; *)
    if alive "$pid"; then
      kill "$pid"
      for _ in $(seq 1 50); do alive "$pid" || break; sleep 0.1; done
      if alive "$pid"; then echo "prometheus-down.sh: SIGKILL $pid" >&2; kill -KILL "$pid"; fi
    fi;;
  esac
fi
case "$PROM_BASE" in /tmp/*) rm -rf "$PROM_BASE";; *) rm -f "$pidfile";; esac
exit 0
