"""`T.alloc_reducer` / `T.finalize_reducer` (both TileLang spellings) on CUDA, run in the NumPy
emulator of lowered TIR, and on the CPU backend: a GEMV whose row sums accumulate in a
reducer updated from a 2-D `T.Parallel` nest, every output checked against float64 NumPy.
Also: the reducer stays in registers, replicated only over the lanes of a warp, and its
finalize is a shuffle butterfly (no shared memory); buffers allocated inside `T.Pipelined`
work (they are hoisted before the loop).
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import tilelang_core
from tilelang_core import language as T
from tilelang_core.jit.api import lower
from tilelang_core.jit.options import CompileOptions
from tilelang_core.plugin import get_plugin_manager
from tilelang_core.transform.errors import TileLangCompileError

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tir_emulator import run_kernel  # noqa: E402


def gemv(M: int, N: int, bm: int, bn: int, threads: int, spelling: str = "v1", op: str = "sum"):
    """o[i] = op over j of a[i, j] * x[j]; the buffers are allocated inside T.Pipelined."""

    @T.prim_func
    def kernel(a: T.Tensor((M, N), "float16"), x: T.Tensor((N,), "float16"), o: T.Tensor((M,), "float32")):
        with T.Kernel(T.ceildiv(M, bm), threads=threads) as bx:
            if spelling == "v1":
                acc = T.alloc_reducer((bm,), "float32", op=op, replication="all")
                if op == "sum":
                    T.clear(acc)
                else:
                    T.fill(acc, -T.infinity("float32"))
            else:
                acc = T.alloc_reducer((bm,), "float32", op=op)
                res = T.alloc_fragment((bm,), "float32")
                T.reducer_init(acc)
            for kk in T.Pipelined(T.ceildiv(N, bn), num_stages=2):
                a_s = T.alloc_shared((bm, bn), "float16")
                T.copy(a[bx * bm, kk * bn], a_s)
                a_f = T.alloc_fragment((bm, bn), "float16")
                T.copy(a_s, a_f)
                x_f = T.alloc_fragment((bn,), "float16")
                T.copy(x[kk * bn], x_f)
                for i, j in T.Parallel(bm, bn):
                    if spelling == "v1":
                        if op == "sum":
                            acc[i] += a_f[i, j] * x_f[j]
                        else:
                            acc[i] = T.max(acc[i], a_f[i, j] * x_f[j])
                    else:
                        T.reducer_update(acc[i], a_f[i, j] * x_f[j])
            if spelling == "v1":
                T.finalize_reducer(acc)
                T.copy(acc, o[bx * bm])
            else:
                T.finalize_reducer(acc, res)
                T.copy(res, o[bx * bm])

    return kernel


def _inputs(M, N, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((M, N)).astype(np.float16), rng.standard_normal(N).astype(np.float16)


def _reference(a, x, op):
    prod = a.astype(np.float32) * x.astype(np.float32)  # each product rounded once, as the kernel does
    return prod.astype(np.float64).sum(axis=1) if op == "sum" else prod.max(axis=1)


CASES = [("v1", "sum", 32, 64, 128), ("v2", "sum", 32, 64, 128), ("v1", "max", 32, 64, 128),
         ("v2", "max", 16, 32, 64)]


@pytest.mark.parametrize("spelling,op,bm,bn,threads", CASES)
def test_reducer_gemv_in_the_emulator(spelling, op, bm, bn, threads):
    M, N = 2 * bm, 2 * bn
    a, x = _inputs(M, N)
    lowered = lower(gemv(M, N, bm, bn, threads, spelling, op), get_plugin_manager().parse_target("cuda/sm_90a"),
                    CompileOptions())
    o = np.full(M, np.nan, np.float32)
    run_kernel(lowered, a, x, o)
    np.testing.assert_allclose(o, _reference(a, x, op), rtol=1e-5, atol=1e-4)
    script = lowered.script()
    assert "tl.shfl_xor" in script and "acc_partials" not in script  # lanes of a warp: shuffles only


@pytest.mark.parametrize("spelling,op", [("v1", "sum"), ("v2", "max")])
def test_reducer_gemv_on_the_cpu(spelling, op):
    M, N = 64, 256
    a, x = _inputs(M, N, seed=1)
    kernel = tilelang_core.compile(gemv(M, N, 32, 64, 128, spelling, op), target="cpu")
    o = np.full(M, np.nan, np.float32)
    kernel(a, x, o)
    np.testing.assert_allclose(o, _reference(a, x, op), rtol=1e-5, atol=1e-4)


def test_reducer_compiles_with_nvrtc_and_stays_in_registers():
    kernel = tilelang_core.compile(gemv(256, 1024, 128, 128, 256), target="cuda/sm_90a")
    src = kernel.get_kernel_source()
    assert "acc_reg[" in src and "__shfl_xor_sync" in src


def test_a_reducer_that_cannot_stay_in_registers_is_an_error():
    # updated from a nest that indexes no register fragment by both loop variables: its
    # layout cannot follow the updates, so the threads would race; that must not compile
    @T.prim_func
    def racy(a: T.Tensor((64, 64), "float32"), o: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=128):
            acc = T.alloc_reducer((64,), "float32", replication="all")
            a_s = T.alloc_shared((64, 64), "float32")
            T.copy(a, a_s)
            T.clear(acc)
            for i, j in T.Parallel(64, 64):
                acc[i] += a_s[i, j]
            T.finalize_reducer(acc)
            T.copy(acc, o)

    with pytest.raises(TileLangCompileError, match="could not stay in registers"):
        tilelang_core.compile(racy, target="cuda/sm_90a")


def test_reducer_arguments_are_checked():
    with pytest.raises(Exception, match="op must be one of"):
        @T.prim_func
        def bad(o: T.Tensor((64,), "float32")):
            with T.Kernel(1, threads=64):
                acc = T.alloc_reducer((64,), "float32", op="mean")
                T.copy(acc, o)
    with pytest.raises(Exception, match="is not a reducer"):
        @T.prim_func
        def not_one(o: T.Tensor((64,), "float32")):
            with T.Kernel(1, threads=64):
                frag = T.alloc_fragment((64,), "float32")
                T.finalize_reducer(frag)
                T.copy(frag, o)


def test_a_replicated_reducer_updated_from_a_spread_nest_in_the_emulator():
    # TileLang's short-extent case: a (1,) reducer every thread holds a copy of, updated from a
    # T.Parallel(8) whose iterations each run on one of 128 threads; the copies are partials
    # the finalize combines (across warps too)
    @T.prim_func
    def short(a: T.Tensor((8,), "float32"), o: T.Tensor((1,), "float32")):
        with T.Kernel(1, threads=128):
            src = T.alloc_fragment((8,), "float32")
            T.copy(a, src)
            total = T.alloc_reducer((1,), "float32", replication="all")
            T.clear(total)
            for i in T.Parallel(8):
                total[0] += src[i]
            T.finalize_reducer(total)
            if T.get_thread_binding() == 0:
                o[0] = total[0]

    lowered = lower(short, get_plugin_manager().parse_target("cuda/sm_90a"), CompileOptions())
    a = np.arange(1, 9, dtype=np.float32)
    o = np.full(1, np.nan, np.float32)
    run_kernel(lowered, a, o)
    assert o[0] == a.sum()


def test_nan_propagating_reduction_in_the_emulator():
    def program(nan_propagate):
        @T.prim_func
        def main(a: T.Tensor((4, 64), "float32"), o: T.Tensor((4,), "float32")):
            with T.Kernel(1, threads=128):
                x = T.alloc_fragment((4, 64), "float32")
                y = T.alloc_fragment((4,), "float32")
                T.copy(a, x)
                T.reduce_max(x, y, dim=1, nan_propagate=nan_propagate)
                T.copy(y, o)

        return lower(main, get_plugin_manager().parse_target("cuda/sm_90a"), CompileOptions())

    a = np.arange(256, dtype=np.float32).reshape(4, 64)
    a[2, 17] = np.nan
    o = np.zeros(4, np.float32)
    run_kernel(program(True), a, o)
    assert np.isnan(o[2]) and not np.isnan(o[[0, 1, 3]]).any()
    np.testing.assert_array_equal(o[[0, 1, 3]], a[[0, 1, 3]].max(axis=1))
