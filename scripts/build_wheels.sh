#!/usr/bin/env bash
# Build a wheel of every package of this repository into dist/ (or the folder given):
# tilelang-core, every backend under backends/, and tilelang-conformance.
#
# usage: scripts/build_wheels.sh [OUTDIR]
# Uses `python -m build --no-isolation` (the build backend, setuptools, comes from .venv), so
# it works offline; install `build` first (`pip install build`, part of the test extra).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="$(realpath -m "${1:-dist}")"
PY="${PYTHON:-.venv/bin/python}"
mkdir -p "$OUT"
for package in . backends/*/ conformance; do
    [ -f "$package/pyproject.toml" ] || continue
    "$PY" -m build --wheel --no-isolation --outdir "$OUT" "$package" >/dev/null
done
ls -l "$OUT"/*.whl
