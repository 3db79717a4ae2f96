#!/usr/bin/env bash
# Create .venv and install the core and every backend of this repository, editable.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
PIP=".venv/bin/python -m pip"
$PIP install -q --upgrade pip
# torch is optional for users; the tests use it to check DLPack zero-copy. The CPU wheel
# keeps the download small.
$PIP install -q -e ".[compiler,test,docs]" \
    -e backends/cpu -e backends/cuda -e backends/hip -e backends/musa -e backends/metal -e backends/opencl \
    -e conformance
# torch (CPU build) lets the tests check torch tensors through DLPack; optional for users.
$PIP install -q "torch==2.13.0" || echo "setup: torch not installed; torch tests will be skipped"
echo "setup: .venv ready ($(.venv/bin/python --version))"
