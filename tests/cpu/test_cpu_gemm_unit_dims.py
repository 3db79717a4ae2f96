"""`T.gemm` whose M, N or K is 1 (a single row of A, a single column of B, a rank-1 update)
on the portable lowering: the operands' matrices are their last two dims whatever their
extents. A (1, K) row of A used to be indexed as if its one dim were the K dim (wrong results
at M = 1)."""
from __future__ import annotations

import numpy as np
import pytest

import tilelang_core
from tilelang_core import language as T


def _gemm(M, N, K, trans_a=False, trans_b=False, dtype="float16"):
    a_shape, b_shape = ((K, M) if trans_a else (M, K)), ((N, K) if trans_b else (K, N))

    @T.prim_func
    def main(A: T.Tensor(a_shape, dtype), B: T.Tensor(b_shape, dtype), C: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=1) as bx:
            a = T.alloc_shared(a_shape, dtype)
            b = T.alloc_shared(b_shape, dtype)
            c = T.alloc_fragment((M, N), "float32")
            T.copy(A, a)
            T.copy(B, b)
            T.clear(c)
            T.gemm(a, b, c, transpose_A=trans_a, transpose_B=trans_b)
            T.copy(c, C)

    return main


@pytest.mark.parametrize("dtype", ["float16", "float32"])  # float16: the portable lowering; float32: the CPU's own
@pytest.mark.parametrize("M, N, K, trans_a, trans_b", [
    (1, 16, 16, False, False), (1, 16, 16, True, False), (16, 1, 16, False, False), (16, 1, 16, False, True),
    (16, 16, 1, False, False), (1, 1, 8, False, True), (2, 16, 16, False, False),
])
def test_gemm_with_a_unit_dimension(M, N, K, trans_a, trans_b, dtype):
    rng = np.random.default_rng()
    a = rng.standard_normal((K, M) if trans_a else (M, K)).astype(dtype)
    b = rng.standard_normal((N, K) if trans_b else (K, N)).astype(dtype)
    kernel = tilelang_core.compile(_gemm(M, N, K, trans_a, trans_b, dtype), target="cpu", cache=False)
    c = np.full((M, N), np.nan, "float32")
    kernel(a, b, c)
    ref = (a.T if trans_a else a).astype("float64") @ (b.T if trans_b else b).astype("float64")
    np.testing.assert_allclose(c, ref, rtol=1e-5, atol=1e-5)
