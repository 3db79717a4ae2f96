"""Symbolic shapes (`T.symbolic`): one compiled kernel, run for several bound sizes."""
from __future__ import annotations

from tilelang_core import language as T

from ..case import Arg, Spec, case
from .gemm import gemm_tolerance


def scale_kernel(block: int = 64):
    m = T.symbolic("m")

    @T.prim_func
    def main(X: T.Tensor((m, 4), "float32"), Y: T.Tensor((m, 4), "float32")):
        with T.Kernel(T.ceildiv(m, block), threads=64) as bx:
            for i, j in T.Parallel(block, 4):
                if bx * block + i < m:
                    Y[bx * block + i, j] = X[bx * block + i, j] * 3.0 + 1.0

    return main


@case("symbolic.elementwise", feature="symbolic", needs=("float32",))
def symbolic_elementwise():
    """Y = 3X + 1 with a symbolic row count m bound at call time (m = 1, 37, 1000)."""
    return Spec(scale_kernel(), [Arg("X", ("m", 4), "float32"), Arg("Y", ("m", 4), "float32", "out")],
                lambda X: {"Y": 3 * X + 1}, bindings=({"m": 1}, {"m": 37}, {"m": 1000}))


def copy_kernel(block: int = 32):
    m = T.symbolic("m")

    @T.prim_func
    def main(A: T.Tensor((m, 64), "float16"), B: T.Tensor((m, 64), "float16")):
        with T.Kernel(T.ceildiv(m, block), threads=128) as bx:
            S = T.alloc_shared((block, 64), "float16")
            T.copy(A[bx * block, 0], S)
            T.copy(S, B[bx * block:bx * block + block, 0:64])

    return main


@case("symbolic.copy", feature="symbolic", needs=("float16",))
def symbolic_copy():
    """T.copy of tiles whose last one hangs over a symbolic edge (m = 32, 45, 200)."""
    return Spec(copy_kernel(), [Arg("A", ("m", 64), "float16"), Arg("B", ("m", 64), "float16", "out")],
                lambda A: {"B": A}, bindings=({"m": 32}, {"m": 45}, {"m": 200}))


def gemm_m_kernel(N: int, K: int, bM: int, bN: int, bK: int):  # noqa: N803
    M = T.symbolic("M")  # noqa: N806

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=128) as (bx, by):
            A_s = T.alloc_shared((bM, bK), "float16")
            B_s = T.alloc_shared((bK, bN), "float16")
            C_f = T.alloc_fragment((bM, bN), "float32")
            T.clear(C_f)
            for ko in T.Pipelined(T.ceildiv(K, bK), num_stages=2):
                T.copy(A[by * bM, ko * bK], A_s)
                T.copy(B[ko * bK, bx * bN], B_s)
                T.gemm(A_s, B_s, C_f)
            T.copy(C_f, C[by * bM, bx * bN])

    return main


@case("symbolic.gemm_m", feature="symbolic", needs=("float16", "float32"))
def symbolic_gemm():
    """A float16 GEMM whose M is symbolic (M = 64, 100, 1)."""
    N, K = 64, 96
    return Spec(gemm_m_kernel(N, K, 64, 64, 32),
                [Arg("A", ("M", K), "float16"), Arg("B", (K, N), "float16"), Arg("C", ("M", N), "float32", "out")],
                lambda A, B: {"C": A @ B}, {"C": gemm_tolerance(K, "float16", "float32", "float32")},
                bindings=({"M": 64}, {"M": 100}, {"M": 1}))
