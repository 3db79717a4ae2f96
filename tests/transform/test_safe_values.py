"""T.annotate_safe_value: a guarded read outside the annotated tensor yields its value (element
loads and T.copy), CPU runs against NumPy, and the CUDA copy that stops filling zeros."""
import numpy as np
import pytest

import tilelang_core as tilelang
from tilelang_core import language as T

M, N, BM, BN = 40, 24, 16, 8
PAD = 7.0


def shifted(use_copy: bool, annotate: bool = True):
    """B[i, j] = A[i - 3, j] (rows 0..2 read above A) over a ragged grid (40 rows, 16-row tiles)."""

    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, BN), T.ceildiv(M, BM), threads=32) as (bx, by):
            S = T.alloc_shared((BM, BN), "float32")
            if annotate:
                T.annotate_safe_value({A: PAD})
            if use_copy:
                T.copy(A[by * BM - 3, bx * BN], S)
            else:
                for i, j in T.Parallel(BM, BN):
                    S[i, j] = A[by * BM + i - 3, bx * BN + j]
            T.copy(S, B[by * BM, bx * BN])

    return main


def _expected(a: np.ndarray, pad: float) -> np.ndarray:
    out = np.full_like(a, pad)
    out[3:] = a[:-3]
    return out


@pytest.mark.parametrize("use_copy", [False, True])
def test_reads_above_the_tensor_yield_the_safe_value_on_cpu(use_copy):
    a = np.random.default_rng(3).standard_normal((M, N)).astype(np.float32)
    b = np.zeros_like(a)
    tilelang.compile(shifted(use_copy), target="cpu")(a, b)
    np.testing.assert_array_equal(b, _expected(a, PAD))


def test_without_the_annotation_they_read_zero():
    a = np.random.default_rng(4).standard_normal((M, N)).astype(np.float32)
    b = np.ones_like(a)
    tilelang.compile(shifted(True, annotate=False), target="cpu")(a, b)
    np.testing.assert_array_equal(b, _expected(a, 0.0))


def test_the_cuda_copy_reads_the_safe_value_not_a_zero_fill():
    pytest.importorskip("tilelang_cuda")
    source = tilelang.compile(shifted(True), target="cuda/sm_80", cache=False).get_kernel_source()
    assert "tl::cp_async" not in source and ": 7.0f;" in source


def test_keys_must_be_tensors():
    with pytest.raises(Exception, match="keys must be global tensors"):
        @T.prim_func
        def main(A: T.Tensor((4,), "float32")):
            with T.Kernel(1, threads=4):
                S = T.alloc_shared((4,), "float32")
                T.annotate_safe_value({S: 1.0})
