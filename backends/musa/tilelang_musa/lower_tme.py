"""`T.Pipelined` on mp_31 ("Pinghu"): tiles loaded by TME (`__musa_tme_ld_tile_{1..5}d`)
completing on ASYNC barriers, and TCE (SQMMA) groups overlapped across iterations.

`pipeline_tme_loads` runs before the core's `plan_pipeline` and takes a
`T.Pipelined(n, num_stages=S)` loop (S >= 1) when the target has the `tme` copy engine and
`async_barrier` barriers, `tl.disable_tma_lower` is off, and the loop body is

- *loads*: `T.copy(global, shared)` (without `disable_tma=True` or `force_async_copy=True`)
  of a whole 2-D shared tile (row-major, or in the slabs a TCE
  gemm reads, `lower_tce.Slabs`) from a contiguous tensor parameter whose strides are static
  multiples of 16 bytes (`plan_tme_load`), and
- *consumers*: everything else, writing neither a loaded tile nor a loaded tensor (when they
  write other shared memory, each iteration starts with a block barrier: the previous one's
  readers are done).

Each loaded tile X (rows x cols) becomes X' (S * rows x cols): stage s is rows
[s * rows, (s + 1) * rows). The kernel gets 2 S ASYNC barriers (ids from `ASYNC_BARRIER_IDS`,
1..63): `full[s]` (one warp arrives: thread 0, after announcing the stage's bytes with
`__musa_async_add_trans`) and `empty[s]` (every consumer warp arrives). With `lag` L (1 when the
consumers are one TCE gemm, else 0):

    thread 0: init the barriers; block barrier; thread 0: load iterations 0 .. S-1-L
    for it in 0 .. n-1:
        wait full[it % S] (phase (it / S) % 2)
        consumers on stage it % S      # L = 1: the gemm commits its SQMMA group and waits
                                       # until 1 group is in flight: gemm(it - 1) is done
        if it >= L: every thread arrives on empty[(it - L) % S]
        thread 0: j = it + S - L; if j < n: if j >= S: wait empty[j % S] (phase ((j - S) / S) % 2);
                  announce the bytes, TME loads of iteration j into stage j % S, arrive full[j % S]
    (L = 1: wait until no SQMMA group is in flight)

A stage is loaded again only after every warp released it, and read only after its bytes
landed. The tensors the loads read are recorded on the PrimFunc (`TENSOR_DESCRIPTORS_ATTR`,
JSON): the printer appends one `MUtensorDescriptor` parameter per tensor and the runtime
encodes them per call (`muTensorDescriptorEncode`, `descriptors.py`). The printer records the
highest barrier id the kernel initialises with `__musa_async_bar_record`.

Facts (Moore Threads' TileLang port, github.com/MooreThreads/tilelang_musa at dd1cce9b):
`src/tl_templates/musa/copy_mp31.h` (the TME load of a box: coordinates and box dims
innermost first, descriptor by address), `src/op/copy.cc:1700-1910` (box = the tile's extents
reversed, descriptor without a box: `muTensorDescriptorEncode` takes none),
`src/target/codegen_musa.cc:1560-1625` (barrier init counts warps `(threads + 31) / 32`,
expect = add_trans + arrive, wait = `__musa_async_wait(id, phase)`), `src/tl_templates/musa/barrier.h`.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

import tvm
from tvm import ir as _ir
from tvm import tirx as tir

from tilelang_core.codegen import sync_threads
from tilelang_core.ir import ANN_NUM_STAGES, ATTR_SYNC_PLACED, ATTR_SYNC_RESUME
from tilelang_core.ir import Region, TileOp, is_tile_op, make_call, source_of
from tilelang_core.transform import CapabilityError, analyzer, launch_info, map_stmts, seq, substitute, walk

from .lower_tce import TCE_SLABS, Slabs, plan_tce

__all__ = ["TENSOR_DESCRIPTORS_ATTR", "ASYNC_BARRIER_IDS", "TensorDescriptor", "TMELoad",
           "plan_tme_load", "pipeline_tme_loads", "tensor_descriptors_of", "take_barrier_ids", "MAX_BARRIER_ID"]

TENSOR_DESCRIPTORS_ATTR = "musa.tensor_descriptors"
ASYNC_BARRIER_IDS = "musa.async_barrier_ids"  # ctx.facts: the next free ASYNC barrier id
MAX_BARRIER_ID = 63  # ids 1..63; 0 is reserved
MAX_RANK = 5
WARP = 32
_PIPELINE_KEYS = ("num_stages", "tl_pipeline_order", "tl_pipeline_stage", "tl_pipeline_sync", "tl_pipeline_group")


@dataclass(frozen=True)
class TensorDescriptor:
    """One TME descriptor: the tensor parameter `param` (its index among the kernel's
    parameters) of `dtype` and `shape` (outermost first; an int, or the name of a symbolic
    dimension), contiguous and row-major. MUSA's descriptor has no box: each load names it."""

    param: int
    dtype: str
    shape: tuple

    def to_dict(self) -> dict:
        return {"param": self.param, "dtype": self.dtype, "shape": list(self.shape)}


