"""`T.has_let_value(var)` / `T.get_let_value(var)`: the value a kernel under construction bound
to a variable.

TileLang's builder keeps a stack of let frames; these two ask it. Here the parser is
apache-tvm 0.27's: `x: T.let = expr` (and `x = T.bind(expr)`) emits an immutable `Bind`
of `x` into the enclosing scope, while a plain `x = expr` makes a mutable local scalar (a
one-element local buffer), which is not a binding. So, while a kernel is being parsed,
`T.get_let_value(x)` is the expression of the `Bind` of `x` in a scope that encloses the call
(None when there is none: the load of a plain assignment's scalar, a loop variable, a
parameter), and
`T.has_let_value(x)` says whether there is one. Outside a kernel under construction both
answer for no binding (False, None).
"""
from __future__ import annotations

from typing import Any

from tvm import ir, tirx
from tvm.script.ir_builder import IRBuilder

__all__ = ["get_let_value", "has_let_value"]


def _bound_value(var: Any, name: str) -> ir.Expr | None:
    if not isinstance(var, ir.Expr):
        raise TypeError(f"T.{name}: expects a variable (as bound by `x: T.let = expr`), got "
                        f"{type(var).__name__} {var!r}")
    if not isinstance(var, tirx.Var) or not IRBuilder.is_in_scope():  # e.g. a mutable scalar's load
        return None
    for frame in reversed(list(IRBuilder.current().frames)):
        for stmt in reversed(list(getattr(frame, "stmts", ()))):
            if isinstance(stmt, tirx.Bind) and stmt.var.same_as(var):
                return stmt.value
    return None


def has_let_value(var: Any) -> bool:
    """Whether `var` is bound (`x: T.let = expr`, `T.bind`) in a scope enclosing this point
    of the kernel being parsed."""
    return _bound_value(var, "has_let_value") is not None


def get_let_value(var: Any) -> ir.Expr | None:
    """The expression bound to `var` in a scope enclosing this point of the kernel being
    parsed, or None when it has no binding (see the module)."""
    return _bound_value(var, "get_let_value")
