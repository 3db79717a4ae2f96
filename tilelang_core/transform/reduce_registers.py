"""`T.reduce_*` of a register fragment into a register fragment, on SIMT targets.

Applies when layout inference kept both fragments in registers and gave the result the
projection of the source's layout (`Fragment.project`): every thread holds the rows (kept
indices) its source slots touch, replicated over the threads that share a row. Per thread and
result slot:
1. the thread folds its own source slots of that row (registers only);
2. the holders of the row differ in some thread-index bits (`Fragment.replica_bits`); for the
   bits inside a warp a butterfly of `tl.shfl_xor` combines the lanes (targets with the
   "warp_shuffle" feature);
3. for bits across warps (or every bit, without shuffles) each thread writes its partial to a
   shared scratch tile, one barrier, and every holder folds the partials of its row.
Every holder ends with the result in its own register; no barrier is needed unless step 3 runs.
Anything else (a source or result in shared memory, layouts that do not project) takes the
portable lowering.
"""
from __future__ import annotations

import numpy as np
from tvm import tirx as tir

from ..codegen import builtins
from ..ir import TileOp
from .irutil import const, seq

__all__ = ["lower_register_reduce", "combine_replicas", "ACROSS"]

# across threads the partial results combine by the outer operation
ACROSS = {"max": "max", "min": "min", "sum": "sum", "abssum": "sum", "absmax": "max",
          "bitand": "bitand", "bitor": "bitor", "bitxor": "bitxor",
          "max_nan": "max_nan", "min_nan": "min_nan", "absmax_nan": "max_nan"}


def _feeds(src, dst, kept: list[int]) -> list[list[int]] | None:
    """`feeds[d]`: the source slots a thread folds into result slot d (the same in every
    thread), or None."""
    table = src.table()
    if kept:
        rows = np.ravel_multi_index(tuple(table[:, :, d] for d in kept), dst.shape)
        slots = dst.slot_table()[rows]
    else:
        slots = np.zeros(table.shape[:2], np.int64)
    if not (slots == slots[:1]).all():
        return None
    feeds = [[] for _ in range(dst.slots)]
    for s, d in enumerate(slots[0]):
        feeds[int(d)].append(s)
    return feeds


def lower_register_reduce(op: TileOp, ctx) -> tir.Stmt | None:
    from .portable import reduce_combine, reduce_init

    if ctx.block_serial:
        return None
    src, dst = op.regions[:2]
    layouts = ctx.layouts
    if not all(r.covers_constant_buffer() and layouts.in_registers(r.buffer) for r in (src, dst)):
        return None
    dim = op.int_arg(3)
    kept = [d for d in range(len(src.buffer.shape)) if d != dim]
    f, g = layouts.get(src.buffer), layouts.get(dst.buffer)
    if f.replicate > 1:  # the holders of a source element would each add it in
        return None
    feeds = _feeds(f, g, kept)
    bits = g.replica_bits()
    if feeds is None or bits is None or any(not x for x in feeds):
        return None
    kind, clear = op.str_arg(2), bool(op.int_arg(4))
    across = ACROSS[kind]
    dtype = str(dst.buffer.dtype)
    src_reg, dst_reg = ctx.register_buffer(src.buffer), ctx.register_buffer(dst.buffer)
    acc = tir.decl_buffer((g.slots,), dtype, name=f"{kind}_acc", scope="local")

    def value(s):
        v = tir.BufferLoad(src_reg, [s])
        return v if str(src_reg.dtype) == dtype else tir.Cast(dtype, v)

    def own_rows(thread):
        out = []
        for d, slots in enumerate(feeds):
            # a balanced tree: independent combines the hardware can overlap
            terms = [reduce_combine(kind, reduce_init(kind, dtype), value(s)) if kind in ("abssum", "absmax", "absmax_nan")
                     else value(s) for s in slots]
            while len(terms) > 1:
                terms = [reduce_combine(across, terms[i], terms[i + 1]) if i + 1 < len(terms) else terms[i]
                         for i in range(0, len(terms), 2)]
            out.append(tir.BufferStore(acc, terms[0], [d]))
        return out

    def store(d, result):
        if clear:
            return tir.BufferStore(dst_reg, result, [d])
        return tir.BufferStore(dst_reg, reduce_combine(across, tir.BufferLoad(dst_reg, [d]), result), [d])

    return combine_replicas(ctx, g, across, acc, own_rows, store, kind, span=op.stmt.span)


def combine_replicas(ctx, layout, across: str, acc: tir.Buffer, prepare, store, name: str, span=None) -> tir.Stmt:
    """Per thread: `prepare(thread)` fills `acc` (a local buffer of `layout.slots` partials),
    the partials of the threads holding the same elements (`layout.replica_bits()`) combine
    with `across`, and `store(slot, total)` takes each result. Lanes of a warp combine by a
    `tl.shfl_xor` butterfly (targets with "warp_shuffle"); warps through a shared scratch
    tile `<name>_partials` and one barrier (then a second, so the scratch can be reused)."""
    from .portable import reduce_combine

    bits = layout.replica_bits()
    warp = int(ctx.caps.warp_size)
    lane_bits = bits & (warp - 1) if "warp_shuffle" in ctx.caps.features else 0
    block_bits = bits & ~lane_bits
    slots = layout.slots
    dtype = str(acc.dtype)

    def partials(thread):
        out = [tir.AllocBuffer(acc)] + list(prepare(thread))
        for b in range(warp.bit_length()):
            if lane_bits & (1 << b):
                for d in range(slots):
                    mine = tir.BufferLoad(acc, [d])
                    out.append(tir.BufferStore(acc, reduce_combine(across, mine, builtins.shfl_xor(mine, 1 << b)), [d]))
        return out

    if not block_bits:
        return ctx.per_thread(lambda t: seq(partials(t) + [store(d, tir.BufferLoad(acc, [d])) for d in range(slots)]),
                              span=span)

    scratch = tir.decl_buffer((slots, ctx.threads), dtype, name=f"{name}_partials", scope="shared.dyn")
    others = [m for m in range(1, block_bits + 1) if m & block_bits == m]

    def publish(thread):
        return seq(partials(thread) + [tir.BufferStore(scratch, tir.BufferLoad(acc, [d]), [const(d), thread])
                                       for d in range(slots)])

    def gather(thread):
        out = []
        for d in range(slots):
            total = tir.BufferLoad(scratch, [const(d), thread])
            for m in others:
                total = reduce_combine(across, total, tir.BufferLoad(scratch, [const(d), tir.bitwise_xor(thread, const(m))]))
            out.append(store(d, total))
        return seq(out)

    from .simt import sync_threads

    return seq([tir.AllocBuffer(scratch), ctx.per_thread(publish, span=span), sync_threads(),
                ctx.per_thread(gather, span=span), sync_threads()])
