"""Kernel-level directives and debugging: `T.use_swizzle`, `T.print`, `T.device_assert`,
and `T.ceildiv` (plain integers stay plain integers, so it works in grid sizes)."""
from __future__ import annotations

from typing import Any

import tvm
from tvm import ir
from tvm.tirx import is_buffer_var
from tvm.tirx.script.builder import ir as _builder

from tilelang_core.ir.constants import ACCESS_READ
from tilelang_core.ir.func_attrs import set_func_attr
from tilelang_core.ir.ops import make_call

from .regions import as_region

__all__ = ["annotate_restrict_buffers", "ceildiv", "clamp", "device_assert", "print", "reinterpret", "use_swizzle"]

_SWIZZLE_ORDERS = ("row", "col")


def use_swizzle(panel_size: int = 10, order: str = "row", enable: bool = True) -> ir.Call | None:
    """Rasterize the block grid in panels of `panel_size` for L2 reuse:
    `tl.use_swizzle(panel_size, order)` at the top of the kernel."""
    if order not in _SWIZZLE_ORDERS:
        raise ValueError(f"T.use_swizzle: order must be 'row' or 'col', got {order!r}")
    if not enable:
        return None
    return make_call("use_swizzle", panel_size, order)


def print(obj: Any, msg: str = "") -> ir.Call:  # noqa: A001 - TileLang's name
    """Print a value, or a buffer/region, from the device: `tl.print(value or region, msg)`."""
    if is_buffer_var(obj) or isinstance(obj, ir.TensorRegion):
        value = as_region(obj, ACCESS_READ, "print", "argument").to_call()
    elif isinstance(obj, _builder.scalar_wrapper):
        value = obj.scalar
    elif isinstance(obj, (bool, int, float)) or tvm.ir.is_prim_expr(obj):
        value = obj
    else:
        raise TypeError(f"T.print: cannot print {type(obj).__name__} {obj}")
    return make_call("print", value, str(msg))


def device_assert(condition: Any, msg: str = "") -> ir.Call:
    """Abort the kernel with `msg` where `condition` is false: `tl.device_assert(cond, msg)`."""
    if isinstance(condition, bool):
        condition = tvm.tirx.IntImm("bool", int(condition))
    if not tvm.ir.is_prim_expr(condition):
        raise TypeError(
            f"T.device_assert: the condition must be a boolean expression, got {condition}"
        )
    return make_call("device_assert", condition, str(msg))


def ceildiv(a: Any, b: Any) -> Any:
    """`(a + b - 1) // b`; an int when both are ints."""
    if isinstance(a, int) and isinstance(b, int):
        return -(-a // b)
    return _builder.ceildiv(a, b)


def clamp(value: Any, low: Any, high: Any) -> Any:
    """`value` limited to [low, high]: `T.max(T.min(value, high), low)`."""
    return _builder.max(_builder.min(value, high), low)


def reinterpret(value: Any, dtype: Any, span: Any = None) -> Any:
    """The bits of `value` read as `dtype` (same width): TileLang's order `T.reinterpret(x,
    "uint32")`, like `T.cast`. TVMScript's order `T.reinterpret("uint32", x)` is taken too (a
    dtype first is unambiguous: a value is never a dtype)."""
    import tvm.tirx as tirx

    from .dtypes import DType, to_dtype

    def is_dtype(x: Any) -> bool:
        if isinstance(x, (str, DType)):
            return True
        return type(x).__module__.startswith("torch") and type(x).__name__ == "dtype"

    if is_dtype(value) and not is_dtype(dtype):
        value, dtype = dtype, value
    # "handle": a pointer from its 64 bits (TileLang's `T.reinterpret(T.uint64(0), dtype="handle")`)
    name = "handle" if str(dtype) == "handle" else str(to_dtype(dtype))
    return tirx.reinterpret(name, value, span=span) if span is not None else tirx.reinterpret(name, value)


def annotate_restrict_buffers(*buffers: Any) -> None:
    """Say that these tensor parameters may alias one another (overlapping views of one
    tensor): their pointers lose `__restrict__`, so the compiler keeps the order of their
    loads and stores. Write it at the top of the kernel body."""
    if not buffers:
        return None
    names = []
    for buf in buffers:
        if not is_buffer_var(buf):
            raise TypeError(f"T.annotate_restrict_buffers: expects tensor parameters, got {type(buf).__name__} {buf}")
        names.append(str(buf.name))
    set_func_attr("tl.non_restrict_params", names)
    return None
