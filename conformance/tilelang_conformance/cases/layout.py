"""Fragments that stay in registers: a GEMM whose A operand is a fragment (the "rs" form,
FlashAttention's P @ V), chains of elementwise ops, casts and reductions between fragments,
and a reduction result read back as a replica inside a 2-D loop. Every target must compute
these right; targets with matrix instructions keep them in registers (layout inference)."""
from __future__ import annotations

import numpy as np

from tilelang_core import language as T

from ..case import Arg, Spec, case

M, N, K = 64, 64, 64


def rs_gemm_kernel(m: int, n: int, k: int, threads: int = 128):
    """C = relu(A * 0.5) @ B, with relu(A * 0.5) computed into a float16 fragment that feeds
    T.gemm as its A operand."""

    @T.prim_func
    def main(A: T.Tensor((m, k), "float16"), B: T.Tensor((k, n), "float16"), C: T.Tensor((m, n), "float32")):
        with T.Kernel(1, threads=threads) as bx:
            A_s = T.alloc_shared((m, k), "float16")
            B_s = T.alloc_shared((k, n), "float16")
            S = T.alloc_fragment((m, k), "float32")
            P = T.alloc_fragment((m, k), "float16")
            acc = T.alloc_fragment((m, n), "float32")
            T.copy(A, A_s)
            T.copy(B, B_s)
            T.gemm(A_s, B_s, S, clear_accum=True)  # S = A @ B (k == n here), an accumulator layout
            for i, j in T.Parallel(m, k):
                S[i, j] = T.max(S[i, j] * 0.125, 0)
            T.copy(S, P)  # a cast between fragments
            T.gemm(P, B_s, acc, clear_accum=True)
            T.copy(acc, C)

    return main


@case("layout.rs_gemm", feature="layout", needs=("float16", "float32"))
def rs_gemm():
    """T.gemm with a fragment as A: the accumulator of one gemm, scaled, clamped and cast,
    feeds the next without leaving registers (where the target has matrix instructions)."""
    def reference(A, B):
        s = np.maximum((A @ B) * 0.125, 0).astype(np.float16).astype(np.float64)
        return {"C": s @ B}

    return Spec(rs_gemm_kernel(M, N, K), (Arg("A", (M, K), "float16", high=1.0), Arg("B", (K, N), "float16", high=1.0),
                                          Arg("C", (M, N), "float32", role="out")),
                reference, tolerance={"C": (2e-2, 2e-1)})


def chained_kernel(m: int, n: int):
    @T.prim_func
    def main(X: T.Tensor((m, n), "float32"), Y: T.Tensor((m, n), "float16"), R: T.Tensor((m,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            x = T.alloc_fragment((m, n), "float32")
            h = T.alloc_fragment((m, n), "float16")
            top = T.alloc_fragment((m,), "float32")
            total = T.alloc_fragment((m,), "float32")
            T.copy(X, x)
            T.reduce_absmax(x, top, dim=1)
            for i, j in T.Parallel(m, n):
                x[i, j] = x[i, j] / top[i]  # the row maximum, read from the local replica
            T.copy(x, h)
            T.reduce_sum(x, total, dim=1)
            for i in T.Parallel(m):
                total[i] = total[i] + top[i]
            T.copy(h, Y)
            T.copy(total, R)

    return main


@case("layout.chained", feature="layout", needs=("float16", "float32"))
def chained():
    """Elementwise ops, a cast, an absmax and a sum between fragments, a replicated row
    statistic read inside a 2-D loop, and a 1-D loop over the replicated results."""
    def reference(X):
        top = np.abs(X).max(axis=1)
        x = X / top[:, None]
        return {"Y": x, "R": x.sum(axis=1) + top}

    return Spec(chained_kernel(32, 64), (Arg("X", (32, 64), "float32"), Arg("Y", (32, 64), "float16", role="out"),
                                         Arg("R", (32,), "float32", role="out")),
                reference, tolerance={"Y": (2e-3, 2e-3), "R": (1e-4, 1e-4)})


def column_reduce_kernel(m: int, n: int):
    @T.prim_func
    def main(X: T.Tensor((m, n), "float32"), R: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            x = T.alloc_fragment((m, n), "float32")
            col = T.alloc_fragment((n,), "float32")
            T.copy(X, x)
            T.reduce_max(x, col, dim=0)
            T.copy(col, R)

    return main


@case("layout.column_reduce", feature="layout", needs=("float32",))
def column_reduce():
    """A reduction along dim 0: its source gets a layout whose columns lie in a warp."""
    return Spec(column_reduce_kernel(64, 32), (Arg("X", (64, 32), "float32"), Arg("R", (32,), "float32", role="out")),
                lambda X: {"R": X.max(axis=0)})
