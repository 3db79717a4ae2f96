"""guard_memory_access: TileLang's safe memory access (loads past a global tensor read 0, stores
there are skipped), proven away where the launch covers whole tiles."""
from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import tilelang_core as tilelang
from tilelang_core import language as T
from tilelang_core.jit.api import lower
from tilelang_core.jit.options import CompileOptions
from tilelang_core.plugin.manager import get_plugin_manager
from tilelang_core.transform.errors import TileLangCompileError
from tilelang_core.transform.safe_access import TileLangWarning

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "cuda"))


def scale(M, N, bm=32, bn=64):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            for i, j in T.Parallel(bm, bn):
                B[by * bm + i, bx * bn + j] = A[by * bm + i, bx * bn + j] * 2.0 + 1.0
    return main


def shifted_read(n=100, block=32):
    """Each element reads its right neighbour: the last one reads past the end (0 there)."""
    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, block), threads=32) as bx:
            for i in T.Parallel(block):
                if bx * block + i < n:
                    B[bx * block + i] = A[bx * block + i + 1]
    return main


def gather(n=64, m=16):
    """Reads A at indices another tensor holds: an index past the end reads 0."""
    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), idx: T.Tensor((m,), "int32"), B: T.Tensor((m,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            for i in T.Parallel(m):
                B[i] = A[idx[i]]
    return main


def masked_by_user(M=70, N=130, bm=32, bn=64):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            for i, j in T.Parallel(bm, bn):
                if by * bm + i < M and bx * bn + j < N:
                    B[by * bm + i, bx * bn + j] = A[by * bm + i, bx * bn + j]
    return main


def _ifs(func) -> int:
    return lower(func, get_plugin_manager().parse_target("cpu"), CompileOptions()).script().count("if ")


def test_whole_tiles_compile_without_a_guard():
    assert _ifs(scale(64, 128)) == 0


def test_partial_tiles_are_guarded_and_hand_guards_are_not_doubled():
    assert _ifs(scale(70, 130)) >= 1
    text = lower(masked_by_user(), get_plugin_manager().parse_target("cpu"), CompileOptions()).script()
    assert "T.if_then_else" not in text, text  # the user's if proves the load in bounds


def test_guard_can_be_turned_off_as_in_tilelang():
    text = lower(scale(70, 130), get_plugin_manager().parse_target("cpu"),
                 CompileOptions.from_pass_configs({"tl.disable_safe_memory_legalize": True})).script()
    assert "if " not in text


@pytest.mark.parametrize("M, N", [(70, 130), (33, 65), (64, 128)])
def test_cpu_run_at_ragged_sizes(M, N):
    kernel = tilelang.compile(scale(M, N), target="cpu")
    a = np.random.default_rng(M).standard_normal((M, N)).astype("float32")
    b = np.full((M, N), np.nan, "float32")
    kernel(a, b)
    np.testing.assert_allclose(b, a * 2 + 1, rtol=1e-6)


def test_cpu_loads_past_the_end_read_zero():
    kernel = tilelang.compile(shifted_read(), target="cpu")
    a = np.random.default_rng(1).standard_normal(100).astype("float32")
    b = np.full(100, np.nan, "float32")
    kernel(a, b)
    np.testing.assert_array_equal(b, np.append(a[1:], 0.0))


def test_cpu_gathered_index_out_of_range_reads_zero():
    kernel = tilelang.compile(gather(), target="cpu")
    a = np.random.default_rng(2).standard_normal(64).astype("float32")
    idx = np.array([0, 5, 63, 64, 1000, -1, 7, 2, 3, 4, 5, 6, 7, 8, 9, 10], "int32")
    b = np.full(16, np.nan, "float32")
    kernel(a, idx, b)
    expected = np.where((idx >= 0) & (idx < 64), a[np.clip(idx, 0, 63)], 0.0)
    np.testing.assert_array_equal(b, expected)


def test_emulated_simt_run_at_a_ragged_size():
    from tir_emulator import run_kernel

    M, N = 40, 72
    lowered = lower(scale(M, N), get_plugin_manager().parse_target("cuda/sm_80"), CompileOptions())
    a = np.random.default_rng(3).standard_normal((M, N)).astype("float32")
    b = np.full((M, N), np.nan, "float32")
    run_kernel(lowered, a, b)
    np.testing.assert_allclose(b, a * 2 + 1, rtol=1e-6)


def test_negative_control_without_the_guard_the_emulator_sees_the_overrun():
    """The same kernel with the guard turned off writes past B (the emulator refuses it):
    the passing run above is the guard's doing."""
    from tir_emulator import run_kernel

    M, N = 40, 72
    lowered = lower(scale(M, N), get_plugin_manager().parse_target("cuda/sm_80"),
                    CompileOptions.from_pass_configs({"tl.disable_safe_memory_legalize": True}))
    a = np.zeros((M, N), "float32")
    b = np.zeros((M, N), "float32")
    with pytest.raises(Exception):
        run_kernel(lowered, a, b)


def test_certain_out_of_bounds_is_still_an_error():
    @T.prim_func
    def main(A: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            for i in T.Parallel(8):
                A[i + 64] = 1.0

    with pytest.raises(TileLangCompileError, match=r"64\.\.71"):
        tilelang.compile(main, target="cpu")


def test_shared_index_the_analysis_cannot_bound_warns():
    @T.prim_func
    def main(A: T.Tensor((64,), "int32"), B: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=64) as bx:
            S = T.alloc_shared((64,), "float32")
            for i in T.Parallel(64):
                S[i] = 1.0
            for i in T.Parallel(64):
                B[i] = S[A[i]]

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        lower(main, get_plugin_manager().parse_target("cpu"), CompileOptions())  # no cache: the pass runs
    assert any(issubclass(w.category, TileLangWarning) and "S[A[i]]" in str(w.message) for w in seen), \
        [str(w.message) for w in seen]


def test_an_element_whose_address_is_taken_is_not_masked():
    """`T.access_ptr(KV[idx[i], ...])` hands an address to the kernel's own code (TileLang's
    MLA producers feed T.ptx_cp_async so): an address cannot be masked to 0, so the guard
    leaves it as written; the plain load beside it is still guarded."""
    N, M = 64, 16

    @T.prim_func
    def main(A: T.Tensor((N, 8), "float16"), Idx: T.Tensor((M,), "int32"), B: T.Tensor((M, 8), "float16"),
             C: T.Tensor((M,), "float16")):
        with T.Kernel(1, threads=32) as bx:
            tx = T.get_thread_binding()
            S = T.alloc_shared((M, 8), "float16")
            if tx < M:
                T.ptx_cp_async(T.access_ptr(S[tx, 0], "w", 8), T.access_ptr(A[Idx[tx], 0], "r", 8), 8)
                C[tx] = A[Idx[tx], 1]
            T.ptx_commit_group()
            T.ptx_wait_group(0)
            T.sync_threads()
            if tx < M:
                for j in T.serial(8):
                    B[tx, j] = S[tx, j]

    lowered = lower(main, get_plugin_manager().parse_target("cuda/sm_90a"), CompileOptions())
    script = lowered.script()
    assert script.count("T.if_then_else") == 1  # the load into C only
    source = tilelang.compile(main, target="cuda/sm_90a").get_kernel_source()
    assert "cp_async" in source


def test_legalize_safe_memory_access_is_the_guard_as_a_tvm_pass():
    import tvm

    from tilelang_core.transform import LegalizeSafeMemoryAccess

    @T.prim_func
    def shifted(A: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=64) as _:
            S = T.alloc_shared((64, 64), "float32")
            tid = T.get_thread_binding()
            for j in T.serial(64):
                S[tid, j] = A[tid + 2, j + 2]

    text = LegalizeSafeMemoryAccess()(tvm.IRModule({"main": shifted}))["main"].script()
    assert "T.if_then_else(tid + 2 < 64 and j + 2 < 64, A[tid + 2, j + 2], T.float32(0.0))" in text
