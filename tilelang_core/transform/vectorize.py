"""vectorize: vector accesses for the contiguous innermost loops of T.Parallel nests.

Block-serial targets: `partition_parallel` marks an innermost loop of plain arithmetic
VECTORIZED and the C compiler vectorizes it; nothing is left for this pass.

SIMT targets: when `partition_parallel` spreads a nest that touches no fragment over the
threads, it asks `vectorize_chunk` for the nest's body at `lanes` consecutive elements of the
innermost loop (`vector_lanes`: the target's `vector_bytes` over the widest element, at most
`max_vector_lanes`, halved until it divides the innermost extent). Every global access that
moves with the innermost index must be provably whole and aligned: unit stride along the
tensor's last dim, the first element's index a multiple of `lanes`, rows a multiple of
`lanes`, and no condition around it (a bounds check, a select); then each thread moves
`lanes` elements per global access (16 bytes: `uint4`, `float4`, `half2` x 4) — loads into a
register array, the arithmetic element by element, one vector store. Shared tiles stay one
element per access (a backend may still apply a swizzle to them). Anything else, a symbolic
extent included, stays one element per access. A kernel with vector accesses to global memory records the
alignment it assumes (`ctx.facts["tensor_alignment"]`), and a call checks it for each tensor.

Register slots stored to memory (a fragment's epilogue) become vector stores in the pass
itself (`vectorize_slots`). The pass is also the named point after which a backend adds its
own vectorizer.
"""
from __future__ import annotations

from tvm import DataType
from tvm import ir as _ir
from tvm import tirx as tir

from .irutil import analyzer, const, mentions, seq, substitute, walk

__all__ = ["vectorize", "vector_lanes", "vectorize_chunk", "TENSOR_ALIGNMENT"]

TENSOR_ALIGNMENT = "tensor_alignment"  # ctx.facts key: the byte alignment vector accesses assume


def vectorize(func, ctx):
    from .vectorize_slots import vectorize_slot_stores

    return vectorize_slot_stores(func, ctx)


