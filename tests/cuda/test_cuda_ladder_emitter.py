"""TileLang's `TensorCoreIntrinEmitterWithLadderTransform`: B stored pre-permuted in 16 x 16
tiles by each transform kind (the permutation each kind's addresses imply, built here in
NumPy), read by the emitter and multiplied; the lowered kernel runs in the NumPy emulator of
ldmatrix / mma.sync against A @ B^T, and NVRTC compiles it."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import tilelang_core
from tilelang_core import language as T
from tilelang_core.jit.api import lower
from tilelang_core.jit.options import CompileOptions
from tilelang_core.plugin import get_plugin_manager

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tir_emulator import run_kernel  # noqa: E402

M = N = K = 32
BM = BN = 16


def ladder_gemm(kind: int):
    emitter = T.TensorCoreIntrinEmitterWithLadderTransform(
        a_dtype="float16", b_dtype="float16", accum_dtype="float32", a_transposed=False, b_transposed=True,
        block_row_warps=1, block_col_warps=1, warp_row_tiles=16, warp_col_tiles=16, chunk=K,
        transform_kind_b=kind)
    b_shape = (N, K) if kind == 0 else (N // 16, K // 16, 16, 16)
    b_shared = (BN, K) if kind == 0 else (BN // 16, K // 16, 16, 16)

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor(b_shape, "float16"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(N // BN, M // BM, threads=32) as (bx, by):
            A_shared = T.alloc_shared((BM, K), "float16")
            B_shared = T.alloc_shared(b_shared, "float16")
            A_local = T.alloc_local((emitter.local_size_a,), "float16")
            B_local = T.alloc_local((emitter.local_size_b,), "float16")
            C_local = T.alloc_local((emitter.local_size_out,), "float32")
            C_shared = T.alloc_shared((1, 1, 16, 16), "float32")
            T.copy(A[by * BM, 0], A_shared)
            if kind == 0:
                T.copy(B[bx * BN, 0], B_shared)
            else:
                T.copy(B[bx * (BN // 16), 0, 0, 0], B_shared)
            T.clear(C_local)
            for ki in T.serial(K // 16):
                emitter.ldmatrix_a(A_local, A_shared, ki)
                emitter.ldmatrix_b(B_local, B_shared, ki)
                emitter.mma(A_local, B_local, C_local)
            emitter.stmatrix(C_local, C_shared)
            for i, j in T.Parallel(BM, BN):
                C[by * BM + i, bx * BN + j] = C_shared[0, 0, i, j]

    return main


def _tiles(b: np.ndarray) -> np.ndarray:
    return b.reshape(N // 16, 16, K // 16, 16).transpose(0, 2, 1, 3).copy()


def _permute(tile: np.ndarray, kind: int) -> np.ndarray:
    """The 16 x 16 (n, k) tile as kind `kind` stores it."""
    out = np.empty(256, tile.dtype)
    if kind == 2:  # lane l's ldmatrix row (row l // 2, half l % 2) holds what kind 1 reads there
        for lane in range(32):
            rows = tile[lane % 8 + (lane // 16) * 8, ((lane // 8) % 2) * 8:][:8]
            out[lane * 8:lane * 8 + 8] = rows
    else:  # kind 3: lane L's 8 registers in order, as ldmatrix would give them
        for lane in range(32):
            for e in range(8):
                r, h = e // 2, e % 2
                out[lane * 8 + e] = tile[lane // 4 + (r // 2) * 8, (r % 2) * 8 + 2 * (lane % 4) + h]
    return out.reshape(16, 16)


def _stored(b: np.ndarray, kind: int) -> np.ndarray:
    if kind == 0:
        return b
    tiles = _tiles(b)
    if kind == 1:
        return tiles
    return np.stack([np.stack([_permute(t, kind) for t in row]) for row in tiles])


def _lowered(func, arch="sm_80"):
    return lower(func, get_plugin_manager().parse_target(f"cuda/{arch}"), CompileOptions())


@pytest.mark.parametrize("kind", [0, 1, 2, 3])
def test_each_transform_kind_multiplies_like_numpy(kind):
    rng = np.random.default_rng(kind)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((N, K)).astype(np.float16)
    c = np.zeros((M, N), np.float32)
    run_kernel(_lowered(ladder_gemm(kind)), a, _stored(b, kind), c)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64).T, rtol=1e-3, atol=1e-3)


def test_nvrtc_compiles_the_ladder_kernel():
    source = tilelang_core.compile(ladder_gemm(2), target="cuda/sm_80", cache=False).get_kernel_source()
    assert "tl::ldmatrix_x4(" in source and "tl::mma_m16n8k16_f16_f32(" in source


def test_transformed_b_must_be_stored_n_k():
    with pytest.raises(ValueError, match="reads B stored \\(n, k\\); give b_transposed=True"):
        T.TensorCoreIntrinEmitterWithLadderTransform(b_transposed=False, warp_row_tiles=16, warp_col_tiles=16,
                                                     transform_kind_b=1)
    with pytest.raises(ValueError, match="must be 0, 1, 2 or 3"):
        T.TensorCoreIntrinEmitterWithLadderTransform(warp_row_tiles=16, warp_col_tiles=16, transform_kind_b=7)
