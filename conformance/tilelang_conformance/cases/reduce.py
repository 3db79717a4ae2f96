"""Every reduction (`T.reduce_max/min/sum/abssum/absmax`) over each dim of a tile, clearing
the destination or accumulating into what it holds (`clear=False`); and T.cumsum."""
from __future__ import annotations

import numpy as np

from tilelang_core import language as T

from ..case import Arg, Case, Spec, add, case

KINDS = ("max", "min", "sum", "abssum", "absmax")
_OPS = {"max": "reduce_max", "min": "reduce_min", "sum": "reduce_sum", "abssum": "reduce_abssum",
        "absmax": "reduce_absmax"}

ROWS_M, ROWS_N, ROWS_BLOCK = 100, 64, 8  # dim=1: a masked tail of 4 rows
COLS_M, COLS_N, COLS_BLOCK = 64, 96, 16  # dim=0: one partial result row per block


def rows_kernel(kind: str, clear: bool):
    """Y[i] (op)= reduce_j X[i, j]: block_M whole rows per block."""
    op = getattr(T, _OPS[kind])
    m, n, bm = ROWS_M, ROWS_N, ROWS_BLOCK

    @T.prim_func
    def main(X: T.Tensor((m, n), "float32"), Y: T.Tensor((m,), "float32")):
        with T.Kernel(T.ceildiv(m, bm), threads=32) as bx:
            x = T.alloc_fragment((bm, n), "float32")
            y = T.alloc_fragment((bm,), "float32")
            T.copy(X[bx * bm, 0], x)
            if not clear:
                T.copy(Y[bx * bm], y)
            op(x, y, dim=1, clear=clear)
            T.copy(y, Y[bx * bm])

    return main


