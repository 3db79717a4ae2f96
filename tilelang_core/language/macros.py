"""`T.macro`: a function whose body is pasted into the kernel where it is called, and whose
final `return <expr>` is the call's value (TileLang's macros: `y = transform(x)`).

TVMScript's own macro (apache-tvm 0.27) pastes the body but emits a trailing `return` as the
kernel's `T.Return` and gives the call no value, so `A[i] = macro(A[i])` stored nothing and
crashed the process. Here a macro whose body ends in `return <expr>` pastes the statements
before it and evaluates `<expr>` in the macro's scope as the call's value; a `return` anywhere
else is refused with the line. A macro without a return value behaves as TVMScript's.

`T.Ref` parameters: a scalar
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
from tvm.script.parser._core import doc, scan_macro, utils
from tvm.tirx import is_buffer_var
from tvm.tirx.script.parser.entry import TIRMacro, block_name_suffix_context

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


class _ValueMacro(TIRMacro):
    """TVMScript's TIR macro, with TileLang's trailing `return <expr>` as the call's value."""

    def parse_macro(self, parser) -> Any:
        body = list(self.get_macro_def().body)
        final = body[-1] if body and isinstance(body[-1], doc.Return) else None
        if final is not None:
            body.pop()
        for node in body:
            self._refuse_inner_returns(parser, node)
        suffix = f"_{self.call_count}" if self.call_count > 0 else ""
        self.call_count += 1
        with block_name_suffix_context(suffix):
            parser.visit_body(body)
            return None if final is None or final.value is None else parser.eval_expr(final.value)

    def _refuse_inner_returns(self, parser, node) -> None:
        for child in _walk(node):
            if isinstance(child, doc.Return):
                parser.report_error(child, f"T.macro {self.func.__name__}: `return` is allowed only as the last "
                                           f"statement of a macro (its value is the call's value); restructure "
                                           f"the macro so that one final `return` gives the value")


def _walk(node):
    """`node` and every doc-AST node below it, outside nested function definitions."""
    yield node
    for name in getattr(node, "_FIELDS", ()):
        value = getattr(node, name, None)
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, doc.AST) and not isinstance(item, doc.FunctionDef):
                yield from _walk(item)


def macro(*args: Any, hygienic: bool = True) -> Callable:
    """Decorate a function as a macro (`@T.macro` or `@T.macro(hygienic=False)`): a hygienic
    macro resolves its free names where it is defined, a non-hygienic one where it is used."""

    def decorate(func: Callable) -> Callable:
        source, closure_vars = scan_macro(func, utils.inspect_function_capture(func))
        obj = _ValueMacro(source, closure_vars, func, hygienic)

        def wrapper(*call_args: Any, **kwargs: Any) -> Any:
            return obj(*call_args, **kwargs)

        wrapper.__name__ = getattr(func, "__name__", "macro")
        wrapper.__doc__ = func.__doc__
        signature = inspect.signature(func)
        refs = [n for n, p in signature.parameters.items() if _is_ref(p.annotation)]
        if not refs:
            return wrapper

        @functools.wraps(func)
        def call(*call_args: Any, **call_kwargs: Any) -> Any:  # T.Ref parameters checked first
            bound = signature.bind(*call_args, **call_kwargs)
            for name in refs:
                if name in bound.arguments:
                    bound.arguments[name] = _reference(bound.arguments[name], name, func.__name__)
            return wrapper(*bound.args, **bound.kwargs)

        return call

    if not args:
        return decorate
    if len(args) == 1 and inspect.isfunction(args[0]):
        return decorate(args[0])
    raise TypeError("T.macro: use it as @T.macro or @T.macro(hygienic=False), on a function")


setattr(macro, "dispatch_token", getattr(_tirx.macro, "dispatch_token", "tir.macro"))