@dataclass(frozen=True)
class TMELoad:
    """A `T.copy(global, shared)` that TME does: its regions, the tile's rows x cols, the
    columns of one box (`width`: the whole row, or one slab) and the descriptor."""

    op: TileOp
    src: Region
    dst: Region
    rows: int
    cols: int
    width: int
    desc: TensorDescriptor

    @property
    def bytes(self) -> int:
        return self.rows * self.cols * tvm.runtime.DataType(self.desc.dtype).bits // 8


def tensor_descriptors_of(func) -> list[dict]:
    """The descriptors recorded on `func` (`TENSOR_DESCRIPTORS_ATTR`), as dicts; [] when none."""
    attrs = func.attrs
    if attrs is None or TENSOR_DESCRIPTORS_ATTR not in attrs:
        return []
    return json.loads(str(attrs[TENSOR_DESCRIPTORS_ATTR]))


def take_barrier_ids(ctx, count: int, what: str, span=None) -> int:
    """The first of `count` consecutive ASYNC barrier ids for `what`; a CapabilityError past 63."""
    first = ctx.facts.get(ASYNC_BARRIER_IDS, 1)
    last = first + count - 1
    if last > MAX_BARRIER_ID:
        raise CapabilityError(
            f"{what} needs ASYNC barriers {first}..{last}, but {ctx.target} has ids 1..{MAX_BARRIER_ID} "
            f"(capability 'async_barrier'; 0 is reserved): use fewer pipeline stages or fewer T.alloc_barrier "
            f"barriers, or pass_configs={{'tl.disable_tma_lower': True}}", span)
    ctx.facts[ASYNC_BARRIER_IDS] = last + 1
    return first


def _key(obj) -> int:
    return obj.__chandle__()


def _ints(values) -> list[int] | None:
    out = []
    for v in values:
        if not isinstance(v, tir.IntImm):
            return None
        out.append(int(v))
    return out


def _reads_memory(expr) -> bool:
    found = []
    walk(expr, found.append, (_ir.TensorLoad,))
    return bool(found)


def plan_tme_load(op: TileOp, params: dict[int, int], slabs: dict) -> TMELoad | None:
    """The TME plan of a `T.copy`, or None: (without `disable_tma` or `force_async_copy`) a
    whole 2-D shared tile of constant shape, from a
    contiguous tensor parameter (rank 2..5) of the same dtype whose strides are static
    multiples of 16 bytes; the tile's columns are along the tensor's last dim, its rows along
    one other dim (the rest of the source region has extent 1)."""
    if op.name != "copy" or op.hints.get("disable_tma") or op.hints.get("force_async_copy"):
        return None
    src, dst = op.regions[:2]
    if src.scope != "global" or dst.scope not in ("shared", "shared.dyn") or src.dtype != dst.dtype:
        return None
    shape = _ints(dst.buffer.ty.shape)
    if shape is None or len(shape) != 2 or _ints(dst.mins) != [0, 0] or _ints(dst.extents) != shape:
        return None
    rows, cols = shape
    param = params.get(_key(src.buffer))
    tensor_shape = list(src.buffer.ty.shape)
    if param is None or not 2 <= len(tensor_shape) <= MAX_RANK or len(src.buffer.ty.strides):
        return None
    extents = _ints(src.extents)
    if extents is None or extents[-1] != cols or [e for e in extents[:-1] if e != 1] not in ([rows], []):
        return None  # the tile's rows along one dim of the tensor, its columns along the last
    if any(_reads_memory(m) for m in src.mins):
        return None
    element = tvm.runtime.DataType(src.dtype).bits // 8
    inner = _ints(tensor_shape[1:])
    if inner is None or element not in (1, 2, 4, 8):
        return None
    stride = element
    for dim in reversed(inner):  # the byte strides of dims 0 .. rank-2
        stride *= dim
        if stride % 16:
            return None
    placement = slabs.get(_key(dst.buffer))
    width = placement.width if placement is not None else cols
    dims = tuple(int(d) if isinstance(d, tir.IntImm) else str(d.name) for d in tensor_shape)
    return TMELoad(op, src, dst, rows, cols, width, TensorDescriptor(param, src.dtype, dims))


