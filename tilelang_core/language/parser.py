"""`@T.prim_func`: parse a kernel written in the language into a tile-IR `tvm.tirx.PrimFunc`.

Parsing is TVMScript's (the tirx dialect) with this package's names in scope; only the
error type differs. TVM's own `DiagnosticError` is printed by TVM's excepthook as a bare
"note: run with TVM_BACKTRACE=1" line when uncaught, so every parse error is re-raised as
`KernelSyntaxError`, a subclass that prints normally: the message, the file:line:column and
the offending source line.
"""
from __future__ import annotations

import inspect
from typing import Any, Callable

from tvm.error import DiagnosticError
from tvm.script.parser._core import parse, utils
from tvm.tirx import PrimFunc

from tilelang_core.ir.func_attrs import hoist_func_attrs
from tilelang_core.ir.imports import hoist_import_sources

from . import kernel as _kernel
from .bindings import bind_thread_loops
from .parse_checks import checked_stores, hint_for

__all__ = ["KernelSyntaxError", "prim_func"]

# TVMScript dispatches the parse of a decorated function on this token (tirx's parser).
_DISPATCH_TOKEN = "tirx"


class KernelSyntaxError(DiagnosticError):
    """A kernel that does not parse or is ill-formed. The message names the error, the
    user's `file:line:column` and shows the line. Where the error is a Python built-in
    exception a language function raised (a `ValueError` for a bad argument, a `TypeError`,
    ...), the `KernelSyntaxError` is an instance of that type too (`kernel_error`), so
    `except ValueError` catches it, as it catches the same call outside a kernel."""


_WITH_BUILTIN: dict[type, type] = {}


def _raised_inside(err: BaseException) -> BaseException | None:
    """The exception a parse error reports: the first one in `err`'s context chain that is
    not TVM's `DiagnosticError` wrapper."""
    seen = set()
    cause = err.__context__
    while isinstance(cause, DiagnosticError) and id(cause) not in seen:
        seen.add(id(cause))
        cause = cause.__context__
    return cause


def kernel_error(message: str, raised: BaseException | None = None) -> KernelSyntaxError:
    """A `KernelSyntaxError` with `message`; also an instance of `raised`'s type when that is a
    Python built-in exception type (a subclass of both, made once per type)."""
    kind = type(raised)
    if raised is None or kind.__module__ != "builtins" or not issubclass(kind, Exception):
        return KernelSyntaxError(message)
    cls = _WITH_BUILTIN.get(kind)
    if cls is None:
        try:
            cls = type("KernelSyntaxError", (KernelSyntaxError, kind),
                       {"__doc__": f"A KernelSyntaxError raised as a {kind.__name__} inside the kernel."})
        except TypeError:  # an exception type whose layout cannot be combined
            cls = KernelSyntaxError
        _WITH_BUILTIN[kind] = cls
    return cls(message)


def _parse(func: Callable, outer_stack: list, check_well_formed: bool) -> PrimFunc:
    extra_vars = utils.inspect_function_capture(func)
    utils.resolve_closure_vars(func, extra_vars, outer_stack)
    _kernel._kernel_stack().clear()  # pylint: disable=protected-access
    try:
        with checked_stores():
            result = parse(func, extra_vars, check_well_formed=check_well_formed)
    except KernelSyntaxError:
        raise
    except DiagnosticError as err:
        raise kernel_error(str(err) + hint_for(str(err)), _raised_inside(err)) from None
    except OSError as err:
        raise OSError(
            f"T.prim_func: cannot read the source of {func.__qualname__} ({err}); TVMScript "
            "parses the source text, so define kernels in a .py file or a notebook cell, "
            "not in exec() or `python -c`"
        ) from None
    result = hoist_import_sources(result)  # T.import_source: markers -> the function's attribute
    result = hoist_func_attrs(result)  # attributes set inside the body (T.disable_warp_group_reg_alloc, ...)
    try:
        result = bind_thread_loops(result)  # T.thread_binding: the kernel's own thread index
    except ValueError as err:
        raise kernel_error(f"error: {err}", err) from None
    setattr(result, "__name__", func.__name__)
    return result


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
