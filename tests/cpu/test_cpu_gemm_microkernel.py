"""tl_cpu_gemm.h: the register-blocked fp32 micro-kernel, alone (all transpose variants, edge
sizes) and called from a generated kernel on block-local tiles."""
from __future__ import annotations

import ctypes
import textwrap

import numpy as np
import pytest
from tvm.script import tirx as T

WRAPPER = textwrap.dedent("""\
    #include "tl_cpu.h"
    #include "tl_cpu_gemm.h"
    TL_EXPORT int32_t run(int ta, int tb, int M, int N, int K, const float* A, int lda,
                          const float* B, int ldb, float* C, int ldc) {
      tl_cpu_gemm_f32(ta, tb, M, N, K, A, lda, B, ldb, C, ldc);
      return 0;
    }
""")


@pytest.fixture(scope="module")
def gemm_library(tmp_path_factory):
    from tilelang_cpu.compile import compile_source, find_compiler

    if find_compiler() is None:
        pytest.skip("no C compiler")
    path = tmp_path_factory.mktemp("gemm") / "gemm.so"
    path.write_bytes(compile_source(WRAPPER, name="gemm"))
    lib = ctypes.CDLL(str(path))
    lib.run.argtypes = [ctypes.c_int] * 5 + [ctypes.c_void_p, ctypes.c_int] * 3
    lib.run.restype = ctypes.c_int32
    return lib


@pytest.mark.parametrize("trans_a", [0, 1])
@pytest.mark.parametrize("trans_b", [0, 1])
@pytest.mark.parametrize("mnk", [(64, 64, 64), (37, 45, 70), (1, 1, 1), (8, 32, 300), (17, 96, 5)])
def test_variants_and_edges(gemm_library, trans_a, trans_b, mnk):
    m, n, k = mnk
    rng = np.random.default_rng(m * 1000 + n * 10 + k)
    a = rng.uniform(-1, 1, (k, m) if trans_a else (m, k)).astype("float32")
    b = rng.uniform(-1, 1, (n, k) if trans_b else (k, n)).astype("float32")
    # C is a window of a wider array: ldc > N
    c_full = rng.uniform(-1, 1, (m, n + 3)).astype("float32")
    c = c_full[:, :n]
    ref = c.astype(np.float64) + (a.T if trans_a else a).astype(np.float64) @ (b.T if trans_b else b)
    edge = c_full[:, n:].copy()
    gemm_library.run(trans_a, trans_b, m, n, k, a.ctypes.data, a.shape[1], b.ctypes.data, b.shape[1],
                     c_full.ctypes.data, n + 3)
    np.testing.assert_allclose(c, ref, rtol=1e-5, atol=1e-5 * k)
    np.testing.assert_array_equal(c_full[:, n:], edge)  # nothing outside C is touched


GM, GN, GK = 200, 136, 150
BM, BN, BK = 64, 64, 32


@T.prim_func
def gemm_micro(A: T.Buffer((GM, GK), "float32"), B: T.Buffer((GK, GN), "float32"),
               C: T.Buffer((GM, GN), "float32")):
    bx = T.launch_thread("blockIdx.x", (GN + BN - 1) // BN)
    by = T.launch_thread("blockIdx.y", (GM + BM - 1) // BM)
    A_shared = T.alloc_buffer((BM, BK), "float32", scope="shared.dyn")
    B_shared = T.alloc_buffer((BK, BN), "float32", scope="shared.dyn")
    C_local = T.alloc_buffer((BM, BN), "float32", scope="local.fragment")
    for i in range(BM):
        for j in T.vectorized(BN):
            C_local[i, j] = T.float32(0)
    for ko in range((GK + BK - 1) // BK):
        for i in range(BM):
            for k in T.vectorized(BK):
                A_shared[i, k] = T.if_then_else(
                    by * BM + i < GM and ko * BK + k < GK, A[by * BM + i, ko * BK + k], T.float32(0))
        for k in range(BK):
            for j in T.vectorized(BN):
                B_shared[k, j] = T.if_then_else(
                    ko * BK + k < GK and bx * BN + j < GN, B[ko * BK + k, bx * BN + j], T.float32(0))
        T.evaluate(T.call_extern("void", "tl_cpu_gemm_f32_nn", BM, BN, BK, T.address_of(A_shared[0, 0]), BK,
                                 T.address_of(B_shared[0, 0]), BN, T.address_of(C_local[0, 0]), BN))
    for i in range(BM):
        for j in T.vectorized(BN):
            if by * BM + i < GM and bx * BN + j < GN:
                C[by * BM + i, bx * BN + j] = C_local[i, j]


def test_generated_kernel_calls_the_micro_kernel(build, rng, poisoned):
    k = build(gemm_micro)
    assert '#include "tl_cpu_gemm.h"' in k.source
    assert "tl_cpu_gemm_f32_nn(64, 64, 32, &A_shared[0], 32, &B_shared[0], 64, &C_local[0], 64);" in k.source
    a = rng.uniform(-1, 1, (GM, GK)).astype("float32")
    b = rng.uniform(-1, 1, (GK, GN)).astype("float32")
    c = poisoned((GM, GN))
    k(a, b, c)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