def _bytes(dtype) -> int:
    return max(1, DataType(str(dtype)).bits // 8)


def vector_lanes(caps, buffers, extent: int) -> int:
    """How many consecutive elements one access moves for a body over `buffers` whose
    innermost loop has `extent` iterations: 1 when vectors do not pay."""
    widest = max((_bytes(b.dtype) for b in buffers), default=0)
    if not widest or caps.vector_bytes < 2 * widest:
        return 1
    lanes = min(caps.vector_bytes // widest, caps.max_vector_lanes)
    while lanes > 1 and extent % lanes:
        lanes //= 2
    return lanes


def _accesses(stmt):
    """(buffer, indices, is_store) of every memory access under `stmt`."""
    found = []

    def visit(node):
        if isinstance(node, tir.BufferStore):
            found.append((node.buffer, list(node.indices), True))
        elif isinstance(node, _ir.TensorLoad):
            found.append((node.source, list(node.indices), False))

    walk(stmt, visit, (tir.BufferStore, _ir.TensorLoad))
    return found


def _multiple(expr, lanes: int) -> bool:
    return analyzer().can_prove(tir.floormod(expr, lanes) == 0)


def _vector_base(buffer, indices, lane, lanes: int):
    """The index of the first element when `buffer[indices]` over `lane` in [0, lanes) is
    one whole aligned vector along the last dim of a global buffer; None otherwise."""
    if buffer.scope() != "global" or any(mentions(i, {lane.__chandle__()}) for i in indices[:-1]):
        return None
    size = _bytes(buffer.dtype) * lanes
    if size < 4 or size & (size - 1):
        return None
    last = indices[-1]
    base = analyzer().simplify(substitute(last, {lane: const(0)}))
    step = analyzer().simplify(last - base - lane)
    if not (isinstance(step, tir.IntImm) and int(step) == 0) or not _multiple(base, lanes):
        return None
    if len(buffer.shape) > 1 and not _multiple(buffer.shape[-1], lanes):
        return None
    if not _multiple(buffer.elem_offset, lanes):
        return None
    return base


def _guarded_loads(value, lane) -> bool:
    """Whether a load that moves with `lane` sits under a condition (if_then_else, select),
    or `value` calls what may have effects (a `tl.*` builtin, an extern function): those
    keep their order with the loads, one element at a time."""
    found = False
    key = {lane.__chandle__()}

    def visit(node):
        nonlocal found
        name = node.op.name if isinstance(node, _ir.Call) and isinstance(node.op, _ir.Op) else ""
        if name.startswith("tl.") or name == "tirx.call_extern":
            found = True
        guarded = isinstance(node, tir.Select) or name.endswith("if_then_else")
        if guarded and mentions(node, key):
            found = True

    walk(value, visit, (tir.Select, _ir.Call))
    return found


def vectorize_chunk(stmt: tir.Stmt, lane: tir.Var, lanes: int, facts: dict | None = None) -> tir.Stmt | None:
    """`stmt` (a store whose indices depend on `lane`) for all `lane` in [0, lanes) with
    vector accesses to global memory, or None when a global access that moves with `lane` is
    not a whole aligned vector, or none is (see the module docstring). Accesses to other
    memory (shared tiles, whose layout a backend may still rewrite) stay one element each.
    `facts` receives the global alignment the result assumes."""
    if not isinstance(stmt, tir.BufferStore) or _guarded_loads(stmt.value, lane):
        return None
    key = {lane.__chandle__()}
    ramps = {}  # a global access that moves with `lane` -> its vector indices
    for buffer, indices, _ in _accesses(stmt):
        if buffer.scope() != "global" or not any(mentions(i, key) for i in indices):
            continue
        base = _vector_base(buffer, indices, lane, lanes)
        if base is None:
            return None
        ramps[(buffer.__chandle__(), str(indices))] = indices[:-1] + [tir.Ramp(base, const(1), lanes)]
    if not ramps:
        return None
    if facts is not None:
        widest = max(_bytes(b.dtype) for b, _, _ in _accesses(stmt))
        facts[TENSOR_ALIGNMENT] = max(facts.get(TENSOR_ALIGNMENT, 1), widest * lanes)
    dst, value = stmt.buffer, stmt.value
    dst_ramp = ramps.get((dst.__chandle__(), str(list(stmt.indices))))
    if dst_ramp is not None and isinstance(value, _ir.TensorLoad) and str(value.source.dtype) == str(dst.dtype):
        src_ramp = ramps.get((value.source.__chandle__(), str(list(value.indices))))
        if src_ramp is not None:  # a copy: one vector load, one vector store
            return tir.BufferStore(dst, tir.BufferLoad(value.source, src_ramp), dst_ramp, span=stmt.span)
    staged, loads = {}, []

    def stage(ld):
        k = (ld.source.__chandle__(), str(list(ld.indices)))
        if k not in ramps:
            return ld
        if k not in staged:
            reg = tir.decl_buffer((lanes,), ld.source.dtype, name=f"{ld.source.name}_vec", scope="local")
            staged[k] = reg
            loads.append(tir.AllocBuffer(reg))
            loads.append(tir.BufferStore(reg, tir.BufferLoad(ld.source, ramps[k]), [tir.Ramp(const(0), const(1), lanes)]))
        return tir.BufferLoad(staged[k], [lane])

    import tvm_ffi

    value = tvm_ffi.structural_map(value, ((_ir.TensorLoad, stage),))
    whole = [tir.Ramp(const(0), const(1), lanes)]
    if dst_ramp is None:  # the store stays one element per lane (a shared tile)
        compute = tir.For(lane, const(0), const(lanes), tir.ForKind.UNROLLED,
                          tir.BufferStore(dst, value, list(stmt.indices), span=stmt.span))
        return seq([*loads, compute])
    out = tir.decl_buffer((lanes,), dst.dtype, name=f"{dst.name}_vec", scope="local")
    compute = tir.For(lane, const(0), const(lanes), tir.ForKind.UNROLLED, tir.BufferStore(out, value, [lane]))
    store = tir.BufferStore(dst, tir.BufferLoad(out, whole), dst_ramp, span=stmt.span)
    return seq([*loads, tir.AllocBuffer(out), compute, store])
