"""The kernel language, TileLang's names and meanings: `from tilelang_core import language as T`.

`@T.prim_func` parses a kernel into the tile IR described in `tilelang_core.ir`. Everything
TVMScript's tirx namespace offers (`T.int32(...)`, `T.Cast`, `T.evaluate`, `T.call_extern`,
math such as `T.exp2`, `T.max`, `T.if_then_else`, ...) is here too; this package's own
names take precedence. An unknown `T.name` raises AttributeError naming it; inside a
kernel every error becomes a `KernelSyntaxError` with the file, line and source text.

`x = T.alloc_var(dtype, init=)` is used as a scalar (`x = x + 1`, `x += 1`, `if x > 0`);
the IR holds a (1,)-shaped "local.var" buffer. Writing `x[0]` is not supported.

Importing this module imports TVM, registers the `tl.*` ops and the `T.tl` script namespace
(so printed kernels parse back), and teaches the tirx parser `for ... in T.Parallel(a, b)`.

A name this package does not define may come from an installed backend (the
`tilelang_language_names` hook: TileLang's `T.ptx_mma` where the CUDA backend is installed).
"""
from __future__ import annotations

import difflib
from typing import Any

import tvm.tirx.script.parser as _tirx

import tilelang_core.ir.ops  # noqa: F401 - registers the tl.* ops and the T.tl namespace

from . import (allocate, atomics, bindings, convolution, dtypes, eager, extern, groups, kernel, layout, let_values,
               loops, macros, math_intrinsics, memory_hints, misc, parser, random, reducers, sparse_gemm, tensor,
               threads, tuple_assign,
               tile_schedule, tileops, utilities)
from .allocate import *  # noqa: F401,F403
from .atomics import *  # noqa: F401,F403
from .bindings import *  # noqa: F401,F403
from .eager import *  # noqa: F401,F403
from .extern import *  # noqa: F401,F403
from .convolution import *  # noqa: F401,F403
from .groups import *  # noqa: F401,F403
from .kernel import *  # noqa: F401,F403
from .layout import *  # noqa: F401,F403
from .let_values import *  # noqa: F401,F403
from .loops import *  # noqa: F401,F403
from .macros import *  # noqa: F401,F403
from .math_intrinsics import *  # noqa: F401,F403
from .misc import *  # noqa: F401,F403
from .parser import *  # noqa: F401,F403
from .random import *  # noqa: F401,F403
from .reducers import *  # noqa: F401,F403
from .sparse_gemm import *  # noqa: F401,F403
from .memory_hints import *  # noqa: F401,F403
from .tensor import *  # noqa: F401,F403
from .threads import *  # noqa: F401,F403
from .tile_schedule import *  # noqa: F401,F403
from .tileops import *  # noqa: F401,F403
from .utilities import *  # noqa: F401,F403

loops.install_for_handler()
tuple_assign.install_tuple_assign_handler()
kernel.install_with_handler()

# TVMScript names this language does not take over: a different meaning here (Layout,
# Buffer, prim_func, alloc_*, the loop spellings) or none in a TileLang kernel.
_NOT_FROM_TIRX = {"jit", "Optional", "constexpr", "Ptr", "register_script_namespace"}

_OWN_NAMES = [
    *allocate.__all__,
    *atomics.__all__,
    *bindings.__all__,
    *eager.__all__,
    *extern.__all__,
    *convolution.__all__,
    *groups.__all__,
    *kernel.__all__,
    *layout.__all__,
    *let_values.__all__,
    *loops.__all__,
    *macros.__all__,
    *math_intrinsics.__all__,
    *misc.__all__,
    *parser.__all__,
    *random.__all__,
    *reducers.__all__,
    *sparse_gemm.__all__,
    *memory_hints.__all__,
    *tensor.__all__,
    *threads.__all__,
    *tile_schedule.__all__,
    *tileops.__all__,
    *utilities.__all__,
    *dtypes.DTYPE_HELPERS,
    *dtypes.DTYPES,
    "DType",
    "dtype",
    "to_dtype",
]
_OWN = set(_OWN_NAMES)

for _name in _tirx.__all__:
    if _name not in _OWN and _name not in _NOT_FROM_TIRX and hasattr(_tirx, _name):
        globals()[_name] = getattr(_tirx, _name)
globals().update(dtypes.DTYPES)
DType = dtypes.DType
dtype = dtypes.DType  # TileLang's name, for annotations (`x: T.dtype = T.float16`)
to_dtype = dtypes.to_dtype
for _name in dtypes.DTYPE_HELPERS:
    globals()[_name] = getattr(dtypes, _name)

_FROM_TIRX = {n for n in _tirx.__all__ if n not in _NOT_FROM_TIRX and n in globals()}
__all__ = sorted(set(_OWN_NAMES) | _FROM_TIRX)


# names of classes defined above the language (imports go down): resolved when asked
_LAZY = {"JITFunc": ("tilelang_core.jit.function", "JITFunction")}


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        return getattr(importlib.import_module(module), attr)
    from tilelang_core.plugin import get_plugin_manager

    # names installed backends add (TileLang's instructions for their hardware)
    offered, withheld = get_plugin_manager().language_names()
    if name in offered:
        return offered[name]
    if name in withheld:
        raise AttributeError(withheld[name])
    close = difflib.get_close_matches(name, __all__, n=3, cutoff=0.7)
    hint = f"; did you mean {', '.join('T.' + c for c in close)}?" if close else ""
    if "" in withheld:  # a backend's hook raised: its names may be the missing ones
        hint += f" ({withheld['']})"
    raise AttributeError(f"T.{name} is not part of the tilelang_core language{hint}")


def __dir__() -> list[str]:
    return list(__all__)
