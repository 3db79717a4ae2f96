"""The `tl.*` TVM ops of the tile IR, and the `T.tl` script namespace that reads them back.

Importing this module registers every op once per process (`ir.RegisterOp`, an opaque
`TCallEffectKind` so no pass drops them, a `TScriptPrinterName` so they print as
`T.tl.copy(...)`) and registers the `tl` namespace on TVMScript's `T`, so that
`tvm.script.from_source(func.script())` rebuilds the same calls.

Every call is built by `make_call`, in one normal form: Python ints and bools become
`IntImm("int32")`, strings `StringImm`, floats `FloatImm("float32")`; the result type is
`handle`. The language and the script namespace both build through it, so a printed
function parses back structurally equal.
"""
from __future__ import annotations

from typing import Any

import tvm
from tvm import ir
from tvm.ir import _ffi_api as _ir_ffi

from .constants import TILE_OP_NAMES

__all__ = ["REGION_OP_NAME", "TLScriptNamespace", "get_op", "make_call", "to_expr"]

REGION_OP_NAME = "tl.region"

# tvm.tirx.CallEffectKind: 1 = pure, 3 = opaque (updates state; never removed as a no-op)
_EFFECT_PURE = 1
_EFFECT_OPAQUE = 3


def _register_all() -> None:
    existing = set(ir.Op.list_op_names())
    for name in (*TILE_OP_NAMES, REGION_OP_NAME):
        if name in existing:
            continue
        _ir_ffi.RegisterOp(name, f"tilelang tile op {name}")
        effect = _EFFECT_PURE if name == REGION_OP_NAME else _EFFECT_OPAQUE
        ir.register_op_attr(name, "TCallEffectKind", effect)
        ir.register_op_attr(name, "TScriptPrinterName", name, level=20)


def get_op(name: str) -> ir.Op:
    """The registered op `tl.<name>` (`name` may include the `tl.` prefix)."""
    return ir.Op.get(name if name.startswith("tl.") else f"tl.{name}")


def to_expr(value: Any) -> ir.Expr:
    """One argument in the normal form of tile-op calls."""
    if isinstance(value, ir.Expr):
        return value
    if isinstance(value, bool):
        return tvm.tirx.IntImm("int32", int(value))
    if isinstance(value, int):
        return tvm.tirx.IntImm("int32", value)
    if isinstance(value, float):
        return tvm.tirx.FloatImm("float32", value)
    if isinstance(value, str):
        return ir.StringImm(value)
    raise TypeError(f"cannot pass {type(value).__name__} {value!r} to a tile op")


def make_call(name: str, *args: Any) -> ir.Call:
    """`Call(handle, tl.<name>, args)` with every argument in normal form."""
    return ir.Call(get_op(name), [to_expr(arg) for arg in args], ret_ty="handle")


class TLScriptNamespace:
    """`T.tl` in printed tile IR: one method per op, arguments exactly as printed."""

    @staticmethod
    def region(load, access, *extents):
        return make_call("region", load, access, *extents)

    @staticmethod
    def copy(src, dst, *hints):
        return make_call("copy", src, dst, *hints)

    @staticmethod
    def transpose(src, dst):
        return make_call("transpose", src, dst)

    @staticmethod
    def fill(dst, value):
        return make_call("fill", dst, value)

    @staticmethod
    def gemm(a, b, c, transpose_a, transpose_b, policy, clear_accum, m, n, k, *wg_wait):
        return make_call("gemm", a, b, c, transpose_a, transpose_b, policy, clear_accum, m, n, k, *wg_wait)

    @staticmethod
    def gemm_sp(a, e, b, c, transpose_a, transpose_e, transpose_b, policy, clear_accum, m, n, k):
        return make_call("gemm_sp", a, e, b, c, transpose_a, transpose_e, transpose_b, policy, clear_accum, m, n, k)

    @staticmethod
    def reduce(src, dst, kind, dim, clear):
        return make_call("reduce", src, dst, kind, dim, clear)

    @staticmethod
    def cumsum(src, dst, dim, reverse):
        return make_call("cumsum", src, dst, dim, reverse)

    @staticmethod
    def cummax(src, dst, dim, reverse):
        return make_call("cummax", src, dst, dim, reverse)

    @staticmethod
    def atomic(kind, dst, src, memory_order, use_tma):
        return make_call("atomic", kind, dst, src, memory_order, use_tma)

    @staticmethod
    def atomic_elem(kind, dst, value, memory_order):
        return make_call("atomic_elem", kind, dst, value, memory_order)

    # the atomic builtins a kernel holds as expressions (return_prev, atomic_load/store)
    @staticmethod
    def atomic_add(dst, value, *order):
        from tilelang_core.codegen import builtins

        return builtins.atomic_add(dst, value, *order)

    @staticmethod
    def atomic_max(dst, value, *order):
        from tilelang_core.codegen import builtins

        return builtins.atomic_max(dst, value, *order)

    @staticmethod
    def atomic_min(dst, value, *order):
        from tilelang_core.codegen import builtins

        return builtins.atomic_min(dst, value, *order)

    @staticmethod
    def atomic_or(dst, value, *order):
        from tilelang_core.codegen import builtins

        return builtins.atomic_or(dst, value, *order)

    @staticmethod
    def atomic_load(src, order):
        from tilelang_core.codegen import builtins

        return builtins.atomic_load(src, order)

    @staticmethod
    def atomic_store(dst, value, order):
        from tilelang_core.codegen import builtins

        return builtins.atomic_store(dst, value, order)

    @staticmethod
    def dp4a(a_ptr, b_ptr, c_ptr):
        from tilelang_core.codegen import builtins

        return builtins.dp4a(a_ptr, b_ptr, c_ptr)

    @staticmethod
    def use_swizzle(panel_size, order):
        return make_call("use_swizzle", panel_size, order)

    @staticmethod
    def print(value, msg):  # noqa: A003 - the op is named print
        return make_call("print", value, msg)

    @staticmethod
    def device_assert(cond, msg):
        return make_call("device_assert", cond, msg)

    @staticmethod
    def init_barriers(barriers, *counts):
        return make_call("init_barriers", barriers, *counts)

    @staticmethod
    def barrier_wait(barrier, parity):
        return make_call("barrier_wait", barrier, parity)

    @staticmethod
    def barrier_arrive(barrier):
        return make_call("barrier_arrive", barrier)

    @staticmethod
    def tma_copy(src, dst, barrier):
        return make_call("tma_copy", src, dst, barrier)


def _register_namespace() -> None:
    import tvm.tirx.script.parser  # noqa: F401 - so the namespace lands on the parser's `T` too
    from tvm.tirx.script.builder import ir as builder_ir

    builder_ir.register_script_namespace("tl", TLScriptNamespace())


_register_all()
_register_namespace()
