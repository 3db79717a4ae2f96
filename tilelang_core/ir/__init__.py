"""The tile IR: what `@T.prim_func` produces and the lowering passes consume.

A kernel is a `tvm.tirx.PrimFunc` (apache-tvm 0.27, non-`s_tir`), built by TVMScript with the
`tilelang_core.language` namespace. The representation, construct by construct:

Parameters
    `T.Tensor(shape, dtype)` / `T.Buffer` -> a buffer param (scope "global"). A symbolic
    dim (`T.symbolic("m")`, `T.dynamic`) is a `tirx.Var("m", "int32")` in the shape.
    Scalar params (`n: T.int32`) stay scalar vars.

Kernel
    `T.Kernel(gx, gy, gz, threads=t)` -> nested `AttrStmt("thread_extent")` from
    `launch_thread`, outermost first: blockIdx.x (gx), blockIdx.y, blockIdx.z (only as many
    as grid dims given), then threadIdx.x (t; threadIdx.y/z too if `threads` is a tuple).
    Block vars carry the user's names (`bx`, `by`); thread vars are `tx`, `ty`, `tz`.
    The block size is the product of the threadIdx extents.

Allocations (`AllocBuffer`, flat in the enclosing sequence)
    alloc_shared -> "shared.dyn", alloc_fragment -> "local.fragment", alloc_local -> "local",
    alloc_var -> shape (1,) in "local.var" followed by `x[0] = init` when `init=` is given.
    See `constants.SCOPE_*`. Allocations of shape (1,) outside "local" have `layout=None`
    (TVM's printer would otherwise print them as scalars of scope "local").

Tile ops: `Evaluate(Call(handle, Op "tl.<op>", args))`, every op opaque. Region arguments
    are `tl.region(BufferLoad(buf, mins), access, *extents)` (`Region` is the view; access
    1 read, 2 write, 3 read-write). Ints and flags are int32 `IntImm`s (flags 0/1), kinds
    are `StringImm`s. Argument orders:

    ===============  ===========================================================================
    tl.copy          src_region(1), dst_region(2)
    tl.fill          dst_region(2), value (in dst's dtype); T.clear is fill with 0
    tl.gemm          A(1), B(1), C(3), transpose_A, transpose_B, policy (0 Square, 1 FullRow,
                     2 FullCol), clear_accum, M, N, K
    tl.reduce        src(1), dst(2, or 3 when clear=0), kind ("max" "min" "sum" "abssum"
                     "absmax"), dim (>= 0), clear
    tl.cumsum        src(1), dst(2; 3 when in place), dim (>= 0), reverse
    tl.atomic        kind ("add" "max" "min"), dst(3), src(1)   -- tile atomics
    tl.atomic_elem   kind, BufferLoad dst, value (in dst's dtype) -- a point, e.g. in T.Parallel
    tl.use_swizzle   panel_size, order ("row" | "col")
    tl.print         value (a PrimExpr) or region(1), msg
    tl.device_assert cond, msg
    ===============  ===========================================================================

    A point argument of `T.copy` / `T.atomic_*` (`A[i, j]`) becomes a region whose extents
    are the other side's, trailing dims aligned, leading extents 1. Shapes are checked at
    parse time where they are constant (gemm M/N/K; copy extents without unit dims).

Layouts
    `T.annotate_layout({buf: layout})` -> `AttrStmt(node, "tl.layout", value=buf)` around the
    rest of the enclosing scope, one per buffer; `node` is a `tirx.IndexMap` (int64 index vars)
    for `T.Layout(shape, fn)`, or the string "swizzled" (an FFI `String`, a `str`) for
    `T.make_swizzled_layout(buf)`.

Loops
    `T.Pipelined(n, num_stages=k)` -> serial `For` annotated {"num_stages": k} (plus
    "tl_pipeline_order" / "tl_pipeline_stage" / "tl_pipeline_sync" / "tl_pipeline_group"
    when given). `T.Parallel(a, b)` -> nested `For`s of kind PARALLEL, one per extent.
    `T.serial/unroll/vectorized/grid` as in tirx.

Source lines
    The 0.27 parser attaches a `Span` (file, line) to each statement it builds, tile ops and
    loops included; `source_of(stmt)` returns `(file, line)` (see `source.py`).

Helpers here: `Region`, `TileOp` (`TileOp.from_stmt`), `collect_tile_ops`, `is_tile_op`,
`tile_op_call`, `source_of`, `format_source`, `make_call`, `get_op`, and the constants. The constants load
without TVM; everything else imports TVM on first use.
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
    "source_of": "source",
    "format_source": "source",
    "make_call": "ops",
    "get_op": "ops",
    "REGION_OP_NAME": "ops",
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
