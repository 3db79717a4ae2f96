"""`expr.dtype`: TileLang's (and older TVM's) spelling of an expression's dtype.

apache-tvm 0.27 keeps an expression's type in `expr.ty` (a `PrimType` whose `.dtype` is the
dtype); `expr.dtype` is left only on buffer variables. TileLang's helper code reads
`val.dtype` off loads, casts and arithmetic (`assert val.dtype == "int8"` in its quantization
helpers). Inside a process that runs the aliasing, `add_expr_dtype()` gives every expression
a read-only `dtype`: the dtype of a primitive value, "handle" for a pointer, the element
dtype for a buffer variable (what 0.27 already answers there). An expression of another type
(a tuple, a function) has none: reading it is an AttributeError, as before.
"""
from __future__ import annotations

from typing import Any

__all__ = ["add_expr_dtype", "expr_dtype"]


def expr_dtype(expr: Any) -> Any:
    """The dtype of `expr` as `expr.dtype` used to answer (a `tvm_ffi.dtype`, a str)."""
    from tvm import ir, tirx

    if tirx.is_buffer_var(expr):
        return expr.ty.dtype.dtype
    ty = expr.ty
    if isinstance(ty, ir.PrimType):
        return ty.dtype
    if isinstance(ty, ir.PointerType):
        import tvm_ffi

        return tvm_ffi.dtype("handle")
    raise AttributeError(f"{type(expr).__name__} of type {ty} has no dtype (not a primitive value)")


def add_expr_dtype() -> None:
    """Set `dtype` on `tvm.ir.Expr` and `tvm.ir.Var` (whose own property answers only for
    buffer variables), where the installed TVM has none on `tvm.ir.Expr`. Idempotent."""
    from tvm import ir

    if "dtype" in ir.Expr.__dict__:
        return  # this TVM has its own, or the bridge is in place
    prop = property(expr_dtype, doc="The dtype of this expression (tilelang-core's compatibility bridge).")
    ir.Expr.dtype = prop
    ir.Var.dtype = prop
