"""`T.Pipelined(n, num_stages=S)` as a multi-stage software pipeline over cp.async groups,
and the choice of swizzled shared tiles. Both are passes over the tile IR.

`pipeline_async_copies` (before the core's `plan_pipeline`) turns a pipelined loop whose body
is *producers* (`T.copy` global -> shared that cp.async can do) and *consumers* (everything
else, reading those tiles and writing no shared memory) into

    for s in 0 .. S-2:  issue the producers of iteration s into stage s;  commit
    for it in 0 .. n-1:
        wait until iteration it's group has landed (cp.async.wait_group S-2); __syncthreads
        issue the producers of iteration it+S-1 into stage (it+S-1) % S;  commit
        the consumers, reading stage it % S

Each produced tile X becomes X[S, ...]. One barrier per iteration suffices: it publishes
stage it % S to every thread, and every thread has finished iteration it-1, so stage
(it-1) % S = (it+S-1) % S may be overwritten. Loops that do not fit keep the portable
meaning (the core's `plan_pipeline` makes them plain loops). The result sits inside an
`ATTR_SYNC_PLACED` region, so the core adds no barrier inside it.

`plan_swizzles` (after `infer_layout`) gives a shared tile an XOR swizzle (`layout.Swizzle`)
when every access to it is a cp.async copy into it (`T.copy` or `T.tma_copy`) or an mma.sync
gemm operand read: these lowerings apply the swizzle, so no other access could see the
permuted order.

A `T.Pipelined` loop whose body has `T.ws` scopes or barrier ops is synchronized by the user:
it is not pipelined here (the core runs it as a plain loop).
"""
from __future__ import annotations

from tvm import ir as _ir
from tvm import tirx as tir

from tilelang_core.codegen import sync_threads
from tilelang_core.ir import Region, TileOp, collect_tile_ops, is_region_call, is_tile_op, make_call
from tilelang_core.ir import ANN_NUM_STAGES, ATTR_SYNC_PLACED, ATTR_SYNC_RESUME, ATTR_THREAD_GROUPS
from tilelang_core.transform import analyzer, map_stmts, seq, substitute, walk
from tilelang_core.transform import VAR_RANGES, launch_info
from tilelang_core.transform import ranges_of

from .layout import accumulator_layout, swizzle_for
from .lower_layout import SHARED_LAYOUTS
from .lower_copy import CopyPlan, async_copy_nest, commit, launch_analyzer, plan_copy, vector_bytes, wait
from .lower_gemm import SHARED_SCOPES, plan_gemm
from .lower_barrier import plan_tma_copy
from .lower_wgmma import WGMMA_OPERANDS, proxy_fence

__all__ = ["SWIZZLES", "sync_placed", "plan_swizzles", "pipeline_async_copies", "invariant_mins", "reads_scalars_only"]

SWIZZLES = "cuda.swizzles"  # ctx.facts key: shared buffer handle -> layout.Swizzle
ANALYZER = "cuda.analyzer"  # ctx.facts key: an Analyzer that knows the launch ranges
_PIPELINE_KEYS = ("num_stages", "tl_pipeline_order", "tl_pipeline_stage", "tl_pipeline_sync",
                  "tl_pipeline_group")


def sync_placed(stmt: tir.Stmt) -> tir.Stmt:
    """`stmt` marked as placing its own barriers (the core's barrier pass leaves it alone)."""
    return tir.AttrStmt(tir.const(0, "int32"), ATTR_SYNC_PLACED, tir.const(1, "int32"), stmt)


def _key(buf) -> int:
    return buf.__chandle__()


# ---------------------------------------------------------------------------- swizzles


def _references(node) -> dict[int, int]:
    """How many loads and stores name each buffer under `node` (region bases included)."""
    count: dict[int, int] = {}

    def visit(n):
        buf = n.buffer if isinstance(n, tir.BufferStore) else n.source
        count[_key(buf)] = count.get(_key(buf), 0) + 1

    walk(node, visit, (tir.BufferStore, _ir.TensorLoad))
    return count


