"""The CUDA backend's tile-op lowerings and passes, behind the three compile hooks.

| tile op / loop | CUDA lowering | module |
|---|---|---|
| `T.gemm(A_shared, B_shared, C_fragment)`, f16/bf16 -> f32 on a target with wgmma | wgmma m64nNk16, descriptors over swizzled tiles (an operand may be a column range of its tile: K-major on 32-byte steps, MN-major whole slabs); C in the warpgroup D layout; inside a `T.ws` scope of whole warpgroups too (`tl.disable_wgmma` keeps mma.sync) | `lower_wgmma.py` |
| `T.gemm(A_shared or A_fragment, B_shared, C_fragment)` | mma.sync m16n8k{16,32,8} + ldmatrix; C in the accumulator layout, a fragment A in the A-operand layout | `lower_gemm.py` |
| `T.copy(global, shared)` | cp.async, 16 bytes per instruction, zero-filled tails | `lower_copy.py` |
| `T.async_copy(global, shared)` | the same cp.async nest and commit, no wait; its barrier after the kernel's `T.ptx_wait_group` | `lower_copy.py`, `lower_async_wait.py` |
| `T.Pipelined(n, num_stages>=2)` over copies into wgmma operands, on a target with TMA | TMA loads on full/empty mbarriers, wgmma overlapped across iterations (`tl.disable_tma_lower` keeps cp.async) | `lower_tma.py` |
| such a loop whose consumers end in two chained wgmma gemms over two warpgroups (FlashAttention) | the second gemm of iteration it - 1 in flight beside the statements between them of iteration it, the warpgroups taking turns to issue (`tl.disable_overlap` keeps each iteration's order) | `lower_tma.py` |
| `T.copy(shared, global)` of a whole row-major tile, on a target with TMA | one TMA store (`tl.disable_tma_lower` keeps thread stores) | `lower_tma_store.py` |
| a kernel whose one `T.Pipelined` loop became a warp-specialized TMA pipeline, with more blocks than the target has processors and the same trip count in every block | persistent blocks: one per processor walks the tiles, the loaders fill the next tile's stages during the epilogue (`tl.disable_persistent` keeps one tile per block) | `lower_persistent.py` |
| `T.Pipelined(n, num_stages>=2)` over such copies | multi-stage cp.async pipeline | `lower_pipeline.py` |
| shared tiles only those two touch | XOR-swizzled 16-byte chunks (no ldmatrix bank conflicts) | `lower_pipeline.py` |
| `T.use_swizzle(panel, order)` | block rasterization in panels (L2 reuse) | `lower_raster.py` |
| `T.annotate_layout({shared: T.Layout(...)})` | the tile stored in the user's placement (TileLang's `make_mma_swizzle_layout`) | `lower_layout.py` |
| `T.tma_load(T.create_tma_descriptor(...), bar, smem, coords)` (TMA by hand) | the descriptor a numbered `__grid_constant__` parameter the runtime encodes, one bulk tensor copy | `language_tma.py`, `lower_tma_descriptors.py` |
| `T.alloc_barrier`, `T.barrier_wait`, `T.barrier_arrive` | mbarrier init (thread 0, fence, barrier), parity wait, arrive | `lower_barrier.py` |
| `T.tma_copy(global, shared, barrier=)` | cp.async per thread + cp.async.mbarrier.arrive (no TMA tensor maps yet) | `lower_barrier.py` |

Everything else, and every case a lowering does not cover, takes the core's portable path
(the hook returns None). Layout functions live in `layout.py`.
"""
from __future__ import annotations

from tilelang_core.ir import source_of
from tilelang_core.transform import TileLangCompileError
from tilelang_core.transform import seq

from .lower_wgmma import has_wgmma, needs_proxy_fence, proxy_fence, whole_warpgroups

__all__ = ["lower_tile_op", "infer_layout", "edit_pipeline"]


def _has_mma(caps, op) -> bool:
    a, _, c = op.regions[:3]
    operand = "tfloat32" if a.dtype == "float32" else a.dtype
    return any(mi.family == "mma.sync" and mi.supports(operand, c.dtype) for mi in caps.matrix_instructions)


