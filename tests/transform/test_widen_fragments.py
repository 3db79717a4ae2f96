"""Fragments indexed past their declared shape take the range the kernel uses (TileLang's
attention-sink examples: `sinks = T.alloc_fragment([heads])` indexed by `T.Parallel(block_M)`)."""
from __future__ import annotations

import numpy as np
import pytest

import tilelang_core
import tilelang_core.language as T
from tilelang_core.transform.errors import TileLangCompileError
from tilelang_core.transform.safe_access import TileLangWarning


def _sink_kernel(heads: int, block_m: int, index_offset: int = 0):
    @T.prim_func
    def main(Sinks: T.Tensor((heads,), "float32"), X: T.Tensor((4, block_m), "float32"),
             Out: T.Tensor((4, block_m), "float32")):
        with T.Kernel(4, heads, threads=32) as (bx, by):
            sinks = T.alloc_fragment([heads], "float32")
            acc = T.alloc_fragment([block_m], "float32")
            for i in T.Parallel(block_m):
                sinks[i + index_offset] = Sinks[by]
            for i in T.Parallel(block_m):
                acc[i] = X[bx, i] + sinks[i + index_offset]
            if by == 0:
                T.copy(acc, Out[bx, :])
    return main


def test_a_fragment_indexed_past_its_shape_is_widened_with_a_warning_and_runs():
    with pytest.warns(TileLangWarning, match=r"fragment sinks is declared with shape \(2,\) but indexed up to \(15,\)"):
        kernel = tilelang_core.compile(_sink_kernel(2, 16), target="cpu", cache=False)
    rng = np.random.default_rng(0)
    sinks, x = rng.standard_normal(2).astype(np.float32), rng.standard_normal((4, 16)).astype(np.float32)
    out = np.full((4, 16), np.nan, np.float32)
    kernel(sinks, x, out)
    np.testing.assert_allclose(out, x + sinks[0], rtol=1e-6)


def test_the_widened_fragment_compiles_for_cuda():
    with pytest.warns(TileLangWarning, match="widened"):
        kernel = tilelang_core.compile(_sink_kernel(2, 64), target="cuda/sm_90a", cache=False)
    assert "sinks" in kernel.get_kernel_source()


def test_fragments_indexed_within_their_shape_are_left_alone(recwarn):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", TileLangWarning)
        tilelang_core.compile(_sink_kernel(16, 16), target="cpu", cache=False)


def test_a_negative_index_is_still_an_error():
    with pytest.raises(TileLangCompileError, match="out-of-bounds"):
        tilelang_core.compile(_sink_kernel(16, 16, index_offset=-20), target="cpu", cache=False)
