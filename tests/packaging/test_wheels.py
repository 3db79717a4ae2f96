"""Real distributions, installed the way a user installs them: every wheel built by
scripts/build_wheels.sh, then one fresh virtual environment taken through three steps.

1. Runtime only (`pip install --no-deps tilelang-core tilelang-cpu` + the four small
   dependencies, no TVM): a kernel compiled here and exported runs there; compiling there
   fails with an error that says what to install.
2. `pip install tilelang-core tilelang-cpu tilelang-conformance` from the wheels (dependencies,
   apache-tvm among them, from the index or pip's cache): the README's first kernel matches
   NumPy, and `tilelang conformance --target cpu --level run` passes.
3. The device backends too: a GEMM compiles for cuda/sm_86 and cuda/sm_120 (NVRTC from pip),
   to a source-only kernel that exports for musa/mp_31 (no MUSA SDK here), and for
   hip/gfx942, metal/apple-m2 and opencl/generic as far as this machine's toolchains allow.

Without the dependencies (no index, nothing cached) the test skips with the reason.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
import venv
import zipfile
from pathlib import Path

import numpy as np
import pytest

import tilelang_core
from tilelang_core import language as T

from test_readme import readme_blocks  # noqa: E402 - this folder is on sys.path (pytest prepend)

ROOT = Path(__file__).resolve().parents[2]
DISTRIBUTIONS = ("tilelang_core", "tilelang_cpu", "tilelang_cuda", "tilelang_hip", "tilelang_musa",
                 "tilelang_metal", "tilelang_opencl", "tilelang_conformance")
RUNTIME_DEPENDENCIES = ("pluggy>=1.5", "numpy>=1.24", "rich>=13", "filelock>=3.12")

RUN_THERE = r"""
import sys, numpy as np, tilelang_core
assert "/site-packages/tilelang_core" in tilelang_core.__file__.replace("\\", "/"), tilelang_core.__file__
try:
    import tvm  # noqa: F401
    sys.exit("tvm is importable: the runtime-only install pulled in the compiler")
except ImportError:
    pass
kernel = tilelang_core.load(sys.argv[1])
x = np.random.default_rng().standard_normal((100, 4)).astype(np.float32)
y = np.full((100, 4), np.nan, np.float32)
kernel(x, y)
np.testing.assert_allclose(y, x.astype(np.float64) * 3 + 1, rtol=1e-6)
try:
    tilelang_core.compile(None, target="cpu")
    sys.exit("compile without the compiler did not fail")
except Exception as exc:
    assert "tilelang-core[compiler]" in str(exc), str(exc)
