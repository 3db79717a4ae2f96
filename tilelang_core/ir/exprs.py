"""Small facts about expressions that apache-tvm 0.27 spells differently from older TVM.

In 0.27 a PrimExpr has a type `expr.ty` (a `PrimType`), not a `dtype` attribute.
"""
from __future__ import annotations

from tvm import ir

__all__ = ["dtype_of", "dtype_bytes"]


def dtype_of(expr: object) -> str:
    """The dtype name of a scalar expression ("float32", "int32", ...); Python numbers
    count as "int32" / "float32" / "bool" as TVM converts them."""
    if isinstance(expr, bool):
        return "bool"
    if isinstance(expr, int):
        return "int32"
    if isinstance(expr, float):
        return "float32"
    ty = getattr(expr, "ty", None)
    if isinstance(ty, ir.PrimType):
        return str(ty.dtype)
    raise TypeError(f"{expr!r} is not a scalar expression (its type is {ty})")


def dtype_bytes(dtype: object) -> int:
    """Bytes of one element of `dtype` (vector dtypes count every lane; sub-byte types
    round up to one byte)."""
    import tvm_ffi

    parsed = tvm_ffi.dtype(str(dtype))
    return max(1, (parsed.bits * parsed.lanes + 7) // 8)
