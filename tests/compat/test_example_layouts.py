"""The layout names TileLang's plot_layout examples use: the bank swizzles of
`tilelang.layout`, `T.Fragment.repeat` / `replicate`, the mma.sync and MFMA operand register
layouts and `get_mma_micro_size` of the CUDA and HIP compat packages, and the 2:4 sparsity
factors of `tilelang.cuda.intrinsics.sparse_layout`."""
from __future__ import annotations

import numpy as np
import pytest

from tilelang_core import language as T
from tilelang_core.layout import (make_full_bank_swizzled_layout, make_half_bank_swizzled_layout,
                                  make_quarter_bank_swizzled_layout)
from tilelang_core.tools.plot import _evaluate


def _places(layout, shape):
    return _evaluate(layout.index_map, shape)


@pytest.mark.parametrize("make, width", [(make_full_bank_swizzled_layout, 8), (make_half_bank_swizzled_layout, 4),
                                         (make_quarter_bank_swizzled_layout, 2)])
def test_bank_swizzles_move_16_byte_vectors_by_xor(make, width):
    rows, cols = 8, 8 * width  # float16: 8 elements a vector, one chunk of `width` vectors a row
    places = _places(make(rows, cols, 16), (rows, cols))
    flat = places[..., 2] + places[..., 1] * 64 * width  # one chunk: tc is 0
    assert len(np.unique(flat)) == rows * cols  # a bijection
    shift = {8: 1, 4: 2, 2: 4}[width]
    for i in range(rows):
        vector = (flat[i, ::8] - i * width * 8) // 8  # where each vector of row i went
        assert list(vector) == [c ^ (i // shift) for c in range(width)], (i, list(vector))
        assert all((flat[i, v * 8:(v + 1) * 8] - flat[i, v * 8] == np.arange(8)).all() for v in range(width))


def test_bank_swizzle_of_a_buffer_keeps_leading_dims_and_checks_the_shape():
    from tvm import tirx

    buf = tirx.decl_buffer((2, 8, 64), "float16", name="S", scope="shared")
    layout = make_full_bank_swizzled_layout(buf)
    places = _places(layout, (2, 8, 64))
    assert places.shape[-1] == 4 and (places[1, ..., 0] == 1).all()  # the leading dim passes through
    assert repr(layout).startswith("Layout(shape=[2, 8, 64], (")
    assert (places[0, ..., 1:] == _places(make_full_bank_swizzled_layout(8, 64, 16), (8, 64))).all()
    with pytest.raises(ValueError, match="multiple of 8"):
        make_full_bank_swizzled_layout(6, 64, 16)
    with pytest.raises(ValueError, match="a row a multiple of 64 elements"):
        make_full_bank_swizzled_layout(8, 32, 16)
    with pytest.raises(TypeError, match="rows, cols, element_bits"):
        make_half_bank_swizzled_layout(8, 32)


def _mma_a_base():
    from tilelang_cuda.compat.intrinsics.layout.mma_layout import shared_16x16_to_mma_32x8_layout_sr_a as a

    return T.Fragment([16, 16], forward_thread_fn=lambda i, j: a(i, j)[0], forward_index_fn=lambda i, j: a(i, j)[1])


def test_fragment_repeat_and_replicate():
    base = _mma_a_base()
    assert base.extents() == (32, 8)
    on_threads = base.repeat([2, 1], repeat_on_thread=True)
    assert on_threads.shape == (32, 16) and on_threads.extents() == (64, 8)
    placed = _evaluate(on_threads.index_map, (32, 16), (0,))
    assert list(placed[16 + 9, 3]) == [32 + 5, 3]  # the second copy: threads 32 and up
    in_slots = base.repeat([2, 2], repeat_on_thread=False, lower_dim_first=False)
    placed = _evaluate(in_slots.index_map, (32, 32), (0,))
    # copy (1, 1) is number 1 + 2 * 1 with the first dim counting fastest: slots 24 and up
    assert list(placed[16 + 9, 16 + 3]) == [5, 3 + 8 * 3]
    twice = on_threads.replicate(2)
    assert twice.replicate_size == 2 and twice.extents() == (128, 8)
    assert list(_evaluate(twice.index_map, (32, 16), (1,))[9, 3]) == [64 + 5, 3]  # replica 1
    assert "threads=128" in repr(twice)
    with pytest.raises(ValueError, match="2 repeats for a 1-D"):
        T.Fragment([4], forward_fn=lambda i: [i, 0]).repeat([2, 2])  # slot 0: an int, accepted


def test_mma_operand_layouts_follow_the_ptx_fragments():
    from tilelang_cuda.compat.intrinsics.layout import mma_layout as m
    from tilelang_cuda.compat.intrinsics.layout.utils import get_mma_micro_size

    for k in (8, 16, 32):
        for operand in "ab":
            layout = getattr(m, f"shared_16x{k}_to_mma_32x{k // 2}_layout_sr_{operand}")
            swapped = getattr(m, f"shared_16x{k}_to_mma_32x{k // 2}_layout_rs_{operand}")
            places = {layout(i, j) for i in range(16) for j in range(k)}
            assert places == {(lane, slot) for lane in range(32) for slot in range(k // 2)}
            assert all(swapped(j, i) == layout(i, j) for i in range(16) for j in range(k))
    # A of m16n8k16: lane 4g + t holds rows g, g + 8 at k 2t, 2t + 1 and k + 8 (PTX ISA)
    a = m.shared_16x16_to_mma_32x8_layout_sr_a
    assert [a(3, 5), a(11, 5), a(3, 13)] == [(14, 1), (14, 3), (14, 5)]
    assert get_mma_micro_size("int8") == (16, 16, 32) and get_mma_micro_size(T.float32) == (16, 16, 8)
    with pytest.raises(ValueError, match="no 64-bit operands"):
        get_mma_micro_size("float64")


def test_mfma_operand_layouts_and_missing_emitters():
    from tilelang_hip.compat.intrinsics import get_mma_micro_size, mfma_layout as m

    for name, (rows, cols, slots) in {"shared_16x4_to_local_64x1_layout_A": (16, 4, 1),
                                      "shared_16x16_to_local_64x4_layout_A": (16, 16, 4),
                                      "shared_16x16_to_local_64x4_layout_B": (16, 16, 4),
                                      "shared_16x16_to_local_64x4_layout_C": (16, 16, 4),
                                      "shared_16x32_to_local_64x8_layout_A": (16, 32, 8),
                                      "shared_16x64_to_local_64x16_layout_A": (16, 64, 16)}.items():
        layout = getattr(m, name)
        places = {layout(i, j) for i in range(rows) for j in range(cols)}
        assert places == {(lane, s) for lane in range(64) for s in range(slots)}, name
    assert m.shared_16x16_to_local_64x4_layout_A(3, 9) == (35, 1)
    assert get_mma_micro_size(T.float16) == (16, 16, 16)
    with pytest.raises(ImportError, match="write the GEMM with T.gemm"):
        from tilelang_hip.compat.intrinsics import MatrixCoreIntrinEmitter  # noqa: F401


def test_sparse_layout_factors():
    from tilelang_cuda.compat.intrinsics.sparse_layout import GROUP_CONFIG, get_e_factor, get_e_replicate_factor

    assert get_e_factor(T.float16, T.int16) == 16 and get_e_factor(T.int8, T.int32) == 32
    assert get_e_factor(T.float32, T.int16) == 8 and GROUP_CONFIG[T.float32] == (1, 2)
    assert (get_e_replicate_factor(T.int8), get_e_replicate_factor(T.bfloat16)) == (1, 2)
    with pytest.raises(ValueError, match="no layout for operand dtype float64"):
        get_e_factor(T.float64, T.int16)
