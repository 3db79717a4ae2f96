"""The CPU backend's lane-accumulator lowering of T.reduce_* over the last dimension
(tilelang_cpu.lower.lower_reduce): every kind, clear or accumulate, tails, symbolic lengths,
single-row tiles, integer and 16-bit sources, NaN propagation."""
from __future__ import annotations

import numpy as np
import pytest

import tilelang_core as tilelang
from tilelang_core import language as T

REDUCERS = {"max": T.reduce_max, "min": T.reduce_min, "sum": T.reduce_sum,
            "abssum": T.reduce_abssum, "absmax": T.reduce_absmax}
NUMPY = {"max": lambda v: v.max(axis=1), "min": lambda v: v.min(axis=1), "sum": lambda v: v.sum(axis=1),
         "abssum": lambda v: np.abs(v).sum(axis=1), "absmax": lambda v: np.abs(v).max(axis=1)}
COMBINE = {"max": np.maximum, "min": np.minimum, "sum": np.add, "abssum": np.add, "absmax": np.maximum}


def row_reduce(M, N, kind, clear, block_M, in_dtype="float32", acc_dtype="float32", keepdim=False):
    fn = REDUCERS[kind]
    out_shape = (M, 1) if keepdim else (M,)
    tile_out = (block_M, 1) if keepdim else (block_M,)

    @T.prim_func
    def main(X: T.Tensor((M, N), in_dtype), Y: T.Tensor(out_shape, acc_dtype)):
        with T.Kernel(T.ceildiv(M, block_M), threads=32) as bx:
            x = T.alloc_fragment((block_M, N), in_dtype)
            y = T.alloc_fragment(tile_out, acc_dtype)
            T.copy(X[bx * block_M, 0], x)
            if keepdim:
                T.copy(Y[bx * block_M, 0], y)
            else:
                T.copy(Y[bx * block_M], y)
            fn(x, y, dim=1, clear=clear)
            if keepdim:
                T.copy(y, Y[bx * block_M, 0])
            else:
                T.copy(y, Y[bx * block_M])

    return main


def check(kernel, x, y0, kind, clear, rtol):
    y = y0.copy()
    kernel(x, y)
    ref = NUMPY[kind](x.astype(np.float64))
    if not clear:
        ref = COMBINE[kind](y0.astype(np.float64).reshape(ref.shape), ref)
    np.testing.assert_allclose(y.reshape(ref.shape), ref, rtol=rtol, atol=rtol)


@pytest.mark.parametrize("kind", sorted(REDUCERS))
@pytest.mark.parametrize("clear", [True, False])
@pytest.mark.parametrize("n", [64, 100, 1031])
def test_every_kind_with_tails(kind, clear, n):
    rng = np.random.default_rng(n)
    kernel = tilelang.compile(row_reduce(10, n, kind, clear, block_M=4), target="cpu")
    assert f"{kind}_lanes" in kernel.source  # the lane lowering, not the portable one
    x = rng.uniform(-3, 3, (10, n)).astype(np.float32)
    check(kernel, x, rng.uniform(-3, 3, 10).astype(np.float32), kind, clear, 1e-5)


def test_single_row_tile_and_keepdim():
    rng = np.random.default_rng(3)
    for block_M, keepdim in [(1, False), (1, True), (2, True)]:
        kernel = tilelang.compile(row_reduce(5, 300, "sum", False, block_M, keepdim=keepdim), target="cpu")
        x = rng.uniform(-1, 1, (5, 300)).astype(np.float32)
        y0 = rng.uniform(-1, 1, (5, 1) if keepdim else 5).astype(np.float32)
        check(kernel, x, y0, "sum", False, 1e-5)


def test_short_rows_keep_the_portable_lowering():
    kernel = tilelang.compile(row_reduce(8, 40, "max", True, 4), target="cpu")
    assert "max_lanes" not in kernel.source
    x = np.random.default_rng(0).uniform(-1, 1, (8, 40)).astype(np.float32)
    check(kernel, x, np.zeros(8, np.float32), "max", True, 0)


def test_max_and_min_propagate_nan():
    x = np.random.default_rng(4).uniform(-1, 1, (4, 256)).astype(np.float32)
    x[1, 77] = np.nan
    x[2, 255] = np.nan
    for kind in ("max", "min", "sum", "absmax"):
        y = np.zeros(4, np.float32)
        tilelang.compile(row_reduce(4, 256, kind, True, 2), target="cpu")(x, y)
        assert np.isnan(y[1]) and np.isnan(y[2]) and not np.isnan(y[0]) and not np.isnan(y[3]), kind


