"""Arithmetic simplification of a kernel as written: TileLang's `simplify_prim_func` and
`apply_simplify` (`tilelang.transform.simplify`).

Before: a `T.prim_func` (or a one-function IRModule) as the language built it. After: the same
function with its index and condition arithmetic simplified by TVM's statement simplifier
(`tvm.tirx.transform.StmtSimplify`); tile ops, buffers and loops are unchanged. The core's
pipeline does not need it (it simplifies where it lowers); a kernel author uses it to read or
compare the IR of a kernel. `PassContext` is TVM's, under which the pass runs.
"""
from __future__ import annotations

import functools
from typing import Any, Callable

from tvm import ir
from tvm.ir.transform import PassContext
from tvm.tirx import PrimFunc
from tvm.tirx.transform import StmtSimplify

__all__ = ["PassContext", "apply_simplify", "simplify_prim_func"]


def apply_simplify(func: Any, inline_let: bool = False) -> Any:
    """`func` (a PrimFunc or a one-function IRModule) simplified; returns a PrimFunc.
    `inline_let` (TileLang's: inline let-bound values first) is not supported and raises."""
    if inline_let:
        raise NotImplementedError("apply_simplify(inline_let=True): inlining let-bindings is not provided by "
                                  "tilelang-core; call it with inline_let=False")
    if isinstance(func, PrimFunc):
        mod = ir.IRModule({"main": func})
    elif isinstance(func, ir.IRModule):
        mod = func
    else:
        raise TypeError(f"apply_simplify: expected a T.prim_func or an IRModule, got {type(func).__name__}")
    functions = list(StmtSimplify()(mod).functions.values())
    if len(functions) != 1:
        raise ValueError(f"apply_simplify: the module holds {len(functions)} functions; pass one kernel")
    return functions[0]


def simplify_prim_func(factory: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate a function that returns a kernel so that it returns the kernel simplified."""

    @functools.wraps(factory)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return apply_simplify(factory(*args, **kwargs))

    return wrapper
