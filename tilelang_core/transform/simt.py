"""The portable SIMT placement: T.Parallel loops split over a block's threads, fragments in
registers where every access agrees with one layout, barriers where threads share data.

This is the correct-first fallback every SIMT backend gets; a backend replaces pieces of it
(MMA fragment layouts, warp-shuffle reductions) through its hooks.

Rules:
- A *parallel nest* is a maximal nest of PARALLEL loops. It runs as
  `for r in range(ceildiv(total, T)): flat = r * T + t; if flat < total: <body at unflatten(flat)>`
  where T is the block's thread count and t the flat thread index (cyclic distribution).
- A fragment (`local.fragment`) stays in registers when every access to it sits in a parallel
  nest of exactly its shape and indexes it by the nest's loop variables in order: element
  `flat` then lives in slot `r` of the thread `flat % T`. Otherwise it moves to shared memory.
- A fragment may carry a layout imposed by its target (`infer_layout`, a `FragmentLayout`):
  then element `layout.inverse(t, r)` lives in slot `r` of thread `t`, and a parallel nest
  that touches it runs `for r in range(layout.slots)` over exactly those elements. A fragment
  without one that is touched only by nests of one layout adopts it; one caught between two
  layouts moves to shared memory (a lowering that wrote its register array then works on a
  copy of the thread's elements `layout.inverse(t, r)`, loaded before and stored after).
- Statements outside parallel nests run on every thread (uniform control flow). A store to
  memory other threads see (shared, global), an atomic or a print there runs on thread 0 only.
- A barrier follows every uniform statement that writes shared memory, and opens every
  uniform serial loop whose body writes shared memory (so iteration k+1 does not overwrite
  what iteration k still reads). A call writes shared memory when it is handed a pointer
  into it with the write bit of `tvm_access_ptr`'s mask. Code inside an
  `AttrStmt(ATTR_SYNC_PLACED)` places its own barriers: none are added inside it.
"""
from __future__ import annotations

from tvm import ir as _ir
from tvm import tirx as tir

from ..codegen import builtins
from ..ir.constants import ATTR_SYNC_PLACED, ATTR_SYNC_RESUME
from .irutil import const, map_stmts, seq, substitute, walk
from .kernel_info import launch_info
from .layout_inference import FRAGMENT_LAYOUTS

__all__ = ["partition_over_threads", "insert_block_barriers", "sync_threads", "PARTITIONED"]

PARTITIONED = "tl.partitioned"
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


def _parallel_nest(loop: tir.For) -> tuple[list[tir.For], tir.Stmt]:
    loops = [loop]
    body = loop.body
    while isinstance(body, tir.For) and body.kind == tir.ForKind.PARALLEL:
        loops.append(body)
        body = body.body
    return loops, body


def _buffer_key(buf) -> int:
    return buf.__chandle__()


class _Placement:
    """Where each fragment lives: `registers[key]` is True for a per-thread register array,
    and `layouts[key]` is its layout there (None: the cyclic distribution)."""

    def __init__(self) -> None:
        self.registers: dict[int, bool] = {}
        self.layouts: dict[int, object] = {}


