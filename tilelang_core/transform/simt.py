"""The portable SIMT placement: T.Parallel loops split over a block's threads, fragments in
registers where every access agrees with one layout, barriers where threads share data.

This is the correct-first fallback every SIMT backend gets; a backend replaces pieces of it
(MMA fragment layouts, warp-shuffle reductions) through its hooks.

Rules:
- A *parallel nest* is a maximal nest of PARALLEL loops. Layout inference (`infer_layout`)
  decided each fragment's layout and placement; `nest_layout` picks the layout a nest runs in
  (that of a register fragment it indexes by its loop variables). Thread `t` then runs the
  elements `layout.element_of(t, r)` of its slots `r`, and every register fragment access
  becomes the slot that holds its element (inference checked it is held by `t`, in a slot that
  does not depend on `t`). When the slots differ from `r` the slots are unrolled here, so
  register arrays are only ever indexed by constants. A replicated layout runs each element on
  every replica; stores to memory other threads see run on one replica only.
- A nest that touches no register fragment runs cyclically:
  `for r in range(ceildiv(total, T)): flat = r * T + t; if flat < total: <body at unflatten(flat)>`
  where T is the block's thread count and t the flat thread index.
- A fragment in shared memory is a shared buffer of its shape. A lowering that wrote its
  register array then works on a copy of the thread's elements `layout.element_of(t, r)`,
  loaded before and stored after each per-thread region.
- A fragment every thread holds whole (`replicated_fragment`: TileLang's floating fragment,
  accessed outside T.Parallel) is read and written in the slot its indices name, row-major,
  wherever the access is: each thread works on its own copy.
- Statements outside parallel nests run on every thread (uniform control flow). A store to
  memory other threads see (shared, global), an atomic or a print there runs on thread 0 only,
  unless it names a thread index (`T.get_thread_binding`, or a scalar computed from one,
  `warp_id = tx // 32` included): then it is per-thread work (`C[tn] = acc[0]`) and every
  thread runs it.
- A barrier follows every uniform statement that writes shared memory, and opens every
  uniform serial or while loop whose body writes shared memory (so iteration k+1 does not overwrite
  what iteration k still reads); a vectorized loop counts as one statement. A call writes
  shared memory when it is handed a pointer into it with the write bit of `tvm_access_ptr`'s
  mask. Code inside an `AttrStmt(ATTR_SYNC_PLACED)` places its own barriers: none are added
  inside it. Writes inside an `AttrStmt(ATTR_USER_SYNC)` are published by the user's own
  barriers (`T.tma_copy` with an mbarrier): no barrier is added for them.
- A `T.ws` scope (`ATTR_THREAD_GROUPS`) runs on one range of threads (`thread_ranges`): its body
  is guarded to the range, partitioned over the range's threads (T = its size, t = the flat
  thread index minus its first thread), and every barrier inside it, the ones lowerings placed
  included, is a barrier of the range (`tl.sync_group`), never of the whole block.
"""
from __future__ import annotations

import numpy as np
from tvm import ir as _ir
from tvm import tirx as tir
from tvm.sym import Analyzer

from ..codegen import builtins
from ..ir.constants import ATTR_SYNC_PLACED, ATTR_SYNC_RESUME, ATTR_USER_SYNC
from .irutil import const, map_stmts, mentions, seq, substitute, walk
from .kernel_info import launch_info
from ..layout import FragmentLayouts
from .errors import TileLangCompileError
from .layout_inference import FRAGMENT_LAYOUTS
from .layout_rules import access_slots, make_nest, nest_layout, parallel_nest
from .thread_ranges import group_barrier, is_thread_groups, range_barrier_ids, thread_range
from .vectorize import vector_lanes, vectorize_chunk

__all__ = ["partition_over_threads", "insert_block_barriers", "sync_threads", "PARTITIONED"]

PARTITIONED = "tl.partitioned"
RANGE_BEGIN = "tl.thread_range_begin"  # on a PARTITIONED loop inside a T.ws scope: its first thread
SHARED = ("shared", "shared.dyn")
_UNROLL_LIMIT = 256


