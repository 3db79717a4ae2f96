"""The portable lowering of T.transpose (tilelang_core.transform.portable.lower_transpose), run
on the CPU backend against NumPy: every rank, regions, guards at both buffers' edges, scopes
and a dtype change."""
from __future__ import annotations

import numpy as np
import pytest
from tvm import tirx as tir

import tilelang_core as tilelang
from tilelang_core import language as T
from tilelang_core.ir import collect_tile_ops
from tilelang_core.transform import portable


@pytest.mark.parametrize("shape", [(5, 7), (2, 3, 4), (2, 1, 3, 5), (3, 4, 1)])
def test_transpose_swaps_the_last_two_axes(shape):
    out_shape = (*shape[:-2], shape[-1], shape[-2])

    @T.prim_func
    def main(A: T.Tensor(shape, "float32"), B: T.Tensor(out_shape, "float32")):
        with T.Kernel(1) as bx:
            T.transpose(A, B)

    a = np.random.default_rng().standard_normal(shape).astype(np.float32)
    b = np.full(out_shape, np.nan, np.float32)
    tilelang.compile(main, target="cpu")(a, b)
    np.testing.assert_array_equal(b, np.swapaxes(a, -1, -2))


def test_regions_guards_local_buffers_and_a_cast():
    @T.prim_func
    def main(A: T.Tensor((2, 3, 4), "float32"), B: T.Tensor((2, 4, 3), "float32"), C: T.Tensor((2, 1, 3), "float32"),
             D: T.Tensor((6, 4), "float16")):
        with T.Kernel(1) as bx:
            T.transpose(A[0:2, 0:3, 0:4], B[0:2, 0:4, 1:4])  # the last source row falls off B
            T.transpose(A[0:2, 0:3, 4:5], C)                 # reads past A's last axis: zeros
            tile = T.alloc_local((4, 6), "float32")
            for i, j in T.grid(4, 6):
                tile[i, j] = A[1, j % 3, i] * 2
            T.transpose(tile, D)                              # local source, float16 destination

    rng = np.random.default_rng()
    a = rng.standard_normal((2, 3, 4)).astype(np.float32)
    b = np.full((2, 4, 3), -1, np.float32)
    c = np.full((2, 1, 3), np.nan, np.float32)
    d = np.zeros((6, 4), np.float16)
    tilelang.compile(main, target="cpu")(a, b, c, d)
    expected_b = np.full((2, 4, 3), -1, np.float32)
    expected_b[:, :, 1:] = np.swapaxes(a[:, :2, :], -1, -2)
    np.testing.assert_array_equal(b, expected_b)
    np.testing.assert_array_equal(c, np.zeros((2, 1, 3), np.float32))
    tile = np.stack([a[1, j % 3, :] * 2 for j in range(6)])  # tile[i, j] as rows j
    np.testing.assert_array_equal(d, tile.astype(np.float16))


def test_transpose_is_a_parallel_nest_with_guards_only_where_needed():
    @T.prim_func
    def main(A: T.Tensor((4, 4), "float32"), B: T.Tensor((4, 4), "float32")):
        with T.Kernel(1) as bx:
            T.transpose(A, B)
            T.transpose(A[0:4, 1:4], B[1:4, 0:4])
            T.transpose(A[1:4, 0:4], B[0:4, 2:5])

    whole, shifted, past = [portable.lower_portable(op, None) for op in collect_tile_ops(main)]
    for stmt in (whole, shifted, past):
        assert stmt.kind == tir.ForKind.PARALLEL and stmt.body.kind == tir.ForKind.PARALLEL
    assert isinstance(whole.body.body, tir.BufferStore) and isinstance(shifted.body.body, tir.BufferStore)
    assert isinstance(past.body.body, tir.IfThenElse)  # B's column 4 does not exist