def _fragment_placement(func: tir.PrimFunc, imposed=None, threads: int = 0) -> _Placement:
    """For every fragment buffer: whether it can live in registers, and in which layout
    (see module rules). `imposed` is the `FragmentLayouts` of the kernel, if any."""
    fragments: dict[int, tir.Buffer] = {}
    ok: dict[int, bool] = {}
    placement = _Placement()

    def collect(node):
        if isinstance(node, tir.AllocBuffer) and node.buffer.scope() == "local.fragment":
            fragments[_buffer_key(node.buffer)] = node.buffer
            ok[_buffer_key(node.buffer)] = all(isinstance(d, tir.IntImm) for d in node.buffer.shape)

    walk(func.body, collect, (tir.AllocBuffer,))
    if not fragments:
        return placement
    nests: list[list[int]] = []  # fragments accessed in each parallel nest, in access order

    def check_access(buf, indices, nest_vars, nest_shape):
        key = _buffer_key(buf)
        if key not in fragments:
            return
        if nest_vars is not None:
            nests[-1].append(key)
        if not ok[key]:
            return
        shape = [int(d) for d in buf.shape]
        good = (nest_vars is not None and len(indices) == len(nest_vars) and shape == nest_shape
                and all(isinstance(i, tir.Var) and i.__chandle__() == v.__chandle__()
                        for i, v in zip(indices, nest_vars)))
        if not good:
            ok[key] = False

    def scan(stmt, nest_vars=None, nest_shape=None):
        def visit(node):
            if isinstance(node, tir.BufferStore):
                check_access(node.buffer, list(node.indices), nest_vars, nest_shape)
            elif type(node).__name__ == "TensorLoad":
                check_access(node.source, list(node.indices), nest_vars, nest_shape)

        walk(stmt, visit)

    def visit_stmt(stmt):
        """Scan statements, switching to nest mode inside each maximal parallel nest."""
        if isinstance(stmt, tir.For) and stmt.kind == tir.ForKind.PARALLEL:
            loops, body = _parallel_nest(stmt)
            shape = [int(lp.extent) if isinstance(lp.extent, tir.IntImm) else -1 for lp in loops]
            nests.append([])
            scan(body, [lp.loop_var for lp in loops], shape)
            return
        if isinstance(stmt, tir.SeqStmt):
            for s in stmt.seq:
                visit_stmt(s)
        elif isinstance(stmt, (tir.For, tir.AttrStmt, tir.While)):
            if isinstance(stmt, tir.While):
                scan(stmt.condition)
            elif isinstance(stmt, tir.For):
                scan(stmt.extent)
            else:
                scan(stmt.value)
            visit_stmt(stmt.body)
        elif isinstance(stmt, tir.IfThenElse):
            scan(stmt.condition)
            visit_stmt(stmt.then_case)
            if stmt.else_case is not None:
                visit_stmt(stmt.else_case)
        else:
            scan(stmt)

    visit_stmt(func.body)
    _settle_layouts(fragments, ok, nests, imposed, threads, placement)
    placement.registers = ok
    return placement


def _settle_layouts(fragments, ok, nests, imposed, threads, placement) -> None:
    """Give each register fragment a layout; a fragment caught between two layouts leaves
    registers. Layouts spread through nests: a nest runs in the layout of the register
    fragments it touches, and a fragment without an imposed layout adopts its nests' layout
    (the cyclic one when none of them has another)."""
    own = {}
    for key, buf in fragments.items():
        layout = imposed.get(buf) if imposed else None
        own[key] = layout if layout is not None and layout.threads == threads else None
    while True:
        layout_of = dict(own)
        changed = True
        while changed:  # spread layouts to the fragments that share a nest with a laid-out one
            changed = False
            for keys in nests:
                layout = next((layout_of[k] for k in keys if ok[k] and layout_of[k] is not None), None)
                if layout is None:
                    continue
                for k in keys:
                    if ok[k] and layout_of[k] is None:
                        layout_of[k] = layout
                        changed = True
        conflict = False
        for keys in nests:
            layouts = [layout_of[k] for k in keys if ok[k]]
            if layouts and any(layout != layouts[0] for layout in layouts):
                for k in keys:  # keep the first layout; the others leave registers
                    if ok[k] and layout_of[k] != layouts[0]:
                        ok[k] = False
                        conflict = True
        if not conflict:
            break
    for key in fragments:
        if ok[key]:
            placement.layouts[key] = layout_of[key]