def sync_threads() -> tir.Stmt:
    return tir.Evaluate(builtins.sync_threads())


def _flat_thread(info) -> tuple[tir.Expr, int]:
    """The flat thread index expression and the thread count."""
    tags = [t for t in ("threadIdx.x", "threadIdx.y", "threadIdx.z") if t in info.extents]
    expr, stride = None, 1
    for tag in tags:
        term = info.vars[tag] if stride == 1 else info.vars[tag] * stride
        expr = term if expr is None else expr + term
        stride *= int(info.extents[tag])
    return (expr if expr is not None else const(0)), stride


def _as_exprs(indices) -> list:
    """Indices as TIR (a layout whose element does not depend on the thread, such as a
    replicated one, gives plain ints for a constant slot)."""
    return [const(int(i)) if isinstance(i, (int, np.integer)) else i for i in indices]


def _buffer_key(buf) -> int:
    return buf.__chandle__()


def _thread_dependent_vars(body: tir.Stmt, thread_vars) -> set[int]:
    """Keys of the thread index vars and of every scalar computed from one, directly or
    through other such scalars: vars bound by LetStmt / Bind, and the one-element local
    buffers that `x = expr` in a kernel declares (`warp_id = tx // 32`)."""
    keys = {_buffer_key(v) for v in thread_vars}
    bindings = []  # (key of the bound scalar, value)

    def collect(node):
        if isinstance(node, (tir.LetStmt, tir.Bind)):
            bindings.append((_buffer_key(node.var), node.value))
        elif node.buffer.scope() in ("local", "local.var") and _is_scalar(node.buffer):
            if _per_thread_result(node.value):  # `pos = T.atomic_add(..., return_prev=True)`
                keys.add(_buffer_key(node.buffer))
            bindings.append((_buffer_key(node.buffer), node.value))

    walk(body, collect, (tir.LetStmt, tir.Bind, tir.BufferStore))
    grew = True  # to a fixed point: a scalar may be bound before the one it is computed from
    while grew:
        grew = False
        for key, value in bindings:
            if key not in keys and mentions(value, keys):
                keys.add(key)
                grew = True
    return keys


def _per_thread_result(value) -> bool:
    """Whether `value` calls something that answers each thread differently even from the
    same arguments (an atomic's previous value, a vote, a shuffle)."""
    found = []

    def visit(node):
        name = getattr(node.op, "name", "") if isinstance(node.op, _ir.Op) else ""
        if "atomic" in name or "shfl" in name or "ballot" in name or name.endswith(("_sync", "activemask")):
            found.append(name)

    walk(value, visit, (_ir.Call,))
    return bool(found)


def _is_scalar(buffer) -> bool:
    shape = list(buffer.shape)
    return len(shape) == 1 and isinstance(shape[0], tir.IntImm) and int(shape[0]) == 1


