"""The MUSA port's keywords of core calls, offered by tilelang-musa: `T.copy(...,
force_async_copy=True)` and `T.Kernel(..., producer_threads=n)`; other backends compile the
program as if they were absent."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from tilelang_core import language as T
from tilelang_core.jit.api import lower
from tilelang_core.language.parser import KernelSyntaxError
from tilelang_core.jit.options import CompileOptions
from tilelang_core.plugin import Target, hooks_for
from tilelang_core.transform import TileLangCompileError

sys.path.insert(0, str(Path(__file__).resolve().parent))
from musa_tce_emulator import run_kernel  # noqa: E402

MP31 = Target.parse("musa/mp_31")


def gemm(M, N, K, copy_kw=None, kernel_kw=None, stages=2):  # noqa: N803
    copy_kw, kernel_kw = copy_kw or {}, kernel_kw or {}

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float16")):  # noqa: N803
        with T.Kernel(T.ceildiv(N, 128), T.ceildiv(M, 64), threads=128, **kernel_kw) as (bx, by):
            A_s = T.alloc_shared((64, 64), "float16")
            B_s = T.alloc_shared((64, 128), "float16")
            C_l = T.alloc_fragment((64, 128), "float32")
            T.clear(C_l)
            for k in T.Pipelined(T.ceildiv(K, 64), num_stages=stages):
                T.copy(A[by * 64, k * 64], A_s, **copy_kw)
                T.copy(B[k * 64, bx * 128], B_s)
                T.gemm(A_s, B_s, C_l)
            T.copy(C_l, C[by * 64, bx * 128])

    return main


def _source(func, target=MP31):
    return hooks_for(target).codegen(lower(func, target, CompileOptions()), CompileOptions()).source


def test_force_async_copy_keeps_that_copy_on_ldlms_and_runs():
    """A stays on LDLMS inside the TME pipeline (B still TME); the iteration starts with a block
    barrier since A's copy writes shared memory the previous iteration read; the emulator
    checks every element."""
    func = gemm(64, 128, 192, {"force_async_copy": True})
    src = _source(func)
    loop = src[src.index("for (int32_t k = 0;"):]
    assert "tl_musa_g2s_zfill<16>(&A_s[" in loop or "tl_musa_g2s<16>(&A_s[" in loop
    assert "tl_musa_tme_load_2d(&tl_musa_desc_0" in src and "A_s[0], 0" not in src  # only B by TME
    assert loop.index("tl_musa_barrier_wait((uint32_t)(1 + k % 2)") < loop.index("__syncthreads_lm();") \
        < loop.index("tl_musa_g2s")
    rng = np.random.default_rng(5)
    a = rng.standard_normal((64, 192)).astype(np.float16)
    b = rng.standard_normal((192, 128)).astype(np.float16)
    c = np.full((64, 128), np.nan, np.float16)
    run_kernel(lower(func, MP31, CompileOptions()), a, b, c)
    np.testing.assert_allclose(c.astype(np.float64), a.astype(np.float64) @ b.astype(np.float64), rtol=2e-3, atol=2e-2)


def test_disable_tma_on_one_copy():
    src = _source(gemm(256, 256, 256, {"disable_tma": True}))
    assert "tl_musa_g2s" in src and src.count("tl_musa_tme_load_2d(&tl_musa_desc_0,") >= 1
    assert src.count("MUtensorDescriptor tl_musa_desc_") == 1  # B's only


def test_force_async_copy_that_ldlms_cannot_do_is_refused():
    @T.prim_func
    def main(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):  # noqa: N803
        with T.Kernel(1, threads=64) as bx:
            s = T.alloc_shared((64,), "float32")
            T.copy(A, s)
            T.copy(s, B, force_async_copy=True)

    with pytest.raises(TileLangCompileError, match="force_async_copy=True.*LDLMS.*drop force_async_copy"):
        lower(main, MP31, CompileOptions())


def test_producer_threads_is_checked_and_changes_no_code():
    assert _source(gemm(256, 256, 256, kernel_kw={"producer_threads": 32})) == _source(gemm(256, 256, 256))
    with pytest.raises(TileLangCompileError, match=r"producer_threads=48.*multiple of the warp size 32"):
        lower(gemm(256, 256, 256, kernel_kw={"producer_threads": 48}), MP31, CompileOptions())
    with pytest.raises(TileLangCompileError, match=r"fewer than the kernel's 128 threads"):
        lower(gemm(256, 256, 256, kernel_kw={"producer_threads": 128}), MP31, CompileOptions())
    with pytest.raises(KernelSyntaxError, match=r"producer_threads=0\), a keyword of backend 'musa': must be a positive"):
        gemm(256, 256, 256, kernel_kw={"producer_threads": 0})
    with pytest.raises(KernelSyntaxError, match=r"force_async_copy='yes'\), a keyword of backend 'musa': must be True"):
        gemm(256, 256, 256, {"force_async_copy": "yes"})


@pytest.mark.parametrize("target", ["cuda/sm_90a", "hip/gfx942", "cpu"])
def test_other_backends_compile_as_if_the_keywords_were_absent(target):
    try:
        t = Target.parse(target)
    except Exception as exc:  # noqa: BLE001 - the backend is not installed in this environment
        pytest.skip(f"{target}: {exc}")
    with_keywords = gemm(256, 256, 256, {"force_async_copy": True}, {"producer_threads": 32})
    assert _source(with_keywords, t) == _source(gemm(256, 256, 256), t)
