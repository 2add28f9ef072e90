#!/usr/bin/env bash
# The test suite: lint (ruff), format (ruff format --check), types (mypy), then pytest.  Installs into .venv first when needed.
# Real traces: set RLSCHED_TRACE_DIR to a folder of Parallel Workloads Archive logs (see docs/traces.md);
# without it the trace tests are skipped (CI sets RLSCHED_REQUIRE_TRACES=1 so they fail instead).
# Extra arguments go to pytest, e.g.  bash scripts/test.sh -k engine
set -euo pipefail
cd "$(dirname "$0")/.."
stamp=.venv/.rlsched-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  bash scripts/install.sh
  touch "$stamp"
fi
# The whole suite as root on a machine without OpenPBS (CI's first run): install its packages now (no two apt
# runs at once), then build it in the background while lint, types and the other tests run; the PBS tests
# run last (tests/conftest.py) and their fixture waits on pbs-up.sh's lock for the build to finish.
if [ $# -eq 0 ] && [ "$(id -u)" = 0 ] && [ ! -x /opt/pbs/sbin/pbs_server ]; then
  mkdir -p /tmp/rlsched-pbs
  if bash scripts/pbs-up.sh --packages-only; then
    echo "== OpenPBS build in the background (log: /tmp/rlsched-pbs/prebuild.log)"
    nohup nice -n 10 bash scripts/pbs-up.sh --build-only >/tmp/rlsched-pbs/prebuild.log 2>&1 &
  fi
fi
# The Slurm hooks and the test provider are Python files without a .py suffix: name them.
scripts=(plugins/rlsched-gate-watchdog plugins/slurm/rlsched-resume plugins/slurm/rlsched-suspend
         scripts/local-cloud-provider)
echo "== ruff";   .venv/bin/ruff check . "${scripts[@]}"
# One formatter for the whole tree (ruff format, black's style at 120 columns): `ruff format .` plus the
# scripts above fixes what this refuses.
echo "== format"; .venv/bin/ruff format --check . "${scripts[@]}"
echo "== mypy";   .venv/bin/mypy
# The slowest tests are listed at the end: CI has a time budget, and this says where it goes.
if [ $# -gt 0 ]; then
  echo "== pytest"; exec .venv/bin/pytest -q --durations=30 "$@"
fi
# The whole suite in two halves at once: the tests on the real clusters (marked `live` by tests/conftest.py)
# run one at a time in one process and mostly wait on Slurm's and PBS's daemons; the others mostly compute,
# so they run on every core (pytest-xdist) in the time the live half leaves.  Together they take about as
# long as the longer half.  The computing half runs at the lowest priority, so that the daemons and the live
# tests' timing come first (at nice 5 a cloud node's power-up once took 51 s against a live test's limit of 50 s;
# the node was called stuck, and the test then found the leasing bug its replacement showed, since fixed in
# rlsched/leasing/service.py); its output follows the live half's.  Each half has its own basetemp.
runs=$(mktemp -d /tmp/rlsched-tests.XXXXXX)
echo "== pytest: the tests on the real clusters, and beside them the others (log: $runs/offline.log)"
nice -n 19 .venv/bin/pytest -q --durations=15 -n auto -m "not live" --basetemp "$runs/offline" \
  >"$runs/offline.log" 2>&1 &
offline=$!
# A stopped run (Ctrl-C, CI's timeout) stops the computing half too.
trap 'kill "$offline" 2>/dev/null || true' EXIT
live_rc=0
.venv/bin/pytest -q --durations=15 -m live --basetemp "$runs/live" || live_rc=$?
offline_rc=0
wait "$offline" || offline_rc=$?
trap - EXIT
echo "== pytest: the others"
cat "$runs/offline.log"
echo "== pytest: live rc=$live_rc, others rc=$offline_rc"
if [ "$live_rc" = 0 ] && [ "$offline_rc" = 0 ]; then
  rm -rf "$runs"
  exit 0
fi
echo "== the tests' files are kept for a look: $runs"
exit 1
