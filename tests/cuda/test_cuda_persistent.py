"""Persistent blocks for warp-specialized TMA pipelines (`tilelang_cuda.lower_persistent`): one
block per processor walks the tiles, the loading warpgroup running ahead across tiles, and the
epilogue staged through shared memory in column chunks when the whole tile does not fit beside
the pipeline's stages.

Without a GPU: lowered kernels in the emulator (`tma_emulator.py`) on a target that says it has
2 processors (so a few tiles make several waves), against NumPy; the form of the generated CUDA
for the H100. Speed: `bench/gemm.py` on the device.
"""
from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import numpy as np
import pytest

import tilelang_core
from tilelang_core import language as T
from tilelang_core.jit.api import lower
from tilelang_core.jit.options import CompileOptions

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_cuda_lowering import _operands, _target, gemm_kernel  # noqa: E402
from tma_emulator import run_kernel  # noqa: E402


def _small_target(processors=2, shared=None):
    target = _target("sm_90a")
    caps = target.capabilities.refine(processor_count=processors,
                                      **({"shared_memory_optin": shared} if shared else {}))
    return dataclasses.replace(target, capabilities=caps)


def _run_gemm(lowered, M, N, K, mode):
    rng = np.random.default_rng(11)
    a, b, av, bv = _operands("float16", (M, K), (K, N), rng)
    c = np.full((M, N), np.nan, np.float32)  # poisoned: every element must be written
    run_kernel(lowered, a, b, c, mode=mode)
    assert np.isfinite(c).all()
    ref = av @ bv
    return float(np.abs(c - ref).max() / max(1.0, np.abs(ref).max()))


@pytest.mark.parametrize("mode", ["late", "early"])
def test_persistent_gemm_with_chunked_epilogue_in_emulator(mode):
    # 3 x 2 tiles on 2 blocks (3 waves each), 3 k-steps through 2 stages: the stages' phases
    # run on across tiles; the shared memory holds the 2 stages (16 KB) and half of the 64 x 64
    # float32 stage tile, so the epilogue is stored in 2 chunks of 32 columns
    M, N, K = 150, 128, 96
    lowered = lower(gemm_kernel(M, N, K, 64, 64, 32, stages=2, threads=128), _small_target(2, 16384 + 8192),
                    CompileOptions())
    script = lowered.script()
    # two chunks, each one box of 32 float32 columns (128 bytes) and its own commit
    assert "cuda.persistent_tiles" in script and script.count("\"tl::tma_store\"") == 2
    assert script.count("tl::tma_store_commit") == 2
    assert _run_gemm(lowered, M, N, K, mode) < 1e-5


def test_persistent_gemm_with_whole_epilogue_in_emulator():
    lowered = lower(gemm_kernel(128, 192, 64, 64, 64, 32, stages=2, threads=128), _small_target(4),
                    CompileOptions())
    script = lowered.script()
    # the whole 64 x 64 float32 stage tile: two boxes of 32 columns, one commit
    assert "cuda.persistent_tiles" in script and script.count("\"tl::tma_store\"") == 2
    assert script.count("tl::tma_store_commit") == 1
    assert _run_gemm(lowered, 128, 192, 64, "early") < 1e-5


def test_when_blocks_stay_one_tile_each():
    kernel = gemm_kernel(128, 192, 64, 64, 64, 32, stages=2, threads=128)
    # as many tiles as processors, the switch, or no warp specialization: no tile loop
    for target, options in ((_small_target(6), {}), (_small_target(2), {"disable_persistent": True}),
                            (_small_target(2), {"disable_warp_specialized": True})):
        assert "cuda.persistent_tiles" not in lower(kernel, target, CompileOptions(**options)).script()
    assert CompileOptions.from_pass_configs({"tl.disable_persistent": True}).disable_persistent


def _causal_like(n_blocks=8):
    """A pipelined loop whose trip count depends on the block: uneven work per tile."""

    @T.prim_func
    def main(A: T.Tensor((n_blocks * 64, 512), "float16"), B: T.Tensor((512, 64), "float16"),
             C: T.Tensor((n_blocks * 64, 64), "float32")):
        with T.Kernel(n_blocks, threads=128) as bx:
            A_s = T.alloc_shared((64, 32), "float16")
            B_s = T.alloc_shared((32, 64), "float16")
            C_l = T.alloc_fragment((64, 64), "float32")
            T.clear(C_l)
            for ko in T.Pipelined(bx + 1, num_stages=2):
                T.copy(A[bx * 64, ko * 32], A_s)
                T.copy(B[ko * 32, 0], B_s)
                T.gemm(A_s, B_s, C_l)
            T.copy(C_l, C[bx * 64, 0])

    return main


def _gemm_and_more(n_blocks=8):
    """A pipelined loop whose consumers run more than the gemm (as FlashAttention's softmax)."""

    @T.prim_func
    def main(A: T.Tensor((n_blocks * 64, 128), "float16"), B: T.Tensor((128, 64), "float16"),
             C: T.Tensor((n_blocks * 64, 64), "float32")):
        with T.Kernel(n_blocks, threads=128) as bx:
            A_s = T.alloc_shared((64, 32), "float16")
            B_s = T.alloc_shared((32, 64), "float16")
            C_l = T.alloc_fragment((64, 64), "float32")
            T.clear(C_l)
            for ko in T.Pipelined(4, num_stages=2):
                T.copy(A[bx * 64, ko * 32], A_s)
                T.copy(B[ko * 32, 0], B_s)
                T.gemm(A_s, B_s, C_l)
                for i, j in T.Parallel(64, 64):
                    C_l[i, j] = C_l[i, j] * 0.5
            T.copy(C_l, C[bx * 64, 0])

    return main


def test_uneven_work_or_more_than_a_gemm_keeps_one_tile_per_block():
    for kernel in (_causal_like(), _gemm_and_more()):
        script = lower(kernel, _small_target(2), CompileOptions()).script()
        assert "tl::tma_load" in script and "cuda.persistent_tiles" not in script


def test_h100_gemm_form():
    """bench/gemm.py's 4096^3 kernel on the H100: 132 blocks, 4 stages of A and B (192 KB) and
    the 128 x 256 epilogue in 2 chunks of 128 columns (2 TMA boxes each)."""
    def build(**configs):
        return tilelang_core.compile(gemm_kernel(4096, 4096, 4096, 128, 256, 64, stages=4, threads=256, panel=10,
                                                 out_dtype="float16"),
                                     target="cuda/sm_90a", cache=False, pass_configs=configs)

    kernel = build()
    source = kernel.get_kernel_source()
    assert tuple(kernel.meta.grid) == (132, 1, 1) and kernel.meta.shared_memory == 4 * 48 * 1024 + 128 * 128 * 2
    assert source.count("for (int32_t wave = 0; wave < (643 - bx) / 132; ++wave)") == 2  # both roles
    assert source.count("tl::tma_store(") == 4 and source.count("tl::tma_store_wait_read()") == 2
    # the consumers release the tile's last stage after draining wgmma: the next tile refills it
    assert "tl::mbarrier_arrive(&tma_barriers[7]);" in source
    assert json.loads(kernel.meta.extra["tensor_maps"])[-1]["box"] == [128, 64]
    one_per_block = build(**{"tl.disable_persistent": True})
    assert tuple(one_per_block.meta.grid) == (16, 32, 1) and "wave" not in one_per_block.get_kernel_source()
