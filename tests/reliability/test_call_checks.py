"""Call-time checks: a scalar must fit its parameter's dtype exactly, a tensor the kernel writes
must be writable, and a tensor past the kernel's 32-bit index width is refused. Each error
names the parameter, the value seen and the fix; both call paths (the checked path and the
generated guard of later calls) agree."""
from __future__ import annotations

import numpy as np
import pytest

import tilelang_core as tilelang
from tilelang_core import language as T
from tilelang_core.runtime import KernelCallError


def add_scalar(dtype="int32", n=16):
    @T.prim_func
    def main(X: T.Tensor((n,), "int64"), s: T.int32, Y: T.Tensor((n,), "int64")):
        with T.Kernel(1, threads=1):
            for i in T.Parallel(n):
                Y[i] = X[i] + T.Cast("int64", s)
    if dtype != "int32":
        raise NotImplementedError
    return main


def scale_f32(n=16):
    @T.prim_func
    def main(X: T.Tensor((n,), "float32"), s: T.float32, Y: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=1):
            for i in T.Parallel(n):
                Y[i] = X[i] * s
    return main


def copy_in_place(n=16):
    @T.prim_func
    def main(X: T.Tensor((n,), "float32"), Y: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=1):
            for i in T.Parallel(n):
                Y[i] = X[i] + 1.0
    return main


def copy_dynamic():
    n = T.dynamic("n")

    @T.prim_func
    def main(X: T.Tensor((n,), "int8"), Y: T.Tensor((n,), "int8")):
        with T.Kernel(T.ceildiv(n, 64), threads=1) as bx:
            for i in T.Parallel(64):
                if bx * 64 + i < n:
                    Y[bx * 64 + i] = X[bx * 64 + i]
    return main


@pytest.fixture
def adder(cache_dir):
    return tilelang.compile(add_scalar(), out_idx=[2], target="cpu")


@pytest.mark.parametrize("warm", [False, True])  # the checked path, then the guard
@pytest.mark.parametrize("value, words", [
    (3.9, [r"'s'", "int32", "3.9", "not an integer", "round"]),
    (2 ** 40 + 5, [r"'s'", "1099511627781", "does not fit", "int32", "T.int64"]),
    (-(2 ** 31) - 1, ["-2147483649", "does not fit", "int32"]),
    ("3", ["expected a int32 scalar", "str"]),
    (None, ["expected a int32 scalar", "NoneType"]),
])
def test_int_scalar_must_fit_exactly(adder, value, words, warm):
    x = np.arange(16, dtype=np.int64)
    if warm:
        adder(x, 1)  # builds the guard for (ndarray, int)
    with pytest.raises(KernelCallError) as info:
        adder(x, value)
    for word in words:
        assert word in str(info.value) or __import__("re").search(word, str(info.value)), (word, str(info.value))


def test_int_scalar_exact_values_pass(adder):
    x = np.arange(16, dtype=np.int64)
    for value in (3, 3.0, np.int64(7), np.int32(-2), True, 2 ** 31 - 1, -(2 ** 31)):
        np.testing.assert_array_equal(adder(x, value), x + int(value))
    for _ in range(3):  # the guard path too
        np.testing.assert_array_equal(adder(x, 5), x + 5)


def test_float32_scalar_past_its_range_is_refused(cache_dir):
    kernel = tilelang.compile(scale_f32(), out_idx=[2], target="cpu")
    x = np.ones(16, dtype=np.float32)
    np.testing.assert_allclose(kernel(x, 2.5), x * 2.5)
    with pytest.raises(KernelCallError, match=r"'s'.*1e\+300.*float32.*infinity.*float64"):
        kernel(x, 1e300)
    assert np.isinf(kernel(x, float("inf"))).all()  # infinity itself is a float32 value


@pytest.mark.parametrize("warm", [False, True])
@pytest.mark.parametrize("make", ["readonly", "bytes"])
def test_read_only_output_is_refused(cache_dir, make, warm):
    kernel = tilelang.compile(copy_in_place(), target="cpu")
    x = np.zeros(16, dtype=np.float32)
    if warm:
        kernel(x, np.zeros(16, dtype=np.float32))
    if make == "readonly":
        y = np.zeros(16, dtype=np.float32)
        y.setflags(write=False)
    else:
        y = np.frombuffer(bytes(64), dtype=np.float32)
    with pytest.raises(KernelCallError, match=r"argument 'Y'.*writes this tensor.*read-only.*copy"):
        kernel(x, y)
    assert not y.any()


def test_read_only_input_is_fine(cache_dir):
    kernel = tilelang.compile(copy_in_place(), target="cpu")
    x = np.frombuffer(np.arange(16, dtype=np.float32).tobytes(), dtype=np.float32)  # read-only
    y = np.zeros(16, dtype=np.float32)
    kernel(x, y)
    kernel(x, y)
    np.testing.assert_allclose(y, x + 1)


@pytest.mark.parametrize("warm", [False, True])
def test_tensor_past_the_index_width_is_refused(cache_dir, warm):
    kernel = tilelang.compile(copy_dynamic(), out_idx=[1], target="cpu")
    small = np.arange(100, dtype=np.int8)
    if warm:
        np.testing.assert_array_equal(kernel(small), small)
    huge = np.empty(2 ** 31 + 5, dtype=np.int8)  # never touched: no memory is committed
    with pytest.raises(KernelCallError, match=r"'X'.*2147483653.*32-bit index width.*split"):
        kernel(huge)
