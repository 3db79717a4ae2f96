"""Float literals of the C-family printer (tilelang_core.codegen.cexpr): a float16 or bfloat16
constant is that type's value even where the dialect computes 16-bit floats in float."""
from __future__ import annotations

import math

import numpy as np
import pytest

import tilelang_core as tilelang
from tilelang_core import language as T


def bf16(x: float) -> np.float32:
    bits = int(np.array([x], np.float32).view(np.uint32)[0])
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return np.array([bits], np.uint32).view(np.float32)[0]


def test_sixteen_bit_constants_are_rounded_to_their_type():
    from tilelang_cpu.codegen import CPUCodegen

    cg = CPUCodegen()
    rng = np.random.default_rng()
    for value in rng.uniform(-1000, 1000, 50):
        # the literal is a C float (the trailing f): it must parse to the float16 value's float32
        assert np.float32(cg.float_literal(value, "float16")[:-1]) == np.float32(np.float16(value))
        assert np.float32(cg.float_literal(value, "bfloat16")[:-1]) == bf16(value)
    assert cg.float_literal(70000.0, "float16") == "((float)INFINITY)"
    assert cg.float_literal(-math.inf, "bfloat16") == "-((float)INFINITY)"
    assert cg.float_literal(0.1, "float32") == "0.100000001f"


@pytest.mark.parametrize("c", [0.1, 1.5, 1e-5, 3000.7])
def test_kernels_compute_with_the_rounded_constant(c):
    @T.prim_func
    def main(A: T.Tensor((64,), "float16"), B: T.Tensor((64,), "float16"), C: T.Tensor((64,), "float32")):
        with T.Kernel(1) as bx:
            for i in T.Parallel(64):
                B[i] = A[i] * T.float16(c)
                C[i] = T.Cast("float32", A[i]) * T.Cast("float32", T.bfloat16(c))

    a = np.random.default_rng().uniform(-4, 4, 64).astype(np.float16)
    b, out = np.zeros(64, np.float16), np.zeros(64, np.float32)
    tilelang.compile(main, target="cpu")(a, b, out)
    np.testing.assert_array_equal(b, (a.astype(np.float32) * np.float32(np.float16(c))).astype(np.float16))
    np.testing.assert_array_equal(out, a.astype(np.float32) * bf16(c))
