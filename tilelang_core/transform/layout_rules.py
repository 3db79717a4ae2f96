"""The rules layout inference and the SIMT placement share: how a `T.Parallel` nest is
modelled (`Nest`, its fragment `Access`es), the layout it runs in (`nest_layout`), and whether
an access is local in it (`access_slots`). Both passes apply them, so they decide alike.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from tvm import ir as _ir
from tvm import tirx as tir

from ..ir.source import source_of
from ..layout import Fragment, FragmentError, FragmentLayouts, cyclic_fragment

__all__ = ["Access", "Nest", "make_nest", "parallel_nest", "scan_nests", "nest_layout", "access_slots",
           "evaluate_index", "fragment_layout_fits", "full_rank", "projection_dims", "fragment_accesses",
           "defining_access", "op_line", "buffer_key", "FRAGMENT"]

FRAGMENT = "local.fragment"


# --------------------------------------------------------------------------------- model


@dataclass
class Access:
    buffer: Any
    indices: list
    write: bool


@dataclass
class Nest:
    """A maximal nest of PARALLEL loops: its variables and extents (None: symbolic), the
    fragment accesses in its body, and whether the body writes memory other threads see."""

    loop_vars: list
    extents: list
    accesses: list[Access] = field(default_factory=list)
    effects: bool = False
    origin: str = ""


def buffer_key(buf) -> int:
    return buf.__chandle__()


def op_line(node, what: str) -> str:
    src = source_of(node)
    return f"{what} at line {src[1]}" if src else what


def parallel_nest(loop: tir.For) -> tuple[list, tir.Stmt]:
    """The loops of the maximal nest of PARALLEL loops that starts at `loop`, and its body."""
    loops = [loop]
    body = loop.body
    while isinstance(body, tir.For) and body.kind == tir.ForKind.PARALLEL:
        loops.append(body)
        body = body.body
    return loops, body


def fragment_accesses(stmt, fragments: dict) -> tuple[list[Access], bool]:
    """Fragment accesses under `stmt` and whether it writes non-register memory."""
    found: list[Access] = []
    effects = False

    def visit(node):
        nonlocal effects
        if isinstance(node, tir.BufferStore):
            if buffer_key(node.buffer) in fragments:
                found.append(Access(node.buffer, list(node.indices), True))
            elif node.buffer.scope() not in ("local", "local.var"):
                effects = True
        elif isinstance(node, _ir.TensorLoad):
            if buffer_key(node.source) in fragments:
                found.append(Access(node.source, list(node.indices), False))
        elif isinstance(node, _ir.Call) and isinstance(node.op, _ir.Op):
            name = node.op.name
            if name.startswith("tl.atomic") or name == "tl.printf":
                effects = True

    from .irutil import walk

    walk(stmt, visit, (tir.BufferStore, _ir.TensorLoad, _ir.Call))
    return found, effects


def make_nest(loop: tir.For, fragments: dict, origin: str = "") -> tuple[Nest, tir.Stmt]:
    """The `Nest` model of the maximal parallel nest that starts at `loop`, and its body."""
    loops, body = parallel_nest(loop)
    extents = [int(lp.extent) if isinstance(lp.extent, tir.IntImm) and isinstance(lp.min, tir.IntImm)
               and int(lp.min) == 0 else None for lp in loops]
    acc, effects = fragment_accesses(body, fragments)
    return Nest([lp.loop_var for lp in loops], extents, acc, effects, origin or op_line(loop, "T.Parallel")), body


def scan_nests(stmt, fragments: dict, origin: str = "") -> tuple[list[Nest], list[Access]]:
    """The parallel nests under `stmt` (in program order) and the fragment accesses outside
    any nest. `fragments` maps buffer handles to fragment buffers."""
    nests: list[Nest] = []
    outside: list[Access] = []

    def visit(s):
        if isinstance(s, tir.For) and s.kind == tir.ForKind.PARALLEL:
            nests.append(make_nest(s, fragments, origin)[0])
            return
        if isinstance(s, tir.SeqStmt):
            for x in s.seq:
                visit(x)
        elif isinstance(s, (tir.For, tir.While)):
            outside.extend(fragment_accesses(s.extent if isinstance(s, tir.For) else s.condition, fragments)[0])
            visit(s.body)
        elif isinstance(s, tir.AttrStmt):
            outside.extend(fragment_accesses(s.value, fragments)[0])
            visit(s.body)
        elif isinstance(s, tir.IfThenElse):
            outside.extend(fragment_accesses(s.condition, fragments)[0])
            visit(s.then_case)
            if s.else_case is not None:
                visit(s.else_case)
        else:
            outside.extend(fragment_accesses(s, fragments)[0])

    visit(stmt)
    return nests, outside


# --------------------------------------------------------------------------------- rules


def full_rank(access: Access, nest: Nest) -> bool:
    """`access` indexes its buffer by exactly the nest's variables, in order, over its shape."""
    if len(access.indices) != len(nest.loop_vars) or None in nest.extents:
        return False
    shape = [int(d) if isinstance(d, tir.IntImm) else None for d in access.buffer.shape]
    return shape == nest.extents and all(
        isinstance(i, tir.Var) and i.same_as(v) for i, v in zip(access.indices, nest.loop_vars))


