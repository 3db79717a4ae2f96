"""Reductions over an axis (sum, mean, max, min), cumsum and top-k.

sum/mean/max/min and cumsum walk a row in chunks of `block_N` (any row length), `block_M`
rows per block, accumulating in float32 registers; top-k keeps a block's rows in registers
and takes k maxima one after another (k small).
"""
from __future__ import annotations

import builtins

from .. import language as T
from .launch import OpError, check_dtype, contiguous, filled, kernel_for, library, target_for
from .registry import ConfigRule, Operator, get, register
from .rows_vector import cumsum_vector, reduce_vector
from .rows import _UNSET, FLOATS, ROW_TABLE, ROW_TUNE, restore_axis, row_launch, rows_of, torch_spelling

__all__ = ["sum", "mean", "max", "min", "cumsum", "topk"]

CHUNK_TABLE = (
    ConfigRule("block-serial", {"block_M": 8, "block_N": 1024, "threads": 1}),
    # block_M 2 was first a workaround for a core bug that is fixed (a (1, block_N) fragment
    # filled in a serial loop now stays in registers); block_M 1 is not measured yet
    ConfigRule("simt", {"block_M": 2, "block_N": 2048, "warps": 8}),
)
# sum/mean/max/min: on SIMT targets 16-byte loads, one row per block (rows_vector.py)
REDUCE_TABLE = (
    CHUNK_TABLE[0],
    ConfigRule("simt", {"kernel": "vector", "block_M": 2, "block_N": 2048, "warps": 8, "vector_bytes": 16}),
)
CHUNK_TUNE = {"block_M": (2, 4), "block_N": (512, 1024, 2048, 4096), "warps": (4, 8)}
# cumsum: on SIMT targets one row per block, 16-byte pieces scanned in registers and a scan of
# the threads' totals in shared memory (rows_vector.py)
CUMSUM_TABLE = (
    CHUNK_TABLE[0],
    ConfigRule("simt", {"kernel": "vector", "block_M": 2, "block_N": 2048, "warps": 8, "max_warps": 32,
                        "vector_bytes": 16}),
)


def _reduce_kernel(problem: dict, config: dict):
    M, N, dtype, kind = problem["M"], problem["N"], problem["dtype"], problem["kind"]
    out_dtype = problem.get("out_dtype", dtype)
    bM = config["block_M"]
    bN = builtins.min(config["block_N"], 1 << (N - 1).bit_length())
    reducer = {"sum": T.reduce_sum, "mean": T.reduce_sum, "max": T.reduce_max, "min": T.reduce_min}[kind]
    pad = {"sum": 0.0, "mean": 0.0, "max": -T.infinity("float32"), "min": T.infinity("float32")}[kind]
    scale = 1.0 / N if kind == "mean" else 1.0
    ragged = N % bN != 0

    @T.prim_func
    def main(X: T.Tensor((M, N), dtype), Y: T.Tensor((M,), out_dtype)):
        with T.Kernel(T.ceildiv(M, bM), threads=config["threads"]) as bx:
            x = T.alloc_fragment((bM, bN), "float32")
            acc = T.alloc_fragment((bM,), "float32")
            T.fill(acc, pad)
            for k in T.serial(T.ceildiv(N, bN)):
                T.copy(X[bx * bM, k * bN], x)
                if ragged:
                    for i, j in T.Parallel(bM, bN):
                        if k * bN + j >= N:
                            x[i, j] = pad
                reducer(x, acc, dim=1, clear=False)
            for i in T.Parallel(bM):
                if bx * bM + i < M:
                    Y[bx * bM + i] = T.cast(acc[i] * scale, out_dtype)

    return main


