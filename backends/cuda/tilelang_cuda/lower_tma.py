"""`T.Pipelined` on Hopper: tiles loaded by TMA (`cp.async.bulk.tensor`) completing on
mbarriers, and wgmma overlapped across iterations.

`pipeline_tma_loads` runs before the cp.async pipeline (`lower_pipeline.pipeline_async_copies`)
and takes a `T.Pipelined(n, num_stages=S)` loop (S >= 2) when the target has the `tma` copy
engine and mbarriers, `tl.disable_tma_lower` is off, and the loop body is

- *loads*: `T.copy(global, shared)` of whole 2-D tiles that wgmma reads through descriptors
  (placed by `lower_wgmma.place_wgmma_operands`), from a tensor parameter whose strides are
  static multiples of 16 bytes (`plan_tma_load`), and
- *consumers*: everything else, writing no shared memory and no loaded tensor.

Each loaded tile X becomes X[S, ...]; the kernel gets 2*S mbarriers, `full[s]` (one
arrival: thread 0's `expect_tx`, plus the bytes of the stage) and `empty[s]` (one arrival per
warp), and with `lag` L (1 when the consumers are one wgmma gemm, else 0):

    thread 0: init the barriers; barrier;  thread 0: load iterations 0 .. S-1-L into stages 0 ..
    for it in 0 .. n-1:
        s = it % S;  wait full[s] (parity (it / S) % 2)
        consumers on stage s          # L = 1: the gemm commits, waits until 1 group is pending
                                      # (0 in the last iteration): wgmma(it - 1) is done
        lane 0 of each warp: arrive empty[(it - L) % S]           (when it >= L)
        thread 0: j = it + S - L; if j < n: wait empty[j % S] for its previous use, then
                  expect_tx + the TMA loads of iteration j into stage j % S

A stage is loaded again only after every warp released it, and read only after its bytes
landed; with L = 1 the tensor cores work on iteration it while iteration it - 1's wgmma
drains. When the kernel qualifies for persistent blocks (`lower_persistent.plan_persistent`),
the warp-specialized pipeline counts its iterations over the tiles a block has done (`wave *
n + it` picks the stage and the phase; the consumers also release the last stage of a tile)
and the kernel takes the persistent form, if it still fits the shared memory.

The overlapped form (`plan_overlap`, FlashAttention-3's schedule; `tl.disable_overlap` turns
it off): when the warp-specialized consumers end in two chained wgmma gemms (S = Q K^T, O +=
P V) over two warpgroups, each gemm's tiles get their own full/empty barriers and

    it = 0:          wait K(0); pre; S(0) whole; release K(0); middle; late
    it = 1 .. n-1:   wait K(it); pre; [turn]; issue S(it); wait V(it-1); issue PV(it-1); [pass]
                     wait S (1 group pending); release K(it); middle (softmax, beside PV(it-1))
                     wait PV (0 pending); release V(it-1); late (rescale of O)
    after:           wait V(n-1); PV(n-1) whole; release V(n-1)

where [turn]/[pass] are named barriers that make the warpgroups alternate their issues, so
one's softmax runs beside the other's gemms.
The tensor maps the loads use (`TensorMap`) are recorded on the PrimFunc as
`TENSOR_MAPS_ATTR` (JSON): the codegen appends one `const __grid_constant__` parameter per map
and the runtime builds them per call (`cuTensorMapEncodeTiled`). The result sits in an
`ATTR_SYNC_PLACED` region: the core adds no barrier in it.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

import tvm
from tvm import ir as _ir
from tvm import tirx as tir

from tilelang_core.codegen import sync_group, sync_threads
from tilelang_core.ir import Region, TileOp, collect_tile_ops, is_tile_op, make_call
from tilelang_core.ir import ANN_NUM_STAGES, ATTR_SYNC_RESUME, SCOPE_BARRIER
from tilelang_core.transform import analyzer, map_stmts, seq, shared_bytes, substitute
from tilelang_core.transform import launch_info

from .layout_wgmma import wgmma_tile
from .lower_layout import SHARED_LAYOUTS
from .lower_pipeline import _key, _loads_buffers, _references, _restage, _statements, _user_synchronized, _whole, \
    _writes, \
    consumers_fit, invariant_mins, reads_scalars_only, sync_placed
from .lower_persistent import PERSISTENT, persist, plan_persistent
from .lower_wgmma import ISSUE, WAIT, WGMMA_OPERANDS, WHOLE, a_register_count, plan_wgmma, proxy_fence, \
    takes_wgmma

__all__ = ["TENSOR_MAPS_ATTR", "ATTR_WARP_SPECIALIZED", "TensorMap", "TmaLoad", "plan_tma_load", "pipeline_tma_loads", "tma_dims",
           "specialize_warps", "tensor_maps_of"]

TENSOR_MAPS_ATTR = "cuda.tensor_maps"
# AttrStmt around a warp-specialized pipeline; its value is the number of consumer threads
ATTR_WARP_SPECIALIZED = "cuda.warp_specialized"
WARP = 32
WARPGROUP = 128
PRODUCER_REGISTERS = 40  # what a loading warpgroup keeps after setmaxnreg (it only issues TMA)
REGISTER_FILE = 65536


def loading_threads(caps, consumers: int) -> int:
    """How many threads the loading side gets: a whole warpgroup when the target can move
    registers between warpgroups (`setmaxnreg`) and the consumers are whole warpgroups (the
    loaders then give their registers to the consumers), else one warp."""
    return WARPGROUP if "setmaxnreg" in caps.features and consumers % WARPGROUP == 0 else WARP


def register_split(consumers: int, loaders: int) -> tuple[int, int] | None:
    """(consumer, loader) registers per thread after `setmaxnreg`, or None without it: the
    loaders keep PRODUCER_REGISTERS, the consumers share the rest (a multiple of 8, at most 240)."""
    if loaders != WARPGROUP:
        return None
    per = (REGISTER_FILE - loaders * PRODUCER_REGISTERS) // consumers
    return min(240, per - per % 8), PRODUCER_REGISTERS
SYNC_ALL_ID = 2  # bar.sync id of the one barrier the loading warp joins (1: the consumers')
SYNC_CONSUMERS_ID = 1
# named barriers the consumer warpgroups of an overlapped pipeline take turns on (3 + w: w's turn)
TURN_IDS = (3, 4)
MAX_RANK = 5
MAX_BOX = 256
_PIPELINE_KEYS = ("num_stages", "tl_pipeline_order", "tl_pipeline_stage", "tl_pipeline_sync", "tl_pipeline_group")


@dataclass(frozen=True)
class TensorMap:
    """One TMA descriptor: the tensor parameter `param` (its index among the kernel's
    parameters) of `dtype` and `shape` (outermost first; an int, or the name of a symbolic
    dimension), read in boxes of `box` elements (outermost first) with a `swizzle` of 128, 64,
    32 or 0 bytes. The tensor is contiguous, row-major."""

    param: int
    dtype: str
    shape: tuple
    box: tuple
    swizzle: int

    def to_dict(self) -> dict:
        return {"param": self.param, "dtype": self.dtype, "shape": list(self.shape), "box": list(self.box),
                "swizzle": self.swizzle}


@dataclass(frozen=True)
class TmaLoad:
    """A `T.copy(global, shared)` that TMA does: its source region, destination tile, the
    tile's swizzled placement and the tensor map (not yet numbered)."""

    op: TileOp
    src: Region
    dst: Region
    rows: int
    cols: int
    slab: int  # columns per box (one swizzle slab)
    map: TensorMap

    @property
    def boxes(self) -> int:
        return self.cols // self.slab

    @property
    def bytes(self) -> int:
        return self.rows * self.cols * tvm.runtime.DataType(self.map.dtype).bits // 8


