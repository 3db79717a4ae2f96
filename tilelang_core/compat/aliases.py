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
`subspace_divide`, ... all present in `tvm.sym`); names 0.27 removed or moved elsewhere
(`tvm.tirx.stmt_functor`, whose work `tvm_ffi.structural_map` does now, and `tvm.tirx.Call`)
are not bridged: using one is an AttributeError, never a silent substitute. A class that only
changed its name (`TVM_NAME_RENAMES`) is bridged under its old name, and `expr.dtype`, which
0.27 keeps only on buffer variables, answers on every expression (`exprs.add_expr_dtype`).
"""
from __future__ import annotations

__all__ = ["CORE_ALIASES", "TVM_RENAMES", "TVM_NAME_RENAMES", "PACKAGE"]

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
    "tilelang.profiler": "tilelang_core.runtime.profiler",
    "tilelang.profiler.bench": "tilelang_core.runtime.profiler",
    # `tilelang.math`: `cdiv` and `next_power_of_2`
    "tilelang.math": "tilelang_core.compat.names",
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
}
