"""Stores through TMA (`cp.async.bulk.tensor`, shared -> global) on Hopper.

`lower_tma_stores` runs after `lower_tma.pipeline_tma_loads` and takes each `T.copy(shared,
global)` that

- moves a whole 2-D tile of R x C elements (R, C <= 256, a row a multiple of 16 bytes) of
  dynamic shared memory (1024-byte aligned), in its plain row-major placement or in the
  swizzled one this pass gave it (below),
- into a box of a contiguous tensor parameter of the same dtype (the region's last two
  extents are R and C, the others 1; `lower_tma.tma_dims`: every stride a static multiple of
  16 bytes),
- and runs on every thread of the block (it is not inside an `if`, a `T.Parallel` or a
  thread-bound loop), without `disable_tma=True`.

Such a copy becomes, in a region that places its own barriers:

    every thread: fence.proxy.async          # its writes to the tile, visible to TMA
    barrier                                  # every write landed
    thread 0: tma_store(map, box, coords) per box; commit; wait until the tile was read
    barrier                                  # nobody writes the tile before that

Elements of a box outside the tensor are not written (TMA clips them), so a ragged edge tile
stays correct. The tensor maps join the loads' (`TENSOR_MAPS_ATTR`); in a warp-specialized
kernel the barriers become the consumers' named barrier (`specialize_warps`).

First, `stage_fragment_stores` rewrites an epilogue `T.copy(C, global)` at the top level of
the kernel, C the accumulator of a wgmma `T.gemm`, into `T.copy(C, C_stage); T.copy(C_stage,
global)`, as TileLang's examples write it by hand. C_stage takes wgmma's swizzled slabs
(no bank conflicts from the accumulator's layout; one TMA box per slab). It applies when the
store can be a TMA store, no cp.async pipeline is left to lower (it would add stages the
count below cannot see), and the kernel's shared memory (`shared_bytes`: C_stage takes the
bytes of buffers dead by then, such as the main loop's stages) stays within
`shared_memory_optin`. Why: a wgmma accumulator stores 4 bytes per thread at a time, rows
apart; TMA stores whole rows. `bench/gemm.py` at 4096^3 on the H100: 0.86-0.87x -> 0.91-0.92x
cuBLAS (2026-11-26). In a persistent block's tile loop the stage tile cannot reuse the main
loop's bytes (the loaders fill the next tile's stages meanwhile), so it may hold a chunk of the
columns, stored in turn (the fewest chunks that fit). `tl.disable_tma_lower` turns both off,
with the loads.
"""
from __future__ import annotations

import json

import tvm
from tvm import tirx as tir

from tilelang_core.codegen import sync_threads
from tilelang_core.ir import ACCESS_READ, ACCESS_WRITE, ANN_NUM_STAGES, SCOPE_FRAGMENT, Region, TileOp, \
    is_tile_op, make_call
from tilelang_core.transform import launch_info, map_stmts, map_top_level, seq, shared_bytes, walk

from .lower_layout import SHARED_LAYOUTS
from .lower_pipeline import SWIZZLES, _key, _loads_buffers, _whole, sync_placed
from .lower_tma import MAX_BOX, TENSOR_MAPS_ATTR, TensorMap, _extern, tensor_maps_of, tma_dims

__all__ = ["lower_tma_stores", "place_store_tiles", "plan_tma_store", "stage_fragment_stores"]

def plan_tma_store(op: TileOp, params: dict[int, int], laid_out: set, swizzled: dict | None = None) \
        -> tuple[TensorMap, int] | None:
    """(tensor map, columns per box) of a `T.copy(shared, global)` TMA can do (module
    docstring), or None. `laid_out`: the shared tiles that have a planned layout or swizzle;
    `swizzled`: tiles this pass placed in wgmma's swizzled slabs ({key: WgmmaTile}), stored
    one slab per box."""
    swizzled = swizzled or {}
    if op.name != "copy" or op.hints.get("disable_tma"):
        return None
    src, dst = op.regions[:2]
    # dynamic shared buffers sit 1024-byte aligned (TMA needs 128)
    if src.scope != "shared.dyn" or dst.scope != "global" or src.dtype != dst.dtype:
        return None
    placement = swizzled.get(_key(src.buffer))
    if placement is None and _key(src.buffer) in laid_out or not _whole(src):
        return None
    tile = [int(d) for d in src.buffer.ty.shape if isinstance(d, tir.IntImm)]
    if len(tile) != 2 or len(src.buffer.ty.shape) != 2:
        return None
    rows, cols = tile
    element = tvm.runtime.DataType(src.dtype).bits // 8
    if element not in (1, 2, 4, 8) or rows > MAX_BOX or cols > MAX_BOX or cols * element % 16:
        return None
    param = params.get(_key(dst.buffer))
    dims = tma_dims(dst.buffer, element)
    if param is None or dims is None:
        return None
    extents = [int(e) if isinstance(e, tir.IntImm) else None for e in dst.extents]
    if extents[-2:] != [rows, cols] or any(e != 1 for e in extents[:-2]):
        return None
    if any(_loads_buffers(m) for m in dst.mins):
        return None
    slab, width = (placement.slab, placement.width) if placement is not None else (cols, 0)
    return TensorMap(param, src.dtype, dims, (1,) * (len(dims) - 2) + (rows, slab), width), slab


