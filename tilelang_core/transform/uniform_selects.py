"""split_uniform_selects: a `T.Parallel` nest whose one store picks between two values by an
affine comparison of its indices runs without the comparison wherever the whole tile is on one
side of it.

Before: a nest of PARALLEL loops (bindings of names allowed before its store)

    for i, j in T.Parallel(M, N):
        q_idx = bx * M + i + past;  k_idx = k * N + j
        acc_s[i, j] = T.if_then_else(q_idx >= k_idx, 0, -inf)     # FlashAttention's causal mask

where the condition compares two integer expressions whose difference is linear in the nest's
indices with constant coefficients, and depends on something else too (`k`, `bx`).

After:

    if   (the condition holds at every (i, j)):  for i, j in T.Parallel(M, N): acc_s[i, j] = 0
    elif (it holds at none):                     for i, j in T.Parallel(M, N): acc_s[i, j] = -inf
    else:                                        the nest as it was

The two tests read only values fixed before the nest (the difference's extremes over the
nest's ranges), so every thread of a block takes the same branch. In a causal FlashAttention
the tiles under the diagonal then skip the per-element compares and selects. Runs on every
target, before `partition_parallel`.
"""
from __future__ import annotations

import tvm_ffi
from tvm import ir as _ir
from tvm import tirx as tir
from tvm.sym import detect_linear_equation

from .irutil import analyzer, is_scalar_buffer, map_stmts, mentions, seq, substitute, walk

__all__ = ["split_uniform_selects"]

_COMPARISONS = (tir.GE, tir.GT, tir.LE, tir.LT)


def _nest(loop: tir.For) -> tuple[list[tir.For], tir.Stmt]:
    """The perfect nest of PARALLEL loops starting at `loop`, and its innermost body."""
    loops = [loop]
    while isinstance(loops[-1].body, tir.For) and loops[-1].body.kind == tir.ForKind.PARALLEL:
        loops.append(loops[-1].body)
    return loops, loops[-1].body


def _inline(expr, bound: dict):
    """`expr` with loads of the scalars in `bound` (handle -> value) replaced by their values."""
    if not bound:
        return expr

    def on_load(load):
        return bound.get(load.source.__chandle__(), load)

    return tvm_ffi.structural_map(expr, ((_ir.TensorLoad, on_load),))


def _store(body: tir.Stmt) -> tuple[tir.BufferStore, list] | None:
    """The nest's one store of a tile element with the names assigned before it (scalars)
    inlined, and what a copy of the nest must keep before it: the scalar assignments when the
    scalars live outside the nest (nothing when the nest declares them); None when the body
    is anything else."""
    stmts = list(body.seq) if isinstance(body, tir.SeqStmt) else [body]
    bound: dict = {}
    declared = False
    for stmt in stmts[:-1]:
        if isinstance(stmt, tir.AllocBuffer) and is_scalar_buffer(stmt.buffer):
            declared = True
            continue
        if not (isinstance(stmt, tir.BufferStore) and is_scalar_buffer(stmt.buffer)):
            return None
        bound[stmt.buffer.__chandle__()] = _inline(stmt.value, bound)
    store = stmts[-1]
    if not isinstance(store, tir.BufferStore) or is_scalar_buffer(store.buffer):
        return None
    keep = [] if declared else stmts[:-1]
    return tir.BufferStore(store.buffer, _inline(store.value, bound),
                           [_inline(i, bound) for i in store.indices]), keep


def _select(value) -> tuple | None:
    if isinstance(value, _ir.Call) and isinstance(value.op, _ir.Op) and value.op.name == "prim.if_then_else":
        return tuple(value.args)
    return None


def _extremes(cond, loops: list[tir.For], parallel: set[int]) -> tuple | None:
    """(holds everywhere, holds nowhere) as expressions free of the nest's indices, or None
    when `cond` is not an affine comparison over them."""
    if not isinstance(cond, _COMPARISONS) or "int" not in str(cond.a.ty.dtype):
        return None
    # d >= 0 (or d > 0) is the condition
    d = cond.a - cond.b if isinstance(cond, (tir.GE, tir.GT)) else cond.b - cond.a
    strict = isinstance(cond, (tir.GT, tir.LT))
    indices = [loop.loop_var for loop in loops]
    coefficients = list(detect_linear_equation(d, indices))
    if len(coefficients) != len(indices) + 1 or not all(isinstance(c, tir.IntImm) for c in coefficients[:-1]):
        return None
    base = coefficients[-1]
    if mentions(base, parallel) or isinstance(analyzer().simplify(base), tir.IntImm):
        return None
    low, high = base, base
    for c, loop in zip(coefficients[:-1], loops):
        c = int(c)
        first, last = loop.min, loop.min + loop.extent - 1
        low = low + c * (first if c > 0 else last)
        high = high + c * (last if c > 0 else first)
    low, high = analyzer().simplify(low), analyzer().simplify(high)
    everywhere = tir.GT(low, 0) if strict else tir.GE(low, 0)
    nowhere = tir.LE(high, 0) if strict else tir.LT(high, 0)
    return everywhere, nowhere


def _copy(loops: list[tir.For], keep: list, store: tir.BufferStore, value) -> tir.Stmt:
    """The nest storing `value` after the statements in `keep`, with fresh loop variables."""
    fresh = {loop.loop_var: tir.Var(loop.loop_var.name, loop.loop_var.ty.dtype) for loop in loops}
    body = seq([*(substitute(s, fresh) for s in keep),
                tir.BufferStore(store.buffer, substitute(value, fresh), [substitute(i, fresh) for i in store.indices])])
    for loop in reversed(loops):
        body = tir.For(fresh[loop.loop_var], loop.min, loop.extent, loop.kind, body,
                       annotations=loop.annotations, span=loop.span)
    return body


def split_uniform_selects(func: tir.PrimFunc, ctx) -> tir.PrimFunc:
    """Split every eligible nest (module docstring)."""
    # only whole nests split: a condition that reads the index of an enclosing T.Parallel loop
    # is not uniform, and a nest's inner loops stay a perfect nest
    parallel: set[int] = set()
    inner: set[int] = set()  # loop variables of loops nested right inside a T.Parallel loop

    def note(f: tir.For):
        if f.kind == tir.ForKind.PARALLEL:
            parallel.add(f.loop_var.__chandle__())
            if isinstance(f.body, tir.For) and f.body.kind == tir.ForKind.PARALLEL:
                inner.add(f.body.loop_var.__chandle__())

    walk(func.body, note, (tir.For,))

    def on_for(loop: tir.For):
        if loop.kind != tir.ForKind.PARALLEL or loop.loop_var.__chandle__() in inner:
            return loop
        loops, body = _nest(loop)
        found = _store(body)
        if found is None:
            return loop
        store, keep = found
        select = _select(store.value)
        if select is None:
            return loop
        cond, when_true, when_false = select
        extremes = _extremes(cond, loops, parallel)
        if extremes is None:
            return loop
        everywhere, nowhere = extremes
        return tir.IfThenElse(everywhere, _copy(loops, keep, store, when_true),
                              tir.IfThenElse(nowhere, _copy(loops, keep, store, when_false), loop))

    return func.with_body(map_stmts(func.body, (tir.For,), on_for))
