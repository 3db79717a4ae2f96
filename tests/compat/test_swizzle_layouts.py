"""TileLang's named shared layouts (`tilelang.layout.swizzle`): the bank swizzles are
permutations with the XOR of 16-byte vectors that TMA/wgmma's swizzle modes use; linear and
8x8 fragment layouts; `Layout.expand`/`is_equal`; `SwizzleMode`'s facts."""
from __future__ import annotations

import pytest
from tvm import tirx

from tilelang_core.language import swizzle


def _offsets(layout, rows, cols):
    return {(i, j): tuple(int(v) for v in layout._forward_fn(i, j)) for i in range(rows) for j in range(cols)}


@pytest.mark.parametrize("make, atom", [(swizzle.make_full_bank_swizzled_layout, 8),
                                        (swizzle.make_half_bank_swizzled_layout, 4),
                                        (swizzle.make_quarter_bank_swizzled_layout, 2)])
def test_bank_swizzles_permute_16_byte_vectors(make, atom):
    buf = tirx.decl_buffer((16, 64), "float16", name="A", scope="shared")
    placed = _offsets(make(buf), 16, 64)
    assert len(set(placed.values())) == 16 * 64  # a bijection onto the physical buffer
    # vector 0 of row r (r < 8) moves to vector r // (8 // atom); element 3 of it stays element 3
    for r in range(8):
        column_atom, group, offset = placed[(r, 3)]
        assert (column_atom, group) == (0, 0)
        assert offset == ((0 ^ (r // (8 // atom))) + r * atom) * 8 + 3
    assert placed[(8, 0)][1] == 1  # row 8 starts the next group of 8


def test_bank_swizzle_refuses_partial_atoms_and_expands():
    with pytest.raises(ValueError, match="swizzle atoms"):
        swizzle.make_full_bank_swizzled_layout(tirx.decl_buffer((8, 32), "float16", name="B"))  # 64-byte rows
    two = swizzle.make_half_bank_swizzled_layout(tirx.decl_buffer((8, 64), "float16", name="C"))
    three = swizzle.make_half_bank_swizzled_layout(tirx.decl_buffer((2, 8, 64), "float16", name="D"))
    assert three.is_equal(two.expand([2]))
    assert not three.is_equal(swizzle.make_full_bank_swizzled_layout(
        tirx.decl_buffer((2, 8, 64), "float16", name="E")))


def test_linear_layout_and_8x8_fragments():
    linear = swizzle.make_linear_layout(tirx.decl_buffer((4, 5, 6), "float32", name="F"))
    assert [int(v) for v in linear._forward_fn(1, 2, 3)] == [1 * 30 + 2 * 6 + 3]
    assert swizzle.make_gemm_fragment_8x8().shape == (8, 8)
    assert swizzle.make_gemm_fragment_8x8_transposed().index_map is not None


def test_swizzle_mode_facts():
    mode = swizzle.SwizzleMode.SWIZZLE_128B
    assert mode.is_swizzle_128b() and not mode.is_none()
    assert (mode.swizzle_byte_size(), mode.swizzle_atom_size(), mode.wgmma_layout_type(),
            mode.smem_alignment()) == (128, 8, 1, 1024)
    assert swizzle.SwizzleMode.NONE.swizzle_atom_size() == 1
    assert swizzle.SwizzleMode.from_ordinal(1) is swizzle.SwizzleMode.SWIZZLE_32B