def _extern(name: str, *args) -> tir.Stmt:
    return tir.Evaluate(tir.call_extern("void", name, *args))


def _u32(value) -> tir.PrimExpr:
    return tir.const(value, "uint32") if isinstance(value, int) else tir.Cast("uint32", value)


def _i32(value) -> tir.PrimExpr:
    return tir.const(value, "int32") if isinstance(value, int) else value


def _restage(stmt: tir.Stmt, staged: dict, stage) -> tir.Stmt:
    """Accesses of each tile X in `staged` ({key: (X', rows)}) read stage `stage` of X'
    (rows [stage * rows, ...)); region calls move with their base element."""
    import tvm_ffi

    def on_load(ld):
        entry = staged.get(_key(ld.source))
        if entry is None:
            return ld
        new, rows = entry
        first, *rest = ld.indices
        return tir.BufferLoad(new, [stage * rows + first, *rest])

    return tvm_ffi.structural_map(stmt, ((_ir.TensorLoad, on_load),))


class _TMEPipeline:
    """The rewrite of one eligible loop (module docstring)."""

    def __init__(self, loop, stages, loads, consumers, descriptor_index, tx, warps, lag, first_id,
                 writes_shared: bool = False):
        self.loop, self.stages, self.loads, self.consumers = loop, stages, loads, consumers
        self.writes_shared = writes_shared
        self.descriptor_index, self.tx, self.warps, self.lag = descriptor_index, tx, warps, lag
        self.first_id = first_id
        self.staged = {}
        for load in loads:
            buf = load.dst.buffer
            new = tir.decl_buffer((stages * load.rows, load.cols), str(buf.ty.dtype), name=buf.name,
                                  scope=str(buf.ty.storage_scope))
            self.staged[_key(buf)] = (new, load.rows)

    @staticmethod
    def _id(base: int, stage):
        """Barrier `base + stage` (a constant when the stage is)."""
        if isinstance(stage, int):
            return tir.const(base + stage, "uint32")
        return tir.Cast("uint32", tir.const(base, "int32") + stage)

    def full(self, stage):
        return self._id(self.first_id, stage)

    def empty(self, stage):
        return self._id(self.first_id + self.stages, stage)

    def issue(self, it, stage, slabs: dict) -> tir.Stmt:
        """Thread 0's loads of iteration `it` (from 0) into `stage`, then its arrival."""
        var, lo = self.loop.loop_var, self.loop.min
        total = sum(load.bytes for load in self.loads)
        stmts = [_extern("tl_musa_barrier_expect", self.full(stage), tir.const(total, "uint32"))]
        for load in self.loads:
            mins = [substitute(m, {var: lo + it}) for m in load.src.mins]
            new, rows = self.staged[_key(load.dst.buffer)]
            placement = slabs.get(_key(new))
            rank = len(mins)
            box = [int(e) for e in load.src.extents[:-1]] + [load.width]
            for col in range(0, load.cols, load.width):
                row0 = _i32(stage) * rows
                index = placement.physical([row0, tir.const(col, "int32")]) if placement is not None \
                    else [row0, tir.const(col, "int32")]
                smem = tir.address_of(tir.BufferLoad(new, index))
                coords = [mins[-1] + col] + list(reversed(mins[:-1]))
                stmts.append(_extern(f"tl_musa_tme_load_{rank}d", tir.const(self.descriptor_index(load.desc), "int32"),
                                     self.full(stage), smem, *coords, *(tir.const(b, "int32") for b in reversed(box))))
        stmts.append(_extern("tl_musa_barrier_arrive", self.full(stage)))
        return seq(stmts)

    def _consumer(self, stmt, it):
        stmt = _restage(stmt, self.staged, tir.floormod(it, self.stages))
        if not self.lag:
            return stmt
        call = stmt.value  # the one TCE gemm: commit, then wait until one group is in flight
        return tir.Evaluate(make_call("gemm", *call.args, tir.const(1, "int32")), span=stmt.span)

    def build(self, slabs: dict) -> tir.Stmt:
        loop, stages, lag, tx = self.loop, self.stages, self.lag, self.tx
        var, lo, n = loop.loop_var, loop.min, loop.extent
        it = var - lo
        # full[s]: thread 0's warp arrives; empty[s]: every warp of the block
        init = [_extern("tl_musa_barrier_init", self.full(s), tir.const(1, "uint32")) for s in range(stages)]
        init += [_extern("tl_musa_barrier_init", self.empty(s), tir.const(self.warps, "uint32"))
                 for s in range(stages)]
        prologue = []
        for s in range(stages - lag):
            step = self.issue(tir.const(s, "int32"), s, slabs)
            cond = tir.LT(tir.const(s, "int32"), n)
            prologue.append(step if analyzer().can_prove(cond) else tir.IfThenElse(cond, step, None))
        j = it + (stages - lag)
        refill = self.issue(j, tir.floormod(j, stages), slabs)
        reuse = _extern("tl_musa_barrier_wait", self.empty(tir.floormod(j, stages)),
                        _u32(tir.floormod(tir.floordiv(j - stages, stages), 2)))
        refill = seq([tir.IfThenElse(tir.GE(j, stages), reuse, None), refill])
        release = _extern("tl_musa_barrier_arrive", self.empty(tir.floormod(it - lag, stages)))
        body = [
            _extern("tl_musa_barrier_wait", self.full(tir.floormod(it, stages)),
                    _u32(tir.floormod(tir.floordiv(it, stages), 2))),
            # consumers that write shared memory (a copy into a tile that is not loaded by TME)
            # overwrite what the previous iteration's consumers read: every thread is done with it
            *([tir.Evaluate(sync_threads())] if self.writes_shared else []),
            tir.AttrStmt(tir.const(0, "int32"), ATTR_SYNC_RESUME, tir.const(1, "int32"),
                         seq(self._consumer(s, it) for s in self.consumers)),
            release if not lag else tir.IfThenElse(tir.GE(it, lag), release, None),
            tir.IfThenElse(tir.And(tir.EQ(tx, 0), tir.LT(j, n)), refill, None),
        ]
        keep = {k: v for k, v in loop.annotations.items() if k not in _PIPELINE_KEYS}
        new_loop = tir.For(var, lo, n, tir.ForKind.SERIAL, seq(body), annotations=keep or None, span=loop.span)
        stmts = [tir.IfThenElse(tir.EQ(tx, 0), seq(init), None), tir.Evaluate(sync_threads())]
        if prologue:
            stmts.append(tir.IfThenElse(tir.EQ(tx, 0), seq(prologue), None))
        stmts.append(new_loop)
        if lag:
            stmts.append(_extern("tl_musa_tce_wait<0>"))
        return tir.AttrStmt(tir.const(0, "int32"), ATTR_SYNC_PLACED, tir.const(1, "int32"), seq(stmts))


