#!/usr/bin/env bash
# Start a throw-away Prometheus (Debian's package) on 127.0.0.1 that scrapes one target, for tests.
#
#   scripts/prometheus-up.sh [PORT] [TARGET]        # defaults: 9091 and 127.0.0.1:9400 (the rlsched exporter)
#   scripts/prometheus-down.sh                      # stops it by the PID in $PROM_BASE/prometheus.pid
#   scripts/prometheus-up.sh --install-only         # only install the package (prometheus, promtool), start nothing
#
# Storage lives in a temporary directory ($PROM_BASE, default /tmp/rlsched-prometheus) that
# prometheus-down.sh removes.  SCRAPE_INTERVAL (default 1s) keeps tests short.  Idempotent: when the
# Prometheus of $PROM_BASE already runs, it only reports that.
set -euo pipefail
INSTALL_ONLY=0
if [ "${1:-}" = "--install-only" ]; then INSTALL_ONLY=1; shift; fi
PORT=${1:-9091}
TARGET=${2:-127.0.0.1:9400}
PROM_BASE=${PROM_BASE:-/tmp/rlsched-prometheus}
SCRAPE_INTERVAL=${SCRAPE_INTERVAL:-1s}
die() { echo "prometheus-up.sh: $*" >&2; exit 1; }
alive() { [ -e "/proc/$1" ] && ! grep -q '^State:.*Z' "/proc/$1/status" 2>/dev/null; }
case "$PORT" in ''|*[!0-9]*) die "PORT must be an integer (got '$PORT')";; esac
case "$TARGET" in *:*) ;; *) die "TARGET must be host:port (got '$TARGET')";; esac
case "$PROM_BASE" in /*) ;; *) die "PROM_BASE must be an absolute path (got '$PROM_BASE')";; esac

install_prometheus() {
  # Debian's prometheus package ships both the server and promtool (the rule checker of CI).
  command -v prometheus >/dev/null && command -v promtool >/dev/null && return 0
  [ "$(id -u)" = 0 ] || die "prometheus is not installed and installing it needs root"
  command -v apt-get >/dev/null || die "prometheus is not installed and apt-get is unavailable"
  apt-get update -qq || die "apt-get update failed"
  # --no-install-recommends: the package recommends the node exporter and more, not needed here.
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null \
    || die "apt-get install prometheus failed"
}
if [ "$INSTALL_ONLY" = 1 ]; then
  install_prometheus
  echo "prometheus-up.sh: $(command -v prometheus) and $(command -v promtool) installed"
  exit 0
fi
if [ -f "$PROM_BASE/prometheus.pid" ] && alive "$(cat "$PROM_BASE/prometheus.pid")"; then
  echo "prometheus-up.sh: already up (pid $(cat "$PROM_BASE/prometheus.pid"), see $PROM_BASE/prometheus.yml)"
  exit 0
fi
install_prometheus
mkdir -p "$PROM_BASE/data"
cat > "$PROM_BASE/prometheus.yml" <<YML
# Written by rlsched scripts/prometheus-up.sh (tests only).
global:
  scrape_interval: $SCRAPE_INTERVAL
  evaluation_interval: $SCRAPE_INTERVAL
scrape_configs:
  - job_name: rlsched
    static_configs:
      - targets: ["$TARGET"]
YML
# Debian's package starts prometheus through systemd; here it runs in the background, like slurmd.
nohup prometheus --config.file="$PROM_BASE/prometheus.yml" --storage.tsdb.path="$PROM_BASE/data" \
  --web.listen-address="127.0.0.1:$PORT" </dev/null >"$PROM_BASE/prometheus.log" 2>&1 &
echo $! > "$PROM_BASE/prometheus.pid"
for _ in $(seq 1 150); do
  python3 - "$PORT" <<'PY' && break
import sys, urllib.request
try:
    sys.exit(0 if urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/-/ready", timeout=1).status == 200 else 1)
except OSError:
    sys.exit(1)
PY
  alive "$(cat "$PROM_BASE/prometheus.pid")" || die "prometheus exited; see $PROM_BASE/prometheus.log"
  sleep 0.2
done
python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$PORT/-/ready', timeout=1)" 2>/dev/null \
  || die "prometheus not ready after 30 s; see $PROM_BASE/prometheus.log"
echo "prometheus-up.sh: http://127.0.0.1:$PORT scraping $TARGET every $SCRAPE_INTERVAL (pid $(cat "$PROM_BASE/prometheus.pid"))"
