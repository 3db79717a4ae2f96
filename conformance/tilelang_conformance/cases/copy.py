"""`T.copy` in its forms: a point standing for a block, explicit regions, masked tails,
a transpose through shared memory, dtype conversion, fragments and a 3-D source."""
from __future__ import annotations

from tilelang_core import language as T

from ..case import Arg, Spec, case


def point_kernel(m: int, n: int, bm: int, bn: int, dtype: str):
    """Global -> shared -> global, both copies written as points."""

    @T.prim_func
    def main(A: T.Tensor((m, n), dtype), B: T.Tensor((m, n), dtype)):
        with T.Kernel(T.ceildiv(n, bn), T.ceildiv(m, bm), threads=128) as (bx, by):
            S = T.alloc_shared((bm, bn), dtype)
            T.copy(A[by * bm, bx * bn], S)
            T.copy(S, B[by * bm, bx * bn])

    return main


def _identity(m: int, n: int, dtype: str, kernel) -> Spec:
    return Spec(kernel, [Arg("A", (m, n), dtype), Arg("B", (m, n), dtype, "out")], lambda A: {"B": A})


@case("copy.point", feature="copy", needs=("float16",))
def copy_point():
    """A point A[i, j] stands for the block of the destination's shape (tile multiples)."""
    return _identity(256, 192, "float16", point_kernel(256, 192, 64, 64, "float16"))


@case("copy.tail", feature="copy", needs=("float32",))
def copy_tail():
    """Point copies where the last tiles hang over both edges: loads and stores are masked."""
    return _identity(200, 150, "float32", point_kernel(200, 150, 64, 64, "float32"))


def region_kernel(m: int, n: int, bm: int, bn: int):
    @T.prim_func
    def main(A: T.Tensor((m, n), "float32"), B: T.Tensor((m, n), "float32")):
        with T.Kernel(T.ceildiv(n, bn), T.ceildiv(m, bm), threads=128) as (bx, by):
            S = T.alloc_shared((bm, bn), "float32")
            T.copy(A[by * bm:(by + 1) * bm, bx * bn:(bx + 1) * bn], S)
            T.copy(S[0:bm, 0:bn], B[by * bm:(by + 1) * bm, bx * bn:(bx + 1) * bn])

    return main


@case("copy.region", feature="copy", needs=("float32",))
def copy_region():
    """Copies written as explicit slices on both sides."""
    return _identity(128, 96, "float32", region_kernel(128, 96, 32, 32))


def transpose_kernel(m: int, n: int, bm: int, bn: int):
    @T.prim_func
    def main(A: T.Tensor((m, n), "float32"), B: T.Tensor((n, m), "float32")):
        with T.Kernel(T.ceildiv(n, bn), T.ceildiv(m, bm), threads=128) as (bx, by):
            S = T.alloc_shared((bm, bn), "float32")
            F = T.alloc_fragment((bn, bm), "float32")
            T.copy(A[by * bm, bx * bn], S)
            for j, i in T.Parallel(bn, bm):
                F[j, i] = S[i, j]
            T.copy(F, B[bx * bn, by * bm])

    return main


@case("copy.transpose", feature="copy", needs=("float32",))
def copy_transpose():
    """B = A^T: a tile in, transposed through shared memory, out at the mirrored block (tails)."""
    m, n = 100, 72
    return Spec(transpose_kernel(m, n, 32, 32), [Arg("A", (m, n), "float32"), Arg("B", (n, m), "float32", "out")],
                lambda A: {"B": A.T})


def cast_kernel(m: int, n: int, bm: int, bn: int):
    @T.prim_func
    def main(A: T.Tensor((m, n), "float32"), B: T.Tensor((m, n), "float16")):
        with T.Kernel(T.ceildiv(n, bn), T.ceildiv(m, bm), threads=128) as (bx, by):
            F = T.alloc_fragment((bm, bn), "float32")
            H = T.alloc_shared((bm, bn), "float16")
            T.copy(A[by * bm, bx * bn], F)
            T.copy(F, H)
            T.copy(H, B[by * bm, bx * bn])

    return main


@case("copy.cast", feature="copy", needs=("float32", "float16"))
def copy_cast():
    """A float32 fragment copied into a float16 shared tile: T.copy converts the dtype."""
    m, n = 96, 80
    return Spec(cast_kernel(m, n, 32, 32), [Arg("A", (m, n), "float32"), Arg("B", (m, n), "float16", "out")],
                lambda A: {"B": A})


def roundtrip_kernel(m: int, n: int, bm: int, bn: int):
    @T.prim_func
    def main(A: T.Tensor((m, n), "bfloat16"), B: T.Tensor((m, n), "bfloat16")):
        with T.Kernel(T.ceildiv(n, bn), T.ceildiv(m, bm), threads=128) as (bx, by):
            F = T.alloc_fragment((bm, bn), "bfloat16")
            S = T.alloc_shared((bm, bn), "bfloat16")
            G = T.alloc_fragment((bm, bn), "bfloat16")
            T.copy(A[by * bm, bx * bn], F)
            T.copy(F, S)
            T.copy(S, G)
            T.copy(G, B[by * bm, bx * bn])

    return main


@case("copy.fragment", feature="copy", needs=("bfloat16",))
def copy_fragment():
    """global -> fragment -> shared -> fragment -> global, in bfloat16."""
    return _identity(64, 128, "bfloat16", roundtrip_kernel(64, 128, 32, 64))


def slab_kernel(b: int, m: int, n: int, bm: int, bn: int):
    @T.prim_func
    def main(A: T.Tensor((b, m, n), "float32"), B: T.Tensor((b, n, m), "float32")):
        with T.Kernel(T.ceildiv(n, bn), T.ceildiv(m, bm), b, threads=128) as (bx, by, bz):
            S = T.alloc_shared((bm, bn), "float32")
            T.copy(A[bz, by * bm, bx * bn], S)
            for j, i in T.Parallel(bn, bm):
                if by * bm + i < m and bx * bn + j < n:
                    B[bz, bx * bn + j, by * bm + i] = S[i, j] * 2.0

    return main


@case("copy.3d", feature="copy", needs=("float32",))
def copy_3d():
    """A point in a 3-D tensor fills a 2-D tile (the leading dim of extent 1 is squeezed)."""
    b, m, n = 3, 40, 56
    return Spec(slab_kernel(b, m, n, 32, 32),
                [Arg("A", (b, m, n), "float32"), Arg("B", (b, n, m), "float32", "out")],
                lambda A: {"B": 2 * A.transpose(0, 2, 1)})
