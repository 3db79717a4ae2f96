"""Register layouts of a `T.gemm` that runs on square matrix instructions, one per lane group.

Several targets run a block's gemm the same way: the block's threads form groups of `lanes`
lanes (a SIMD-group of 32 on Metal, a wavefront of 64 on AMD), one matrix instruction of a
group computes a `tile x tile` tile of C over `k_tile` of K, and the groups split C's tiles in
a `groups_m x groups_n` grid, each owning `tiles_m x tiles_n` neighbouring tiles and keeping
their accumulators in registers for the whole kernel. What differs between targets is only
which lane holds which element of one instruction's tile; `TiledGemmPlan` holds the rest.

A target subclasses `TiledGemmPlan` (usually a frozen dataclass) and supplies:
- attributes `m`, `n`, `k` (the gemm), `groups_m`, `groups_n` (from `split_tiles`) and
  `a_registers` (A is read from registers: the "rs" form);
- the geometry of its instruction: `tile`, `k_tile`, `lanes`, `acc_elems` (accumulator
  elements per lane and tile), `operand_elems` (A and B elements per lane, tile and k-step);
  the operand and accumulator dtypes `in_dtype`, `acc_dtype`;
- `accumulator_element(lane, i)`: (row, col) inside a C tile of the lane's element `i`;
- `a_operand_element(lane, i)`: (row, k) inside an A tile and k-step of the lane's register
  A element `i` (the rs form);
- `a_load_element(lane, i)` and `b_load_element(lane, i)`: (row, k) inside an A tile and
  (k, col) inside a B tile, at one k-step, of the operand element `i` the lane loads;
- `accumulator_layout()` and `a_operand_layout()`: `accumulator_fragment(name)` and
  `a_operand_fragment(name)` with the target's names, and `accumulator_name`, the prefix of
  every accumulator layout's name (`tilelang_core.transform.infer_tiled_gemm_layout` reads
  them).

Every index function takes Python ints, NumPy arrays and TIR expressions alike (`+ - * // %`
only), so one definition serves the lowering (TIR), the layouts (tables) and the tests (ints).
"""
from __future__ import annotations

from .fragment_model import Fragment

__all__ = ["TiledGemmPlan", "split_tiles"]


def split_tiles(tiles_m: int, tiles_n: int, groups: int, policy: int) -> tuple[int, int] | None:
    """(groups_m, groups_n) that split tiles_m x tiles_n tiles evenly over `groups` lane groups;
    the gemm policy (0 Square, 1 FullRow: groups stacked along M, 2 FullCol: along N) orders the
    candidates. None when no split gives every group whole tiles."""
    grids = [(gm, groups // gm) for gm in range(1, groups + 1)
             if groups % gm == 0 and tiles_m % gm == 0 and tiles_n % (groups // gm) == 0]
    if not grids:
        return None
    if policy == 1:
        return max(grids)
    if policy == 2:
        return min(grids)
    # Square: per-group blocks as square as possible, then fewer groups along M
    return min(grids, key=lambda g: (abs(tiles_m // g[0] - tiles_n // g[1]), g[0]))


class TiledGemmPlan:
    """How one `T.gemm` runs on a target's tiled matrix instructions (see the module
    docstring for what a subclass supplies). Lane groups take tile blocks column-major:
    group = group_m + groups_m * group_n."""

    @property
    def tiles_m(self) -> int:
        """Row tiles each group owns."""
        return self.m // self.tile // self.groups_m

    @property
    def tiles_n(self) -> int:
        """Column tiles each group owns."""
        return self.n // self.tile // self.groups_n

    @property
    def k_steps(self) -> int:
        return self.k // self.k_tile

    @property
    def threads(self) -> int:
        return self.groups_m * self.groups_n * self.lanes

    def origin(self, group):
        """(row, col) of the first element of C that lane group `group` computes."""
        return ((group % self.groups_m) * (self.tiles_m * self.tile),
                (group // self.groups_m) * (self.tiles_n * self.tile))

    def accumulator_slot(self, tile_m, tile_n, i):
        """The register slot of the lane's accumulator element `i` of its group's C tile
        (tile_m, tile_n)."""
        return (tile_m * self.tiles_n + tile_n) * self.acc_elems + i

    def a_register_slot(self, tile, kk, i=0):
        """The slot of a register A operand that holds the lane's element `i` for its group's
        `tile`-th row of tiles at k-step `kk`; the elements of one tile are consecutive."""
        return (tile * self.k_steps + kk) * self.operand_elems + i

    def a_fragment_element(self, group, lane, tile, i, k0):
        """(row, k) in the gemm's A of the lane's operand element `i` for its group's `tile`-th
        row of tiles, at K offset `k0`."""
        row, k = self.a_load_element(lane, i)
        return self.origin(group)[0] + tile * self.tile + row, k0 + k

    def b_fragment_element(self, group, lane, tile, i, k0):
        """(k, col) in the gemm's B, as `a_fragment_element` for the group's columns."""
        k, col = self.b_load_element(lane, i)
        return k0 + k, self.origin(group)[1] + tile * self.tile + col

    def accumulator_fragment(self, name: str) -> Fragment:
        """C's register layout: thread `g * lanes + l` holds, for each tile (a, b) of group g
        and each i, element `accumulator_element(l, i)` of that tile in
        `accumulator_slot(a, b, i)`."""
        tn, e, lanes, tile = self.tiles_n, self.acc_elems, self.lanes, self.tile

        def element_of(thread, slot):
            group, lane = thread // lanes, thread % lanes
            row0, col0 = self.origin(group)
            row, col = self.accumulator_element(lane, slot % e)
            return [row0 + (slot // (e * tn)) * tile + row, col0 + ((slot // e) % tn) * tile + col]

        return Fragment((self.m, self.n), self.threads, self.tiles_m * tn * e, element_of, name)

    def a_operand_fragment(self, name: str) -> Fragment:
        """A (M x K) held in registers (the rs form): the groups of a row block hold its rows
        (replicated over the groups along N); slot `a_register_slot(tile, kk, i)` of lane l
        holds row `tile * tile_size + r` of the group's rows and column `kk * k_tile + c`,
        (r, c) = `a_operand_element(l, i)`."""
        e, steps, lanes, tile, k_tile = self.operand_elems, self.k_steps, self.lanes, self.tile, self.k_tile

        def element_of(thread, slot):
            group, lane = thread // lanes, thread % lanes
            row0 = self.origin(group)[0]
            i, kk, tile_index = slot % e, (slot // e) % steps, slot // (e * steps)
            row, col = self.a_operand_element(lane, i)
            return [row0 + tile_index * tile + row, kk * k_tile + col]

        return Fragment((self.m, self.k), self.threads, self.tiles_m * steps * e, element_of, name)