def _store(op: TileOp, index: int, slab: int, tx) -> tir.Stmt:
    """The tile of `op` stored box by box (`slab` columns each) with tensor map `index`."""
    src, dst = op.regions[:2]
    zero = tir.const(0, "int32")
    stores = []
    for col in range(0, int(src.buffer.ty.shape[1]), slab):
        coords = [dst.mins[-1] + col] + list(reversed(dst.mins[:-1]))
        smem = tir.address_of(tir.BufferLoad(src.buffer, [zero, tir.const(col, "int32")]))
        stores.append(_extern("tl::tma_store", tir.const(index, "int32"), smem, *coords))
    issue = seq([*stores, _extern("tl::tma_store_commit"), _extern("tl::tma_store_wait_read")])
    return sync_placed(seq([_extern("tl::fence_proxy_async"), tir.Evaluate(sync_threads()),
                            tir.IfThenElse(tx == 0, issue, None), tir.Evaluate(sync_threads())]))


def _pipelines_left(func) -> bool:
    found = []
    walk(func.body, lambda f: found.append(f) if int(f.annotations.get(ANN_NUM_STAGES, 0)) >= 2 else None, (tir.For,))
    return bool(found)


def _wgmma_accumulators(func, ctx) -> set:
    """The C fragments of the gemms that run on wgmma (A from shared memory or registers, the
    swapped tf32 form too: its fragment is C transposed, which the staging copy follows)."""
    from tilelang_core.ir import collect_tile_ops

    from .lower_wgmma import plan_wgmma, takes_wgmma

    layouts = ctx.facts.get("fragment_layouts") or {}
    threads = launch_info(func).threads
    found = set()
    for op in collect_tile_ops(func):
        plan = plan_wgmma(op, threads) if op.name == "gemm" and isinstance(threads, int) else None
        if plan is not None and takes_wgmma(plan, op, layouts):
            found.add(_key(op.regions[2].buffer))
    return found