def _cumsum_kernel(problem: dict, config: dict):
    """Inclusive prefix sums of each row, chunk by chunk with a running carry, in float32."""
    M, N, dtype, reverse = problem["M"], problem["N"], problem["dtype"], problem["reverse"]
    bM = builtins.max(1, builtins.min(config["block_M"], M))
    bN = builtins.min(config["block_N"], 1 << (N - 1).bit_length())
    chunks = (N + bN - 1) // bN

    @T.prim_func
    def main(X: T.Tensor((M, N), dtype), Y: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, bM), threads=config["threads"]) as bx:
            s = T.alloc_shared((bM, bN), "float32")
            c = T.alloc_shared((bM, bN), "float32")
            carry = T.alloc_shared((bM,), "float32")
            for i in T.Parallel(bM):
                carry[i] = 0.0
            for kk in T.serial(chunks):
                k = (chunks - 1 - kk) if reverse else kk
                T.copy(X[bx * bM, k * bN], s)
                for i, j in T.Parallel(bM, bN):
                    if k * bN + j >= N:
                        s[i, j] = 0.0
                T.cumsum(s, c, dim=1, reverse=reverse)
                for i, j in T.Parallel(bM, bN):
                    c[i, j] = c[i, j] + carry[i]
                for i in T.Parallel(bM):
                    carry[i] = c[i, 0] if reverse else c[i, bN - 1]
                T.copy(c, Y[bx * bM, k * bN])

    return main


def _topk_kernel(problem: dict, config: dict):
    """k rounds per block of rows: the row maximum, the first column holding it, then that
    column masked out."""
    M, N, dtype, K = problem["M"], problem["N"], problem["dtype"], problem["k"]
    bM, threads = row_launch(problem, config)

    @T.prim_func
    def main(X: T.Tensor((M, N), dtype), Values: T.Tensor((M, K), dtype), Indices: T.Tensor((M, K), "int64")):
        with T.Kernel(T.ceildiv(M, bM), threads=threads) as bx:
            x = T.alloc_fragment((bM, N), "float32")
            cand = T.alloc_fragment((bM, N), "int32")
            best = T.alloc_fragment((bM,), "float32")
            where = T.alloc_fragment((bM,), "int32")
            T.copy(X[bx * bM, 0], x)
            for i, j in T.Parallel(bM, N):
                if x[i, j] != x[i, j]:  # NaN ranks highest, as in torch.topk
                    x[i, j] = T.infinity("float32")
            for t in T.serial(K):
                T.reduce_max(x, best, dim=1)
                for i, j in T.Parallel(bM, N):
                    cand[i, j] = T.if_then_else(x[i, j] == best[i], j, N)
                T.reduce_min(cand, where, dim=1)
                for i, j in T.Parallel(bM, N):
                    if j == where[i]:
                        x[i, j] = -T.infinity("float32")
                for i in T.Parallel(bM):
                    if bx * bM + i < M:
                        Values[bx * bM + i, t] = X[bx * bM + i, where[i]]
                        Indices[bx * bM + i, t] = T.cast(where[i], "int64")

    return main


def _np():
    import numpy as np

    return np


def reference_reduce(kind: str):
    def ref(x, axis=-1):
        x = _np().asarray(x, dtype="float64")
        return getattr(x, kind)(axis=axis)
    ref.__name__ = f"reference_{kind}"
    return ref


def reference_cumsum(x, axis=-1, reverse=False):
    np = _np()
    x = np.asarray(x, dtype="float64")
    if reverse:
        return np.flip(np.cumsum(np.flip(x, axis), axis=axis), axis)
    return np.cumsum(x, axis=axis)


def reference_topk(x, k):
    """(values, indices) of the k largest of each row of the last axis, largest first."""
    np = _np()
    x = np.asarray(x, dtype="float64")
    idx = np.argsort(-x, axis=-1, kind="stable")[..., :k]
    return np.take_along_axis(x, idx, axis=-1), idx


def _reduce_vector(problem: dict, config: dict):
    return reduce_vector(problem, config, _reduce_kernel)


for _kind in ("sum", "mean", "max", "min"):
    register(Operator(_kind, f"{_kind} over an axis (float32 accumulation)",
                      {"chunks": _reduce_kernel, "vector": _reduce_vector}, REDUCE_TABLE, reference_reduce(_kind), (1,),
                      {"M": 4096, "N": 4096, "dtype": "float16", "kind": _kind}, CHUNK_TUNE))
def _cumsum_vector(problem: dict, config: dict):
    return cumsum_vector(problem, config, _cumsum_kernel)


