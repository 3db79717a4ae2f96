"""`tilelang.contrib.cc`: the host C compiler (`get_cc`) and `cross_compiler`, which binds a
compile function to base options.

`cross_compiler(compile_func, options=None, output_format=None)` returns `fcompile(outputs,
objects, options=None)`, which calls `compile_func(outputs, objects, base + per-call)`: the
base options stay as given, so one call's options never leak into the next.
"""
from __future__ import annotations

import shutil
from typing import Any, Callable, Sequence

from ....env import host_c_compiler

__all__ = ["cross_compiler", "get_cc"]


def get_cc() -> str | None:
    """The host C compiler: `TILELANG_CC` or `CC`, else `cc`/`gcc`/`clang` on the PATH; None
    when there is none."""
    return host_c_compiler() or next((p for p in map(shutil.which, ("cc", "gcc", "clang")) if p), None)


def cross_compiler(compile_func: Callable[..., Any], options: Sequence[str] | None = None,
                   output_format: str | None = None) -> Callable[..., Any]:
    """`compile_func` with `options` prepended to every call's own options."""
    if not callable(compile_func):
        raise TypeError(f"cross_compiler: compile_func must be callable, got {type(compile_func).__name__}")
    base = list(options or [])

    def fcompile(outputs: Any, objects: Any, options: Sequence[str] | None = None) -> Any:
        return compile_func(outputs, objects, [*base, *(options or [])])

    if output_format is not None:
        fcompile.output_format = output_format
    return fcompile