def _writes(stmt) -> set[int]:
    """Buffers `stmt` may write (stores, and tile-op regions with the write bit); -1 for an
    opaque call that may write anything."""
    written: set[int] = set()

    def visit(node):
        if isinstance(node, tir.BufferStore):
            written.add(_key(node.buffer))
        elif is_tile_op(node):
            for region in TileOp.from_stmt(node).regions:
                if region.access & 2:
                    written.add(_key(region.buffer))

    walk(stmt, visit, (tir.BufferStore, tir.Evaluate))
    return written


def _bound_inside(body) -> set[int]:
    """Variables the loop body binds itself (they do not exist where loads are issued ahead)."""
    found: set[int] = set()

    def visit(node):
        found.add(_key(node.var if isinstance(node, tir.Bind) else node.loop_var))

    walk(body, visit, (tir.Bind, tir.For))
    return found


def _split(loop, params, slabs) -> tuple[list, list] | None:
    body = loop.body
    loads, consumers = [], []
    inner = _bound_inside(body)
    for stmt in (list(body.seq) if isinstance(body, tir.SeqStmt) else [body]):
        plan = plan_tme_load(TileOp.from_stmt(stmt), params, slabs) if is_tile_op(stmt, "copy") else None
        if plan is not None:
            used: list = []
            for m in plan.src.mins:
                walk(m, used.append, (tir.Var,))
            if any(_key(v) in inner for v in used):
                plan = None  # its start depends on a value the iteration computes
        (loads if plan is not None else consumers).append(plan if plan is not None else stmt)
    if not loads or not consumers:
        return None
    tiles = [_key(load.dst.buffer) for load in loads]
    if len(set(tiles)) != len(tiles):
        return None
    touched = set(tiles) | {_key(load.src.buffer) for load in loads}
    for stmt in consumers:
        if _writes(stmt) & touched:
            return None
        if any(isinstance(n, tir.For) and ANN_NUM_STAGES in n.annotations for n in _nodes(stmt)):
            return None
    return loads, consumers


