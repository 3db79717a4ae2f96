"""infer_layout: whole-kernel layout inference for fragments, to a fixed point.

Before: fragments (`local.fragment`) are logical block-wide tiles.
After: the IR is unchanged; on SIMT targets `ctx.facts["fragment_layouts"]` (a
`FragmentLayouts`) holds, for every fragment, a register layout (`Fragment`) or the reason it
lives in shared memory. On block-serial targets a fragment is a block-local array and nothing
is decided here.

How (the order of TileLang's inference):
1. strict constraints: every tile op asks the target (`tilelang_infer_layout`, phase
   "strict"), e.g. a matrix instruction's accumulator and register-operand layouts; the first
   layout given to a fragment wins, a later different one is noted and its op takes a path
   that needs none;
2. propagation, to a fixed point: a `T.Parallel` nest runs in the layout of the fragments it
   indexes by its loop variables (written ones first); a fragment it indexes by a subset of
   them (`m[i]` in an `i, j` nest) gets the projection of that layout, replicated over the
   threads that share the dropped dims; a reduction's result gets the projection of its
   source's layout; copies, fills and the other tile ops are modelled by their portable
   lowering, as nests;
0. a fragment read or written outside `T.Parallel` and tile ops (a serial loop filling
   `frag[0, i]`, a scalar `T.fill` of a `(1,)` fragment) is *floating*, as TileLang calls it:
   every thread holds all of it (`replicated_fragment`) and runs that code on its own copy,
   when it has at most `REPLICATED_LIMIT` elements and no strict layout; else it lives in
   shared memory;
3. free choices for what is left, then propagation again: a reduction's source gets rows over
   consecutive lanes of a warp (the target's warp size), any other fragment the cyclic layout;
Inside a `T.ws` scope the range's threads stand for the block: tile ops see their count, and a
fragment used only there gets a layout over them; one used in two ranges lives in shared
memory.
4. verification: in every nest, each fragment access must be local (the thread that runs an
   iteration holds the element, in a slot that does not depend on the thread). A fragment with
   a non-local access leaves registers for shared memory, with the reason recorded; that can
   change other nests' layouts, so this repeats until nothing moves.

`nest_layout` and `access_slots` (in `layout_rules.py`) are the rules the SIMT placement
(`simt.py`) applies again when it partitions the lowered loops, so both passes decide alike.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from tvm import ir as tvm_ir
from tvm import tirx as tir

from ..ir import TileOp, is_tile_op
from ..ir.source import source_of
from ..layout import Fragment, FragmentError, FragmentLayouts, cyclic_fragment, replicated_fragment, row_fragment
from ..layout.fragment_model import is_symbolic  # ints and arrays are evaluated, TIR is code
from .kernel_info import launch_info
from .thread_ranges import ThreadRange, is_thread_groups, thread_range
from .layout_rules import (FRAGMENT, Access, Nest, access_slots, buffer_key, defining_access, evaluate_index,
                           fragment_accesses, fragment_layout_fits, nest_layout, op_line, projection_dims, scan_nests)

__all__ = ["infer_layout", "LayoutContext", "FRAGMENT_LAYOUTS", "fragment_from_index_map"]

FRAGMENT_LAYOUTS = "fragment_layouts"
# the most elements a floating fragment holds in every thread's registers (like the SIMT
# placement's unroll limit); a larger one lives in shared memory
REPLICATED_LIMIT = 256


@dataclass
class LayoutContext:
    """What `tilelang_infer_layout` may read: the target, the block's thread count, the
    layouts decided so far (`layouts.get(buffer)`), the compile options (or None), inside a
    `T.ws` scope its thread range (None: the whole block), and the compile's `facts` (the
    PassContext's: a backend's own pass that runs before `infer_layout` may leave kernel-wide
    notes there for its hook, e.g. which gemms read an operand from registers)."""

    target: Any
    threads: int
    layouts: FragmentLayouts
    options: Any = None
    thread_range: Any = None
    facts: dict = field(default_factory=dict)

    @property
    def caps(self):
        return self.target.capabilities


# --------------------------------------------------------------------------------- the user's


def fragment_from_index_map(shape, index_map, replicate: int, threads: int, name: str) -> Fragment:
    """The `Fragment` a `T.Fragment` annotation describes: `index_map` takes (*idx, rep) to
    (thread, slot). Tables come from evaluating it on every element; code addresses it through
    its inverse (TVM's `IndexMap.inverse`, which needs a bijective affine map)."""
    shape = [int(d) for d in shape]
    grids = np.meshgrid(*[np.arange(d) for d in shape], np.arange(replicate), indexing="ij")
    env = {v.__chandle__(): g for v, g in zip(index_map.initial_indices, grids)}
    thread, slot = (evaluate_index(e, env) for e in index_map.final_indices)
    if thread is None or slot is None:
        raise FragmentError(f"{name}: its forward functions use operations other than + - * // %")
    thread = np.broadcast_to(np.asarray(thread), grids[0].shape)
    slot = np.broadcast_to(np.asarray(slot), grids[0].shape)
    if thread.min() < 0 or thread.max() >= threads:
        raise FragmentError(f"{name}: its threads run {int(thread.min())}..{int(thread.max())}, the block has {threads}")
    slots = int(slot.max()) + 1
    table = np.full((threads, slots, len(shape)), -1, np.int64)
    for d, g in enumerate(grids[:-1]):
        table[thread, slot, d] = g
    if (table < 0).any():
        t, sl = map(int, np.argwhere((table < 0).any(-1))[0])
        raise FragmentError(f"{name}: slot {sl} of thread {t} holds no element (threads x slots must cover the "
                            f"tile exactly, {replicate} time(s))")
    try:
        inverse = index_map.inverse([*shape, replicate])
    except Exception as err:  # noqa: BLE001 - TVM says why in its own words
        raise FragmentError(f"{name}: its forward map cannot be inverted ({err}); write it with + - * // %") from None

    def element_of(t, sl):
        if not is_symbolic(t) and not is_symbolic(sl):
            return tuple(table[t, sl, d] for d in range(len(shape)))
        tt = tir.const(int(t), "int32") if isinstance(t, (int, np.integer)) else t
        ss = tir.const(int(sl), "int32") if isinstance(sl, (int, np.integer)) else sl
        return tuple(inverse.map_indices([tt, ss])[: len(shape)])

    return Fragment(shape, threads, slots, element_of, name).check()


def _user_layouts(func, threads: int) -> dict[int, tuple]:
    """buffer handle -> (buffer, Fragment, origin) of every `T.annotate_layout` with a
    `T.Fragment`."""
    from ..ir.constants import ATTR_FRAGMENT_REPLICATE, ATTR_LAYOUT
    from .errors import TileLangCompileError

    replicate: dict[int, int] = {}
    maps: dict[int, tuple] = {}

    def visit(node):
        if not isinstance(node, tir.AttrStmt):
            return
        if node.attr_key == ATTR_FRAGMENT_REPLICATE:
            replicate[node.value.__chandle__()] = int(node.node)
        elif node.attr_key == ATTR_LAYOUT and isinstance(node.node, tir.IndexMap):
            maps[node.value.__chandle__()] = (node.node, node)

    from .irutil import walk

    walk(func.body, visit, (tir.AttrStmt,))
    found = {}

    def buffers(node):
        if isinstance(node, tir.AllocBuffer) and node.buffer.scope() == FRAGMENT:
            key = node.buffer.data.__chandle__() if hasattr(node.buffer, "data") else node.buffer.__chandle__()
            for handle in {key, node.buffer.__chandle__()}:
                if handle in maps:
                    index_map, attr = maps[handle]
                    if len(index_map.initial_indices) != len(node.buffer.shape) + 1:
                        continue
                    origin = op_line(attr, "T.annotate_layout")
                    try:
                        frag = fragment_from_index_map(node.buffer.shape, index_map, replicate.get(handle, 1), threads,
                                                       f"T.Fragment of {node.buffer.name}")
                    except FragmentError as err:
                        raise TileLangCompileError(str(err), source_of(attr)) from None
                    found[node.buffer.__chandle__()] = (node.buffer, frag, origin)

    walk(func.body, buffers, (tir.AllocBuffer,))
    return found


# --------------------------------------------------------------------------------- the pass


@dataclass
class _Reduce:
    src: Any
    dst: Any
    kept: list
    model: list  # the portable lowering's nests (used when the source is not in registers)
    origin: str
    model_outside: list = field(default_factory=list)  # its fragment accesses outside those nests


class _Inference:
    def __init__(self, func, ctx, threads: int) -> None:
        self.ctx = ctx
        self.threads = threads
        self.block = ThreadRange(0, threads)
        self.range = self.block  # the thread range of what is being collected
        self.range_of: dict[int, ThreadRange] = {}  # id(use) -> its thread range, when not the block
        self.fragment_ranges: dict[int, set] = {}  # fragment -> the ranges it is used in
        self.layouts: FragmentLayouts = ctx.facts[FRAGMENT_LAYOUTS]
        self.lctx = LayoutContext(ctx.target, threads, self.layouts, ctx.options, facts=ctx.facts)
        self.fragments: dict[int, Any] = {}
        self.uses: list = []  # Nest | _Reduce, program order
        self.reducers: set[int] = set()  # fragments allocated by T.alloc_reducer
        self.order: list = []  # fragments in allocation order
        self.floating: dict[int, tuple] = {}  # fragment -> (threads, origin) of its first access outside nests

        def collect(node):
            if isinstance(node, tir.AllocBuffer) and node.buffer.scope() == FRAGMENT:
                self.fragments[buffer_key(node.buffer)] = node.buffer
                self.order.append(node.buffer)
                self.layouts.decision(node.buffer)
            elif isinstance(node, tir.DeclBuffer) and node.buffer.scope() == FRAGMENT:
                source = fragment_view_source(node, self.fragments)
                self.fragments[buffer_key(node.buffer)] = node.buffer
                self.order.append(node.buffer)
                self.layouts.link(node.buffer, source)

        from .irutil import walk

        walk(func.body, collect, (tir.AllocBuffer, tir.DeclBuffer))

    # -- collection -------------------------------------------------------------------------

    def collect_uses(self, body) -> None:
        from .lower_tile_ops import LowerContext
        from . import portable

        scratch = LowerContext(self.ctx.target, self.threads, False, {})

        def visit(s):
            nonlocal scratch
            if isinstance(s, tir.Evaluate) and is_tile_op(s):
                op = TileOp.from_stmt(s)
                self.tile_op(op, portable, scratch)
                return
            if is_thread_groups(s):
                outer = (self.range, self.lctx, scratch)
                self.range = thread_range(s, self.ctx.caps, self.ctx.target, self.threads)
                self.lctx = LayoutContext(self.ctx.target, self.range.extent, self.layouts, self.ctx.options,
                                          self.range, facts=self.ctx.facts)
                scratch = LowerContext(self.ctx.target, self.range.extent, False, {}, self.range)
                first = len(self.uses)
                visit(s.body)
                for use in self.uses[first:]:
                    self.range_of.setdefault(id(use), self.range)  # an inner scope's range wins
                self.range, self.lctx, scratch = outer
                return
            if isinstance(s, tir.For) and s.kind == tir.ForKind.PARALLEL:
                nests, outside = scan_nests(s, self.fragments)
                self.uses.extend(nests)
                self.outside(outside, s)
                return
            if isinstance(s, tir.SeqStmt):
                for x in s.seq:
                    visit(x)
                return
            if isinstance(s, (tir.For, tir.While, tir.AttrStmt, tir.IfThenElse)):
                head = {tir.For: lambda x: x.extent, tir.While: lambda x: x.condition,
                        tir.AttrStmt: lambda x: x.value, tir.IfThenElse: lambda x: x.condition}[type(s)](s)
                self.outside(fragment_accesses(head, self.fragments)[0], s)
                if isinstance(s, tir.IfThenElse):
                    visit(s.then_case)
                    if s.else_case is not None:
                        visit(s.else_case)
                else:
                    visit(s.body)
                return
            self.outside(fragment_accesses(s, self.fragments)[0], s)

        visit(body)
        self.place_in_ranges()

    def use_range(self, use) -> ThreadRange:
        return self.range_of.get(id(use), self.block)

    def fragment_range(self, buf) -> ThreadRange:
        ranges = self.fragment_ranges.get(buffer_key(buf), ())
        return next(iter(ranges)) if len(ranges) == 1 else self.block

    def place_in_ranges(self) -> None:
        """Note the thread ranges each fragment is used in; one used in two leaves registers."""
        for use in self.uses:
            buffers = [use.src, use.dst] if isinstance(use, _Reduce) else [a.buffer for a in use.accesses]
            for buf in buffers:
                self.fragment_ranges.setdefault(buffer_key(buf), set()).add(self.use_range(use))
        for key, ranges in self.fragment_ranges.items():
            if len(ranges) > 1 and key in self.fragments:
                where = " and ".join(sorted(r.describe() for r in ranges))
                self.layouts.move_to_shared(self.fragments[key], f"it is used by {where} (T.ws scopes); a register "
                                                                 f"fragment belongs to the threads of one range")

    def outside(self, accesses: list[Access], node) -> None:
        """Note fragments accessed outside a nest (floating); `place_floating` decides them."""
        for acc in accesses:
            key = buffer_key(acc.buffer)
            here = (self.range.extent, op_line(node, "a statement"))
            if key in self.floating and self.floating[key][0] != here[0]:
                self.layouts.move_to_shared(acc.buffer, f"{here[1]} and {self.floating[key][1]} read or write it "
                                                        f"outside T.Parallel in thread ranges of different sizes")
            self.floating.setdefault(key, here)

    def place_floating(self) -> None:
        """Every thread holds a copy of each floating fragment (TileLang's fully replicated
        layout), unless a strict layout was imposed on it or it is too large."""
        for key, (threads, origin) in self.floating.items():
            buf = self.fragments.get(key)
            if buf is None or not self.layouts.decision(buf).in_registers:
                continue
            held = self.layouts.get(buf)
            elements = int(np.prod([int(d) for d in buf.shape]))
            if held is not None and not held.fully_replicated:
                self.layouts.move_to_shared(buf, f"{origin} reads or writes it outside T.Parallel, but "
                                                 f"{self.layouts.decision(buf).origin} gave it the layout {held.name} "
                                                 f"(every thread would need every element)")
            elif held is None and elements > REPLICATED_LIMIT:
                self.layouts.move_to_shared(buf, f"{origin} reads or writes it outside T.Parallel: every thread "
                                                 f"would hold all {elements} elements (at most {REPLICATED_LIMIT} "
                                                 f"stay in registers)")
            elif held is None:
                self.layouts.impose(buf, replicated_fragment(buf.shape, threads),
                                    f"{origin} (outside T.Parallel: every thread holds a copy)")

    def tile_op(self, op: TileOp, portable, scratch) -> None:
        if op.name == "reducer_info":
            self.reducers.add(buffer_key(op.regions[0].buffer))
            return
        frag_regions = [r for r in op.regions if r.scope == FRAGMENT and buffer_key(r.buffer) in self.fragments]
        imposed = self.ctx.hooks.infer_layout(op, self.lctx) if self.ctx.hooks is not None else None
        handled = set()
        for buffer, layout in (imposed or {}).items():
            if buffer_key(buffer) in self.fragments and fragment_layout_fits(buffer, layout, self.range.extent):
                self.fragment_ranges.setdefault(buffer_key(buffer), set()).add(self.range)
                here = op_line(op.stmt, f"T.{op.name}")
                held = self.layouts.decision(buffer)
                if getattr(held, "by_user", False) and held.layout != layout:
                    from .errors import TileLangCompileError

                    raise TileLangCompileError(
                        f"fragment {buffer.name} is pinned to the layout {held.layout.name} by {held.origin}, but "
                        f"{here} on {self.ctx.target} needs {layout.name} for it; drop the annotation, or "
                        f"annotate the layout the instruction needs", op.source)
                if self.layouts.impose(buffer, layout, here, pinned=True):
                    handled.add(buffer_key(buffer))
        if not frag_regions:
            return
        if op.name == "gemm" and handled:
            for r in frag_regions:
                if buffer_key(r.buffer) not in handled:
                    self.layouts.move_to_shared(r.buffer, f"{op_line(op.stmt, 'T.gemm')} reads it as an operand the "
                                                          f"target takes from shared memory only")
            return
        if op.name == "reduce":
            red = self.reduce_use(op, portable, scratch)
            if red is not None:
                self.uses.append(red)
                return
        if op.name in portable.SCAN_KINDS:
            for r in frag_regions:
                self.layouts.move_to_shared(r.buffer, f"{op_line(op.stmt, f'T.{op.name}')}: scans run in shared memory")
            return
        try:
            lowered = portable.lower_portable(op, scratch)
        except Exception:  # the lowering pass reports the op's own error later
            return
        nests, outside = scan_nests(lowered, self.fragments, op_line(op.stmt, f"T.{op.name}"))
        self.uses.extend(nests)
        self.outside(outside, op.stmt)

    def reduce_use(self, op: TileOp, portable, scratch) -> _Reduce | None:
        src, dst = op.regions[:2]
        if not all(r.scope == FRAGMENT and r.covers_constant_buffer() for r in (src, dst)):
            return None
        dim = op.int_arg(3)
        ndim = len(src.buffer.shape)
        kept = [d for d in range(ndim) if d != dim]
        d_shape = [int(x) for x in dst.buffer.shape]
        s_shape = [int(x) for x in src.buffer.shape]
        if [s_shape[d] for d in kept] != d_shape and not (not kept and d_shape == [1]):
            return None
        lowered = portable.lower_portable(op, scratch)
        model, outside = scan_nests(lowered, self.fragments, op_line(op.stmt, f"T.reduce_{op.str_arg(2)}"))
        return _Reduce(src.buffer, dst.buffer, kept, model, op_line(op.stmt, f"T.reduce_{op.str_arg(2)}"), outside)

    # -- solving ---------------------------------------------------------------------------

    def undecided(self, buf) -> bool:
        d = self.layouts.decision(buf)
        return d.layout is None and d.in_registers

    def propagate(self) -> None:
        changed = True
        while changed:
            changed = False
            for use in self.uses:
                if isinstance(use, _Reduce):
                    if self.layouts.in_registers(use.src) and self.undecided(use.dst):
                        projected = _project(self.layouts.get(use.src), use.kept, use.dst)
                        if projected is not None:
                            self.layouts.impose(use.dst, projected, use.origin)
                            changed = True
                    continue
                layout = nest_layout(use, self.layouts)
                if layout is None:
                    continue
                for acc in use.accesses:
                    if not self.undecided(acc.buffer):
                        continue
                    dims = projection_dims(acc, use)
                    if dims is None:
                        continue
                    derived = layout if dims == list(range(len(use.loop_vars))) else _project(layout, dims, acc.buffer)
                    if derived is not None:
                        self.layouts.impose(acc.buffer, derived, use.origin)
                        changed = True

    def choose_free(self) -> bool:
        """Give one undecided fragment a layout; False when none is left."""
        warp = max(1, int(self.ctx.caps.warp_size))
        for use in self.uses:
            if isinstance(use, _Reduce) and self.undecided(use.src):
                layout = _reduce_source_layout(use, self.use_range(use).extent, warp)
                if layout is not None:
                    self.layouts.impose(use.src, layout, use.origin + " (rows over a warp's lanes)")
                    return True
        for use in self.uses:
            found = self.reducer_update(use) if isinstance(use, Nest) else None
            if found is not None and self.undecided(found[0]):
                full, kept = found
                layout = _rows_layout(full, kept, self.threads, warp)
                if layout is not None:
                    self.layouts.impose(full, layout, use.origin + " (updates a reducer: rows over a warp's lanes)")
                    return True
        for buf in self.order:
            if self.undecided(buf):
                shape = [int(d) for d in buf.shape]
                layout = cyclic_fragment(shape, self.fragment_range(buf).extent)
                if layout is None:
                    self.layouts.move_to_shared(buf, f"no register layout spreads shape {tuple(shape)} evenly over "
                                                     f"{self.threads} threads")
                else:
                    self.layouts.impose(buf, layout, "default (cyclic over the threads)")
                return True
        return False

    def reducer_update(self, nest: Nest):
        """(fragment, kept dims) when `nest` updates a reducer at a subset of its loop
        variables (`acc[i] += a[i, j]`) and indexes a register fragment by all of them: that
        fragment's rows (the kept dims) then go over a warp's lanes, so the reducer's
        projection is replicated only over lanes of a warp."""
        kept = None
        for acc in nest.accesses:
            if acc.write and buffer_key(acc.buffer) in self.reducers:
                dims = projection_dims(acc, nest)
                if dims is not None and len(dims) < len(nest.loop_vars):
                    kept = dims
        if kept is None:
            return None
        everything = list(range(len(nest.loop_vars)))
        for acc in nest.accesses:
            if buffer_key(acc.buffer) not in self.reducers and projection_dims(acc, nest) == everything \
                    and self.layouts.decision(acc.buffer).in_registers:
                return acc.buffer, kept
        return None

    def verify(self) -> bool:
        """Move fragments with a non-local access to shared memory; True when one moved."""
        moved = False
        for use in self.uses:
            if isinstance(use, _Reduce):
                registers = self.layouts.in_registers(use.src) and self.layouts.in_registers(use.dst)
                if registers and self.layouts.get(use.src).replicate == 1:
                    want = _project(self.layouts.get(use.src), use.kept, use.dst)
                    if want is not None and want == self.layouts.get(use.dst):
                        continue
                    self.layouts.move_to_shared(use.dst, f"{use.origin} produces it in the layout "
                                                         f"{getattr(want, 'name', '?')}, but it holds "
                                                         f"{self.layouts.get(use.dst).name}")
                    moved = True
                    continue
                # the portable reduction: a nest over the result; what it reads outside that
                # nest every thread reads, so only a copy in every thread serves
                for acc in use.model_outside:
                    held = self.layouts.get(acc.buffer)
                    if self.layouts.in_registers(acc.buffer) and held is not None and not held.fully_replicated:
                        self.layouts.move_to_shared(acc.buffer, f"{use.origin} reads it in every thread, but it is "
                                                                f"spread over the threads ({held.name})")
                        moved = True
                nests = use.model
            else:
                nests = [use]
            for nest in nests:
                moved |= self.verify_nest(nest, self.use_range(use).extent)
        return moved

    def verify_nest(self, nest: Nest, threads: int) -> bool:
        layout = nest_layout(nest, self.layouts, threads)
        moved = False
        for acc in nest.accesses:
            if not self.layouts.in_registers(acc.buffer):
                continue
            frag = self.layouts.get(acc.buffer)
            if frag.fully_replicated and not acc.write and (layout is None or layout.threads == frag.threads):
                continue  # every thread holds every element, in the slot its indices name
            if frag.fully_replicated and acc.write and buffer_key(acc.buffer) in self.reducers \
                    and (layout is None or layout.replicate == 1):
                continue  # a reducer's copies are partials: each takes the updates of the iterations
                #           its thread runs (each runs on one thread), T.finalize_reducer combines them
            if frag.fully_replicated and acc.write and (layout is None or not layout.fully_replicated):
                # each copy must see every write: a nest spread over the threads updates only some
                self.layouts.move_to_shared(acc.buffer, f"{nest.origin} writes it from a layout spread over the "
                                                        f"threads, but every thread holds a copy of it")
                moved = True
                continue
            if layout is None or access_slots(layout, nest.loop_vars, acc.indices, frag) is None:
                runs = f"in layout {layout.name}" if layout is not None else "over a symbolic range"
                self.layouts.move_to_shared(acc.buffer, f"{nest.origin} runs {runs}, in which "
                                                        f"{acc.buffer.name}[...] is held by other threads "
                                                        f"(its layout: {frag.name})")
                moved = True
        if layout is not None and layout.replicate > 1 and nest.effects and layout.replica_bits() is None:
            acc = defining_access(nest, self.layouts)
            if acc is not None:
                self.layouts.move_to_shared(acc.buffer, f"{nest.origin} writes memory from a replicated layout "
                                                        f"whose replicas cannot be told apart")
                moved = True
        return moved

    def solve(self) -> None:
        self.place_floating()
        self.propagate()
        while self.choose_free():
            self.propagate()
        while self.verify():
            self.propagate()
            while self.choose_free():
                self.propagate()


def fragment_view_source(decl, fragments: dict):
    """The fragment a `T.reshape` / `T.view` of a fragment (`decl`, a DeclBuffer in scope
    "local.fragment") names; a TileLangCompileError when the view is not one the SIMT
    placement can share registers with (another dtype, a symbolic shape, another buffer)."""
    from .errors import TileLangCompileError

    view, data = decl.buffer, decl.data
    source = None
    if isinstance(data, tvm_ir.Call) and getattr(data.op, "name", "") == "tirx.buffer_data":
        source = fragments.get(buffer_key(data.args[0]))
    where = op_line(decl, f"T.reshape of a fragment into {view.name}")
    if source is None:
        raise TileLangCompileError(f"{where}: {view.name} is not a view of a fragment of this "
                                   f"kernel; view fragments with T.reshape(fragment, shape) / T.view(fragment, shape)")
    shapes = [view.shape, source.shape]
    if not all(isinstance(d, tir.IntImm) for shape in shapes for d in shape):
        raise TileLangCompileError(f"{where}: the fragment view {view.name} of {source.name} has a symbolic shape; "
                                   f"a register fragment is viewed with constant shapes only")
    if str(view.dtype) != str(source.dtype):
        raise TileLangCompileError(f"{where}: {view.name} views the fragment {source.name} ({source.dtype}) as "
                                   f"{view.dtype}; registers are reshaped, not reinterpreted — use T.reshape "
                                   f"(same dtype) or copy into a fragment of the other dtype")
    return source


def _project(layout: Fragment, dims: list[int], buffer) -> Fragment | None:
    shape = [int(d) for d in buffer.shape]
    try:
        if not dims:  # a whole-tile reduction into a (1,) fragment: every thread holds the result
            return Fragment((1,), layout.threads, 1, lambda t, s: (0,), f"{layout.name}.all") if shape == [1] else None
        return layout.project(dims)
    except FragmentError:
        return None


def _reduce_source_layout(use: _Reduce, threads: int, warp: int) -> Fragment | None:
    return _rows_layout(use.src, use.kept, threads, warp, vector=1)


def _dtype_bits(buffer) -> int:
    from tvm import DataType

    return DataType(str(buffer.dtype)).bits


def _rows_layout(buffer, kept: list[int], threads: int, warp: int, vector: int | None = None) -> Fragment | None:
    """A 2-D fragment whose kept dim's rows each lie in consecutive lanes of a warp (see
    `row_fragment`); `vector` consecutive elements per thread along the other dim (default:
    16 bytes' worth when the shape allows, else 1)."""
    shape = [int(d) for d in buffer.shape]
    if len(shape) != 2 or kept not in ([0], [1]):
        return None
    if vector is None:
        wide = max(1, 16 // max(1, _dtype_bits(buffer) // 8)) if kept == [0] else 1
        for v in sorted({wide, 1}, reverse=True):
            found = _rows_layout(buffer, kept, threads, warp, v)
            if found is not None:
                return found
        return None
    if kept == [0]:
        return row_fragment(shape[0], shape[1], threads, warp, vector)
    if kept == [1]:
        rows = row_fragment(shape[1], shape[0], threads, warp, vector)
        if rows is None:
            return None
        return Fragment(shape, threads, rows.slots, lambda t, s: tuple(reversed(rows.element_of(t, s))),
                        rows.name + ".T")
    return None


def infer_layout(func, ctx):
    layouts = FragmentLayouts()
    ctx.facts[FRAGMENT_LAYOUTS] = layouts
    if ctx.block_serial or ctx.hooks is None:
        return func
    threads = launch_info(func).threads
    inference = _Inference(func, ctx, threads)
    if not inference.fragments:
        return func
    for buf in inference.order:
        if not all(isinstance(d, tir.IntImm) for d in buf.shape):
            layouts.move_to_shared(buf, "its shape is symbolic")
    for buf, frag, origin in _user_layouts(func, threads).values():
        layouts.impose(buf, frag, origin, pinned=True)
        layouts.decision(buf).by_user = True
    inference.collect_uses(func.body)
    inference.solve()
    ctx.facts["layout_report"] = layouts.report()
    return func
