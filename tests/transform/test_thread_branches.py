"""scope_thread_branches: tile ops under `if T.get_thread_binding() < C` run on the branch's
threads (TileLang's DeepSeek mHC kernel splits its block this way)."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from tilelang_core import language as T
from tilelang_core.jit.api import lower
from tilelang_core.jit.options import CompileOptions
from tilelang_core.plugin.manager import get_plugin_manager
from tilelang_core.transform import thread_branches
from tilelang_core.transform.errors import TileLangCompileError

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "cuda"))


def split_block(split=32, threads=96):
    @T.prim_func
    def main(A: T.Tensor((4, 256), "float32"), B: T.Tensor((4, 256), "float32"), S: T.Tensor((4, 4), "float32")):
        with T.Kernel(4, threads=threads) as i:
            if T.get_thread_binding() < split:
                f = T.alloc_fragment((4, 4), "float32")
                r = T.alloc_fragment((4,), "float32")
                for j, k in T.Parallel(4, 4):
                    f[j, k] = A[i, j * 4 + k]
                T.reduce_sum(f, r, dim=1)
                for j in T.Parallel(4):
                    S[i, j] = r[j]
            else:
                xs = T.alloc_shared((256,), "float32")
                ol = T.alloc_fragment((256,), "float32")
                T.copy(A[i, 0], xs)
                for h in T.Parallel(256):
                    ol[h] = xs[h] * 2.0
                T.copy(ol, B[i, 0])
    return main


def _run(func):
    from mbarrier_emulator import run_kernel

    lowered = lower(func, get_plugin_manager().parse_target("cuda/sm_80"), CompileOptions())
    rng = np.random.default_rng(8)
    a = rng.standard_normal((4, 256)).astype("float32")
    b, s = np.full((4, 256), np.nan, "float32"), np.full((4, 4), np.nan, "float32")
    run_kernel(lowered, a, b, s)
    return a, b, s, lowered


def test_each_branch_runs_its_tile_ops_on_its_own_threads():
    a, b, s, lowered = _run(split_block())
    np.testing.assert_allclose(b, a * 2, rtol=1e-6)
    np.testing.assert_allclose(s, a[:, :16].reshape(4, 4, 4).sum(-1), rtol=1e-5)
    assert "tl.thread_range" in lowered.script()


def test_negative_control_without_the_pass_the_block_wide_split_loses_elements(monkeypatch):
    monkeypatch.setattr(thread_branches, "scope_thread_branches", lambda func, ctx: func)
    from tilelang_core.transform import pipeline

    monkeypatch.setattr(pipeline, "default_pipeline", _pipeline_without_pass(pipeline))
    a, b, s, _ = _run(split_block())
    assert np.isnan(b).any() or not np.allclose(b, a * 2)


def _pipeline_without_pass(pipeline):
    original = pipeline.default_pipeline

    def build():
        built = original()
        built.remove("scope_thread_branches")
        return built

    return build


def test_a_split_inside_a_warp_is_refused_with_the_reason():
    with pytest.raises(TileLangCompileError, match="whole number of warps"):
        lower(split_block(split=40), get_plugin_manager().parse_target("cuda/sm_90a"), CompileOptions())
