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
echo "== pytest"; .venv/bin/pytest -q --durations=30 "$@"
