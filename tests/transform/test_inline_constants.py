"""`inline_constants`: a `T.macro` that takes fragments (or allocates one) keeps them in
registers, as the same code written inline does.

TVMScript turns `rows, cols = s.shape` into scalars; the macro's `T.Parallel(rows, cols)`
then ran over a symbolic range and layout inference moved every fragment it touched to
shared memory (the attention kernels of tilelang_core.ops went to 297 KB on sm_90a), and a
fragment the macro allocated with shape `(rows,)` did not compile at all.

Evidence: cuda/sm_90a and hip/gfx942 sources have no shared buffer; the CPU and the HIP host
emulation (threads of a block as host threads) match NumPy."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

import tilelang_core as tilelang
from tilelang_core import language as T
from tilelang_core.transform.inline_constants import inline_constants

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "hip"))
from hip_emulator import emulate, host_compiler  # noqa: E402

COMPILE_TARGETS = ("cuda/sm_90a", "hip/gfx942")
M, N = 64, 32


@T.macro
def softmax_rows(s, m, l, row_sum):  # noqa: E741
    """Row softmax of the fragment `s` in place, with its statistics in fragments."""
    rows, cols = s.shape
    T.reduce_max(s, m, dim=1, clear=True)
    for i, j in T.Parallel(rows, cols):
        s[i, j] = T.exp(s[i, j] - m[i])
    T.reduce_sum(s, row_sum, dim=1)
    for i in T.Parallel(rows):
        l[i] = row_sum[i]
    for i, j in T.Parallel(rows, cols):
        s[i, j] = s[i, j] / l[i]


@T.macro
def centered(s, out):
    """out = s minus its row maximum, through a fragment the macro allocates."""
    rows, cols = s.shape
    m = T.alloc_fragment((rows,), "float32")
    T.reduce_max(s, m, dim=1, clear=True)
    for i, j in T.Parallel(rows, cols):
        out[i, j] = s[i, j] - m[i]


def softmax_kernel(use_macro: bool, threads: int = 128):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=threads) as bx:
            s = T.alloc_fragment((M, N), "float32")
            m = T.alloc_fragment((M,), "float32")
            l = T.alloc_fragment((M,), "float32")  # noqa: E741
            row_sum = T.alloc_fragment((M,), "float32")
            T.copy(A, s)
            if use_macro:
                softmax_rows(s, m, l, row_sum)
            else:
                T.reduce_max(s, m, dim=1, clear=True)
                for i, j in T.Parallel(M, N):
                    s[i, j] = T.exp(s[i, j] - m[i])
                T.reduce_sum(s, row_sum, dim=1)
                for i in T.Parallel(M):
                    l[i] = row_sum[i]
                for i, j in T.Parallel(M, N):
                    s[i, j] = s[i, j] / l[i]
            T.copy(s, B)

    return main


def centered_kernel(threads: int = 128):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=threads) as bx:
            s = T.alloc_fragment((M, N), "float32")
            o = T.alloc_fragment((M, N), "float32")
            T.copy(A, s)
            centered(s, o)
            T.copy(o, B)

    return main


def _softmax(a):
    e = np.exp(a.astype(np.float64) - a.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


def _placements(kernel) -> dict:
    return {e["fragment"]: e["placement"] for e in json.loads(kernel.meta.extra["layout_report"])}


@pytest.fixture(scope="module")
def emu_dir(tmp_path_factory):
    if host_compiler() is None:
        pytest.skip("no host C++20 compiler for the HIP emulation")
    return tmp_path_factory.mktemp("macro-emu")


@pytest.mark.parametrize("target", COMPILE_TARGETS)
def test_macro_fragments_stay_in_registers(target):
    inline = tilelang.compile(softmax_kernel(False), target=target)
    macro = tilelang.compile(softmax_kernel(True), target=target)
    assert set(_placements(macro).values()) == {"registers"}, _placements(macro)
    assert _placements(macro) == _placements(inline)
    for kernel in (inline, macro):
        source = kernel.get_kernel_source()
        assert "__shared__" not in source and "tl_dyn_smem" not in source
        assert "s_reg[" in source and "l_reg[" in source


@pytest.mark.parametrize("target", COMPILE_TARGETS)
def test_macro_allocated_fragment_stays_in_registers(target):
    kernel = tilelang.compile(centered_kernel(), target=target)
    assert set(_placements(kernel).values()) == {"registers"}, _placements(kernel)
    assert "m_reg[" in kernel.get_kernel_source()


@pytest.mark.parametrize("make, reference", [(lambda: softmax_kernel(True), _softmax),
                                             (centered_kernel, lambda a: a - a.max(1, keepdims=True))])
def test_macro_kernels_run(make, reference, emu_dir):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((M, N)).astype(np.float32)
    b = np.full_like(a, np.nan)
    tilelang.compile(make(), target="cpu")(a, b)
    np.testing.assert_allclose(b, reference(a), rtol=1e-5, atol=1e-6)
    b[:] = np.nan
    emulate(tilelang.compile(make(), target="hip/gfx942"), emu_dir)(a, b)
    np.testing.assert_allclose(b, reference(a), rtol=1e-5, atol=1e-6)


def test_only_single_constant_stores_are_inlined():
    @T.prim_func
    def main(A: T.Tensor((8,), "float32"), c: T.int32):
        n = 8
        k = n * 2
        x = T.alloc_var("int32", init=1)
        x = x + 1
        y = c + 1
        for i in T.serial(n):
            A[i] = T.cast(k + x + y, "float32")

    text = inline_constants(main).script()
    assert "for i in range(8)" in text and "16 + x[0] + y" in text  # n, and k through n
    assert "n: T.int32" not in text and "k: T.int32" not in text
    assert "x[0] = x[0] + 1" in text  # stored twice: stays
    assert "y: T.int32 = c + 1" in text  # not a constant: stays


def test_a_scalar_a_tile_op_writes_stays():
    @T.prim_func
    def main(A: T.Tensor((8,), "float32"), B: T.Tensor((1,), "float32")):
        with T.Kernel(1) as bx:
            acc = T.alloc_local((1,), "float32")
            acc[0] = T.float32(0.5)
            for i in T.serial(8):
                T.atomic_add(acc[0], A[i])
            B[0] = acc[0]

    text = inline_constants(main).script()
    assert "acc: T.float32 = T.float32(0.5)" in text  # still declared and stored
    assert 'T.tl.atomic_elem("add", acc, A[i], 0)' in text  # not the constant 0.5


def test_region_extents_over_once_assigned_names_fold_to_their_constant():
    """TileLang's MLA decode copies `KV[b, kv_start:kv_end, h, :]` into a 64-row tile, with
    kv_start and kv_end assigned from the loop index: the extent is always 64."""
    import numpy as np

    import tilelang_core as tilelang

    @T.prim_func
    def main(KV: T.Tensor((2, 256, 64), "float32"), O: T.Tensor((2, 256, 64), "float32")):
        with T.Kernel(2, threads=128) as b:
            S = T.alloc_shared((64, 64), "float32")
            for k in T.serial(4):
                kv_start = k * 64
                kv_end = (k + 1) * 64
                T.copy(KV[b, kv_start:kv_end, :], S)
                T.copy(S, O[b, kv_start:kv_end, :])

    a = np.random.default_rng(6).standard_normal((2, 256, 64)).astype("float32")
    o = np.full_like(a, np.nan)
    tilelang.compile(main, target="cpu")(a, o)
    np.testing.assert_array_equal(o, a)


def test_an_index_vector_assigned_once_is_inlined():
    """`idx = T.Ramp(tid * 2, 1, 2)` (a one-element int32x2 local) becomes the vector index
    itself; a vector local read from a buffer stays a local."""
    @T.prim_func
    def main(A: T.Tensor((256,), "float32"), B: T.Tensor((256,), "int32"), C: T.Tensor((256,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            tid = T.get_thread_binding()
            idx = T.Ramp(tid * 2, 1, 2)
            loaded = B[T.Ramp(tid * 2, 1, 2)]
            C[idx] = A[idx] + A[loaded]

    text = inline_constants(main).script()
    assert "idx:" not in text and "C[tid * 2:tid * 2 + 2] = A[T.Ramp(tid * 2, 1, 2)]" in text
    assert "loaded: T.int32x2 = B[" in text
