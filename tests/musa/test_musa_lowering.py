"""The MUSA lowerings: golden tests of the TCE / LDLMS mapping for the seed 003 GEMM and a
FlashAttention, the SQMMA accumulator layout against MUTLASS's CLayout, and lowered kernels
run in the emulator (musa_tce_emulator.py) against NumPy."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest

from tilelang_core.jit.api import lower
from tilelang_core.jit.options import CompileOptions
from tilelang_core.plugin import Target, hooks_for

sys.path.insert(0, str(Path(__file__).resolve().parent))
from musa_programs import flash_attention, seed_gemm  # noqa: E402
from musa_tce_emulator import clayout_element, run_kernel  # noqa: E402

MP31 = "musa/mp_31"


NO_TME = CompileOptions(disable_tma=True)


def _lowered(func, target=MP31, options=NO_TME):
    return lower(func, Target.parse(target), options)


def _source(func, target=MP31, options=NO_TME):
    t = Target.parse(target)
    return hooks_for(t).codegen(_lowered(func, target, options), options)


def test_seed_gemm_without_tme_maps_to_tce_and_async_copies():
    """pass_configs={'tl.disable_tma_lower': True}: 8192 x 7168 x 16384, 256 x 256 x 64 tiles,
    512 threads, policy Square: 4 warp squads in a 2 x 2 grid, each 128 x 128 of C as two
    m64n128 SQMMAs per 64-deep k-step; B's rows (256 halves, 512 bytes) are stored in two slabs
    of 128 columns; copies are LDLMS. (With TME: test_musa_tme.py.)"""
    src = _source(seed_gemm(8192, 7168, 16384)).source
    assert "tl_musa_tme" not in src and "MUtensorDescriptor" not in src
    assert '#include "tl_musa_tce.h"' in src and '#include "tl_musa_async.h"' in src
    calls = re.findall(r"tl_musa_tce_m64n128<2, 0, 1, 64>\(&C_local_reg\[ti \* 64\], "
                       r"tl_musa_tce_desc\(&A_shared\[[^]]*\], 5\), tl_musa_tce_desc\(&B_shared\[[^]]*\], 6\)\);", src)
    assert len(calls) == 1, src
    assert re.search(r"for \(int32_t ti = 0; ti < 2; \+\+ti\)", src)
    commit, wait = src.index("tl_musa_tce_commit();"), src.index("tl_musa_tce_wait<0>();")
    assert src.index("tl_musa_tce_m64n128") < commit < wait
    assert src.count("tl_musa_g2s") >= 2 and "tl_musa_g2s_wait();" in src
    assert "__launch_bounds__(512)" in src and "float C_local_reg[128];" in src
    # B's copy writes the slab placement the descriptors read
    assert re.search(r"&B_shared\[tx % 32 / 16 \* 8192 \+ r_2 \* 2048 \+ tx / 32 \* 128 \+ tx % 16 \* 8\]", src), src


def test_gemm_on_quyuan_maps_to_fmma():
    """mp_22: 64 x 64 tiles over two 128-thread warps (one 32 x 64 half each), two fmma per
    16-deep k-step; B not transposed is the "TT" form."""
    src = _source(seed_gemm(1024, 1024, 1024, 64, 64, 32, 256), "musa/mp_22").source
    assert "tl_musa_tce" not in src and "tl_musa_g2s" in src and '#include "tl_musa_fmma.h"' in src
    assert re.search(r"tl_musa_fmma_m32n32k16<0>\(&C_local_reg\[[^]]*\], &A_frag\[[^]]*\], &B_frag\[[^]]*\]\);", src)
    assert "float C_local_reg[16];" in src


@pytest.mark.parametrize("trans_b", [False, True])
def test_fmma_gemm_runs_in_the_emulator(trans_b):
    from tilelang_core import language as T

    M, N, K = 64, 128, 64  # noqa: N806
    b_shape = (N, K) if trans_b else (K, N)

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor(b_shape, "float16"), C: T.Tensor((M, N), "float32")):  # noqa: N803
        with T.Kernel(1, threads=256) as bx:
            A_s = T.alloc_shared((M, K), "float16")
            B_s = T.alloc_shared(b_shape, "float16")
            C_l = T.alloc_fragment((M, N), "float32")
            T.copy(A, A_s)
            T.copy(B, B_s)
            T.gemm(A_s, B_s, C_l, transpose_B=trans_b, clear_accum=True)
            T.copy(C_l, C)

    lowered = _lowered(main, "musa/mp_22")
    assert "tl_musa_fmma_m32n32k16" in str(lowered)
    rng = np.random.default_rng(11)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal(b_shape).astype(np.float16)
    c = np.full((M, N), np.nan, np.float32)
    run_kernel(lowered, a, b, c)
    ref = a.astype(np.float64) @ (b.T if trans_b else b).astype(np.float64)
    np.testing.assert_allclose(c, ref, rtol=1e-5, atol=1e-4)


def test_flash_attention_maps_qk_to_tce():
    """Q K^T (both K-major) runs on the TCE; softmax follows the accumulator layout through
    the core's inference (row reductions as shuffles over the 8 lanes of a row); P V, whose A is
    a register fragment, takes the portable gemm (SQMMA reads both operands from shared)."""
    src = _source(flash_attention(1, 2, 256, 64)).source
    assert len(re.findall(r"tl_musa_tce_m64n64<2, 0, 0, 64>\(&acc_s_reg\[0\]", src)) == 1, src
    assert "tl_shfl_xor(max_acc[0], 4)" in src and "tl_shfl_xor(sum_acc[0], 4)" in src
    assert src.count("tl_musa_tce_commit();") == 1


def test_accumulator_layout_is_mutlass_clayout():
    from tilelang_musa.lower_tce import TCEPlan, accumulator_layout

    plan = TCEPlan(64, 128, 64, "float16", 1, 1, 64, 128, 64, False, False, 128)
    layout = accumulator_layout(plan).check()
    for lane in range(0, 128, 7):
        for v in range(plan.values):
            assert tuple(int(x) for x in layout.element_of(lane, v)) == clayout_element(64, 128, lane, v)


def _run_gemm(M, N, K, bm, bn, bk, threads):  # noqa: N803
    rng = np.random.default_rng(7)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = np.full((M, N), np.nan, np.float16)
    run_kernel(_lowered(seed_gemm(M, N, K, bm, bn, bk, threads)), a, b, c)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c.astype(np.float64), ref, rtol=2e-3, atol=2e-2)


def test_tce_gemm_with_slabbed_b_runs_in_the_emulator():
    """One squad, 64 x 256 tiles (B in two slabs), two k-tiles: every element checked."""
    _run_gemm(64, 256, 128, 64, 256, 64, 128)


@pytest.mark.slow
def test_seed_gemm_tiles_run_in_the_emulator():
    """The seed GEMM's own tiles and threads (4 squads, 2 x 2), one block."""
    _run_gemm(256, 256, 128, 256, 256, 64, 512)


def test_flash_attention_one_kv_tile_runs_in_the_emulator():
    """FlashAttention with the QK^T gemm on the TCE, one K/V tile (several tiles: see the
    note in the report about the replicated logsum update of the core's shared-memory fallback)."""
    batch, heads, seq, dim = 1, 1, 64, 64
    rng = np.random.default_rng(3)
    q, k, v = (rng.standard_normal((batch, seq, heads, dim)).astype(np.float16) for _ in range(3))
    out = np.full_like(q, np.nan)
    run_kernel(_lowered(flash_attention(batch, heads, seq, dim)), q, k, v, out)
    qq, kk, vv = (x.astype(np.float64).transpose(0, 2, 1, 3) for x in (q, k, v))
    s = qq @ kk.transpose(0, 1, 3, 2) / np.sqrt(dim)
    p = np.exp(s - s.max(-1, keepdims=True))
    ref = ((p / p.sum(-1, keepdims=True)) @ vv).transpose(0, 2, 1, 3)
    np.testing.assert_allclose(out.astype(np.float64), ref, rtol=1e-2, atol=2e-3)