class _Partitioner:
    def __init__(self, func: tir.PrimFunc, ctx) -> None:
        info = launch_info(func)
        self.tid, self.threads = _flat_thread(info)
        self.imposed = ctx.facts.get(FRAGMENT_LAYOUTS)
        placement = _fragment_placement(func, self.imposed, self.threads)
        self.in_registers = placement.registers
        self.layouts = placement.layouts  # register fragment -> its layout (None: cyclic)
        self.registers: dict[int, tir.Buffer] = {}  # fragment -> per-thread array
        self.moved: dict[int, tir.Buffer] = {}  # fragment -> shared buffer
        ctx.facts["fragments_in_registers"] = sorted(
            k for k, v in self.in_registers.items() if v)

    # -- buffers ---------------------------------------------------------------------------

    def register_array(self, buf: tir.Buffer) -> tir.Buffer:
        key = _buffer_key(buf)
        if key not in self.registers:
            layout = self.layouts.get(key)
            if self.imposed is not None and self.imposed.get(buf) is not None:
                self.registers[key] = self.imposed.register_buffer(buf)  # the array lowerings wrote
            else:
                total = 1
                for d in buf.shape:
                    total *= int(d)
                slots = layout.slots if layout is not None else (total + self.threads - 1) // self.threads
                self.registers[key] = tir.decl_buffer((slots,), buf.dtype, name=f"{buf.name}_reg", scope="local")
        return self.registers[key]

    def nest_layout(self, body: tir.Stmt):
        """The layout a parallel nest runs in: that of the register fragments it touches."""
        found = []

        def visit(node):
            buf = node.buffer if isinstance(node, tir.BufferStore) else getattr(node, "source", None)
            if buf is not None and self.is_register_fragment(buf):
                layout = self.layouts.get(_buffer_key(buf))
                if layout is not None:
                    found.append(layout)

        walk(body, visit, (tir.BufferStore, _ir.TensorLoad))
        return found[0] if found else None

    def shared_copy(self, buf: tir.Buffer) -> tir.Buffer:
        key = _buffer_key(buf)
        if key not in self.moved:
            self.moved[key] = tir.decl_buffer(buf.shape, buf.dtype, name=buf.name, scope="shared.dyn")
        return self.moved[key]

    def is_register_fragment(self, buf) -> bool:
        return self.in_registers.get(_buffer_key(buf), False)

    def is_fragment(self, buf) -> bool:
        return _buffer_key(buf) in self.in_registers

    # -- rewriting -------------------------------------------------------------------------

    def run(self, body: tir.Stmt) -> tir.Stmt:
        body = self.stmt(body, uniform=True)
        return self.retarget_shared(body)

    def retarget_shared(self, node):
        """Fragments that left registers: every access now names the shared copy (slot `s` of
        a register array that a lowering wrote becomes element `layout.inverse(thread, s)`)."""
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

        from tvm import ir
        import tvm_ffi

        return tvm_ffi.structural_map(node, ((tir.BufferStore, on_store), (ir.TensorLoad, on_load),
                                             (tir.AllocBuffer, on_alloc)))

    def retarget_registers(self, node):
        """Register arrays that lowerings wrote for fragments now in shared memory: every
        per-thread region that uses one loads it from the thread's elements of the shared copy
        first and stores it back after (a lowering may pass a slot's address on, so the slots
        stay an array)."""
        arrays = {}  # register array -> (array, shared copy, layout)
        for buf, layout in (self.imposed.items() if self.imposed else []):
            key = _buffer_key(buf)
            if key in self.moved and self.imposed.has_register_buffer(buf):
                reg = self.imposed.register_buffer(buf)
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

        def slot_loop(reg, layout, make):
            slot = tir.Var("slot", "int32")
            kind = tir.ForKind.UNROLLED if layout.slots <= _UNROLL_LIMIT else tir.ForKind.SERIAL
            return tir.For(slot, const(0), const(layout.slots), kind, make(slot, list(layout.inverse(self.tid, slot))))

        def on_for(loop: tir.For):
            if PARTITIONED not in loop.annotations:
                return loop
            used = used_in(loop.body)
            if not used:
                return loop
            before, after = [], []
            for reg, shared, layout in used:
                before.append(tir.AllocBuffer(reg))
                before.append(slot_loop(reg, layout, lambda s, idx: tir.BufferStore(reg, tir.BufferLoad(shared, idx), [s])))
                after.append(slot_loop(reg, layout, lambda s, idx: tir.BufferStore(shared, tir.BufferLoad(reg, [s]), idx)))
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
        if uniform and self._shared_side_effect(s):
            return tir.IfThenElse(tir.EQ(self.tid, const(0)), s, None, span=getattr(s, "span", None))
        return s

    def _shared_side_effect(self, s: tir.Stmt) -> bool:
        if isinstance(s, tir.BufferStore):
            return s.buffer.scope() not in ("local", "local.var") and not self.is_register_fragment(s.buffer)
        if isinstance(s, tir.Evaluate) and isinstance(s.value, _ir.Call):
            name = s.value.op.name
            return name.startswith("tl.atomic") or name == "tl.printf"
        return False

    def partition(self, loop: tir.For) -> tir.Stmt:
        loops, body = _parallel_nest(loop)
        layout = self.nest_layout(body)
        if layout is not None:
            return self.partition_by_layout(loop, loops, body, layout)
        extents = [lp.extent for lp in loops]
        total = extents[0]
        for e in extents[1:]:
            total = total * e
        r = tir.Var("r", "int32")
        flat = tir.Var("flat", "int32")
        # unflatten: the last loop varies fastest, so consecutive threads touch consecutive
        # elements of row-major tiles (coalesced global accesses)
        values, rest = [], flat
        for depth in reversed(range(len(loops))):
            if depth == 0:
                values.append(rest)
            else:
                values.append(tir.floormod(rest, extents[depth]))
                rest = tir.floordiv(rest, extents[depth])
        values.reverse()
        inner = self.nest_body(body, [lp.loop_var for lp in loops], r)
        inner = substitute(inner, {lp.loop_var: v for lp, v in zip(loops, values)})
        const_total = int(total) if isinstance(total, tir.IntImm) else None
        if const_total is None or const_total % self.threads:
            inner = tir.IfThenElse(flat < total, inner, None)
        inner = seq([tir.Bind(flat, r * self.threads + self.tid), inner])
        trips = (total + self.threads - 1) // self.threads if const_total is None \
            else const((const_total + self.threads - 1) // self.threads)
        kind = tir.ForKind.UNROLLED if (const_total is not None and int(trips) <= _UNROLL_LIMIT) else tir.ForKind.SERIAL
        return tir.For(r, const(0), trips, kind, inner, annotations={PARTITIONED: 1}, span=loop.span)

    def partition_by_layout(self, loop: tir.For, loops, body: tir.Stmt, layout) -> tir.Stmt:
        """Thread `t` runs the elements `layout.inverse(t, r)` for each of its slots `r`."""
        r = tir.Var("r", "int32")
        inner = self.nest_body(body, [lp.loop_var for lp in loops], r)
        inner = substitute(inner, {lp.loop_var: v for lp, v in zip(loops, layout.inverse(self.tid, r))})
        kind = tir.ForKind.UNROLLED if layout.slots <= _UNROLL_LIMIT else tir.ForKind.SERIAL
        return tir.For(r, const(0), const(layout.slots), kind, inner, annotations={PARTITIONED: 1},
                       span=loop.span)

    def nest_body(self, body: tir.Stmt, nest_vars, r: tir.Var) -> tir.Stmt:
        """Register fragments indexed by the nest's variables become slot `r` of their array;
        PARALLEL loops nested deeper run serially inside one thread."""
        def on_store(s: tir.BufferStore):
            if self.is_register_fragment(s.buffer):
                return tir.BufferStore(self.register_array(s.buffer), s.value, [r], span=s.span)
            return s

        def on_load(ld):
            if self.is_register_fragment(ld.source):
                return tir.BufferLoad(self.register_array(ld.source), [r])
            return ld

        def on_for(lp: tir.For):
            if lp.kind == tir.ForKind.PARALLEL:
                return tir.For(lp.loop_var, lp.min, lp.extent, tir.ForKind.SERIAL, lp.body,
                               annotations=lp.annotations, step=lp.step, span=lp.span)
            return lp

        from tvm import ir
        import tvm_ffi

        return tvm_ffi.structural_map(body, ((tir.BufferStore, on_store), (ir.TensorLoad, on_load),
                                             (tir.For, on_for)))


def partition_over_threads(func: tir.PrimFunc, ctx) -> tir.PrimFunc:
    """Before: PARALLEL loops over tile elements, fragments as block-wide tiles.
    After: no PARALLEL loop; each nest is a loop over per-thread slots; fragments are
    per-thread arrays or shared buffers."""
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


def _writes_shared(stmt: tir.Stmt) -> bool:
    """Whether `stmt` may write shared memory: a store, an asynchronous `tl.*` builtin, or a
    pointer handed to a call with the write bit of its access mask (`tvm_access_ptr(..., 2)`)."""
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
    found = False

    def visit(node):
        nonlocal found
        if node.source.scope() in SHARED:
            found = True

    walk(stmt, visit, (_ir.TensorLoad,))
    return found


def _is_barrier(stmt: tir.Stmt) -> bool:
    return (isinstance(stmt, tir.Evaluate) and isinstance(stmt.value, _ir.Call)
            and stmt.value.op.name == "tl.sync_threads")


def insert_block_barriers(func: tir.PrimFunc, ctx) -> tir.PrimFunc:
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
            body = rewrite(s.body)
            if _writes_shared(s.body) and s.kind != tir.ForKind.PARALLEL:
                body = seq([sync_threads(), body])
            return tir.For(s.loop_var, s.min, s.extent, s.kind, body, annotations=s.annotations,
                           step=s.step, span=s.span)
        if isinstance(s, tir.AttrStmt):
            if s.attr_key == ATTR_SYNC_PLACED:
                return resume_inside(s)
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
