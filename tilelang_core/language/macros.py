"""`@T.macro` with TileLang's `T.Ref` parameters.

`T.macro` is TVMScript's hygienic macro: its body is parsed in place at each call. A scalar
variable of the caller (`x = T.alloc_var(T.int32)`, or a plain `x = expr`, which this parser
makes a mutable one-element local) reaches the macro as itself, so an assignment to the
parameter (`x = 1`) stores to the caller's variable. A parameter annotated `T.Ref` states
that this is what the macro means: the call is refused, naming the argument, unless it passes
such a variable. An element of a larger buffer (`A[i]`, which TileLang also takes by
reference) is refused too: pass a variable, or give the macro the buffer and the index.
"""
from __future__ import annotations

import functools
import inspect
from typing import Any, Callable

import tvm.tirx.script.parser as _tirx
from tvm import ir
from tvm.tirx import is_buffer_var

__all__ = ["Ref", "macro"]


class Ref:
    """Annotation of a `@T.macro` parameter passed by reference (see the module)."""


def _is_ref(annotation: Any) -> bool:
    return annotation is Ref or (isinstance(annotation, str) and annotation.split(".")[-1] == "Ref")


def _scalar_variable(value: Any) -> Any:
    """The caller's variable `value` names (a one-element local buffer) as the parser reads
    it (`x[0]`: an assignment to a name bound to it stores there), or None."""
    buffer = value.source if isinstance(value, ir.TensorLoad) else value
    if not (is_buffer_var(buffer) and str(buffer.scope()) in ("local.var", "local")
            and len(buffer.ty.shape) == 1 and str(buffer.ty.shape[0]) == "1"):
        return None
    return value if isinstance(value, ir.TensorLoad) else buffer[0]


def _reference(value: Any, name: str, macro_name: str) -> Any:
    variable = _scalar_variable(value)
    if variable is None:
        what = "an element of a buffer" if isinstance(value, ir.TensorLoad) else f"{type(value).__name__} {value!r}"
        raise ValueError(f"T.macro {macro_name}: `{name}: T.Ref` is passed by reference and needs a scalar variable "
                         f"of the caller (x = T.alloc_var(dtype)), got {what}; pass a variable, or give the macro "
                         f"the buffer and its index")
    return variable


def macro(*args: Any, hygienic: bool = True) -> Callable:
    """TVMScript's `@T.macro` (or `@T.macro(hygienic=...)`), checking `T.Ref` parameters."""

    def decorate(func: Callable) -> Callable:
        inner = _tirx.macro(func, hygienic=hygienic)
        signature = inspect.signature(func)
        refs = [n for n, p in signature.parameters.items() if _is_ref(p.annotation)]
        if not refs:
            return inner

        @functools.wraps(func)
        def call(*call_args: Any, **call_kwargs: Any) -> Any:
            bound = signature.bind(*call_args, **call_kwargs)
            for name in refs:
                if name in bound.arguments:
                    bound.arguments[name] = _reference(bound.arguments[name], name, func.__name__)
            return inner(*bound.args, **bound.kwargs)

        return call

    if len(args) == 1 and inspect.isfunction(args[0]):
        return decorate(args[0])
    if args:
        raise ValueError("Invalid use of T.macro. Usage: @T.macro or @T.macro(hygienic=...)")
    return decorate


setattr(macro, "dispatch_token", getattr(_tirx.macro, "dispatch_token", "tir.macro"))
