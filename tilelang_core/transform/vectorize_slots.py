"""Register slots stored to memory as vectors: a fragment's epilogue (`T.copy(C_local, C[...])`).

After `partition_parallel`, a copy out of a fragment is one unrolled loop per thread over the
fragment's register slots: `for r: dst[idx(r)] = cast(reg[r])`. Accumulator layouts keep
consecutive slots on consecutive columns (an mma or wgmma thread holds pairs), so such a loop
stores runs of elements one at a time: twice or more the store instructions, and on sm_90a
ptxas then merges the pairs in place, in the accumulator registers, which serializes every
wgmma of the kernel (C7514; measured 10% slower on an H100 GEMM).

`vectorize_slot_stores` rewrites the loop to `lanes` slots per store when, for r = lanes*q + l:
the destination's indices other than the last do not move with l, the last moves by exactly l,
the first element of every run is a multiple of `lanes` (rows and the buffer's offset too), and
the loop body is nothing but that store of a register slot (cast or not). Each run is
converted element by element into a small register array, then stored as one vector (the
printers' vector copy). `lanes` starts at the core's `vector_lanes` (the target's
`vector_bytes` over the element, at most `max_vector_lanes`, dividing the slot count) and is
halved until the checks pass. A global destination records the alignment
it assumes (`ctx.facts["tensor_alignment"]`), which a call checks for each tensor.
"""
from __future__ import annotations

from tvm import ir as _ir
from tvm import tirx as tir
from tvm.sym import Analyzer

from .irutil import const, map_stmts, seq, substitute
from .vectorize import TENSOR_ALIGNMENT, _bytes, vector_lanes

__all__ = ["vectorize_slot_stores"]

_MEMORY = ("global", "shared", "shared.dyn")


def _slot_read(value, var) -> tir.Buffer | None:
    """The register buffer when `value` is `reg[var]` or a cast of it, else None."""
    inner = value.value if isinstance(value, tir.Cast) else value
    if isinstance(inner, _ir.TensorLoad) and inner.source.scope() == "local" and len(inner.indices) == 1 \
            and inner.indices[0].same_as(var):
        return inner.source
    return None


def _runs(store: tir.BufferStore, var, extent: int, lanes: int) -> bool:
    """Whether slots lanes*q + l (l < lanes) land on one aligned run of the last dimension."""
    q, lane = tir.Var("q", "int32"), tir.Var("l", "int32")
    ana = Analyzer()
    ana.bind(q, _ir.Range.from_min_extent(0, extent // lanes))
    ana.bind(lane, _ir.Range.from_min_extent(0, lanes))
    moved = [substitute(i, {var: q * lanes + lane}) for i in store.indices]
    first = [substitute(i, {var: q * lanes}) for i in store.indices]
    for a, b in zip(moved[:-1], first[:-1]):
        if not ana.can_prove(a == b):
            return False
    if not ana.can_prove(moved[-1] - first[-1] == lane):
        return False
    if not ana.can_prove(tir.floormod(first[-1], lanes) == 0):
        return False
    shape = store.buffer.shape
    if len(shape) > 1 and not ana.can_prove(tir.floormod(shape[-1], lanes) == 0):
        return False
    return ana.can_prove(tir.floormod(store.buffer.elem_offset, lanes) == 0)


def _vectorized(loop: tir.For, caps, facts: dict) -> tir.Stmt | None:
    store, var = loop.body, loop.loop_var
    if not isinstance(store, tir.BufferStore) or store.buffer.scope() not in _MEMORY:
        return None
    if not (isinstance(loop.min, tir.IntImm) and int(loop.min) == 0 and isinstance(loop.extent, tir.IntImm)):
        return None
    if _slot_read(store.value, var) is None:
        return None
    extent, size = int(loop.extent), _bytes(store.buffer.dtype)
    lanes = vector_lanes(caps, [store.buffer], extent)  # divides the extent, within max_vector_lanes
    while lanes > 1 and (lanes * size < 4 or not _runs(store, var, extent, lanes)):
        lanes //= 2
    if lanes < 2 or lanes * size < 4:
        return None
    if store.buffer.scope() == "global":
        facts[TENSOR_ALIGNMENT] = max(int(facts.get(TENSOR_ALIGNMENT, 1)), lanes * size)
    q, lane = tir.Var(f"{var.name}_v", "int32"), tir.Var(f"{var.name}_l", "int32")
    out = tir.decl_buffer((lanes,), store.buffer.dtype, name=f"{store.buffer.name}_vec", scope="local")
    compute = tir.For(lane, const(0), const(lanes), tir.ForKind.UNROLLED,
                      tir.BufferStore(out, substitute(store.value, {var: q * lanes + lane}), [lane]))
    first = [substitute(i, {var: q * lanes}) for i in store.indices]
    vector = tir.BufferStore(store.buffer, tir.BufferLoad(out, [tir.Ramp(const(0), const(1), lanes)]),
                             first[:-1] + [tir.Ramp(first[-1], const(1), lanes)], span=store.span)
    body = seq([tir.AllocBuffer(out), compute, vector])
    return tir.For(q, const(0), const(extent // lanes), loop.kind, body, annotations=loop.annotations or None,
                   span=loop.span)


def vectorize_slot_stores(func: tir.PrimFunc, ctx) -> tir.PrimFunc:
    """Store runs of register slots as vectors (module docstring); other loops are untouched."""
    if ctx is None or ctx.block_serial:
        return func

    def on_for(loop: tir.For):
        if int(loop.kind) not in (int(tir.ForKind.UNROLLED), int(tir.ForKind.SERIAL)):
            return loop
        out = _vectorized(loop, ctx.caps, ctx.facts)
        return loop if out is None else out

    return func.with_body(map_stmts(func.body, (tir.For,), on_for))
