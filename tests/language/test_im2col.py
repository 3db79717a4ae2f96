"""`T.im2col` and tensor views in a kernel body (`T.Tensor(shape, dtype, A.data)`): TileLang's
convolution example, eager style, against a direct convolution in float64 (CPU)."""
from __future__ import annotations

import numpy as np
import pytest

import tilelang_core as tilelang
import tilelang_core.language as T


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TILELANG_CACHE_DIR", str(tmp_path / "cache"))


@tilelang.jit(target="cpu")
def convolution(data, kernel, S, D, P, block_M, block_N, block_K, threads, dtype=T.float32, accum_dtype=T.float32):
    N, C, H, W, F, K = T.const("N, C, H, W, F, K")
    KH, KW = K, K
    OH = (H + 2 * P - D * (K - 1) - 1) // S + 1
    OW = (W + 2 * P - D * (K - 1) - 1) // S + 1
    data: T.Tensor((N, H, W, C), dtype)
    kernel: T.Tensor((KH, KW, C, F), dtype)
    out = T.empty((N, OH, OW, F), dtype)
    with T.Kernel(T.ceildiv(F, block_N), T.ceildiv(N * OH * OW, block_M), threads=threads) as (bx, by):
        data_shared = T.alloc_shared((block_M, block_K), dtype)
        kernel_shared = T.alloc_shared((block_K, block_N), dtype)
        out_local = T.alloc_fragment((block_M, block_N), accum_dtype)
        kernel_flat = T.Tensor((KH * KW * C, F), dtype, kernel.data)
        out_flat = T.Tensor((N * OH * OW, F), dtype, out.data)
        T.clear(out_local)
        for k_iter in T.Pipelined(T.ceildiv(KH * KW * C, block_K), num_stages=2):
            T.im2col(data, data_shared, by, k_iter, KH, S, D, P)
            T.copy(kernel_flat[k_iter * block_K, bx * block_N], kernel_shared)
            T.gemm(data_shared, kernel_shared, out_local)
        T.copy(out_local, out_flat[by * block_M, bx * block_N])
    return out

def ref(x, w, s, d, p):
    n, h, wd, c = x.shape; kh, kw, _, f = w.shape
    oh = (h + 2*p - d*(kh-1) - 1)//s + 1; ow = (wd + 2*p - d*(kw-1) - 1)//s + 1
    xp = np.pad(x, ((0,0),(p,p),(p,p),(0,0))).astype(np.float64)
    out = np.zeros((n, oh, ow, f))
    for i in range(kh):
        for j in range(kw):
            patch = xp[:, i*d: i*d + s*(oh-1)+1: s, j*d: j*d + s*(ow-1)+1: s, :]
            out += patch @ w[i, j]
    return out

@pytest.mark.parametrize("stride, dilation, pad", [(1, 1, 1), (2, 1, 0), (1, 2, 2)])
def test_convolution_through_im2col_matches_a_direct_convolution(stride, dilation, pad):
    rng = np.random.default_rng()
    x = rng.uniform(-1, 1, (2, 9, 9, 8)).astype(np.float32)
    w = rng.uniform(-1, 1, (3, 3, 8, 16)).astype(np.float32)
    y = convolution(x, w, stride, dilation, pad, 32, 16, 16, 64)
    expected = ref(x, w, stride, dilation, pad)
    assert y.shape == expected.shape
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-5)


def test_im2col_names_the_shapes_it_needs():
    with pytest.raises(Exception, match=r"img must be \(N, H, W, C\) and col \(block_M, block_K\)"):
        @T.prim_func
        def bad(A: T.Tensor((4, 4), T.float32)):
            with T.Kernel(1, threads=32):
                s = T.alloc_shared((4, 4), T.float32)
                T.im2col(A, s, 0, 0, 3, 1, 1, 1)
