"""`T.alloc_local` on a block-serial target: a T.Parallel nest's iterations run one after another
and share the buffer a GPU gives each thread, so a nest that reads an element it did not write
in the same iteration is refused at the read's line (it would read another iteration's value:
a silent wrong answer). Per-iteration elements and scratch written before it is read compile
and run."""
from __future__ import annotations

import numpy as np
import pytest

import tilelang_core
from tilelang_core import language as T
from tilelang_core.transform import CapabilityError


def _carried(threads=4):
    @T.prim_func
    def main(A: T.Tensor((4,), "float32"), B: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=threads):
            acc = T.alloc_local((1,), "float32")
            for t in T.Parallel(4):
                acc[0] = A[t]
            for t in T.Parallel(4):
                B[t] = acc[0] + 1.0

    return main


def _accumulated():
    @T.prim_func
    def main(A: T.Tensor((4, 8), "float32"), B: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=4):
            acc = T.alloc_local((1,), "float32")
            for t in T.Parallel(4):
                acc[0] = 0.0
            for t in T.Parallel(4):
                for k in T.serial(8):
                    acc[0] += A[t, k]
                B[t] = acc[0]

    return main


def _per_iteration():
    @T.prim_func
    def main(A: T.Tensor((4,), "float32"), B: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=4):
            acc = T.alloc_local((4,), "float32")
            tmp = T.alloc_local((1,), "float32")
            for t in T.Parallel(4):
                tmp[0] = A[t] * 2.0
                acc[t] = tmp[0]
            for t in T.Parallel(4):
                B[t] = acc[t]

    return main


@pytest.mark.parametrize("make", [_carried, _accumulated])
def test_state_carried_across_iterations_is_refused_on_block_serial_targets(make):
    with pytest.raises(CapabilityError, match=r"T.alloc_local buffer acc is read in this T.Parallel before the "
                                              r"iteration writes it.*block-serial"):
        tilelang_core.compile(make(), target="cpu", cache=False)
    # a GPU gives each thread its own: compiles
    assert "acc" in tilelang_core.compile(make(), target="cuda/sm_80", cache=False).get_kernel_source()


def test_one_thread_per_block_keeps_its_meaning():
    kernel = tilelang_core.compile(_carried(threads=1), target="cpu", cache=False)
    a = np.arange(4, dtype=np.float32)
    b = np.full(4, np.nan, np.float32)
    kernel(a, b)  # T.Parallel(4) on 1 thread: one thread runs all iterations, as on a GPU
    np.testing.assert_array_equal(b, np.full(4, 4.0, np.float32))


def test_elements_per_iteration_and_scratch_written_first_run():
    kernel = tilelang_core.compile(_per_iteration(), target="cpu", cache=False)
    a = np.random.default_rng(0).standard_normal(4).astype(np.float32)
    b = np.full(4, np.nan, np.float32)
    kernel(a, b)
    np.testing.assert_array_equal(b, a * 2)
