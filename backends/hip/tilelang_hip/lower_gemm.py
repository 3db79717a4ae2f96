"""`T.gemm` on MFMA (matrix fused multiply-add), the HIP backend's lowering and layout rule.

`T.gemm(A, B, C)` with float16/bfloat16/float8 operands and a float32 accumulator, or int8
operands and an int32 accumulator, runs on the 16x16 MFMA instructions of CDNA2/CDNA3
(`tl_hip_mfma.h`, `layout.py`) when
- B is in LDS (shared memory), either orientation;
- A is in LDS, either orientation, or a fragment: read from registers when it is a whole
  (M, K) fragment, not transposed (the "rs" form, FlashAttention's P @ V), else from the LDS
  copy layout inference gives it;
- C is a whole (M, N) fragment, and M, N, K are whole 16x16xK instruction tiles over a whole
  number of wavefronts.
The block's wavefronts (64 lanes each) split C's 16x16 tiles in a `groups_m x groups_n` grid
(`layout.wave_grid`, by the gemm's policy); each wave keeps its tiles' accumulators in
registers for the whole kernel. The accumulator layout is imposed on C, and the A-operand
layout on a fragment A, through `tilelang_infer_layout` (`infer_gemm_layout`), so `T.clear`,
`T.Parallel` epilogues, casts and the final `T.copy` run in the same layouts.

The MFMAs run with swapped operands, so that a gemm's accumulator has the ownership of the
next gemm's register A operand (`layout.py`): when both gemms stack their waves the same way
along M (FlashAttention's `FullRow`), the cast between them is register to register. When they
do not (the first gemm splits N over waves), a register A operand cannot be had without moving
data between lanes; the A layout is then not imposed (`feeds_from_another_layout`), A goes
through LDS and both gemms still run on MFMA.

Anything else (global operands, float32 or mixed dtypes, tiles that are not whole instruction
tiles, layouts inference could not give) is portable.

The plan, the layout rule and the lowering loop are the core's, for every target whose matrix
instructions tile C in squares (`tilelang_core.transform.tiled_gemm`); this module says what
MFMA takes and how it is called.
"""
from __future__ import annotations

from tvm import tirx as tir

from tilelang_core.transform import infer_tiled_gemm_layout, lower_tiled_gemm, plan_tiled_gemm

from .layout import TILE, GemmPlan, mfma_instruction

__all__ = ["SHARED", "plan_gemm", "infer_gemm_layout", "lower_gemm"]

SHARED = ("shared", "shared.dyn")
FRAGMENT = "local.fragment"


def plan_gemm(op, target, threads: int, a_registers: bool | None = None) -> GemmPlan | None:
    """The MFMA plan of a `T.gemm` tile op on `target` with `threads` threads per block, or
    None when it needs the portable lowering (see the module docstring).

    A fragment A is read from registers (`a_registers`) or from its shared-memory copy (when
    layout inference moved it there); None: from registers when the rs form allows it (a whole
    (M, K) fragment, not transposed)."""
    caps = target.capabilities
    if op.name != "gemm" or caps.execution_model != "simt" or not caps.has_matrix("mfma"):
        return None
    a, b, c = op.regions[:3]
    if b.scope not in SHARED or c.scope != FRAGMENT or a.dtype != b.dtype:
        return None
    if a.scope not in SHARED and a.scope != FRAGMENT:
        return None
    instr = mfma_instruction(target.arch, a.dtype, c.dtype)
    if instr is None:
        return None
    wave = caps.warp_size

    def make(m, n, k, groups_m, groups_n, registers):
        return GemmPlan(instr, m, n, k, groups_m, groups_n, wave, registers)

    return plan_tiled_gemm(op, threads, lanes=wave, tile=TILE, k_tile=instr.k, a_registers=a_registers, make=make)


def infer_gemm_layout(op, ctx) -> dict | None:
    """`tilelang_infer_layout` for T.gemm: {C: its accumulator layout} and, when A is a
    fragment read from registers, {A: its A-operand layout}, when the gemm runs on MFMA; else
    None. A fragment A given no layout here is moved to shared memory by the core."""
    return infer_tiled_gemm_layout(op, ctx, plan_gemm(op, ctx.target, ctx.threads))


def _mfma(plan: GemmPlan, dst, a, b) -> tir.PrimExpr:
    # swapped operands: the instruction computes C^T = B^T A^T (layout.py)
    return tir.call_extern("void", plan.instr.wrapper, dst, b, a, dst)


def lower_gemm(op, ctx) -> tir.Stmt | None:
    """The MFMA lowering of a `T.gemm` tile op, or None for the portable one (also when C, or
    a fragment A, did not get the layout `infer_gemm_layout` asked for).

    Per thread (wave w, lane l) and k-step: the lane loads its B fragments of the wave's
    column tiles and, from LDS, its A fragments of the wave's row tiles, then issues one MFMA
    per (row tile, column tile) with the operands swapped (B fragment first): the accumulator
    registers receive C in `accumulator_layout`. A register A operand is passed to the MFMA
    straight from its register array, `a_register_slot` by slot."""
    return lower_tiled_gemm(op, ctx, plan_gemm, _mfma)