def _staged(stmt, op: TileOp, chunks: int, params: dict[int, int], layout=None):
    """(stage buffer, its placement or None, [statements]) storing the fragment copy `op`
    through a shared stage tile in `chunks` column chunks (fill, then store, per chunk), or
    None where the store of a chunk cannot be a TMA store or, with more than one chunk, the
    fragment's `layout` does not hold a chunk's columns in the same registers of every
    thread (`Fragment.window`: the chunk's fill would not stay in registers)."""
    from tilelang_core.layout import FragmentError

    from .layout_wgmma import wgmma_tile

    src, dst = op.regions[:2]
    rows, cols = (int(d) for d in src.buffer.ty.shape)
    width = cols // chunks
    if chunks > 1:
        if layout is None:
            return None
        try:
            for chunk in range(chunks):
                layout.window((0, chunk * width), (rows, width))
        except FragmentError:
            return None
    stage = tir.decl_buffer((rows, width), dst.dtype, name=f"{src.buffer.name}_stage", scope="shared.dyn")
    tile = wgmma_tile(rows, width, tvm.runtime.DataType(dst.dtype).bits // 8)
    placement = {_key(stage): tile} if tile is not None and rows <= MAX_BOX else {}
    stmts = []
    for chunk in range(chunks):
        col = tir.const(chunk * width, "int32")
        part = Region(src.buffer, (src.mins[0], src.mins[1] + col), (src.extents[0], width), ACCESS_READ) \
            if chunks > 1 else src
        out = Region(dst.buffer, (*dst.mins[:-1], dst.mins[-1] + col), (*dst.extents[:-1], width), ACCESS_WRITE) \
            if chunks > 1 else dst
        store = tir.Evaluate(make_call("copy", Region.full(stage, ACCESS_READ).to_call(), out.to_call()),
                             span=stmt.span)
        if plan_tma_store(TileOp.from_stmt(store), params, set(), placement) is None:
            return None
        stmts += [tir.Evaluate(make_call("copy", part.to_call(), Region.full(stage, ACCESS_WRITE).to_call()),
                               span=stmt.span), store]
    return stage, tile if placement else None, stmts


def stage_fragment_stores(func: tir.PrimFunc, ctx, params: dict[int, int], swizzled: dict) -> tir.PrimFunc:
    """Each top-level `T.copy(fragment, global)` that can end in a TMA store, staged through
    a shared tile (module docstring); the others as they were. A stage tile whose rows are
    32, 64 or a multiple of 128 bytes gets wgmma's swizzled placement (the threads' writes
    from the accumulator then meet no bank conflicts; TMA unswizzles), recorded in
    `SHARED_LAYOUTS` and in `swizzled`.

    In a persistent block's tile loop (`lower_persistent`) the copy is one of the loop's
    statements, and the stage tile cannot take the main loop's bytes (the loading threads
    fill the next tile's stages meanwhile): there the tile may hold a part of the columns,
    stored in turn (2, 4, ... chunks, the fewest that fit)."""
    from .lower_layout import CHUNK_BYTES, SharedLayout
    from .lower_persistent import is_tile_loop
    from .lower_wgmma import _index_map

    if _pipelines_left(func):
        return func
    limit = ctx.caps.shared_memory_optin
    accumulators = _wgmma_accumulators(func, ctx)
    layouts = ctx.facts.get("fragment_layouts")
    top: list = []
    map_top_level(func.body, lambda items: top.extend(items) or items)

    def fits(items) -> bool:
        return shared_bytes(func.with_body(map_top_level(func.body, lambda _: items))) <= limit

    def candidate(stmt) -> TileOp | None:
        if not is_tile_op(stmt, "copy"):
            return None
        op = TileOp.from_stmt(stmt)
        src, dst = op.regions[:2]
        if src.scope != SCOPE_FRAGMENT or _key(src.buffer) not in accumulators or dst.scope != "global" \
                or op.hints.get("disable_tma") or not _whole(src) or len(src.buffer.ty.shape) != 2:
            return None
        return op

    def accept(op, stage, tile) -> None:
        if tile is not None:
            line = op.source
            ctx.facts.setdefault(SHARED_LAYOUTS, {})[_key(stage)] = SharedLayout(
                _index_map(tile), (tile.rows, tile.cols), (tile.rows, tile.cols), CHUNK_BYTES,
                f"TMA store at line {line[1]}" if line else "TMA store")
            swizzled[_key(stage)] = tile

    for index in reversed(range(len(top))):
        stmt = top[index]
        op = candidate(stmt)
        if op is not None:
            staged = _staged(stmt, op, 1, params)
            if staged is None:
                continue
            stage, tile, stmts = staged
            trial = top[:index] + [tir.AllocBuffer(stage), *stmts] + top[index + 1:]
            if fits(trial):
                top = trial
                accept(op, stage, tile)
        elif is_tile_loop(stmt):
            inner = list(stmt.body.seq) if isinstance(stmt.body, tir.SeqStmt) else [stmt.body]
            for j in reversed(range(len(inner))):
                op = candidate(inner[j])
                cols = int(op.regions[0].buffer.ty.shape[1]) if op is not None else 0
                chunks = 1
                while op is not None and cols % chunks == 0 and cols // chunks >= 8:
                    staged = _staged(inner[j], op, chunks, params,
                                     layouts.get(op.regions[0].buffer) if layouts is not None else None)
                    if staged is not None:
                        stage, tile, stmts = staged
                        body = inner[:j] + stmts + inner[j + 1:]
                        loop = tir.For(stmt.loop_var, stmt.min, stmt.extent, stmt.kind, seq(body),
                                       annotations=stmt.annotations, span=stmt.span)
                        # the stage tile declared just before the loop: the top-level statements
                        # still to visit (those before it) keep their positions
                        trial = top[:index] + [tir.AllocBuffer(stage), loop] + top[index + 1:]
                        if fits(trial):
                            top, inner, stmt = trial, body, loop
                            index += 1  # the loop's position now
                            accept(op, stage, tile)
                            break
                    chunks *= 2
    return func.with_body(map_top_level(func.body, lambda _: top))


def place_store_tiles(func: tir.PrimFunc, ctx, params: dict[int, int], swizzled: dict) -> None:
    """Give wgmma's swizzled placement to each user's shared tile that only `T.copy` fragments
    into and only `T.copy` stores to global memory by TMA (FlashAttention's
    `T.copy(acc_o, O_shared); T.copy(O_shared, Output[...])`): in its plain row-major placement
    the threads' 4-byte writes from an accumulator fall 8 rows apart on the same banks (8-way
    conflicts; the epilogue took 1.6 us of a 54 us block on the H100), swizzled they meet none,
    and TMA unswizzles. Recorded in `SHARED_LAYOUTS` and `swizzled` (module docstring)."""
    from tilelang_core.ir import collect_tile_ops

    from .layout_wgmma import wgmma_tile
    from .lower_layout import CHUNK_BYTES, SharedLayout
    from .lower_pipeline import _references
    from .lower_wgmma import _index_map

    laid_out = set(ctx.facts.get(SHARED_LAYOUTS, {})) | set(ctx.facts.get(SWIZZLES, {})) | set(swizzled)
    refs = _references(func.body)
    uses: dict[int, list] = {}
    for op in collect_tile_ops(func):
        for region in op.regions:
            uses.setdefault(_key(region.buffer), []).append((op, region))
    for key, found in uses.items():
        buf = found[0][1].buffer
        if key in laid_out or found[0][1].scope != "shared.dyn" or len(buf.ty.shape) != 2 \
                or refs.get(key) != len(found):
            continue
        writes = [op for op, region in found if op.name == "copy" and region is op.regions[1]
                  and op.regions[0].scope == SCOPE_FRAGMENT]
        reads = [op for op, region in found if op.name == "copy" and region is op.regions[0]
                 and op.regions[1].scope == "global"]
        if not writes or not reads or len(writes) + len(reads) != len(found):
            continue
        rows, cols = (int(d) for d in buf.ty.shape)
        tile = wgmma_tile(rows, cols, tvm.runtime.DataType(buf.ty.dtype).bits // 8)
        if tile is None or any(plan_tma_store(op, params, set(), {key: tile}) is None for op in reads):
            continue
        line = reads[0].source
        ctx.facts.setdefault(SHARED_LAYOUTS, {})[key] = SharedLayout(
            _index_map(tile), (tile.rows, tile.cols), (tile.rows, tile.cols), CHUNK_BYTES,
            f"TMA store at line {line[1]}" if line else "TMA store")
        swizzled[key] = tile


def lower_tma_stores(func: tir.PrimFunc, ctx) -> tir.PrimFunc:
    """Every eligible `T.copy(shared, global)` of `func` as one TMA store, after staging
    epilogue copies from fragments (module docstring)."""
    if getattr(ctx.options, "disable_tma", False) or "tma" not in ctx.caps.copy_engines:
        return func
    tx = launch_info(func).vars.get("threadIdx.x")
    if tx is None:
        return func
    params = {_key(p): i for i, p in enumerate(func.params) if tir.is_buffer_var(p)}
    swizzled: dict = {}
    func = stage_fragment_stores(func, ctx, params, swizzled)
    place_store_tiles(func, ctx, params, swizzled)
    laid_out = set(ctx.facts.get(SHARED_LAYOUTS, {})) | set(ctx.facts.get(SWIZZLES, {}))
    maps = tensor_maps_of(func)
    taken = []
    # copies under a condition or in a loop the threads split may not run on every thread
    guarded: set = set()

    def mark(node):
        if isinstance(node, tir.IfThenElse) or node.kind not in (tir.ForKind.SERIAL, tir.ForKind.UNROLLED) \
                or node.thread_binding is not None:
            walk(node, lambda e: guarded.add(e.__chandle__()), (tir.Evaluate,))

    walk(func.body, mark, (tir.IfThenElse, tir.For))

    def on_evaluate(stmt):
        if stmt.__chandle__() in guarded or not is_tile_op(stmt, "copy"):
            return stmt
        op = TileOp.from_stmt(stmt)
        plan = plan_tma_store(op, params, laid_out, swizzled)
        if plan is None:
            return stmt
        spec = plan[0].to_dict()
        if spec not in maps:
            maps.append(spec)
        taken.append(op)
        return _store(op, maps.index(spec), plan[1], tx)

    body = map_stmts(func.body, (tir.Evaluate,), on_evaluate)
    if not taken:
        return func
    return func.with_body(body).with_attr(TENSOR_MAPS_ATTR, json.dumps(maps))