def projection_dims(access: Access, nest: Nest) -> list[int] | None:
    """The nest dims that index `access`'s buffer when it is indexed by an increasing subset
    of the nest's variables over its whole shape (`m[i]` in an `i, j` nest: [0])."""
    if None in nest.extents or not access.indices:
        return None
    dims = []
    for i in access.indices:
        if not isinstance(i, tir.Var):
            return None
        pos = next((d for d, v in enumerate(nest.loop_vars) if v.same_as(i)), None)
        if pos is None or (dims and pos <= dims[-1]):
            return None
        dims.append(pos)
    shape = [int(d) if isinstance(d, tir.IntImm) else None for d in access.buffer.shape]
    if shape != [nest.extents[d] for d in dims]:
        return None
    return dims


def defining_access(nest: Nest, layouts: FragmentLayouts) -> Access | None:
    for want_write in (True, False):
        for acc in nest.accesses:
            if acc.write == want_write and full_rank(acc, nest) and layouts.in_registers(acc.buffer):
                return acc
    return None


def nest_layout(nest: Nest, layouts: FragmentLayouts, threads: int | None = None) -> Fragment | None:
    """The layout a nest runs in: that of a register fragment it indexes by its loop
    variables (a written one first); else, given `threads` and a register fragment in the
    nest, the layout of a fragment in shared memory it indexes so (when every register access
    is local in it) or the cyclic distribution over the threads; else None."""
    acc = defining_access(nest, layouts)
    if acc is not None:
        return layouts.get(acc.buffer)
    if threads is None or None in nest.extents:
        return None
    registers = [a for a in nest.accesses if layouts.in_registers(a.buffer)]
    if not registers:
        return None
    # a fragment that left registers still has its layout: running the nest in it keeps the
    # register fragments it reads local when they were derived from it (a row statistic)
    for want_write in (True, False):
        for a in nest.accesses:
            layout = layouts.get(a.buffer)
            if a.write == want_write and layout is not None and full_rank(a, nest) and all(
                    access_slots(layout, nest.loop_vars, r.indices, layouts.get(r.buffer)) is not None
                    for r in registers):
                return layout
    window = _window_layout(nest, layouts)
    if window is not None:
        return window
    permuted = _permuted_layout(nest, layouts)
    return permuted if permuted is not None else cyclic_fragment(nest.extents, threads)


def _permuted_layout(nest: Nest, layouts: FragmentLayouts) -> Fragment | None:
    """For a nest that indexes a register fragment by its loop variables in another order
    (`out[j, i]` in an `i, j` nest, a transposed write-back of a row statistic): that
    fragment's layout with its dims in loop order (`Fragment.permute`), so it stays local;
    a written fragment first; else None."""
    for want_write in (True, False):
        for acc in nest.accesses:
            if acc.write != want_write or not layouts.in_registers(acc.buffer):
                continue
            if len(acc.indices) != len(nest.loop_vars) or None in nest.extents:
                continue
            order = []
            for var in nest.loop_vars:
                dims = [d for d, index in enumerate(acc.indices) if isinstance(index, tir.Var) and index.same_as(var)]
                if len(dims) != 1:
                    break
                order.append(dims[0])
            layout = layouts.get(acc.buffer)
            if len(order) != len(nest.loop_vars) or [layout.shape[d] for d in order] != list(nest.extents):
                continue
            return layout.permute(order)
    return None


