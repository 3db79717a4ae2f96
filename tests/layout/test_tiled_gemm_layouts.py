"""`TiledGemmPlan` and `split_tiles`: the layouts of a gemm on square matrix instructions,
checked on a toy instruction (4x4 tiles, 8 lanes, 2 elements per lane) with ints."""
from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import pytest

from tilelang_core.layout import TiledGemmPlan, split_tiles


def _toy_element(lane, i):
    """Lane l holds row l // 2, columns 2 * (l % 2) + i of a 4x4 tile (any operand)."""
    return lane // 2, 2 * (lane % 2) + i


@dataclass(frozen=True)
class ToyPlan(TiledGemmPlan):
    m: int
    n: int
    k: int
    groups_m: int
    groups_n: int
    a_registers: bool = False

    tile = k_tile = 4
    lanes = 8
    acc_elems = operand_elems = 2
    in_dtype, acc_dtype = "float16", "float32"
    accumulator_name = "toy.C"
    accumulator_element = a_operand_element = a_load_element = b_load_element = staticmethod(_toy_element)

    def accumulator_layout(self):
        return self.accumulator_fragment(f"toy.C[{self.groups_m}x{self.groups_n}]")

    def a_operand_layout(self):
        return self.a_operand_fragment(f"toy.A[{self.groups_m}x{self.groups_n}]")


def test_split_tiles_follows_the_policy():
    assert split_tiles(8, 8, 4, 0) == (2, 2)  # Square
    assert split_tiles(8, 8, 4, 1) == (4, 1)  # FullRow: groups stacked along M
    assert split_tiles(8, 8, 4, 2) == (1, 4)  # FullCol
    assert split_tiles(4, 1, 2, 0) == (2, 1)  # the only even split
    assert split_tiles(1, 1, 2, 0) is None  # one tile cannot feed two groups


def test_geometry_follows_the_split():
    plan = ToyPlan(32, 16, 12, 2, 2)
    assert (plan.tiles_m, plan.tiles_n, plan.k_steps, plan.threads) == (4, 2, 3, 32)
    assert plan.origin(0) == (0, 0) and plan.origin(1) == (16, 0) and plan.origin(2) == (0, 8)
    assert plan.accumulator_slot(1, 1, 1) == (1 * 2 + 1) * 2 + 1
    assert plan.a_register_slot(2, 1, 1) == (2 * 3 + 1) * 2 + 1


@pytest.mark.parametrize("shape", [(32, 16, 2, 2), (16, 32, 4, 1), (8, 8, 1, 1)])
def test_accumulator_layout_holds_each_element_of_c_once(shape):
    m, n, gm, gn = shape
    plan = ToyPlan(m, n, 8, gm, gn)
    layout = plan.accumulator_layout()
    layout.check()
    assert layout.replicate == 1 and layout.shape == (m, n) and layout.slots == plan.tiles_m * plan.tiles_n * 2


def test_accumulator_slots_hold_the_tile_elements_the_plan_names():
    plan = ToyPlan(32, 16, 8, 2, 2)
    layout = plan.accumulator_layout()
    for group, lane, tm, tn, i in itertools.product(range(4), range(8), range(4), range(2), range(2)):
        row0, col0 = plan.origin(group)
        row, col = _toy_element(lane, i)
        held = layout.element_of(group * 8 + lane, plan.accumulator_slot(tm, tn, i))
        assert tuple(int(x) for x in held) == (row0 + tm * 4 + row, col0 + tn * 4 + col)


def test_a_operand_is_replicated_over_the_groups_along_n():
    plan = ToyPlan(16, 16, 8, 2, 2, a_registers=True)
    layout = plan.a_operand_layout()
    assert layout.shape == (16, 8) and layout.replicate == 2
    table = layout.table()
    assert np.array_equal(table[0:8], table[16:24])  # group 0 and group 2 share the rows 0..7
    assert tuple(int(x) for x in layout.element_of(8 + 3, plan.a_register_slot(1, 1, 1))) == (8 + 4 + 1, 4 + 3)


def test_accumulator_feeds_the_next_gemm_from_registers():
    """With groups stacked along M, one gemm's accumulator (M x N) is the next gemm's register
    A (M x K, K = N) slot for slot, when the instruction's lanes hold A as they hold C."""
    first = ToyPlan(32, 16, 8, 4, 1)
    second = ToyPlan(32, 8, 16, 4, 1, a_registers=True)
    assert first.accumulator_layout() == second.a_operand_layout()
    assert ToyPlan(32, 16, 8, 2, 2).accumulator_layout() != second.a_operand_layout()
