"""Every kind of program of the test set compiles for gfx90a and gfx942 through
`tilelang_core.compile`, without an AMD GPU (level "compile": clang accepted the generated
HIP and produced a code object); an fp16 GEMM's machine code runs on MFMA.

The set: the programs of examples/kernels.py and tests/language/programs.py, and from the
CPU run tests (tests/run/kernels.py) GEMMs in fp16/bf16/fp32/int8 with every transpose and
tails, reductions, cumsum, split-K atomics, symbolic dims, elementwise, math, print and
device_assert. Each session compiles into its own cache directory (the kernel cache is safe
across pytest-xdist workers), so every run exercises the compiler.

Then the numbers: a selection of them runs on the host emulation of a HIP device
(hip_emulator.py: the generated source, compiled for the host, threads of a block as
std::threads, MFMA and wave shuffles emulated after AMD's documented register layouts).
`emulate_conformance.py` runs the whole conformance suite the same way.
"""
from __future__ import annotations

import importlib.util
import os
import re
import sys
from pathlib import Path

import numpy as np
import pytest

import tilelang_core as tilelang
from hip_emulator import emulate, host_compiler
from tilelang_hip.compile import disassemble, find_toolchain

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.language import programs  # noqa: E402
from tests.run import kernels  # noqa: E402

ARCHS = ("gfx90a", "gfx942")


