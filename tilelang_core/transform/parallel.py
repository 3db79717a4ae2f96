"""partition_parallel: decide how `T.Parallel` loops run on this target.

Before: loops of kind PARALLEL (from the user's `T.Parallel` and from the portable lowering of
tile ops) carry independent iterations over tile elements.
After, on block-serial targets: they are serial loops, and an innermost one whose body is
plain arithmetic is VECTORIZED (the C compiler gets a vectorization hint). SIMT targets
partition them over the threads of the block (see `simt.py`).
"""
from __future__ import annotations

from tvm import ir as _ir
from tvm import tirx as tir

from .irutil import map_stmts, walk

__all__ = ["partition_parallel"]


def _vectorizable(body: tir.Stmt) -> bool:
    ok = True

    def visit(node):
        nonlocal ok
        if isinstance(node, (tir.For, tir.While, tir.AllocBuffer)):
            ok = False
        elif isinstance(node, _ir.Call) and node.op.name.startswith(("tl.", "tir.call_extern")):
            ok = False

    walk(body, visit)
    return ok


def _serialize(func: tir.PrimFunc) -> tir.PrimFunc:
    def on_for(loop: tir.For):
        if loop.kind != tir.ForKind.PARALLEL:
            return loop
        kind = tir.ForKind.VECTORIZED if _vectorizable(loop.body) else tir.ForKind.SERIAL
        return tir.For(loop.loop_var, loop.min, loop.extent, kind, loop.body,
                       annotations=loop.annotations, step=loop.step, span=loop.span)

    return func.with_body(map_stmts(func.body, (tir.For,), on_for))


def partition_parallel(func: tir.PrimFunc, ctx) -> tir.PrimFunc:
    if ctx.block_serial:
        return _serialize(func)
    from .simt import partition_over_threads

    return partition_over_threads(func, ctx)