def lower_tile_op(target, op, ctx):
    """`tilelang_lower_tile_op`: the CUDA lowering of `op`, or None for the portable one."""
    from .lower_layout import SHARED_LAYOUTS
    from .lower_pipeline import ANALYZER, SWIZZLES

    swizzles = ctx.facts.get(SWIZZLES, {})
    # shared tiles in a user's placement that breaks 16-byte runs cannot be moved 16 bytes
    # at a time (cp.async, ldmatrix)
    placed = ctx.facts.get(SHARED_LAYOUTS, {})
    unfit = [placed[key] for key in (r.buffer.__chandle__() for r in op.regions)
             if key in placed and not placed[key].keeps_chunks]
    if op.name == "gemm" and has_wgmma(ctx.caps, op):
        from .lower_wgmma import lower_wgmma

        lowered = lower_wgmma(op, ctx)  # None unless layout inference chose wgmma for C
        if lowered is not None:
            return lowered
    if op.name == "gemm" and _has_mma(ctx.caps, op):
        from .lower_gemm import lower_gemm

        if unfit:
            raise TileLangCompileError(
                f"T.gemm on mma.sync reads shared operands 16 bytes at a time (ldmatrix), but the layout given by "
                f"{unfit[0].origin} does not keep 16-byte runs of a row together; use "
                f"make_mma_swizzle_layout or drop the annotation", source_of(op.stmt))
        return lower_gemm(op, ctx, swizzles)
    if op.name == "copy" and "cp.async" in ctx.caps.copy_engines:
        from .lower_copy import lower_async_copy, vector_bytes

        lowered = lower_async_copy(op, swizzles, ctx.facts.get(ANALYZER), vector_bytes(placed, op.regions[1].buffer))
        if lowered is not None and needs_proxy_fence(ctx.facts, [op.regions[1].buffer]):
            lowered = seq([lowered, proxy_fence()])  # wgmma reads the tile next
        return lowered
    if op.name in _BARRIER_OPS and ctx.caps.has_barrier("mbarrier"):
        from .lower_barrier import lower_barrier_op

        if op.name == "tma_copy" and (unfit or "cp.async" not in ctx.caps.copy_engines):
            return None
        return lower_barrier_op(op, ctx, swizzles, ctx.facts.get(ANALYZER))
    return None


_BARRIER_OPS = ("init_barriers", "barrier_wait", "barrier_arrive", "tma_copy")


def infer_layout(target, op, ctx):
    """`tilelang_infer_layout`: the mma accumulator layout a tensor-core T.gemm imposes on C,
    and the A-operand layout on A when A is a fragment (reductions, elementwise loops and
    copies follow from the core's inference)."""
    # inside a T.ws scope a gemm takes wgmma when the scope is made of whole warpgroups and the
    # kernel asks for wgmma (T.wgmma_gemm somewhere: TileLang's warp-specialized MLA) (tiles
    # that arrive through cp.async completing on mbarriers, whose writers cannot fence for
    # wgmma's async proxy, are fenced by the gemm's own threads after their wait); other
    # scopes keep mma.sync
    here = getattr(ctx, "thread_range", None)
    if op.name == "gemm" and has_wgmma(ctx.caps, op) and not getattr(ctx.options, "disable_wgmma", False) \
            and (here is None or (whole_warpgroups(here) and getattr(ctx, "facts", {}).get(REQUIRED_WGMMA))):
        from .lower_wgmma import wgmma_layouts

        facts = getattr(ctx, "facts", {})
        layouts = wgmma_layouts(op, ctx.threads, one_m64_per_warpgroup=RS_GEMM in facts,
                                held=ctx.layouts.get if getattr(ctx, "layouts", None) is not None else None,
                                required=op.stmt.__chandle__() in facts.get(REQUIRED_WGMMA, ()))
        if layouts is not None:
            return layouts
    if op.name == "gemm" and _has_mma(ctx.caps, op):
        from .lower_gemm import gemm_layouts

        return gemm_layouts(op, ctx.threads)
    return None


RS_GEMM = "cuda.rs_gemm"  # ctx.facts key: the kernel has a T.gemm whose A is a register fragment
REQUIRED_WGMMA = "cuda.required_wgmma"  # ctx.facts key: handles of the gemms T.wgmma_gemm wrote