def _examples():
    spec = importlib.util.spec_from_file_location("tilelang_examples_kernels", ROOT / "examples" / "kernels.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


examples = _examples()

PROGRAMS = {
    # examples/kernels.py (tails: no size is a multiple of its tile)
    "examples.matmul_relu": lambda: examples.matmul(100, 70, 90, 32, 32, 16, relu=True),
    "examples.matmul_128": lambda: examples.matmul(512, 512, 512, 128, 128, 32),
    "examples.softmax": lambda: examples.softmax(100, 64, 4),
    "examples.elementwise_add": lambda: examples.elementwise_add(1000),
    # tests/language/programs.py
    **{f"programs.{name}": make for name, make in programs.ALL_PROGRAMS.items()},
    # GEMMs: dtypes x transposes, with tails
    **{f"gemm.{dt}.{'T' if ta else 'N'}{'T' if tb else 'N'}": (
        lambda dt=dt, acc=acc, out=out, ta=ta, tb=tb: kernels.gemm(70, 52, 64, 32, 32, 32, dt, acc, out, ta, tb))
       for dt, acc, out in (("float16", "float32", "float16"), ("bfloat16", "float32", "float32"),
                            ("int8", "int32", "int32"), ("float32", "float32", "float32"))
       for ta, tb in ((False, False), (True, False), (False, True), (True, True))
       if dt == "float16" or ta == tb},
    "reduce.max.dim1": lambda: kernels.reduce(37, 24, "max", 1, True),
    "reduce.sum.dim0.accumulate": lambda: kernels.reduce(37, 24, "sum", 0, False),
    "reduce.absmax.dim1": lambda: kernels.reduce(37, 24, "absmax", 1, False),
    "cumsum.dim1.reverse": lambda: kernels.cumsum(9, 13, 1, True),
    "cumsum.dim0": lambda: kernels.cumsum(9, 13, 0, False),
    "atomic.split_k": lambda: kernels.atomic_split_k(50, 40, 96, 16, 16, 16, 3),
    "symbolic.scale": kernels.symbolic_scale,
    "elementwise.float16": lambda: kernels.elementwise(1000, "float16"),
    "elementwise.bfloat16": lambda: kernels.elementwise(1000, "bfloat16"),
    "elementwise.int32": lambda: kernels.elementwise(1000, "int32"),
    "copy_region": lambda: kernels.copy_region(12, 7),
    "math": lambda: kernels.math_ops(300),
    "alloc_var": lambda: kernels.alloc_var_count(50),
    "print_and_assert": lambda: kernels.printing(4),
}


def needs_toolchain(arch: str) -> None:
    if find_toolchain(arch) is None:
        pytest.skip(f"no HIP compiler for {arch} here: run scripts/install_hip_toolchain.sh")


@pytest.fixture(scope="session", autouse=True)
def session_cache(tmp_path_factory):
    """A fresh kernel cache for this session (per xdist worker), restored afterwards."""
    old = os.environ.get("TILELANG_CACHE_DIR")
    os.environ["TILELANG_CACHE_DIR"] = str(tmp_path_factory.mktemp("hip-cache"))
    yield
    if old is None:
        os.environ.pop("TILELANG_CACHE_DIR", None)
    else:
        os.environ["TILELANG_CACHE_DIR"] = old


@pytest.mark.parametrize("name", sorted(PROGRAMS))
@pytest.mark.parametrize("arch", ARCHS)
def test_program_compiles(arch, name):
    needs_toolchain(arch)
    kernel = tilelang.compile(PROGRAMS[name](), target=f"hip/{arch}")
    assert kernel.binary[:4] == b"\x7fELF"
    assert kernel.meta.extra["language"] == "hip"
    source = kernel.get_kernel_source()
    assert '#include "tl_hip_common.h"' in source
    if name.startswith(("gemm.float16", "gemm.bfloat16", "gemm.int8", "examples.matmul", "programs.matmul")):
        assert "tl_mfma_16x16x" in source, "this gemm should run on MFMA"


MFMA_F16 = {"gfx90a": "v_mfma_f32_16x16x16f16", "gfx942": "v_mfma_f32_16x16x16_f16"}


@pytest.mark.parametrize("arch", ARCHS)
def test_fp16_gemm_machine_code_runs_on_mfma(arch):
    needs_toolchain(arch)
    kernel = tilelang.compile(examples.matmul(512, 512, 512, 128, 128, 32), target=f"hip/{arch}")
    text = disassemble(kernel.binary, arch)
    # 128x128 per block, 2 waves of 8x4 tiles, K = 32: two 16x16x16 steps of 32 MFMAs each
    assert len(re.findall(rf"\b{MFMA_F16[arch]}\b", text)) == 64
    # the accumulator and the fragments stay in registers: no scratch (private) memory
    assert not re.search(r"\bscratch_(load|store)|buffer_(load|store)_dword\w* [^\n]*off, s\[0:3\]", text)


# ---------------------------------------------------------------------------------------------
# Runs on the host emulation of a HIP device (hip_emulator.py): the generated code computes
# the right numbers, MFMA path, accumulator layouts, LDS moves, masks and barriers included.
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def emu_dir(tmp_path_factory):
    if host_compiler() is None:
        pytest.skip("no host C++20 compiler for the HIP emulation")
    return tmp_path_factory.mktemp("hip-emu")


def run_emulated(func, arch, emu_dir, *args):
    kernel = tilelang.compile(func, target=f"hip/{arch}")
    failed = emulate(kernel, emu_dir)(*args)
    return kernel, failed


def np_dtype(dtype):
    if dtype in ("bfloat16", "float8_e4m3fnuz", "float8_e5m2fnuz"):
        import ml_dtypes

        return getattr(ml_dtypes, dtype)
    return np.dtype(dtype)


def small_ints(rng, shape, dtype):
    """Integers in [-3, 3]: exact in every input dtype and in fp32 sums of up to ~10^5 terms."""
    return rng.integers(-3, 4, shape).astype(np_dtype(dtype))


GEMM_RUNS = [  # (arch, in, acc, out, trans_a, trans_b)
    *[("gfx942", "float16", "float32", "float16", ta, tb) for ta in (False, True) for tb in (False, True)],
    ("gfx942", "bfloat16", "float32", "float32", False, False),
    ("gfx90a", "bfloat16", "float32", "bfloat16", True, True),
    ("gfx942", "int8", "int32", "int32", False, True),
    ("gfx90a", "int8", "int32", "int32", True, False),
    ("gfx942", "float8_e4m3fnuz", "float32", "float32", True, False),
    ("gfx942", "float8_e5m2fnuz", "float32", "float32", False, True),
    ("gfx942", "float32", "float32", "float32", False, False),
]


@pytest.mark.parametrize("arch,in_dtype,acc,out,ta,tb", GEMM_RUNS,
                         ids=lambda v: {True: "T", False: "N"}.get(v, str(v)) if isinstance(v, bool) else str(v))
def test_emulated_gemm(arch, in_dtype, acc, out, ta, tb, emu_dir):
    M, N, K = 70, 52, 64
    needs_toolchain(arch)
    rng = np.random.default_rng(0)
    a = small_ints(rng, (K, M) if ta else (M, K), in_dtype)
    b = small_ints(rng, (N, K) if tb else (K, N), in_dtype)
    c = np.full((M, N), -7, np_dtype(out))
    kernel, _ = run_emulated(kernels.gemm(M, N, K, 32, 32, 32, in_dtype, acc, out, ta, tb), arch, emu_dir, a, b, c)
    assert ("tl_mfma" in kernel.get_kernel_source()) == (in_dtype != "float32")
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    np.testing.assert_array_equal(c.astype(np.float64), (a64.T if ta else a64) @ (b64.T if tb else b64))


def test_emulated_seed_gemm_with_relu(emu_dir):
    """examples/kernels.py's GEMM at 128x128 tiles: two waves of 8x4 MFMA tiles each."""
    needs_toolchain("gfx942")
    M = N = 256
    K = 96
    rng = np.random.default_rng(1)
    a, b = small_ints(rng, (M, K), "float16"), small_ints(rng, (K, N), "float16")
    c = np.full((M, N), np.nan, np.float16)
    run_emulated(examples.matmul(M, N, K, 128, 128, 32, relu=True), "gfx942", emu_dir, a, b, c)
    np.testing.assert_array_equal(c, np.maximum(a.astype(np.float64) @ b, 0))


def test_emulated_softmax(emu_dir):
    needs_toolchain("gfx90a")
    rng = np.random.default_rng(2)
    x = rng.normal(size=(100, 64)).astype(np.float32)
    y = np.full_like(x, np.nan)
    run_emulated(examples.softmax(100, 64, 4), "gfx90a", emu_dir, x, y)
    ref = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(y, ref / ref.sum(1, keepdims=True), rtol=1e-5, atol=1e-7)


def test_emulated_accumulator_read_by_a_reduction(emu_dir):
    """C read by an epilogue and a row reduction stays in the MFMA accumulator registers: the
    epilogue runs in its layout, the reduction by shuffles and one LDS exchange across waves."""
    from tilelang_core import language as T

    @T.prim_func
    def gemm_rowmax(A: T.Tensor((64, 32), "bfloat16"), B: T.Tensor((64, 32), "bfloat16"),
                    D: T.Tensor((64, 64), "bfloat16"), R: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=256) as bx:
            A_s = T.alloc_shared((64, 32), "bfloat16")
            B_s = T.alloc_shared((64, 32), "bfloat16")
            C = T.alloc_fragment((64, 64), "float32")
            D_f = T.alloc_fragment((64, 64), "bfloat16")
            m = T.alloc_fragment((64,), "float32")
            T.copy(A, A_s)
            T.copy(B, B_s)
            T.gemm(A_s, B_s, C, transpose_B=True, clear_accum=True)
            for i, j in T.Parallel(64, 64):
                D_f[i, j] = C[i, j] * 2.0
            T.copy(D_f, D)
            T.reduce_max(C, m, dim=1)
            T.copy(m, R)

    needs_toolchain("gfx942")
    rng = np.random.default_rng(3)
    a, b = small_ints(rng, (64, 32), "bfloat16"), small_ints(rng, (64, 32), "bfloat16")
    d, r = np.zeros((64, 64), np_dtype("bfloat16")), np.full(64, np.nan, np.float32)
    kernel, _ = run_emulated(gemm_rowmax, "gfx942", emu_dir, a, b, d, r)
    source = kernel.get_kernel_source()
    assert "tl_mfma_16x16x16_bf16(&C_reg[" in source and "float* C = (float*)(tl_dyn_smem" not in source
    assert "tl_shfl_xor(" in source
    ref = a.astype(np.float64) @ b.astype(np.float64).T
    np.testing.assert_array_equal(d.astype(np.float64), 2 * ref)
    np.testing.assert_array_equal(r, ref.max(1))


def test_emulated_epilogue_in_the_accumulator_layout(emu_dir):
    """A fragment that only an epilogue of C touches adopts C's MFMA layout: both stay in
    registers, and the copy out runs in that layout."""
    from tilelang_core import language as T

    @T.prim_func
    def scaled(A: T.Tensor((32, 64), "float16"), B: T.Tensor((32, 96), "float16"),
               D: T.Tensor((64, 96), "float16")):
        with T.Kernel(1, threads=128) as bx:
            A_s = T.alloc_shared((32, 64), "float16")
            B_s = T.alloc_shared((32, 96), "float16")
            C = T.alloc_fragment((64, 96), "float32")
            D_f = T.alloc_fragment((64, 96), "float16")
            T.copy(A, A_s)
            T.copy(B, B_s)
            T.clear(C)
            T.gemm(A_s, B_s, C, transpose_A=True, policy=T.GemmWarpPolicy.FullCol)
            for i, j in T.Parallel(64, 96):
                D_f[i, j] = C[i, j] - 1.0
            T.copy(D_f, D)

    needs_toolchain("gfx90a")
    rng = np.random.default_rng(7)
    a, b = small_ints(rng, (32, 64), "float16"), small_ints(rng, (32, 96), "float16")
    d = np.full((64, 96), np.nan, np.float16)
    kernel, _ = run_emulated(scaled, "gfx90a", emu_dir, a, b, d)
    source = kernel.get_kernel_source()
    assert "float C_reg[" in source and "half_t D_f_reg[" in source
    np.testing.assert_array_equal(d, a.astype(np.float64).T @ b - 1)


@pytest.mark.parametrize("dtype", ["float8_e4m3fnuz", "float8_e5m2fnuz"])
def test_emulated_float8_rounding_matches_ml_dtypes(dtype, emu_dir):
    """Every fnuz float8 value through `a * b + a` in float and back: decode, round to nearest
    even and overflow to NaN (0x80) agree with ml_dtypes bit for bit."""
    needs_toolchain("gfx942")
    bits = np.array([b for b in range(256) if b != 0x80], np.uint8)
    rng = np.random.default_rng(8)
    a = bits.view(np_dtype(dtype))
    b = rng.permutation(bits).view(np_dtype(dtype))
    c = np.zeros_like(a)
    run_emulated(kernels.elementwise(len(a), dtype), "gfx942", emu_dir, a, b, c)
    ref = (a.astype(np.float32) * b.astype(np.float32) + a.astype(np.float32)).astype(np_dtype(dtype))
    np.testing.assert_array_equal(c.view(np.uint8), ref.view(np.uint8))


def test_emulated_split_k_atomics(emu_dir):
    needs_toolchain("gfx942")
    M, N, K = 50, 40, 96
    rng = np.random.default_rng(4)
    a, b = small_ints(rng, (M, K), "float32"), small_ints(rng, (K, N), "float32")
    c = np.ones((M, N), np.float32)
    run_emulated(kernels.atomic_split_k(M, N, K, 16, 16, 16, 3), "gfx942", emu_dir, a, b, c)
    np.testing.assert_array_equal(c, 1 + a.astype(np.float64) @ b)


@pytest.mark.parametrize("kind,dim,clear", [("max", 1, True), ("sum", 0, False), ("absmax", 1, False)])
def test_emulated_reduce(kind, dim, clear, emu_dir):
    needs_toolchain("gfx90a")
    M, N, bM = 37, 24, 8
    rng = np.random.default_rng(5)
    x = small_ints(rng, (M, N), "float32")
    blocks = -(-M // bM)
    y0 = small_ints(rng, (M,) if dim == 1 else (blocks, N), "float32")
    y = y0.copy()
    run_emulated(kernels.reduce(M, N, kind, dim, clear, bM), "gfx90a", emu_dir, x, y)
    fn = {"max": np.max, "sum": np.sum, "absmax": lambda v, axis: np.max(np.abs(v), axis=axis)}[kind]
    if dim == 1:
        ref = fn(x, axis=1)
    else:
        padded = np.zeros((blocks * bM, N), np.float32)
        padded[:M] = x
        ref = fn(padded.reshape(blocks, bM, N), axis=1)
    if not clear:
        ref = {"max": np.maximum, "sum": np.add, "absmax": np.maximum}[kind](y0, ref)
    np.testing.assert_array_equal(y, ref)


@pytest.mark.parametrize("kind,clear", [("sum", False), ("absmax", True), ("min", False)])
def test_emulated_shuffle_reduction_with_idle_lanes_and_a_ragged_row(kind, clear, emu_dir):
    """6 rows of 100 over 128 threads: groups of 16 lanes, 96 lanes busy, rows not a multiple
    of the group; the shuffles run on every lane."""
    from tilelang_core import language as T

    fn = {"sum": T.reduce_sum, "absmax": T.reduce_absmax, "min": T.reduce_min}[kind]

    @T.prim_func
    def rows(X: T.Tensor((6, 100), "float32"), Y: T.Tensor((6,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            x = T.alloc_shared((6, 100), "float32")
            y = T.alloc_fragment((6,), "float32")
            T.copy(X, x)
            T.copy(Y, y)
            fn(x, y, dim=1, clear=clear)
            T.copy(y, Y)

    needs_toolchain("gfx942")
    rng = np.random.default_rng(9)
    x, y0 = small_ints(rng, (6, 100), "float32"), small_ints(rng, (6,), "float32")
    y = y0.copy()
    kernel, _ = run_emulated(rows, "gfx942", emu_dir, x, y)
    assert "tl_shfl_xor(" in kernel.get_kernel_source() and ", 8, 16)" in kernel.get_kernel_source()
    ref = {"sum": x.sum(1), "absmax": np.abs(x).max(1), "min": x.min(1)}[kind]
    if not clear:
        ref = {"sum": np.add, "min": np.minimum}[kind](y0, ref)
    np.testing.assert_array_equal(y, ref)


def test_emulated_cumsum_symbolic_and_assert(emu_dir, capfd):
    needs_toolchain("gfx942")
    rng = np.random.default_rng(6)
    x = small_ints(rng, (9, 13), "float32")
    y = np.full_like(x, np.nan)
    run_emulated(kernels.cumsum(9, 13, 1, True), "gfx942", emu_dir, x, y)
    np.testing.assert_array_equal(y, np.flip(np.cumsum(np.flip(x, 1), axis=1), 1))

    x = small_ints(rng, (100, 4), "float32")
    y = np.full_like(x, np.nan)
    run_emulated(kernels.symbolic_scale(), "gfx942", emu_dir, x, y)
    np.testing.assert_array_equal(y, x * 3 + 1)

    y = np.zeros(4, np.float32)
    _, failed = run_emulated(kernels.printing(4), "gfx942", emu_dir, np.arange(4, dtype=np.float32), y)
    assert failed == 0 and "tile: s[3] = 3.000000" in capfd.readouterr().out
    _, failed = run_emulated(kernels.printing(4), "gfx942", emu_dir, np.full(4, 5000, np.float32), y)
    assert failed == 1 and "value out of range" in capfd.readouterr().out
