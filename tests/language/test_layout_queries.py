"""TileLang's Layout / Fragment queries: shapes, the linearized forward index over shared input
variables, `expand`'s edge cases, Fragment equality and the default register slot."""
from __future__ import annotations

import pytest
from tvm.sym import Analyzer

from tilelang_core import language as T


def test_layout_shapes_and_linearized_index_compare_across_layouts():
    transposed = T.Layout([2, 32], lambda i, j: [j, i])
    assert transposed.get_input_shape() == [2, 32] and transposed.get_output_shape() == [32, 2]
    expected = T.Layout([2, 32], lambda i, j: j * 2 + i)
    assert Analyzer().can_prove_equal(transposed.get_linearized_forward_index(),
                                      expected.get_linearized_forward_index())
    other = T.Layout([2, 32], lambda i, j: i * 32 + j)
    assert not Analyzer().can_prove_equal(transposed.get_linearized_forward_index(),
                                          other.get_linearized_forward_index())


def test_layout_expand_edge_cases():
    base = T.Layout([16, 128], lambda j, k: j * 128 + k)
    assert base.expand([]) is base
    assert base.expand(4).get_output_shape() == [4, 2048]
    with pytest.raises(ValueError, match="positive"):
        base.expand([-1])
    with pytest.raises(TypeError, match="an int or a list of ints"):
        base.expand("4")


def test_fragment_from_a_thread_function_alone_and_equality():
    frag = T.Fragment([32, 4], forward_thread_fn=lambda i, j: i)  # slot: j, the index it does not read
    same = T.Fragment([32, 4], forward_thread_fn=lambda i, j: i, forward_index_fn=lambda i, j: j)
    assert frag.is_equal(same) and frag.extents() == (32, 4)
    assert not frag.is_equal(T.Fragment([32, 4], forward_thread_fn=lambda i, j: 31 - i,
                                         forward_index_fn=lambda i, j: j))
    replicated = T.Fragment([32, 4], forward_thread_fn=lambda i, j, rep: i * 4 + rep, replicate=4)
    assert not replicated.is_equal(T.Fragment([32, 4], forward_thread_fn=lambda i, j, rep: i * 4 + rep,
                                              replicate=2))
    with pytest.raises(ValueError, match="share a thread and a register slot.*give forward_index_fn"):
        T.Fragment([32, 4], forward_thread_fn=lambda i, j: j * 4 + i)