def note_register_operands(func, ctx):
    """Note (`facts[RS_GEMM]`) whether some T.gemm of the kernel reads A from a fragment (the
    rs form, on mma.sync). Its A layout is mma.sync's, which equals the wgmma accumulator
    layout only when each warpgroup holds one m64 block of rows; a producer gemm (Q @ K^T in
    FlashAttention) then takes wgmma only in that case, so its result feeds the next gemm from
    registers instead of being moved through shared memory (measured on the H100: 128x64 tiles
    at 128 threads ran 4x slower with two m64 blocks per warpgroup)."""
    from tilelang_core.ir import TileOp, is_tile_op
    from tilelang_core.transform import walk
    from tvm import tirx as tir

    from .language import ATTR_REQUIRE_WGMMA

    found = []

    def visit(node):
        if is_tile_op(node, "gemm") and TileOp.from_stmt(node).regions[0].scope == "local.fragment":
            found.append(True)

    walk(func.body, visit, (tir.Evaluate,))
    if found:
        ctx.facts[RS_GEMM] = True
    required = set()  # the gemms inside T.wgmma_gemm's marker: an rs one takes wgmma's layouts

    def on_marker(attr):
        if attr.attr_key == ATTR_REQUIRE_WGMMA:
            walk(attr.body, lambda n: required.add(n.__chandle__()) if is_tile_op(n, "gemm") else None,
                 (tir.Evaluate,))

    walk(func.body, on_marker, (tir.AttrStmt,))
    if required:
        ctx.facts[REQUIRED_WGMMA] = required
    return func


def edit_pipeline(target, pipeline) -> None:
    """`tilelang_pipeline`: block rasterization, the user's shared layouts and swizzle
    planning after layout inference, cp.async pipelining before the core's portable pipeline
    planning, the user's shared layouts applied to every access before vectorizing."""
    from .lower_layout import apply_shared_layouts, plan_shared_layouts
    from .lower_pipeline import pipeline_async_copies, plan_swizzles
    from .lower_raster import rasterize_blocks

    pipeline.insert_before("infer_layout", "cuda.note_register_operands", note_register_operands)
    pipeline.insert_after("infer_layout", "cuda.rasterize_blocks", rasterize_blocks)
    pipeline.insert_after("cuda.rasterize_blocks", "cuda.plan_shared_layouts", plan_shared_layouts)
    pipeline.insert_after("cuda.plan_shared_layouts", "cuda.plan_swizzles", plan_swizzles)
    if any(mi.family == "wgmma" for mi in target.capabilities.matrix_instructions):
        from .lower_wgmma import place_wgmma_operands

        pipeline.insert_after("cuda.plan_shared_layouts", "cuda.place_wgmma_operands", place_wgmma_operands)
    pipeline.insert_before("vectorize", "cuda.apply_shared_layouts", apply_shared_layouts)
    from .lower_tma_descriptors import number_tensor_maps

    # after the TMA planning below (inserted before plan_pipeline), whose maps it joins
    pipeline.insert_before("lower_tile_ops", "cuda.number_tensor_maps", number_tensor_maps)
    if "tma" in target.capabilities.copy_engines and any(
            mi.family == "wgmma" for mi in target.capabilities.matrix_instructions):
        from .lower_tma import pipeline_tma_loads

        # first: the cp.async pipeline takes the loops this one leaves
        pipeline.insert_before("plan_pipeline", "cuda.pipeline_tma_loads", pipeline_tma_loads)
        from .lower_tma_store import lower_tma_stores

        pipeline.insert_after("cuda.pipeline_tma_loads", "cuda.lower_tma_stores", lower_tma_stores)
        from .lower_tma import specialize_warps

        pipeline.insert_after("insert_barriers", "cuda.specialize_warps", specialize_warps)
    if "cp.async" in target.capabilities.copy_engines:
        from .lower_async_wait import publish_async_copies

        pipeline.insert_before("plan_pipeline", "cuda.pipeline_async_copies", pipeline_async_copies)
        pipeline.insert_after("insert_barriers", "cuda.publish_async_copies", publish_async_copies)