def plan_swizzles(func: tir.PrimFunc, ctx) -> tir.PrimFunc:
    """Record in `ctx.facts[SWIZZLES]` the shared tiles whose every access is ours (and in
    `ctx.facts[ANALYZER]` an analyzer that knows the block and thread index ranges)."""
    swizzles = ctx.facts.setdefault(SWIZZLES, {})
    ctx.facts[ANALYZER] = launch_analyzer(func, ctx.facts.get(VAR_RANGES))
    threads = launch_info(func).threads
    # a gemm inside a T.ws scope runs on the threads of its range
    ranges = ranges_of(func.body, (tir.Evaluate,), ctx.caps, ctx.target, threads)
    layouts = ctx.facts.get("fragment_layouts")
    owned: dict[int, int] = {}  # buffer -> accesses by our lowerings
    candidates: dict[int, object] = {}

    def own(region: Region) -> None:
        owned[_key(region.buffer)] = owned.get(_key(region.buffer), 0) + 1
        candidates[_key(region.buffer)] = region.buffer

    for op in collect_tile_ops(func):
        if op.name == "copy" and plan_copy(op) is not None:
            own(op.regions[1])
        elif op.name == "tma_copy" and plan_tma_copy(op) is not None:
            own(op.regions[1])
        elif op.name == "gemm":
            here = ranges.get(op.stmt.__chandle__())
            plan = plan_gemm(op, threads if here is None else here.extent)
            c = op.regions[2].buffer
            if plan is not None and layouts is not None and layouts.get(c) == accumulator_layout(plan.tiling):
                for operand in op.regions[:2]:
                    if operand.scope in ("shared", "shared.dyn"):
                        own(operand)
    refs = _references(func.body)
    placed = ctx.facts.get(SHARED_LAYOUTS, {})
    for key, buf in candidates.items():
        shape = buf.ty.shape
        if key in placed:
            continue  # the user's placement (T.Layout) is applied to every access instead
        if refs.get(key) != owned[key] or len(shape) != 2 or not all(isinstance(d, tir.IntImm) for d in shape):
            continue
        import tvm

        swizzle = swizzle_for(int(shape[-1]), tvm.runtime.DataType(str(buf.ty.dtype)).bits)
        if swizzle is not None:
            swizzles[key] = swizzle
    return func


# ---------------------------------------------------------------------------- pipelining


def _statements(body: tir.Stmt) -> list[tir.Stmt]:
    return list(body.seq) if isinstance(body, tir.SeqStmt) else [body]


def _writes(stmt: tir.Stmt) -> set[int]:
    """Buffers `stmt` may write: stores and the regions of tile ops with the write bit."""
    written: set[int] = set()

    def visit(node):
        if isinstance(node, tir.BufferStore):
            written.add(_key(node.buffer))
        elif is_tile_op(node):
            for region in TileOp.from_stmt(node).regions:
                if region.access & 2:
                    written.add(_key(region.buffer))
        elif isinstance(node, _ir.Call) and node.op.name in ("tirx.call_extern", "tirx.address_of"):
            written.add(-1)  # an opaque call: assume it writes anything

    walk(stmt, visit, (tir.BufferStore, tir.Evaluate, _ir.Call))
    return written


def _shared_written(stmt: tir.Stmt, scopes: dict[int, str]) -> bool:
    return any(k == -1 or scopes.get(k) in SHARED_SCOPES for k in _writes(stmt))


def _loads_buffers(expr) -> bool:
    found = False

    def visit(_node):
        nonlocal found
        found = True

    walk(expr, visit, (_ir.TensorLoad,))
    return found


def _is_scalar(buf) -> bool:
    """A one-element local buffer: what TVMScript makes of a name the kernel assigns."""
    shape = list(buf.ty.shape)
    return str(buf.ty.storage_scope) in ("local", "local.var") and len(shape) == 1 \
        and isinstance(shape[0], tir.IntImm) and int(shape[0]) == 1


