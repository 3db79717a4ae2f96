"""Atomics on the CPU backend, against NumPy: every form of the language (tilelang_core.language.
atomics) through the portable lowering and tl_cpu.h's helpers (16-bit floats, or, load/store,
memory orders), from one block and from many blocks running on several threads."""
from __future__ import annotations

import numpy as np
import pytest

import tilelang_core as tilelang
from tilelang_core import language as T
from tilelang_core.codegen.builtins import MEMORY_ORDERS

NUMPY_DTYPES = {"float16": np.float16, "float32": np.float32, "float64": np.float64, "int32": np.int32,
                "int64": np.int64}


def bf16_round(x: np.ndarray) -> np.ndarray:
    """float32 values rounded to bfloat16 (ties to even), as float32."""
    bits = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return bits.astype(np.uint32).view(np.float32)


def scalar_into_one_cell(kind, dtype, n, blocks, order):
    emit = {"add": T.atomic_add, "max": T.atomic_max, "min": T.atomic_min}[kind]

    @T.prim_func
    def main(A: T.Tensor((blocks, n), dtype), B: T.Tensor((1,), dtype)):
        with T.Kernel(blocks) as bx:
            for i in T.Parallel(n):
                emit(B[0], A[bx, i], memory_order=order)

    return main


@pytest.mark.parametrize("kind, dtype", [("add", "float16"), ("add", "float32"), ("add", "int64"),
                                         ("max", "float16"), ("max", "float64"), ("min", "int32")])
def test_scalar_atomics_from_many_blocks(kind, dtype):
    rng = np.random.default_rng()
    blocks, n = 64, 512  # enough work that the blocks run on several threads
    kernel = tilelang.compile(scalar_into_one_cell(kind, dtype, n, blocks, "seq_cst"), target="cpu")
    assert "__ATOMIC_SEQ_CST" in kernel.source
    if dtype.startswith("float"):
        # small integers: every partial sum is exact in any order, even in float16
        a = rng.integers(-2, 3, (blocks, n)).astype(dtype)
    else:
        a = rng.integers(-1000, 1000, (blocks, n)).astype(dtype)
    start = np.array([3], dtype)
    b = start.copy()
    kernel(a, b)
    ref = {"add": lambda: start + a.sum(dtype=np.float64).astype(dtype), "max": lambda: np.maximum(start, a.max()),
           "min": lambda: np.minimum(start, a.min())}[kind]()
    np.testing.assert_array_equal(b, ref)


@pytest.mark.parametrize("kind", ["add", "max", "min"])
def test_bfloat16_atomics_round_each_update(kind):
    emit = {"add": T.atomic_add, "max": T.atomic_max, "min": T.atomic_min}[kind]
    n = 16

    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), B: T.Tensor((1,), "float32")):
        with T.Kernel(1) as bx:
            acc = T.alloc_local((1,), "bfloat16")
            acc[0] = T.bfloat16(0.5)
            for i in T.serial(n):
                emit(acc[0], A[i])
            B[0] = acc[0]

    a = np.random.default_rng().uniform(-4, 4, n).astype(np.float32)
    b = np.zeros(1, np.float32)
    tilelang.compile(main, target="cpu")(a, b)
    acc = np.float32(0.5)
    for x in bf16_round(a):  # the value is converted to bfloat16, then combined and rounded
        acc = bf16_round(np.array([{"add": acc + x, "max": max(acc, x), "min": min(acc, x)}[kind]]))[0]
    np.testing.assert_array_equal(b, [acc])


@pytest.mark.parametrize("kind, order", [("add", None), ("add", "release"), ("max", "acq_rel"), ("min", "seq_cst")])
def test_return_prev_gives_the_value_before_each_update(kind, order):
    emit = {"add": T.atomic_add, "max": T.atomic_max, "min": T.atomic_min}[kind]
    n = 12

    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), B: T.Tensor((1,), "float32"), P: T.Tensor((n,), "float32")):
        with T.Kernel(1) as bx:
            for i in T.serial(n):
                P[i] = emit(B[0], A[i], memory_order=order, return_prev=True)

    kernel = tilelang.compile(main, target="cpu")
    assert f"__ATOMIC_{(order or 'relaxed').upper()}" in kernel.source
    a = np.random.default_rng().standard_normal(n).astype(np.float32)
    b, p = np.array([0.25], np.float32), np.full(n, np.nan, np.float32)
    kernel(a, b, p)
    combine = {"add": np.add, "max": np.maximum, "min": np.minimum}[kind]
    expected, acc = np.empty(n, np.float32), np.float32(0.25)
    for i in range(n):
        expected[i], acc = acc, combine(acc, a[i])
    np.testing.assert_array_equal(p, expected)
    np.testing.assert_array_equal(b, [acc])


