"""`T.reinterpret` of 8- and 16-bit integer arithmetic: C promotes the arithmetic to int, so the
printer converts back to the expression's type before the bit cast (TileLang's fp4/mxfp4/w4a8
dequantizing GEMMs build half, bfloat16 and int8 patterns this way)."""
from __future__ import annotations

import numpy as np
import pytest

import tilelang_core as tilelang
from tilelang_core import language as T


def patterns():
    @T.prim_func
    def main(A: T.Tensor((64,), "uint8"), B: T.Tensor((64,), "float16"), C: T.Tensor((64,), "int8")):
        with T.Kernel(1, threads=64) as bx:
            for i in T.Parallel(64):
                B[i] = T.reinterpret("float16", (T.Cast("uint16", A[i]) << T.uint16(8)) | T.uint16(0x3C))
                C[i] = T.reinterpret("int8", (A[i] & T.uint8(15)) << T.uint8(4)) >> T.int8(4)
    return main


def test_cpu_bits_match_numpy():
    a = np.random.default_rng(0).integers(0, 256, 64).astype("uint8")
    b, c = np.zeros(64, "float16"), np.zeros(64, "int8")
    tilelang.compile(patterns(), target="cpu")(a, b, c)
    np.testing.assert_array_equal(b.view(np.uint16), (a.astype(np.uint16) << 8) | 0x3C)
    np.testing.assert_array_equal(c, ((a & 15) << 4).astype(np.uint8).view(np.int8) >> 4)


@pytest.mark.parametrize("target", ["cuda/sm_90a", "cuda/sm_80"])
def test_cuda_compiles_with_the_narrowing_cast(target):
    source = tilelang.compile(patterns(), target=target).get_kernel_source()  # NVRTC accepted it
    assert "__builtin_bit_cast(half_t, ((uint16_t)(" in source
    assert "__builtin_bit_cast(int8_t, ((uint8_t)(" in source


def test_tilelang_argument_order_and_tvmscript_order_both_work():
    """TileLang writes `T.reinterpret(value, dtype)` (like `T.cast`); TVMScript writes the dtype
    first. Both mean the same bit cast."""
    @T.prim_func
    def main(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "int32"), C: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=64) as bx:
            for i in T.Parallel(64):
                B[i] = T.reinterpret(A[i] * 2.0, "int32")
                C[i] = T.reinterpret(T.float32, B[i] + 1)

    a = np.random.default_rng(1).random(64).astype("float32")
    b, c = np.zeros(64, "int32"), np.zeros(64, "float32")
    tilelang.compile(main, target="cpu")(a, b, c)
    np.testing.assert_array_equal(b, (a * 2).view(np.int32))
    np.testing.assert_array_equal(c.view(np.int32), b + 1)


def test_a_null_handle_from_its_bits():
    """TileLang's GEMV writes `T.reinterpret(T.uint64(0), dtype="handle")` for the null pointer
    argument of `T.tvm_thread_allreduce`."""
    value = T.reinterpret(T.uint64(0), dtype="handle")
    assert str(value.ty) in ("handle", "T.handle") or "handle" in str(value.ty)


def test_half_values_computed_in_float_are_stored_before_their_bits_are_read():
    """Where float16/bfloat16 arithmetic runs in float (CUDA's storage types), the bits of a
    half value are those of the value stored as half (TileLang's top-k selector), and a half
    made from bits joins float arithmetic like a load of it (the mxfp4 dequantizing GEMM)."""
    @T.prim_func
    def main(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "int16"), C: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=64) as bx:
            for i in T.Parallel(64):
                B[i] = T.reinterpret(T.Cast("float16", A[i] * 2.0), "int16")
                C[i] = T.reinterpret(T.Cast("int16", B[i]), "float16") * A[i]

    a = np.random.default_rng(2).standard_normal(64).astype("float32")
    b, c = np.zeros(64, "int16"), np.zeros(64, "float32")
    tilelang.compile(main, target="cpu")(a, b, c)
    half = (a * 2).astype(np.float16)
    np.testing.assert_array_equal(b, half.view(np.int16))
    np.testing.assert_allclose(c, half.astype(np.float32) * a, rtol=1e-6)
    source = tilelang.compile(main, target="cuda/sm_90a").get_kernel_source()  # NVRTC accepted it
    assert "__builtin_bit_cast(int16_t, __float2half_rn(" in source
    assert "__half2float(__builtin_bit_cast(half_t," in source