def test_integer_sums_are_exact():
    rng = np.random.default_rng(5)
    kernel = tilelang.compile(row_reduce(6, 999, "sum", True, 3, "int32", "int32"), target="cpu")
    x = rng.integers(-1000, 1000, (6, 999)).astype(np.int32)
    y = np.zeros(6, np.int32)
    kernel(x, y)
    np.testing.assert_array_equal(y, x.sum(axis=1))
    kernel = tilelang.compile(row_reduce(6, 999, "max", True, 3, "int32", "int32"), target="cpu")
    x[4, 998] = np.iinfo(np.int32).max
    kernel(x, y)
    np.testing.assert_array_equal(y, x.max(axis=1))


def test_float16_source_accumulates_in_float32():
    rng = np.random.default_rng(6)
    kernel = tilelang.compile(row_reduce(4, 2048, "sum", True, 2, "float16", "float32"), target="cpu")
    x = rng.uniform(0, 1, (4, 2048)).astype(np.float16)
    check(kernel, x, np.zeros(4, np.float32), "sum", True, 1e-5)


def test_symbolic_row_length():
    n = T.symbolic("n")

    @T.prim_func
    def main(X: T.Tensor((4, n), "float32"), Y: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            y = T.alloc_fragment((4,), "float32")
            T.reduce_sum(X, y, dim=1)
            T.copy(y, Y)

    kernel = tilelang.compile(main, target="cpu")
    assert "sum_lanes" in kernel.source
    rng = np.random.default_rng(7)
    for length in (1, 31, 64, 65, 1000):
        x = rng.uniform(-1, 1, (4, length)).astype(np.float32)
        y = np.zeros(4, np.float32)
        kernel(x, y)
        np.testing.assert_allclose(y, x.astype(np.float64).sum(axis=1), rtol=1e-5, atol=1e-5)


BIT_NUMPY = {"bitand": np.bitwise_and, "bitor": np.bitwise_or, "bitxor": np.bitwise_xor}


@pytest.mark.parametrize("kind", sorted(BIT_NUMPY))
@pytest.mark.parametrize("dim, clear, n", [(1, True, 8), (1, False, 300), (0, True, 8), (0, False, 5)])
def test_bit_reductions(kind, dim, clear, n):
    """Both lowerings: the lanes one (dim 1, long rows) and the portable one."""
    M = 6
    out_len = M if dim == 1 else n
    fn = getattr(T, f"reduce_{kind}")

    @T.prim_func
    def main(X: T.Tensor((M, n), "int32"), Y: T.Tensor((out_len,), "int32")):
        with T.Kernel(1, threads=32) as bx:
            y = T.alloc_local((out_len,), "int32")
            T.copy(Y, y)
            fn(X, y, dim=dim, clear=clear)
            T.copy(y, Y)

    rng = np.random.default_rng()
    # high bits mostly set, so that bitand keeps some of them
    x = (rng.integers(-(1 << 31), (1 << 31) - 1, (M, n), dtype=np.int64) | -(1 << 24)).astype(np.int32)
    y0 = rng.integers(-(1 << 31), (1 << 31) - 1, out_len, dtype=np.int64).astype(np.int32)
    y = y0.copy()
    tilelang.compile(main, target="cpu")(x, y)
    ref = BIT_NUMPY[kind].reduce(x, axis=dim)
    np.testing.assert_array_equal(y, ref if clear else BIT_NUMPY[kind](ref, y0))


@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_float_max_min_start_from_infinities(dtype):
    """A row of -inf has maximum -inf (not the dtype's lowest finite value), and +inf rows
    have minimum +inf; through both lowerings (rows of 8 and of 300)."""

    def kernel_for(n):
        @T.prim_func
        def main(X: T.Tensor((4, n), dtype), Y: T.Tensor((4,), dtype), Z: T.Tensor((4,), dtype)):
            with T.Kernel(1, threads=32) as bx:
                T.reduce_max(X, Y, dim=1)
                T.reduce_min(X, Z, dim=1)
        return tilelang.compile(main, target="cpu")

    rng = np.random.default_rng()
    for n in (8, 300):
        x = rng.standard_normal((4, n)).astype(dtype)
        x[0] = -np.inf
        x[1] = np.inf
        y, z = np.zeros(4, dtype), np.zeros(4, dtype)
        kernel = kernel_for(n)
        assert "INFINITY" in kernel.source
        kernel(x, y, z)
        np.testing.assert_array_equal(y, x.max(axis=1))
        np.testing.assert_array_equal(z, x.min(axis=1))
