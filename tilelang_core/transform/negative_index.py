"""legalize_negative_index: a negative index counts from the end of its dimension, as in Python
(TileLang's `LegalizeNegativeIndex`).

Before: tile IR as written, where `A[-1]` or `B[-i]` (i in 1..n) may index a buffer.
After: every index of a load or store that is provably negative in every execution is
`extent + index`, simplified (`A[-1]` of a 1024-element dim is `A[1023]`, `B[-i]` is
`B[1024 - i]`); a vector index (`T.Ramp`, `T.Broadcast`) whose lanes are all provably
negative moves as a whole; one with some lanes provably negative and others not becomes a
`T.Shuffle` of its lanes, each moved when provably negative and, where its sign depends on
run-time values, chosen at run time (`T.Select(lane < 0, extent + lane, lane)`); so does one
whose lanes the known ranges allow below 0 (`A[T.Ramp(t - 2, 1, 4)]` for `t` in 0..3, TileLang's
issue 2554). A vector store that reads or writes through such an index becomes one scalar store
per lane (no printer spells a gather). An index (scalar or vector) with no lane known or allowed
to be negative is left as written: `check` and `guard_memory_access` judge it (a vector load of
`A[base:base+8]` stays one vector load; an index built from loaded values is unbounded, and left
alone). What is provable comes from loop ranges, thread extents and let-bound values.
"""
from __future__ import annotations

from tvm import ir
from tvm import tirx as tir
from tvm.sym import Analyzer

from .irutil import map_stmts, walk

__all__ = ["legalize_negative_index", "LegalizeNegativeIndex"]


class _Signs:
    """An analyzer that knows the kernel's loop ranges, thread extents and let values."""

    def __init__(self, func: tir.PrimFunc) -> None:
        self.ana = Analyzer()
        walk(func.body, self._learn, (tir.For, tir.AttrStmt, tir.Bind, tir.LetStmt))

    def _learn(self, stmt) -> None:
        try:
            if isinstance(stmt, tir.For):
                self.ana.bind(stmt.loop_var, ir.Range.from_min_extent(stmt.min, stmt.extent), True)
            elif isinstance(stmt, tir.AttrStmt) and stmt.attr_key == "thread_extent":
                var = stmt.node.var
                self.ana.bind(var, ir.Range.from_min_extent(tir.const(0, str(var.ty.dtype)), stmt.value), True)
            elif isinstance(stmt, (tir.Bind, tir.LetStmt)) and isinstance(stmt.value.ty, ir.PrimType) \
                    and "int" in str(stmt.value.ty.dtype):
                self.ana.bind(stmt.var, stmt.value, True)
        except Exception:  # noqa: BLE001 - a range or value the analyzer cannot take: stays unknown
            pass

    def proves(self, cond) -> bool:
        try:
            return bool(self.ana.can_prove(cond))
        except Exception:  # noqa: BLE001 - an expression the analyzer cannot take: not proven
            return False

    def may_be_negative(self, lane) -> bool:
        """Whether the ranges the analyzer knows allow `lane` below 0: its lower bound is negative
        and finite (an index built from loaded values, unbounded, is left to the checks)."""
        try:
            low = int(self.ana.const_int_bound(lane).min_value)
        except Exception:  # noqa: BLE001
            return False
        return -(1 << 31) < low < 0

    def moved(self, index, extent):
        """`index` of a dim of `extent` counted from the end where negative; None to keep it."""
        if not isinstance(getattr(index, "ty", None), ir.PrimType) or "int" not in str(index.ty.dtype):
            return None
        value = self.ana.simplify(index)
        lanes = value.ty.dtype.lanes
        zero = tir.const(0, str(value.ty.dtype).split("x")[0])
        if lanes == 1:
            return self.ana.simplify(_add(extent, index)) if self.proves(value < zero) else None
        if isinstance(value, tir.Broadcast):
            if self.proves(value.value < zero):
                return tir.Broadcast(self.ana.simplify(_add(extent, value.value)), value.lanes)
            return None
        if not isinstance(value, tir.Ramp):
            return None
        points = [self.ana.simplify(value.base + value.stride * k) for k in range(lanes)]
        negative = [self.proves(p < zero) for p in points]
        if all(negative):
            return tir.Ramp(self.ana.simplify(_add(extent, value.base)), value.stride, value.lanes)
        if not any(negative) and not self.may_be_negative(points[0] if _ascending(value) else points[-1]):
            return None  # no lane known or allowed by the known ranges to be negative: left as written
        wide = str(self.ana.simplify(_add(extent, value.base)).ty.dtype)  # an int64 dim keeps int64 lanes
        out = []
        for point, is_negative in zip(points, negative):
            if is_negative:
                lane = self.ana.simplify(_add(extent, point))
            elif self.proves(point >= zero):
                lane = point
            else:
                lane = self.ana.simplify(tir.Select(point < zero, _cast(wide, _add(extent, point)),
                                                    _cast(wide, point)))
            out.append(_cast(wide, lane))
        return tir.Shuffle(out, [tir.const(k, "int32") for k in range(lanes)])


