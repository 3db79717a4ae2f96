"""Turning tile-op operands (a buffer, a slice `A[0:64, k*32:(k+1)*32]`, a point `A[i, j]`)
into `Region`s, and the parse-time shape checks between them."""
from __future__ import annotations

from typing import Any, Sequence

import tvm
from tvm import ir
from tvm.tirx import is_buffer_var
from tvm.tirx.script.builder import ir as _builder

from tilelang_core.ir.region import Region

__all__ = [
    "Point",
    "as_operand",
    "as_region",
    "as_scalar",
    "check_same_extents",
    "describe",
    "format_shape",
    "is_scalar",
    "known_unequal",
    "resolve_pair",
    "squeeze_leading",
]

_analyzer = None


def _get_analyzer() -> tvm.sym.Analyzer:
    global _analyzer  # pylint: disable=global-statement
    if _analyzer is None:
        _analyzer = tvm.sym.Analyzer()
    return _analyzer


class Point:
    """A point operand `A[i, j]`: the corner of a block whose extents come from elsewhere."""

    def __init__(self, buffer: ir.Var, indices: Sequence[Any], access: int) -> None:
        self.buffer = buffer
        self.indices = tuple(indices)
        self.access = access

    def region(self, extents: Sequence[Any]) -> Region:
        return Region(self.buffer, self.indices, tuple(extents), self.access)

    def __str__(self) -> str:
        return f"{self.buffer.name}[{', '.join(str(i) for i in self.indices)}]"


def _unwrap(obj: Any) -> Any:
    if isinstance(obj, _builder.scalar_wrapper):  # a T.alloc_var scalar
        return obj.scalar
    return obj


def as_operand(obj: Any, access: int, op: str, role: str) -> Region | Point:
    """`obj` as a Region (buffer or slice) or a Point (a load `A[i, j]`)."""
    obj = _unwrap(obj)
    if is_buffer_var(obj):
        return Region.full(obj, access)
    if isinstance(obj, ir.TensorRegion):
        mins = tuple(r.min for r in obj.region)
        extents = tuple(r.extent for r in obj.region)
        return Region(obj.source, mins, extents, access)
    if isinstance(obj, ir.TensorLoad) and is_buffer_var(obj.source):
        return Point(obj.source, obj.indices, access)
    raise TypeError(
        f"T.{op}: {role} must be a buffer, a region like A[0:64, k*32:(k+1)*32] "
        f"or a point like A[i, j], got {type(obj).__name__} {obj}"
    )


def as_region(obj: Any, access: int, op: str, role: str) -> Region:
    """`obj` as a Region; a point stands for the single element there."""
    operand = as_operand(obj, access, op, role)
    if isinstance(operand, Point):
        ones = tuple(tvm.tirx.IntImm("int32", 1) for _ in operand.indices)
        return operand.region(ones)
    return operand


def is_scalar(obj: Any) -> bool:
    """Whether `obj` is a scalar value (a number or a PrimExpr, loads included), not a tile."""
    obj = _unwrap(obj)
    if isinstance(obj, (bool, int, float)):
        return True
    return isinstance(obj, ir.Expr) and tvm.ir.is_prim_expr(obj) and not is_buffer_var(obj)


def as_scalar(value: Any, dtype: str) -> ir.Expr:
    """`value` as an expression of `dtype` (a constant for Python numbers, else a cast)."""
    value = _unwrap(value)
    if isinstance(value, ir.Expr):
        return value if str(value.ty) == dtype else _builder.cast(value, dtype)
    return tvm.tirx.const(value, dtype)


def squeeze_leading(extents: Sequence[Any], ndim: int) -> tuple | None:
    """The last `ndim` extents, if every extent before them is known to be 1; else None."""
    extents = tuple(extents)
    if len(extents) <= ndim:
        return extents
    head = extents[: len(extents) - ndim]
    if all(_const(e) == 1 for e in head):
        return extents[len(extents) - ndim :]
    return None


def resolve_pair(
    first: Region | Point, second: Region | Point, op: str, roles: tuple[str, str]
) -> tuple[Region, Region]:
    """Both operands as Regions: a Point takes the other side's extents, trailing dims
    aligned (extra leading dims of the point get extent 1)."""
    if isinstance(first, Point) and isinstance(second, Point):
        raise ValueError(
            f"T.{op}: {roles[0]} {first} and {roles[1]} {second} are both single points; "
            "give a buffer or a region like A[0:64, 0:64] on at least one side"
        )
    if isinstance(first, Point):
        return _point_region(first, second, op, roles[0], roles[1]), second
    if isinstance(second, Point):
        return first, _point_region(second, first, op, roles[1], roles[0])
    return first, second


def _point_region(point: Point, other: Region, op: str, role: str, other_role: str) -> Region:
    ndim = len(point.indices)
    extents = squeeze_leading(other.extents, ndim)
    if extents is None:
        raise ValueError(
            f"T.{op}: {role} {point} has {ndim} dims but the {other_role} block "
            f"{describe(other)} has more dims that are not 1; index the {role} with a region"
        )
    ones = tuple(tvm.tirx.IntImm("int32", 1) for _ in range(ndim - len(extents)))
    return point.region(ones + tuple(extents))


def _const(expr: Any) -> int | None:
    if isinstance(expr, int):
        return expr
    if isinstance(expr, tvm.tirx.IntImm):
        return int(expr.value)
    return None


def known_unequal(a: Any, b: Any) -> bool:
    """Whether `a != b` can be proven (two different constants, or provably different)."""
    ca, cb = _const(a), _const(b)
    if ca is not None and cb is not None:
        return ca != cb
    try:
        return bool(_get_analyzer().can_prove(a != b))
    except Exception:  # pylint: disable=broad-except
        return False


def format_shape(extents: Sequence[Any]) -> str:
    """`(64, 32)` / `(64,)`, for error messages."""
    inner = ", ".join(str(e) for e in extents)
    return f"({inner},)" if len(extents) == 1 else f"({inner})"


def describe(region: Region) -> str:
    """`A_shared (64, 32)`: the buffer and the region's extents, for error messages."""
    return f"{region.buffer.name} {format_shape(region.extents)}"


def check_same_extents(src: Region, dst: Region, op: str) -> None:
    """Raise if the two regions provably differ in shape (unit dims ignored)."""
    a = [e for e in src.extents if _const(e) != 1]
    b = [e for e in dst.extents if _const(e) != 1]
    if len(a) == len(b):
        if not any(known_unequal(x, y) for x, y in zip(a, b)):
            return
    elif not all(_const(e) is not None for e in (*a, *b)):
        return  # a symbolic extent may be 1
    raise ValueError(
        f"T.{op}: source {describe(src)} and destination {describe(dst)} differ in shape; "
        "the extents (unit dims aside) must match"
    )