def _nodes(stmt) -> list:
    found = []
    walk(stmt, found.append, (tir.For,))
    return found


def _references(node) -> dict[int, int]:
    count: dict[int, int] = {}

    def visit(n):
        buf = n.buffer if isinstance(n, tir.BufferStore) else n.source
        count[_key(buf)] = count.get(_key(buf), 0) + 1

    walk(node, visit, (tir.BufferStore, _ir.TensorLoad))
    return count


def _one_tce_gemm(consumers, threads, caps) -> bool:
    ops = [TileOp.from_stmt(s) for s in consumers if is_tile_op(s)]
    return len(consumers) == 1 and len(ops) == 1 and plan_tce(ops[0], threads, caps) is not None


def pipeline_tme_loads(func: tir.PrimFunc, ctx) -> tir.PrimFunc:
    """Pipeline every eligible `T.Pipelined` loop through TME and ASYNC barriers (module docstring)."""
    caps = ctx.caps
    if getattr(ctx.options, "disable_tma", False) or not caps.has_copy_engine("tme") \
            or not caps.has_barrier("async_barrier"):
        return func
    info = launch_info(func)
    tx, threads = info.vars.get("threadIdx.x"), info.threads
    if tx is None or set(info.extents) - {"threadIdx.x", "blockIdx.x", "blockIdx.y", "blockIdx.z"} \
            or not isinstance(threads, int) or threads % WARP:
        return func
    params = {_key(p): i for i, p in enumerate(func.params) if tir.is_buffer_var(p)}
    slabs = ctx.facts.setdefault(TCE_SLABS, {})
    outside = _references(func.body)
    shared = set()
    walk(func.body, lambda a: shared.add(_key(a.buffer)) if str(a.buffer.ty.storage_scope).startswith("shared")
         else None, (tir.AllocBuffer,))
    descriptors: list[TensorDescriptor] = []
    replaced: dict[int, object] = {}
    found = ctx.facts.setdefault("pipelines", [])

    def descriptor_index(d: TensorDescriptor) -> int:
        if d not in descriptors:
            descriptors.append(d)
        return descriptors.index(d)

    def on_for(loop: tir.For):
        if ANN_NUM_STAGES not in loop.annotations or int(loop.annotations[ANN_NUM_STAGES]) < 1:
            return loop
        if any(k in loop.annotations for k in ("tl_pipeline_order", "tl_pipeline_stage")):
            return loop
        split = _split(loop, params, slabs)
        if split is None:
            return loop
        loads, consumers = split
        inside = _references(loop.body)
        if any(outside.get(_key(load.dst.buffer)) != inside.get(_key(load.dst.buffer)) for load in loads):
            return loop  # a loaded tile is used outside the loop
        stages = int(loop.annotations[ANN_NUM_STAGES])
        lag = int(stages >= 2 and _one_tce_gemm(consumers, threads, caps))
        line = source_of(loads[0].op.stmt)
        first = take_barrier_ids(ctx, 2 * stages, f"the {stages}-stage T.Pipelined loop over "
                                 f"{loop.loop_var.name}" + (f" (line {line[1]})" if line else ""), line)
        writes_shared = any(_writes(c) & shared for c in consumers)
        pipe = _TMEPipeline(loop, stages, loads, consumers, descriptor_index, tx, threads // WARP, lag, first,
                            writes_shared)
        for load in loads:
            new, rows = pipe.staged[_key(load.dst.buffer)]
            old = slabs.pop(_key(load.dst.buffer), None)
            if old is not None:
                slabs[_key(new)] = Slabs(stages * rows, old.cols, old.width)
            replaced[_key(load.dst.buffer)] = new
        found.append((loop.loop_var.name, stages))
        return pipe.build(slabs)

    body = map_stmts(func.body, (tir.For,), on_for)
    if not replaced:
        return func

    def on_alloc(a: tir.AllocBuffer):
        new = replaced.get(_key(a.buffer))
        return a if new is None else tir.AllocBuffer(new)

    body = map_stmts(body, (tir.AllocBuffer,), on_alloc)
    return func.with_body(body).with_attr(TENSOR_DESCRIPTORS_ATTR, json.dumps([d.to_dict() for d in descriptors]))

