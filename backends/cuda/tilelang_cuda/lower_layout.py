"""Shared tiles in the placement the user gave: `T.annotate_layout({buf: T.Layout(shape, fn)})`.

`T.Layout` says that element `idx` of a shared tile lives at `fn(*idx)` of a physical buffer
(TileLang's meaning; `make_mma_swizzle_layout` gives a 3-D placement of a 2-D tile:
column tile, row, swizzled column). Two passes honour it:

`plan_shared_layouts` (after `infer_layout`, before the tile ops are lowered) records in
`ctx.facts[SHARED_LAYOUTS]` a `SharedLayout` for each annotated shared tile, after checking
the map on every element: its outputs are non-negative, no two elements share a place, and it
says how many bytes of a row stay together: `run_bytes`, the largest of 16, 8 and 4 whose
aligned runs land on contiguous, aligned bytes (`keeps_chunks`: 16). The backend's own swizzle
(`plan_swizzles`) leaves these tiles alone. cp.async copies move `run_bytes` per instruction
(16 through L2 only, 8 or 4 through L1; a tile transposed by its layout takes one element per
cp.async, and a placement that splits even those takes the portable copy); ldmatrix reads
need whole 16-byte runs (a gemm is an error otherwise).

`apply_shared_layouts` (after tile-op lowering and thread partitioning, before `vectorize`)
replaces each such tile by a buffer of the physical shape and every access `buf[idx]` (loads,
stores, the addresses handed to cp.async / ldmatrix) by `phys[fn(*idx)]`. Before it, every
access of the kernel is in logical indices; after it, none names the logical tile. Leading
dims a lowering added (the stage of a pipelined tile) pass through unchanged.
"""
from __future__ import annotations

import operator
from dataclasses import dataclass

import numpy as np
from tvm import ir as _ir
from tvm import tirx as tir

from tilelang_core.ir import ATTR_LAYOUT
from tilelang_core.ir import source_of
from tilelang_core.transform import TileLangCompileError
from tilelang_core.transform import analyzer, walk

__all__ = ["SHARED_LAYOUTS", "SharedLayout", "plan_shared_layouts", "apply_shared_layouts", "apply_index_map"]

SHARED_LAYOUTS = "cuda.shared_layouts"  # ctx.facts key: shared buffer handle -> SharedLayout
_SHARED = ("shared", "shared.dyn")
CHUNK_BYTES = 16


def _key(node) -> int:
    return node.__chandle__()


# Index arithmetic over NumPy arrays (checking a map on every element) and over TIR (the
# rewritten accesses): one rebuild of the map's expressions, two sets of operators.
_BINARY = {
    tir.Add: (operator.add, operator.add),
    tir.Sub: (operator.sub, operator.sub),
    tir.Mul: (operator.mul, operator.mul),
    tir.FloorDiv: (np.floor_divide, tir.floordiv),
    tir.FloorMod: (np.mod, tir.floormod),
    tir.Div: (np.floor_divide, tir.truncdiv),  # indices are non-negative: truncation = floor
    tir.Mod: (np.mod, tir.truncmod),
    tir.BitwiseXor: (np.bitwise_xor, tir.bitwise_xor),
    tir.BitwiseAnd: (np.bitwise_and, tir.bitwise_and),
    tir.BitwiseOr: (np.bitwise_or, tir.bitwise_or),
    tir.LShift: (np.left_shift, tir.shift_left),
    tir.RShift: (np.right_shift, tir.shift_right),
    tir.Min: (np.minimum, tir.min),
    tir.Max: (np.maximum, tir.max),
}


class _Unsupported(Exception):
    pass


def _rebuild(expr, env: dict, numeric: bool):
    """`expr` (an index expression of a layout) with its index vars replaced by `env[key]`:
    NumPy integer arrays when `numeric`, int32 TIR expressions otherwise."""
    if isinstance(expr, tir.IntImm):
        return int(expr.value) if numeric else tir.const(int(expr.value), "int32")
    if isinstance(expr, tir.Var):
        if _key(expr) not in env:
            raise _Unsupported(f"the free variable {expr.name}")
        return env[_key(expr)]
    if isinstance(expr, tir.Cast) and "int" in str(expr.ty.dtype):
        return _rebuild(expr.value, env, numeric)
    ops = _BINARY.get(type(expr))
    if ops is not None:
        a, b = _rebuild(expr.a, env, numeric), _rebuild(expr.b, env, numeric)
        return ops[0](a, b) if numeric else ops[1](a, b)
    if isinstance(expr, tir.Select):
        c = _rebuild(expr.condition, env, numeric)
        x, y = _rebuild(expr.true_value, env, numeric), _rebuild(expr.false_value, env, numeric)
        return np.where(c, x, y) if numeric else tir.Select(c, x, y)
    comparisons = {tir.EQ: operator.eq, tir.NE: operator.ne, tir.LT: operator.lt, tir.LE: operator.le,
                   tir.GT: operator.gt, tir.GE: operator.ge}
    if type(expr) in comparisons:
        a, b = _rebuild(expr.a, env, numeric), _rebuild(expr.b, env, numeric)
        return comparisons[type(expr)](a, b)
    raise _Unsupported(type(expr).__name__)