def tensor_maps_of(func) -> list[dict]:
    """The tensor maps recorded on `func` (`TENSOR_MAPS_ATTR`), as dicts; [] when none."""
    attrs = func.attrs
    if attrs is None or TENSOR_MAPS_ATTR not in attrs:
        return []
    return json.loads(str(attrs[TENSOR_MAPS_ATTR]))


def _ints(values) -> list[int] | None:
    out = []
    for v in values:
        if not isinstance(v, tir.IntImm):
            return None
        out.append(int(v))
    return out


def tma_dims(buffer, element: int) -> tuple | None:
    """The dims (outermost first; an int, or the name of a symbolic dim) of a tensor
    parameter a TMA descriptor can describe, or None: contiguous (TMA computes the strides
    from the shape), 2 to MAX_RANK dims, and every stride a static multiple of 16 bytes."""
    shape = list(buffer.ty.shape)
    if not 2 <= len(shape) <= MAX_RANK or len(buffer.ty.strides):
        return None
    inner = _ints(shape[1:])
    if inner is None:
        return None
    stride = element
    for dim in reversed(inner):  # the strides of dims 0 .. rank-2, in bytes
        stride *= dim
        if stride % 16 or stride >= 1 << 40:
            return None
    return tuple(int(d) if isinstance(d, tir.IntImm) else str(d.name) for d in shape)


def plan_tma_load(op: TileOp, params: dict[int, int], operands: set, placed: dict,
                  placeable: set = frozenset()) -> TmaLoad | None:
    """The TMA plan of a `T.copy`, or None: the copy must move a whole 2-D shared tile placed
    for wgmma descriptors (a 128/64/32-byte swizzle), or one in `placeable` (which then gets
    that placement), from a contiguous tensor parameter of the same dtype whose every stride
    is a static multiple of 16 bytes."""
    if op.name != "copy" or op.hints.get("disable_tma"):
        return None
    src, dst = op.regions[:2]
    if src.scope != "global" or dst.scope not in ("shared", "shared.dyn") or src.dtype != dst.dtype:
        return None
    key = _key(dst.buffer)
    layout = placed.get(key)
    wgmma_placed = key in operands and layout is not None and layout.origin.startswith("T.gemm on wgmma")
    if not wgmma_placed and (key not in placeable or layout is not None):
        return None
    tile_shape = _ints(dst.buffer.ty.shape)
    if tile_shape is None or len(tile_shape) != 2 or not _whole(dst):
        return None
    rows, cols = tile_shape
    param = params.get(_key(src.buffer))
    element = tvm.runtime.DataType(src.dtype).bits // 8
    dims = tma_dims(src.buffer, element) if element in (1, 2, 4) else None
    if param is None or dims is None:
        return None
    extents = _ints(src.extents)
    if extents is None or extents[-2:] != [rows, cols] or any(e != 1 for e in extents[:-2]):
        return None
    if not all(reads_scalars_only(m) for m in src.mins):
        return None  # a start read from memory other than a scalar (the loop checks it stays put)
    tile = wgmma_tile(rows, cols, element)
    if tile is None or rows > MAX_BOX or tile.slab > MAX_BOX:
        return None
    box = (1,) * (len(dims) - 2) + (rows, tile.slab)
    return TmaLoad(op, src, dst, rows, cols, tile.slab, TensorMap(param, src.dtype, dims, box, tile.width))


def _takes_wgmma(op: TileOp, ctx, threads: int, operands: set) -> bool:
    """Whether `op` is a T.gemm the wgmma lowering will take (as `lower_wgmma.lower_wgmma` decides)."""
    if op.name != "gemm":
        return False
    plan = plan_wgmma(op, threads)
    shared = op.regions[1:2] if plan is not None and plan.a_registers else op.regions[:2]
    return takes_wgmma(plan, op, ctx.facts.get("fragment_layouts") or {}) \
        and all(_key(r.buffer) in operands for r in shared)


def _extern(name: str, *args) -> tir.Stmt:
    return tir.Evaluate(tir.call_extern("void", name, *args))


def _i32(value) -> tir.PrimExpr:
    return tir.const(value, "int32") if isinstance(value, int) else value


def _fenced_gemms(stmt: tir.Stmt) -> tir.Stmt:
    """`stmt` with each `T.gemm` marked as reading tiles fenced before the loop (args 10 and
    11: wait for every group, issue no proxy fence; `lower_wgmma`)."""
    def on_eval(e: tir.Evaluate):
        if is_tile_op(e, "gemm") and len(e.value.args) == 10:
            return tir.Evaluate(make_call("gemm", *e.value.args, tir.const(0, "int32"), tir.const(1, "int32")),
                                span=e.span)
        return e

    return map_stmts(stmt, (tir.Evaluate,), on_eval)


class _NotTaken(Exception):
    pass