def reads_scalars_only(expr) -> bool:
    """Whether `expr` reads no memory but one-element local scalars."""
    loads = []
    walk(expr, loads.append, (_ir.TensorLoad,))
    return all(_is_scalar(ld.source) for ld in loads)


def invariant_mins(region: Region, loop: tir.For) -> bool:
    """Whether the start of `region` (a load's source) may be computed ahead, in an earlier
    iteration of `loop` or before it: it reads no memory but scalars the loop never writes
    (`first = Tiles[by, 1]` before the loop of a grouped GEMM)."""
    loads = []
    for m in region.mins:
        walk(m, loads.append, (_ir.TensorLoad,))
    if not all(_is_scalar(ld.source) for ld in loads):
        return False
    return not ({_key(ld.source) for ld in loads} & _writes(loop.body))


class _Loop:
    """A pipelined loop split into producers (cp.async copies) and consumers."""

    def __init__(self, loop: tir.For, stages: int) -> None:
        self.loop = loop
        self.stages = stages
        self.producers: list[tuple[TileOp, CopyPlan]] = []
        self.consumers: list[tir.Stmt] = []


def _split(loop: tir.For, stages: int, scopes: dict[int, str], placed: dict) -> _Loop | None:
    """Producers and consumers of `loop`, or None when it does not fit; a copy into a tile
    the user placed (`placed`: the `SHARED_LAYOUTS` fact) moves the runs its placement keeps
    together, and is no producer where that is under 4 bytes."""
    split = _Loop(loop, stages)
    for stmt in _statements(loop.body):
        op = TileOp.from_stmt(stmt) if is_tile_op(stmt, "copy") else None
        plan = plan_copy(op, vector_bytes(placed, op.regions[1].buffer)) if op is not None else None
        if plan is not None and _whole(plan.dst) and invariant_mins(plan.src, loop):
            split.producers.append((op, plan))
        else:
            split.consumers.append(stmt)
    if not split.producers or not split.consumers:
        return None
    staged = [_key(p.dst.buffer) for _, p in split.producers]
    sources = {_key(p.src.buffer) for _, p in split.producers}
    if len(set(staged)) != len(staged):
        return None
    return split if consumers_fit(split.consumers, scopes, sources) else None


def consumers_fit(consumers: list, scopes: dict[int, str], sources: set[int]) -> bool:
    """Whether a pipelined loop's consumers leave its staged tiles alone: they write no shared
    memory (nor anything opaque), none of the tensors the loads read, and hold no pipelined
    loop of their own."""
    for stmt in consumers:
        written = _writes(stmt)
        if _shared_written(stmt, scopes) or written & sources or -1 in written:
            return False
        if any(isinstance(n, tir.For) and ANN_NUM_STAGES in n.annotations for n in _nodes(stmt, tir.For)):
            return False
    return True


def _nodes(stmt, kind) -> list:
    found = []
    walk(stmt, found.append, (kind,))
    return found


def _whole(region: Region) -> bool:
    shape = region.buffer.ty.shape
    return all(isinstance(lo, tir.IntImm) and int(lo) == 0 for lo in region.mins) and all(
        analyzer().can_prove_equal(e, d) for e, d in zip(region.extents, shape))


def _staged_region(region: Region, staged, stage) -> Region:
    return Region(staged, (stage, *region.mins), (tir.const(1, "int32"), *region.extents), region.access)


def _restage(stmt: tir.Stmt, staged: dict[int, object], stage) -> tir.Stmt:
    """Accesses of each tile X in `staged` become accesses of its stage `stage`."""
    import tvm_ffi

    def on_load(ld):
        new = staged.get(_key(ld.source))
        return ld if new is None else tir.BufferLoad(new, [stage, *ld.indices])

    def on_call(call):
        if not is_region_call(call):
            return call
        load, access, *extents = call.args
        if _key(load.source) in {_key(b) for b in staged.values()} and len(extents) == len(load.indices) - 1:
            return make_call("region", load, access, 1, *extents)
        return call

    return tvm_ffi.structural_map(stmt, ((_ir.TensorLoad, on_load), (_ir.Call, on_call)))


