"""Persistent blocks: one block per SM walks the kernel's tiles, so that the loading warpgroup
of a warp-specialized TMA pipeline fills the next tile's stages while the consumers run the
epilogue of this one.

A kernel qualifies (`plan_persistent`) when

- the target says how many processors it has (`processor_count`, P) and the grid (every
  `blockIdx` extent a constant) has more than P blocks,
- its only `T.Pipelined` loop is at the top level and runs a constant number of iterations
  (every tile does the same work: with uneven work, as in causal attention, the hardware's
  block scheduler balances better than a fixed order),
- that loop's pipeline is the GEMM form: its consumers are one wgmma gemm (the epilogue is
  what the loaders get to overlap; FlashAttention, whose consumers also run the softmax,
  measured 0.76x SDPA persistent against 0.84x one tile per block in `bench/ops.py` on the
  H100, 2026-11-26, and in its overlapped form (`lower_tma.plan_overlap`) 0.97x against 1.00x
  in `bench/attention.py`),
- and `tl.disable_persistent` is off.

`pipeline_tma_loads` then builds the loop's warp-specialized pipeline with its iterations
counted over the tiles a block has done (`wave * n + it` picks the stage and the phase), and
`persist` turns

    launch grid (gx, gy, gz);  allocations;  S1; ...; Sk      (bx, by, bz read anywhere)

into

    launch grid (P, 1, 1);  allocations
    for wave in 0 .. ceil((gx*gy*gz - blockIdx.x) / P) - 1:     # ANN_PERSISTENT
        tile = blockIdx.x + wave * P
        S1; ...; Sk       with bx = tile % gx, by = tile / gx % gy, bz = tile / (gx*gy)

Tiles go to blocks round-robin in the order of the original block index, so block
rasterization (`T.use_swizzle`) keeps its effect. Every shared buffer the tiles use is then live
for the whole loop (`plan_storage` counts lifetimes in top-level statements): `pipeline_tma_loads`
keeps the persistent form only if the kernel still fits the target's shared memory. The core's
barrier pass opens the loop body with a barrier (a tile does not overwrite what the previous one
still reads); `specialize_warps` gives the consumers and the loading threads each their own copy
of the loop. On the H100 a hand-written persistent form of `bench/gemm.py`'s 128x256 kernel ran
at 1.01x cuBLAS at 4096^3 against 0.95x for the same kernel one tile per block (2026-11-26).
"""
from __future__ import annotations

from dataclasses import dataclass

from tvm import tirx as tir

from tilelang_core.ir import ANN_NUM_STAGES, ATTR_KERNEL_HINTS
from tilelang_core.transform import launch_info, map_top_level, substitute, walk

__all__ = ["ANN_PERSISTENT", "PERSISTENT", "PersistentPlan", "plan_persistent", "persist", "is_tile_loop"]

ANN_PERSISTENT = "cuda.persistent_tiles"  # annotation of the loop over a persistent block's tiles
PERSISTENT = "cuda.persistent"  # ctx.facts key: the PersistentPlan a kernel was given
_BLOCK_AXES = ("blockIdx.x", "blockIdx.y", "blockIdx.z")


@dataclass
class PersistentPlan:
    """How a kernel's tiles are spread over `blocks` persistent blocks: `axes` are the block
    index variables with their extents, x first; `wave` is the loop variable of the tile loop
    (the count of tiles this block did before the current one)."""

    blocks: int
    tiles: int
    axes: list
    wave: tir.Var

    def base(self, iterations: int) -> tir.PrimExpr:
        """The iterations of a loop of `iterations` per tile run before this tile's."""
        return self.wave * iterations


def _pipelined_loops(func) -> list:
    found = []
    walk(func.body, lambda f: found.append(f) if int(f.annotations.get(ANN_NUM_STAGES, 0)) >= 2 else None, (tir.For,))
    return found


def plan_persistent(func: tir.PrimFunc, ctx, top_level: set) -> PersistentPlan | None:
    """The persistent plan of `func` (module docstring), or None where it does not qualify.
    `top_level`: the keys of the loops at the kernel's top level."""
    if getattr(ctx.options, "disable_persistent", False):
        return None
    processors = ctx.caps.processor_count
    info = launch_info(func)
    if not isinstance(processors, int) or processors < 1 or _BLOCK_AXES[0] not in info.extents:
        return None
    axes = []
    for name in _BLOCK_AXES:
        if name in info.extents:
            extent = info.extents[name]
            if isinstance(extent, tir.IntImm):
                extent = int(extent)
            if not isinstance(extent, int):
                return None
            axes.append((info.vars[name], extent))
    tiles = 1
    for _, extent in axes:
        tiles *= extent
    loops = _pipelined_loops(func)
    if tiles <= processors or len(loops) != 1 or loops[0].__chandle__() not in top_level \
            or not isinstance(loops[0].extent, tir.IntImm) or int(loops[0].extent) < 1:
        return None
    return PersistentPlan(processors, tiles, axes, tir.Var("wave", "int32"))


def is_tile_loop(stmt) -> bool:
    """Whether `stmt` is the loop over a persistent block's tiles."""
    return isinstance(stmt, tir.For) and ANN_PERSISTENT in stmt.annotations


def persist(func: tir.PrimFunc, plan: PersistentPlan) -> tir.PrimFunc:
    """`func` in the persistent form of `plan` (module docstring)."""
    block = plan.axes[0][0]
    tile = tir.Var("tile", "int32")
    index, stride = {}, 1
    for var, extent in plan.axes:
        coord = tir.truncdiv(tile, stride) if stride > 1 else tile
        index[var] = tir.truncmod(coord, extent) if stride * extent < plan.tiles else coord
        stride *= extent

    def rewrite(items):
        allocs = [s for s in items if isinstance(s, (tir.AllocBuffer, tir.DeclBuffer))]
        rest = [substitute(s, index) for s in items if not isinstance(s, (tir.AllocBuffer, tir.DeclBuffer))]
        waves = tir.truncdiv(tir.const(plan.tiles + plan.blocks - 1, "int32") - block, plan.blocks)
        body = tir.SeqStmt([tir.Bind(tile, block + plan.wave * plan.blocks), *rest])
        return [*allocs, tir.For(plan.wave, tir.const(0, "int32"), waves, tir.ForKind.SERIAL, body,
                                 annotations={ANN_PERSISTENT: tir.const(1, "int32")})]

    def relaunch(stmt):
        """The launch attributes at the top of the body: the grid becomes (P, 1, 1)."""
        if not isinstance(stmt, tir.AttrStmt) or stmt.attr_key not in ("thread_extent", ATTR_KERNEL_HINTS):
            return stmt
        name = str(stmt.node.thread_tag) if stmt.attr_key == "thread_extent" else ""
        if name == _BLOCK_AXES[0]:
            return tir.AttrStmt(stmt.node, stmt.attr_key, tir.const(plan.blocks, "int32"), relaunch(stmt.body))
        if name in _BLOCK_AXES:
            return relaunch(stmt.body)
        return tir.AttrStmt(stmt.node, stmt.attr_key, stmt.value, relaunch(stmt.body))

    return func.with_body(relaunch(map_top_level(func.body, rewrite)))
