"""Tile ops: `T.copy`, `T.fill`, `T.clear`, `T.gemm`, reductions, `T.cumsum`, atomics.

Each function checks its operands (shapes that are provably wrong fail here, at the user's
line) and returns one `tl.*` call; TVMScript wraps it in an `Evaluate` statement.
"""
from __future__ import annotations

from enum import IntEnum
from typing import Any

from tvm import ir
from tvm.tirx import BufferLoad

from tilelang_core.ir.constants import (
    ACCESS_READ,
    ACCESS_READ_WRITE,
    ACCESS_WRITE,
    ATOMIC_KINDS,
    REDUCE_KINDS,
)
from tilelang_core.ir.ops import make_call
from tilelang_core.ir.region import Region

from .regions import (
    Point,
    as_operand,
    as_region,
    as_scalar,
    check_same_extents,
    describe,
    format_shape,
    is_scalar,
    known_unequal,
    resolve_pair,
    squeeze_leading,
)

__all__ = [
    "GemmWarpPolicy",
    "atomic_add",
    "atomic_max",
    "atomic_min",
    "clear",
    "copy",
    "cumsum",
    "fill",
    "gemm",
    "reduce",
    "reduce_abssum",
    "reduce_absmax",
    "reduce_max",
    "reduce_min",
    "reduce_sum",
]


class GemmWarpPolicy(IntEnum):
    """How `T.gemm` spreads the block's warps over the output tile."""

    Square = 0
    FullRow = 1
    FullCol = 2


def copy(src: Any, dst: Any) -> ir.Call:
    """Copy a tile: `tl.copy(src_region, dst_region)`. A point on one side (`A[i, j]`)
    stands for a block of the other side's shape starting there."""
    src_operand = as_operand(src, ACCESS_READ, "copy", "source")
    dst_operand = as_operand(dst, ACCESS_WRITE, "copy", "destination")
    roles = ("source", "destination")
    src_region, dst_region = resolve_pair(src_operand, dst_operand, "copy", roles)
    check_same_extents(src_region, dst_region, "copy")
    return make_call("copy", src_region.to_call(), dst_region.to_call())


def fill(buffer: Any, value: Any) -> ir.Call:
    """Set every element of a buffer or region to `value`: `tl.fill(dst_region, value)`."""
    region = as_region(buffer, ACCESS_WRITE, "fill", "destination")
    if not is_scalar(value):
        raise TypeError(f"T.fill: the value must be a scalar, got {type(value).__name__} {value}")
    return make_call("fill", region.to_call(), as_scalar(value, region.dtype))


def clear(buffer: Any) -> ir.Call:
    """`T.fill(buffer, 0)`."""
    return fill(buffer, 0)


def _matrix(region: Region, role: str) -> tuple:
    extents = squeeze_leading(region.extents, 2)
    if extents is None or len(extents) != 2:
        raise ValueError(
            f"T.gemm: {role} must be a matrix (leading dims of extent 1 are allowed), "
            f"got {describe(region)}"
        )
    return extents


