"""Atomics: many threads of many blocks update the same elements. One case per (op, dtype)
probes the capability `atomic_<op>.<dtype>`; another adds whole tiles at once.

Float inputs are small integers, so every sum is exact in any order, even in bfloat16: a
mismatch means a lost update, not rounding.
"""
from __future__ import annotations

import numpy as np

from tilelang_core import language as T

from ..case import Arg, Case, Spec, add, case

__all__ = ["ATOMICS", "atomic_case"]

ATOMICS = ("atomic_add.float32", "atomic_add.float64", "atomic_add.float16", "atomic_add.bfloat16",
           "atomic_add.int32", "atomic_max.float32", "atomic_min.float32", "atomic_max.int32",
           "atomic_min.int32")

M, N, BLOCK_M = 64, 48, 8  # 8 blocks x 8 rows update each of the N outputs


def scatter_kernel(op: str, dtype: str, m: int = M, n: int = N, bm: int = BLOCK_M):
    """Y[j] (op)= X[i, j] for every row i, from T.Parallel over a tile."""
    atomic = {"add": T.atomic_add, "max": T.atomic_max, "min": T.atomic_min}[op]

    @T.prim_func
    def main(X: T.Tensor((m, n), dtype), Y: T.Tensor((n,), dtype)):
        with T.Kernel(T.ceildiv(m, bm), threads=128) as bx:
            x = T.alloc_fragment((bm, n), dtype)
            T.copy(X[bx * bm, 0], x)
            for i, j in T.Parallel(bm, n):
                atomic(Y[j], x[i, j])

    return main


def _reference(op: str):
    def reference(X, Y):
        if op == "add":
            return {"Y": Y + X.sum(0)}
        if op == "max":
            return {"Y": np.maximum(Y, X.max(0))}
        return {"Y": np.minimum(Y, X.min(0))}

    return reference


def atomic_spec(op: str, dtype: str) -> Spec:
    # integer-valued inputs (|x| <= 3, sums <= 256 in magnitude) keep float sums exact
    args = [Arg("X", (M, N), dtype, int_high=3, integral=True),
            Arg("Y", (N,), dtype, "inout", int_high=3, integral=True)]
    return Spec(scatter_kernel(op, dtype), args, _reference(op))


def atomic_case(capability: str) -> Case:
    """The probe of `atomic_<op>.<dtype>`."""
    op_name, _, dtype = capability.partition(".")
    op = op_name.removeprefix("atomic_")
    return Case(f"atomic.{op}.{dtype}", "atomic", (capability, dtype), lambda target: atomic_spec(op, dtype),
                f"T.atomic_{op} of {M}x{N} {dtype} values into {N} elements", claims=(capability,))


for _capability in ATOMICS:
    add(atomic_case(_capability))


def tile_kernel(s: int, m: int, n: int):
    @T.prim_func
    def main(X: T.Tensor((s, m, n), "float32"), Y: T.Tensor((m, n), "float32")):
        with T.Kernel(s, threads=128) as bx:
            x = T.alloc_fragment((m, n), "float32")
            T.copy(X[bx, 0, 0], x)
            T.atomic_add(Y[0, 0], x)

    return main


@case("atomic.add.tile", feature="atomic", needs=("atomic_add.float32",))
def atomic_tile():
    """T.atomic_add(Y[0, 0], tile): a whole tile added at once by every block."""
    s, m, n = 6, 32, 40
    return Spec(tile_kernel(s, m, n),
                [Arg("X", (s, m, n), "float32", int_high=4, integral=True),
                 Arg("Y", (m, n), "float32", "inout", int_high=4, integral=True)],
                lambda X, Y: {"Y": Y + X.sum(0)})