def _window_offsets(access: Access, nest: Nest) -> list[int] | None:
    """The constant offsets when `access` indexes its buffer by the nest's variables plus
    constants, in order, inside the buffer (`acc[i, j + 64]` in an `i, j` nest: [0, 64])."""
    if len(access.indices) != len(nest.loop_vars) or None in nest.extents:
        return None
    offsets = []
    for index, var, extent, dim in zip(access.indices, nest.loop_vars, nest.extents, access.buffer.shape):
        if isinstance(index, tir.Var) and index.same_as(var):
            offset = 0
        elif isinstance(index, tir.Add) and index.a.same_as(var) and isinstance(index.b, tir.IntImm):
            offset = int(index.b)
        elif isinstance(index, tir.Add) and index.b.same_as(var) and isinstance(index.a, tir.IntImm):
            offset = int(index.a)
        else:
            return None
        if not isinstance(dim, tir.IntImm) or offset < 0 or offset + extent > int(dim):
            return None
        offsets.append(offset)
    return offsets


def _window_layout(nest: Nest, layouts: FragmentLayouts) -> Fragment | None:
    """For a nest over a window of a register fragment (a written one first): that
    fragment's layout restricted to the window (`Fragment.window`), so the fragment stays
    local (a copy of an accumulator's columns 64..127); else None."""
    for want_write in (True, False):
        for acc in nest.accesses:
            if acc.write != want_write or not layouts.in_registers(acc.buffer):
                continue
            offsets = _window_offsets(acc, nest)
            if offsets is None:
                continue
            try:
                return layouts.get(acc.buffer).window(offsets, nest.extents)
            except FragmentError:
                continue
    return None


def evaluate_index(expr, env: dict):
    """An index expression over NumPy arrays of the nest variables, or None."""
    if isinstance(expr, tir.IntImm):
        return int(expr.value)
    if isinstance(expr, tir.Var):
        return env.get(expr.__chandle__())
    binary = {tir.Add: np.add, tir.Sub: np.subtract, tir.Mul: np.multiply,
              tir.FloorDiv: np.floor_divide, tir.FloorMod: np.mod}
    for cls, fn in binary.items():
        if isinstance(expr, cls):
            a, b = evaluate_index(expr.a, env), evaluate_index(expr.b, env)
            return None if a is None or b is None else fn(a, b)
    if isinstance(expr, tir.Cast) and "int" in str(expr.dtype):
        return evaluate_index(expr.value, env)
    return None


def access_slots(loop: Fragment, loop_vars, indices, frag: Fragment) -> list[int] | None:
    """For a nest run in layout `loop`: the slot of `frag` that iteration slot `r` reads or
    writes, for every r, when the access is local (the running thread holds the element, in
    a slot that does not depend on the thread); None when it is not."""
    if loop.threads != frag.threads:
        return None
    table = loop.table()
    env = {v.__chandle__(): table[:, :, k] for k, v in enumerate(loop_vars)}
    idx = []
    for e in indices:
        value = evaluate_index(e, env)
        if value is None:
            return None
        idx.append(np.broadcast_to(np.asarray(value, np.int64), table.shape[:2]))
    if len(idx) != len(frag.shape):
        return None
    for i, d in zip(idx, frag.shape):
        if (i < 0).any() or (i >= d).any():
            return None
    flat = np.ravel_multi_index(tuple(idx), frag.shape) if frag.shape else np.zeros(table.shape[:2], np.int64)
    slots = frag.slot_table()[flat]
    if not (slots == slots[:1]).all():
        return None
    holders = frag.holder_table()[flat]
    threads = np.arange(loop.threads)[:, None, None]
    if not (holders == threads).any(axis=-1).all():
        return None
    return [int(s) for s in slots[0]]


def fragment_layout_fits(buffer, layout, threads: int) -> bool:
    shape = [int(d) if isinstance(d, tir.IntImm) else None for d in buffer.shape]
    return (buffer.scope() == FRAGMENT and isinstance(layout, Fragment) and list(layout.shape) == shape
            and layout.threads == threads)


