"""The MUSA backend's tile-op lowerings and passes, chosen by the target's capabilities.

| tile op | MUSA lowering | when | module |
|---|---|---|---|
| `T.gemm(A_shared, B_shared, C_fragment)`, f16/bf16 -> f32 | SQMMA on the TCE per warp squad, descriptors over the shared tiles; C in the SQMMA accumulator layout | the target declares the `tce` matrix family (mp_31) | `lower_tce.py` |
| `T.gemm(A_shared, B_shared, C_fragment)`, f16/bf16 -> f32, A not transposed | fmma m32n32k16 per 128-thread warp, operands gathered from shared into registers; C in the fmma accumulator layout | the target declares the `fmma` family (mp_22) | `lower_fmma.py` |
| `T.Pipelined(n, num_stages>=1)` over `T.copy(global, shared)` of whole 2-D tiles | TME loads (`__musa_tme_ld_tile_<r>d`) on full/empty ASYNC barriers, TCE groups overlapped across iterations (`tl.disable_tma_lower` keeps LDLMS) | the target declares the `tme` copy engine and `async_barrier` (mp_31) | `lower_tme.py` |
| `T.copy(global, shared)` | async LDLMS copies (`__musa_memcpy_g2s`), 16 bytes per thread, then the wait | the target declares the `ldlms` copy engine (every arch here) | `lower_copy.py` |
| `T.alloc_barrier`, `T.barrier_wait`, `T.barrier_arrive` | ASYNC barrier ids 1..63 (`__musa_async_init_arrival/_arrive/_wait`) | `async_barrier` (mp_31) | `lower_barrier.py` |
| `T.copy(..., force_async_copy=True)`, `T.Kernel(..., producer_threads=n)` | the port's keywords (`tilelang_musa.language`): LDLMS for that copy, never TME (refused when LDLMS cannot do it); `producer_threads` checked | every arch | `language.py`, here |

Everything else, and every case a lowering does not cover, takes the core's portable path
(the hook returns None).
"""
from __future__ import annotations

__all__ = ["lower_tile_op", "infer_layout", "edit_pipeline", "LAUNCH_ANALYZER"]

LAUNCH_ANALYZER = "musa.launch_analyzer"  # ctx.facts: an Analyzer that knows the launch ranges


def lower_tile_op(target, op, ctx):
    """`tilelang_lower_tile_op`: the MUSA lowering of `op`, or None for the portable one."""
    if op.name == "gemm" and target.capabilities.has_matrix("tce"):
        from .lower_tce import lower_tce

        return lower_tce(op, ctx)
    if op.name == "gemm" and target.capabilities.has_matrix("fmma"):
        from .lower_fmma import lower_fmma

        return lower_fmma(op, ctx)
    if op.name in ("init_barriers", "barrier_wait", "barrier_arrive") and target.capabilities.has_barrier("async_barrier"):
        from .lower_barrier import lower_barrier_op

        return lower_barrier_op(op, ctx)
    if op.name == "copy" and target.capabilities.has_copy_engine("ldlms"):
        from .lower_copy import lower_copy
        from .lower_tce import TCE_SLABS

        placement = ctx.facts.get(TCE_SLABS, {}).get(op.regions[1].buffer.__chandle__())
        ana = ctx.facts.get(LAUNCH_ANALYZER)
        lowered = lower_copy(op, placement, ana.clone() if ana is not None else None)
        if lowered is None and op.hints.get("force_async_copy"):
            from tilelang_core.ir import source_of
            from tilelang_core.transform import TileLangCompileError

            raise TileLangCompileError(
                "T.copy(..., force_async_copy=True): this copy is not one MUSA's async copies (LDLMS) can do: "
                "they move global -> shared tiles of one dtype, in whole 16-byte vectors along the last dim of "
                "both sides, from 16-byte aligned starts; drop force_async_copy to take the portable copy",
                source_of(op.stmt))
        return lowered
    return None


def infer_layout(target, op, ctx):
    """`tilelang_infer_layout`: the accumulator layout a TCE (mp_31) or fmma (mp_22) gemm
    imposes on C."""
    if op.name == "gemm" and target.capabilities.has_matrix("tce"):
        from .lower_tce import accumulator_layout, usable_plan

        plan = usable_plan(op, ctx.threads, target.capabilities, getattr(ctx, "facts", {}))
        if plan is not None and getattr(ctx, "thread_range", None) is None:
            return {op.regions[2].buffer: accumulator_layout(plan)}
    if op.name == "gemm" and target.capabilities.has_matrix("fmma") and getattr(ctx, "thread_range", None) is None:
        from .lower_fmma import accumulator_layout as fmma_layout
        from .lower_fmma import plan_fmma

        plan = plan_fmma(op, ctx.threads, target.capabilities)
        if plan is not None:
            return {op.regions[2].buffer: fmma_layout(plan)}
    return None


def note_launch_ranges(func, ctx):
    """Pass: an analyzer that knows the ranges of the block and thread indices
    (`facts[LAUNCH_ANALYZER]`), so copies of whole tiles need no bounds mask."""
    from tvm import ir
    from tvm import tirx as tir
    from tvm.sym import Analyzer

    from tilelang_core.transform import launch_info

    info = launch_info(func)
    ana = Analyzer()
    for tag, var in info.vars.items():
        ana.bind(var, ir.Range.from_min_extent(tir.const(0, "int32"), info.extents[tag]))
    ctx.facts[LAUNCH_ANALYZER] = ana
    return func


def check_kernel_hints(func, ctx):
    """Pass: `T.Kernel(..., producer_threads=n)` (tilelang_musa.language) is a positive multiple
    of the warp size, below the kernel's threads; it does not change the code (see there)."""
    from tilelang_core.transform import CapabilityError, kernel_hints, launch_info

    producers = kernel_hints(func).get("producer_threads")
    if producers is None:
        return func
    threads, warp = launch_info(func).threads, ctx.caps.warp_size
    if producers % warp or producers >= threads:
        raise CapabilityError(f"T.Kernel(producer_threads={producers}): on {ctx.target} it must be a multiple of "
                              f"the warp size {warp} and fewer than the kernel's {threads} threads (the producer "
                              f"of a warp-specialized pipeline); pass such a value or leave it out")
    ctx.facts["musa.producer_threads"] = producers
    return func


def edit_pipeline(target, pipeline) -> None:
    """`tilelang_pipeline`: on targets with a TCE, the placement of the shared tiles SQMMA
    reads (before layout inference, which asks for the accumulator layouts); the launch
    ranges for the copy lowering; on targets with TME and ASYNC barriers, the TME pipeline
    (before the core's pipeline planning)."""
    pipeline.insert_before("infer_layout", "musa.check_kernel_hints", check_kernel_hints)
    pipeline.insert_before("infer_layout", "musa.note_launch_ranges", note_launch_ranges)
    if target.capabilities.has_matrix("tce"):
        from .lower_tce import plan_operand_placement

        pipeline.insert_before("infer_layout", "musa.plan_operand_placement", plan_operand_placement)
    if target.capabilities.has_copy_engine("tme") and target.capabilities.has_barrier("async_barrier"):
        from .lower_tme import pipeline_tme_loads

        pipeline.insert_before("plan_pipeline", "musa.pipeline_tme_loads", pipeline_tme_loads)