print("ran")
"""


@T.prim_func
def scale(X: T.Tensor((100, 4), "float32"), Y: T.Tensor((100, 4), "float32")):
    with T.Kernel(2, threads=64) as bx:
        for i, j in T.Parallel(64, 4):
            if bx * 64 + i < 100:
                Y[bx * 64 + i, j] = X[bx * 64 + i, j] * 3.0 + 1.0


def _run(command, *, cwd=None, env=None, timeout=900) -> subprocess.CompletedProcess:
    return subprocess.run([str(c) for c in command], capture_output=True, text=True, cwd=cwd, env=env,
                          timeout=timeout)


def _pip(python: Path, *args: str) -> subprocess.CompletedProcess:
    done = _run([python, "-m", "pip", "install", "-q", "--disable-pip-version-check", *args])
    if done.returncode != 0 and any(s in done.stderr for s in ("No matching distribution", "Could not find",
                                                                "NewConnectionError")):
        pytest.skip(f"dependencies are neither cached nor reachable: {done.stderr.strip().splitlines()[-1]}")
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def build_wheels(out: Path) -> dict[str, Path]:
    """scripts/build_wheels.sh into `out`: distribution (import name) -> its wheel."""
    done = _run(["bash", ROOT / "scripts" / "build_wheels.sh", out], env={**os.environ, "PYTHON": sys.executable})
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    wheels = {w.name.split("-")[0]: w for w in out.glob("*.whl")}
    assert set(wheels) == set(DISTRIBUTIONS), sorted(wheels)
    assert {s.name.split("-")[0] for s in out.glob("*.tar.gz")} == set(DISTRIBUTIONS)
    return wheels


def check_metadata(wheels: dict[str, Path]) -> None:
    """LICENSE, author and license expression in every wheel, no URL, the core pinned."""
    for name, wheel in wheels.items():
        with zipfile.ZipFile(wheel) as z:
            names = z.namelist()
            metadata = z.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
            assert any(n.endswith("licenses/LICENSE") for n in names), (name, names)
        assert "License-Expression: Apache-2.0" in metadata and "Author: tilelang-core developers" in metadata
        assert "http" not in "".join(l for l in metadata.splitlines() if l.startswith(("Home-page", "Project-URL")))
        if name == "tilelang_core":
            assert "Requires-Dist: apache-tvm==" in metadata
        else:
            assert "Requires-Dist: tilelang-core<0.3,>=0.2" in metadata, name


def test_a_fresh_venv_gets_what_a_user_gets(tmp_path):
    pytest.importorskip("build", reason="the `build` package is not installed (pip install build)")
    wheels = build_wheels(tmp_path / "dist")
    check_metadata(wheels)
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python, tilelang = env_dir / "bin" / "python", env_dir / "bin" / "tilelang"
    steps = []

    # 1. the runtime alone
    start = time.perf_counter()
    tilelang_core.compile(scale, target="cpu").export(tmp_path / "kernel")
    _pip(python, "--no-deps", wheels["tilelang_core"], wheels["tilelang_cpu"])
    _pip(python, *RUNTIME_DEPENDENCIES)
    run = _run([python, "-c", RUN_THERE, tmp_path / "kernel"], cwd=tmp_path)
    assert run.returncode == 0 and run.stdout.strip() == "ran", run.stdout + run.stderr
    steps.append(f"runtime only (--no-deps): {time.perf_counter() - start:.0f} s")
    # the alias's .pth came with the wheel: it aliases an interpreter only when asked
    alias = "import tilelang; print(tilelang.__name__)"
    asked = _run([python, "-c", alias], cwd=tmp_path, env={"TILELANG_CORE_ALIAS": "1", "PATH": "/usr/bin:/bin"})
    assert asked.returncode == 0 and asked.stdout.strip() == "tilelang_core", asked.stdout + asked.stderr
    plain = _run([python, "-c", alias], cwd=tmp_path, env={"PATH": "/usr/bin:/bin"})
    assert plain.returncode != 0 and "No module named 'tilelang'" in plain.stderr, plain.stdout + plain.stderr

    # 2. core + cpu (+ the conformance suite) with their dependencies: the README, the suite
    start = time.perf_counter()
    _pip(python, wheels["tilelang_core"], wheels["tilelang_cpu"], wheels["tilelang_conformance"])
    first = tmp_path / "readme_first_kernel.py"
    first.write_text(readme_blocks()[0])
    run = _run([python, first], cwd=tmp_path)
    assert run.returncode == 0 and "matches NumPy" in run.stdout, run.stdout[-2000:] + run.stderr[-3000:]
    conformance = _run([tilelang, "conformance", "--target", "cpu", "--level", "run"], cwd=tmp_path)
    assert conformance.returncode == 0, conformance.stdout[-4000:] + conformance.stderr[-2000:]
    totals = next(line for line in conformance.stdout.splitlines() if line.startswith("totals:"))
    assert "PASS" in totals and "FAIL" not in totals and "XPASS" not in totals, totals
    steps.append(f"core + cpu + README + cpu conformance ({totals}): {time.perf_counter() - start:.0f} s")

    # 3. every device backend in the same venv: one GEMM per target
    start = time.perf_counter()
    _pip(python, *(wheels[f"tilelang_{b}"] for b in ("cuda", "hip", "musa", "metal", "opencl")))
    compiled = _run([python, ROOT / "tests" / "packaging" / "first_contact.py", tmp_path / "exported",
                     "cuda/sm_86=binary", "cuda/sm_120=binary", "musa/mp_31=source-only",
                     "hip/gfx942", "metal/apple-m2", "opencl/generic"], cwd=tmp_path)
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr[-3000:]
    steps.append(f"device backends: {time.perf_counter() - start:.0f} s")
    print("\n".join(steps + [compiled.stdout]))
    assert np  # the arrays of every step are NumPy's
