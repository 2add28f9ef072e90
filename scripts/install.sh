#!/usr/bin/env bash
# Install rlsched and everything its tests use into ./.venv (Debian 12, Python >= 3.11).
# Idempotent: a second run only checks. Debian packages for the live tests (Slurm,
# Prometheus) are installed by scripts/slurm-up.sh and scripts/prometheus-up.sh when a
# test needs them.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
"$PY" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "rlsched needs Python >= 3.11")'
if [ ! -x .venv/bin/python ]; then
  if ! "$PY" -m venv --help >/dev/null 2>&1 || ! "$PY" -c 'import ensurepip' 2>/dev/null; then
    # Debian's python3 ships venv/ensurepip separately.
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
    else
      echo "install.sh: '$PY -m venv' is unavailable; install python3-venv (apt-get install python3-venv)" >&2
      exit 1
    fi
  fi
  "$PY" -m venv .venv
fi
# systemd-analyze checks the units (tests/test_install.py); containers often lack it.
if ! command -v systemd-analyze >/dev/null && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends systemd >/dev/null
fi
.venv/bin/python -m pip install -q --upgrade pip
# setuptools >= 77 reads pyproject's SPDX license; the tests build wheels with --no-build-isolation (offline,
# the venv's own setuptools), and the setuptools a Debian 12 venv starts with (65.5) cannot.
.venv/bin/python -m pip install -q --upgrade 'setuptools>=77'
.venv/bin/python -m pip install -q -e '.[dev,dask]'
echo "rlsched installed in $(pwd)/.venv  (run: .venv/bin/rlsched --help)"
