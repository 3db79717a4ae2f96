"""The tile IR: what `@T.prim_func` produces and the lowering passes consume.

A kernel is a `tvm.tirx.PrimFunc` (apache-tvm 0.27, tirx dialect, not `s_tir`) built by
TVMScript with the `tilelang_core.language` names in scope. Buffers are `tvm.ir.Var`s whose
type is `tvm.tirx.BufferType` (`buf.shape`, `buf.dtype`, `buf.scope()`; test with
`tvm.tirx.is_buffer_var`); a load `A[i, j]` is a `tvm.ir.TensorLoad` (`.source`, `.indices`).
Statements are flat: an `AllocBuffer` has no body, it declares the buffer for the rest of its
`SeqStmt`. The representation, construct by construct:

Parameters
    `T.Tensor(shape, dtype)` / `T.Buffer` -> a buffer param (scope "global"). A symbolic dim
    (`T.symbolic("m")`, `T.dynamic`) is a `tirx.Var("m", "int32")` in the shape. Scalar
    params (`n: T.int32`) stay scalar vars.

Kernel
    `T.Kernel(gx, gy, gz, threads=t)` -> nested `AttrStmt(IterVar, "thread_extent", extent)`
    from `launch_thread`, outermost first: blockIdx.x (gx), blockIdx.y, blockIdx.z (as many as
    grid dims given), then threadIdx.x (t; threadIdx.y/z too when `threads` is a tuple;
    `threads` defaults to 128). Block vars carry the user's names (`bx`, `by`), thread vars
    `tx`, `ty`, `tz` (unless the user binds `T.get_thread_binding()` to another name). The
    block size is the product of the threadIdx extents.

Allocations
    `AllocBuffer` in scope: alloc_shared "shared.dyn", alloc_fragment "local.fragment",
    alloc_local "local", alloc_var: shape (1,) in "local.var", followed by the store
    `x[0] = init` when `init=` is given (reads and `x = ...` in the kernel are `x[0]`).
    See `constants.SCOPE_*`. A (1,)-shaped allocation outside "local" has `layout=None`
    (TVM's printer would write it as a scalar declaration, which reads back as "local").

Tile ops
    `Evaluate(Call(Op "tl.<op>", args))`, result type handle, every op opaque
    (`TCallEffectKind` 3). A region argument is
    `tl.region(BufferLoad(buf, mins), access, *extents)` (one min and extent per buffer dim;
    access 1 read, 2 write, 3 read-write; `Region` is its view). Flags are int32 0/1, ints
    are int32 `IntImm`s, kinds and messages `StringImm`s. Argument orders:

    ================  ==========================================================================
    tl.copy           src(1), dst(2)
    tl.transpose      src(1), dst(2)  -- the last two axes swapped, same rank
    tl.fill           dst(2), value (in dst's dtype); T.clear is a fill with 0
    tl.gemm           A(1), B(1), C(3), transpose_A, transpose_B, policy (0 Square, 1 FullRow,
                      2 FullCol), clear_accum, M, N, K  -- M, N from C; K from A
    tl.reduce         src(1), dst(2; 3 when clear=0), kind ("max" "min" "sum" "abssum"
                      "absmax" "bitand" "bitor" "bitxor"; "max_nan" "min_nan" "absmax_nan"
                      propagate NaN), dim (>= 0), clear
    tl.cumsum         src(1), dst(2; 3 in place), dim (>= 0), reverse
    tl.cummax         as tl.cumsum, with max for + (a running maximum)
    tl.atomic         kind ("add" "max" "min"), dst(3), src(1) or a scalar value (in dst's
                      dtype), memory_order, use_tma  -- tile atomics
    tl.atomic_elem    kind (also "or"), BufferLoad dst, value (in dst's dtype), memory_order
                      -- one element; memory orders are ints, `codegen.builtins.MEMORY_ORDERS`
    tl.use_swizzle    panel_size, order ("row" | "col")
    tl.print          value (a PrimExpr) or region(1), msg
    tl.device_assert  cond, msg
    tl.reducer_info   reducer(2), op ("sum", "max", ...)  -- right after T.alloc_reducer: the
                      fragment's updates from many threads combine (see language/reducers.py)
    tl.finalize_reducer  reducer(3), dst(2) (the reducer itself for the in-place form), op[,
                      init]  -- combines the partials; dst gets the result (with init once)
    tl.init_barriers  barriers(2) (a whole "shared.barrier" buffer), arrive count of each
                      -- emitted by T.alloc_barrier where it stands
    tl.barrier_wait   BufferLoad barrier, parity  -- until the phase of that parity completed
    tl.barrier_arrive BufferLoad barrier  -- every running thread arrives once
    tl.tma_copy       src(1) global, dst(2) shared, BufferLoad barrier  -- a load whose
                      completion the barrier's current phase waits for (see `T.tma_copy`)
    ================  ==========================================================================

    A point operand of `T.copy` / tile atomics (`A[i, j]`) becomes a region with the other
    side's extents, trailing dims aligned, leading extents 1. The parser rejects shapes that
    are provably wrong: gemm K and C shape; copy, scan (cumsum, cummax) and atomic extents (unit dims aside);
    reduce destinations.

Thread groups
    `with T.ws(g0, ..., gk):` (consecutive group ids) -> `AttrStmt(k + 1,
    "tl.thread_groups", IntImm(g0))` (node: a plain int, the count first: a node 0 prints as dict sugar) around its body: the body runs on the threads of those
    groups only; the target's capability `thread_group_size` says how many threads a group has.
    `T.alloc_barrier(counts)` -> `AllocBuffer` of (len(counts),) "uint64" in scope
    "shared.barrier", then `tl.init_barriers`.

Layouts
    `T.annotate_layout({buf: layout})` -> one `AttrStmt(node, "tl.layout", value=buf)` per
    buffer around the rest of the enclosing scope; `node` is a `tirx.IndexMap` (int64 index
    vars) for `T.Layout(shape, fn)`, or the string "swizzled" (an FFI `String`, a `str`) for
    `T.make_swizzled_layout(buf)`.

Loops
    `T.Pipelined(n, num_stages=k)` / `T.Pipelined(lo, hi, ...)` -> a serial `For` annotated
    {"num_stages": k}, plus "tl_pipeline_order" / "tl_pipeline_stage" / "tl_pipeline_sync" /
    "tl_pipeline_group" when given. `T.Parallel(a, b)` -> nested `For`s of kind PARALLEL, one
    per extent (the innermost annotated "coalesced_width" if given). `T.serial/unroll/
    vectorized/grid` and `range` as in tirx.

Imported source and pointers
    `T.import_source(text)` -> the PrimFunc attribute `pragma_import_c` (a list of texts, each
    once, in order; see `imports.py`), printed ahead of the kernel; the kernel calls into it with
    `T.call_extern`. `T.access_ptr(base, "r"|"w"|"rw", offset=, extent=)` ->
    `tvm_access_ptr(type_annotation(dtype), address_of(buf[indices]), 0, extent, rw_mask)`.
    `T.dp4a(a, b, c)` -> `tl.dp4a` over three such pointers (`codegen.builtins`).
    `T.thread_binding(...)` inside `T.Kernel` -> the launched thread index itself: the parser
    merges the THREAD_BINDING loop into the launch (`language/bindings.py`).

Source lines
    The 0.27 parser attaches a `Span` (file, line) to every statement it builds, tile ops and
    each loop of a `T.Parallel` nest included; `source_of(stmt)` returns `(file, line)`
    (see `source.py`; code expanded from a `T.macro` reports the macro's line).

Helpers here: `Region`, `TileOp` (`TileOp.from_stmt`), `collect_tile_ops`, `is_tile_op`,
`tile_op_call`, `source_of`, `format_source`, `dtype_of` (0.27 exprs have `.ty`, not `.dtype`),
`make_call`, `get_op`, and the constants.
The constants load without TVM; everything else imports TVM on first use.
"""
from __future__ import annotations

import importlib
from typing import Any

from .constants import *  # noqa: F401,F403
from .constants import __all__ as _constants_all

_LAZY = {
    "Region": "region",
    "is_region_call": "region",
    "TileOp": "tileop",
    "collect_tile_ops": "tileop",
    "is_tile_op": "tileop",
    "tile_op_call": "tileop",
    "dtype_of": "exprs",
    "dtype_bytes": "exprs",
    "source_of": "source",
    "format_source": "source",
    "make_call": "ops",
    "get_op": "ops",
    "REGION_OP_NAME": "ops",
    "set_func_attr": "func_attrs",
    "hoist_func_attrs": "func_attrs",
}

__all__ = [*_constants_all, *_LAZY]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'tilelang_core.ir' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