class _TmaPipeline:
    """The rewrite of one eligible loop (module docstring)."""

    def __init__(self, loop: tir.For, stages: int, loads: list[TmaLoad], consumers: list, map_index, tx,
                 warps: int, lag: int, base=None, overlap: "_Overlap | None" = None):
        self.loop, self.stages, self.loads, self.consumers = loop, stages, loads, consumers
        self.map_index, self.tx, self.warps, self.lag = map_index, tx, warps, lag
        # iterations run through the stages before this run of the loop (a persistent block's
        # earlier tiles, `lower_persistent`); None: none
        self.base = base
        # the overlapped form of two chained gemms (`plan_overlap`): each gemm's tiles on
        # their own full/empty barriers (group 0: the first gemm's, 1: the second's)
        self.overlap = overlap
        self.barriers = tir.decl_buffer((2 * stages * self.groups,), "uint64", name="tma_barriers",
                                        scope=SCOPE_BARRIER)
        self.staged = {}
        for load in loads:
            buf = load.dst.buffer
            self.staged[_key(buf)] = tir.decl_buffer((stages, load.rows, load.cols), str(buf.ty.dtype),
                                                     name=buf.name, scope=str(buf.ty.storage_scope))

    @property
    def groups(self) -> int:
        """Barrier groups: 2 in the overlapped form (K's and V's tiles apart), else 1."""
        return 2 if self.overlap is not None else 1

    def _count(self, it) -> tir.PrimExpr:
        """Iteration `it` of this run counted over every run of the loop: what picks its stage
        and the parity of its barrier phase."""
        return it if self.base is None else self.base + it

    def _bar(self, index) -> tir.PrimExpr:
        return tir.address_of(tir.BufferLoad(self.barriers, [_i32(index)]))

    def full(self, stage, group: int = 0):
        return self._bar(stage if not group else _i32(stage) + 2 * self.stages * group)

    def empty(self, stage, group: int = 0):
        return self._bar(_i32(stage) + self.stages + 2 * self.stages * group)

    def _group_loads(self, group) -> list[TmaLoad]:
        if group is None:
            return self.loads
        return [load for load, g in zip(self.loads, self.overlap.groups) if g == group]

    def issue(self, it, stage, group: int | None = None) -> tir.Stmt:
        """Thread 0's loads of iteration `it` (counted from 0) into `stage` (those of barrier
        group `group` only, when given)."""
        var, lo = self.loop.loop_var, self.loop.min
        loads = self._group_loads(group)
        stmts = [_extern("tl::mbarrier_expect_tx", self.full(stage, group or 0),
                         tir.const(sum(load.bytes for load in loads), "uint32"))]
        for load in loads:
            mins = [substitute(m, {var: lo + it}) for m in load.src.mins]
            staged = self.staged[_key(load.dst.buffer)]
            for box in range(load.boxes):
                col = box * load.slab
                coords = [mins[-1] + col] + list(reversed(mins[:-1]))
                smem = tir.address_of(tir.BufferLoad(staged, [_i32(stage), tir.const(0, "int32"), tir.const(col, "int32")]))
                stmts.append(_extern("tl::tma_load", tir.const(self.map_index(load.map), "int32"), smem,
                                     self.full(stage, group or 0), *coords))
        return seq(stmts)

    def _consumer(self, stmt: tir.Stmt, it) -> tir.Stmt:
        stmt = _restage(stmt, self.staged, tir.floormod(self._count(it), self.stages))
        if not self.lag:
            return _fenced_gemms(stmt)
        # the one gemm of the loop: commit, then wait until one group is pending
        call = stmt.value
        return tir.Evaluate(make_call("gemm", *call.args, tir.const(1, "int32")), span=stmt.span)

    def _wait_full(self, it, group: int = 0) -> tir.Stmt:
        g = self._count(it)
        return _extern("tl::mbarrier_wait", self.full(tir.floormod(g, self.stages), group),
                       tir.floormod(tir.floordiv(g, self.stages), 2))

    def _release(self, it, lag=None, group: int = 0) -> tir.Stmt:
        """Lane 0 of each consumer warp releases the stage of iteration it - lag."""
        lag = self.lag if lag is None else lag
        lane0 = tir.EQ(tir.floormod(self.tx, WARP), 0)
        return tir.IfThenElse(lane0, _extern("tl::mbarrier_arrive",
                                             self.empty(tir.floormod(self._count(it) - lag, self.stages), group)),
                              None)

    def _reuse(self, j, group: int = 0) -> tir.Stmt:
        """Wait until the consumers released the previous use (j - S) of iteration j's stage."""
        g = self._count(j)
        return _extern("tl::mbarrier_wait", self.empty(tir.floormod(g, self.stages), group),
                       tir.floormod(tir.floordiv(g - self.stages, self.stages), 2))

    def _iteration(self, it, first: bool, refill: bool) -> list:
        """Consumer iteration `it` (counted from 0); `first` when it is the peeled iteration 0
        of a lag-1 loop (nothing to release yet); `refill`: thread 0 then loads iteration
        it + S - lag into the stage just released (the form without a loading warp)."""
        n = self.loop.extent
        stmts = [
            self._wait_full(it),
            tir.AttrStmt(tir.const(0, "int32"), ATTR_SYNC_RESUME, tir.const(1, "int32"),
                         seq(self._consumer(s, it) for s in self.consumers)),
        ]
        if not (self.lag and first):
            stmts.append(self._release(it))
        if refill:
            j = it + (self.stages - self.lag)
            step = self.issue(j, tir.floormod(j, self.stages))
            if not (self.lag and first):
                step = seq([self._reuse(j), step])
            stmts.append(tir.IfThenElse(tir.And(tir.EQ(self.tx, 0), tir.LT(j, n)), step, None))
        return stmts

    def _consumer_loop(self, refill: bool) -> tir.Stmt:
        """The consumers' loop. With lag 1 its iteration 0 is peeled off, so that one wgmma group
        is in flight at every entry of the loop (else ptxas drains the tensor cores at the back
        edge, `WARPGROUP.DEPBAR.LE gsb0, 0x0`), and the last group is waited for after it."""
        loop = self.loop
        var, lo, n = loop.loop_var, loop.min, loop.extent
        keep = {k: v for k, v in loop.annotations.items() if k not in _PIPELINE_KEYS}
        if self.overlap is not None:
            return self._overlapped_loop(keep)
        if not self.lag:
            # the consumers write no shared memory: one proxy fence before the loop covers the
            # generic-proxy writes (a tile loaded before it by cp.async or by threads) that its
            # gemms read (`_fenced_gemms`); TMA's writes need none
            return seq([proxy_fence(), tir.For(var, lo, n, tir.ForKind.SERIAL,
                                                seq(self._iteration(var - lo, False, refill)),
                                                annotations=keep or None, span=loop.span)])
        first = substitute(seq(self._iteration(tir.const(0, "int32"), True, refill)), {var: lo})
        rest = tir.For(var, lo + 1, n - 1, tir.ForKind.SERIAL, seq(self._iteration(var - lo, False, refill)),
                       annotations=keep or None, span=loop.span)
        cond = tir.GE(n, 1)
        body = seq([first, rest]) if analyzer().can_prove(cond) else tir.IfThenElse(cond, seq([first, rest]), None)
        drained = [body, _extern("tl::wgmma_wait<0>")]
        if self.base is not None:  # a later run of the loop refills the last stage too
            drained.append(self._release(n - 1, lag=0))
        return seq(drained)

    def _at(self, stmt: tir.Stmt, at) -> tir.Stmt:
        """`stmt` of the iteration whose loop variable is `at`, reading that iteration's stage."""
        var, lo = self.loop.loop_var, self.loop.min
        if not at.same_as(var):
            stmt = substitute(stmt, {var: at})
        return _restage(stmt, self.staged, tir.floormod(self._count(at - lo), self.stages))

    def _overlap_gemm(self, second: bool, at, wg_wait: int, phase: int) -> tir.Stmt:
        """One of the chained gemms at iteration `at`: its stage, `wg_wait`, fenced before the loop,
        `phase` (whole, issue or wait: `lower_wgmma`) and, for the second, the A registers the
        loop declared."""
        ov = self.overlap
        stmt = self._at(ov.second if second else ov.first, at)
        extra = [tir.const(wg_wait, "int32"), tir.const(1, "int32"), tir.const(phase, "int32")]
        if second:
            extra.append(tir.BufferLoad(ov.a_regs, [0]))
        return tir.Evaluate(make_call("gemm", *stmt.value.args[:10], *extra), span=stmt.span)

    def _overlapped_loop(self, keep: dict) -> tir.Stmt:
        """The consumers' loop in the overlapped form (`plan_overlap`): iteration it issues
        gemm1(it) and gemm2(it - 1), waits for gemm1 only, runs the statements between the gemms
        that leave gemm2's accumulator alone while gemm2(it - 1) is in flight, then waits for it
        and runs the rest. The two consumer warpgroups take turns issuing (named barriers
        3 + w; warpgroup 1 lets warpgroup 0 go first), so one's softmax runs beside the
        other's gemms."""
        ov, loop = self.overlap, self.loop
        var, lo, n = loop.loop_var, loop.min, loop.extent
        threads = self.warps * WARP
        group = tir.Var("turn", "int32")  # the consumer's warpgroup (warp-uniform)
        turn_wait = _extern("tl::named_barrier_sync", tir.const(TURN_IDS[0], "int32") + group,
                            tir.const(threads, "int32"))
        turn_pass = _extern("tl::named_barrier_arrive", tir.const(TURN_IDS[1], "int32") - group,
                            tir.const(threads, "int32"))
        zero = tir.const(0, "int32")

        def stmts(items, at):
            if not items:
                return []
            # the core may still place barriers the statements need (as in `_iteration`)
            return [tir.AttrStmt(zero, ATTR_SYNC_RESUME, tir.const(1, "int32"), seq([self._at(s, at) for s in items]))]

        first = [
            self._wait_full(zero, 0),
            *stmts(ov.pre, lo),
            self._overlap_gemm(False, lo, 0, WHOLE),
            self._release(zero, lag=0, group=0),
            *stmts(ov.middle, lo),
            *stmts(ov.late, lo),
        ]
        it, prev = var - lo, var - 1
        body = [
            self._wait_full(it, 0),
            *stmts(ov.pre, var),
            turn_wait,
            self._overlap_gemm(False, var, 0, ISSUE),
            self._wait_full(it - 1, 1),
            self._overlap_gemm(True, prev, 0, ISSUE),
            # warpgroup 1 passes no turn after its last issue (nobody waits for it)
            tir.IfThenElse(tir.Or(tir.EQ(group, 0), tir.LT(it, n - 1)), turn_pass, None),
            self._overlap_gemm(False, var, 1, WAIT),
            self._release(it, lag=0, group=0),
            *stmts(ov.middle, var),
            self._overlap_gemm(True, prev, 0, WAIT),
            self._release(it - 1, lag=0, group=1),
            *stmts(ov.late, var),
        ]
        rest = tir.For(var, lo + 1, n - 1, tir.ForKind.SERIAL, seq(body), annotations=keep or None, span=loop.span)
        last = n - 1
        drain = [
            self._wait_full(last, 1),
            self._overlap_gemm(True, lo + last, 0, WHOLE),
            self._release(last, lag=0, group=1),
        ]
        start = tir.IfThenElse(tir.And(tir.EQ(group, 1), tir.GE(n, 2)), turn_pass, None)
        whole = seq([tir.AllocBuffer(ov.a_regs),
                     tir.Bind(group, tir.truncdiv(tir.call_extern("int32", "tl::warp_index"),
                                                  tir.const(WARPGROUP // WARP, "int32"))),
                     start, *first, rest, *drain])
        cond = tir.GE(n, 1)
        return seq([proxy_fence(), whole if analyzer().can_prove(cond) else tir.IfThenElse(cond, whole, None)])

    def _init(self) -> list:
        init = [_extern("tl::mbarrier_init", self.full(s, g), tir.const(1, "uint32"))
                for g in range(self.groups) for s in range(self.stages)]
        init += [_extern("tl::mbarrier_init", self.empty(s, g), tir.const(self.warps, "uint32"))
                 for g in range(self.groups) for s in range(self.stages)]
        init.append(_extern("tl::fence_barrier_init"))
        return [tir.AllocBuffer(self.barriers), tir.IfThenElse(tir.EQ(self.tx, 0), seq(init), None)]

    def build_specialized(self, consumer_threads: int, loaders: int) -> tir.Stmt:
        """The warp-specialized form: threads [0, consumer_threads) run the consumers, thread
        `consumer_threads` (the first of `loaders` more threads, added by `specialize_warps`)
        the loads."""
        loop, stages, tx = self.loop, self.stages, self.tx
        n = loop.extent
        j = tir.Var(f"{loop.loop_var.name}_load", "int32")
        groups = [None] if self.overlap is None else list(range(self.groups))
        producer = tir.For(j, tir.const(0, "int32"), n, tir.ForKind.SERIAL, seq([
            step
            for g in groups
            for step in (tir.IfThenElse(tir.GE(self._count(j), stages), self._reuse(j, g or 0), None),
                         self.issue(j, tir.floormod(self._count(j), stages), g))
        ]))
        region = seq([
            *self._init(),
            # every thread of the block, the loading warp included, sees initialised barriers
            tir.Evaluate(sync_group(SYNC_ALL_ID, consumer_threads + loaders)),
            tir.IfThenElse(consumer_guard(consumer_threads), self._consumer_loop(refill=False),
                           tir.IfThenElse(tir.EQ(tx, consumer_threads), producer, None)),
        ])
        return tir.AttrStmt(tir.const(loaders, "int32"), ATTR_WARP_SPECIALIZED, tir.const(consumer_threads, "int32"),
                            sync_placed(region))

    def build(self) -> tir.Stmt:
        """The form without a loading warp: thread 0 loads the first S - lag iterations, then
        each one S - lag ahead of the consumers, into the stage they just released."""
        n = self.loop.extent
        prologue = []
        for s in range(self.stages - self.lag):
            cond = tir.LT(tir.const(s, "int32"), n)
            step = self.issue(tir.const(s, "int32"), tir.const(s, "int32"))
            prologue.append(step if analyzer().can_prove(cond) else tir.IfThenElse(cond, step, None))
        return sync_placed(seq([
            *self._init(),
            tir.Evaluate(sync_threads()),
            tir.IfThenElse(tir.EQ(self.tx, 0), seq(prologue), None),
            self._consumer_loop(refill=True),
        ]))


@dataclass
class _Overlap:
    """Two chained wgmma gemms in a warp-specialized pipeline (FlashAttention's S = Q K^T then
    O += P V): the statements before the first (`pre`), the first, those between that leave the
    second's accumulator alone (`middle`), those that touch it (`late`), the second; which
    gemm reads each load (`groups`: 0 the first, 1 the second); the second's A registers."""
    pre: list
    first: tir.Stmt
    middle: list
    late: list
    second: tir.Stmt
    groups: list
    a_regs: object


def _accesses(stmt: tir.Stmt) -> tuple[set, set]:
    """(buffers `stmt` reads, buffers it writes; -1 among them: an opaque call)."""
    return _reads(stmt)[0], _writes(stmt)


def _commute(a: tuple[set, set], b: tuple[set, set]) -> bool:
    (ra, wa), (rb, wb) = a, b
    return not (wa & (rb | wb)) and not (wb & ra) and -1 not in wa | wb


def plan_overlap(consumers: list, loads: list, ctx, threads: int, operands: set) -> _Overlap | None:
    """The overlapped form of a pipeline whose consumers end in two chained wgmma gemms, or None.

    It applies when the consumers are `pre..., G1, between..., G2` with G1 and G2 wgmma gemms
    (G1 reading A from shared memory, G2 16-bit A from registers, both without the swapped
    form), 256 consumer threads whose two warpgroups each own distinct rows of both
    accumulators (so neither waits for the other), every load read by exactly one of them,
    and the reordering legal: G2(it - 1) moves after pre(it) and G1(it), and the statements
    between that read or write G2's accumulator (`late`) move after the others (`middle`),
    which then run while G2(it - 1) is in flight (G2 reads the registers it packed at issue,
    so writing its A fragment there is fine). On the H100 the two warpgroups' softmax then runs
    beside each other's gemms: TileLang's FlashAttention went from 0.87x to 0.95-0.97x of
    SDPA (hand-written form of this schedule, 2026-11-26)."""
    if threads != 2 * WARPGROUP or any(isinstance(s, tir.Bind) for s in consumers):
        return None
    gemms = [i for i, s in enumerate(consumers) if is_tile_op(s, "gemm")]
    if len(gemms) != 2 or gemms[1] != len(consumers) - 1:
        return None
    i1, i2 = gemms
    g1, g2 = (TileOp.from_stmt(consumers[i]) for i in gemms)
    p1, p2 = plan_wgmma(g1, threads), plan_wgmma(g2, threads)
    if p1 is None or p2 is None or not (_takes_wgmma(g1, ctx, threads, operands)
                                        and _takes_wgmma(g2, ctx, threads, operands)):
        return None
    if p1.a_registers or p1.swap or p2.swap or not p2.a_registers or p2.kind not in ("f16", "bf16"):
        return None
    if any((p.tiling.groups_m, p.tiling.groups_n) != (2, 1) for p in (p1, p2)):
        return None
    reads1 = {_key(r.buffer) for r in g1.regions[:2]}
    reads2 = {_key(r.buffer) for r in g2.regions[:2]}
    groups = []
    for load in loads:
        key = _key(load.dst.buffer)
        if (key in reads1) == (key in reads2):
            return None
        groups.append(0 if key in reads1 else 1)
    if set(groups) != {0, 1}:
        return None
    pre, between = consumers[:i1], consumers[i1 + 1:i2]
    acc2 = _key(g2.regions[2].buffer)
    acc = [_accesses(s) for s in between]
    late = [i for i, (r, w) in enumerate(acc) if acc2 in r | w]
    # late statements move after the middle ones that followed them
    for i in late:
        if any(j not in late and not _commute(acc[i], acc[j]) for j in range(i + 1, len(between))):
            return None
    # G2(it - 1) moves after pre(it) and G1(it); it touches neither's buffers
    g2_access = _accesses(consumers[i2])
    if any(not _commute(g2_access, _accesses(s)) for s in (*pre, consumers[i1])):
        return None
    if any(-1 in w for _, w in acc) or any(-1 in _accesses(s)[1] for s in pre):
        return None
    a_regs = tir.decl_buffer((a_register_count(p2),), "uint32", name="a_regs", scope="local")
    return _Overlap(pre, consumers[i1], [s for i, s in enumerate(between) if i not in late],
                    [between[i] for i in late], consumers[i2], groups, a_regs)


def _placeable(func: tir.PrimFunc) -> set[int]:
    """Shared tiles whose every access is a `T.copy` into them or a `T.gemm` operand read:
    they may take the swizzled placement of a TMA box (16-byte runs of a row stay together,
    which is all ldmatrix needs), applied to every access by `lower_layout`."""
    owned: dict[int, int] = {}
    for op in collect_tile_ops(func):
        regions = op.regions[1:2] if op.name == "copy" else op.regions[:2] if op.name == "gemm" else ()
        for region in regions:
            if region.scope in ("shared", "shared.dyn"):
                owned[_key(region.buffer)] = owned.get(_key(region.buffer), 0) + 1
    refs = _references(func.body)
    return {key for key, count in owned.items() if refs.get(key) == count}


def _place(load: TmaLoad, placed: dict, swizzles: dict) -> None:
    """Give a placeable tile the swizzled placement its TMA boxes write."""
    from .lower_layout import CHUNK_BYTES, SharedLayout
    from .lower_wgmma import _index_map

    key = _key(load.dst.buffer)
    if key in placed:
        return
    element = tvm.runtime.DataType(load.map.dtype).bits // 8
    tile = wgmma_tile(load.rows, load.cols, element)
    line = load.op.source
    origin = f"TMA load at line {line[1]}" if line else "TMA load"
    placed[key] = SharedLayout(_index_map(tile), (tile.rows, tile.cols), (tile.rows, tile.cols), CHUNK_BYTES, origin)
    swizzles.pop(key, None)  # the XOR swizzle planned for cp.async no longer applies


def _split(loop: tir.For, params, operands, placed, scopes, placeable) -> tuple[list[TmaLoad], list] | None:
    loads, consumers = [], []
    for stmt in _statements(loop.body):
        plan = plan_tma_load(TileOp.from_stmt(stmt), params, operands, placed, placeable) \
            if is_tile_op(stmt, "copy") else None
        if plan is not None and invariant_mins(plan.src, loop):
            loads.append(plan)
        else:
            consumers.append(stmt)
    if not loads or not consumers:
        return None
    staged = [_key(load.dst.buffer) for load in loads]
    sources = {_key(load.src.buffer) for load in loads}
    if len(set(staged)) != len(staged):
        return None
    # (a copy into a loaded tile that TMA could not do writes shared memory: the loop stays on cp.async)
    return (loads, consumers) if consumers_fit(consumers, scopes, sources) else None


def pipeline_tma_loads(func: tir.PrimFunc, ctx) -> tir.PrimFunc:
    """Pipeline every eligible `T.Pipelined` loop through TMA and mbarriers (module docstring)."""
    caps = ctx.caps
    if getattr(ctx.options, "disable_tma", False) or "tma" not in caps.copy_engines \
            or not caps.has_barrier("mbarrier"):
        return func
    operands = ctx.facts.get(WGMMA_OPERANDS) or set()
    placed = ctx.facts.setdefault(SHARED_LAYOUTS, {})
    from .lower_pipeline import SWIZZLES

    swizzles = ctx.facts.setdefault(SWIZZLES, {})
    if not operands:
        return func
    placeable = _placeable(func)
    info = launch_info(func)
    tx = info.vars.get("threadIdx.x")
    threads = info.threads
    if tx is None or set(info.extents) - {"threadIdx.x", "blockIdx.x", "blockIdx.y", "blockIdx.z"} \
            or not isinstance(threads, int) or threads % 32:
        return func
    params = {_key(p): i for i, p in enumerate(func.params) if tir.is_buffer_var(p)}
    scopes: dict[int, str] = {}
    from tilelang_core.transform import walk

    walk(func.body, lambda a: scopes.__setitem__(_key(a.buffer), str(a.buffer.ty.storage_scope)), (tir.AllocBuffer,))
    outside = _references(func.body)
    found = ctx.facts.setdefault("pipelines", [])

    # warp specialization: one more warp issues the loads of one top-level pipelined loop
    specialize = not getattr(ctx.options, "disable_warp_specialized", False) \
        and threads + loading_threads(caps, threads) <= caps.max_threads_per_block \
        and not _has_thread_groups(func.body)
    top_level = _top_level_loops(func.body)
    plan = plan_persistent(func, ctx, top_level) if specialize else None

    def rewrite(plan):
        maps: list[TensorMap] = []
        replaced: dict[int, object] = {}
        found_ws: list = []
        persisted: list = []

        def map_index(m: TensorMap) -> int:
            if m not in maps:
                maps.append(m)
            return maps.index(m)

        def on_for(loop: tir.For):
            if ANN_NUM_STAGES not in loop.annotations or int(loop.annotations[ANN_NUM_STAGES]) < 2:
                return loop
            if any(k in loop.annotations for k in ("tl_pipeline_order", "tl_pipeline_stage")) \
                    or _user_synchronized(loop.body):
                return loop
            split = _split(loop, params, operands, placed, scopes, placeable)
            if split is None:
                return loop
            loads, consumers = split
            inside = _references(loop.body)
            if any(outside.get(_key(load.dst.buffer)) != inside.get(_key(load.dst.buffer)) for load in loads):
                return loop  # a loaded tile is used outside the loop
            ops = [TileOp.from_stmt(s) for s in consumers if is_tile_op(s)]
            lag = int(len(consumers) == 1 and len(ops) == 1 and _takes_wgmma(ops[0], ctx, threads, operands))
            stages = int(loop.annotations[ANN_NUM_STAGES])
            specialized = specialize and _key(loop) in top_level and not found_ws
            overlap = None
            if specialized and not (plan is not None and lag) and not getattr(ctx.options, "disable_overlap", False):
                overlap = plan_overlap(consumers, loads, ctx, threads, operands)
            pipe = _TmaPipeline(loop, stages, loads, consumers, map_index, tx, threads // 32, lag, overlap=overlap)
            if specialized:
                found_ws.append(loop)
                if plan is not None and lag:  # the GEMM form (lower_persistent)
                    pipe.base = plan.base(int(loop.extent))
                    persisted.append(loop)
                stmt = pipe.build_specialized(threads, loading_threads(caps, threads))
            else:
                stmt = pipe.build()
            for load in loads:
                _place(load, placed, swizzles)
                key, staged = _key(load.dst.buffer), pipe.staged[_key(load.dst.buffer)]
                placed[_key(staged)] = placed[key]
                operands.add(_key(staged))
                replaced[key] = staged
            found.append((loop.loop_var.name, stages))
            return stmt

        body = map_stmts(func.body, (tir.For,), on_for)
        if not replaced:
            return func, False

        def on_alloc(a: tir.AllocBuffer):
            new = replaced.get(_key(a.buffer))
            return a if new is None else tir.AllocBuffer(new)

        body = map_stmts(body, (tir.AllocBuffer,), on_alloc)
        out = func.with_body(body).with_attr(TENSOR_MAPS_ATTR, json.dumps([m.to_dict() for m in maps]))
        return out, bool(persisted)

    if plan is not None:
        before = len(found)
        out, counted = rewrite(plan)
        if not counted:  # no loop took the persistent count: `out` is the one-tile-per-block form
            return out
        persistent = persist(out, plan)
        if shared_bytes(persistent) <= caps.shared_memory_optin:
            ctx.facts[PERSISTENT] = plan
            return persistent
        del found[before:]  # built again below, one tile per block
    return rewrite(None)[0]


# ---------------------------------------------------------------------------- warp specialization


def consumer_guard(consumers: int) -> tir.PrimExpr:
    """`warp_index() < consumers / 32`: the consumer threads, tested on a warp-uniform value
    (a branch on `threadIdx.x < consumers` would make ptxas serialize the wgmma inside it)."""
    return tir.LT(tir.call_extern("int32", "tl::warp_index"), tir.const(consumers // WARP, "int32"))


def _has_thread_groups(body) -> bool:
    from tilelang_core.ir import ATTR_THREAD_GROUPS
    from tilelang_core.transform import walk

    found = []
    walk(body, lambda a: found.append(a) if a.attr_key == ATTR_THREAD_GROUPS else None, (tir.AttrStmt,))
    return bool(found)


def _children(stmt) -> list:
    """The statements `stmt` runs in order at its own level: a sequence's items (nested
    sequences flattened), else the statement itself."""
    if isinstance(stmt, tir.SeqStmt):
        return [c for s in stmt.seq for c in _children(s)]
    return [stmt]


def _top_level_loops(body) -> set[int]:
    """Loops of the kernel's top level: reached from the body through attributes (the launch
    dimensions, storage notes) and sequences only, so every thread runs them once."""
    found: set[int] = set()

    def visit(stmt):
        if isinstance(stmt, tir.AttrStmt):
            visit(stmt.body)
        elif isinstance(stmt, tir.SeqStmt):
            for s in _children(stmt):
                visit(s)
        elif isinstance(stmt, tir.For):
            found.add(_key(stmt))

    visit(body)
    return found


def _declares(stmt) -> bool:
    """Statements that only bind a name for the rest of their sequence (no side effect)."""
    return isinstance(stmt, (tir.Bind, tir.AllocBuffer, tir.DeclBuffer))


def _consumer_barriers(stmt, consumers: int):
    """`stmt` with its block barriers turned into the consumers' named barrier."""
    import tvm_ffi

    def on_call(call):
        if isinstance(call.op, _ir.Op) and call.op.name == "tl.sync_threads":
            return sync_group(SYNC_CONSUMERS_ID, consumers)
        return call

    return tvm_ffi.structural_map(stmt, ((_ir.Call, on_call),))


def specialize_warps(func: tir.PrimFunc, ctx) -> tir.PrimFunc:
    """Give a kernel with a warp-specialized TMA pipeline (`ATTR_WARP_SPECIALIZED`) its loading
    threads. Run after the core's barrier placement.

    Before: the block has T threads; the pipeline (a top-level statement) initialises its
    barriers, meets at `bar.sync 2, T + L` and branches into the consumers' loop and a loading
    branch (`tx == T`) that never runs. After: the block has T + L threads and one role
    branch, on a warp-uniform test:

        name bindings and allocations (hoisted, in order); barrier set-up; bar.sync 2, T + L
        if (warp_index() < T / 32) { [setmaxnreg.inc] every other top-level statement, in
                                     order, the pipeline's consumer loop in its place }
        else                       { [setmaxnreg.dec] the loading loop (thread T) }

    so the loading threads never meet a block barrier: every `__syncthreads` of the consumer
    branch is the consumers' named barrier (`bar.sync 1, T`). With a loading warpgroup
    (L = 128, `loading_threads`) the registers move from loaders to consumers
    (`register_split`)."""
    from tilelang_core.transform import walk

    markers = []
    walk(func.body, lambda a: markers.append(a) if a.attr_key == ATTR_WARP_SPECIALIZED else None, (tir.AttrStmt,))
    if not markers:
        return func
    marker = markers[0]
    consumers, loaders = int(marker.value), int(marker.node)
    tx = launch_info(func).vars["threadIdx.x"]

    def rewrite(stmt):
        if isinstance(stmt, tir.AttrStmt) and not stmt.same_as(marker):
            value = stmt.value
            if stmt.attr_key == "thread_extent" and stmt.node.var.same_as(tx):
                value = tir.const(consumers + loaders, "int32")
            return tir.AttrStmt(stmt.node, stmt.attr_key, value, rewrite(stmt.body))
        items, wrappers = _top_level(stmt, marker)
        result = _split_roles(items, marker, consumers, loaders, hinted_register_split(func, consumers, loaders))
        for attr in reversed(wrappers):  # annotations around the pipeline now cover the role branch
            result = tir.AttrStmt(attr.node, attr.attr_key, attr.value, result)
        return result

    return func.with_body(rewrite(func.body))


def _top_level(stmt, marker) -> tuple[list, list]:
    """The kernel's top-level statements in order, looking through annotations that wrap
    the rest of the body and hold the pipeline (`T.annotate_layout`'s), and those
    annotations, outermost first."""
    items, wrappers = [], []
    for child in _children(stmt):
        if isinstance(child, tir.AttrStmt) and not child.same_as(marker) and _holds(child, marker):
            inner, more = _top_level(child.body, marker)
            items += inner
            wrappers += [child, *more]
        else:
            items.append(child)
    return items, wrappers


def _pure(stmt) -> bool:
    """A binding whose value reads no memory (it may move before earlier statements)."""
    from tilelang_core.transform import walk

    if not isinstance(stmt, tir.Bind):
        return True
    loads = []
    walk(stmt.value, loads.append, (_ir.TensorLoad,))
    return not loads


def _reads(node) -> tuple[set, set]:
    """(handles of the buffers `node` loads from, handles of the variables it reads)."""
    from tilelang_core.transform import walk

    buffers, names = set(), set()
    walk(node, lambda e: buffers.add(e.source.__chandle__()), (_ir.TensorLoad,))
    walk(node, lambda v: names.add(v.__chandle__()), (tir.Var,))
    return buffers, names


def _values_for_loaders(before: list, producer: tir.Stmt) -> list:
    """The statements before the pipeline that compute a value the loading branch reads (its
    trip count, as `loop_range = T.ceildiv(...)` in a causal attention; a sequence start read
    from global memory), in order, with those they read in turn: the loading threads run them
    too. They store one-element local scalars or bind names from block indices, parameters
    and global memory; a needed value computed otherwise (from shared memory or a fragment,
    or inside a branch) cannot follow the loaders: a compile error says how to go without
    warp specialization."""
    from tilelang_core.transform import LowerAgain, walk

    need_buffers, need_vars = _reads(producer)
    chosen = []
    for stmt in reversed(before):
        if isinstance(stmt, tir.BufferStore):
            key, target = stmt.buffer.__chandle__(), stmt.buffer
        elif isinstance(stmt, tir.Bind) and not _pure(stmt):
            key, target = stmt.var.__chandle__(), stmt.var
        else:
            continue
        if key not in need_buffers and key not in need_vars:
            continue
        if isinstance(stmt, tir.BufferStore) and (target.scope() != "local" or len(target.shape) != 1):
            continue
        loads = []
        walk(stmt.value, loads.append, (_ir.TensorLoad,))
        if any(ld.source.scope() not in ("global", "local") for ld in loads):
            raise LowerAgain(
                f"not warp-specialized: the loading warp would need {target.name}, which is computed from "
                f"{loads[0].source.scope()} memory before the pipelined loop (compute it from block indices, "
                f"arguments or global memory to get the warp-specialized pipeline)", disable_warp_specialized=True)
        chosen.insert(0, stmt)
        more_buffers, more_vars = _reads(stmt.value)
        need_buffers |= more_buffers
        need_vars |= more_vars
    return chosen


def _holds(node, marker) -> bool:
    from tilelang_core.transform import walk

    found = []
    walk(node, lambda a: found.append(a) if a.same_as(marker) else None, (tir.AttrStmt,))
    return bool(found)


def _pipeline_roles(marker, consumers: int) -> tuple[list, list, tir.Stmt, tir.Stmt]:
    """(allocations, set-up, consumer part, loading part) of the pipeline region `marker`."""
    *head, roles = _children(marker.body.body)  # inside ATTR_SYNC_PLACED
    allocs = [h for h in head if isinstance(h, tir.AllocBuffer)]
    setup = [h for h in head if not isinstance(h, tir.AllocBuffer)]
    return allocs, setup, sync_placed(_consumer_barriers(roles.then_case, consumers)), roles.else_case


def _tile_loop_roles(loop: tir.For, marker, consumers: int) -> tuple[list, list, tir.Stmt, tir.Stmt]:
    """(allocations, set-up, consumer loop, loading loop) of a persistent block's tile loop that
    holds the pipeline: both roles walk the same tiles; the pipeline's set-up runs once,
    before the loop; the names the loop body binds are bound in both copies."""
    inner, wrappers = _top_level(loop.body, marker)
    decls, setup, consumer, producer = _roles(inner, marker, consumers)
    allocs = [d for d in decls if isinstance(d, (tir.AllocBuffer, tir.DeclBuffer))]
    binds = [d for d in decls if not isinstance(d, (tir.AllocBuffer, tir.DeclBuffer))]

    def copy(body: list) -> tir.Stmt:
        body = seq([*binds, *body])
        for attr in reversed(wrappers):
            body = tir.AttrStmt(attr.node, attr.attr_key, attr.value, body)
        return tir.For(loop.loop_var, loop.min, loop.extent, loop.kind, body, annotations=loop.annotations,
                       span=loop.span)

    return allocs, setup, copy(consumer), copy([producer])


def _roles(items: list, marker, consumers: int) -> tuple[list, list, list, tir.Stmt]:
    """(declarations, set-up, consumer statements, loading statement) of the statements `items`,
    one of which holds the pipeline region `marker` (itself, or a persistent tile loop)."""
    from .lower_persistent import is_tile_loop

    decls, setup, consumer, producer = [], [], [], None
    before: list = []  # the statements that run before the pipeline
    for stmt in items:
        here = stmt.same_as(marker) or (is_tile_loop(stmt) and _holds(stmt, marker))
        if producer is None and not here:
            before.append(stmt)
        if here:
            allocs, head, part, producer = _pipeline_roles(marker, consumers) if stmt.same_as(marker) \
                else _tile_loop_roles(stmt, marker, consumers)
            decls += allocs
            setup += head
            consumer.append(part)
        elif _declares(stmt) and _pure(stmt):
            decls.append(stmt)
        else:
            consumer.append(_consumer_barriers(stmt, consumers))
    if producer is None:
        raise AssertionError("a warp-specialized pipeline must be a top-level statement of the kernel "
                             "(or of a persistent block's tile loop)")
    shared_values = _values_for_loaders(before, producer)
    if shared_values:
        producer = seq([*shared_values, producer])
    return decls, setup, consumer, producer


# PrimFunc attributes of the kernel's register hints (tilelang_cuda.language: T.no_set_max_nreg,
# T.annotate_producer_reg_dealloc, T.annotate_consumer_reg_alloc)
ATTR_NO_SET_MAX_NREG = "tl.no_set_max_nreg"
ATTR_PRODUCER_REGISTERS = "tl.producer_reg_dealloc"
ATTR_CONSUMER_REGISTERS = "tl.consumer_reg_alloc"


def hinted_register_split(func, consumers: int, loaders: int) -> tuple[int, int] | None:
    """`register_split`, unless the kernel said otherwise: no setmaxnreg at all
    (ATTR_NO_SET_MAX_NREG), or its own consumer / producer register counts."""
    attrs = func.attrs or {}
    if attrs.get(ATTR_NO_SET_MAX_NREG) is not None:
        return None
    split = register_split(consumers, loaders)
    if split is None:
        return None
    consumer = attrs.get(ATTR_CONSUMER_REGISTERS)
    producer = attrs.get(ATTR_PRODUCER_REGISTERS)
    return (int(consumer) if consumer is not None else split[0], int(producer) if producer is not None else split[1])


def _split_roles(items: list, marker, consumers: int, loaders: int, split=None) -> tir.Stmt:
    """The kernel's top-level statements `items` as one role branch (`specialize_warps`);
    `split`: the (consumer, loader) registers of setmaxnreg, None for none."""
    decls, setup, consumer, producer = _roles(items, marker, consumers)
    if split is not None:
        consumer.insert(0, _extern(f"tl::setmaxnreg_inc<{split[0]}>"))
        producer = seq([_extern(f"tl::setmaxnreg_dec<{split[1]}>"), producer])
    return seq([*decls, *setup, tir.IfThenElse(consumer_guard(consumers), seq(consumer), producer)])