register(Operator("cumsum", "inclusive prefix sum over an axis (optionally reversed)",
                  {"chunks": _cumsum_kernel, "vector": _cumsum_vector}, CUMSUM_TABLE, reference_cumsum, (1,), {"M": 4096, "N": 4096, "dtype": "float32", "reverse": False},
                  CHUNK_TUNE))
register(Operator("topk", "the k largest values of each row of the last axis and their indices",
                  {"rows": _topk_kernel}, ROW_TABLE, reference_topk, (1, 2),
                  {"M": 4096, "N": 1024, "dtype": "float32", "k": 8}, ROW_TUNE))


# A whole-array reduction runs in two stages: rows of this many elements reduce in parallel
# to float32 partials, then the partials reduce (one block per row: one row would be one block).
PARTIAL_ROW = 8192


def _reduce_rows(kind: str, rows, out_dtype: str, target):
    dtype = check_dtype(kind, "x", rows, FLOATS)
    problem = {"M": int(rows.shape[0]), "N": int(rows.shape[1]), "dtype": dtype, "kind": kind}
    if out_dtype != dtype:
        problem["out_dtype"] = out_dtype
    kernel, _, _ = kernel_for(get(kind), target_for([rows], target, kind), problem)
    return kernel(rows)


def _reduce_all(kind: str, x, target):
    """`kind` over every element of `x`, as a float32 array of one element."""
    flat = contiguous(x).reshape(-1)
    n = int(flat.shape[0])
    if n <= PARTIAL_ROW:
        return _reduce_rows(kind, flat.reshape(1, n), "float32", target)
    stage = "sum" if kind == "mean" else kind
    body = n - n % PARTIAL_ROW
    parts = [_reduce_rows(stage, flat[:body].reshape(-1, PARTIAL_ROW), "float32", target)]
    if body < n:
        parts.append(_reduce_rows(stage, contiguous(flat[body:]).reshape(1, n - body), "float32", target))
    if library(x) == "torch":
        import torch

        joined = torch.cat(parts)
    else:
        import numpy as np

        joined = np.concatenate(parts)
    total = _reduce_all(stage, joined, target)
    return total / n if kind == "mean" else total


# torch's result of a reduction over no elements: the sum over nothing, and 0 / 0
_OVER_NOTHING = {"sum": 0.0, "mean": float("nan")}


def _reduce_over_nothing(kind: str, x, axis, out_shape: tuple[int, ...], reduced: int):
    """`kind` of an `x` without elements, as torch gives it: an empty result where other axes
    are empty, else sum 0 and mean NaN over the `reduced` (0) elements; max and min of nothing
    have no value, so they are an error naming the axis, as in torch."""
    if reduced == 0 and kind not in _OVER_NOTHING:
        where = "x has no elements" if axis is None else f"axis {axis} of x has length 0"
        raise OpError(f"{kind}: {where} (shape {tuple(x.shape)}); the {kind} of no elements has no value (torch "
                      f"refuses it too). Reduce a non-empty axis{'' if axis is not None else ' (pass axis=)'}, or "
                      "skip the call for an empty input")
    return filled(x, out_shape, _OVER_NOTHING.get(kind, 0.0))


def _reduce(kind: str, x, axis, keepdims: bool, target):
    dtype = check_dtype(kind, "x", x, FLOATS)
    ndim = len(x.shape)
    if axis is None:
        out_shape = (1,) * ndim if keepdims else ()
        if not all(x.shape):
            return _reduce_over_nothing(kind, x, None, out_shape, 0)
        total = _reduce_all(kind, x, target)
        total = total.to(x.dtype) if library(x) == "torch" else total.astype(x.dtype)
        return total.reshape(out_shape)
    rows, shape = rows_of(x, axis)
    out_shape = list(shape[:-1])
    if keepdims:
        out_shape.insert(axis % ndim, 1)
    if not all(shape):
        return _reduce_over_nothing(kind, x, axis, tuple(out_shape), shape[-1])
    return _reduce_rows(kind, contiguous(rows), dtype, target).reshape(tuple(out_shape))


