"""Tuple assignment to buffer elements (`a[0], a[1] = a[1], a[0]`, as TileLang's sparse
compressor swaps two indices) and the uint8 counter idiom next to it: the CPU runs them."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import tilelang_core as tilelang
from tilelang_core import language as T


def swap_kernel():
    @T.prim_func
    def main(A: T.Tensor((4,), "int32"), B: T.Tensor((4,), "int32")):
        with T.Kernel(1, threads=1):
            x = T.alloc_local((2,), "int32")
            x[0] = A[0]
            x[1] = A[1]
            x[0], x[1] = x[1], x[0]
            B[0], B[1] = x[0], x[1]
            B[2], B[3] = A[3] + 1, A[2] * 2

    return main


def test_swap_reads_every_value_before_the_first_store():
    kernel = tilelang.compile(swap_kernel(), target="cpu")
    a = np.array([5, 7, 11, 13], dtype=np.int32)
    b = np.zeros(4, dtype=np.int32)
    kernel(a, b)
    assert b.tolist() == [7, 5, 14, 22]  # sequential stores would give [7, 7, ...]


def counter_kernel():
    @T.prim_func
    def main(A: T.Tensor((8,), "float32"), B: T.Tensor((2,), "uint8")):
        with T.Kernel(1, threads=1):
            count = T.alloc_var(dtype=T.uint8)
            first = T.alloc_local((1,), "uint8")
            count = 0
            first[0] = 0
            for i in T.unroll(8):
                first[0] = T.if_then_else(A[i] != 0, i, first[0])  # i in 0..7 or the uint8 itself: fits
                count = T.if_then_else(A[i] != 0, count + 1, count)
            B[0] = count
            B[1] = first[0]

    return main


def test_uint8_counter_compiles_with_a_warning_and_counts():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        kernel = tilelang.compile(counter_kernel(), target="cpu", cache=False)
    messages = [str(w.message) for w in caught]
    assert any("computed from count itself" in m for m in messages), messages
    assert not any("first" in m and "wrap" in m for m in messages), messages  # if_then_else of values that fit
    a = np.array([0, 1, 0, 2, 3, 0, 0, 0], dtype=np.float32)
    b = np.zeros(2, dtype=np.uint8)
    kernel(a, b)
    assert b.tolist() == [3, 4]


def test_a_narrowing_store_from_another_buffer_is_still_refused():
    from tilelang_core.transform import TileLangCompileError

    @T.prim_func
    def main(A: T.Tensor((8,), "int32"), B: T.Tensor((8,), "uint8")):
        with T.Kernel(1, threads=1):
            for i in T.serial(8):
                B[i] = T.if_then_else(A[i] > 0, A[i], 0)

    with pytest.raises(TileLangCompileError, match="converts the int32 value implicitly"):
        tilelang.lower(main, target="cpu")