def apply_index_map(index_map, indices: list, numeric: bool = False) -> list:
    """The outputs of `index_map` (a `T.Layout`'s IndexMap) at `indices`."""
    env = {_key(v): i for v, i in zip(index_map.initial_indices, indices)}
    out = [_rebuild(e, env, numeric) for e in index_map.final_indices]
    if not numeric:
        out = [analyzer().simplify(e) for e in out]
    return out


@dataclass(frozen=True)
class SharedLayout:
    """The user's placement of a shared tile: element `idx` of the mapped (trailing) dims lives
    at `index_map(idx)` of a buffer of `physical_shape`."""

    index_map: object  # tvm.tirx.IndexMap
    logical_shape: tuple[int, ...]
    physical_shape: tuple[int, ...]
    run_bytes: int  # the largest of 16, 8, 4 whose aligned runs of a row stay contiguous and aligned; or 0
    origin: str  # "T.annotate_layout at line N", for messages

    @property
    def keeps_chunks(self) -> bool:
        """Whether every aligned 16-byte run of a row is 16 contiguous, aligned bytes."""
        return self.run_bytes == CHUNK_BYTES

    def physical(self, indices: list) -> list:
        """Physical indices of logical `indices` (leading unmapped dims pass through)."""
        lead = len(indices) - len(self.logical_shape)
        return [*indices[:lead], *apply_index_map(self.index_map, list(indices[lead:]))]

    def physical_buffer_shape(self, shape) -> list:
        lead = len(shape) - len(self.logical_shape)
        return [*shape[:lead], *(tir.const(d, "int32") for d in self.physical_shape)]


def _element_bits(buf) -> int:
    import tvm

    return tvm.runtime.DataType(str(buf.ty.dtype)).bits


def _check(buf, index_map, origin: tuple | None) -> SharedLayout:
    """The `SharedLayout` of `buf` under `index_map`, checked on every element."""
    where = f"T.annotate_layout at line {origin[1]}" if origin else "T.annotate_layout"
    shape = [d for d in buf.ty.shape]
    if not all(isinstance(d, tir.IntImm) for d in shape):
        raise TileLangCompileError(
            f"{where}: the layout of shared buffer {buf.name} needs a constant shape, got {list(shape)}", origin)
    shape = tuple(int(d) for d in shape)
    if len(index_map.initial_indices) != len(shape):
        raise TileLangCompileError(
            f"{where}: the layout of {buf.name} takes {len(index_map.initial_indices)} indices but the buffer "
            f"has {len(shape)} dims", origin)
    grids = np.indices(shape, dtype=np.int64)
    try:
        out = [np.broadcast_to(np.asarray(o, dtype=np.int64), shape)
               for o in apply_index_map(index_map, list(grids), numeric=True)]
    except _Unsupported as exc:
        raise TileLangCompileError(
            f"{where}: the layout of {buf.name} uses {exc}, which the CUDA backend cannot place; write "
            f"its index function with + - * // % and bit operations of the indices", origin) from None
    if any((o < 0).any() for o in out):
        raise TileLangCompileError(f"{where}: the layout of {buf.name} gives a negative index", origin)
    physical = tuple(int(o.max()) + 1 for o in out) if out else ()
    flat = np.ravel_multi_index(out, physical) if out else np.zeros(shape, np.int64)
    clash = _first_clash(flat)
    if clash is not None:
        a, b = (tuple(int(i) for i in np.unravel_index(pos, shape)) for pos in clash)
        raise TileLangCompileError(
            f"{where}: the layout of {buf.name} places elements {a} and {b} at the same index "
            f"{tuple(int(o.reshape(-1)[clash[1]]) for o in out)}", origin)
    run = _run_bytes(flat, int(np.prod(physical)), _element_bits(buf))
    return SharedLayout(index_map, shape, physical, run, where)


