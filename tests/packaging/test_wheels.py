"""Real distributions: the wheels of tilelang-core and tilelang-cpu, installed (not editable)
into a fresh virtual environment, run a kernel the way a user's deployment does.

The install is runtime-only (`pip install tilelang-core tilelang-cpu`, no `[compiler]` extra,
so no TVM): the kernel is compiled here and exported, then loaded and run there
("compile here, run there"); compiling there fails with an error that names the extra.
Dependencies come from pip's cache or index; without either the test skips with the reason.
"""
from __future__ import annotations

import subprocess
import sys
import time
import venv
from pathlib import Path

import numpy as np
import pytest

import tilelang_core
from tilelang_core import language as T

ROOT = Path(__file__).resolve().parents[2]

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
    sys.exit("compile without the compiler extra did not fail")
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


def build_wheel(package: Path, out: Path) -> Path:
    proc = subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out),
                           str(package)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    name = package.resolve().name if package.resolve() != ROOT else "core"
    return next(out.glob(f"tilelang_{name.replace('-', '_')}-*.whl"))


def test_runtime_only_wheels_install_into_a_fresh_venv_and_run_an_exported_kernel(tmp_path):
    pytest.importorskip("build", reason="the `build` package is not installed (pip install build)")
    wheels = [build_wheel(ROOT, tmp_path / "dist"), build_wheel(ROOT / "backends" / "cpu", tmp_path / "dist")]
    tilelang_core.compile(scale, target="cpu").export(tmp_path / "kernel")

    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    start = time.perf_counter()
    proc = subprocess.run([str(python), "-m", "pip", "install", "-q", *map(str, wheels)], capture_output=True, text=True)
    if proc.returncode != 0 and ("No matching distribution" in proc.stderr or "Could not find" in proc.stderr
                                 or "NewConnectionError" in proc.stderr):
        pytest.skip(f"the dependencies (numpy, pluggy, rich, filelock) are neither cached nor reachable: "
                    f"{proc.stderr.strip().splitlines()[-1]}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    print(f"fresh-venv install of {', '.join(w.name for w in wheels)}: {time.perf_counter() - start:.1f} s")

    run = subprocess.run([str(python), "-c", RUN_THERE, str(tmp_path / "kernel")], capture_output=True, text=True,
                         cwd=tmp_path)
    assert run.returncode == 0 and run.stdout.strip() == "ran", run.stdout + run.stderr

    # the alias's .pth came with the wheel: it aliases an interpreter only when asked
    alias = "import tilelang; print(tilelang.__name__)"
    asked = subprocess.run([str(python), "-c", alias], capture_output=True, text=True, cwd=tmp_path,
                           env={"TILELANG_CORE_ALIAS": "1", "PATH": "/usr/bin:/bin"})
    assert asked.returncode == 0 and asked.stdout.strip() == "tilelang_core", asked.stdout + asked.stderr
    plain = subprocess.run([str(python), "-c", alias], capture_output=True, text=True, cwd=tmp_path,
                           env={"PATH": "/usr/bin:/bin"})
    assert plain.returncode != 0 and "No module named 'tilelang'" in plain.stderr, plain.stdout + plain.stderr


def test_every_package_has_a_pyproject_that_names_its_distribution():
    packages = [ROOT, *sorted(p.parent for p in (ROOT / "backends").glob("*/pyproject.toml")), ROOT / "conformance"]
    for package in packages:
        text = (package / "pyproject.toml").read_text()
        assert 'name = "tilelang-' in text and "[build-system]" in text, package
    assert np  # numpy is what the runtime-only install brings for arrays

