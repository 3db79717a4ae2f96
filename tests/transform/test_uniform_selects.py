"""`split_uniform_selects`: a T.Parallel nest storing `if_then_else(affine comparison, a, b)` runs
the store of `a` (or `b`) alone where the whole tile is on one side of the comparison, tested
once per entry; results do not change (CPU run against NumPy, tiles on, across and off the
diagonal), and nests it cannot prove anything for stay as they were."""
from __future__ import annotations

import numpy as np
import pytest
from tvm import tirx as tir

import tilelang_core
from tilelang_core import language as T
from tilelang_core.transform import walk
from tilelang_core.transform.pipeline import PassContext
from tilelang_core.transform.uniform_selects import split_uniform_selects


def causal_mask(seq_q, seq_kv, bm=32, bn=16):
    """FlashAttention's causal mask as TileLang writes it, one (bm, bn) tile per (bx, k)."""
    past = seq_kv - seq_q

    @T.prim_func
    def main(Out: T.Tensor((seq_q, seq_kv), "float32")):
        with T.Kernel(T.ceildiv(seq_q, bm), threads=64) as bx:
            acc = T.alloc_fragment((bm, bn), "float32")
            for k in T.serial(T.ceildiv(seq_kv, bn)):
                for i, j in T.Parallel(bm, bn):
                    q_idx = bx * bm + i + past
                    k_idx = k * bn + j
                    acc[i, j] = T.if_then_else(q_idx >= k_idx, 1.0, -1.0)
                T.copy(acc, Out[bx * bm, k * bn])
    return main


def _splits(func) -> list:
    found = []

    def visit(node):
        if isinstance(node, tir.IfThenElse) and isinstance(node.then_case, tir.For) \
                and node.then_case.kind == tir.ForKind.PARALLEL:
            found.append(node)

    walk(func.body, visit, (tir.IfThenElse,))
    return found


def test_mask_nest_splits_on_values_fixed_outside_it():
    out = split_uniform_selects(causal_mask(64, 96), PassContext(target=None, facts={}))
    outer = [s for s in _splits(out) if isinstance(s.else_case, tir.IfThenElse)]
    assert len(outer) == 1
    names = set()
    walk(outer[0].condition, lambda v: names.add(v.name), (tir.Var,))
    assert names <= {"bx", "k"} and names  # uniform across the block: no index of the nest


@pytest.mark.parametrize("seq_q,seq_kv", [(64, 64), (64, 96), (40, 72)])
def test_mask_runs_the_same_on_the_cpu(seq_q, seq_kv):
    kernel = tilelang_core.compile(causal_mask(seq_q, seq_kv), target="cpu")
    out = np.full((seq_q, seq_kv), np.nan, np.float32)
    kernel(out)
    past = seq_kv - seq_q
    ref = np.where(np.arange(seq_q)[:, None] + past >= np.arange(seq_kv)[None, :], 1.0, -1.0)
    np.testing.assert_array_equal(out, ref)


def test_nest_over_a_non_affine_or_index_only_condition_stays():
    @T.prim_func
    def main(Out: T.Tensor((32, 32), "float32")):
        with T.Kernel(1, threads=32) as bx:
            acc = T.alloc_fragment((32, 32), "float32")
            for i, j in T.Parallel(32, 32):
                acc[i, j] = T.if_then_else(i * j >= 4, 1.0, 0.0)  # not linear in the indices
            for i, j in T.Parallel(32, 32):
                acc[i, j] = T.if_then_else(i >= j, acc[i, j], 0.0)  # the indices only: nothing uniform
            T.copy(acc, Out[0, 0])

    out = split_uniform_selects(main, PassContext(target=None, facts={}))
    assert not _splits(out)