def _ascending(ramp) -> bool:
    """Whether the ramp's stride is a non-negative constant (its first lane is the lowest)."""
    return isinstance(ramp.stride, tir.IntImm) and int(ramp.stride) >= 0


def _cast(dtype: str, value):
    return value if str(value.ty.dtype) == dtype else tir.Cast(dtype, value)


def _add(extent, index):
    scalar = str(index.ty.dtype).split("x")[0]
    wide = str(extent.ty.dtype) if "64" in str(extent.ty.dtype) else scalar
    return _cast(wide, extent) + _cast(wide, index)


def _new_indices(signs: _Signs, buffer, indices):
    shape = list(buffer.ty.shape)
    if len(shape) != len(indices):  # a flattened or reinterpreted access: nothing to count from
        return None
    out, changed = [], False
    for index, extent in zip(indices, shape):
        moved = signs.moved(index, extent)
        out.append(index if moved is None else moved)
        changed |= moved is not None
    return out if changed else None


_BINARY = (tir.Add, tir.Sub, tir.Mul, tir.Div, tir.Mod, tir.FloorDiv, tir.FloorMod, tir.Min, tir.Max,
           tir.EQ, tir.NE, tir.LT, tir.LE, tir.GT, tir.GE, tir.And, tir.Or)


def _lane(expr, k: int):
    """Lane `k` of the vector expression `expr` as a scalar expression, or None where this
    does not know how (a call, a reinterpretation)."""
    if not isinstance(getattr(expr, "ty", None), ir.PrimType) or expr.ty.dtype.lanes == 1:
        return expr
    if isinstance(expr, tir.Ramp):
        return expr.base + expr.stride * tir.const(k, str(expr.stride.ty.dtype))
    if isinstance(expr, tir.Broadcast):
        return expr.value
    if isinstance(expr, tir.Shuffle) and len(expr.vectors) == expr.ty.dtype.lanes \
            and all(v.ty.dtype.lanes == 1 for v in expr.vectors):
        return expr.vectors[int(expr.indices[k])]
    if isinstance(expr, ir.TensorLoad) and tir.is_buffer_var(expr.source):
        indices = [_lane(i, k) for i in expr.indices]
        return None if any(i is None for i in indices) else tir.BufferLoad(expr.source, indices)
    if isinstance(expr, tir.Cast):
        value = _lane(expr.value, k)
        return None if value is None else tir.Cast(str(expr.ty.dtype).split("x")[0], value)
    if isinstance(expr, _BINARY):
        a, b = _lane(expr.a, k), _lane(expr.b, k)
        return None if a is None or b is None else type(expr)(a, b)
    if isinstance(expr, tir.Select):
        parts = [_lane(e, k) for e in (expr.condition, expr.true_value, expr.false_value)]
        return None if any(p is None for p in parts) else tir.Select(*parts)
    return None


def _scalarized(store: tir.BufferStore) -> tir.Stmt | None:
    """A vector store whose indices became per-lane choices, as one scalar store per lane
    (no printer spells a gather), or None where a lane cannot be taken apart."""
    lanes = store.value.ty.dtype.lanes
    stores = []
    for k in range(lanes):
        indices = [_lane(i, k) for i in store.indices]
        value = _lane(store.value, k)
        if value is None or any(i is None for i in indices):
            return None
        stores.append(tir.BufferStore(store.buffer, value, indices, span=store.span))
    return tir.SeqStmt(stores)


def _has_shuffle_index(node) -> bool:
    found = []
    for index in node.indices:
        walk(index, found.append, (tir.Shuffle,))
    return bool(found)


def legalize_negative_index(func: tir.PrimFunc, ctx=None) -> tir.PrimFunc:
    """`func` with its provably negative indices counted from the end (see the module doc)."""
    signs = _Signs(func)

    def on_node(node):
        if isinstance(node, tir.BufferStore):
            indices = _new_indices(signs, node.buffer, list(node.indices))
            store = node if indices is None else tir.BufferStore(node.buffer, node.value, indices, span=node.span)
            loads: list = []
            walk(store.value, lambda e: loads.append(e) if _has_shuffle_index(e) else None, (ir.TensorLoad,))
            if (loads or indices is not None and _has_shuffle_index(store)) and store.value.ty.dtype.lanes > 1:
                return _scalarized(store) or node
            return store
        if not tir.is_buffer_var(node.source):
            return node
        indices = _new_indices(signs, node.source, list(node.indices))
        return node if indices is None else tir.BufferLoad(node.source, indices)

    body = map_stmts(func.body, (tir.BufferStore, ir.TensorLoad), on_node)
    return func if body.same_as(func.body) else func.with_body(body)


def LegalizeNegativeIndex():  # noqa: N802 - TileLang's pass name
    """`legalize_negative_index` as a TVM pass over every PrimFunc of a module."""
    return tir.transform.prim_func_pass(lambda func, _mod, _ctx: legalize_negative_index(func), opt_level=0,
                                        name="tl.LegalizeNegativeIndex")
