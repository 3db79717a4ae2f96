"""Atomics, TileLang's names and meanings: `T.atomic_add/max/min`, `T.atomic_or`,
`T.atomic_addx2/x4`, `T.atomic_load`, `T.atomic_store`.

Forms, by operand:
- a point and a scalar (`T.atomic_add(B[0], A[i])`): one element, the `tl.atomic_elem` tile
  op; with `return_prev=True` an expression instead, whose value is the element before the
  update (the `tl.atomic_<kind>` builtin);
- a block and a block (`T.atomic_add(B, A)`, a point on either side taking the other's
  extents) or a block and a scalar (`T.atomic_add(B, 2)`): every element, the `tl.atomic` tile
  op;
- `T.atomic_addx2/x4(dst, src)`: 2 or 4 consecutive elements along the last axis, from the
  first element of each operand (with `return_prev=True` a vector expression, which no
  dialect prints yet: a compile-time error);
- `T.atomic_load(src)` is an expression, `T.atomic_store(dst, value)` a statement.

`memory_order` takes C11's names ("relaxed", "consume", "acquire", "release", "acq_rel",
"seq_cst"); without it an atomic is relaxed. A target whose dialect prints relaxed atomics
only rejects a stronger order when it compiles.
"""
from __future__ import annotations

from typing import Any

from tvm import tirx
from tvm.tirx import BufferLoad, Ramp

from tilelang_core.codegen import builtins
from tilelang_core.ir.constants import ACCESS_READ, ACCESS_READ_WRITE
from tilelang_core.ir.ops import make_call
from tilelang_core.ir.region import Region

from .regions import Point, as_operand, as_scalar, check_same_extents, describe, is_scalar, known_unequal, resolve_pair

__all__ = [
    "atomic_add",
    "atomic_addx2",
    "atomic_addx4",
    "atomic_load",
    "atomic_max",
    "atomic_min",
    "atomic_or",
    "atomic_store",
]

_LOAD_ORDERS = ("relaxed", "consume", "acquire", "seq_cst")
_STORE_ORDERS = ("relaxed", "release", "seq_cst")
_ELEMENT_BUILTINS = {"add": builtins.atomic_add, "max": builtins.atomic_max, "min": builtins.atomic_min,
                     "or": builtins.atomic_or}


def _memory_order(op: str, memory_order: Any, allowed: tuple[str, ...] = builtins.MEMORY_ORDERS) -> int:
    """The IR number of a memory order name (None: relaxed)."""
    if memory_order is None:
        return 0
    if memory_order not in allowed:
        raise ValueError(f"T.{op}: memory_order={memory_order!r} is not one of {', '.join(map(repr, allowed))}")
    return builtins.MEMORY_ORDERS.index(memory_order)


def _point_load(point: Point) -> BufferLoad:
    return BufferLoad(point.buffer, list(point.indices))


def _atomic(kind: str, dst: Any, value: Any, memory_order: Any, return_prev: bool, use_tma: bool = False) -> Any:
    op = f"atomic_{kind}"
    order = _memory_order(op, memory_order)
    dst_operand = as_operand(dst, ACCESS_READ_WRITE, op, "destination")
    dtype = str(dst_operand.buffer.ty.dtype)
    if is_scalar(value) and isinstance(dst_operand, Point):
        scalar = as_scalar(value, dtype)
        if return_prev:
            return _ELEMENT_BUILTINS[kind](_point_load(dst_operand), scalar, order)
        return make_call("atomic_elem", kind, _point_load(dst_operand), scalar, order)
    if return_prev:
        raise ValueError(f"T.{op}(return_prev=True) needs a point destination and a scalar value (one element); "
                         f"a block atomic has no single previous value")
    if kind == "or":
        raise TypeError(f"T.atomic_or takes a point destination and a scalar value, like T.atomic_or(B[0], x)")
    if is_scalar(value):  # every element of the block combines with one value
        return make_call("atomic", kind, dst_operand.to_call(), as_scalar(value, dtype), order, bool(use_tma))
    src_operand = as_operand(value, ACCESS_READ, op, "value")
    dst_region, src_region = resolve_pair(dst_operand, src_operand, op, ("destination", "value"))
    check_same_extents(src_region, dst_region, op)
    return make_call("atomic", kind, dst_region.to_call(), src_region.to_call(), order, bool(use_tma))


