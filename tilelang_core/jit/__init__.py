"""Compiling tile programs into callable kernels, with a persistent cache.

The package also answers TileLang's `from tilelang.jit import ...` names (resolved on first
access, so importing the package loads nothing more): `compile`, `par_compile`, `jit`,
`JITKernel` (a compiled kernel) and `JITImpl` (what `@jit` returns; this package calls it `JITFunction`).
"""
from __future__ import annotations

import importlib
from typing import Any

_NAMES = {
    "compile": "api", "jit": "api", "JITKernel": "api",
    "JITFunction": "function", "JITImpl": "function:JITFunction", "par_compile": "parallel",
    # post-processing of generated source per target kind (a backend's instrumentation uses them)
    "register_postproc": "postproc", "registered_postproc": "postproc", "unregister_postproc": "postproc",
}

__all__ = sorted(_NAMES)


def __getattr__(name: str) -> Any:
    spec = _NAMES.get(name)
    if spec is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, _, attr = spec.partition(":")
    return getattr(importlib.import_module(f"{__name__}.{module}"), attr or name)
