"""`@T.prim_func`: parse a kernel written in the language into a tile-IR `tvm.tirx.PrimFunc`.

Parsing is TVMScript's (the tirx dialect) with this package's names in scope; only the
error type differs. TVM's own `DiagnosticError` is printed by TVM's excepthook as a bare
"note: run with TVM_BACKTRACE=1" line when uncaught, so every parse error is re-raised as
`KernelSyntaxError`, a subclass that prints normally: the message, the file:line:column and
the offending source line.
"""
from __future__ import annotations

import inspect
import linecache
import re
import sys
from typing import Any, Callable

from tvm.error import DiagnosticError
from tvm.script.parser._core import parse, utils
from tvm.tirx import PrimFunc

from tilelang_core.ir.imports import hoist_import_sources

from . import kernel as _kernel
from .bindings import bind_thread_loops

__all__ = ["KernelSyntaxError", "prim_func"]

# TVMScript dispatches the parse of a decorated function on this token (tirx's parser).
_DISPATCH_TOKEN = "tirx"


class KernelSyntaxError(DiagnosticError):
    """A kernel that does not parse or is ill-formed. The message names the error, the
    user's `file:line:column` and shows the line."""


def _parse(func: Callable, outer_stack: list, check_well_formed: bool) -> PrimFunc:
    extra_vars = utils.inspect_function_capture(func)
    utils.resolve_closure_vars(func, extra_vars, outer_stack)
    _kernel._kernel_stack().clear()  # pylint: disable=protected-access
    try:
        result = parse(func, extra_vars, check_well_formed=check_well_formed)
    except KernelSyntaxError:
        raise
    except DiagnosticError as err:
        raise KernelSyntaxError(str(err) + _python_math_hint(str(err)) + _int32_literal_hint(str(err))) from None
    except OSError as err:
        raise OSError(
            f"T.prim_func: cannot read the source of {func.__qualname__} ({err}); TVMScript "
            "parses the source text, so define kernels in a .py file or a notebook cell, "
            "not in exec() or `python -c`"
        ) from None
    result = hoist_import_sources(result)  # T.import_source: markers -> the function's attribute
    try:
        result = bind_thread_loops(result)  # T.thread_binding: the kernel's own thread index
    except ValueError as err:
        raise KernelSyntaxError(f"error: {err}") from None
    setattr(result, "__name__", func.__name__)
    return result


# Errors Python raises when a function of numbers meets a symbolic kernel value.
_NOT_A_NUMBER = ("real number", "ufunc", "__round__", "bad operand type", "operator to Expr")
_MODULE_CALL = re.compile(r"\b(math|cmath|np|numpy|torch)\.(\w+)\s*\(")
_BUILTIN_CALL = re.compile(r"(?<![\w.])(max|min|abs|round|float|int)\s*\(")
_T_NAMES = {"maximum": "max", "minimum": "min", "fabs": "abs", "absolute": "abs", "power": "pow", "fmax": "max",
            "fmin": "min", "float": 'Cast("float32", ...)', "int": 'Cast("int32", ...)'}


def _python_math_hint(message: str) -> str:
    """Advice for a Python or NumPy math call given a kernel value (`math.sqrt(A[i])`): such
    functions compute on numbers while the kernel is parsed; `T.sqrt` builds the kernel's
    operation. "" when the error is something else."""
    where = re.search(r"--> (.+):(\d+):\d+", message)
    if where is None or not any(words in message for words in _NOT_A_NUMBER):
        return ""
    line = linecache.getline(where.group(1), int(where.group(2)))
    names = vars(sys.modules[__package__])  # the T namespace

    for found in list(_MODULE_CALL.finditer(line)) + list(_BUILTIN_CALL.finditer(line)):
        called = found.group(0).rstrip("( ").strip()
        name = _T_NAMES.get(found.group(found.lastindex), found.group(found.lastindex))
        if name.split("(")[0] in names:
            return (f"\nhint: {called}(...) computes on Python numbers while the kernel is parsed, and kernel values "
                    f"(tensor elements, loop and thread indices) are symbolic; use T.{name if '(' in name else name + '(...)'}"
                    " to compute it in the kernel")
    return ""


def _int32_literal_hint(message: str) -> str:
    """Advice for a constant past the int32 range meeting an int32 kernel value (loop and
    thread indices are int32): the index of a static dimension past 2**31 - 1 is computed in
    64 bits once one operand is."""
    if "exceeds range of int32" not in message:
        return ""
    return ("\nhint: loop and thread indices are int32, so a constant past 2**31 - 1 cannot meet them; "
            "compute that expression in 64 bits, e.g. T.Cast(\"int64\", bx) * 1024 + i < N or T.int64(N - 1024) + i")


def prim_func(
    func: Callable | None = None, *, private: bool = False, check_well_formed: bool = True
) -> Any:
    """Parse `func` into a tile-IR PrimFunc: `@T.prim_func` or `@T.prim_func(private=True)`.

    `private` (read by the parser from the decorator itself) drops the global symbol.
    Raises `KernelSyntaxError` with the user's source line on any error.
    """
    outer_stack = inspect.stack()

    def decorate(fn: Callable) -> PrimFunc:
        if not inspect.isfunction(fn):
            raise TypeError(f"T.prim_func decorates a function, got {fn!r}")
        if utils.is_defined_in_class(outer_stack, fn):
            return fn  # an IRModule class body parses it
        return _parse(fn, outer_stack, check_well_formed)

    if func is not None:
        return decorate(func)
    setattr(decorate, "dispatch_token", _DISPATCH_TOKEN)
    return decorate


setattr(prim_func, "dispatch_token", _DISPATCH_TOKEN)
