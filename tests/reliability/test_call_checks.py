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


def scale_dynamic():
    n = T.dynamic("n")

    @T.prim_func
    def main(X: T.Tensor((n,), "float32"), s: T.float32, Y: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, 64), threads=1) as bx:
            for i in T.Parallel(64):
                if bx * 64 + i < n:
                    Y[bx * 64 + i] = X[bx * 64 + i] * s
    return main


@pytest.fixture
def scaler(cache_dir):
    return tilelang.compile(scale_f32(), out_idx=[2], target="cpu")


@pytest.mark.parametrize("warm", [False, True])
@pytest.mark.parametrize("args, words", [
    (lambda: (np.zeros(16, np.float64), 1.0), [r"'X' \(parameter 0\)", "expected dtype float32, got float64"]),
    (lambda: (np.zeros(8, np.float32), 1.0), [r"'X'", r"expected shape \(16,\), got \(8,\)"]),
    (lambda: (np.zeros((4, 4), np.float32), 1.0), [r"'X'", r"expected rank 1 with shape \(16,\), got rank 2"]),
    (lambda: (np.zeros(32, np.float32)[::2], 1.0), [r"'X'", r"contiguous row-major", r"strides \(2,\)",
                                                    "ascontiguousarray"]),
    (lambda: ([1.0] * 16, 1.0), [r"'X'", "expected a tensor", "got list", "np.asarray"]),
    (lambda: (3.0, 1.0), [r"'X'", "expected a tensor", "got float"]),
    (lambda: (np.zeros(16, np.float32),), [r"takes 2 argument\(s\) \(X, s\) but got 1", r"outputs Y are allocated"]),
    (lambda: (np.zeros(16, np.float32), 1.0, np.zeros(16, np.float32)), ["but got 3"]),
    (lambda: (np.zeros(16, np.float32), np.zeros(16, np.float32)), [r"'s'", "expected a float32 scalar, got ndarray"]),
])
def test_wrong_arguments_are_named(scaler, args, words, warm):
    if warm:
        scaler(np.zeros(16, np.float32), 1.0)  # the guard for (ndarray, float) is built
    with pytest.raises(KernelCallError) as info:
        scaler(*args())
    for word in words:
        assert __import__("re").search(word, str(info.value)), (word, str(info.value))


def test_keyword_arguments_are_refused_by_name(scaler):
    with pytest.raises(TypeError, match="unexpected keyword argument 'X'"):
        scaler(X=np.zeros(16, np.float32), s=1.0)


def test_broadcast_output_is_refused(cache_dir):
    kernel = tilelang.compile(copy_in_place(), target="cpu")
    y = np.broadcast_to(np.zeros(1, np.float32), (16,))
    with pytest.raises(KernelCallError, match=r"'Y'.*(contiguous|read-only)"):
        kernel(np.zeros(16, np.float32), y)


def test_empty_tensor_on_a_symbolic_dim_returns_empty(cache_dir):
    kernel = tilelang.compile(scale_dynamic(), out_idx=[2], target="cpu")
    out = kernel(np.zeros(0, np.float32), 2.0)
    assert out.shape == (0,) and out.dtype == np.float32
    x = np.random.default_rng(0).standard_normal(65).astype(np.float32)  # one block and one element after it
    np.testing.assert_array_equal(kernel(x, 2.0), x * np.float32(2.0))


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_nan_and_infinite_scalars_pass_through_exactly(scaler, value):
    x = np.linspace(-2, 2, 16, dtype=np.float32)
    for _ in range(2):  # the checked path, then the guard
        out = kernel_out = scaler(x, value)
        expected = x * np.float32(value)
        np.testing.assert_array_equal(np.isnan(out), np.isnan(expected))
        np.testing.assert_array_equal(kernel_out[~np.isnan(expected)], expected[~np.isnan(expected)])


def test_torch_meta_tensor_is_refused_not_run(scaler):
    torch = pytest.importorskip("torch")
    x = torch.zeros(16)
    scaler(x, 1.0)  # the guard for torch CPU tensors is built: a meta tensor must not pass it
    with pytest.raises(KernelCallError, match=r"'X'.*\(device 'meta'\) has no storage"):
        scaler(torch.zeros(16, device="meta"), 1.0)


def test_torch_arguments_are_checked_like_numpy(scaler):
    torch = pytest.importorskip("torch")
    with pytest.raises(KernelCallError, match=r"'X'.*expected dtype float32, got float16"):
        scaler(torch.zeros(16, dtype=torch.float16), 1.0)
    with pytest.raises(KernelCallError, match=r"'X'.*contiguous row-major tensor, got strides \(2,\)"):
        scaler(torch.zeros(32)[::2], 1.0)
    x = torch.linspace(-1, 1, 16)
    torch.testing.assert_close(scaler(x, 3.0), x * 3.0)


@pytest.mark.parametrize("target", ["cuda/sm_90a", "hip/gfx942"])
def test_host_tensors_given_to_a_gpu_kernel_are_refused(cache_dir, target):
    # compiled here without a GPU; the call is refused before anything is loaded
    from tilelang_core.runtime import CompileError

    try:
        kernel = tilelang.compile(scale_f32(), out_idx=[2], target=target)
    except CompileError as exc:  # the device compiler is missing on this machine
        pytest.skip(f"cannot compile for {target} here: {exc}")
    with pytest.raises(KernelCallError, match=rf"'X'.*runs on {target} and needs a tensor on its device.*"
                                              r"got one with DLPack device type 1.*\.to\(device\)"):
        kernel(np.ones(16, np.float32), 1.0)


def divide(dtype, op):
    scalar = getattr(T, dtype)

    @T.prim_func
    def main(X: T.Tensor((16,), dtype), d: scalar, Y: T.Tensor((16,), dtype)):
        with T.Kernel(1, threads=1):
            for i in T.Parallel(16):
                if op == "floordiv":
                    Y[i] = X[i] // d
                elif op == "floormod":
                    Y[i] = X[i] % d
                else:
                    Y[i] = T.truncdiv(X[i], d)
    return main


@pytest.mark.parametrize("dtype", ["int32", "int64", "uint8"])
@pytest.mark.parametrize("op", ["floordiv", "floormod", "truncdiv"])
def test_integer_division_by_a_zero_scalar_fails_the_call_not_the_process(cache_dir, dtype, op):
    # on the host an integer division by zero traps (SIGFPE) and used to kill the process
    from tilelang_cpu.runtime import DeviceAssertionError

    kernel = tilelang.compile(divide(dtype, op), out_idx=[2], target="cpu")
    x = np.arange(16).astype(dtype)
    with pytest.raises(DeviceAssertionError, match=r"test_call_checks.py:\d+: integer division by zero; make the "
                                                   r"divisor nonzero or guard the division"):
        kernel(x, 0)
    expected = {"floordiv": x // 3, "floormod": x % 3, "truncdiv": x // 3}[op]  # x >= 0: trunc = floor
    np.testing.assert_array_equal(kernel(x, 3), expected)  # the kernel is fine after the fault


def test_most_negative_int_divided_by_minus_one_fails_the_call(cache_dir):
    from tilelang_cpu.runtime import DeviceAssertionError

    kernel = tilelang.compile(divide("int32", "truncdiv"), out_idx=[2], target="cpu")
    x = np.full(16, -(2 ** 31), dtype=np.int32)
    with pytest.raises(DeviceAssertionError, match="integer division overflows: the most negative value divided by -1"):
        kernel(x, -1)
    np.testing.assert_array_equal(kernel(np.arange(16, dtype=np.int32) - 8, -1), 8 - np.arange(16, dtype=np.int32))
