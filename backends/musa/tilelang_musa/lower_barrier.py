"""The core's barrier ops on mp_31's ASYNC barriers: `T.alloc_barrier`, `T.barrier_wait`,
`T.barrier_arrive` (and TileLang's `T.mbarrier_wait_parity` / `T.mbarrier_arrive`).

An ASYNC barrier is a hardware id (1..63, 0 reserved), not shared memory: the barriers of one
`T.alloc_barrier` take consecutive ids (`lower_tme.take_barrier_ids`, after those of the
pipelines), and `bars[i]` is id `first + i`.

- `tl.init_barriers`: thread 0 initialises each barrier (`__musa_async_init_arrival(id, warps,
  0)`); its arrive count must be whole warps (ASYNC barriers count warps: 32 threads each on
  mp_31); then the block meets at a barrier.
- `tl.barrier_wait(bar, parity)`: `__musa_async_wait(id, parity)`.
- `tl.barrier_arrive(bar)`: every running thread arrives; a warp's arrival counts once.
- `tl.tma_copy`: the core's portable meaning (plain stores published by the user's arrive).

Facts: Moore Threads' TileLang port prints these ops the same way
(src/target/codegen_musa.cc:1560-1625 at dd1cce9b).
"""
from __future__ import annotations

from tvm import tirx as tir

from tilelang_core.codegen import sync_threads
from tilelang_core.ir import ATTR_SYNC_PLACED, source_of
from tilelang_core.transform import CapabilityError, seq

from .lower_tme import take_barrier_ids

__all__ = ["lower_barrier_op", "BARRIER_OPS", "USER_BARRIERS"]

BARRIER_OPS = ("init_barriers", "barrier_wait", "barrier_arrive")
USER_BARRIERS = "musa.user_barriers"  # ctx.facts: barrier buffer handle -> its first ASYNC barrier id


def _extern(name: str, *args) -> tir.Stmt:
    return tir.Evaluate(tir.call_extern("void", name, *args))


def _init(op, ctx, warp: int) -> tir.Stmt:
    buf = op.regions[0].buffer
    counts = [int(c) for c in op.args[1:]]
    line = source_of(op.stmt)
    for c in counts:
        if c % warp:
            raise CapabilityError(
                f"T.alloc_barrier({counts}): an ASYNC barrier of {ctx.target} counts whole warps of {warp} threads "
                f"(capability 'async_barrier'), but an arrive count is {c}; give a multiple of {warp}, with every "
                f"thread of each arriving warp calling T.barrier_arrive", line)
    first = take_barrier_ids(ctx, len(counts), f"T.alloc_barrier({counts})", line)
    ctx.facts.setdefault(USER_BARRIERS, {})[buf.__chandle__()] = first
    inits = [_extern("tl_musa_barrier_init", tir.const(first + i, "uint32"), tir.const(c // warp, "uint32"))
             for i, c in enumerate(counts)]
    once = ctx.per_thread(lambda t: tir.IfThenElse(t == 0, seq(inits), None), span=op.stmt.span)
    return tir.AttrStmt(tir.const(0, "int32"), ATTR_SYNC_PLACED, tir.const(1, "int32"),
                        seq([once, tir.Evaluate(sync_threads())]))


def _barrier_id(load, ctx, op) -> tir.PrimExpr:
    first = ctx.facts.get(USER_BARRIERS, {}).get(load.source.__chandle__())
    if first is None:
        raise CapabilityError(f"T.{op.name} on {load.source.name}: the barrier is used before its T.alloc_barrier",
                              source_of(op.stmt))
    return tir.Cast("uint32", tir.const(first, "int32") + load.indices[0])


def lower_barrier_op(op, ctx) -> tir.Stmt | None:
    """The ASYNC-barrier lowering of a barrier op (None: not one)."""
    if op.name == "init_barriers":
        return _init(op, ctx, ctx.caps.warp_size)
    if op.name == "barrier_wait":
        parity = op.args[1]
        return _extern("tl_musa_barrier_wait", _barrier_id(op.args[0], ctx, op), tir.Cast("uint32", parity))
    if op.name == "barrier_arrive":
        return _extern("tl_musa_barrier_arrive", _barrier_id(op.args[0], ctx, op))
    return None
