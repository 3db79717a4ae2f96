"""Kernels the autotuner tests tune, importable from a fresh process (`autotuner.programs`
with `tests/` on the path, the name pytest gives this module)."""
from __future__ import annotations

import itertools

import tilelang_core as tilelang
from tilelang_core.autotuner import autotune
from tilelang_core import language as T

# 8 configs that compile on the CPU, then one that asks for more threads than a block has
GEMM_CONFIGS = [
    dict(block_M=bm, block_N=bn, block_K=32, num_stages=stages, threads=128)
    for bm, bn, stages in itertools.product((16, 32), (32, 64), (1, 2))
] + [dict(block_M=32, block_N=32, block_K=32, num_stages=1, threads=4096)]


def gemm_reference(A, B):
    return A @ B


def gemm(M, N, K, block_M=32, block_N=32, block_K=32, num_stages=1, threads=128):
    """C = A @ B in float32 (a plain factory: tuned through `AutoTuner` or `@autotune`)."""

    @T.prim_func
    def main(A: T.Tensor((M, K), "float32"), B: T.Tensor((K, N), "float32"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), "float32")
            B_shared = T.alloc_shared((block_K, block_N), "float32")
            C_local = T.alloc_fragment((block_M, block_N), "float32")
            T.clear(C_local)
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[by * block_M, ko * block_K], A_shared)
                T.copy(B[ko * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return main


tuned_gemm = autotune(configs=GEMM_CONFIGS, warmup=2, rep=5, ref_prog=gemm_reference)(
    tilelang.jit(out_idx=[2], target="cpu")(gemm))


def scale(n, factor=2.0, block=64):
    """Y = X * factor: a cheap kernel for the tests of the tuner's rules."""

    @T.prim_func
    def main(X: T.Tensor((n,), "float32"), Y: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, block), threads=32) as bx:
            for i in T.Parallel(block):
                if bx * block + i < n:
                    Y[bx * block + i] = X[bx * block + i] * factor

    return main


@tilelang.jit(target="cpu")
def eager_scale(X, block: int = 64):
    N = T.const("N")
    X: T.Tensor((N,), "float32")
    Y = T.empty((N,), "float32")
    with T.Kernel(T.ceildiv(N, block), threads=32) as bx:
        for i in T.Parallel(block):
            if bx * block + i < N:
                Y[bx * block + i] = X[bx * block + i] * 3.0
    return Y
