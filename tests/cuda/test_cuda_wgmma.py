"""T.gemm on wgmma (sm_90a, operands in shared memory through descriptors).

Without a GPU: the layouts against the PTX ISA's (as `wgmma_emulator.py` spells them), whole
lowered kernels in the emulator against NumPy, NVRTC's SASS for sm_90a (HGMMA, no local
memory), and `tl.disable_wgmma` keeping mma.sync.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import tilelang_core
from tilelang_core.jit.api import lower
from tilelang_core.jit.options import CompileOptions
from tilelang_cuda.layout_wgmma import choose_warpgroups, d_element, wgmma_accumulator_layout, wgmma_tile

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_cuda_lowering import _operands, _sass_ops, _target, gemm_kernel  # noqa: E402
from tma_emulator import run_kernel as run_tma_kernel  # noqa: E402
from wgmma_emulator import run_kernel, swizzled_address  # noqa: E402


@pytest.mark.parametrize("rows, cols", [(128, 64), (64, 128), (32, 32), (16, 16), (64, 256)])
@pytest.mark.parametrize("mn_major", [False, True])
def test_tile_placement_is_what_a_descriptor_reads(rows, cols, mn_major):
    """Every 16-k slice a descriptor of the tile names (at the lowering's start element,
    lbo and sbo) reads the logical elements the tile placed there."""
    tile = wgmma_tile(rows, cols, 2)
    lbo, sbo = tile.descriptor_offsets(mn_major)
    base = 4096  # a 1024-aligned tile
    # MN-major: rows are k, columns m/n; K-major: rows are m/n, columns k
    k_extent, mn_extent = (rows, cols) if mn_major else (cols, rows)
    for k0 in range(0, k_extent, 16):
        for mn0 in range(0, mn_extent, tile.slab if mn_major else 8):
            row, col = (k0, mn0) if mn_major else (mn0, k0)
            start = base + 2 * tile.flat(row, col)
            for r in range(min(64, mn_extent - mn0)):
                for k in range(16):
                    want = (k0 + k, mn0 + r) if mn_major else (mn0 + r, k0 + k)
                    addr = swizzled_address(start, lbo, sbo, tile.width, mn_major, r, k)
                    assert addr == base + 2 * tile.flat(*want), (r, k, want)


def test_accumulator_layout_covers_the_tile_once():
    for m, n, groups in [(128, 128, 1), (128, 256, 2), (64, 256, 2), (256, 128, 2)]:
        tiling = choose_warpgroups(m, n, groups)
        layout = wgmma_accumulator_layout(tiling)
        seen = np.zeros((m, n), int)
        for t in range(layout.threads):
            for s in range(layout.slots):
                seen[layout.element_of(t, s)] += 1
        assert (seen == 1).all()
    # the D fragment of the PTX ISA figure for m64nNk16: thread 0 holds (0,0),(0,1),(8,0),(8,1),(0,8)...
    assert [d_element(0, i) for i in range(5)] == [(0, 0), (0, 1), (8, 0), (8, 1), (0, 8)]
    assert d_element(37, 0) == (16 + 1, 2)


def _emulate(M, N, K, dtype="float16", trans_a=False, trans_b=False, relu=False, **kw):
    func = gemm_kernel(M, N, K, dtype=dtype, trans_a=trans_a, trans_b=trans_b, relu=relu, **kw)
    lowered = lower(func, _target("sm_90a"), CompileOptions())
    script = lowered.script()
    assert "tl::wgmma_m64n" in script
    rng = np.random.default_rng(1)
    a_shape, b_shape = ((K, M) if trans_a else (M, K)), ((N, K) if trans_b else (K, N))
    a, b, av, bv = _operands(dtype, a_shape, b_shape, rng)
    c = np.zeros((M, N), np.float32)
    if lowered.attrs is not None and "cuda.tensor_maps" in lowered.attrs:  # loads through TMA (test_cuda_tma.py)
        run_tma_kernel(lowered, a, b, c)
    else:
        run_kernel(lowered, a, b, c)
    ref = (av.T if trans_a else av) @ (bv.T if trans_b else bv)
    if relu:  # an elementwise epilogue on C in the D layout
        ref = np.maximum(ref, 0)
    return float(np.abs(c - ref).max() / max(1.0, np.abs(ref).max()))


@pytest.mark.parametrize("case", [
    dict(),  # 128B swizzle, A K-major, B MN-major, 2 pipelined k-tiles
    dict(trans_b=True),
    dict(trans_a=True),
    dict(dtype="bfloat16"),
    dict(bk=32),  # 64B swizzle
    dict(bk=16, trans_b=True),  # 32B swizzle
    dict(threads=256),  # 2 warpgroups split M
    dict(bn=64, threads=256, relu=True),
])
def test_wgmma_gemm_in_emulator(case):
    args = dict(bm=128, bn=128, bk=64, threads=128)
    args.update(case)
    assert _emulate(128, 128, 128, **args) < 1e-5


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("tile", [(128, 128, 64, 128), (128, 256, 64, 256), (128, 128, 32, 128)])
def test_wgmma_gemm_compiles_to_hgmma(dtype, tile):
    bm, bn, bk, threads = tile
    kernel = tilelang_core.compile(gemm_kernel(1024, 1024, 1024, bm, bn, bk, dtype, stages=3, threads=threads),
                                   target="cuda/sm_90a", cache=False)
    ops = _sass_ops(kernel)
    assert ops.get("HGMMA", 0) >= bk // 16 and ops.get("HMMA", 0) == 0
    assert ops.get("LDL", 0) == 0 and ops.get("STL", 0) == 0, "the accumulator must stay in registers"
    assert "__align__(1024)" in kernel.get_kernel_source()


def test_disable_wgmma_keeps_mma_sync():
    kernel = tilelang_core.compile(gemm_kernel(1024, 1024, 1024, 128, 128, 32, stages=3), target="cuda/sm_90a",
                                   cache=False, pass_configs={"tl.disable_wgmma": True})
    ops = _sass_ops(kernel)
    assert ops.get("HMMA", 0) >= 32 and ops.get("HGMMA", 0) == 0


def test_other_dtypes_keep_mma_sync_on_sm_90a():
    kernel = tilelang_core.compile(gemm_kernel(1024, 1024, 1024, 128, 128, 64, "int8", stages=3),
                                   target="cuda/sm_90a", cache=False)
    assert "wgmma" not in kernel.get_kernel_source()


def _attention_chain(M, N, K, D, dtype, threads, trans_v=False):
    """S = Q @ K^T (ss), P = S in `dtype`, O = P @ V (rs: P from registers), FlashAttention's
    two gemms without the softmax."""
    from tilelang_core import language as T

    v_shape = (D, N) if trans_v else (N, D)

    @T.prim_func
    def main(Q: T.Tensor((M, K), dtype), Kt: T.Tensor((N, K), dtype), V: T.Tensor(v_shape, dtype),
             O: T.Tensor((M, D), "float32")):
        with T.Kernel(1, threads=threads) as _:
            Q_s = T.alloc_shared((M, K), dtype)
            K_s = T.alloc_shared((N, K), dtype)
            V_s = T.alloc_shared(v_shape, dtype)
            S = T.alloc_fragment((M, N), "float32")
            P = T.alloc_fragment((M, N), dtype)
            acc = T.alloc_fragment((M, D), "float32")
            T.copy(Q, Q_s)
            T.copy(Kt, K_s)
            T.copy(V, V_s)
            T.clear(S)
            T.gemm(Q_s, K_s, S, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
            T.copy(S, P)
            T.clear(acc)
            T.gemm(P, V_s, acc, transpose_B=trans_v, policy=T.GemmWarpPolicy.FullRow)
            T.copy(acc, O)

    return main


@pytest.mark.parametrize("M, N, K, D, dtype, threads, trans_v", [
    (64, 64, 64, 64, "float16", 128, False),
    (128, 128, 64, 128, "float16", 256, False),  # FlashAttention's 128 x 128 tiles, 2 warpgroups
    (128, 64, 64, 64, "float16", 256, False),  # (the emulator has no float -> bf16 cast: bf16 is compiled below)
    (64, 64, 64, 128, "float16", 128, True),  # V given as (D, N): B K-major
])
def test_rs_gemm_reads_a_from_registers_in_emulator(M, N, K, D, dtype, threads, trans_v):
    lowered = lower(_attention_chain(M, N, K, D, dtype, threads, trans_v), _target("sm_90a"), CompileOptions())
    script = lowered.script()
    assert "k16_rs_f32_" in script and "mma_m16n8k16" not in script, "P @ V must run on wgmma from registers"
    rng = np.random.default_rng(7)
    q, k, qv, kv = _operands(dtype, (M, K), (N, K), rng)
    v, _, vv, _ = _operands(dtype, (D, N) if trans_v else (N, D), (1, 1), rng)
    o = np.full((M, D), np.nan, np.float32)
    run_kernel(lowered, q, k, v, o)
    s = qv @ kv.T
    ref = s.astype(np.float16).astype(np.float64) @ (vv.T if trans_v else vv)  # P is rounded to fp16 in the kernel
    assert np.abs(o - ref).max() / max(1.0, np.abs(ref).max()) < 1e-3


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_rs_gemm_compiles_to_hgmma_without_ldmatrix(dtype):
    kernel = tilelang_core.compile(_attention_chain(128, 128, 64, 128, dtype, 256), target="cuda/sm_90a",
                                   cache=False)
    assert f"k16_rs_f32_{'f16' if dtype == 'float16' else 'bf16'}<" in kernel.get_kernel_source()
    ops = _sass_ops(kernel)
    assert ops.get("HGMMA", 0) >= 8 and ops.get("HMMA", 0) == 0 and ops.get("LDSM", 0) == 0
    assert ops.get("LDL", 0) == 0 and ops.get("STL", 0) == 0
