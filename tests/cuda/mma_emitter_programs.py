"""TileLang's hand-written tensor-core GEMM (`gemm/example_gemm_intrinsics.py`), written the way
that example writes it: `T.alloc_local` registers, swizzled shared tiles from
`get_swizzle_layout`, `TensorCoreIntrinEmitter.ldmatrix_a / ldmatrix_b / mma / stmatrix`
inside `T.Pipelined`, and a 4-D shared C tile stored back to global memory.

`tl_matmul(...)` builds the kernel (the example's defaults: 2 x 2 warps of 64 x 64, chunk 32,
A row-major, B transposed); the other arguments reach the emitter's other forms. `reference`
is its float64 NumPy reference.
"""
from __future__ import annotations

import numpy as np
import tvm

from tilelang_core import language as T
from tilelang_cuda.compat.intrinsics import get_swizzle_layout
from tilelang_cuda.compat.intrinsics.macro.mma_macro_generator import TensorCoreIntrinEmitter

__test__ = False


def make_swizzle_layout(shared_buf):
    """The example's helper: the 16-byte XOR swizzle where a row is 64 bytes, else identity."""
    dtype, shape = shared_buf.dtype, shared_buf.shape
    if int(shape[-1]) * tvm.runtime.DataType(str(dtype)).bits != 512:
        return T.Layout(shape, lambda *args: args)
    return T.Layout(shape, lambda i, j: list(get_swizzle_layout(i, j, shape[-1], dtype)))


def tl_matmul(M: int, N: int, K: int, in_dtype: str, out_dtype: str, accum_dtype: str, a_transposed: bool = False,
              b_transposed: bool = True, block_row_warps: int = 2, block_col_warps: int = 2,
              warp_row_tiles: int = 64, warp_col_tiles: int = 64, chunk: int = 32, stage: int = 2):
    """C = A @ B (A stored (K, M) when `a_transposed`; B stored (N, K) when `b_transposed`)."""
    emitter = TensorCoreIntrinEmitter(
        a_dtype=in_dtype, b_dtype=in_dtype, accum_dtype=accum_dtype, a_transposed=a_transposed,
        b_transposed=b_transposed, block_row_warps=block_row_warps, block_col_warps=block_col_warps,
        warp_row_tiles=warp_row_tiles, warp_col_tiles=warp_col_tiles, chunk=chunk)
    micro_x, micro_y, micro_k = emitter.micro_size_x, emitter.micro_size_y, emitter.micro_size_k
    block_M, block_N, block_K = block_row_warps * warp_row_tiles, block_col_warps * warp_col_tiles, chunk
    A_shape, A_shared_shape = ((K, M), (block_K, block_M)) if a_transposed else ((M, K), (block_M, block_K))
    B_shape, B_shared_shape = ((N, K), (block_N, block_K)) if b_transposed else ((K, N), (block_K, block_N))
    C_shared_shape = (block_M // micro_x, block_N // micro_y, micro_x, micro_y)
    threads = 32 * block_row_warps * block_col_warps
    warp_rows, warp_cols = emitter.warp_rows, emitter.warp_cols
    local_a, local_b, local_c = emitter.local_size_a, emitter.local_size_b, emitter.local_size_out

    @T.prim_func
    def main(A: T.Tensor(A_shape, in_dtype), B: T.Tensor(B_shape, in_dtype), C: T.Tensor((M, N), out_dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_shared = T.alloc_shared(A_shared_shape, in_dtype, scope="shared.dyn")
            B_shared = T.alloc_shared(B_shared_shape, in_dtype, scope="shared.dyn")
            C_shared = T.alloc_shared(C_shared_shape, out_dtype, scope="shared.dyn")
            A_local = T.alloc_local((warp_rows * local_a), in_dtype)
            B_local = T.alloc_local((warp_cols * local_b), in_dtype)
            C_local = T.alloc_local((warp_rows * warp_cols * local_c), accum_dtype)
            T.annotate_layout({A_shared: make_swizzle_layout(A_shared), B_shared: make_swizzle_layout(B_shared)})
            T.use_swizzle(panel_size=10)
            T.clear(C_local)
            for ko in T.Pipelined(K // block_K, num_stages=stage):
                if a_transposed:
                    for k, i in T.Parallel(block_K, block_M):
                        A_shared[k, i] = A[ko * block_K + k, by * block_M + i]
                else:
                    for i, k in T.Parallel(block_M, block_K):
                        A_shared[i, k] = A[by * block_M + i, ko * block_K + k]
                if b_transposed:
                    for j, k in T.Parallel(block_N, block_K):
                        B_shared[j, k] = B[bx * block_N + j, ko * block_K + k]
                else:
                    for k, j in T.Parallel(block_K, block_N):
                        B_shared[k, j] = B[ko * block_K + k, bx * block_N + j]
                for ki in T.serial(0, block_K // micro_k):
                    emitter.ldmatrix_a(A_local, A_shared, ki)
                    emitter.ldmatrix_b(B_local, B_shared, ki)
                    emitter.mma(A_local, B_local, C_local)
            emitter.stmatrix(C_local, C_shared)
            for i, j in T.Parallel(block_M, block_N):
                C[by * block_M + i, bx * block_N + j] = C_shared[i // micro_x, j // micro_y, i % micro_x, j % micro_y]

    return main


def inputs(M: int, N: int, K: int, in_dtype: str, a_transposed: bool, b_transposed: bool, seed: int = 0):
    """(A, B) as the kernel takes them: small integers for int8, [-1, 1) otherwise."""
    rng = np.random.default_rng(seed)
    a_shape = (K, M) if a_transposed else (M, K)
    b_shape = (N, K) if b_transposed else (K, N)
    if in_dtype == "int8":
        return (rng.integers(-128, 128, a_shape).astype(np.int8), rng.integers(-128, 128, b_shape).astype(np.int8))
    return rng.uniform(-1, 1, a_shape).astype(in_dtype), rng.uniform(-1, 1, b_shape).astype(in_dtype)


def reference(a: np.ndarray, b: np.ndarray, a_transposed: bool, b_transposed: bool) -> np.ndarray:
    """A @ B in float64 (int64 for integers), undoing the storage transposes."""
    wide = np.int64 if a.dtype == np.int8 else np.float64
    a, b = a.astype(wide), b.astype(wide)
    return (a.T if a_transposed else a) @ (b.T if b_transposed else b)