def gemm(
    A: Any,  # noqa: N803 - TileLang's argument names
    B: Any,  # noqa: N803
    C: Any,  # noqa: N803
    transpose_A: bool = False,  # noqa: N803
    transpose_B: bool = False,  # noqa: N803
    policy: GemmWarpPolicy | int = GemmWarpPolicy.Square,
    clear_accum: bool = False,
    k_pack: int = 1,
    wg_wait: int = 0,
) -> ir.Call:
    """`C += A @ B` on tiles (`C = A @ B` with `clear_accum=True`):
    `tl.gemm(A, B, C, transpose_A, transpose_B, policy, clear_accum, M, N, K)`."""
    if k_pack != 1 or wg_wait != 0:
        raise ValueError(
            "T.gemm: k_pack and wg_wait are not supported by tilelang-core; leave them out"
        )
    policy = GemmWarpPolicy(int(policy))
    a = as_region(A, ACCESS_READ, "gemm", "A")
    b = as_region(B, ACCESS_READ, "gemm", "B")
    c = as_region(C, ACCESS_READ_WRITE, "gemm", "C")
    a0, a1 = _matrix(a, "A")
    b0, b1 = _matrix(b, "B")
    c0, c1 = _matrix(c, "C")
    m, k_a = (a1, a0) if transpose_A else (a0, a1)
    k_b, n = (b1, b0) if transpose_B else (b0, b1)
    shapes = (
        f"A is {describe(a)}, B is {describe(b)}, C is {describe(c)}, "
        f"transpose_A={bool(transpose_A)}, transpose_B={bool(transpose_B)}"
    )
    if known_unequal(k_a, k_b):
        raise ValueError(f"T.gemm: K of A is {k_a} but K of B is {k_b}; {shapes}")
    if known_unequal(m, c0) or known_unequal(n, c1):
        raise ValueError(f"T.gemm: A @ B is ({m}, {n}) but C is ({c0}, {c1}); {shapes}")
    return make_call(
        "gemm",
        a.to_call(),
        b.to_call(),
        c.to_call(),
        bool(transpose_A),
        bool(transpose_B),
        int(policy),
        bool(clear_accum),
        c0,
        c1,
        k_a,
    )


def _normalize_dim(dim: int, ndim: int, op: str) -> int:
    if not -ndim <= dim < ndim:
        raise ValueError(f"T.{op}: dim={dim} is out of range for a {ndim}-dim source")
    return dim % ndim


def _check_reduced_shape(src: Region, dst: Region, dim: int, op: str) -> None:
    expected = [e for i, e in enumerate(src.extents) if i != dim]
    got = list(dst.extents)
    if len(got) == len(src.extents):  # keepdim form: the reduced dim has extent 1
        if known_unequal(got[dim], 1):
            got = None
        else:
            got.pop(dim)
    mismatch = got is None or len(got) != len(expected)
    if mismatch or any(known_unequal(x, y) for x, y in zip(got, expected)):
        raise ValueError(
            f"T.{op}: reducing {describe(src)} over dim {dim} gives {format_shape(expected)}, "
            f"but the destination is {describe(dst)}"
        )


def reduce(buffer: Any, out: Any, reduce_type: str, dim: int = -1, clear: bool = True) -> ir.Call:
    """Reduce `buffer` over `dim` into `out`: `tl.reduce(src, dst, kind, dim, clear)`.
    With `clear=False` the result is combined with what `out` holds."""
    if reduce_type not in REDUCE_KINDS:
        raise ValueError(f"T.reduce: kind must be one of {REDUCE_KINDS}, got {reduce_type!r}")
    op = f"reduce_{reduce_type}"
    src = as_region(buffer, ACCESS_READ, op, "source")
    dst = as_region(out, ACCESS_WRITE if clear else ACCESS_READ_WRITE, op, "destination")
    dim = _normalize_dim(dim, src.ndim, op)
    _check_reduced_shape(src, dst, dim, op)
    return make_call("reduce", src.to_call(), dst.to_call(), reduce_type, dim, bool(clear))


def reduce_max(buffer: Any, out: Any, dim: int = -1, clear: bool = True) -> ir.Call:
    """Row/column maximum of a tile."""
    return reduce(buffer, out, "max", dim, clear)


def reduce_min(buffer: Any, out: Any, dim: int = -1, clear: bool = True) -> ir.Call:
    """Row/column minimum of a tile."""
    return reduce(buffer, out, "min", dim, clear)


def reduce_sum(buffer: Any, out: Any, dim: int = -1, clear: bool = True) -> ir.Call:
    """Row/column sum of a tile."""
    return reduce(buffer, out, "sum", dim, clear)


