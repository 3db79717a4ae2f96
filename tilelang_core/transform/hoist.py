"""hoist_allocations: buffers allocated inside loops are allocated before the outermost one.

Before: `T.alloc_shared` / `T.alloc_fragment` / `T.alloc_local` may sit inside a loop body
(TileLang programs often allocate inside `T.Pipelined`).
After: each such `AllocBuffer` with a constant shape sits just before the outermost serial,
unrolled, pipelined or while loop that contained it, in the same order (T.Parallel and
vectorized loops keep theirs). The meaning is unchanged: an allocation is scoped to
the block, and a buffer's contents at the start of an iteration were undefined anyway. Later
passes (pipelining, which issues the first copies before the loop; layout inference and
storage planning) then see every buffer before its first use.
"""
from __future__ import annotations

from tvm import tirx as tir

from .irutil import const, map_stmts, seq

__all__ = ["hoist_allocations"]


def _constant_shape(buffer) -> bool:
    return all(isinstance(d, tir.IntImm) for d in buffer.shape)


def hoist_allocations(func: tir.PrimFunc, ctx) -> tir.PrimFunc:
    def on_loop(loop):
        if isinstance(loop, tir.For) and loop.kind in (tir.ForKind.PARALLEL, tir.ForKind.VECTORIZED):
            return loop  # per-element scratch stays with its element
        found: list[tir.AllocBuffer] = []

        def take(alloc: tir.AllocBuffer):
            if not _constant_shape(alloc.buffer):
                return alloc
            found.append(alloc)
            return tir.Evaluate(const(0))

        body = map_stmts(loop.body, (tir.AllocBuffer,), take)
        if not found:
            return loop
        return seq([*found, _rebuilt(loop, body)])

    return func.with_body(map_stmts(func.body, (tir.For, tir.While), on_loop))


def _rebuilt(loop, body):
    if isinstance(loop, tir.While):
        return tir.While(loop.condition, body, span=loop.span)
    return tir.For(loop.loop_var, loop.min, loop.extent, loop.kind, body, annotations=loop.annotations,
                   step=loop.step, span=loop.span)
