"""Generated MSL run on the host (`metal_emulator.py`): the simdgroup GEMM, a FlashAttention
whose P feeds its second gemm from registers, and register reductions over simd shuffles,
against float64 NumPy references on random inputs with poisoned outputs."""
from __future__ import annotations

import numpy as np
import pytest

import tilelang_core as tilelang
from tilelang_core import language as T

from .metal_emulator import emulate, host_compiler
from .programs import gemm

pytestmark = pytest.mark.skipif(host_compiler() is None, reason="no clang++ to build the host emulation "
                                "(scripts/install_hip_toolchain.sh installs clang-19)")


@pytest.fixture(scope="module")
def emu_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("metal-emu")


def build(func, arch="apple-m2"):
    return tilelang.compile(func, target=f"metal/{arch}", cache=False)


@pytest.mark.parametrize("dtype, trans_b, threads", [("float16", False, 128), ("float16", True, 64),
                                                     ("float32", False, 128)])
def test_emulated_gemm(dtype, trans_b, threads, emu_dir):
    M, N, K = 64, 96, 48
    kernel = build(gemm(M, N, K, bM=32, bN=32, bK=16, dtype=dtype, trans_b=trans_b, threads=threads))
    assert "tl_simdgroup_mma(" in kernel.get_kernel_source()
    rng = np.random.default_rng(7)
    a = rng.standard_normal((M, K)).astype(dtype)
    b = rng.standard_normal((N, K) if trans_b else (K, N)).astype(dtype)
    c = np.full((M, N), np.nan, np.float32)
    emulate(kernel, emu_dir)(a, b, c)
    ref = a.astype(np.float64) @ (b.T if trans_b else b).astype(np.float64)
    np.testing.assert_allclose(c, ref, rtol=1e-4, atol=1e-4)


def attention_reference(q, k, v, causal):
    q, k, v = (x.astype(np.float64).transpose(0, 2, 1, 3) for x in (q, k, v))
    s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(q.shape[-1])
    if causal:
        n = s.shape[-1]
        s = np.where(np.tril(np.ones((n, n), bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    return ((p / p.sum(-1, keepdims=True)) @ v).transpose(0, 2, 1, 3)


@pytest.mark.parametrize("causal", [False, True])
def test_emulated_flash_attention(causal, emu_dir):
    from tilelang_conformance.cases.attention import flashattn

    kernel = build(flashattn(1, 2, 128, 64, causal, 64, 64, 2))
    assert set(kernel.placements.values()) == {"registers"} if hasattr(kernel, "placements") else True
    rng = np.random.default_rng(3)
    q, k, v = (rng.standard_normal((1, 128, 2, 64)).astype(np.float16) for _ in range(3))
    out = np.full((1, 128, 2, 64), np.nan, np.float16)
    emulate(kernel, emu_dir)(q, k, v, out)
    np.testing.assert_allclose(out.astype(np.float64), attention_reference(q, k, v, causal), rtol=1e-2, atol=2e-3)


def test_emulated_row_max_of_an_accumulator(emu_dir):
    """T.reduce_max of a simdgroup accumulator: in-lane folds, then simd_shuffle_xor over the
    lanes that share a row."""
    M, N, K = 64, 64, 32

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), R: T.Tensor((M,), "float32")):
        with T.Kernel(1, threads=128) as _:
            A_s = T.alloc_shared((M, K), "float16")
            B_s = T.alloc_shared((K, N), "float16")
            C = T.alloc_fragment((M, N), "float32")
            m = T.alloc_fragment((M,), "float32")
            T.copy(A, A_s)
            T.copy(B, B_s)
            T.gemm(A_s, B_s, C, clear_accum=True)
            T.reduce_max(C, m, dim=1)
            T.copy(m, R)

    kernel = build(main)
    assert "simd_shuffle_xor(" in kernel.get_kernel_source()
    rng = np.random.default_rng(11)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    r = np.full((M,), np.nan, np.float32)
    emulate(kernel, emu_dir)(a, b, r)
    np.testing.assert_allclose(r, (a.astype(np.float64) @ b.astype(np.float64)).max(1), rtol=1e-4, atol=1e-4)