def cols_kernel(kind: str, clear: bool):
    """Y[b, j] (op)= reduce_i X[b*bm + i, j]: each block reduces its rows to one row."""
    op = getattr(T, _OPS[kind])
    m, n, bm = COLS_M, COLS_N, COLS_BLOCK

    @T.prim_func
    def main(X: T.Tensor((m, n), "float32"), Y: T.Tensor((m // bm, n), "float32")):
        with T.Kernel(m // bm, threads=32) as bx:
            x = T.alloc_fragment((bm, n), "float32")
            y = T.alloc_fragment((n,), "float32")
            T.copy(X[bx * bm, 0], x)
            if not clear:
                T.copy(Y[bx, 0], y)
            op(x, y, dim=0, clear=clear)
            T.copy(y, Y[bx, 0])

    return main


def _numpy_reduce(kind: str, x: np.ndarray, axis: int) -> np.ndarray:
    if kind == "max":
        return x.max(axis)
    if kind == "min":
        return x.min(axis)
    if kind == "sum":
        return x.sum(axis)
    if kind == "abssum":
        return np.abs(x).sum(axis)
    return np.abs(x).max(axis)


def _combine(kind: str, old: np.ndarray, new: np.ndarray) -> np.ndarray:
    if kind in ("max", "absmax"):
        return np.maximum(old, new)
    if kind == "min":
        return np.minimum(old, new)
    return old + new


def reduce_spec(kind: str, dim: int, clear: bool) -> Spec:
    role = "out" if clear else "inout"
    if dim == 1:
        kernel = rows_kernel(kind, clear)
        args = [Arg("X", (ROWS_M, ROWS_N), "float32"), Arg("Y", (ROWS_M,), "float32", role)]

        def reference(X, Y=None):
            r = _numpy_reduce(kind, X, 1)
            return {"Y": r if clear else _combine(kind, Y, r)}
    else:
        kernel = cols_kernel(kind, clear)
        blocks = COLS_M // COLS_BLOCK
        args = [Arg("X", (COLS_M, COLS_N), "float32"), Arg("Y", (blocks, COLS_N), "float32", role)]

        def reference(X, Y=None):
            r = _numpy_reduce(kind, X.reshape(blocks, COLS_BLOCK, COLS_N), 1)
            return {"Y": r if clear else _combine(kind, Y, r)}

    return Spec(kernel, args, reference, {"Y": (1e-5, 1e-5)})


def reduce_case(kind: str, dim: int, clear: bool) -> Case:
    mode = "clear" if clear else "accumulate"
    return Case(f"reduce.{kind}.dim{dim}.{mode}", "reduce", ("float32",),
                lambda target: reduce_spec(kind, dim, clear),
                f"T.reduce_{kind} over dim {dim}, {mode}")


for _kind in KINDS:
    for _dim in (0, 1):
        for _clear in (True, False):
            add(reduce_case(_kind, _dim, _clear))


def half_rows_kernel(m: int, n: int, bm: int):
    @T.prim_func
    def main(X: T.Tensor((m, n), "float16"), Y: T.Tensor((m,), "float32")):
        with T.Kernel(T.ceildiv(m, bm), threads=64) as bx:
            x = T.alloc_fragment((bm, n), "float32")
            y = T.alloc_fragment((bm,), "float32")
            T.copy(X[bx * bm, 0], x)
            T.reduce_sum(x, y, dim=1)
            T.copy(y, Y[bx * bm])

    return main


@case("reduce.sum.float16_rows", feature="reduce", needs=("float16", "float32"))
def reduce_half():
    """float16 rows loaded into a float32 fragment and summed (a wide row: 512)."""
    m, n = 48, 512
    return Spec(half_rows_kernel(m, n, 16), [Arg("X", (m, n), "float16"), Arg("Y", (m,), "float32", "out")],
                lambda X: {"Y": X.sum(1)}, {"Y": (1e-5, 1e-4)})


def lanes_kernel(m: int, n: int, bm: int, threads: int):
    """Ymax[i] = max_j X[i, j] and Ysum[i] = sum_j X[i, j], with a block's `bm` rows of `n`
    elements spread over `threads` threads: each row's partial results sit in several lanes
    of a warp, which combine them (warp shuffles where the target has them)."""

    @T.prim_func
    def main(X: T.Tensor((m, n), "float32"), Ymax: T.Tensor((m,), "float32"), Ysum: T.Tensor((m,), "float32")):
        with T.Kernel(T.ceildiv(m, bm), threads=threads) as bx:
            x = T.alloc_fragment((bm, n), "float32")
            row_max = T.alloc_fragment((bm,), "float32")
            row_sum = T.alloc_fragment((bm,), "float32")
            T.copy(X[bx * bm, 0], x)
            T.reduce_max(x, row_max, dim=1)
            T.reduce_sum(x, row_sum, dim=1)
            T.copy(row_max, Ymax[bx * bm])
            T.copy(row_sum, Ysum[bx * bm])

    return main


@case("reduce.lanes", feature="reduce", needs=("float32",), claims=("warp_shuffle",))
def reduce_lanes():
    """Row max and row sum of 4 rows x 256 over 128 threads (a masked tail block): the partial
    results of a row are combined across the lanes of a warp, through warp shuffles on a
    target that declares them (the core's reduction lowering reads "warp_shuffle")."""
    m, n = 30, 256
    args = [Arg("X", (m, n), "float32"), Arg("Ymax", (m,), "float32", "out"), Arg("Ysum", (m,), "float32", "out")]
    return Spec(lanes_kernel(m, n, 4, 128), args, lambda X: {"Ymax": X.max(1), "Ysum": X.sum(1)},
                {"Ymax": (0.0, 0.0), "Ysum": (1e-5, 1e-4)})


def cumsum_kernel(m: int, n: int, block: int, dim: int, reverse: bool, in_place: bool):
    """Each block scans its tile along `dim`; the other dim is tiled over the grid."""
    tile = (m, block) if dim == 0 else (block, n)
    grid = T.ceildiv(n, block) if dim == 0 else T.ceildiv(m, block)

    @T.prim_func
    def main(X: T.Tensor((m, n), "float32"), Y: T.Tensor((m, n), "float32")):
        with T.Kernel(grid, threads=64) as bx:
            x = T.alloc_shared(tile, "float32")
            y = T.alloc_shared(tile, "float32")
            if dim == 0:
                T.copy(X[0, bx * block], x)
            else:
                T.copy(X[bx * block, 0], x)
            if in_place:
                T.cumsum(x, dim=dim, reverse=reverse)
                T.copy(x, y)
            else:
                T.cumsum(x, y, dim=dim, reverse=reverse)
            if dim == 0:
                T.copy(y, Y[0, bx * block])
            else:
                T.copy(y, Y[bx * block, 0])

    return main


def _numpy_cumsum(x: np.ndarray, dim: int, reverse: bool) -> np.ndarray:
    if reverse:
        return np.flip(np.cumsum(np.flip(x, dim), dim), dim)
    return np.cumsum(x, dim)


def cumsum_case(dim: int, reverse: bool, in_place: bool) -> Case:
    name = f"cumsum.dim{dim}" + (".reverse" if reverse else "") + (".in_place" if in_place else "")
    m, n = 48, 40

    def make(target):
        return Spec(cumsum_kernel(m, n, 16, dim, reverse, in_place),
                    [Arg("X", (m, n), "float32"), Arg("Y", (m, n), "float32", "out")],
                    lambda X: {"Y": _numpy_cumsum(X, dim, reverse)}, {"Y": (1e-5, 1e-5)})

    return Case(name, "cumsum", ("float32",), make,
                f"T.cumsum along dim {dim}" + (", reversed" if reverse else "") + (", in place" if in_place else ""))


for _dim, _reverse, _in_place in ((0, False, False), (1, False, False), (1, True, False), (0, True, True)):
    add(cumsum_case(_dim, _reverse, _in_place))
