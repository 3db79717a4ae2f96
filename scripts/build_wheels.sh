#!/usr/bin/env bash
# Build a wheel and an sdist of every package of this repository into dist/ (or the folder
# given): tilelang-core, every backend under backends/, and tilelang-conformance.
#
# usage: scripts/build_wheels.sh [OUTDIR]
# Uses `python -m build --no-isolation` (the build backend, setuptools, comes from .venv), so
# it works offline; install `build` first (`pip install build`, part of the test extra).
# Every package's build/ and *.egg-info are removed first, so a deleted file never ships.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="$(realpath -m "${1:-dist}")"
PY="${PYTHON:-.venv/bin/python}"
mkdir -p "$OUT"
for package in . backends/*/ conformance; do
    [ -f "$package/pyproject.toml" ] || continue
    rm -rf "$package/build"
    find "$package" -maxdepth 2 -name '*.egg-info' -not -path '*/.venv/*' -prune -exec rm -rf {} +
    echo "building $(grep -m1 '^name = ' "$package/pyproject.toml" | cut -d'"' -f2)"
    "$PY" -m build --sdist --wheel --no-isolation --outdir "$OUT" "$package" >/dev/null 2>"$OUT/.build.log" \
        || { cat "$OUT/.build.log" >&2; exit 1; }
    rm -rf "$package/build"
done
rm -f "$OUT/.build.log"
ls -l "$OUT"/*.whl "$OUT"/*.tar.gz
