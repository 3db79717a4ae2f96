"""Epilogue stores through TMA (`cp.async.bulk.tensor`, shared -> global) on Hopper.

`lower_tma_stores` runs after `lower_tma.pipeline_tma_loads` and takes each `T.copy(shared,
global)` that

- moves a whole 2-D shared tile of R x C elements (R, C <= 256, a row a multiple of 16
  bytes) in its plain row-major placement (no swizzle or layout was planned for it),
- into a box of a contiguous tensor parameter of the same dtype (the region's last two
  extents are R and C, the others 1) whose every stride is a static multiple of 16 bytes,
- and runs on every thread of the block (it is not inside an `if`, a `T.Parallel` or a
  thread-bound loop).

Such a copy becomes, in a region that places its own barriers:

    every thread: fence.proxy.async          # its writes to the tile, visible to TMA
    barrier                                  # every write landed
    thread 0: tma_store(map, tile, coords); commit; wait until the tile was read
    barrier                                  # nobody writes the tile before that

One instruction moves the tile; elements of the box outside the tensor are not written
(TMA clips them), so a ragged edge tile stays correct. The tensor maps join the loads'
(`TENSOR_MAPS_ATTR`); in a warp-specialized kernel the barriers become the consumers' named
barrier (`specialize_warps`). `tl.disable_tma_lower` turns this off with the loads.
"""
from __future__ import annotations

import json

import tvm
from tvm import tirx as tir

from tilelang_core.codegen import sync_threads
from tilelang_core.ir import TileOp, is_tile_op
from tilelang_core.transform import launch_info, map_stmts, seq, walk

from .lower_layout import SHARED_LAYOUTS
from .lower_pipeline import SWIZZLES, _key, _loads_buffers, _whole, sync_placed
from .lower_tma import MAX_RANK, TENSOR_MAPS_ATTR, TensorMap, _extern, tensor_maps_of

__all__ = ["MAX_BOX_ELEMENTS", "lower_tma_stores", "plan_tma_store"]

MAX_BOX_ELEMENTS = 256  # cuTensorMapEncodeTiled: every box dimension is at most 256 elements


def plan_tma_store(op: TileOp, params: dict[int, int], laid_out: set) -> TensorMap | None:
    """The tensor map of a `T.copy(shared, global)` TMA can do (module docstring), or None.
    `laid_out`: the shared tiles that have a planned layout or swizzle."""
    if op.name != "copy":
        return None
    src, dst = op.regions[:2]
    if src.scope not in ("shared", "shared.dyn") or dst.scope != "global" or src.dtype != dst.dtype:
        return None
    if _key(src.buffer) in laid_out or not _whole(src):
        return None
    tile = [int(d) for d in src.buffer.ty.shape if isinstance(d, tir.IntImm)]
    if len(tile) != 2 or len(src.buffer.ty.shape) != 2:
        return None
    rows, cols = tile
    element = tvm.runtime.DataType(src.dtype).bits // 8
    if element not in (1, 2, 4, 8) or rows > MAX_BOX_ELEMENTS or cols > MAX_BOX_ELEMENTS or cols * element % 16:
        return None
    param = params.get(_key(dst.buffer))
    shape = list(dst.buffer.ty.shape)
    if param is None or not 2 <= len(shape) <= MAX_RANK or len(dst.buffer.ty.strides):
        return None  # TMA's strides come from the shape: contiguous tensors only
    extents = [int(e) if isinstance(e, tir.IntImm) else None for e in dst.extents]
    if extents[-2:] != [rows, cols] or any(e != 1 for e in extents[:-2]):
        return None
    if any(_loads_buffers(m) for m in dst.mins):
        return None
    inner = [int(d) if isinstance(d, tir.IntImm) else None for d in shape[1:]]
    if None in inner:
        return None
    stride = element
    for dim in reversed(inner):  # the strides of dims 0 .. rank-2, in bytes
        stride *= dim
        if stride % 16 or stride >= 1 << 40:
            return None
    dims = tuple(int(d) if isinstance(d, tir.IntImm) else str(d.name) for d in shape)
    return TensorMap(param, src.dtype, dims, (1,) * (len(shape) - 2) + (rows, cols), 0)


def _store(op: TileOp, index: int, tx) -> tir.Stmt:
    src, dst = op.regions[:2]
    coords = [dst.mins[-1]] + list(reversed(dst.mins[:-1]))
    smem = tir.address_of(tir.BufferLoad(src.buffer, [tir.const(0, "int32"), tir.const(0, "int32")]))
    issue = seq([_extern("tl::tma_store", tir.const(index, "int32"), smem, *coords),
                 _extern("tl::tma_store_commit"), _extern("tl::tma_store_wait_read")])
    return sync_placed(seq([_extern("tl::fence_proxy_async"), tir.Evaluate(sync_threads()),
                            tir.IfThenElse(tx == 0, issue, None), tir.Evaluate(sync_threads())]))


def lower_tma_stores(func: tir.PrimFunc, ctx) -> tir.PrimFunc:
    """Every eligible `T.copy(shared, global)` of `func` as one TMA store (module docstring)."""
    if getattr(ctx.options, "disable_tma", False) or "tma" not in ctx.caps.copy_engines:
        return func
    tx = launch_info(func).vars.get("threadIdx.x")
    if tx is None:
        return func
    params = {_key(p): i for i, p in enumerate(func.params) if tir.is_buffer_var(p)}
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
        plan = plan_tma_store(op, params, laid_out)
        if plan is None:
            return stmt
        spec = plan.to_dict()
        if spec not in maps:
            maps.append(spec)
        taken.append(op)
        return _store(op, maps.index(spec), tx)

    body = map_stmts(func.body, (tir.Evaluate,), on_evaluate)
    if not taken:
        return func
    return func.with_body(body).with_attr(TENSOR_MAPS_ATTR, json.dumps(maps))
