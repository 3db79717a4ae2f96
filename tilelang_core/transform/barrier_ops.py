"""The portable lowerings of the barrier tile ops (`tl.init_barriers`, `tl.barrier_wait`,
`tl.barrier_arrive`) and of `tl.tma_copy`; registered into `portable.PORTABLE_LOWERINGS`.

Barriers with phases (mbarriers) are a target's: the portable path has no meaning for them
and refuses them with the construct, the capability and the line. A target that declares the
"mbarrier" barrier capability lowers them through `tilelang_lower_tile_op`.

`tl.tma_copy` has a portable meaning: the running threads copy the tile with plain loads and
stores, inside an `ATTR_USER_SYNC` region (no barrier is added for it). The user's
`T.barrier_arrive` after it publishes the stores, which every thread made before arriving.
"""
from __future__ import annotations

from tvm import tirx as tir

from ..ir.constants import ATTR_USER_SYNC
from . import portable
from .errors import CapabilityError

__all__ = ["as_copy", "lower_barrier_op", "lower_tma_copy", "user_sync"]

_USER_NAMES = {"init_barriers": "T.alloc_barrier", "barrier_wait": "T.barrier_wait",
               "barrier_arrive": "T.barrier_arrive"}


def user_sync(stmt: tir.Stmt) -> tir.Stmt:
    """`stmt` marked as synchronized by the user's barriers (the core adds none for it)."""
    return tir.AttrStmt(tir.const(0, "int32"), ATTR_USER_SYNC, tir.const(1, "int32"), stmt)


def lower_barrier_op(op, ctx) -> tir.Stmt:
    raise CapabilityError(
        f"{_USER_NAMES[op.name]} needs barriers with phases (capability 'mbarrier'), which the portable "
        f"lowering of {ctx.target} does not provide; synchronize through T.copy / T.gemm / "
        f"T.Parallel (the compiler places the barriers) or compile for a target that has them", op.source)


def lower_tma_copy(op, ctx) -> tir.Stmt:
    return user_sync(portable.lower_copy(as_copy(op), ctx))


def as_copy(op):
    """`op` seen as a `tl.copy` of its two regions (same source line)."""
    from ..ir import TileOp
    from ..ir.ops import make_call

    call = make_call("copy", op.args[0], op.args[1])
    stmt = tir.Evaluate(call, span=op.stmt.span)
    return TileOp("copy", tuple(call.args), op.regions[:2], op.source, stmt)


portable.PORTABLE_LOWERINGS.update({
    "init_barriers": lower_barrier_op,
    "barrier_wait": lower_barrier_op,
    "barrier_arrive": lower_barrier_op,
    "tma_copy": lower_tma_copy,
})
