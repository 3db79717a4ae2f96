"""Where TileLang's module paths live here: the core's table, and the TVM names that moved.

A TileLang path `tilelang.X.Y` resolves, in this order:
1. the longest entry of `CORE_ALIASES` that is a prefix of it (`tilelang` itself maps to
   `tilelang_core`, so `tilelang.language` is `tilelang_core.language`), when that module
   exists;
2. else the longest TileLang path a backend claims through `tilelang_compat_modules`;
3. else, when a claimed path lies below it (`tilelang.carver` above `tilelang.carver.arch.driver`),
   a stand-in package that holds only those claims;
4. else an ImportError saying tilelang-core does not provide it (and which backend owns it, if
   one claims it without providing it).

`TVM_RENAMES`: apache-tvm 0.27 renamed `tvm.tir` to `tvm.tirx` and `tvm.arith` to `tvm.sym`.
TileLang's current sources already say `tvm.tirx`, but they still say `tvm.arith` (its TVM
fork kept that name), and older TileLang programs say `tvm.tir`. Inside a process that runs
the aliasing, `tvm.tir` and `tvm.arith` are the renamed modules, both as imports
(`import tvm.tir`, `from tvm import arith`) and as attributes of `tvm`, when the installed TVM
lacks them. This honours every name that kept its meaning across the rename (for
`tvm.arith`: `Analyzer`, `IntervalSet`, `detect_iter_map`, `IterSplitExpr`, `IterMark`,
`subspace_divide`, ... all present in `tvm.sym`); names 0.27 removed are not bridged: using
one is an AttributeError, never a silent substitute. `tvm.tirx.Call`, which 0.27 moved to
`tvm.ir.Call` with a new constructor, is bridged by a stand-in that checks as `tvm.ir.Call` and
builds one from the old `(dtype, op, args)` order (`tirx_call.Call`).
Two kinds of TVM paths TileLang's tests use are provided by our own code, written over 0.27:
modules 0.27 dropped (`TVM_ADDED_MODULES`: `tvm.tirx.stmt_functor`, whose visitors
`tvm_ffi.structural_walk`/`structural_map` do now) and names TileLang's TVM fork adds to a
module 0.27 still has (`TVM_MODULE_EXTRAS`: `tvm.testing.requires_cuda`, ...). A class that only
changed its name (`TVM_NAME_RENAMES`) is bridged under its old name, and `expr.dtype`, which
0.27 keeps only on buffer variables, answers on every expression (`exprs.add_expr_dtype`).
"""
from __future__ import annotations

__all__ = ["CORE_ALIASES", "TVM_RENAMES", "TVM_NAME_RENAMES", "TVM_ADDED_MODULES", "TVM_MODULE_EXTRAS",
           "TVM_ATTRIBUTE_SUBMODULES", "PACKAGE"]

PACKAGE = "tilelang"

# TileLang module path -> our module, where the default (`tilelang` -> `tilelang_core`) would
# find nothing or something else. An alias never replaces a module the core already has at
# that path (the aliasing refuses it), so every entry here names a path the core leaves free.
CORE_ALIASES: dict[str, str] = {
    "tilelang": "tilelang_core",
    # `from tilelang import tvm`: the TVM we compile with
    "tilelang.tvm": "tvm",
    # TileLang's profiler package and its bench module: our profiler module holds both
    # (`Profiler`, `do_bench`)
    "tilelang.profiler": "tilelang_core.compat.modules.profiler",
    # `tilelang.math`: `cdiv` and `next_power_of_2`
    "tilelang.math": "tilelang_core.compat.names",
    # TileLang's public modules the core has no module of its own for (see compat.modules)
    "tilelang.engine": "tilelang_core.compat.modules.engine",
    "tilelang.backend": "tilelang_core.compat.modules.backend",
    "tilelang.cache": "tilelang_core.compat.modules.cache",
    "tilelang.contrib": "tilelang_core.compat.modules.contrib",
    # the named shared layouts (bank swizzles, linear, 8x8 fragments) and SwizzleMode
    "tilelang.layout.swizzle": "tilelang_core.language.swizzle",
    "tilelang.layout.swizzle_mode": "tilelang_core.language.swizzle",
    # `from tilelang.layout.fragment import Fragment`: the user-facing T.Fragment (the core's
    # tilelang_core.layout.fragment_model is the layout model inference works with)
    "tilelang.layout.fragment": "tilelang_core.language.layout",
    # `from tilelang.jit.kernel import JITKernel`
    "tilelang.jit.kernel": "tilelang_core.jit.api",
}

# old TVM module name -> the name apache-tvm 0.27 gives it
TVM_RENAMES: dict[str, str] = {
    "tvm.tir": "tvm.tirx",
    "tvm.arith": "tvm.sym",
}

# names apache-tvm 0.27 renamed inside a module, with their meaning kept: "module.old" ->
# "module.new". Set on the module (when it lacks the old name) in a process that runs the
# aliasing. `tirx.PrimExpr` is what TileLang's programs annotate expressions with; 0.27 calls
# the class `tvm.ir.Expr` (`IntImm`, `Var`, `Call` all derive from it).
TVM_NAME_RENAMES: dict[str, str] = {
    "tvm.tirx.PrimExpr": "tvm.ir.Expr",
    # the call node moved to `tvm.ir.Call`, its constructor reordered: a stand-in answers both
    "tvm.tirx.Call": "tilelang_core.compat.tirx_call.Call",
    # the arithmetic simplification pass, renamed in 0.27 (the pass config key moved with it)
    "tvm.tirx.transform.Simplify": "tvm.tirx.transform.StmtSimplify",
}

# TVM module paths apache-tvm 0.27 lacks -> our module standing for it (only where the installed
# TVM has no module of that name)
TVM_ADDED_MODULES: dict[str, str] = {
    "tvm.tirx.stmt_functor": "tilelang_core.compat.modules.stmt_functor",
}

# TVM module -> our module whose `__all__` names are set on it when it loads (those it lacks)
TVM_MODULE_EXTRAS: dict[str, str] = {
    "tvm.testing": "tilelang_core.compat.modules.tvm_testing",
}

# submodules of `tvm` that TileLang's programs read as attributes without importing them
# (`from tilelang import tvm` then `@tvm.testing.requires_package(...)`: TileLang's own
# `tilelang.testing` imports `tvm.testing` as a side effect, ours does not). In a process that
# runs the aliasing, reading `tvm.<name>` imports `tvm.<name>` on first use.
TVM_ATTRIBUTE_SUBMODULES: tuple[str, ...] = ("testing",)
