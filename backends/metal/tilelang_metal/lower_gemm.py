"""`T.gemm` on simdgroup matrices (8x8x8), the Metal backend's lowering and layout rule.

`T.gemm(A, B, C)` runs on `simdgroup_multiply_accumulate` (`include/tl_metal_simdgroup.h`,
`layout.py`) for the dtype pairs the target declares (half -> float, half -> half,
float -> float, and bfloat -> float on M2 and later) when
- C is a whole (M, N) fragment and M, N, K are multiples of 8 over whole SIMD-groups;
- A and B are anywhere the lane can read (threadgroup memory, global memory, either
  orientation), or A is a whole (M, K) fragment, not transposed, read from registers (the
  "rs" form, FlashAttention's P @ V).
The block's SIMD-groups (32 threads each) split C's 8x8 tiles in a `groups_m x groups_n` grid
(by the gemm's policy); each keeps its tiles' accumulators in registers for the whole kernel,
two per lane per tile. The accumulator layout is imposed on C, and the A-operand layout on a
fragment A, through `tilelang_infer_layout`, so `T.clear`, `T.Parallel` epilogues, reductions,
casts and the final `T.copy` run in the same layouts.

Per k-step each lane reads its two elements of every A and B tile it needs (the layout MLX's
steel GEMM also reads threadgroup memory in), and each (row tile, column tile) pair is one
8x8x8 multiply-accumulate. When a gemm whose A comes from another gemm's accumulator of a
different SIMD-group grid cannot take A from registers, A goes through threadgroup memory
(the core decides; `feeds_from_another_layout`) and both gemms still run on simdgroup
matrices. Anything else (shapes off the 8-grid, undeclared dtype pairs) is portable.

The plan, the layout rule and the lowering loop are the core's, for every target whose matrix
instructions tile C in squares (`tilelang_core.transform.tiled_gemm`); this module says what
the simdgroup instruction takes and how it is called.
"""
from __future__ import annotations

from tvm import tirx as tir

from tilelang_core.transform import infer_tiled_gemm_layout, lower_tiled_gemm, plan_tiled_gemm

from .layout import LANES, TILE, GemmPlan

__all__ = ["plan_gemm", "infer_gemm_layout", "lower_gemm"]

FRAGMENT = "local.fragment"


def plan_gemm(op, target, threads: int, a_registers: bool | None = None) -> GemmPlan | None:
    """The simdgroup plan of a `T.gemm` on `target` with `threads` threads per block, or None
    for the portable lowering (see the module docstring). `a_registers`: read a fragment A
    from registers (True), from its shared copy (False), or whichever the rs form allows (None)."""
    instr = target.capabilities.matrix("simdgroup")
    if op.name != "gemm" or instr is None:
        return None
    a, b, c = op.regions[:3]
    if c.scope != FRAGMENT or a.dtype != b.dtype or not instr.supports(a.dtype, c.dtype):
        return None
    if b.scope == FRAGMENT:
        return None  # B is read by every SIMD-group along M: a fragment B goes to shared memory
    return plan_tiled_gemm(op, threads, lanes=LANES, tile=TILE, k_tile=TILE, a_registers=a_registers,
                           make=lambda *shape: GemmPlan(a.dtype, c.dtype, *shape))


def infer_gemm_layout(op, ctx) -> dict | None:
    """`tilelang_infer_layout` for T.gemm: {C: accumulator layout} and, for the rs form,
    {A: A-operand layout}; None when the gemm is portable."""
    return infer_tiled_gemm_layout(op, ctx, plan_gemm(op, ctx.target, ctx.threads))


def _simdgroup_mma(plan: GemmPlan, dst, a, b) -> tir.PrimExpr:
    return tir.call_extern("void", "tl_simdgroup_mma", dst, a, b)


def lower_gemm(op, ctx) -> tir.Stmt | None:
    """The simdgroup lowering of a `T.gemm`, or None for the portable one (also when C, or a
    fragment A, did not get the layout `infer_gemm_layout` asked for).

    Per thread (SIMD-group g, lane l) and k-step kk: the lane reads its two elements of each of
    its group's A row tiles (unless A is in registers) and B column tiles into `A_frag` /
    `B_frag`, then calls `tl_simdgroup_mma(&C[slot], &A_frag[2 i], &B_frag[2 j])` for every
    tile pair: one `simdgroup_multiply_accumulate` of the whole SIMD-group each."""
    return lower_tiled_gemm(op, ctx, plan_gemm, _simdgroup_mma)
