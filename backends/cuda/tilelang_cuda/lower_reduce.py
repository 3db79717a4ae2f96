"""`T.reduce_{max,min,sum,abssum,absmax}(src, dst, dim=1)` with warp shuffles.

Applies when `src` is a 2-D register fragment whose layout keeps each row inside one warp
(`layout.RowGroups`): the mma.sync accumulator when its warps are stacked along M
(a row sits in the 4 lanes of one lane group), or the row layout this backend imposes on a
reduced fragment that has no other layout (a row over up to 32 consecutive lanes). Each
thread combines its own slots of a row, a butterfly of `__shfl_xor_sync` combines the lanes
that share the row, and the row's first lane writes `dst[row]`. Anything else takes the
portable reduction.
"""
from __future__ import annotations

from tvm import tirx as tir

from tilelang_core.ir import TileOp
from tilelang_core.transform.irutil import seq
from tilelang_core.transform.portable import reduce_combine, reduce_init

from .layout import row_layout

__all__ = ["reduce_layouts", "lower_reduce"]

UNROLL = tir.ForKind.UNROLLED


def _full_2d(region) -> tuple[int, int] | None:
    shape = region.buffer.ty.shape
    if region.scope != "local.fragment" or len(shape) != 2 or not all(isinstance(d, tir.IntImm) for d in shape):
        return None
    if not all(isinstance(lo, tir.IntImm) and int(lo) == 0 for lo in region.mins):
        return None
    if [int(e) if isinstance(e, tir.IntImm) else -1 for e in region.extents] != [int(d) for d in shape]:
        return None
    return int(shape[0]), int(shape[1])


def _rows_reduce(op: TileOp) -> tuple[int, int] | None:
    """(M, N) of a row reduction of a whole (M, N) fragment into a whole (M,) one."""
    if op.name != "reduce" or op.int_arg(3) != 1:
        return None
    src, dst = op.regions[:2]
    shape = _full_2d(src)
    d_shape = dst.buffer.ty.shape
    if shape is None or dst.scope != "local.fragment" or len(d_shape) != 1 or \
            not isinstance(d_shape[0], tir.IntImm) or int(d_shape[0]) != shape[0]:
        return None
    return shape


def reduce_layouts(op: TileOp, ctx) -> dict | None:
    """The row layout for a reduction's source (kept only if nothing imposed one earlier)."""
    shape = _rows_reduce(op)
    if shape is None or ctx.layouts.get(op.regions[0].buffer) is not None:
        return None
    layout = row_layout(*shape, ctx.threads)
    return None if layout is None else {op.regions[0].buffer: layout}






# across lanes the partial results combine by the outer operation
_ACROSS = {"max": "max", "min": "min", "sum": "sum", "abssum": "sum", "absmax": "max"}


def lower_reduce(op: TileOp, ctx) -> tir.Stmt | None:
    if _rows_reduce(op) is None:
        return None
    src, dst = op.regions[:2]
    layout = ctx.layout_of(src.buffer)
    groups = getattr(layout, "rows", None)
    if groups is None:
        return None
    kind, clear = op.str_arg(2), bool(op.int_arg(4))
    dtype = str(dst.buffer.ty.dtype)
    regs = ctx.register_buffer(src.buffer)
    acc = tir.decl_buffer((1,), dtype, name=f"{kind}_acc", scope="local")
    r, s = tir.Var("r", "int32"), tir.Var("s", "int32")

    def per_thread(thread):
        value = tir.BufferLoad(regs, [groups.slot(r, s)])
        if str(regs.dtype) != dtype:
            value = tir.Cast(dtype, value)
        row = groups.row(thread, r)
        result = tir.BufferLoad(acc, [0])
        if not clear:
            result = reduce_combine(_ACROSS[kind], tir.BufferLoad(dst.buffer, [row]), result)
        body = seq([
            tir.BufferStore(acc, reduce_init(kind, dtype), [0]),
            tir.For(s, tir.const(0, "int32"), tir.const(groups.per_row, "int32"), UNROLL,
                    tir.BufferStore(acc, reduce_combine(kind, tir.BufferLoad(acc, [0]), value), [0])),
            tir.Evaluate(tir.call_extern("void", f"tl::warp_allreduce_{_ACROSS[kind]}<{groups.lanes}>",
                                         tir.address_of(tir.BufferLoad(acc, [0])))),
            tir.IfThenElse(groups.writer(thread), tir.BufferStore(dst.buffer, result, [row]), None),
        ])
        return seq([tir.AllocBuffer(acc),
                    tir.For(r, tir.const(0, "int32"), tir.const(groups.rows, "int32"), UNROLL, body)])

    return ctx.per_thread(per_thread, span=op.stmt.span)
