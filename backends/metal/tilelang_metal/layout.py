"""Simdgroup-matrix layouts of the Metal backend: which lane of a SIMD-group holds which
elements of an 8x8 matrix, the split of a block's (M, N) tile over SIMD-groups, and the
register layouts a `T.gemm` imposes.

Every index function takes Python ints and TIR expressions alike (`+ - * // %` only), so one
definition serves the lowering (TIR), the layouts (tables) and the tests (ints).

An 8x8 simdgroup matrix gives each of the 32 lanes two consecutive elements of one row
(`thread_elements()`; MLX's steel GEMM reads the same with `get_coord`, see
include/tl_metal_simdgroup.h):

    lane l holds row  (l // 4 & 4) + (l // 2) % 4,  columns  (l // 4 & 2) * 2 + (l % 2) * 2 + i,  i in {0, 1}

It is the same for the A (M x K), B (K x N) and C (M x N) operands of one 8x8x8 multiply, so a
gemm's accumulator, cast, is the register A operand of the next gemm lane for lane when both
stack their SIMD-groups along M (FlashAttention's P = softmax(Q K^T) feeding P V).
"""
from __future__ import annotations

from dataclasses import dataclass

from tilelang_core.layout import Fragment, TiledGemmPlan

from .target import SIMDGROUP_TILE as TILE

__all__ = ["TILE", "LANES", "ACCUMULATOR_NAME", "lane_row", "lane_col", "GemmPlan"]

ACCUMULATOR_NAME = "metal.simdgroup8x8.C"  # the name of every `accumulator_layout`, before its grid
LANES = 32


def lane_row(lane):
    """The row (of 8) that `lane` holds in an 8x8 simdgroup matrix."""
    return (lane // 4 // 4) % 2 * 4 + (lane // 2) % 4


def lane_col(lane, i):
    """The column (of 8) of the lane's element `i` (0 or 1)."""
    return (lane // 8) % 2 * 4 + (lane % 2) * 2 + i


def _lane_element(lane, i):
    """(row, col) of the lane's element `i` of an 8x8 simdgroup matrix (any operand)."""
    return lane_row(lane), lane_col(lane, i)


@dataclass(frozen=True)
class GemmPlan(TiledGemmPlan):
    """How one T.gemm runs on simdgroup matrices: C (m x n) in 8x8 tiles, SIMD-groups in a
    groups_m x groups_n grid, each owning tiles_m x tiles_n neighbouring tiles; K in steps of 8
    (`tilelang_core.layout.TiledGemmPlan`). `a_registers`: A is an (m x k) fragment held in
    `a_operand_layout` (the "rs" form)."""

    in_dtype: str
    acc_dtype: str
    m: int
    n: int
    k: int
    groups_m: int
    groups_n: int
    a_registers: bool = False

    tile = k_tile = TILE
    lanes = LANES
    acc_elems = operand_elems = 2
    accumulator_name = ACCUMULATOR_NAME
    accumulator_element = a_operand_element = a_load_element = b_load_element = staticmethod(_lane_element)

    def accumulator_layout(self) -> Fragment:
        """C's register layout: thread `g * 32 + l` holds, for each tile (a, b) of SIMD-group g
        and i in {0, 1}, element (lane_row(l), lane_col(l, i)) of that tile in
        `accumulator_slot`."""
        return self.accumulator_fragment(f"{ACCUMULATOR_NAME}[{self.groups_m}x{self.groups_n} simdgroups]")

    def a_operand_layout(self) -> Fragment:
        """A (M x K) held in registers as simdgroup A fragments (the "rs" form); with one group
        along N this is exactly the `accumulator_layout` of a gemm with the same groups_m and
        N = K."""
        return self.a_operand_fragment(f"metal.simdgroup8x8.A[{self.groups_m}x{self.groups_n} simdgroups]")
