#!/usr/bin/env bash
# On a lent GPU machine (no internet, no TVM): make this checkout's packages importable with
# their entry points, without fetching anything. The image already has torch, cuda-python,
# numpy, pluggy, rich and filelock.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install -q --no-deps --no-build-isolation --no-index \
    -e . -e backends/cpu -e backends/cuda ${CONFORMANCE:+-e conformance} 2>&1 | grep -v "^WARNING" || true
python3 -c "import tilelang_core, tilelang_cuda; print('device setup: ok')"
