"""`T.gemm_sp` on CUDA: the core's expansion (dense A rebuilt from values and metadata, then
T.gemm) lowered for sm_80 runs exactly in the NumPy emulator of lowered TIR (mma.sync,
ldmatrix, cp.async with adversarial warp scheduling), with A in shared memory or registers;
for sm_90a on wgmma; and the
kernel TileLang's tests write compiles with NVRTC for sm_80 and sm_90a."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from tilelang_core.jit.api import lower
from tilelang_core.jit.options import CompileOptions
from tilelang_core.plugin import get_plugin_manager
from tests.transform.test_sparse_gemm import operands, sparse_matmul

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tir_emulator import run_kernel  # noqa: E402


# the sr and rr forms take the backend's portable T.gemm here (30 s each in the emulator); the
# CPU tests (tests/transform/test_sparse_gemm.py) check all four forms' arithmetic
@pytest.mark.parametrize("trans_a, trans_b, a_frag, b_frag, on_mma", [
    (False, False, False, False, True),
    (False, True, True, False, True),
], ids=["ss", "rs-transB"])
def test_sparse_gemm_is_exact_in_the_emulator(trans_a, trans_b, a_frag, b_frag, on_mma):
    M, N, K = 32, 32, 64
    func = sparse_matmul(M, N, K, 32, 32, 32, "float16", "float32", "int16", trans_a, trans_b, a_frag, b_frag,
                         threads=64)
    lowered = lower(func, get_plugin_manager().parse_target("cuda/sm_80"), CompileOptions())
    dense, values, metadata, b = operands(M, N, K, "float16", "int16", trans_a, trans_b)
    c = np.zeros((M, N), np.float32)
    run_kernel(lowered, values, metadata, b, c)
    expected = dense.astype(np.float64) @ (b.T if trans_b else b).astype(np.float64)
    np.testing.assert_allclose(c, expected, rtol=1e-5, atol=1e-5)
    assert ("mma_m16n8" in lowered.script()) == on_mma  # the dense T.gemm's path for that form


def test_sparse_gemm_on_wgmma_is_exact_in_the_emulator():
    """sm_90a: the dense tile, written to shared memory by the block's threads, feeds wgmma
    (a proxy fence must precede it)."""
    from test_cuda_wgmma import _run

    M, N, K = 64, 64, 128
    func = sparse_matmul(M, N, K, 64, 64, 64, "float16", "float32", "int16")
    lowered = lower(func, get_plugin_manager().parse_target("cuda/sm_90a"), CompileOptions())
    script = lowered.script()
    assert "tl::wgmma_m64n" in script
    dense, values, metadata, b = operands(M, N, K, "float16", "int16", False, False)
    c = np.zeros((M, N), np.float32)
    _run(lowered, values, metadata, b, c)
    expected = dense.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("arch, dtype, meta, sass", [
    ("sm_80", "float16", "int16", "HMMA"),
    ("sm_90a", "float16", "int16", "HGMMA"),
    ("sm_90a", "bfloat16", "int8", "HGMMA"),
    ("sm_90a", "float8_e5m2", "int32", None),
])
def test_tilelang_test_kernel_compiles_with_nvrtc(arch, dtype, meta, sass):
    """The shape TileLang's tilelibrary test uses (128 x 128 tiles, K-step 64, 2 stages,
    128 threads) compiles to a cubin, on tensor-core instructions where the dense GEMM has them."""
    import tilelang_core
    from test_cuda_lowering import _sass_ops

    func = sparse_matmul(256, 128, 128, 128, 128, 64, dtype, "float32", meta, trans_b=True)
    kernel = tilelang_core.compile(func, out_idx=[3], target=f"cuda/{arch}", cache=False)
    assert kernel.binary
    if sass is not None:
        assert _sass_ops(kernel).get(sass, 0) > 0
