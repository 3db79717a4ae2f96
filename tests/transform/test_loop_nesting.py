"""check_loop_nesting: no T.Pipelined loop and no tile-wide op inside a T.Parallel loop
(TileLang's nested-loop rules); element ops and nested T.Parallel stay allowed."""
from __future__ import annotations

import pytest

from tilelang_core import language as T
from tilelang_core.transform.errors import TileLangCompileError
from tilelang_core.transform.loop_nesting import check_loop_nesting


@T.prim_func
def _gemm_in_parallel(A: T.Tensor((16, 16), "float16"), C: T.Tensor((16, 16), "float32")):
    with T.Kernel(1, threads=128) as _:
        a = T.alloc_shared((16, 16), "float16")
        c = T.alloc_fragment((16, 16), "float32")
        T.copy(A, a)
        T.clear(c)
        for _ in T.Parallel(1):
            T.gemm(a, a, c)
        T.copy(c, C)


@T.prim_func
def _pipeline_in_parallel(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):
    with T.Kernel(1, threads=64) as _:
        for i in T.Parallel(1):
            for k in T.Pipelined(4, num_stages=2):
                B[k * 16 + i] = A[k * 16 + i]


@T.prim_func
def _allowed(A: T.Tensor((16, 16), "float32"), B: T.Tensor((16, 16), "float32")):
    with T.Kernel(1, threads=128) as _:
        for k in T.Pipelined(2, num_stages=2):
            for i in T.Parallel(16):
                for j in T.Parallel(16):
                    T.atomic_add(B[i, j], A[i, j])


def test_tile_op_and_pipeline_inside_parallel_are_refused():
    with pytest.raises(TileLangCompileError, match="T.gemm inside a T.Parallel loop"):
        check_loop_nesting(_gemm_in_parallel)
    with pytest.raises(ValueError, match="T.Pipelined loop inside a T.Parallel loop"):
        check_loop_nesting(_pipeline_in_parallel)


def test_element_ops_and_nested_parallels_pass():
    check_loop_nesting(_allowed)
