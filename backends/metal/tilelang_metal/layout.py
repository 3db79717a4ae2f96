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

from tilelang_core.layout import Fragment

from .target import SIMDGROUP_TILE as TILE

__all__ = ["TILE", "ACCUMULATOR_NAME", "lane_row", "lane_col", "GemmPlan", "simdgroup_grid", "simdgroup_origin",
           "accumulator_slot", "a_register_slot", "accumulator_layout", "a_operand_layout"]

ACCUMULATOR_NAME = "metal.simdgroup8x8.C"  # the name of every `accumulator_layout`, before its grid
LANES = 32


def lane_row(lane):
    """The row (of 8) that `lane` holds in an 8x8 simdgroup matrix."""
    return (lane // 4 // 4) % 2 * 4 + (lane // 2) % 4


def lane_col(lane, i):
    """The column (of 8) of the lane's element `i` (0 or 1)."""
    return (lane // 8) % 2 * 4 + (lane % 2) * 2 + i


@dataclass(frozen=True)
class GemmPlan:
    """How one T.gemm runs on simdgroup matrices: C (m x n) in 8x8 tiles, SIMD-groups in a
    groups_m x groups_n grid, each owning tiles_m x tiles_n neighbouring tiles; K in steps of 8.
    `a_registers`: A is an (m x k) fragment held in `a_operand_layout` (the "rs" form)."""

    in_dtype: str
    acc_dtype: str
    m: int
    n: int
    k: int
    groups_m: int
    groups_n: int
    a_registers: bool = False

    @property
    def tiles_m(self) -> int:
        return self.m // TILE // self.groups_m

    @property
    def tiles_n(self) -> int:
        return self.n // TILE // self.groups_n

    @property
    def k_steps(self) -> int:
        return self.k // TILE

    @property
    def threads(self) -> int:
        return self.groups_m * self.groups_n * LANES


def simdgroup_grid(tiles_m: int, tiles_n: int, groups: int, policy: int) -> tuple[int, int] | None:
    """(groups_m, groups_n) that split tiles_m x tiles_n evenly; the policy (0 Square, 1 FullRow:
    groups stacked along M, 2 FullCol: along N) orders the candidates; None when no split gives
    every SIMD-group whole tiles."""
    grids = [(gm, groups // gm) for gm in range(1, groups + 1)
             if groups % gm == 0 and tiles_m % gm == 0 and tiles_n % (groups // gm) == 0]
    if not grids:
        return None
    if policy == 1:
        return max(grids)
    if policy == 2:
        return min(grids)
    return min(grids, key=lambda g: (abs(tiles_m // g[0] - tiles_n // g[1]), g[0]))


def simdgroup_origin(plan: GemmPlan, group):
    """(row, col) of the first element of C that SIMD-group `group` computes (column-major:
    group = group_m + groups_m * group_n)."""
    return ((group % plan.groups_m) * (plan.tiles_m * TILE), (group // plan.groups_m) * (plan.tiles_n * TILE))


def accumulator_slot(plan: GemmPlan, tile_m, tile_n, i):
    """The register slot of the lane's element `i` of the SIMD-group's C tile (tile_m, tile_n)."""
    return (tile_m * plan.tiles_n + tile_n) * 2 + i


def a_register_slot(plan: GemmPlan, tile, kk, i=0):
    """The slot of a register A operand that holds the lane's element `i` of the SIMD-group's
    `tile`-th row of tiles at k-step `kk`."""
    return (tile * plan.k_steps + kk) * 2 + i


def accumulator_layout(plan: GemmPlan) -> Fragment:
    """C's register layout: thread `g * 32 + l` holds, for each tile (a, b) of SIMD-group g and
    i in {0, 1}, element (lane_row(l), lane_col(l, i)) of that tile in `accumulator_slot`."""
    tn = plan.tiles_n

    def element_of(thread, slot):
        group, lane = thread // LANES, thread % LANES
        row0, col0 = simdgroup_origin(plan, group)
        row = row0 + (slot // (2 * tn)) * TILE + lane_row(lane)
        return [row, col0 + ((slot // 2) % tn) * TILE + lane_col(lane, slot % 2)]

    name = f"{ACCUMULATOR_NAME}[{plan.groups_m}x{plan.groups_n} simdgroups]"
    return Fragment((plan.m, plan.n), plan.threads, plan.tiles_m * tn * 2, element_of, name)


def a_operand_layout(plan: GemmPlan) -> Fragment:
    """A (M x K) held in registers as simdgroup A fragments (the "rs" form): the SIMD-groups of
    a row block hold its rows (replicated over the groups along N); slot
    `a_register_slot(plan, tile, kk, i)` of lane l holds row `tile * 8 + lane_row(l)` of the
    group's rows and column `kk * 8 + lane_col(l, i)`. With one group along N this is exactly
    the `accumulator_layout` of a gemm with the same groups_m and N = K."""
    steps = plan.k_steps

    def element_of(thread, slot):
        group, lane = thread // LANES, thread % LANES
        row0 = simdgroup_origin(plan, group)[0]
        i, kk, tile = slot % 2, (slot // 2) % steps, slot // (2 * steps)
        return [row0 + tile * TILE + lane_row(lane), kk * TILE + lane_col(lane, i)]

    name = f"metal.simdgroup8x8.A[{plan.groups_m}x{plan.groups_n} simdgroups]"
    return Fragment((plan.m, plan.k), plan.threads, plan.tiles_m * steps * 2, element_of, name)