def reduce_abssum(buffer: Any, out: Any, dim: int = -1, clear: bool = True) -> ir.Call:
    """Row/column sum of absolute values of a tile."""
    return reduce(buffer, out, "abssum", dim, clear)


def reduce_absmax(buffer: Any, out: Any, dim: int = -1, clear: bool = True) -> ir.Call:
    """Row/column maximum of absolute values of a tile."""
    return reduce(buffer, out, "absmax", dim, clear)


def cumsum(src: Any, dst: Any = None, dim: int = 0, reverse: bool = False) -> ir.Call:
    """Inclusive prefix sum along `dim` (in place when `dst` is None):
    `tl.cumsum(src, dst, dim, reverse)`."""
    source = as_region(src, ACCESS_READ, "cumsum", "source")
    in_place = dst is None
    access = ACCESS_READ_WRITE if in_place else ACCESS_WRITE
    target = as_region(src if in_place else dst, access, "cumsum", "destination")
    dim = _normalize_dim(dim, source.ndim, "cumsum")
    check_same_extents(source, target, "cumsum")
    return make_call("cumsum", source.to_call(), target.to_call(), dim, bool(reverse))


def _atomic(kind: str, dst: Any, value: Any) -> ir.Call:
    assert kind in ATOMIC_KINDS
    op = f"atomic_{kind}"
    dst_operand = as_operand(dst, ACCESS_READ_WRITE, op, "destination")
    if is_scalar(value):
        if not isinstance(dst_operand, Point):
            raise TypeError(
                f"T.{op}: a scalar value needs a point destination like C[i, j], "
                f"got the block {describe(dst_operand)}"
            )
        load = BufferLoad(dst_operand.buffer, list(dst_operand.indices))
        dtype = str(dst_operand.buffer.ty.dtype)
        return make_call("atomic_elem", kind, load, as_scalar(value, dtype))
    src_operand = as_operand(value, ACCESS_READ, op, "value")
    dst_region, src_region = resolve_pair(dst_operand, src_operand, op, ("destination", "value"))
    check_same_extents(src_region, dst_region, op)
    return make_call("atomic", kind, dst_region.to_call(), src_region.to_call())


# TileLang's `memory_order` names; our atomics are relaxed read-modify-writes.
_SUPPORTED_MEMORY_ORDERS = (None, "relaxed")


def _check_atomic_keywords(op: str, memory_order: Any, return_prev: bool) -> None:
    if memory_order not in _SUPPORTED_MEMORY_ORDERS:
        raise ValueError(f"T.{op}(memory_order={memory_order!r}): only 'relaxed' is supported (the atomics are "
                         "relaxed); order the surrounding accesses with T.sync_threads() or a fence instead")
    if return_prev:
        raise ValueError(f"T.{op}(return_prev=True) is not supported yet: the previous value is not returned")


def atomic_add(dst: Any, value: Any, memory_order: Any = None, return_prev: bool = False, use_tma: bool = False) -> ir.Call:
    """`dst += value` atomically: a point with a scalar, or a block with a block.

    TileLang's keywords: `memory_order` ("relaxed" only), `return_prev` (not yet: an error),
    `use_tma` (a hint; the backend picks how a block add is done)."""
    _check_atomic_keywords("atomic_add", memory_order, return_prev)
    return _atomic("add", dst, value)


def atomic_max(dst: Any, value: Any, memory_order: Any = None, return_prev: bool = False) -> ir.Call:
    """`dst = max(dst, value)` atomically (keywords as `atomic_add`)."""
    _check_atomic_keywords("atomic_max", memory_order, return_prev)
    return _atomic("max", dst, value)


def atomic_min(dst: Any, value: Any, memory_order: Any = None, return_prev: bool = False) -> ir.Call:
    """`dst = min(dst, value)` atomically (keywords as `atomic_add`)."""
    _check_atomic_keywords("atomic_min", memory_order, return_prev)
    return _atomic("min", dst, value)
