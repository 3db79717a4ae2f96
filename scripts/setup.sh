#!/usr/bin/env bash
# Create .venv and install the core and every backend of this repository, editable.
# One line per step; pip's own output goes to .venv/setup.log (printed when a step fails).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
LOG=.venv/setup.log
step() {  # step "what" command...: run quietly, say what, show the log's end on failure
    local what="$1"; shift
    local start=$SECONDS
    printf 'setup: %s ... ' "$what"
    if "$@" >>"$LOG" 2>&1; then
        echo "done ($((SECONDS - start)) s)"
    else
        echo "FAILED"; tail -n 40 "$LOG" >&2; return 1
    fi
}
if [ ! -x .venv/bin/python ]; then
    printf 'setup: creating .venv with %s ... ' "$("$PYTHON" --version)"
    "$PYTHON" -m venv .venv
    echo "done"
fi
: >>"$LOG"
PIP=".venv/bin/python -m pip"
# torch (CPU build) lets the tests check torch tensors through DLPack; optional for users and
# not needed by `make demo`: `make test` adds it with `scripts/setup.sh --torch`.
if [ "${1:-}" = "--torch" ]; then
    step "installing torch (CPU build; for the torch tests)" $PIP install -q "torch==2.13.0" \
        || echo "setup: torch not installed; torch tests will be skipped"
    exit 0
fi
step "upgrading pip" $PIP install -q --upgrade pip
step "installing tilelang-core (with apache-tvm), the backends and the conformance suite (editable)" \
    $PIP install -q -e ".[compiler,test,docs]" \
    -e backends/cpu -e backends/cuda -e backends/hip -e backends/musa -e backends/metal -e backends/opencl \
    -e conformance
echo "setup: .venv ready ($(.venv/bin/python --version)); pip's log: $LOG"