class _Partitioner:
    def __init__(self, func: tir.PrimFunc, ctx) -> None:
        info = launch_info(func)
        self.tid, self.threads = _flat_thread(info)
        self.block_tid, self.block_threads = self.tid, self.threads
        self.range = None  # the T.ws thread range being partitioned (None: the block)
        self.ctx = ctx
        self.thread_vars = _thread_dependent_vars(func.body, info.thread_vars())
        self.layouts = ctx.facts.get(FRAGMENT_LAYOUTS) or FragmentLayouts()
        self.fragments: dict[int, tir.Buffer] = {}

        def collect(node):
            if isinstance(node, (tir.AllocBuffer, tir.DeclBuffer)) and node.buffer.scope() == "local.fragment":
                self.fragments[_buffer_key(node.buffer)] = node.buffer
                if self.layouts.decision(node.buffer).layout is None:
                    self.layouts.move_to_shared(node.buffer, "layout inference gave it no layout")

        walk(func.body, collect, (tir.AllocBuffer, tir.DeclBuffer))
        self.moved: dict[int, tir.Buffer] = {}  # fragment -> shared buffer

    # -- buffers ---------------------------------------------------------------------------

    def register_array(self, buf: tir.Buffer) -> tir.Buffer:
        return self.layouts.register_buffer(buf)

    def shared_copy(self, buf: tir.Buffer) -> tir.Buffer:
        key = _buffer_key(buf)
        if key not in self.moved:
            data = None
            if self.layouts.is_view(buf):  # a view of a fragment in shared memory views its shared copy
                data = self.shared_copy(self.layouts.source_of(buf)).data
            self.moved[key] = tir.decl_buffer(buf.shape, buf.dtype, name=buf.name, scope="shared.dyn", data=data)
        return self.moved[key]

    def is_register_fragment(self, buf) -> bool:
        return _buffer_key(buf) in self.fragments and self.layouts.in_registers(buf)

    def is_fragment(self, buf) -> bool:
        return _buffer_key(buf) in self.fragments

    # -- rewriting -------------------------------------------------------------------------

    def run(self, body: tir.Stmt) -> tir.Stmt:
        body = self.stmt(body, uniform=True)
        body = self.replicated_accesses(body)
        return self.retarget_shared(body)

    def replicated_slot(self, buf, indices):
        """The slot of element `indices` of a register fragment every thread holds whole (its
        row-major position), or None for any other buffer."""
        if not self.is_register_fragment(buf) or not self.layouts.get(buf).fully_replicated:
            return None
        flat = None
        for i, d in zip(indices, buf.shape):
            flat = i if flat is None else flat * d + i
        return flat if flat is not None else const(0)

    def replicated_accesses(self, node):
        """Accesses to whole-copy register fragments that no nest rewrote (those outside
        T.Parallel) become their slot of the thread's register array."""
        def on_store(st: tir.BufferStore):
            slot = self.replicated_slot(st.buffer, st.indices)
            if slot is None:
                return st
            return tir.BufferStore(self.register_array(st.buffer), st.value, [slot], span=st.span)

        def on_load(ld):
            slot = self.replicated_slot(ld.source, ld.indices)
            return ld if slot is None else tir.BufferLoad(self.register_array(ld.source), [slot])

        import tvm_ffi

        return tvm_ffi.structural_map(node, ((tir.BufferStore, on_store), (_ir.TensorLoad, on_load)))

    def retarget_shared(self, node):
        """Fragments that left registers: every access now names the shared copy (slot `s` of
        a register array that a lowering wrote becomes element `layout.element_of(thread, s)`)."""
        if not self.moved:
            return node
        node = self.retarget_registers(node)

        def on_store(s: tir.BufferStore):
            new = self.moved.get(_buffer_key(s.buffer))
            return s if new is None else tir.BufferStore(new, s.value, list(s.indices), span=s.span)

        def on_load(ld):
            new = self.moved.get(_buffer_key(ld.source))
            return ld if new is None else tir.BufferLoad(new, list(ld.indices))

        def on_alloc(a: tir.AllocBuffer):
            new = self.moved.get(_buffer_key(a.buffer))
            return a if new is None else tir.AllocBuffer(new)

        import tvm_ffi

        return tvm_ffi.structural_map(node, ((tir.BufferStore, on_store), (_ir.TensorLoad, on_load),
                                             (tir.AllocBuffer, on_alloc)))

    def retarget_registers(self, node):
        """Register arrays that lowerings wrote for fragments now in shared memory: every
        per-thread region that uses one loads it from the thread's elements of the shared copy
        first and stores it back after (a lowering may pass a slot's address on, so the slots
        stay an array)."""
        arrays = {}  # register array -> (array, shared copy, layout)
        for buf, layout in self.layouts.items():
            key = _buffer_key(buf)
            if key in self.moved and self.layouts.has_register_buffer(buf):
                reg = self.layouts.register_buffer(buf)
                arrays[_buffer_key(reg)] = (reg, self.moved[key], layout)
        if not arrays:
            return node

        def used_in(body):
            found = {}

            def visit(n):
                buf = n.buffer if isinstance(n, tir.BufferStore) else getattr(n, "source", None)
                if buf is not None and _buffer_key(buf) in arrays:
                    found[_buffer_key(buf)] = arrays[_buffer_key(buf)]

            walk(body, visit, (tir.BufferStore, _ir.TensorLoad))
            return list(found.values())

        def slot_copies(layout, tid, make):
            return seq(make(s, list(layout.element_of(tid, s))) for s in range(layout.slots))

        def on_for(loop: tir.For):
            if PARTITIONED not in loop.annotations:
                return loop
            used = used_in(loop.body)
            if not used:
                return loop
            tid = self.tid
            if RANGE_BEGIN in loop.annotations:
                tid = self.tid - loop.annotations[RANGE_BEGIN]
            before, after = [], []
            for reg, shared, layout in used:
                before.append(tir.AllocBuffer(reg))
                before.append(slot_copies(layout, tid, lambda s, idx: tir.BufferStore(reg, tir.BufferLoad(shared, idx), [s])))
                after.append(slot_copies(layout, tid, lambda s, idx: tir.BufferStore(shared, tir.BufferLoad(reg, [s]), idx)))
            return tir.For(loop.loop_var, loop.min, loop.extent, loop.kind, seq([*before, loop.body, *after]),
                           annotations=loop.annotations, span=loop.span)

        return map_stmts(node, (tir.For,), on_for)

    def stmt(self, s: tir.Stmt, uniform: bool) -> tir.Stmt:
        if isinstance(s, tir.SeqStmt):
            return seq(self.stmt(x, uniform) for x in s.seq)
        if isinstance(s, tir.For):
            if s.kind == tir.ForKind.PARALLEL:
                return self.partition(s)
            return tir.For(s.loop_var, s.min, s.extent, s.kind, self.stmt(s.body, uniform),
                           annotations=s.annotations, step=s.step, span=s.span)
        if is_thread_groups(s):
            return self.in_thread_range(s, uniform)
        if isinstance(s, tir.AttrStmt):
            return tir.AttrStmt(s.node, s.attr_key, s.value, self.stmt(s.body, uniform), span=s.span)
        if isinstance(s, tir.IfThenElse):
            return tir.IfThenElse(s.condition, self.stmt(s.then_case, uniform),
                                  None if s.else_case is None else self.stmt(s.else_case, uniform), span=s.span)
        if isinstance(s, tir.While):
            return tir.While(s.condition, self.stmt(s.body, uniform), span=s.span)
        if isinstance(s, tir.AllocBuffer):
            if self.is_register_fragment(s.buffer):
                return tir.AllocBuffer(self.register_array(s.buffer))
            if self.is_fragment(s.buffer):
                return tir.AllocBuffer(self.shared_copy(s.buffer))
            return s
        if isinstance(s, tir.DeclBuffer) and self.is_fragment(s.buffer):
            if self.is_register_fragment(s.buffer):
                return None  # a view of a register fragment is its source's register array
            view = self.shared_copy(s.buffer)
            return tir.DeclBuffer(view, data=self.shared_copy(self.layouts.source_of(s.buffer)).data)
        if uniform and self._shared_side_effect(s) and not mentions(s, self.thread_vars):
            return tir.IfThenElse(tir.EQ(self.tid, const(0)), s, None, span=getattr(s, "span", None))
        return s

    def in_thread_range(self, attr: tir.AttrStmt, uniform: bool) -> tir.Stmt:
        """A `T.ws` scope: its body partitioned over the range's threads, guarded to them."""
        here = thread_range(attr, self.ctx.caps, self.ctx.target, self.block_threads)
        outer = (self.tid, self.threads, self.range)
        self.tid, self.threads, self.range = here.local(self.block_tid), here.extent, here
        try:
            body = self.stmt(attr.body, uniform)
        finally:
            self.tid, self.threads, self.range = outer
        cond = here.contains(self.block_tid, self.block_threads)
        if cond is not None:
            body = tir.IfThenElse(cond, body, None, span=attr.span)
        return tir.AttrStmt(attr.node, attr.attr_key, attr.value, body, span=attr.span)

    def partitioned(self) -> dict:
        """The annotations of a partitioned loop (with the range's first thread inside a T.ws)."""
        if self.range is None or self.range.begin == 0:
            return {PARTITIONED: 1}
        return {PARTITIONED: 1, RANGE_BEGIN: const(self.range.begin)}

    def _shared_side_effect(self, s: tir.Stmt) -> bool:
        if isinstance(s, tir.BufferStore):
            return s.buffer.scope() not in ("local", "local.var") and not self.is_register_fragment(s.buffer)
        if isinstance(s, tir.Evaluate) and isinstance(s.value, _ir.Call):
            name = s.value.op.name
            return name.startswith("tl.atomic") or name == "tl.printf"
        return False

    def partition(self, loop: tir.For) -> tir.Stmt:
        nest, body = make_nest(loop, self.fragments)
        loops = parallel_nest(loop)[0]
        layout = nest_layout(nest, self.layouts, self.threads)
        if layout is not None:
            return self.partition_by_layout(loop, nest, body, layout)
        loop_vars, extents = [lp.loop_var for lp in loops], [lp.extent for lp in loops]
        if not nest.accesses:
            loop_vars, extents, body = self.in_vectors(loop_vars, extents, body)
        total = extents[0]
        for e in extents[1:]:
            total = total * e
        r = tir.Var("r", "int32")
        flat = tir.Var("flat", "int32")
        # unflatten: the last loop varies fastest, so consecutive threads touch consecutive
        # elements of row-major tiles (coalesced global accesses)
        values, rest = [], flat
        for depth in reversed(range(len(loop_vars))):
            if depth == 0:
                values.append(rest)
            else:
                values.append(tir.floormod(rest, extents[depth]))
                rest = tir.floordiv(rest, extents[depth])
        values.reverse()
        inner = self.nest_body(body, {})
        const_total = int(total) if isinstance(total, tir.IntImm) else None
        trips = (total + self.threads - 1) // self.threads if const_total is None \
            else const((const_total + self.threads - 1) // self.threads)
        whole = const_total is not None and const_total % self.threads == 0
        split = whole and isinstance(self.tid, tir.Var)
        if split:
            # every thread runs every trip: each index split into its thread's part and the
            # trip's, so the trips of an unrolled loop differ by constant offsets
            ana = Analyzer()
            ana.bind(r, _ir.Range.from_min_extent(const(0), trips))
            ana.bind(self.tid, _ir.Range.from_min_extent(const(0), const(self.threads)))
            values = [ana.simplify(substitute(v, {flat: r * self.threads + self.tid})) for v in values]
        inner = substitute(inner, dict(zip(loop_vars, values)))
        if not whole:
            inner = tir.IfThenElse(flat < total, inner, None)
        if not split:
            inner = seq([tir.Bind(flat, r * self.threads + self.tid), inner])
        kind = tir.ForKind.UNROLLED if (const_total is not None and int(trips) <= _UNROLL_LIMIT) else tir.ForKind.SERIAL
        return tir.For(r, const(0), trips, kind, inner, annotations=self.partitioned(), span=loop.span)

    def in_vectors(self, loop_vars: list, extents: list, body: tir.Stmt):
        """The nest over vectors of consecutive elements of its innermost loop, when every
        access is a whole aligned vector (`vectorize.vectorize_chunk`); else as it was."""
        if not all(isinstance(e, tir.IntImm) for e in extents):
            return loop_vars, extents, body
        buffers = {}
        walk(body, lambda n: buffers.setdefault(_buffer_key(n.buffer if isinstance(n, tir.BufferStore) else n.source),
                                                n.buffer if isinstance(n, tir.BufferStore) else n.source),
             (tir.BufferStore, _ir.TensorLoad))
        lanes = vector_lanes(self.ctx.caps, buffers.values(), int(extents[-1]))
        if lanes < 2:
            return loop_vars, extents, body
        lane = tir.Var("v", "int32")
        chunk = tir.Var(f"{loop_vars[-1].name}_vec", "int32")
        vector = vectorize_chunk(substitute(body, {loop_vars[-1]: chunk * lanes + lane}), lane, lanes, self.ctx.facts)
        if vector is None:
            return loop_vars, extents, body
        return loop_vars[:-1] + [chunk], extents[:-1] + [const(int(extents[-1]) // lanes)], vector

    def partition_by_layout(self, loop: tir.For, nest, body: tir.Stmt, layout) -> tir.Stmt:
        """Thread `t` runs the elements `layout.element_of(t, r)` for each of its slots `r`;
        a register fragment access becomes the slot that holds its element there (the same
        slot in every thread: layout inference checked it)."""
        slots_of = {}
        for acc in nest.accesses:
            if not self.is_register_fragment(acc.buffer):
                continue
            slots = access_slots(layout, nest.loop_vars, acc.indices, self.layouts.get(acc.buffer))
            if slots is None and self.layouts.get(acc.buffer).fully_replicated:
                continue  # every thread's copy: the slot its indices name (`replicated_slot`)
            if slots is None:
                raise TileLangCompileError(
                    f"internal: {nest.origin} runs in layout {layout.name} but {acc.buffer.name} is not local "
                    f"there; layout inference should have moved it to shared memory (please report)")
            slots_of[tuple(_buffer_key(i) for i in acc.indices) + (_buffer_key(acc.buffer),)] = slots
        guard = None
        # a fragment moved to shared memory after the nest was modelled is memory other
        # threads see too: its replicas must not each read-modify-write it (on a GPU a warp's
        # lanes happen to load before any stores; work-items that do not run in lockstep race)
        shared_writes = any(acc.write and not self.is_register_fragment(acc.buffer) for acc in nest.accesses)
        if layout.replicate > 1 and (nest.effects or shared_writes):
            bits = layout.replica_bits()
            guard = tir.EQ(tir.bitwise_and(self.tid, const(bits)), const(0))
        # each register access reads slot r + shift in iteration slot r (shift 0: the nest's own
        # layout; else a window of the fragment, `Fragment.window`)
        shifts = {k: s[0] if s == list(range(s[0], s[0] + layout.slots)) else None for k, s in slots_of.items()}
        loop_vars = nest.loop_vars
        if None not in shifts.values() and layout.symbolic_slots and layout.slots > 1:
            r = tir.Var("r", "int32")
            inner = self.nest_body(body, {k: r + shift if shift else r for k, shift in shifts.items()}, guard)
            inner = substitute(inner, dict(zip(loop_vars, _as_exprs(layout.element_of(self.tid, r)))))
            kind = tir.ForKind.UNROLLED if layout.slots <= _UNROLL_LIMIT else tir.ForKind.SERIAL
            return tir.For(r, const(0), const(layout.slots), kind, inner, annotations=self.partitioned(),
                           span=loop.span)
        copies = []
        for r in range(layout.slots):
            inner = self.nest_body(body, {k: const(v[r]) for k, v in slots_of.items()}, guard)
            copies.append(substitute(inner, dict(zip(loop_vars, _as_exprs(layout.element_of(self.tid, r))))))
        # one trip of a marked loop, so later passes see one partitioned region
        once = tir.Var("once", "int32")
        return tir.For(once, const(0), const(1), tir.ForKind.SERIAL, seq(copies), annotations=self.partitioned(),
                       span=loop.span)

    def nest_body(self, body: tir.Stmt, slot_of: dict, guard=None) -> tir.Stmt:
        """Register fragment accesses become their slot (`slot_of[indices + buffer]`, or the
        cyclic slot `r` of the fallback partition); stores other threads see and atomics run
        under `guard` (one replica); PARALLEL loops nested deeper run serially in one thread."""
        def slot(buf, indices):
            found = slot_of.get(tuple(_buffer_key(i) for i in indices) + (_buffer_key(buf),))
            return found if found is not None else self.replicated_slot(buf, indices)

        def on_store(s: tir.BufferStore):
            if self.is_register_fragment(s.buffer):
                return tir.BufferStore(self.register_array(s.buffer), s.value, [slot(s.buffer, s.indices)], span=s.span)
            if guard is not None and s.buffer.scope() not in ("local", "local.var"):
                return tir.IfThenElse(guard, s, None, span=s.span)
            return s

        def on_load(ld):
            if self.is_register_fragment(ld.source):
                return tir.BufferLoad(self.register_array(ld.source), [slot(ld.source, ld.indices)])
            return ld

        def on_eval(e: tir.Evaluate):
            if guard is not None and isinstance(e.value, _ir.Call) and isinstance(e.value.op, _ir.Op) \
                    and (e.value.op.name.startswith("tl.atomic") or e.value.op.name == "tl.printf"):
                return tir.IfThenElse(guard, e, None)
            return e

        def on_for(lp: tir.For):
            if lp.kind == tir.ForKind.PARALLEL:
                return tir.For(lp.loop_var, lp.min, lp.extent, tir.ForKind.SERIAL, lp.body,
                               annotations=lp.annotations, step=lp.step, span=lp.span)
            return lp

        import tvm_ffi

        return tvm_ffi.structural_map(body, ((tir.BufferStore, on_store), (_ir.TensorLoad, on_load),
                                             (tir.Evaluate, on_eval), (tir.For, on_for)))


def partition_over_threads(func: tir.PrimFunc, ctx) -> tir.PrimFunc:
    """Before: PARALLEL loops over tile elements, fragments as block-wide tiles, layouts
    decided by `infer_layout`.
    After: no PARALLEL loop; each nest is per-thread code over the thread's slots; fragments
    are per-thread register arrays or shared buffers."""
    return func.with_body(_Partitioner(func, ctx).run(func.body))


# --- barriers -------------------------------------------------------------------------------


def _pointer_target(data):
    """The buffer a `tvm_access_ptr`'s data argument points into (`buffer_data(buf)` or
    `address_of(buf[...])`), or None."""
    if isinstance(data, _ir.Call) and data.op.name == "tirx.address_of" and isinstance(data.args[0], _ir.TensorLoad):
        return data.args[0].source
    if isinstance(data, _ir.Call) and data.op.name == "tirx.buffer_data":
        return data.args[0]
    return None


def _without_user_sync(stmt: tir.Stmt) -> tir.Stmt:
    """`stmt` without its `ATTR_USER_SYNC` regions (their effects are the user's to publish)."""
    regions = []
    walk(stmt, lambda a: regions.append(a) if a.attr_key == ATTR_USER_SYNC else None, (tir.AttrStmt,))
    if not regions:
        return stmt
    return map_stmts(stmt, (tir.AttrStmt,),
                     lambda a: tir.Evaluate(const(0)) if a.attr_key == ATTR_USER_SYNC else a)


def _writes_shared(stmt: tir.Stmt) -> bool:
    """Whether `stmt` may write shared memory: a store, an asynchronous `tl.*` builtin, or a
    pointer handed to a call with the write bit of its access mask (`tvm_access_ptr(..., 2)`);
    writes the user's barriers publish (`ATTR_USER_SYNC`) do not count."""
    stmt = _without_user_sync(stmt)
    found = False

    def visit(node):
        nonlocal found
        if isinstance(node, tir.BufferStore) and node.buffer.scope() in SHARED:
            found = True
        elif isinstance(node, tir.Evaluate) and isinstance(node.value, _ir.Call) \
                and node.value.op.name.startswith("tl.") and "async" in node.value.op.name:
            found = True
        elif isinstance(node, _ir.Call) and node.op.name == "tirx.tvm_access_ptr":
            target = _pointer_target(node.args[1])
            mask = node.args[4]
            if target is not None and target.scope() in SHARED and isinstance(mask, tir.IntImm) and int(mask) & 2:
                found = True

    walk(stmt, visit, (tir.BufferStore, tir.Evaluate, _ir.Call))
    return found


def _reads_shared(stmt: tir.Stmt) -> bool:
    stmt = _without_user_sync(stmt)
    found = False

    def visit(node):
        nonlocal found
        if node.source.scope() in SHARED:
            found = True

    walk(stmt, visit, (_ir.TensorLoad,))
    return found


def _is_barrier(stmt: tir.Stmt) -> bool:
    return (isinstance(stmt, tir.Evaluate) and isinstance(stmt.value, _ir.Call)
            and stmt.value.op.name in ("tl.sync_threads", "tl.sync_group"))


def insert_block_barriers(func: tir.PrimFunc, ctx) -> tir.PrimFunc:
    if getattr(ctx.options, "disable_thread_storage_sync", False):
        return func  # tl.disable_thread_storage_sync: the kernel places its own barriers
    info = launch_info(func)
    block = info.threads
    barrier_ids = range_barrier_ids(func.body, ctx.caps, ctx.target, block)

    def in_range(attr: tir.AttrStmt) -> tir.Stmt:
        """A `T.ws` scope with its barriers placed; each is a barrier of its thread range."""
        here = thread_range(attr, ctx.caps, ctx.target, block)
        body = rewrite(attr.body)
        if here.begin != 0 or here.extent != block:
            barrier = group_barrier(here, barrier_ids[here])

            def on_eval(e: tir.Evaluate):
                is_sync = isinstance(e.value, _ir.Call) and e.value.op.name == "tl.sync_threads"
                return barrier if is_sync else e

            body = map_stmts(body, (tir.Evaluate,), on_eval)
        return tir.AttrStmt(attr.node, attr.attr_key, attr.value, body, span=attr.span)

    def loop_body(body: tir.Stmt, iterations_share: bool) -> tir.Stmt:
        """A loop's body rewritten, opened by a barrier when its iterations run one after
        another on every thread and it writes shared memory (iteration k+1 must not
        overwrite what iteration k still reads)."""
        rewritten = rewrite(body)
        return seq([sync_threads(), rewritten]) if iterations_share and _writes_shared(body) else rewritten

    def rewrite(s: tir.Stmt) -> tir.Stmt:
        if isinstance(s, tir.SeqStmt):
            out: list[tir.Stmt] = []
            reads_pending = False  # shared memory read since the last barrier
            for child in s.seq:
                writes = _writes_shared(child) and not _is_barrier(child)
                if writes and reads_pending:
                    # write after read: other threads may still read the old values
                    out.append(sync_threads())
                out.append(rewrite(child))
                if writes:
                    out.append(sync_threads())
                reads_pending = not writes and not _is_barrier(child) and (reads_pending or _reads_shared(child))
            return seq(out)
        if isinstance(s, tir.For):
            if PARTITIONED in s.annotations:
                return s
            # a vectorized loop is one vector access per thread (its iterations carry no
            # dependence): like a single statement, it needs no barrier between iterations
            body = loop_body(s.body, s.kind not in (tir.ForKind.PARALLEL, tir.ForKind.VECTORIZED))
            return tir.For(s.loop_var, s.min, s.extent, s.kind, body, annotations=s.annotations,
                           step=s.step, span=s.span)
        if isinstance(s, tir.While):
            return tir.While(s.condition, loop_body(s.body, True), span=s.span)
        if isinstance(s, tir.AttrStmt):
            if s.attr_key == ATTR_SYNC_PLACED:
                return resume_inside(s)
            if s.attr_key == ATTR_USER_SYNC:
                return s
            if is_thread_groups(s):
                return in_range(s)
            return tir.AttrStmt(s.node, s.attr_key, s.value, rewrite(s.body), span=s.span)
        if isinstance(s, tir.IfThenElse):
            return tir.IfThenElse(s.condition, rewrite(s.then_case),
                                  None if s.else_case is None else rewrite(s.else_case), span=s.span)
        return s

    def resume_inside(placed: tir.Stmt) -> tir.Stmt:
        """Leave a sync-placed region as it is, except its `ATTR_SYNC_RESUME` parts."""
        def on_attr(a: tir.AttrStmt):
            if a.attr_key != ATTR_SYNC_RESUME:
                return a
            return tir.AttrStmt(a.node, a.attr_key, a.value, rewrite(a.body), span=a.span)

        return map_stmts(placed, (tir.AttrStmt,), on_attr, order="pre")

    return func.with_body(rewrite(func.body))
