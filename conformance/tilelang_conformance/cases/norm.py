"""Row-wise fused kernels built from reductions and T.Parallel: softmax, layernorm, rmsnorm."""
from __future__ import annotations

import numpy as np

from tilelang_core import language as T

from ..case import Arg, Spec, case

M, N, BLOCK_M = 100, 256, 8  # 13 blocks, the last one masked


def softmax_kernel(m: int, n: int, bm: int, dtype: str):
    log2e = 1.44269504

    @T.prim_func
    def main(X: T.Tensor((m, n), dtype), Y: T.Tensor((m, n), dtype)):
        with T.Kernel(T.ceildiv(m, bm), threads=128) as bx:
            x = T.alloc_fragment((bm, n), "float32")
            row_max = T.alloc_fragment((bm,), "float32")
            row_sum = T.alloc_fragment((bm,), "float32")
            T.copy(X[bx * bm, 0], x)
            T.reduce_max(x, row_max, dim=1)
            for i, j in T.Parallel(bm, n):
                x[i, j] = T.exp2((x[i, j] - row_max[i]) * log2e)
            T.reduce_sum(x, row_sum, dim=1)
            for i, j in T.Parallel(bm, n):
                x[i, j] = x[i, j] / row_sum[i]
            T.copy(x, Y[bx * bm, 0])

    return main


def _softmax(X):
    e = np.exp(X - X.max(1, keepdims=True))
    return {"Y": e / e.sum(1, keepdims=True)}


@case("softmax.float32", feature="fused", needs=("float32",))
def softmax_float32():
    """Row softmax (max, exp2, sum, divide) on float32, block_M rows per block."""
    return Spec(softmax_kernel(M, N, BLOCK_M, "float32"),
                [Arg("X", (M, N), "float32", high=4.0), Arg("Y", (M, N), "float32", "out")], _softmax,
                {"Y": (1e-5, 1e-6)})


@case("softmax.float16", feature="fused", needs=("float16", "float32"))
def softmax_float16():
    """Row softmax with float16 input and output, float32 math."""
    return Spec(softmax_kernel(M, N, BLOCK_M, "float16"),
                [Arg("X", (M, N), "float16", high=4.0), Arg("Y", (M, N), "float16", "out")], _softmax,
                {"Y": (2e-3, 1e-5)})


def layernorm_kernel(m: int, n: int, bm: int, eps: float):
    @T.prim_func
    def main(X: T.Tensor((m, n), "float32"), G: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32"),
             Y: T.Tensor((m, n), "float32")):
        with T.Kernel(T.ceildiv(m, bm), threads=128) as bx:
            x = T.alloc_fragment((bm, n), "float32")
            d = T.alloc_fragment((bm, n), "float32")
            total = T.alloc_fragment((bm,), "float32")
            var = T.alloc_fragment((bm,), "float32")
            T.copy(X[bx * bm, 0], x)
            T.reduce_sum(x, total, dim=1)
            for i, j in T.Parallel(bm, n):
                x[i, j] = x[i, j] - total[i] / n
                d[i, j] = x[i, j] * x[i, j]
            T.reduce_sum(d, var, dim=1)
            for i, j in T.Parallel(bm, n):
                x[i, j] = x[i, j] * T.rsqrt(var[i] / n + eps) * G[j] + B[j]
            T.copy(x, Y[bx * bm, 0])

    return main


@case("layernorm", feature="fused", needs=("float32",))
def layernorm():
    """LayerNorm over rows with weight and bias (eps 1e-5), float32."""
    eps = 1e-5

    def reference(X, G, B):
        mu = X.mean(1, keepdims=True)
        var = ((X - mu) ** 2).mean(1, keepdims=True)
        return {"Y": (X - mu) / np.sqrt(var + eps) * G + B}

    return Spec(layernorm_kernel(M, N, BLOCK_M, eps),
                [Arg("X", (M, N), "float32", high=3.0), Arg("G", (N,), "float32"), Arg("B", (N,), "float32"),
                 Arg("Y", (M, N), "float32", "out")], reference, {"Y": (1e-4, 1e-4)})


def rmsnorm_kernel(m: int, n: int, bm: int, eps: float):
    @T.prim_func
    def main(X: T.Tensor((m, n), "float16"), W: T.Tensor((n,), "float16"), Y: T.Tensor((m, n), "float16")):
        with T.Kernel(T.ceildiv(m, bm), threads=128) as bx:
            x = T.alloc_fragment((bm, n), "float32")
            sq = T.alloc_fragment((bm, n), "float32")
            ms = T.alloc_fragment((bm,), "float32")
            T.copy(X[bx * bm, 0], x)
            for i, j in T.Parallel(bm, n):
                sq[i, j] = x[i, j] * x[i, j]
            T.reduce_sum(sq, ms, dim=1)
            for i, j in T.Parallel(bm, n):
                x[i, j] = x[i, j] * T.rsqrt(ms[i] / n + eps) * T.cast(W[j], "float32")
            T.copy(x, Y[bx * bm, 0])

    return main


@case("rmsnorm", feature="fused", needs=("float16", "float32"))
def rmsnorm():
    """RMSNorm over rows with a weight (eps 1e-6), float16 in and out, float32 math."""
    eps = 1e-6

    def reference(X, W):
        return {"Y": X / np.sqrt((X * X).mean(1, keepdims=True) + eps) * W}

    return Spec(rmsnorm_kernel(M, N, BLOCK_M, eps),
                [Arg("X", (M, N), "float16", high=2.0), Arg("W", (N,), "float16"),
                 Arg("Y", (M, N), "float16", "out")], reference, {"Y": (2e-3, 2e-3)})
