"""`tvm.tirx.Call`: TileLang's (and older TVM's) name of the call expression.

apache-tvm 0.27 moved the call node to `tvm.ir.Call`, whose constructor reads
`Call(op, args, attrs=None, ..., ret_ty=None)`; TileLang's programs and tests still say
`tirx.Call`, both to test a node (`isinstance(e, tirx.Call)`, `list[tirx.Call]`) and to build one
in the older order `tirx.Call(dtype, op, args, span=None)`. `Call` here answers both: an
`isinstance`/`issubclass` check is the one of `tvm.ir.Call` (so every call node, a tile op's
included, is a `tirx.Call`), and calling it builds a `tvm.ir.Call` whose result type is `dtype`.
Set on `tvm.tirx` in a process that runs the aliasing (`aliases.TVM_NAME_RENAMES`).
"""
from __future__ import annotations

from typing import Any

__all__ = ["Call"]


class _CallMeta(type):
    """Delegates class checks to `tvm.ir.Call`, the node 0.27 builds for every call."""

    def __instancecheck__(cls, obj: Any) -> bool:
        from tvm import ir

        return isinstance(obj, ir.Call)

    def __subclasscheck__(cls, sub: type) -> bool:
        from tvm import ir

        return sub is cls or issubclass(sub, ir.Call)

    def __call__(cls, dtype: Any, op: Any, args: Any, span: Any = None) -> Any:
        """`tirx.Call(dtype, op, args, span=None)`: a `tvm.ir.Call` of `op` on `args` whose result
        has dtype `dtype` ("handle" for a call that yields nothing)."""
        from tvm import ir

        if not isinstance(args, (list, tuple)) and not type(args).__name__ == "Array":
            raise TypeError(f"tirx.Call(dtype, op, args): args must be a list of expressions, "
                            f"got {type(args).__name__}")
        return ir.Call(op, list(args), span=span, ret_ty=str(dtype))


class Call(metaclass=_CallMeta):
    """TileLang's `tvm.tirx.Call` over apache-tvm 0.27's `tvm.ir.Call` (see the module docstring)."""
