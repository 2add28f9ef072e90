#!/usr/bin/env bash
# The test suite: lint (ruff), types (mypy), then pytest.  Installs into .venv first when needed.
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
# The Slurm hooks and the test provider are Python files without a .py suffix: name them.
echo "== ruff";   .venv/bin/ruff check . plugins/slurm/rlsched-gate-watchdog plugins/slurm/rlsched-resume \
                    plugins/slurm/rlsched-suspend scripts/local-cloud-provider
echo "== mypy";   .venv/bin/mypy
echo "== pytest"; .venv/bin/pytest -q "$@"