def atomic_add(dst: Any, value: Any, memory_order: str | None = None, return_prev: bool = False,
               use_tma: bool = False) -> Any:
    """`dst += value` atomically (see the module docstring for the operand forms).

    `return_prev=True` (point and scalar only) makes it an expression: the value before the
    add. `use_tma=True` asks for a block add through the TMA engine, on targets that have one
    (elsewhere a compile-time error)."""
    return _atomic("add", dst, value, memory_order, return_prev, use_tma)


def atomic_max(dst: Any, value: Any, memory_order: str | None = None, return_prev: bool = False) -> Any:
    """`dst = max(dst, value)` atomically (keywords as `atomic_add`)."""
    return _atomic("max", dst, value, memory_order, return_prev)


def atomic_min(dst: Any, value: Any, memory_order: str | None = None, return_prev: bool = False) -> Any:
    """`dst = min(dst, value)` atomically (keywords as `atomic_add`)."""
    return _atomic("min", dst, value, memory_order, return_prev)


def atomic_or(dst: Any, value: Any, memory_order: str | None = None) -> Any:
    """`dst |= value` atomically, on one integer element (`T.atomic_or(B[0], x)`)."""
    if not str(as_operand(dst, ACCESS_READ_WRITE, "atomic_or", "destination").buffer.ty.dtype).startswith(("int", "uint")):
        raise TypeError(f"T.atomic_or needs an integer destination, got {dst}")
    return _atomic("or", dst, value, memory_order, False)


def _first_elements(obj: Any, lanes: int, access: int, op: str, role: str) -> Region:
    """The `lanes` consecutive elements along the last axis from the operand's first element."""
    operand = as_operand(obj, access, op, role)
    mins = tuple(operand.indices) if isinstance(operand, Point) else tuple(operand.mins)
    if isinstance(operand, Region):
        last = operand.extents[-1]
        if isinstance(last, tirx.IntImm) and last.value < lanes:
            raise ValueError(f"T.{op}: {role} {describe(operand)} has {last.value} elements along its last axis; "
                             f"the op adds {lanes} consecutive ones")
    ones = [1] * (len(mins) - 1)
    extents = tuple(tirx.IntImm("int32", e) for e in (*ones, lanes))
    return Region(operand.buffer, mins, extents, access)


def _atomic_add_vector(lanes: int, dst: Any, value: Any, return_prev: bool) -> Any:
    op = f"atomic_addx{lanes}"
    dst_region = _first_elements(dst, lanes, ACCESS_READ_WRITE, op, "destination")
    src_region = _first_elements(value, lanes, ACCESS_READ, op, "value")
    if return_prev:
        *lead, last = dst_region.mins
        vector = BufferLoad(dst_region.buffer, [*lead, Ramp(last, 1, lanes)])
        *lead, last = src_region.mins
        values = BufferLoad(src_region.buffer, [*lead, Ramp(last, 1, lanes)])
        return builtins.atomic_add(vector, values)
    return make_call("atomic", "add", dst_region.to_call(), src_region.to_call(), 0, False)


def atomic_addx2(dst: Any, value: Any, return_prev: bool = False) -> Any:
    """Atomically add 2 consecutive elements (e.g. a half2), from the first element of `dst`
    and of `value` (a buffer, a region or a point)."""
    return _atomic_add_vector(2, dst, value, return_prev)


def atomic_addx4(dst: Any, value: Any, return_prev: bool = False) -> Any:
    """Atomically add 4 consecutive elements (e.g. a float4); see `atomic_addx2`."""
    return _atomic_add_vector(4, dst, value, return_prev)


def _element(obj: Any, access: int, op: str) -> BufferLoad:
    operand = as_operand(obj, access, op, "operand")
    if isinstance(operand, Point):
        return _point_load(operand)
    if any(known_unequal(e, 1) for e in operand.extents):
        raise ValueError(f"T.{op} reads or writes one element; got the block {describe(operand)}")
    return BufferLoad(operand.buffer, list(operand.mins))


def atomic_load(src: Any, memory_order: str = "seq_cst") -> Any:
    """The value of one element, read atomically (`memory_order`: relaxed, consume, acquire
    or seq_cst, the default)."""
    order = _memory_order("atomic_load", memory_order, _LOAD_ORDERS)
    return builtins.atomic_load(_element(src, ACCESS_READ, "atomic_load"), order)


def atomic_store(dst: Any, src: Any, memory_order: str = "seq_cst") -> Any:
    """Write one element atomically (`memory_order`: relaxed, release or seq_cst, the default)."""
    order = _memory_order("atomic_store", memory_order, _STORE_ORDERS)
    load = _element(dst, ACCESS_READ_WRITE, "atomic_store")
    return builtins.atomic_store(load, as_scalar(src, str(load.source.ty.dtype)), order)