def _single_assignments(func: tir.PrimFunc) -> dict[int, object]:
    """Scalars (1-element local buffers) stored exactly once, with a value that reads no
    buffer: `loop_range = T.ceildiv(seq_kv, block_N)` in a kernel. Their value is known
    wherever they are read after the store; the analyzer may use it to prove masks away."""
    stores: dict[int, list] = {}

    def visit(node):
        if isinstance(node, tir.BufferStore) and node.buffer.scope() in ("local", "local.var") \
                and [int(d) if isinstance(d, tir.IntImm) else -1 for d in node.buffer.shape] == [1]:
            stores.setdefault(_key(node.buffer), []).append(node.value)

    walk(func.body, visit, (tir.BufferStore,))
    known = {}
    for key, values in stores.items():
        loads = []
        if len(values) == 1:
            walk(values[0], loads.append, (_ir.TensorLoad,))
            if not loads:
                known[key] = values[0]
    return known


def _pipeline(split: _Loop, swizzles: dict, ana, known: dict | None = None,
              placed: dict | None = None, wgmma: set | None = None) -> tuple[tir.Stmt, dict[int, object]]:
    from tvm import ir

    loop, stages = split.loop, split.stages
    known = known or {}
    placed = {} if placed is None else placed

    def for_proofs(expr):
        """`expr` with known scalars replaced by their values (for the analyzer only)."""
        def on_load(ld):
            return known.get(_key(ld.source), ld)

        import tvm_ffi

        return tvm_ffi.structural_map(expr, ((_ir.TensorLoad, on_load),))

    staged = {}
    for _, plan in split.producers:
        buf = plan.dst.buffer
        staged[_key(buf)] = tir.decl_buffer((stages, *buf.ty.shape), str(buf.ty.dtype), name=buf.name,
                                            scope=str(buf.ty.storage_scope))
        if _key(buf) in swizzles:
            swizzles[_key(staged[_key(buf)])] = swizzles[_key(buf)]
        if _key(buf) in placed:  # the user's placement of each stage (the stage dim leads)
            placed[_key(staged[_key(buf)])] = placed[_key(buf)]
        if wgmma is not None and _key(buf) in wgmma:
            wgmma.add(_key(staged[_key(buf)]))
    var, lo, n = loop.loop_var, loop.min, loop.extent
    ana.bind(var, ir.Range.from_min_extent(for_proofs(lo), for_proofs(n)))

    def issue(it, stage) -> tir.Stmt:
        """The producers of iteration `it` (counted from 0) into `stage`."""
        nests = []
        for op, _ in split.producers:
            moved = TileOp.from_stmt(substitute(op.stmt, {var: lo + it}))
            plan = plan_copy(moved, vector_bytes(placed, moved.regions[1].buffer))
            if plan is None:  # alignment no longer provable after the shift
                raise _NotPipelined()
            dst = staged[_key(plan.dst.buffer)]
            plan = CopyPlan(plan.src, _staged_region(plan.dst, dst, stage), plan.shape, plan.lanes)
            nests.append(async_copy_nest(plan, swizzles.get(_key(dst)), op.stmt.span, ana))
        return seq(nests)

    def guarded(cond, it, stage) -> tir.Stmt:
        with ana.constraint_scope(for_proofs(cond)):
            stmt = issue(it, stage)
        return stmt if ana.can_prove(for_proofs(cond)) else tir.IfThenElse(cond, stmt, None)

    prologue = []
    for s in range(stages - 1):
        prologue += [guarded(tir.const(s, "int32") < n, tir.const(s, "int32"), tir.const(s, "int32")), commit()]
    it = var - lo if not (isinstance(lo, tir.IntImm) and int(lo) == 0) else var
    ahead = it + (stages - 1)
    # wgmma reads through the async proxy: each thread fences its landed cp.async writes
    fence = [proxy_fence()] if wgmma and any(_key(p.dst.buffer) in wgmma for _, p in split.producers) else []
    body = [
        wait(stages - 2),
        *fence,
        tir.Evaluate(sync_threads()),
        guarded(ahead < n, ahead, tir.floormod(ahead, stages)),
        commit(),
        # the compute may still exchange data through shared memory (fragments the core
        # placed there): the core's barrier rules apply inside it
        tir.AttrStmt(tir.const(0, "int32"), ATTR_SYNC_RESUME, tir.const(1, "int32"),
                     seq(_restage(s, staged, tir.floormod(it, stages)) for s in split.consumers)),
    ]
    keep = {k: v for k, v in loop.annotations.items() if k not in _PIPELINE_KEYS}
    new_loop = tir.For(var, lo, n, tir.ForKind.SERIAL, seq(body), annotations=keep or None, span=loop.span)
    return sync_placed(seq([*prologue, new_loop])), staged


