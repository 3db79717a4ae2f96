"""Vector accesses for T.Parallel nests over memory (`transform/vectorize.py`): a copy or an
elementwise nest over contiguous rows moves 16 bytes per access on SIMT targets when every
access is a whole aligned vector; ragged extents use narrower vectors or stay scalar,
symbolic shapes and guarded loads stay scalar.

Evidence: cuda/sm_90a and hip/gfx942 sources show the vector types (`uint4` / `uint2`,
`tl_bits32x4`); the HIP host emulation (the SIMT code, threads as host threads) and the CPU
match NumPy at aligned and ragged sizes, on inputs poisoned outputs are written over."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import tilelang_core as tilelang
from tilelang_core import language as T

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "hip"))
from hip_emulator import emulate, host_compiler  # noqa: E402

# 16-byte vectors of float16 (raw words on both) and of float32
VECTOR16 = {"cuda/sm_90a": "(*(uint4*)", "hip/gfx942": "(*(tl_bits32x4*)"}
FLOAT4 = {"cuda/sm_90a": "(*(uint4*)", "hip/gfx942": "(*(tl_float32x4*)"}


def axpy(M, N, bm, dtype="float16", threads=128):
    """B = A (a copy), then C = A * 2 + B, tiles of bm rows over whole rows of N."""

    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, bm), threads=threads) as bx:
            for i, j in T.Parallel(bm, N):
                B[bx * bm + i, j] = A[bx * bm + i, j]
            for i, j in T.Parallel(bm, N):
                C[bx * bm + i, j] = A[bx * bm + i, j] * T.cast(2.0, dtype) + B[bx * bm + i, j]

    return main


def scaled_rows(N, dtype="float32"):
    """Y[i, j] = X[i, j] * s[i] over a symbolic number of rows (a broadcast load)."""
    M = T.symbolic("M")

    @T.prim_func
    def main(X: T.Tensor((M, N), dtype), S: T.Tensor((M,), dtype), Y: T.Tensor((M, N), dtype)):
        with T.Kernel(M, threads=64) as bx:
            for j in T.Parallel(N):
                Y[bx, j] = X[bx, j] * S[bx]

    return main


def symbolic_row_length(dtype="float32"):
    """Tiles of 64 columns of a tensor whose row length is symbolic: rows may not be whole
    vectors, so the accesses stay scalar."""
    N = T.symbolic("N")

    @T.prim_func
    def main(X: T.Tensor((4, N), dtype), Y: T.Tensor((4, N), dtype)):
        with T.Kernel(4, T.ceildiv(N, 64), threads=64) as (bx, by):
            for j in T.Parallel(64):
                Y[bx, by * 64 + j] = X[bx, by * 64 + j] + 1.0

    return main


def guarded(N, dtype="float32"):
    @T.prim_func
    def main(X: T.Tensor((4, N), dtype), Y: T.Tensor((4, N), dtype)):
        with T.Kernel(4, threads=64) as bx:
            for j in T.Parallel(N):
                Y[bx, j] = T.if_then_else(j < N - 1, X[bx, j], T.cast(0, dtype))

    return main


@pytest.fixture(scope="module")
def emu_dir(tmp_path_factory):
    if host_compiler() is None:
        pytest.skip("no host C++20 compiler for the HIP emulation")
    return tmp_path_factory.mktemp("vectorize-emu")


@pytest.mark.parametrize("target", sorted(VECTOR16))
def test_copy_and_elementwise_move_16_bytes(target):
    kernel = tilelang.compile(axpy(64, 64, 16), target=target)
    source = kernel.get_kernel_source()
    assert source.count(VECTOR16[target]) >= 5, source  # the copy's load and store, 2 loads + 1 store
    assert "A_vec[8]" in source and "C_vec[8]" in source
    assert kernel.meta.extra["tensor_alignment"] == 16  # the call checks each tensor's address


@pytest.mark.parametrize("target", sorted(VECTOR16))
def test_ragged_rows_take_narrower_vectors_or_none(target):
    narrow = tilelang.compile(axpy(8, 30, 4, "float32"), target=target).get_kernel_source()
    assert VECTOR16[target] not in narrow
    assert ("(*(uint2*)" if target.startswith("cuda") else "(*(tl_float32x2*)") in narrow, narrow
    odd = tilelang.compile(axpy(8, 15, 4, "float32"), target=target)
    assert "(*(" not in odd.get_kernel_source() and "tensor_alignment" not in odd.meta.extra


@pytest.mark.parametrize("target", sorted(VECTOR16))
def test_broadcast_vectorizes_symbolic_rows_and_guards_stay_scalar(target):
    source = tilelang.compile(scaled_rows(64), target=target).get_kernel_source()
    assert FLOAT4[target] in source and "S[bx]" in source  # S[bx] is one scalar per vector
    assert "(*(" not in tilelang.compile(guarded(64), target=target).get_kernel_source()
    assert "(*(" not in tilelang.compile(symbolic_row_length(), target=target).get_kernel_source()


def _check_axpy(run, M, N, bm, dtype, rng):
    a = rng.standard_normal((M, N)).astype(dtype)
    b, c = np.full_like(a, np.nan), np.full_like(a, np.nan)
    run(axpy(M, N, bm, str(np.dtype(dtype)), threads=64), a, b, c)
    np.testing.assert_array_equal(b, a)
    expect = (a.astype(np.float64) * 2 + a.astype(np.float64)).astype(dtype)
    np.testing.assert_allclose(c.astype(np.float64), expect.astype(np.float64), rtol=1e-3 if dtype == np.float16 else 1e-6)


SIZES = [(32, 64, 8, np.float16), (12, 30, 4, np.float32), (9, 15, 3, np.float32)]


@pytest.mark.parametrize("M, N, bm, dtype", SIZES)
def test_results_on_simt_emulation(M, N, bm, dtype, emu_dir):
    def run(func, *args):
        emulate(tilelang.compile(func, target="hip/gfx942"), emu_dir)(*args)

    _check_axpy(run, M, N, bm, dtype, np.random.default_rng(M * N))


@pytest.mark.parametrize("M, N, bm, dtype", SIZES)
def test_results_on_cpu(M, N, bm, dtype):
    def run(func, *args):
        tilelang.compile(func, target="cpu")(*args)

    _check_axpy(run, M, N, bm, dtype, np.random.default_rng(M + N))


def test_machine_code_moves_128_bits():
    """NVRTC's SASS and clang's gfx942 code object use 128-bit global loads and stores."""
    import re

    cuda = tilelang.compile(axpy(64, 64, 16), target="cuda/sm_90a")
    hip = tilelang.compile(axpy(64, 64, 16), target="hip/gfx942")
    try:
        from tilelang_cuda.compile import disassemble as cuda_sass
        from tilelang_hip.compile import disassemble as hip_code

        sass, gcn = cuda_sass(cuda.binary), hip_code(hip.binary, "gfx942")
    except Exception as err:  # noqa: BLE001 - a missing disassembler is a skip, with its reason
        pytest.skip(f"no disassembler here: {err}")
    assert re.search(r"\bLDG\.E\.128", sass) and re.search(r"\bSTG\.E\.128", sass)
    assert "global_load_dwordx4" in gcn and "global_store_dwordx4" in gcn


@pytest.mark.parametrize("M, N, bm, dtype", SIZES)
def test_results_on_opencl(M, N, bm, dtype):
    """A real OpenCL runtime (PoCL's CPU device) runs the vector accesses."""
    device = pytest.importorskip("tilelang_opencl.device")
    try:
        device.device_for("pocl-cpu")
    except device.OpenCLUnavailable as err:
        pytest.skip(f"no PoCL CPU device: {err}")

    def run(func, *args):
        kernel = tilelang.compile(func, target="opencl/pocl-cpu")
        assert ("(*(__global" in kernel.get_kernel_source()) == (N % 2 == 0)
        kernel(*args)

    _check_axpy(run, M, N, bm, dtype, np.random.default_rng(M * N + 1))
