"""TMA by hand: `T.tma_load(T.create_tma_descriptor(...), bar, smem, coords)` on sm_90a. The
descriptor becomes a numbered tensor-map parameter beside T.copy's own; the kernel runs in the
TMA emulator (bytes landing late: a reader that did not wait would see stale memory), and
NVRTC compiles it."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

import tilelang_core
from tilelang_core import language as T
from tilelang_core.jit.api import lower
from tilelang_core.jit.options import CompileOptions
from tilelang_core.language.parser import KernelSyntaxError
from tilelang_core.transform import CapabilityError

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_cuda_lowering import _target  # noqa: E402
from tma_emulator import run_kernel  # noqa: E402

M, N, BM = 256, 64, 64


def hand_tma(l2_promotion=2, dims=(N, M), box=(N, BM)):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float16"), B: T.Tensor((M, N), "float16")):
        with T.Kernel(M // BM, threads=128) as bx:
            S = T.alloc_shared((BM, N), "float16")
            bar = T.alloc_barrier([1])
            tx = T.get_thread_binding()
            if tx == 0:
                T.mbarrier_arrive_expect_tx(bar[0], BM * N * 2)
                T.tma_load(T.create_tma_descriptor(6, 2, A.data, dims[0], dims[1], 2, N * 2, box[0], box[1],
                                                   1, 1, 0, 0, l2_promotion, 0),
                           bar[0], T.access_ptr(S, "w"), 0, bx * BM)
            T.barrier_wait(bar[0], 0)
            for i, j in T.Parallel(BM, N):
                B[bx * BM + i, j] = S[i, j] + T.float16(1)

    return main


def _lower(func, arch="sm_90a"):
    return lower(func, _target(arch), CompileOptions())


def test_the_descriptor_is_a_tensor_map_parameter_and_the_load_names_it():
    lowered = _lower(hand_tma())
    maps = json.loads(str(lowered.attrs["cuda.tensor_maps"]))
    assert maps == [{"param": 0, "dtype": "float16", "shape": [M, N], "box": [BM, N], "swizzle": 0,
                     "l2_promotion": 2}]
    (load,) = [line for line in lowered.script().splitlines() if "tl::tma_load" in line]
    assert '"tl::tma_load", 0, T.tvm_access_ptr(' in load and load.endswith(', 0, bx * 64)')


def test_hand_made_tma_load_runs_in_the_emulator():
    a = np.random.default_rng(0).standard_normal((M, N)).astype(np.float16)
    b = np.zeros_like(a)
    run_kernel(_lower(hand_tma()), a, b, mode="late")
    np.testing.assert_array_equal(b, a + np.float16(1))


def test_hand_made_tma_load_compiles_with_nvrtc():
    kernel = tilelang_core.compile(hand_tma(), target="cuda/sm_90a", cache=False)
    source = kernel.get_kernel_source()
    assert "const __grid_constant__ tl::tensor_map tl_tensor_map_0" in source
    assert "tl::tma_load(&tl_tensor_map_0, &S[0], &bar[0], 0, bx * 64);" in source


def test_a_descriptor_that_does_not_describe_the_tensor_is_refused():
    with pytest.raises(KernelSyntaxError, match=r"dims \[128, 256\] .* are not those of A"):
        hand_tma(dims=(128, M))
    with pytest.raises(KernelSyntaxError, match="inner dim is 30 bytes"):
        hand_tma(box=(15, BM))


def test_tma_load_on_a_target_without_tma_names_the_capability():
    with pytest.raises(CapabilityError, match="capability 'tma'"):
        _lower(hand_tma(), "sm_80")
