"""`T.reshape` / `T.view` of a fragment on SIMT targets: the view is a second name for its
source's registers (`FragmentLayouts.link`): a layout given to either is the other's, reshaped
(`Fragment.reshape` keeps every element in its slot), and a placement in shared memory moves
both. Before this a view lost its source at codegen (`KeyError: s`, TileLang's dsa_hisa and
deepseek_v32 indexers).

Evidence: CPU runs against NumPy, emulated SIMT runs (cuda/sm_80, `tir_emulator`) at a layout
with registers and one with the fragment in shared memory, sm_90a source without a view
declaration, and the clear error for a view of another dtype."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import tilelang_core as tilelang
from tilelang_core import language as T
from tilelang_core.jit.api import lower
from tilelang_core.jit.options import CompileOptions
from tilelang_core.layout import cyclic_fragment
from tilelang_core.plugin.manager import get_plugin_manager
from tilelang_core.transform.errors import TileLangCompileError

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "cuda"))

M, A, B = 32, 4, 8


def grouped_sum(m=M, a=A, b=B, threads=128):
    """A (m, a*b) fragment seen as (m, a, b): scaled in place through the view, reduced over
    its last dim and written back transposed (TileLang's pool-MQA pattern:
    `s_reshaped = T.reshape(s, ...)`, then `Logits[q, n] = logits[n, q]`)."""

    @T.prim_func
    def main(X: T.Tensor((m, a * b), "float32"), Y: T.Tensor((a, m), "float32"), Z: T.Tensor((m, a * b), "float32")):
        with T.Kernel(1, threads=threads) as bx:
            s = T.alloc_fragment((m, a * b), "float32")
            r = T.reshape(s, (m, a, b))
            o = T.alloc_fragment((m, a), "float32")
            T.copy(X, s)
            for i, j, k in T.Parallel(m, a, b):
                r[i, j, k] = T.max(r[i, j, k], 0) * (k + 1)
            T.reduce_sum(r, o, dim=-1)
            for j, i in T.Parallel(a, m):
                Y[j, i] = o[i, j]
            T.copy(s, Z)

    return main


def transposed_read(m=16, n=8, threads=64):
    """The view read transposed (`r[j, i]` in an `i, j` nest): no register layout serves both,
    so the fragment and its view go to shared memory together."""

    @T.prim_func
    def main(X: T.Tensor((m * n,), "float32"), Y: T.Tensor((n, m), "float32")):
        with T.Kernel(1, threads=threads) as bx:
            s = T.alloc_fragment((m * n,), "float32")
            r = T.reshape(s, (m, n))
            T.copy(X, s)
            for i, j in T.Parallel(n, m):
                Y[i, j] = r[j, i] + 1.0

    return main


def _expected(x):
    scaled = np.maximum(x, 0).reshape(M, A, B) * np.arange(1, B + 1)
    return scaled.sum(-1).T, scaled.reshape(M, A * B)


def _inputs():
    x = np.random.default_rng(7).standard_normal((M, A * B)).astype("float32")
    return x, np.full((A, M), np.nan, "float32"), np.full((M, A * B), np.nan, "float32")


def test_permute_is_the_transposed_tile():
    base = cyclic_fragment((8, 16), 32)
    flipped = base.permute((1, 0))
    assert flipped.shape == (16, 8)
    assert flipped.table()[..., ::-1].tolist() == base.table().tolist()


def test_reshape_keeps_every_element_in_its_slot():
    base = cyclic_fragment((8, 16), 32)
    view = base.reshape((8, 4, 4))
    for t in range(32):
        for s in range(base.slots):
            i, j = base.element_of(t, s)
            assert tuple(int(v) for v in view.element_of(t, s)) == (i, j // 4, j % 4)
    assert view.check().slots == base.slots and view.reshape((8, 16)).table().tolist() == base.table().tolist()


def test_cpu_run_through_a_fragment_view():
    x, y, z = _inputs()
    tilelang.compile(grouped_sum(), target="cpu")(x, y, z)
    ey, ez = _expected(x)
    np.testing.assert_allclose(y, ey, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(z, ez, rtol=1e-6)


def _lower(func):
    return lower(func, get_plugin_manager().parse_target("cuda/sm_80"), CompileOptions())


def test_emulated_simt_run_keeps_the_view_in_its_sources_registers():
    from tir_emulator import run_kernel

    lowered = _lower(grouped_sum())
    script = lowered.script()
    assert "s_reg" in script and "r_reg" not in script and "o_reg" in script and "shared" not in script
    x, y, z = _inputs()
    run_kernel(lowered, x, y, z)
    ey, ez = _expected(x)
    np.testing.assert_allclose(y, ey, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(z, ez, rtol=1e-6)


def test_emulated_simt_run_with_the_fragment_in_shared_memory():
    from tir_emulator import run_kernel

    lowered = _lower(transposed_read())
    x = np.random.default_rng(8).standard_normal(16 * 8).astype("float32")
    y = np.full((8, 16), np.nan, "float32")
    run_kernel(lowered, x, y)
    np.testing.assert_allclose(y, x.reshape(16, 8).T + 1.0, rtol=1e-6)


def test_sm_90a_source_has_no_view_declaration():
    source = tilelang.compile(grouped_sum(), target="cuda/sm_90a").get_kernel_source()
    assert "s_reg" in source and "r_reg" not in source and "float* r" not in source


def test_a_view_of_another_dtype_is_a_clear_error():
    @T.prim_func
    def main(X: T.Tensor((64,), "float32"), Y: T.Tensor((64,), "int32")):
        with T.Kernel(1, threads=64) as bx:
            s = T.alloc_fragment((64,), "float32")
            r = T.view(s, dtype="int32")
            T.copy(X, s)
            T.copy(r, Y)

    with pytest.raises(TileLangCompileError, match=r"views the fragment s \(float32\) as int32"):
        tilelang.compile(main, target="cuda/sm_90a")