def sum(x, axis: int | None = _UNSET, keepdims: bool = _UNSET, target=None, *, dim: int | None = _UNSET,
        keepdim: bool = _UNSET):  # noqa: A001 - TileLang-style name
    """Sum over `axis` (None: every element), accumulated in float32 Default axis -1; torch's `dim=`/`keepdim=` work as `axis=`/`keepdims=`."""
    return _reduce("sum", x, torch_spelling("sum", "axis", axis, "dim", dim, -1),
                   torch_spelling("sum", "keepdims", keepdims, "keepdim", keepdim, False), target)


def mean(x, axis: int | None = _UNSET, keepdims: bool = _UNSET, target=None, *, dim: int | None = _UNSET,
        keepdim: bool = _UNSET):
    """Mean over `axis` (None: every element), accumulated in float32 Default axis -1; torch's `dim=`/`keepdim=` work as `axis=`/`keepdims=`."""
    return _reduce("mean", x, torch_spelling("mean", "axis", axis, "dim", dim, -1),
                   torch_spelling("mean", "keepdims", keepdims, "keepdim", keepdim, False), target)


def max(x, axis: int | None = _UNSET, keepdims: bool = _UNSET, target=None, *, dim: int | None = _UNSET,
        keepdim: bool = _UNSET):  # noqa: A001
    """Maximum over `axis` (None: every element) Default axis -1; torch's `dim=`/`keepdim=` work as `axis=`/`keepdims=`."""
    return _reduce("max", x, torch_spelling("max", "axis", axis, "dim", dim, -1),
                   torch_spelling("max", "keepdims", keepdims, "keepdim", keepdim, False), target)


def min(x, axis: int | None = _UNSET, keepdims: bool = _UNSET, target=None, *, dim: int | None = _UNSET,
        keepdim: bool = _UNSET):  # noqa: A001
    """Minimum over `axis` (None: every element) Default axis -1; torch's `dim=`/`keepdim=` work as `axis=`/`keepdims=`."""
    return _reduce("min", x, torch_spelling("min", "axis", axis, "dim", dim, -1),
                   torch_spelling("min", "keepdims", keepdims, "keepdim", keepdim, False), target)


def cumsum(x, axis: int = _UNSET, reverse: bool = False, target=None, *, dim: int = _UNSET):
    """Inclusive prefix sum over `axis` (default -1; torch's `dim=` also works; from the end when
    `reverse`), accumulated in float32."""
    axis = torch_spelling("cumsum", "axis", axis, "dim", dim, -1)
    dtype = check_dtype("cumsum", "x", x, FLOATS)
    ndim = len(x.shape)
    rows, shape = rows_of(x, axis)
    if not all(shape):  # as torch: an empty input gives an empty result of its shape
        return filled(x, tuple(x.shape))
    problem = {"M": int(rows.shape[0]), "N": int(rows.shape[1]), "dtype": dtype, "reverse": bool(reverse)}
    kernel, _, _ = kernel_for(get("cumsum"), target_for([x], target, "cumsum"), problem)
    return restore_axis(kernel(rows), shape, axis, ndim)


def topk(x, k: int, target=None):
    """(values, indices) of the `k` largest entries of each row of the last axis, largest first
    (ties: the lower index first; NaN counts as largest); indices are int64. k = 0 gives
    empty results, as torch."""
    dtype = check_dtype("topk", "x", x, FLOATS)
    n = int(x.shape[-1])
    if not 0 <= int(k) <= n:
        raise OpError(f"topk: k={k} must be between 0 and the last axis' length {n}")
    if not k or not all(x.shape):  # as torch: k = 0 or no rows give empty values and indices
        out = tuple(x.shape[:-1]) + (int(k),)
        return filled(x, out), filled(x, out, dtype="int64")
    rows, shape = rows_of(x)
    problem = {"M": int(rows.shape[0]), "N": n, "dtype": dtype, "k": int(k)}
    kernel, _, _ = kernel_for(get("topk"), target_for([x], target, "topk"), problem)
    values, indices = kernel(rows)
    out = tuple(shape[:-1]) + (int(k),)
    return values.reshape(out), indices.reshape(out)

