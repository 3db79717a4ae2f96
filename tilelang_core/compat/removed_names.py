"""TVM names apache-tvm 0.27 dropped that have a faithful stand-in, set inside a process that
runs the aliasing where the installed TVM lacks them (`add_removed_names()`).

`tvm.tirx.transform.AnnotateDeviceRegions`: older TVM ran it before `SplitHostDevice` to mark
the device regions; 0.27's `SplitHostDevice` annotates them itself ("first annotates device
regions within host functions, then splits them"), so the stand-in is a pass that leaves the
module as it is, and `AnnotateDeviceRegions` then `SplitHostDevice` gives what it gave.

`tvm.tirx.SizeVar` and `tvm.te.size_var`: TVM's variables for sizes.

In older TVM (and TileLang's fork) a `SizeVar` is a `Var` the arithmetic analyzer assumes
non-negative. 0.27 has no such class and no way to mark a variable so: each stand-in returns
a plain `tvm.tirx.Var` of that name and dtype. The difference is only what can be proved: a simplification that needs `n >= 0` is not made (the expression stays as written),
so results stay correct; give the analyzer the bound (`analyzer.bind(n, Range(0, ...))` or
`analyzer.update`) where a program needs it.
"""
from __future__ import annotations

from typing import Any

__all__ = ["AnnotateDeviceRegions", "SizeVar", "add_removed_names", "size_var"]


def SizeVar(name: str, dtype: Any = "int32", span: Any = None) -> Any:  # noqa: N802 - TVM's class name
    """A variable for a size: a `tvm.tirx.Var` (see the module doc)."""
    from tvm import tirx

    if not isinstance(name, str) or not name:
        raise TypeError(f"SizeVar(name, dtype): name must be a non-empty str, got {name!r}")
    return tirx.Var(name, dtype) if span is None else tirx.Var(name, dtype, span)


def size_var(name: str = "size", dtype: Any = "int32", span: Any = None) -> Any:
    """`tvm.te.size_var`: `SizeVar(name, dtype)`."""
    return SizeVar(name, dtype, span)


def AnnotateDeviceRegions() -> Any:  # noqa: N802 - TVM's pass name
    """`tvm.tirx.transform.AnnotateDeviceRegions`: the module unchanged (0.27's `SplitHostDevice`
    annotates the device regions itself; see the module doc)."""
    from tvm import tirx

    return tirx.transform.prim_func_pass(lambda func, _mod, _ctx: func, opt_level=0,
                                         name="tirx.AnnotateDeviceRegions")


def add_removed_names() -> None:
    """Set the names of the module doc where the installed TVM lacks them."""
    import importlib

    for module_name, name, value in (("tvm.tirx", "SizeVar", SizeVar), ("tvm.te", "size_var", size_var),
                                     ("tvm.tirx.transform", "AnnotateDeviceRegions", AnnotateDeviceRegions)):
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        if not hasattr(module, name):
            setattr(module, name, value)
