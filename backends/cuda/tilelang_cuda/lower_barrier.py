"""mbarriers and `T.tma_copy` on CUDA: `T.alloc_barrier`, `T.barrier_wait`, `T.barrier_arrive`.

- `tl.init_barriers`: thread 0 of the running threads initialises each barrier with its
  arrive count (`mbarrier.init`), fences the initialisation, then the running threads meet
  at a barrier (the block's, or the `T.ws` range's, which the core substitutes).
- `tl.barrier_wait` / `tl.barrier_arrive`: every running thread waits for the phase of the
  given parity (`mbarrier.try_wait.parity`, `test_wait` before sm_90) / arrives once.
- `tl.tma_copy(global, shared, barrier)`: not yet TMA (`cp.async.bulk.tensor` needs a tensor
  map built on the host): the running threads share the tile's 16-byte vectors, each issued
  with `cp.async` into the shared tile's placement (the swizzle a mma.sync `T.gemm` reads), then
  each thread's `cp.async.mbarrier.arrive` ties its copies to the barrier's current phase, so
  the phase completes only when the tile has landed. The user's `T.barrier_arrive` follows.
  A copy cp.async cannot do (alignment, dtype) takes the core's portable meaning: plain
  stores, published by that arrive.
"""
from __future__ import annotations

from tvm import tirx as tir

from tilelang_core.codegen import sync_threads
from tilelang_core.transform import as_copy, user_sync
from tilelang_core.transform import seq

from .lower_copy import async_copy_nest, plan_copy

__all__ = ["lower_barrier_op", "plan_tma_copy"]


def _extern(name: str, *args) -> tir.Stmt:
    return tir.Evaluate(tir.call_extern("void", name, *args))


def _address(load) -> tir.Expr:
    return tir.address_of(load)


def plan_tma_copy(op):
    """The cp.async plan of a `tl.tma_copy`, or None (the portable copy then)."""
    return plan_copy(as_copy(op))


def _init(op, ctx) -> tir.Stmt:
    from .lower_pipeline import sync_placed

    buf = op.regions[0].buffer
    counts = [int(c) for c in op.args[1:]]
    inits = [_extern("tl::mbarrier_init", _address(tir.BufferLoad(buf, [tir.const(i, "int32")])),
                     tir.const(c, "uint32")) for i, c in enumerate(counts)]
    inits.append(_extern("tl::fence_barrier_init"))
    once = ctx.per_thread(lambda t: tir.IfThenElse(t == 0, seq(inits), None), span=op.stmt.span)
    return sync_placed(seq([once, tir.Evaluate(sync_threads())]))


def _tma_copy(op, ctx, swizzles: dict, ana) -> tir.Stmt | None:
    plan = plan_tma_copy(op)
    if plan is None:
        return None
    barrier = op.args[2]
    nest = async_copy_nest(plan, swizzles.get(plan.dst.buffer.__chandle__()), op.stmt.span, ana)
    arrive = ctx.per_thread(lambda t: _extern("tl::cp_async_mbarrier_arrive", _address(barrier)), span=op.stmt.span)
    return user_sync(seq([nest, arrive]))


def lower_barrier_op(op, ctx, swizzles: dict, ana=None) -> tir.Stmt | None:
    """The CUDA lowering of a barrier op or `tl.tma_copy` (None: the portable one)."""
    if op.name == "init_barriers":
        return _init(op, ctx)
    if op.name == "barrier_wait":
        return _extern("tl::mbarrier_wait", _address(op.args[0]), tir.Cast("int32", op.args[1])
                       if str(op.args[1].ty.dtype) != "int32" else op.args[1])
    if op.name == "barrier_arrive":
        return _extern("tl::mbarrier_arrive", _address(op.args[0]))
    if op.name == "tma_copy":
        return _tma_copy(op, ctx, swizzles, ana)
    return None