def test_atomic_or_from_many_blocks():
    blocks, n = 64, 256

    @T.prim_func
    def main(A: T.Tensor((blocks, n), "int32"), B: T.Tensor((2,), "int32")):
        with T.Kernel(blocks) as bx:
            for i in T.Parallel(n):
                T.atomic_or(B[0], A[bx, i])
                T.atomic_or(B[1], A[bx, i], memory_order="seq_cst")

    a = (np.int32(1) << np.random.default_rng().integers(0, 31, (blocks, n), dtype=np.int32)).astype(np.int32)
    a[0, 0] = 0
    b = np.array([0, 1 << 30], np.int32)
    tilelang.compile(main, target="cpu")(a, b)
    ref = np.bitwise_or.reduce(a.ravel())
    np.testing.assert_array_equal(b, [ref, ref | (1 << 30)])


@pytest.mark.parametrize("dtype", ["float16", "float32", "int64"])
def test_atomic_load_and_store(dtype):
    @T.prim_func
    def main(A: T.Tensor((4,), dtype), B: T.Tensor((4,), dtype)):
        with T.Kernel(1) as bx:
            for i in T.serial(4):
                x = T.atomic_load(A[i], memory_order="acquire")
                T.atomic_store(B[3 - i], x + T.cast(1, dtype), memory_order="release")

    a = np.random.default_rng().integers(-100, 100, 4).astype(dtype)
    b = np.zeros(4, dtype)
    tilelang.compile(main, target="cpu")(a, b)
    np.testing.assert_array_equal(b, (a + 1)[::-1])


@pytest.mark.parametrize("lanes, dtype", [(2, "float16"), (4, "float32"), (2, "int32")])
def test_atomic_add_x2_x4_adds_consecutive_elements(lanes, dtype):
    emit = T.atomic_addx2 if lanes == 2 else T.atomic_addx4

    @T.prim_func
    def main(V: T.Tensor((3, 8), dtype), D: T.Tensor((3, 8), dtype)):
        with T.Kernel(1) as bx:
            emit(D[1, 2], V[2, 4])            # points: from D[1, 2] and V[2, 4]
            emit(D[0, 4:4 + lanes], V[0, 0:lanes])  # regions

    rng = np.random.default_rng()
    v = rng.integers(-50, 50, (3, 8)).astype(dtype)
    d = rng.integers(-50, 50, (3, 8)).astype(dtype)
    expected = d.copy()
    expected[1, 2:2 + lanes] += v[2, 4:4 + lanes]
    expected[0, 4:4 + lanes] += v[0, 0:lanes]
    tilelang.compile(main, target="cpu")(v, d)
    np.testing.assert_array_equal(d, expected)


def test_block_atomics_with_a_scalar_and_with_a_block():
    M, N = 6, 8

    @T.prim_func
    def main(A: T.Tensor((M - 2, N), "float32"), B: T.Tensor((M, N), "float32"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(1) as bx:
            T.atomic_add(B, 2)                                   # every element + 2
            T.atomic_add(B[1:M - 1, :], A, memory_order="acq_rel")  # a sliced block
            local = T.alloc_local((M, N), "float32")
            T.copy(C, local)
            T.atomic_max(local[2:M, :], A)
            T.atomic_min(local, 0.5)
            T.copy(local, C)

    rng = np.random.default_rng()
    a = rng.standard_normal((M - 2, N)).astype(np.float32)
    b = rng.standard_normal((M, N)).astype(np.float32)
    c = rng.standard_normal((M, N)).astype(np.float32)
    expected_b = b + np.float32(2)
    expected_b[1:M - 1] += a
    expected_c = c.copy()
    expected_c[2:] = np.maximum(expected_c[2:], a)
    expected_c = np.minimum(expected_c, np.float32(0.5))
    tilelang.compile(main, target="cpu")(a, b, c)
    np.testing.assert_array_equal(b, expected_b)
    np.testing.assert_array_equal(c, expected_c)


def test_use_tma_needs_the_tma_engine():
    @T.prim_func
    def main(A: T.Tensor((4, 8), "float32"), B: T.Tensor((4, 8), "float32")):
        with T.Kernel(1) as bx:
            T.atomic_add(B, A, use_tma=True)

    with pytest.raises(Exception, match=r"use_tma=True\) needs the TMA copy engine \(capability 'tma'\)"):
        tilelang.compile(main, target="cpu")


def test_previous_values_of_a_vector_atomic_are_a_compile_error():
    @T.prim_func
    def main(D: T.Tensor((2,), "float16"), V: T.Tensor((2,), "float16"), P: T.Tensor((2,), "float16")):
        with T.Kernel(1) as bx:
            P[0:2] = T.atomic_addx2(D[0:2], V[0:2], return_prev=True)

    with pytest.raises(Exception, match="return_prev=True"):
        tilelang.compile(main, target="cpu")


def test_memory_orders_print_as_gcc_constants():
    assert len(MEMORY_ORDERS) == 6
    kernel = tilelang.compile(scalar_into_one_cell("add", "float32", 4, 1, "consume"), target="cpu")
    assert "tl_atomic_add_f32(&B[0], A[i], __ATOMIC_CONSUME)" in kernel.source