def _user_synchronized(body) -> bool:
    """Whether `body` has `T.ws` scopes or barrier ops (the user orders its threads)."""
    found = []

    def visit(node):
        if isinstance(node, tir.AttrStmt) and node.attr_key == ATTR_THREAD_GROUPS:
            found.append(node)
        elif is_tile_op(node) and TileOp.from_stmt(node).name in ("barrier_wait", "barrier_arrive", "tma_copy"):
            found.append(node)

    walk(body, visit, (tir.AttrStmt, tir.Evaluate))
    return bool(found)


class _NotPipelined(Exception):
    pass


def pipeline_async_copies(func: tir.PrimFunc, ctx) -> tir.PrimFunc:
    """Pipeline every eligible `T.Pipelined` loop (see the module docstring)."""
    swizzles = ctx.facts.setdefault(SWIZZLES, {})
    placed = ctx.facts.setdefault(SHARED_LAYOUTS, {})
    scopes: dict[int, str] = {}
    walk(func.body, lambda a: scopes.__setitem__(_key(a.buffer), str(a.buffer.ty.storage_scope)), (tir.AllocBuffer,))
    outside = _references(func.body)
    known = _single_assignments(func)
    replaced: dict[int, object] = {}
    found = ctx.facts.setdefault("pipelines", [])

    def on_for(loop: tir.For):
        if ANN_NUM_STAGES not in loop.annotations or int(loop.annotations[ANN_NUM_STAGES]) < 2:
            return loop
        if any(k in loop.annotations for k in ("tl_pipeline_order", "tl_pipeline_stage")):
            return loop  # a hand-written schedule: not ours to reorder
        if _user_synchronized(loop.body):
            return loop
        split = _split(loop, int(loop.annotations[ANN_NUM_STAGES]), scopes, placed)
        if split is None:
            return loop
        inside = _references(loop.body)
        if any(outside.get(_key(p.dst.buffer)) != inside.get(_key(p.dst.buffer)) for _, p in split.producers):
            return loop  # a staged tile is used outside the loop
        try:
            stmt, staged = _pipeline(split, swizzles, launch_analyzer(func, ctx.facts.get(VAR_RANGES)), known,
                                     placed, ctx.facts.get(WGMMA_OPERANDS))
        except _NotPipelined:
            return loop
        replaced.update(staged)
        found.append((loop.loop_var.name, split.stages))
        return stmt

    body = map_stmts(func.body, (tir.For,), on_for)
    if replaced:
        def on_alloc(a: tir.AllocBuffer):
            new = replaced.get(_key(a.buffer))
            return a if new is None else tir.AllocBuffer(new)

        body = map_stmts(body, (tir.AllocBuffer,), on_alloc)
    return func.with_body(body)