def _first_clash(flat: np.ndarray) -> tuple[int, int] | None:
    """Row-major positions of the first two elements placed at one offset, or None."""
    order = np.argsort(flat.reshape(-1), kind="stable")
    sorted_flat = flat.reshape(-1)[order]
    same = np.nonzero(sorted_flat[1:] == sorted_flat[:-1])[0]
    if same.size == 0:
        return None
    return int(order[same[0]]), int(order[same[0] + 1])


def _run_bytes(flat: np.ndarray, physical_size: int, bits: int) -> int:
    """The largest of 16, 8 and 4 bytes whose every aligned run along a row lands on
    contiguous, aligned bytes (the physical tile a whole number of such runs, so stages stay
    aligned), or 0 where none does."""
    if bits % 8 or bits > 64:
        return 0
    for size in (CHUNK_BYTES, 8, 4):
        if size * 8 < bits:
            break
        chunk = size * 8 // bits
        if not flat.shape or flat.shape[-1] % chunk or physical_size % chunk:
            continue
        runs = flat.reshape(*flat.shape[:-1], flat.shape[-1] // chunk, chunk)
        if (runs[..., 0] % chunk == 0).all() and (runs - runs[..., :1] == np.arange(chunk)).all():
            return size
    return 0


def plan_shared_layouts(func: tir.PrimFunc, ctx) -> tir.PrimFunc:
    """Record in `ctx.facts[SHARED_LAYOUTS]` the shared tiles with a `T.Layout` annotation."""
    layouts = ctx.facts.setdefault(SHARED_LAYOUTS, {})
    shared = {}
    walk(func.body, lambda a: shared.__setitem__(_key(a.buffer), a.buffer)
         if str(a.buffer.ty.storage_scope) in _SHARED else None, (tir.AllocBuffer,))

    def visit(attr):
        if attr.attr_key != ATTR_LAYOUT or not isinstance(attr.node, tir.IndexMap):
            return
        buf = shared.get(_key(attr.value))
        if buf is not None and _key(buf) not in layouts:
            layouts[_key(buf)] = _check(buf, attr.node, source_of(attr))

    walk(func.body, visit, (tir.AttrStmt,))
    return func


def apply_shared_layouts(func: tir.PrimFunc, ctx) -> tir.PrimFunc:
    """Every access of a tile in `ctx.facts[SHARED_LAYOUTS]` goes to its physical place."""
    import tvm_ffi

    layouts = ctx.facts.get(SHARED_LAYOUTS) or {}
    if not layouts:
        return func
    replaced: dict[int, tuple[object, SharedLayout]] = {}

    def on_alloc(a: tir.AllocBuffer):
        layout = layouts.get(_key(a.buffer))
        if layout is None:
            return a
        buf = a.buffer
        new = tir.decl_buffer(layout.physical_buffer_shape(list(buf.ty.shape)), str(buf.ty.dtype), name=buf.name,
                              scope=str(buf.ty.storage_scope))
        replaced[_key(buf)] = (new, layout)
        return tir.AllocBuffer(new)

    # allocations first (pre-order), so that every access below sees its replacement
    body = tvm_ffi.structural_map(func.body, ((tir.AllocBuffer, on_alloc),), order="pre")
    if not replaced:
        return func

    def on_store(s: tir.BufferStore):
        hit = replaced.get(_key(s.buffer))
        if hit is None:
            return s
        new, layout = hit
        return tir.BufferStore(new, s.value, layout.physical(list(s.indices)), span=s.span)

    def on_load(ld):
        hit = replaced.get(_key(ld.source))
        if hit is None:
            return ld
        new, layout = hit
        return tir.BufferLoad(new, layout.physical(list(ld.indices)))

    def on_attr(attr: tir.AttrStmt):
        if attr.attr_key == ATTR_LAYOUT and isinstance(attr.value, _ir.Var) and _key(attr.value) in replaced:
            return attr.body  # honoured: the annotation names the logical tile, which is gone
        return attr

    body = tvm_ffi.structural_map(body, ((tir.BufferStore, on_store), (_ir.TensorLoad, on_load),
                                         (tir.AttrStmt, on_attr)))
    left = []
    walk(body, lambda v: left.append(v.name) if _key(v) in replaced else None, (_ir.Var,))
    if left:
        raise TileLangCompileError(
            f"internal: shared tile {left[0]} has a T.Layout, but something refers to it other than by a load or "
            f"store (a raw pointer); the CUDA backend cannot place that access (please report)")
    return func.with_body(body)
