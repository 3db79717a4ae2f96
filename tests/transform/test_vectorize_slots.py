"""`vectorize_slot_stores`: a fragment's register slots stored to memory in runs, as vectors,
only where every run is whole and aligned; results unchanged (emulated on the CUDA path)."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from tilelang_core.jit.api import lower
from tilelang_core.jit.options import CompileOptions
from tilelang_core.plugin import get_plugin_manager, hooks_for

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cuda"))
from test_cuda_lowering import _operands, gemm_kernel  # noqa: E402


def gemm(M, N, K, out_dtype="float16", bn=64):
    return gemm_kernel(M, N, K, 64, bn, 32, out_dtype=out_dtype)


def _compiled(func, target):
    t = get_plugin_manager().parse_target(target)
    facts: dict = {}
    # sm_90a stages a wgmma epilogue through shared memory for a TMA store; without TMA it
    # stores the registers straight to global memory, which is what these tests look at
    options = CompileOptions(disable_tma=target == "cuda/sm_90a")
    lowered = lower(func, t, options, facts)
    return lowered, hooks_for(t).codegen(lowered, options).source, facts


@pytest.mark.parametrize("target", ["cuda/sm_80", "cuda/sm_90a", "hip/gfx942"])
@pytest.mark.parametrize("out_dtype, vector", [("float16", "unsigned int"), ("float32", "uint2")])
def test_whole_tiles_store_accumulator_pairs_as_vectors(target, out_dtype, vector):
    _, src, facts = _compiled(gemm(128, 128, 64, out_dtype), target)
    if target.startswith("hip"):
        assert "C_vec" in src  # the HIP printer names its own vector types
    else:
        assert f"(*({vector}*)(&C[" in src
    assert facts["tensor_alignment"] >= (4 if out_dtype == "float16" else 8)


def test_ragged_tiles_keep_scalar_stores():
    _, src, facts = _compiled(gemm(100, 128, 64), "cuda/sm_90a")  # rows past M are guarded
    assert "C_vec" not in src
    _, src, _ = _compiled(gemm(128, 127, 64, bn=64), "cuda/sm_90a")  # odd row length: runs unaligned
    assert "C_vec" not in src


def test_vector_epilogue_in_emulator():
    from tir_emulator import run_kernel

    lowered, src, _ = _compiled(gemm(128, 128, 64), "cuda/sm_80")
    assert "C_vec" in src
    rng = np.random.default_rng(3)
    a, b, av, bv = _operands("float16", (128, 64), (64, 128), rng)
    c = np.full((128, 128), np.nan, np.float16)
    run_kernel(lowered, a, b, c)
    ref = av @ bv
    assert np.abs(c.astype(np.float64) - ref).max() / np.abs(ref).max() < 2e-3
